"""The compiled shortcut (wbc.control.shortcut, shortcut.c) against its numpy reference, the one-call
step against the two-call step, and the working-set solve of binding steps against the full QP."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import wbc
from tests.helpers import assert_builtin_step, lockstep, talos_standing
from wbc import robots
from wbc.codegen.cache import find_compiler
from wbc.control.outputs import StepOutputs
from wbc.control.qp import least_squares_by_elimination
from wbc.control.schedule import ContactSchedule
from wbc.control.shortcut import FAILED, FEASIBLE, INFEASIBLE, CompiledShortcut
from wbc.control.shortcut_library import shortcut_library
from wbc.control.solvers import DaqpSolver
from wbc.control.strategies import StepPlan, WorkingSet

pytestmark = pytest.mark.skipif(find_compiler() is None, reason="no C compiler: the numpy path runs")


def _random_problem(rng, k, p, m, nc, nt, nh=0):
    """A random layout's outputs: ``nt`` traced rows (the kernel's G) and ``nh`` rows of B̂ (±B̂[i]) among
    the ``nc`` rows of ``C``, the others constant."""
    n = p + m
    A = np.asfortranarray(rng.standard_normal((k, n)))
    b = rng.standard_normal(k)
    J = rng.standard_normal((m, m + 3))
    Lam = J @ J.T + 0.1 * np.eye(m)
    A_eq = np.asfortranarray(np.column_stack([rng.standard_normal((m, p)), Lam]))
    b_eq = rng.standard_normal(m)
    C = rng.standard_normal((nc, n))
    traced = np.sort(rng.choice(nc, nt, replace=False)) if nt else np.zeros(0, dtype=int)
    G = np.asfortranarray(C[traced])
    C[traced] = 0.0
    nv = int(rng.integers(1, 12))
    Bhat = np.asfortranarray(rng.standard_normal((nv, n)))
    others = np.setdiff1d(np.arange(nc), traced)
    from_bhat = np.sort(rng.choice(others, min(nh, others.size), replace=False)).astype(np.int64)
    index = rng.integers(0, nv, from_bhat.size).astype(np.int64)
    sign = rng.choice([-1.0, 1.0], from_bhat.size)
    C[from_bhat] = 0.0
    d = np.zeros(nc)
    outputs = StepOutputs(A, b, A_eq, b_eq, G, None, None, None, None, Bhat, None, d, np.zeros(0))  # type: ignore[arg-type]
    layout = SimpleNamespace(
        _C=C, _traced_at=traced, all_columns=True, all_cost=True, all_eq=True, _all_traced=True, _d_rows=None,
        _bhat_at=from_bhat, _bhat_index=index, _bhat_sign=sign, columns=np.arange(n), cost_from_bhat=False,
    )  # fmt: skip
    return outputs, layout


def _dense_C(layout, outputs) -> np.ndarray:
    """``C`` (nc, n) of a random problem, every kind of row filled in."""
    C = layout._C.copy()
    C[layout._traced_at] = outputs.G
    C[layout._bhat_at] = layout._bhat_sign[:, None] * outputs.Bhat[layout._bhat_index]
    return C


@pytest.mark.parametrize("seed", range(6))
def test_compiled_shortcut_equals_numpy(seed):
    """Random well-conditioned problems: the minimizer and ``C u`` to 1e-12 (relative), and the
    verdict of ``C u ≤ d`` on both sides of the boundary."""
    rng = np.random.default_rng(seed)
    k, p, m = int(rng.integers(5, 40)), int(rng.integers(2, 33)), int(rng.integers(1, 13))
    nc, nt, nh = int(rng.integers(1, 60)), 0 if seed % 2 else 5, 0 if seed % 3 == 0 else 8
    outputs, layout = _random_problem(rng, k, p, m, nc, nt, nh)
    fast = CompiledShortcut(shortcut_library(), layout, outputs)
    A, b, A_eq, b_eq, d = outputs.A, outputs.b, outputs.A_eq, outputs.b_eq, outputs.d
    reg = 10.0 ** rng.uniform(-8, -2)
    x, f = least_squares_by_elimination(A[:, :p], A[:, p:], b, A_eq[:, :p], A_eq[:, p:], b_eq, reg)
    u = np.concatenate([x, f])
    C = _dense_C(layout, outputs)
    Cu = C @ u
    d[:] = Cu + 1e-6 * (1.0 + np.abs(Cu))  # feasible
    assert fast(reg) == FEASIBLE
    scale = np.abs(u).max()
    assert np.abs(fast.u - u).max() <= 1e-12 * scale * 10 ** min(3, np.log10(np.linalg.cond(A_eq[:, p:])))
    assert np.abs(fast.Cu - Cu).max() <= 1e-12 * np.abs(C).max() * scale * C.shape[1]
    row = int(rng.integers(nc))
    d[row] = Cu[row] - 1e-3 * (1.0 + abs(Cu[row]))  # one row fails
    assert fast(reg) == INFEASIBLE
    assert np.flatnonzero(fast.Cu > d).tolist() == [row]


@pytest.mark.parametrize(
    "k, p, m",
    [(1, 1, 1), (3, 2, 1), (4, 3, 2), (7, 4, 3), (8, 5, 4), (9, 7, 5), (12, 8, 6), (15, 9, 7), (16, 12, 3),
     (17, 13, 12), (35, 16, 12), (36, 17, 9), (40, 31, 6), (35, 32, 12), (41, 33, 13), (45, 40, 18)],
)  # fmt: skip
def test_compiled_shortcut_every_block_edge(k, p, m):
    """The shortcut's products and factorizations (blocks of 8 x 4 and 4 x 4 entries, the rows and
    columns left at their edges, Cholesky by panels of 4) at sizes that leave every remainder, as many
    cost rows as actuators or more (well conditioned): the minimizer to 1e-12 (relative) against
    numpy's elimination."""
    rng = np.random.default_rng(k * 10_000 + p * 100 + m)
    outputs, layout = _random_problem(rng, k, p, m, 4, 0)
    fast = CompiledShortcut(shortcut_library(), layout, outputs)
    A, b, A_eq, b_eq = outputs.A, outputs.b, outputs.A_eq, outputs.b_eq
    x, f = least_squares_by_elimination(A[:, :p], A[:, p:], b, A_eq[:, :p], A_eq[:, p:], b_eq, 1e-6)
    assert fast(1e-6) in (FEASIBLE, INFEASIBLE)
    u = np.concatenate([x, f])
    conditioning = 10 ** min(3, np.log10(np.linalg.cond(A_eq[:, p:])))
    assert np.abs(fast.u - u).max() <= 1e-12 * np.abs(u).max() * conditioning


