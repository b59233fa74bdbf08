"""A posture task's cost rows are scaled rows of ``B̂`` (its Jacobian selects joints): the kernel
outputs only their scales and right-hand sides (an :class:`~wbc.control.pieces.AccelerationCost`),
and every path that uses the cost assembles them from the kernel's ``Bhat`` (numpy: ``Layout``; C: the
shortcut). The commands are the ones of the same rows traced into the kernel, on every path."""

from __future__ import annotations

import numpy as np
import pytest

import robots
import wbc
from tasks import PostureTask
from tests.helpers import assert_close, assert_same_inputs, lockstep
from wbc import tasks
from wbc.control.shortcut import CompiledShortcut
from wbc.control.strategies import WorkingSet


class _TracedPosture(PostureTask):
    """The posture task with its rows traced into the kernel, as before (``J B̂``, ``J a₀ + J̇v``): a
    task overriding :meth:`~wbc.Task.input_rows` keeps the general :class:`~wbc.control.Cost`."""

    def input_rows(self, ctx, J, drift):
        return super().input_rows(ctx, J, drift)


def _talos(posture_type, lean: float = 0.0, limits: bool = True, priority: int = 0, after: bool = False):
    """Talos on both feet, CoM and posture tasks (``after``: and the pelvis orientation after the
    posture, so that the posture's rows sit between traced rows)."""
    spec = robots.load("talos")
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=0.3) for f in spec.feet]
    com = tasks.CoMTask(weight=1.0, kp=20.0)
    posture = posture_type(spec.model, weight=1e-3, kp=10.0)
    posture.set_priority(priority)
    task_list: list[wbc.Task] = [com, posture]
    if after:
        base = spec.model.joints[1].link
        orientation = tasks.OrientationTask(base, weight=1.0, kp=20.0)
        orientation.set_target(wbc.frame_placement(spec.model, spec.q0, base)[0:3, 0:3])
        task_list.append(orientation)
    ctrl = wbc.WholeBodyController(spec.model, task_list, contacts, limits=None if limits else [wbc.TorqueLimit()])
    com.set_target(wbc.center_of_mass(spec.model, spec.q0) + np.array([0.0, lean, 0.0]))
    posture.set_target(spec.q0)
    return ctrl, spec, posture


def _same(a: wbc.Command, b: wbc.Command, Bhat: np.ndarray, what: str, null_tol: float) -> None:
    """The same command to rounding: the rows assembled outside the kernel are the same products,
    ``√w · B̂[i, j]``, but the two kernels are two compiled functions whose multiply-adds the compiler
    fuses differently (:data:`~wbc.codegen.cache.STEP_FLAGS`), so their ``B̂`` differ in the last bits:
    ``u`` as :func:`~tests.helpers.assert_same_inputs` (``B̂`` (nv, n) of the step's columns), ``q̈``
    to 1e-9 of its scale as the inputs the accelerations see (measured: up to 2e-11), the task errors
    to 1e-12."""
    assert a.status is b.status, what
    assert_same_inputs(a.u, b.u, Bhat, f"{what}: u", null_tol)
    assert_close(a.qdd, b.qdd, 1e-9, f"{what}: q̈")
    for name in b.task_errors:
        assert_close(a.task_errors[name], b.task_errors[name], 1e-12, f"{what}: {name}'s error")


def test_the_kernel_outputs_no_posture_row_and_the_step_is_the_full_qp():
    """Talos standing: the kernel's cost matrix holds the CoM task's 3 rows only, its ``scale`` output
    the posture's √w; the cost the QP sees has the posture rows ``√w B̂[actuated]`` (from the kernel's
    B̂), and the step (one C call) equals the full QP solved as posed."""
    ctrl, spec, posture = _talos(PostureTask)
    model = spec.model
    q, v = spec.q0.copy(), np.zeros(model.nv)
    rng = np.random.default_rng(0)
    v[6:] = 0.05 * rng.standard_normal(model.nv - 6)
    cmd = ctrl.step(q, v)
    assert ctrl._plan.one_call and cmd.status is wbc.StepStatus.OPTIMAL
    shapes = dict(zip(ctrl.kernel.output_names, ctrl.kernel.output_shapes))
    assert shapes["A"][0] == 3, "the posture rows are not in the kernel's A"
    assert shapes["b"][0] == 3 + posture.dim and shapes["scale"][0] == posture.dim
    s = ctrl._structure
    assert np.array_equal(s.cost_bhat_rows, np.arange(3, 3 + posture.dim))
    assert np.array_equal(s.cost_bhat_index, model.actuated_v_indices)
    problem = ctrl.build_problem(q, v)
    outputs = ctrl.evaluate(q, v)
    sw = np.sqrt(posture.weight)
    assert np.array_equal(outputs.scale, sw)
    expected = sw[:, None] * outputs.Bhat[model.actuated_v_indices]
    assert np.array_equal(problem.A[3:], expected), "the posture's rows: √w B̂[actuated]"
    outcome = ctrl.fallback.solve(problem, ctrl.solver)
    assert outcome.status is wbc.StepStatus.OPTIMAL
    assert_close(cmd.u, outcome.x, 1e-7, "the step vs the full QP")
    kernel = ctrl.kernel
    posture.set_weight(np.linspace(1e-3, 1e-1, posture.dim))  # a kernel parameter: no new trace
    posture.set_gains(30.0)
    cmd = ctrl.step(q, v)
    assert ctrl.kernel is kernel and ctrl._plan.one_call
    outputs = ctrl.evaluate(q, v)
    assert np.array_equal(outputs.scale, np.sqrt(posture.weight))
    outcome = ctrl.fallback.solve(ctrl.build_problem(q, v), ctrl.solver)
    assert_close(cmd.u, outcome.x, 1e-7, "the step vs the full QP, new weights and gains")


