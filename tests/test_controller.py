"""The controller against the full dynamics (Pinocchio's RNEA), its QP, fallbacks and solvers.

The oracle is Pinocchio, not wbc: every step's (τ, f, q̈) must satisfy M q̈ + h = Sᵀτ + Σ Jᵀ f
with Pinocchio's inverse dynamics, the contacts must accelerate as their pose feedback asks
(``−K_p log₆(M₀⁻¹M) − K_d ν``, computed with Pinocchio: zero at rest where they were placed), and the
forces must respect friction, unilaterality and the torque limits.
"""

from __future__ import annotations

import functools

import numpy as np
import pinocchio as pin
import pytest

import wbc
from tests.helpers import assert_close, robot_case, talos_standing
from wbc import tasks
from wbc.algorithms.kinematics import ReferenceFrame

TOL = 1e-8
#: The two force models of a rectangular sole.
CONTACT_MODELS = {"wrench": wbc.SurfaceContact, "corners": wbc.SurfaceCornersContact}


@functools.cache
def talos_controller(contact_model: str = "wrench", mu: float = 0.3):
    case = robot_case("talos")
    spec, model = case.spec, case.model
    # a soft contact feedback (kp 10): the random states below move the feet by centimetres from where
    # they were placed, and the default stiffness would saturate the torque limits there
    contacts = [CONTACT_MODELS[contact_model](f, spec.sole.length, spec.sole.width, mu=mu, kp=10.0) for f in spec.feet]
    com = tasks.CoMTask(weight=1.0, kp=20.0)
    posture = tasks.PostureTask(model, weight=1e-3, kp=10.0)
    hand = tasks.FrameTask(spec.hands[0], weight=0.1, kp=30.0)
    for task in (com, hand):  # standing targets: whichever test steps first (cached setup)
        task.set_target_from_configuration(model, spec.q0)
    ctrl = wbc.WholeBodyController(model, [com, posture, hand], contacts)
    ctrl.compile()
    return ctrl, com, posture, hand


def hold_q0(com, posture, hand) -> None:
    """The tasks' targets where Talos stands in ``q0``."""
    case = robot_case("talos")
    model, q0 = case.model, case.spec.q0
    com.set_target(wbc.center_of_mass(model, q0))
    posture.set_target(q0)
    hand.set_target(wbc.frame_placement(model, q0, case.spec.hands[0]))


def place_feet_where_they_stand(ctrl):
    """Re-enforce every contact, placed where the next step finds it (the cached controllers were
    placed at whatever state an earlier test stepped first)."""
    for c in ctrl.contacts:
        ctrl.activate_contact(c.name)


def contact_frame_residuals(case, ctrl, q, v, cmd):
    """(EoM residual, contact acceleration, the contacts' feedback acceleration) of a step, computed
    with Pinocchio from the placements the controller recorded."""
    model, pm = case.model, case.pin_model
    data = pm.createData()
    tau = np.zeros(model.nv)
    tau[model.actuated_v_indices] = cmd.tau
    generalized = tau.copy()
    pin.computeJointJacobians(pm, data, q)
    pin.updateFramePlacements(pm, data)
    contact_acc, feedback = [], []
    pin.forwardKinematics(pm, data, q, v, cmd.qdd)
    for c in ctrl.contacts:
        fid = case.pin_frame(c.frame)
        J = pin.getFrameJacobian(pm, data, fid, pin.LOCAL)
        wrench = c.force_basis() @ cmd.forces[c.name]
        generalized += J.T @ wrench
        contact_acc.append(pin.getFrameAcceleration(pm, data, fid, pin.LOCAL).vector)  # spatial, not classical
        state = ctrl.contact_state(c.name)
        placed = pin.SE3(state.placement[0:3, 0:3], state.placement[0:3, 3])
        error = pin.log6(placed.actInv(data.oMf[fid])).vector
        twist = pin.getFrameVelocity(pm, data, fid, pin.LOCAL).vector
        feedback.append(-state.kp * error - state.kd * twist)
    lhs = pin.rnea(pm, data, q, v, cmd.qdd)
    return lhs - generalized, np.concatenate(contact_acc), np.concatenate(feedback)