def test_compiled_shortcut_refuses_a_singular_delassus_matrix():
    rng = np.random.default_rng(7)
    outputs, layout = _random_problem(rng, 10, 4, 3, 5, 0)
    outputs.A_eq[:, 4:] = 0.0  # Λ = 0: not positive definite
    assert CompiledShortcut(shortcut_library(), layout, outputs)(1e-8) == FAILED
    outputs, layout = _random_problem(rng, 10, 4, 3, 5, 0)
    outputs.b[0] = np.nan
    assert CompiledShortcut(shortcut_library(), layout, outputs)(1e-8) == FAILED


@pytest.mark.parametrize("m", [1, 2, 12, 24])
def test_compiled_shortcut_delassus_solve(m):
    """The Delassus matrix's factor and solve (loops in shortcut.c, not LAPACK): ``X = Λ⁻¹[E_x, b_eq]``
    to 1e-13 against numpy, for one to four 6D contacts; a pivot that is negative (Λ indefinite) or
    NaN anywhere in ``Λ``'s lower triangle is refused, never a NaN answer."""
    rng = np.random.default_rng(m)
    p = 30
    outputs, layout = _random_problem(rng, 40, p, m, 5, 0)
    fast = CompiledShortcut(shortcut_library(), layout, outputs)
    assert fast(1e-8) in (FEASIBLE, INFEASIBLE)
    Lam, rhs = outputs.A_eq[:, p:], np.column_stack([outputs.A_eq[:, :p], outputs.b_eq])
    X = np.linalg.solve(Lam, rhs)
    assert np.abs(fast.X - X).max() <= 1e-13 * np.linalg.cond(Lam) * np.abs(X).max()
    L = np.tril(fast.L)  # the factor (the upper triangle is work)
    assert np.abs(L @ L.T - Lam).max() <= 1e-14 * m * np.abs(Lam).max()
    for poison in (-1.0, np.nan):
        bad = outputs.A_eq.copy(order="F")
        bad[m - 1, p + m - 1] = poison * (1.0 if np.isnan(poison) else np.abs(Lam).sum())  # the last pivot
        broken = outputs._replace(A_eq=bad)
        assert CompiledShortcut(shortcut_library(), layout, broken)(1e-8) == FAILED


def _talos(limits: bool):
    case, com, posture, ctrl = talos_standing(
        0.3, (1.0, 20.0), (1e-3, 10.0), limits=None if limits else [wbc.TorqueLimit()]
    )
    spec = case.spec
    com.set_target(wbc.center_of_mass(spec.model, spec.q0))
    posture.set_target(spec.q0)
    return ctrl, spec, com


