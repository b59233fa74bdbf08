"""The strict task hierarchy: lexicographic order, equality with the weighted controller on one level,
and an independent sequential-QP oracle.

Oracles: Pinocchio computes the task accelerations of every command (CoM acceleration, hand
classical acceleration) and checks the equations of motion with contact forces (RNEA); quadprog
solves the levels as plain sequential QPs over all inputs (no elimination, no null spaces), each with
the previous levels' task values as equalities.
"""

from __future__ import annotations

import functools

import numpy as np
import pinocchio as pin
import pytest

import wbc
from tests.helpers import assert_close, eom_residual, robot_case
from wbc import tasks
from wbc.control.hierarchy import LexicographicSolver
from wbc.control.solvers import DaqpSolver

quadprog = pytest.importorskip("quadprog")


@functools.cache
def talos_levels(contact_model: str = "wrench"):
    """Talos standing: CoM (level 0), hand pose (level 1), posture (level 2), default limits."""
    case = robot_case("talos")
    spec, model = case.spec, case.model
    make = {"wrench": wbc.SurfaceContact, "corners": wbc.SurfaceCornersContact}[contact_model]
    # no contact pose feedback: the random states below move the feet from where they were placed, and
    # the sequential-QP oracle compares whole problems (the feedback would only shift b_eq)
    contacts = [make(f, spec.sole.length, spec.sole.width, mu=0.3, kp=0.0, kd=0.0) for f in spec.feet]
    com = tasks.CoMTask(weight=1.0, kp=20.0)
    posture = tasks.PostureTask(model, weight=1e-3, kp=10.0)
    hand = tasks.FrameTask(spec.hands[0], weight=0.1, kp=30.0)
    solver = DaqpSolver()
    # exactness is what these tests check: the shortcut (and the levels' slack floor) accept round-off only
    solver.unconstrained_tolerance = 1e-9
    ctrl = wbc.WholeBodyController(model, [com, posture, hand], contacts, solver=solver)
    ctrl.compile()
    return ctrl, com, hand, posture


def _set_levels(levels: dict) -> None:
    for task, level in levels.items():
        task.set_priority(level)


def task_accelerations(case, ctrl, q, v, cmd) -> tuple[np.ndarray, np.ndarray]:
    """CoM acceleration (3,) and the hand's classical acceleration (6,, world axes), with Pinocchio."""
    pm, data = case.pin_model, case.pin_model.createData()
    pin.centerOfMass(pm, data, q, v, cmd.qdd)
    pin.forwardKinematics(pm, data, q, v, cmd.qdd)
    pin.updateFramePlacements(pm, data)
    hand = case.pin_frame(case.spec.hands[0])
    a = pin.getFrameClassicalAcceleration(pm, data, hand, pin.LOCAL_WORLD_ALIGNED).vector
    return data.acom[0].copy(), a


def _state(model, q0, rng, scale=0.03):
    return wbc.integrate(model, q0, rng.normal(size=model.nv) * scale), rng.normal(size=model.nv) * 0.2


def _near_elbow_limit(model, q):
    """``q`` with the left elbow 5 mrad from its upper limit, so that its limit binds."""
    q = q.copy()
    j = model.joints[model.joint_id("arm_left_4_joint")]
    q[j.idx_q] = j.upper[0] - 0.005
    return q


def _targets(model, spec, com, hand, posture, rng, far=1.0):
    com.set_target(wbc.center_of_mass(model, spec.q0) + rng.normal(size=3) * 0.02)
    T = wbc.frame_placement(model, spec.q0, spec.hands[0])
    T[0:3, 3] += rng.normal(size=3) * 0.05 * far
    hand.set_target(T)
    target = wbc.integrate(model, spec.q0, rng.normal(size=model.nv) * 0.3 * far)
    target[model.joints[model.joint_id("arm_left_4_joint")].idx_q] = 0.8  # beyond the elbow's limit
    posture.set_target(target)