def perturbed_state(model, q0, rng, scale=0.03):
    q = wbc.integrate(model, q0, rng.normal(size=model.nv) * scale)
    v = rng.normal(size=model.nv) * 0.2
    return q, v


@pytest.mark.parametrize("contact_model", ["wrench", "corners"])
def test_talos_steps_satisfy_full_dynamics_and_constraints(contact_model):
    """Random states and references: Pinocchio's RNEA, contact accelerations, cones and limits hold.

    The shortcut may return a minimizer that exceeds an inequality by its solver's
    ``unconstrained_tolerance`` (1e-6 by default); set to 1e-9 here, the bounds hold to 1e-9 (a foot
    whose normal force rests at zero: the default let round-off of -1.3e-9 through)."""
    case = robot_case("talos")
    ctrl, com, posture, hand = talos_controller(contact_model)
    solver = ctrl.solver
    solver.unconstrained_tolerance = 1e-9
    ctrl.solver = solver  # the kernel again, with the tolerance traced into d
    model, spec = case.model, case.spec
    rng = np.random.default_rng(7)
    for _ in range(10):
        q, v = perturbed_state(model, spec.q0, rng)
        com.set_target(wbc.center_of_mass(model, spec.q0) + rng.normal(size=3) * 0.02, rng.normal(size=3) * 0.05)
        posture.set_target(wbc.integrate(model, spec.q0, rng.normal(size=model.nv) * 0.05))
        T = wbc.frame_placement(model, q, spec.hands[0])
        T[0:3, 3] += rng.normal(size=3) * 0.05
        hand.set_target(T)
        cmd = ctrl.step(q, v)
        assert cmd.status is wbc.StepStatus.OPTIMAL
        eom, acc, feedback = contact_frame_residuals(case, ctrl, q, v, cmd)
        assert_close(eom, np.zeros_like(eom), TOL * 1e3, "M qdd + h - S^T tau - J^T f")  # |M qdd| ~ 1e3
        assert_close(acc, feedback, TOL, "contact accelerations = their pose feedback")
        assert np.all(np.abs(cmd.tau) <= model.effort_limit + 1e-9), "torque limits"
        for c in ctrl.contacts:
            G, h, _ = c.inequalities()
            assert np.all(G @ cmd.forces[c.name] <= h + 1e-7), f"friction / CoP / unilaterality of {c.name}"
            assert c.normal_force(cmd.forces[c.name]) >= -1e-9


def test_wrench_and_corner_models_give_the_same_motion():
    """Both parametrisations describe the same wrench set: same optimal accelerations and torques."""
    case = robot_case("talos")
    model, spec = case.model, case.spec
    rng = np.random.default_rng(3)
    q, v = perturbed_state(model, spec.q0, rng)
    cmds = []
    for contact_model in ("wrench", "corners"):
        ctrl, com, posture, hand = talos_controller(contact_model)
        place_feet_where_they_stand(ctrl)
        hold_q0(com, posture, hand)
        cmds.append(ctrl.step(q, v))
    assert_close(cmds[0].qdd, cmds[1].qdd, 1e-5, "qdd, wrench vs corners")
    assert_close(cmds[0].tau, cmds[1].tau, 1e-5, "tau, wrench vs corners")


def test_standing_sums_normal_forces_to_weight():
    """At rest in the default posture the feet carry m g and the CoM is held.

    The relative regularization (ε = 1e-8 of each variable's own curvature) biases the forces by
    about 1e-6 of m g (a CoM acceleration of ~1e-5 m/s²); 1e-5 bounds that bias.
    """
    case = robot_case("talos")
    ctrl, com, posture, hand = talos_controller("wrench")
    model, spec = case.model, case.spec
    hold_q0(com, posture, hand)
    place_feet_where_they_stand(ctrl)
    cmd = ctrl.step(spec.q0, np.zeros(model.nv))
    total = sum(c.normal_force(cmd.forces[c.name]) for c in ctrl.contacts)
    assert abs(total - model.total_mass * 9.81) < 1e-5 * total
    assert np.abs(cmd.task_errors["com"]).max() < 1e-12