def _numpy_shortcut(ctrl, layout, outputs):
    """The reference of the compiled shortcut: the minimizer by elimination (numpy), kept when feasible."""
    A, b, A_eq, b_eq, *_ = layout.select(outputs)
    p = layout.n_tau
    sol = least_squares_by_elimination(A[:, :p], A[:, p:], b, A_eq[:, :p], A_eq[:, p:], b_eq, ctrl.regularization)
    x = None if sol is None else np.concatenate(sol)
    return x if x is not None and layout.feasible(x, outputs) else None


def _working_set(ctrl):
    return next(s for s in ctrl._plan.strategies if isinstance(s, WorkingSet))


def _full_qp(ctrl, q, v):
    """The step's QP solved as posed (no shortcut, no working set)."""
    problem = ctrl.build_problem(q, v)
    outcome = ctrl.fallback.solve(problem, ctrl.solver)
    assert outcome.status is wbc.StepStatus.OPTIMAL
    return problem, outcome.x


@pytest.mark.parametrize("limits", [False, True])
def test_controller_step_uses_the_compiled_shortcut(limits):
    """Talos standing: the step's inputs are the numpy shortcut's (the compiled path is the one taken)."""
    ctrl, spec, _ = _talos(limits)
    rng = np.random.default_rng(1)
    q = wbc.integrate(spec.model, spec.q0, 0.01 * rng.standard_normal(spec.model.nv), 1.0)
    v = 0.01 * rng.standard_normal(spec.model.nv)
    if limits:  # the grippers rest at their upper limit in q0: a random state pushes them out
        q, v = spec.q0.copy(), np.zeros(spec.model.nv)
    cmd = ctrl.step(q, v)
    layout = ctrl._layout()
    assert isinstance(ctrl._plan.shortcut, CompiledShortcut) and ctrl._plan.layout is layout
    assert cmd.status is wbc.StepStatus.OPTIMAL
    x = _numpy_shortcut(ctrl, layout, ctrl.evaluate(q, v))
    assert x is not None
    assert np.abs(cmd.u - x).max() <= 1e-8 * np.abs(x).max()


def test_binding_step_equals_the_full_qp():
    """A CoM target far to the side saturates the centre-of-pressure bounds: the working-set answer is
    the full QP's (daqp, and the generic path any other backend takes), feasible, and not the
    shortcut's minimizer."""
    ctrl, spec, com = _talos(limits=True)
    q, v = spec.q0.copy(), np.zeros(spec.model.nv)
    com.set_target(wbc.center_of_mass(spec.model, q) + np.array([0.0, 0.25, 0.0]))
    problem, expected = _full_qp(ctrl, q, v)
    ctrl.time = 0.0
    cmd = ctrl.step(q, v)
    fast = ctrl._plan.shortcut
    assert fast(ctrl.regularization) == INFEASIBLE
    assert cmd.status is wbc.StepStatus.OPTIMAL
    scale = np.abs(expected).max()
    assert problem.violation(cmd.u) <= 1e-6
    assert np.abs(cmd.u - expected).max() <= 1e-6 * scale
    assert np.abs(cmd.u - fast.u).max() > 1e-3 * scale  # the bound changed the answer

    class Plain(wbc.control.solvers.QPSolver):  # not daqp: the generic path, through QPProblem
        name = "plain-daqp"

        def __init__(self) -> None:
            self._inner = DaqpSolver()

        def _solve(self, p):
            return self._inner._solve(p)

    generic = WorkingSet(fast, Plain(), ctrl._tolerance, writer=None).solve()  # type: ignore[arg-type]
    assert generic is not None
    assert np.abs(generic - expected).max() <= 1e-6 * scale


def _unfused(ctrl):
    """``ctrl`` with the one-call step disabled (the kernel through CasADi, then the shortcut)."""
    ctrl._attach = lambda layout, fast, writer: False
    return ctrl