def test_lower_levels_never_change_what_higher_levels_obtain():
    """3 levels, random states (one joint at its limit, so inequalities bind): perturbing the posture
    (level 2) leaves the CoM and hand accelerations unchanged; perturbing the hand (level 1) leaves the
    CoM's. Accelerations from Pinocchio; every step satisfies the equations of motion."""
    case = robot_case("talos")
    model, spec = case.model, case.spec
    ctrl, com, hand, posture = talos_levels()
    _set_levels({com: 0, hand: 1, posture: 2})
    rng = np.random.default_rng(2)
    for trial in range(6):
        q, v = _state(model, spec.q0, rng)
        if trial % 2:
            q = _near_elbow_limit(model, q)
        _targets(model, spec, com, hand, posture, rng)
        cmd = ctrl.step(q, v)
        assert cmd.status is wbc.StepStatus.OPTIMAL
        com_acc, hand_acc = task_accelerations(case, ctrl, q, v, cmd)
        assert eom_residual(case, q, v, cmd, ctrl.contacts) < 1e-9
        for _ in range(2):  # the posture (level 2): new weight and target
            posture.set_weight(rng.uniform(1e-4, 10.0))
            posture.set_target(wbc.integrate(model, spec.q0, rng.normal(size=model.nv) * 0.5))
            other = ctrl.step(q, v)
            c2, h2 = task_accelerations(case, ctrl, q, v, other)
            assert_close(c2, com_acc, 1e-8, "CoM acceleration after perturbing level 2")
            assert_close(h2, hand_acc, 1e-8, "hand acceleration after perturbing level 2")
            assert np.abs(other.qdd - cmd.qdd).max() > 1e-6, "the posture level did change the motion"
        T = wbc.frame_placement(model, q, spec.hands[0])
        T[0:3, 3] += rng.normal(size=3) * 0.1
        hand.set_target(T)  # the hand (level 1)
        hand.set_weight(rng.uniform(0.01, 10.0))
        other = ctrl.step(q, v)
        c3, h3 = task_accelerations(case, ctrl, q, v, other)
        assert_close(c3, com_acc, 1e-8, "CoM acceleration after perturbing level 1")
        assert np.abs(h3 - hand_acc).max() > 1e-6
        assert eom_residual(case, q, v, other, ctrl.contacts) < 1e-9
        hand.set_weight(0.1)


def _sequential_qps(problem: wbc.control.QPProblem, levels, regularization: float, Bhat) -> np.ndarray:
    """The oracle: each level a plain QP over all of u (quadprog), the levels above as equalities, with
    the hierarchy's regularization ``½Σ rᵢuᵢ²``: ``rᵢ = ε‖A_{≤k}[:, i]‖² + 1e-12``, plus ``ε‖B̂[:, i]‖²``
    above the last level."""
    A, b, n = problem.A, problem.b, problem.n
    d = np.sqrt(np.einsum("ij,ij->j", A, A) + 1.0)  # a fixed column scaling (a change of variables)
    fixed_rows, fixed_values = [problem.A_eq], [problem.b_eq]
    above = np.zeros(n)
    finite_lb, finite_ub, binding = np.isfinite(problem.lb), np.isfinite(problem.ub), np.isfinite(problem.h)
    u = np.zeros(n)
    for k, rows in enumerate(levels):
        Ak, bk = A[rows], b[rows]
        above += np.einsum("ij,ij->j", Ak, Ak)
        r = regularization * above + 1e-12
        As = Ak / d
        H = As.T @ As + np.diag(r / d**2)
        g = As.T @ bk
        if k < len(levels) - 1:
            H += np.diag(regularization * np.einsum("ij,ij->j", Bhat, Bhat) / d**2)
        eq = np.vstack(fixed_rows) / d
        C = np.vstack([eq, -problem.G[binding] / d, np.eye(n)[finite_lb] / d, -np.eye(n)[finite_ub] / d])
        rhs = np.concatenate(
            [np.concatenate(fixed_values), -problem.h[binding], problem.lb[finite_lb], -problem.ub[finite_ub]]
        )
        u = quadprog.solve_qp(0.5 * (H + H.T), g, C.T, rhs, eq.shape[0])[0] / d
        fixed_rows.append(Ak)
        fixed_values.append(Ak @ u)
    return u


def test_levels_match_sequential_qps_solved_independently():
    """Talos, 3 levels, with joint limits binding: the lexicographic solution equals quadprog's
    sequential QPs over all of u (no elimination, no null spaces), level by level."""
    case = robot_case("talos")
    model, spec = case.model, case.spec
    ctrl, com, hand, posture = talos_levels()
    _set_levels({com: 0, hand: 1, posture: 2})
    rng = np.random.default_rng(4)
    active_kinds = set()
    for trial in range(4):
        q, v = _state(model, spec.q0, rng)
        if trial % 2 == 0:
            q = _near_elbow_limit(model, q)
        _targets(model, spec, com, hand, posture, rng)
        cmd = ctrl.step(q, v)
        problem = ctrl.build_problem(q, v)
        levels = ctrl._layout().levels
        assert len(levels) == 3
        outputs = ctrl.evaluate(q, v)
        oracle = _sequential_qps(problem, levels, ctrl.regularization, outputs.Bhat.copy())
        for rows in levels:  # each level's task values, relative to their size
            assert_close(problem.A[rows] @ cmd.u, problem.A[rows] @ oracle, 1e-8, "level values vs oracle")
        assert_close(cmd.u, oracle, 1e-6, "u vs sequential QPs")
        active_kinds |= {problem.in_groups[i].kind for i in np.flatnonzero(problem.G @ oracle - problem.h > -1e-7)}
    assert wbc.Kind.JOINT_POSITION_LIMIT in active_kinds, "a joint limit binds in some trial"