def test_changing_references_and_gains_does_not_recompile():
    ctrl, com, posture, _hand = talos_controller("wrench")
    kernel = ctrl.kernel
    case = robot_case("talos")
    com.set_target(wbc.center_of_mass(case.model, case.spec.q0) + [0.01, 0, 0])
    com.set_gains(40.0)
    posture.set_weight(1e-2)
    cmd = ctrl.step(case.spec.q0, np.zeros(case.model.nv))
    assert ctrl.kernel is kernel
    assert abs(cmd.task_errors["com"][0] - 0.01) < 1e-12


def test_fixed_base_frame_task_matches_closed_form_weighted_least_squares():
    """Panda, one 6D frame task, nothing binding: the QP returns u = (AᵀA + εD)⁻¹Aᵀb."""
    case = robot_case("panda")
    model, spec = case.model, case.spec
    task = tasks.FrameTask("panda_hand_tcp", weight=1.0, kp=50.0)
    # nothing may bind: huge torque limits and no joint limits (states are drawn at the joint limits)
    ctrl = wbc.WholeBodyController(model, [task], limits=[wbc.TorqueLimit(np.full(model.n_actuated, 1e6))])
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = np.clip(spec.q0 + rng.normal(size=model.nq) * 0.2, model.lower_position_limit, model.upper_position_limit)
        v = rng.normal(size=model.nv) * 0.3
        T = wbc.frame_placement(model, q, "panda_hand_tcp")
        T[0:3, 3] += rng.normal(size=3) * 0.02
        task.set_target(T, rng.normal(size=6) * 0.1, rng.normal(size=6))
        problem = ctrl.build_problem(q, v)
        cmd = ctrl.step(q, v)
        closed = np.linalg.solve(problem.H, -problem.g)
        # the closed form itself is only as accurate as the (scaled) Hessian's conditioning allows
        scaled, _ = wbc.control.qp.jacobi_scaled(problem)
        tol = 100 * np.finfo(float).eps * np.linalg.cond(scaled.H)
        assert_close(cmd.u, closed, tol, "QP solution vs closed form")


def test_fixed_base_frame_task_acceleration_is_met_up_to_the_regularization():
    """Panda, one 6D task: J q̈ + J̇v = ẍ*, with a residual proportional to the regularization ε."""
    case = robot_case("panda")
    model, spec = case.model, case.spec
    rng = np.random.default_rng(1)
    q = np.clip(spec.q0 + rng.normal(size=model.nq) * 0.2, model.lower_position_limit, model.upper_position_limit)
    v = rng.normal(size=model.nv) * 0.3
    vel_ref, acc_ref = rng.normal(size=6) * 0.1, rng.normal(size=6)
    residuals = {}
    for eps in (1e-8, 1e-12):
        task = tasks.FrameTask("panda_hand_tcp", weight=1.0, kp=50.0)
        limits = [wbc.TorqueLimit(np.full(model.n_actuated, 1e6))]  # nothing binds (no joint limits)
        ctrl = wbc.WholeBodyController(model, [task], limits=limits, regularization=eps)
        task.set_target(wbc.frame_placement(model, spec.q0, "panda_hand_tcp"), vel_ref, acc_ref)
        cmd = ctrl.step(q, v)
        J = wbc.frame_jacobian(model, q, "panda_hand_tcp", ReferenceFrame.LOCAL_WORLD_ALIGNED)
        achieved = J @ cmd.qdd + wbc.frame_drift(model, q, v, "panda_hand_tcp", ReferenceFrame.LOCAL_WORLD_ALIGNED)
        desired = acc_ref + task.kd * (vel_ref - J @ v) + task.kp * cmd.task_errors[task.name]
        residuals[eps] = np.abs(achieved - desired).max()
        if eps == 1e-12:
            assert_close(achieved, desired, 1e-8, "task acceleration")
    assert residuals[1e-12] < 1e-3 * residuals[1e-8], residuals