@pytest.mark.parametrize("support", ["double", "single"])
@pytest.mark.parametrize("limits", [False, True])
def test_fused_step_equals_the_two_call_step(limits, support):
    """Talos standing (on both feet, or on one: a walking robot's single support, whose layout runs on
    copies of the active rows and columns, made in C, and binds at the stance foot's centre-of-pressure
    bounds) then pushed off balance: the one-call step (checks, kernel, shortcut, command in C) gives
    the two-call step's command exactly (u, q̈, task errors, forces, the lifted foot's zero, normal
    forces recorded), and q̈ = a₀ + B̂u holds to 1e-12 (of its terms) against the kernel's own outputs."""
    fused, spec, _ = _talos(limits)
    plain, _, _ = _talos(limits)
    _unfused(plain)
    for _, _, _, a, b in lockstep(fused, plain, spec, 30, seed=3, push=(10, 0.02), single=support == "single"):
        assert fused._plan.one_call and not plain._plan.one_call
        assert a.status is b.status
        scale = np.abs(b.u).max()
        assert np.abs(a.u - b.u).max() <= 1e-12 * scale
        assert np.abs(a.tau - b.tau).max() <= 1e-12 * scale
        assert np.abs(a.qdd - b.qdd).max() <= 1e-10 * (1.0 + np.abs(b.qdd).max())
        a0, Bhat = fused._outputs.a0, fused._outputs.Bhat[:, fused._plan.layout.columns]
        # to 1e-12 of the sums' terms (a contact force of 800 N times its B̂ entries makes terms of
        # hundreds cancelling to accelerations of order 1; C's and numpy's sums round differently)
        terms = np.abs(a0) + np.abs(Bhat) @ np.abs(a.u)
        assert np.all(np.abs(a.qdd - (a0 + Bhat @ a.u)) <= 1e-12 * (1.0 + terms))
        assert a.task_errors.keys() == b.task_errors.keys()
        for name in b.task_errors:
            assert np.array_equal(a.task_errors[name], b.task_errors[name])
        for c in fused.contacts:
            assert a.forces[c.name].shape == b.forces[c.name].shape == (c.dim,)
            assert np.abs(a.forces[c.name] - b.forces[c.name]).max() <= 1e-12 * scale
            assert fused.contact_state(c.name).last_normal_force == pytest.approx(
                plain.contact_state(c.name).last_normal_force, rel=1e-12, abs=1e-9
            )
            if fused.contact_active(c.name):
                assert fused.contact_state(c.name).last_normal_force == pytest.approx(
                    c.normal_force(b.forces[c.name]), rel=1e-12, abs=1e-9
                )
            else:
                assert np.all(a.forces[c.name] == 0.0)
    assert set(a.timings) == {"kernel", "qp", "total"} and a.timings["total"] >= a.timings["kernel"] > 0


def test_fused_step_refuses_bad_states_by_name():
    """After the first step (the one-call path in use), bad states are refused as before: NaN in v, a
    quaternion off the unit sphere, wrong sizes, complex numbers; a good state then steps again."""
    ctrl, spec, _ = _talos(False)
    q, v = spec.q0.copy(), np.zeros(spec.model.nv)
    ctrl.step(q, v)
    ctrl.step(q, v)
    assert ctrl._plan.one_call
    bad_v = v.copy()
    bad_v[7] = np.nan
    with pytest.raises(wbc.InputError, match=r"v has non-finite entries at indices \[7\]"):
        ctrl.step(q, bad_v)
    bad_q = q.copy()
    bad_q[3:7] *= 1.01
    with pytest.raises(wbc.InputError, match="quaternion"):
        ctrl.step(bad_q, v)
    with pytest.raises(wbc.InputError, match="shape"):
        ctrl.step(q[:-1], v)
    with pytest.raises(wbc.InputError, match="complex"):
        ctrl.step(q.astype(complex), v)
    cmd = ctrl.step(list(q), v)  # converted as before
    assert cmd.status is wbc.StepStatus.OPTIMAL
    assert np.isfinite(cmd.tau).all()


def test_warm_started_binding_steps_equal_the_full_qp(monkeypatch):
    """Talos leaning toward a CoM target 5 cm to the side with joint limits on: the grippers (at their
    URDF limit) and the stance bind at every step; each step's answer, warm-started from the previous
    step's active rows, is the full QP's (to 1e-6), the warm start is in use, and every binding step is
    answered by the QP in C (the solver's working set, its fallback, never runs)."""
    monkeypatch.setattr(WorkingSet, "solve", lambda self: pytest.fail("the C binding QP failed"))
    ctrl, spec, com = _talos(limits=True)
    model = spec.model
    q, v = spec.q0.copy(), np.zeros(model.nv)
    com.set_target(wbc.center_of_mass(model, q) + np.array([0.0, 0.05, 0.0]))
    ctrl.step(q, v)
    assert ctrl._plan.shortcut.layout._bhat_at.size == 4 * model.n_actuated  # the limits' rows: read from B̂
    warm = 0
    for i in range(40):
        problem, expected = _full_qp(ctrl, q, v)
        warm += bool(_working_set(ctrl).active.any())
        cmd = ctrl.step(q, v)
        assert cmd.status is wbc.StepStatus.OPTIMAL
        scale = np.abs(expected).max()
        assert problem.violation(cmd.u) <= 1e-6
        assert np.abs(cmd.u - expected).max() <= 1e-6 * scale, i
        v = v + 1e-3 * cmd.qdd
        q = wbc.integrate(model, q, v, 1e-3)
    assert warm >= 30