@pytest.mark.parametrize("scenario", ["standing", "lean", "single", "numpy", "hierarchy", "no_limits", "between"])
def test_commands_equal_the_traced_rows_on_every_path(scenario, monkeypatch):
    """Two Talos controllers, the posture's rows from B̂ (new) and traced into the kernel (as before),
    on one state sequence (pushed at step 5): the same u and q̈ (to rounding: :func:`_same`) on the
    one-call path standing and binding (the working set: a CoM target 5 cm aside), in single support
    (gathered copies), on the numpy minimizer and full QP (no compiled shortcut), at two priority
    levels, with the posture's rows between traced rows (a task after it: assembled row by row in C),
    and the same full QP (the fallback's problem) at every state."""
    if scenario == "numpy":
        monkeypatch.setattr(CompiledShortcut, "build", classmethod(lambda cls, layout, outputs: None))
    options = dict(
        lean=0.05 if scenario == "lean" else 0.0,
        limits=scenario != "no_limits",
        priority=1 if scenario == "hierarchy" else 0,
        after=scenario == "between",
    )
    new, spec, posture = _talos(PostureTask, **options)
    old, _, _ = _talos(_TracedPosture, **options)
    for i, q, v, a, b in lockstep(new, old, spec, 12, seed=7, push=(5, 0.05), single=scenario == "single"):
        Bhat = old.evaluate(q, v).Bhat[:, old._plan.layout.columns]
        # numpy's elimination solves the normal equations: in B̂'s null space, pinned only by the 1e-8
        # regularization, rounding (1e-16) grows by its conditioning (1e8; measured: up to 1.04e-8)
        null_tol = 1e-7 if scenario == "numpy" else 1e-8
        _same(a, b, Bhat, f"{scenario}, step {i}", null_tol)
        if i % 4 == 0:
            pa, pb = new.build_problem(q, v), old.build_problem(q, v)
            for name in ("A", "b", "r", "A_eq", "b_eq", "G", "h", "lb", "ub"):
                mine, reference = getattr(pa, name), getattr(pb, name)
                finite = np.isfinite(reference)  # (unbounded rows: infinite bounds, the same)
                assert np.array_equal(mine[~finite], reference[~finite]), f"{scenario}: the QP's {name}"
                assert_close(mine[finite], reference[finite], 1e-12, f"{scenario}: the QP's {name}")
            xa = new.fallback.solve(pa, new.solver).x
            xb = old.fallback.solve(pb, old.solver).x
            assert_same_inputs(xa, xb, Bhat, f"{scenario}: the full QP", null_tol)
    shapes = dict(zip(new.kernel.output_names, new.kernel.output_shapes))
    old_shapes = dict(zip(old.kernel.output_names, old.kernel.output_shapes))
    assert shapes["A"][0] == old_shapes["A"][0] - posture.dim and old_shapes["scale"][0] == 0
    plan = new._plan
    if scenario in ("standing", "lean", "single", "no_limits"):
        assert plan.one_call
    if scenario == "lean":  # the CoP bounds bind: the working set answered
        assert next(u for u in plan.strategies if isinstance(u, WorkingSet)).active.any()
    if scenario == "numpy":
        assert plan.shortcut is None
    if scenario == "hierarchy":
        assert len(plan.layout.levels) == 2
    if scenario == "between":  # the rows assembled one by one in C (not as blocks)
        assert plan.one_call and plan.shortcut.data.a_blocks == 0 and plan.shortcut.data.na == posture.dim