def test_torque_limits_too_low_to_stand_fall_back_to_soft_contacts():
    """Infeasible: the step names the torque limits, applies the soft-contact fallback, stays finite."""
    case = robot_case("talos")
    model, spec = case.model, case.spec
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=0.3) for f in spec.feet]
    com = tasks.CoMTask(weight=1.0, kp=20.0)
    ctrl = wbc.WholeBodyController(model, [com], contacts, torque_limit=np.full(model.n_actuated, 0.5))
    com.set_target(wbc.center_of_mass(model, spec.q0))
    cmd = ctrl.step(spec.q0, np.zeros(model.nv))
    assert cmd.status is wbc.StepStatus.SOFT_CONTACTS
    assert wbc.Kind.TORQUE_LIMIT in {g.kind for g in cmd.conflict}
    assert np.all(np.isfinite(cmd.tau)) and np.all(np.abs(cmd.tau) <= 0.5 + 1e-7)
    assert np.all(np.isfinite(cmd.qdd))


def test_zero_friction_cannot_push_the_com_sideways():
    """μ = 0: the QP stays feasible (tasks are costs), tangential forces vanish, c̈_xy = 0, error reported."""
    case, com, posture, ctrl = talos_standing(mu=0.0, com=(1.0, 20.0), posture=(1e-3, 10.0))
    model, spec = case.model, case.spec
    com.set_target(wbc.center_of_mass(model, spec.q0), acceleration=[1.0, 0.5, 0.0])
    posture.set_target(spec.q0)
    cmd = ctrl.step(spec.q0, np.zeros(model.nv))
    assert cmd.status is wbc.StepStatus.OPTIMAL
    newton = model.gravity.copy()
    for c in ctrl.contacts:
        f = cmd.forces[c.name]
        assert np.abs(f[0:2]).max() < 1e-6 and abs(f[5]) < 1e-6, "no tangential force, no yaw torque"
        R = wbc.frame_placement(model, spec.q0, c.frame)[0:3, 0:3]
        newton += R @ f[0:3] / model.total_mass
    achieved = wbc.com_jacobian(model, spec.q0) @ cmd.qdd  # v = 0: no drift
    assert_close(achieved, newton, 1e-7, "c̈ from the joint accelerations vs Newton with normal forces only")
    assert np.abs(achieved[0:2] - [1.0, 0.5]).min() > 0.4, "the sideways acceleration is not obtained"


def test_supported_solvers_agree():
    """Every backend solves the standing QP with torque limits (the anchors' problem) to its accuracy.
    (ProxQP does not converge within its iteration bounds on many steps once every joint's position and
    velocity limits add their rows: documented in wbc.control.solvers; the fallback then applies.)"""
    case = robot_case("talos")
    spec, model = case.spec, case.model
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=0.3) for f in spec.feet]
    com = tasks.CoMTask(weight=1.0, kp=20.0)
    posture = tasks.PostureTask(model, weight=1e-3, kp=10.0)
    hand = tasks.FrameTask(spec.hands[0], weight=0.1, kp=30.0)
    ctrl = wbc.WholeBodyController(model, [com, posture, hand], contacts, limits=[wbc.TorqueLimit()])
    posture.set_target(spec.q0)
    hand.set_target_from_configuration(model, spec.q0)
    rng = np.random.default_rng(11)
    q, v = perturbed_state(case.model, case.spec.q0, rng)
    com.set_target(wbc.center_of_mass(case.model, case.spec.q0) + [0.01, -0.01, 0.0])
    problem = ctrl.build_problem(q, v)
    reference = wbc.control.make_solver("daqp").solve(problem)
    assert reference.found
    scale = np.abs(reference.x).max()
    for name, tol in (("proxqp", 1e-3), ("quadprog", 1e-6), ("osqp", 1e-2)):
        sol = wbc.control.make_solver(name).solve(problem)
        assert sol.found, name
        assert np.abs(sol.x - reference.x).max() < tol * scale, name