def _position_limit_breaks(ctrl, q, v, steps):
    """Steps (of ``steps`` leaning toward the CoM target) whose minimizer under the equalities breaks a
    joint position bound."""
    model, count = ctrl.model, 0
    for _ in range(steps):
        cmd = ctrl.step(q, v)
        fast = ctrl._plan.shortcut
        assert ctrl._plan.one_call
        if fast(ctrl.regularization) == INFEASIBLE:
            layout = fast.layout
            bounds = [g for g in layout.bound_groups if g is not None]
            groups = [*layout.in_groups, *bounds, *bounds]  # the rows of C u ≤ d: inequalities, upper, lower
            broken = {groups[r].kind for r in np.flatnonzero(fast.Cu > fast.d)}
            count += wbc.control.Kind.JOINT_POSITION_LIMIT in broken
        v = v + 1e-3 * cmd.qdd
        q = wbc.integrate(model, q, v, 1e-3)
    return count


def test_posture_targets_inside_the_position_limits_keep_the_bounds_inactive():
    """Talos's grippers rest at their URDF upper limit (0) in half_sitting, inside the 1 cm margin band:
    a posture target there makes the position bound bind at every step once the robot moves (a QP per
    step). ``JointPositionLimit.inside`` moves only those two joints, one margin inside the effective
    limits, and with that target the bound never binds."""
    ctrl, spec, com = _talos(limits=True)
    model = spec.model
    limit = next(x for x in ctrl.limits if isinstance(x, wbc.JointPositionLimit))
    target = limit.inside(spec.q0)
    moved = np.flatnonzero(target != spec.q0)
    grippers = [model.joints[model.joint_id(n)].idx_q for n in ("gripper_left_joint", "gripper_right_joint")]
    assert sorted(moved.tolist()) == sorted(grippers)
    lo, hi = limit.effective_limits
    margin = np.array([j.upper[0] for j in limit.joints]) - hi
    inside = target[limit.q_indices]
    assert np.all(inside >= lo + margin - 1e-12) and np.all(inside <= hi - margin + 1e-12)
    assert np.allclose(target[grippers], -0.02)
    assert np.array_equal(limit.inside(target), target)  # already inside: unchanged
    q, v = spec.q0.copy(), np.zeros(model.nv)
    com.set_target(wbc.center_of_mass(model, q) + np.array([0.0, 0.03, 0.0]))
    assert _position_limit_breaks(ctrl, q, v, 60) >= 50
    posture = next(t for t in ctrl.tasks if t.name == "posture")
    posture.set_target(target)
    assert _position_limit_breaks(ctrl, q, v, 60) == 0


def test_inside_needs_a_model_and_a_configuration():
    limit = wbc.JointPositionLimit()
    with pytest.raises(wbc.InputError, match="attached to a model"):
        limit.inside(np.zeros(3))
    spec = robots.load("talos")
    limit.check(spec.model)
    with pytest.raises(wbc.InputError, match="shape"):
        limit.inside(np.zeros(3))


def test_settings_changed_after_the_first_steps_are_honoured():
    """The one-call step reads the regularization, the input checks and the solver set up when it was
    first taken: changing them later gives the answers of a controller built with the new values."""
    ctrl, spec, _ = _talos(False)
    q, v = spec.q0.copy(), 0.01 * np.ones(spec.model.nv)
    ctrl.step(q, v)
    ctrl.step(q, v)
    assert ctrl._plan.one_call
    ctrl.regularization = 1e-2
    other, _, _ = _talos(False)
    other.regularization = 1e-2
    a, b = ctrl.step(q, v), other.step(q, v)
    assert np.abs(a.u - b.u).max() <= 1e-12 * np.abs(b.u).max()
    assert np.abs(a.u - ctrl.step(q, v).u).max() <= 1e-12 * np.abs(b.u).max()  # fused again, same answer
    with pytest.raises(wbc.InputError):
        ctrl.regularization = -1.0
    ctrl.check_inputs = False
    ctrl.step(q, v)
    assert ctrl._plan.one_call and ctrl._plan.shortcut._data.check == 0
    ctrl.check_inputs = True
    bad = v.copy()
    bad[0] = np.inf
    ctrl.step(q, v)
    with pytest.raises(wbc.InputError, match="non-finite"):
        ctrl.step(q, bad)


