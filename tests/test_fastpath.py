"""The compiled shortcut (wbc.control.fastpath, shortcut.c) against its numpy reference, and the
working-set solve of binding steps against the full QP."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import wbc
from wbc import robots, tasks
from wbc.control.fastpath import FAILED, FEASIBLE, INFEASIBLE, CompiledShortcut, shortcut_library
from wbc.control.qp import least_squares_by_elimination
from wbc.control.solvers import DaqpSolver

pytestmark = pytest.mark.skipif(shortcut_library() is None, reason="no C compiler: the numpy path runs")


def _random_problem(rng, k, p, m, nc, nt):
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
    d = np.zeros(nc)
    outputs = [A, b, A_eq, b_eq, G, None, None, None, None, None, None, d]
    layout = SimpleNamespace(
        _C=C, _traced_at=traced, all_columns=True, all_cost=True, all_eq=True, _all_traced=True, _d_rows=None
    )
    return outputs, layout


@pytest.mark.parametrize("seed", range(6))
def test_compiled_shortcut_equals_numpy(seed):
    """Random well-conditioned problems: the minimizer and ``C u`` to 1e-12 (relative), and the
    verdict of ``C u ≤ d`` on both sides of the boundary."""
    rng = np.random.default_rng(seed)
    k, p, m = int(rng.integers(5, 40)), int(rng.integers(2, 33)), int(rng.integers(1, 13))
    nc, nt = int(rng.integers(1, 60)), 0 if seed % 2 else 5
    outputs, layout = _random_problem(rng, k, p, m, nc, nt)
    fast = CompiledShortcut(shortcut_library(), layout, outputs)
    A, b, A_eq, b_eq, G, d = outputs[0], outputs[1], outputs[2], outputs[3], outputs[4], outputs[11]
    reg = 10.0 ** rng.uniform(-8, -2)
    x, f = least_squares_by_elimination(A[:, :p], A[:, p:], b, A_eq[:, :p], A_eq[:, p:], b_eq, reg)
    u = np.concatenate([x, f])
    C = layout._C.copy()
    C[layout._traced_at] = G
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


def test_compiled_shortcut_refuses_a_singular_delassus_matrix():
    rng = np.random.default_rng(7)
    outputs, layout = _random_problem(rng, 10, 4, 3, 5, 0)
    outputs[2][:, 4:] = 0.0  # Λ = 0: not positive definite
    assert CompiledShortcut(shortcut_library(), layout, outputs)(1e-8) == FAILED
    outputs, layout = _random_problem(rng, 10, 4, 3, 5, 0)
    outputs[1][0] = np.nan
    assert CompiledShortcut(shortcut_library(), layout, outputs)(1e-8) == FAILED


def _talos(limits: bool):
    spec = robots.load("talos")
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=0.3) for f in spec.feet]
    com = tasks.CoMTask(weight=1.0, kp=20.0)
    posture = tasks.PostureTask(spec.model, weight=1e-3, kp=10.0)
    ctrl = wbc.WholeBodyController(spec.model, [com, posture], contacts, limits=None if limits else [wbc.TorqueLimit()])
    com.set_target(wbc.center_of_mass(spec.model, spec.q0))
    posture.set_target(spec.q0)
    return ctrl, spec, com


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
    assert isinstance(ctrl._fast[id(layout)], CompiledShortcut)
    assert cmd.status is wbc.StepStatus.OPTIMAL
    x = ctrl._shortcut(layout, ctrl._evaluate(q, v))
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
    layout = ctrl._layout()
    fast = ctrl._fast[id(layout)]
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

    generic = fast.screened(Plain(), ctrl._tolerance)
    assert generic is not None
    assert np.abs(generic - expected).max() <= 1e-6 * scale


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
    fast = ctrl._fast[id(layout)]
    assert isinstance(fast, CompiledShortcut)

    outputs = ctrl._evaluate(q, v)
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