def test_contact_release_ramps_the_normal_force_down_without_recompiling():
    case = robot_case("talos")
    ctrl, com, posture, hand = talos_controller("wrench")
    model, spec = case.model, case.spec
    hold_q0(com, posture, hand)
    kernel = ctrl.kernel
    right = ctrl.contacts[1]
    try:
        ctrl.step(spec.q0, np.zeros(model.nv))
        ctrl.deactivate_contact(right.name, ramp=0.005, start_force=400.0)
        maxima = []
        for _ in range(7):
            cmd = ctrl.step(spec.q0, np.zeros(model.nv))
            maxima.append(right.normal_force(cmd.forces[right.name]))
        assert all(f <= 400.0 * (1 - k / 5) + 1e-6 for k, f in enumerate(maxima[:5]))
        assert not ctrl.contact_active(right.name) and np.abs(cmd.forces[right.name]).max() == 0.0
        assert right.initially_active, "the contact description is never written to"
        assert ctrl.kernel is kernel
    finally:
        ctrl.activate_contact(right.name)


def test_contact_activation_ramps_the_normal_force_up_from_zero():
    """``activate_contact(ramp=T, ramp_force=F)``: the bound rises F dt/T per step from zero, the
    force follows it (standing, the foot would take more), then the contact's own limit applies."""
    case = robot_case("talos")
    ctrl, com, posture, hand = talos_controller("wrench")
    model, spec = case.model, case.spec
    hold_q0(com, posture, hand)
    right = ctrl.contacts[1]
    v0 = np.zeros(model.nv)
    try:
        place_feet_where_they_stand(ctrl)
        ctrl.step(spec.q0, v0)
        ctrl.deactivate_contact(right.name)
        ctrl.step(spec.q0, v0)
        placement = wbc.frame_placement(model, spec.q0, right.frame)
        ctrl.activate_contact(right.name, placement, ramp=0.005, ramp_force=200.0)
        assert ctrl.contact_active(right.name)
        forces = []
        for _ in range(8):
            cmd = ctrl.step(spec.q0, v0)
            forces.append(right.normal_force(cmd.forces[right.name]))
        for k, f in enumerate(forces[:4]):  # the bound binds: standing, the right foot carries ~450 N
            assert f == pytest.approx(40.0 * (k + 1), abs=1e-6)
        assert forces[-1] > 300.0, "after the rise the contact's own (unbounded) limit applies"
        state = ctrl.contact_state(right.name)
        assert state.rise is None and np.isinf(state.max_normal_force)
        with pytest.raises(wbc.InputError, match="ramp_force"):
            ctrl.activate_contact(right.name, ramp=0.01)  # unbounded limit and no ramp_force
        with pytest.raises(wbc.InputError, match="ramp"):
            ctrl.activate_contact(right.name, ramp=-1.0, ramp_force=10.0)
    finally:
        ctrl.activate_contact(right.name)


def test_adding_a_task_recompiles_and_removing_it_restores():
    case = robot_case("talos")
    model = case.model
    ctrl = wbc.WholeBodyController(model, [tasks.CoMTask(kp=10.0)], [])
    first = ctrl.compile()
    extra = tasks.PostureTask(model, weight=1e-3, kp=1.0)
    ctrl.add_task(extra)
    assert ctrl.kernel is None
    second = ctrl.compile()
    assert second.library != first.library
    ctrl.remove_task(extra)
    third = ctrl.compile()
    assert third.library == first.library and third.compile_seconds == 0.0


def test_bad_inputs_raise_clear_errors():
    ctrl, *_ = talos_controller("wrench")
    case = robot_case("talos")
    with pytest.raises(wbc.InputError, match="shape"):
        ctrl.step(case.spec.q0[:-1], np.zeros(case.model.nv))
    v = np.zeros(case.model.nv)
    v[3] = np.nan
    with pytest.raises(wbc.InputError, match="non-finite"):
        ctrl.step(case.spec.q0, v)
    with pytest.raises(wbc.FrameError, match="no frame"):
        wbc.WholeBodyController(case.model, [], [wbc.PointContact("left_sole")])
    with pytest.raises(wbc.InputError):
        tasks.CoMTask(axes="xq")
    with pytest.raises(wbc.InputError):
        wbc.WholeBodyController(case.model, [], [], solver="banana")