def test_contact_switches_leave_and_resume_the_one_call_step():
    """Releasing a foot leaves the one-call step (another layout); putting it back resumes it, and every
    step's answer is the two-call step's."""
    fused, spec, _ = _talos(False)
    plain, _, _ = _talos(False)
    _unfused(plain)
    q, v = spec.q0.copy(), np.zeros(spec.model.nv)
    foot = fused.contacts[1].name
    for i in range(12):
        if i == 4:
            for c in (fused, plain):
                c.deactivate_contact(foot)
        if i == 7:
            for c in (fused, plain):
                c.activate_contact(foot)
        a, b = fused.step(q, v), plain.step(q, v)
        assert a.status is b.status
        assert np.abs(a.u - b.u).max() <= 1e-10 * np.abs(b.u).max()
        assert np.abs(a.qdd - b.qdd).max() <= 1e-9 * (1.0 + np.abs(b.qdd).max())
    assert fused._plan.one_call and fused._plan_version == fused._schedule.version


def test_fused_step_takes_any_vector_like_state():
    """q and v are read in C when they are contiguous float64 vectors; strided views, float32 arrays,
    read-only arrays, columns and lists are converted as before: the same command each time."""
    ctrl, spec, _ = _talos(False)
    model = spec.model
    q = spec.q0.copy()
    v = (0.01 * np.random.default_rng(5).standard_normal(model.nv)).astype(np.float32).astype(float)
    ctrl.step(q, v)
    reference = ctrl.step(q, v)
    assert ctrl._plan.one_call
    strided = np.repeat(q, 2)[::2]
    frozen = v.copy()
    frozen.flags.writeable = False
    for qq, vv in (
        (strided, v),
        (q, v.astype(np.float32)),
        (q, frozen),
        (q.reshape(-1, 1), v),
        (list(q), list(v)),
    ):
        ctrl.time = 0.0
        cmd = ctrl.step(qq, vv)
        assert np.array_equal(cmd.u, reference.u)
    assert np.array_equal(strided, q) and np.array_equal(frozen, v)  # never written to


@pytest.mark.parametrize("limits", [False, True])
def test_single_support_runs_compiled_on_the_active_rows_and_columns(limits):
    """One foot released (a walking robot's single support): the layout drops that contact's force
    columns, equality rows and inequality rows; the compiled shortcut runs on gathered copies of the
    rest: its minimizer is numpy's on the layout's rows and columns, its verdict ``C u ≤ d`` the
    layout's, and the step (the stance foot's centre-of-pressure bounds bind) is the full QP's."""
    ctrl, spec, _ = _talos(limits)
    q, v = spec.q0.copy(), np.zeros(spec.model.nv)
    ctrl.deactivate_contact(ctrl.contacts[1].name)
    problem, expected = _full_qp(ctrl, q, v)
    ctrl.time = 0.0
    cmd = ctrl.step(q, v)
    layout = ctrl._layout()
    assert not layout.all_columns and not layout.all_eq and not layout.all_in
    fast = ctrl._plan.shortcut
    assert isinstance(fast, CompiledShortcut) and fast.layout is layout and ctrl._plan.one_call

    outputs = ctrl.evaluate(q, v)
    A, b, A_eq, b_eq, *_ = layout.select(outputs)
    p = layout.n_tau
    x, f = least_squares_by_elimination(A[:, :p], A[:, p:], b, A_eq[:, :p], A_eq[:, p:], b_eq, ctrl.regularization)
    u = np.concatenate([x, f])
    code = fast(ctrl.regularization)
    assert np.abs(fast.u - u).max() <= 1e-9 * np.abs(u).max()
    assert code == (FEASIBLE if layout.feasible(u, outputs) else INFEASIBLE)
    assert code == INFEASIBLE  # the CoM is between the feet, the support is one foot

    assert cmd.status is wbc.StepStatus.OPTIMAL
    scale = np.abs(expected).max()
    assert problem.violation(cmd.u) <= 1e-6
    assert np.abs(cmd.u - expected).max() <= 1e-6 * scale
    assert np.all(cmd.forces[ctrl.contacts[1].name] == 0.0)