@pytest.mark.parametrize("contact_model", ["wrench", "corners"])
def test_one_level_equals_the_weighted_controller(contact_model):
    """Every task at one level (any level number): the controller's step and the lexicographic solver
    both give the weighted QP's solution, with the equalities eliminated through the Delassus matrix
    (wrench) or through an SVD (corner forces), and with inequalities binding."""
    case = robot_case("talos")
    model, spec = case.model, case.spec
    ctrl, com, hand, posture = talos_levels(contact_model)
    rng = np.random.default_rng(8)
    solver = LexicographicSolver(ctrl.solver, ctrl.fallback)
    _set_levels({com: 0, hand: 0, posture: 0})
    cases = []
    for trial in range(3):
        q, v = _state(model, spec.q0, rng)
        if trial:
            q = _near_elbow_limit(model, q)
        _targets(model, spec, com, hand, posture, rng)
        weighted = ctrl.step(q, v)
        layout = ctrl._layout()
        assert len(layout.levels) == 1
        x = solver.solve(layout, layout.selection(ctrl.evaluate(q, v)), ctrl.regularization)
        assert_close(x, weighted.u, 1e-7, "lexicographic solver on one level vs weighted")
        cases.append((q, v, weighted.u, [t.target for t in (com, hand, posture)]))
    _set_levels({com: 2, hand: 2, posture: 2})
    for q, v, u, targets in cases:
        com.set_target(targets[0])
        hand._set_target_parameters(targets[1])
        posture.set_target(targets[2])
        assert_close(ctrl.step(q, v).u, u, 1e-12, "all tasks at level 2 vs all at level 0")
    _set_levels({com: 0, hand: 0, posture: 0})


def test_one_level_equals_weighted_without_equalities():
    """Panda (no contacts), a joint at its limit and the posture asking beyond it: the lexicographic
    solver on one level is the QP's."""
    case = robot_case("panda")
    model, spec = case.model, case.spec
    frame = tasks.FrameTask("panda_hand_tcp", weight=1.0, kp=100.0)
    posture = tasks.PostureTask(model, weight=1e-2, kp=50.0)
    ctrl = wbc.WholeBodyController(model, [frame, posture])
    rng = np.random.default_rng(3)
    solver = LexicographicSolver(ctrl.solver, ctrl.fallback)
    j = model.joints[model.joint_id("panda_joint4")]
    for _ in range(3):
        q = spec.q0.copy()
        q[j.idx_q] = j.upper[0] - 0.011
        v = rng.normal(size=model.nv) * 0.2
        v[j.idx_v] = 0.3
        T = wbc.frame_placement(model, spec.q0, "panda_hand_tcp")
        T[0:3, 3] += rng.normal(size=3) * 0.1
        frame.set_target(T)
        beyond = spec.q0.copy()
        beyond[j.idx_q] = j.upper[0] + 0.5  # the posture pulls the joint into its limit
        posture.set_target(beyond)
        cmd = ctrl.step(q, v)
        problem = ctrl.build_problem(q, v)
        assert problem.violation(cmd.u) < 1e-9
        layout = ctrl._layout()
        x = solver.solve(layout, layout.selection(ctrl.evaluate(q, v)), ctrl.regularization)
        assert_close(x, cmd.u, 1e-7, "one level vs weighted (Panda)")
        assert np.max(problem.G @ cmd.u - problem.h) > -1e-6, "an inequality binds"


def test_priorities_are_validated_and_recompile_lazily():
    case = robot_case("panda")
    model = case.model
    posture = tasks.PostureTask(model, weight=1.0, kp=10.0)
    ctrl = wbc.WholeBodyController(model, [posture])
    ctrl.compile()
    for bad in (-1, 1.5, "1", True):
        with pytest.raises(wbc.InputError, match="priority"):
            posture.set_priority(bad)
    kernel = ctrl.kernel
    posture.set_priority(0)
    assert ctrl.kernel is kernel, "an unchanged priority keeps the kernel"
    posture.set_priority(3)
    assert ctrl.kernel is None and posture.priority == 3
    ctrl.step(case.spec.q0, np.zeros(model.nv))
    assert ctrl._layout().levels[0].size == model.n_actuated


def test_infeasible_constraints_under_levels_fall_back_and_name_the_conflict():
    """Torque limits too low to stand, 2 levels: the step names the torque limits, applies the
    soft-contact fallback and stays finite."""
    case = robot_case("talos")
    model, spec = case.model, case.spec
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=0.3) for f in spec.feet]
    com = tasks.CoMTask(weight=1.0, kp=20.0)
    posture = tasks.PostureTask(model, weight=1e-3, kp=10.0)
    posture.set_priority(1)
    ctrl = wbc.WholeBodyController(model, [com, posture], contacts, torque_limit=np.full(model.n_actuated, 0.5))
    com.set_target(wbc.center_of_mass(model, spec.q0))
    posture.set_target(spec.q0)
    cmd = ctrl.step(spec.q0, np.zeros(model.nv))
    assert cmd.status is wbc.StepStatus.SOFT_CONTACTS
    assert wbc.Kind.TORQUE_LIMIT in {g.kind for g in cmd.conflict}
    assert np.all(np.isfinite(cmd.tau)) and np.all(np.abs(cmd.tau) <= 0.5 + 1e-7)
    assert np.all(np.isfinite(cmd.qdd))