def test_compile_rehearses_the_first_step_then_forgets_it(monkeypatch):
    """``compile()`` runs the first step's own path (the pending contacts placed, the plan run: nothing
    is left for the first step to do for the first time), then puts back what it
    changed: the contacts still pending, a given placement and a force ramp kept, the clock at zero, no
    warm start; every step after it is the one of a controller compiled without the rehearsal
    (bit for bit), through a release ramp and binding steps (the stance's bounds, the joint limits)."""
    calls = {"place_measured": 0, "run": 0}
    for owner, name in ((ContactSchedule, "place_measured"), (StepPlan, "run")):
        original = getattr(owner, name)

        def spy(*args, _original=original, _name=name, **kwargs):
            calls[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(owner, name, spy)
    rehearsed, spec, com = _talos(limits=True)
    plain, _, com_plain = _talos(limits=True)
    monkeypatch.setattr(plain, "_rehearse", lambda q, v: None)
    model = spec.model
    q, v = spec.q0.copy(), np.zeros(model.nv)
    left, right = (c.name for c in rehearsed.contacts)
    placement = wbc.frame_placement(model, q, rehearsed.contacts[0].frame)
    for ctrl, task in ((rehearsed, com), (plain, com_plain)):
        task.set_target(wbc.center_of_mass(model, q) + np.array([0.0, 0.05, 0.0]))
        ctrl.activate_contact(left, placement=placement, ramp=0.005, ramp_force=1000.0)
    plain.compile()
    calls.update(place_measured=0, run=0)
    rehearsed.compile()
    assert calls["place_measured"] > 0 and calls["run"] > 0  # the first step's path ran in compile()
    assert rehearsed.time == 0.0 and not rehearsed.contact_state(right).placed
    assert np.array_equal(rehearsed.contact_state(left).placement, placement)
    assert rehearsed.contact_state(left).rise is not None and rehearsed.contact_state(left).bounds[1] == 0.0
    for i in range(30):
        if i == 15:
            for ctrl in (rehearsed, plain):
                ctrl.deactivate_contact(right, ramp=0.005)
        a, b = rehearsed.step(q, v), plain.step(q, v)
        assert a.status is b.status
        assert np.array_equal(a.u, b.u) and np.array_equal(a.qdd, b.qdd), i
        v = v + 1e-3 * a.qdd
        q = wbc.integrate(model, q, v, 1e-3)
    assert rehearsed.contact_state(right).placement[2, 3] == plain.contact_state(right).placement[2, 3]


def test_first_step_places_its_contacts_with_one_call_and_one_write(monkeypatch):
    """The contacts pending a placement at the first step are placed from one call of the placements
    kernel, recorded with one write of the schedule's table (no placement per contact in Python): where
    their frames are at the first state."""
    ctrl, spec, _ = _talos(limits=False)
    ctrl.compile()
    calls = {"place": 0, "place_measured": 0}
    for name in calls:
        original = getattr(ContactSchedule, name)

        def spy(*args, _original=original, _name=name, **kwargs):
            calls[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(ContactSchedule, name, spy)
    model = spec.model
    q = wbc.integrate(model, spec.q0, np.full(model.nv, 0.1), 0.1)  # not the state compile() rehearsed
    ctrl.step(q, np.zeros(model.nv))
    assert calls == {"place": 0, "place_measured": 1}
    for c in ctrl.contacts:
        state = ctrl.contact_state(c.name)
        assert state.placed
        np.testing.assert_allclose(state.placement, wbc.frame_placement(model, q, c.frame), rtol=0, atol=1e-12)


def test_placements_measured_leave_given_and_unmeasurable_contacts_alone():
    """``place_measured`` places only the active contacts still pending, and only from finite rows: a
    placement given at activation is kept, a row that is not finite leaves its contact pending."""
    forces = dict(initially_active=True, min_normal_force=0.0, max_normal_force=1e3, kp=0.0, kd=0.0)
    contacts = [SimpleNamespace(name=name, **forces) for name in ("a", "b", "c")]
    schedule = ContactSchedule(contacts)
    given = np.eye(4)
    given[:3, 3] = (1.0, 2.0, 3.0)
    schedule.activate("a", placement=given)
    measured = np.arange(36.0).reshape(3, 12)
    measured[2, 5] = np.nan
    schedule.place_measured(measured)
    assert np.array_equal(schedule.state("a").placement, given)
    assert schedule.state("b").placed and np.array_equal(schedule.parameters("b")[4:16], measured[1])
    assert not schedule.state("c").placed and schedule.pending == ["c"]
    measured[2, 5] = 0.0
    schedule.place_measured(measured)
    assert schedule.pending == [] and np.array_equal(schedule.parameters("c")[4:16], measured[2])
    assert np.array_equal(schedule.parameters("b")[4:16], measured[1])


def _binding_reference(fast, tolerance):
    """The binding step's QP over every row of ``C u ≤ d`` by daqp (reduce + least_distance + expand)."""
    fast.working[:] = True
    r = fast.reduce(tolerance)
    answer = DaqpSolver().least_distance(fast.M[:r].copy(), fast.h[:r].copy(), fast.y0.copy())
    assert answer is not None
    assert fast.expand(answer[0]) == FEASIBLE
    return fast.u.copy(), fast.rows[:r][answer[1]]


@pytest.mark.parametrize("seed", range(8))
def test_binding_qp_in_c_equals_daqp(seed):
    """Random binding problems (constant, bound, traced and B̂ rows; rows strictly feasible at a random
    point that satisfies the equalities, many broken at the minimizer): the QP in C (dual active set)
    equals daqp's answer over every row (to 1e-12, more as the Hessian's condition number grows: both
    are exact, rounding differs), satisfies ``C u ≤ d``, its active rows hold with
    equality as daqp's do, and started warm from them it gives the same answer."""
    rng = np.random.default_rng(100 + seed)
    k, p, m = int(rng.integers(8, 40)), int(rng.integers(4, 33)), int(rng.integers(1, 13))
    nc = int(rng.integers(10, 80))
    outputs, layout = _random_problem(rng, k, p, m, nc, 0 if seed % 2 else 5, 0 if seed % 3 == 0 else 8)
    fast = CompiledShortcut(shortcut_library(), layout, outputs)
    d, C = outputs.d, _dense_C(layout, outputs)
    d[:] = 1.0
    assert fast(1e-6) in (FEASIBLE, INFEASIBLE)
    x = fast.u[:p] + rng.standard_normal(p) * np.abs(fast.u).max()  # a point on the equalities
    inside = np.concatenate([x, fast.X[:, p] - fast.X[:, :p] @ x])
    Ci = C @ inside
    tolerance = 1e-6  # the controller's (the active rows hold to rounding in u: ~1e-8 on these)
    d[:] = Ci + rng.uniform(0.01, 0.3, nc) * (1.0 + np.abs(Ci)) + tolerance
    assert fast(1e-6) == INFEASIBLE
    fast.binding_active[:] = False
    assert fast.binding(tolerance) == FEASIBLE
    u, active = fast.u.copy(), np.flatnonzero(fast.binding_active)
    assert (fast.Cu <= d).all()
    expected, expected_active = _binding_reference(fast, tolerance)
    scale = np.abs(expected).max()
    condition = np.linalg.cond(np.tril(fast.H[:, :p])) ** 2  # of the actuators' Hessian (its factor in H)
    assert np.abs(u - expected).max() <= (1e-12 + 1e-16 * condition) * scale  # two exact methods
    tight = np.abs(fast.Cu - (d - tolerance)) <= 1e-7 * (1.0 + np.abs(d))  # at the answer
    assert active.size and tight[active].all() and tight[expected_active].all()
    assert fast(1e-6) == INFEASIBLE  # the same problem again, warm: the same answer
    assert fast.binding(tolerance) == FEASIBLE
    assert np.abs(fast.u - u).max() <= (1e-12 + 1e-16 * condition) * scale


def test_binding_qp_in_c_reports_contradicting_rows():
    """Two rows that cannot both hold (``c u ≤ -1`` and ``-c u ≤ -1``): INFEASIBLE, never an answer."""
    rng = np.random.default_rng(5)
    outputs, layout = _random_problem(rng, 12, 6, 3, 4, 0)
    row = rng.standard_normal(9)
    layout._C[:2] = [row, -row]
    layout._C[2:] = 0.0
    fast = CompiledShortcut(shortcut_library(), layout, outputs)
    outputs.d[:] = [-1.0, -1.0, 1.0, 1.0]
    assert fast(1e-6) == INFEASIBLE
    assert fast.binding(1e-9) == INFEASIBLE
    assert not fast.binding_active.any()


def test_one_call_step_is_a_builtin():
    """With CPython's headers, the one-call step is a builtin taking ``(q, v)`` (no ctypes conversions):
    it answers as the ctypes routine, refuses a wrong number of arguments with a TypeError, and answers
    NOT_VECTORS (nothing done) for what it does not read in C."""
    library = shortcut_library()
    if not library.step_method:
        pytest.skip("built without CPython's headers")
    ctrl, spec, _ = _talos(False)
    q, v = spec.q0.copy(), np.zeros(spec.model.nv)
    ctrl.step(q, v)
    assert_builtin_step(ctrl._plan.shortcut, library.step_objects, q, v)
