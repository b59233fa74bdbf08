"""The whole-body controller on clustered models (rotors, transmissions, parallel linkages).

Every step's command is checked against Pinocchio's spanning tree (an oracle that shares nothing
with wbc's cluster algorithms: its own CRBA, RNEA and frame Jacobians, the loop rows rebuilt from
its frame Jacobians): the motor efforts ``τ_m`` on the motor joints and the contact wrenches, put
into the spanning tree's KKT system ``[H Kᵀ; K 0][ÿ; −λ] = [E τ_m + J_cᵀ f − h; −K̇ ẏ]``, give
back the controller's ``q̈`` (to 1e-8, relative), and the active contacts do not accelerate.

Fast: the Tello-like biped (differential hips, four-bar ankles, geared rotors). Slow: the G1-like
humanoid whose ankles are driven by two geared cranks through rods (the demo's robot).
"""

from __future__ import annotations

import functools

import numpy as np
import pinocchio as pin
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from wbc import robots, tasks
from wbc.errors import InputError

#: Relative agreement of the controller's q̈ with the KKT oracle (measured: ~1e-13).
TOL_EOM = 1e-8
#: Contact-row acceleration left by the QP (its equality constraints), m/s² (measured: ~1e-12).
TOL_CONTACT = 1e-6
N_STATES = 6


@functools.cache
def _setup(name: str):
    robot = robots.load(name)
    cm = robot.model
    # no contact pose feedback: the random states move the feet, and the oracle asks them not to accelerate
    contacts = [wbc.SurfaceContact(f, robot.sole.length, robot.sole.width, mu=0.8, kp=0.0, kd=0.0) for f in robot.feet]
    com = tasks.CoMTask(weight=10.0, kp=100.0)
    base = cm.tree.joints[1].link
    orientation = tasks.OrientationTask(base, weight=1.0, kp=100.0)
    foot = tasks.FrameTask(robot.feet[0], weight=0.1, kp=50.0)
    posture = tasks.PostureTask(cm, weight=1e-2, kp=30.0)
    for task in (com, orientation, foot):  # standing targets: whichever test steps first (cached setup)
        task.set_target_from_configuration(cm.tree, robot.q0)
    controller = wbc.WholeBodyController(cm, [com, orientation, foot, posture], contacts)
    controller.compile()
    return robot, controller, (com, orientation, foot, posture), oracle.cluster_model(cm)


def _spanning_velocity(pm, cm, y, v) -> np.ndarray:
    """``ẏ`` from Pinocchio's loop rows: ``ẏ_ind = v``, ``K ẏ = 0``."""
    K, _ = oracle.loop_constraints(pm, cm, y, np.zeros(pm.nv))
    ind = np.asarray(cm.independent_v_indices)
    dep = np.setdiff1d(np.arange(pm.nv), ind)
    yd = np.zeros(pm.nv)
    yd[ind] = v
    if dep.size:
        yd[dep] = np.linalg.solve(K[:, dep], -K[:, ind] @ v)
    return yd


def check_step(pm, cm, controller, y, v, cmd) -> tuple[float, float]:
    """Largest relative EOM error and largest contact acceleration of one step (Pinocchio oracle)."""
    yd = _spanning_velocity(pm, cm, y, v)
    tau_span = np.zeros(pm.nv)
    for k, j in enumerate(cm.motor_joints):
        tau_span[pm.joints[pm.getJointId(cm.tree.joints[j].name)].idx_v] += cmd.tau[k]
    pd = pm.createData()
    pin.computeJointJacobians(pm, pd, y)
    pin.updateFramePlacements(pm, pd)
    for c in controller.contacts:
        J = pin.getFrameJacobian(pm, pd, oracle.frame_id(pm, c.frame), pin.LOCAL)
        tau_span += J.T @ (c.force_basis() @ cmd.forces[c.name])  # sole-frame wrench
    ydd = oracle.kkt_forward_dynamics(pm, cm, y, yd, tau_span)
    qdd = ydd[np.asarray(cm.independent_v_indices)]
    eom = float(np.max(np.abs(qdd - cmd.qdd)) / max(1.0, float(np.max(np.abs(qdd)))))
    pin.forwardKinematics(pm, pd, y, yd, ydd)
    contact = 0.0
    for c in controller.contacts:
        if controller.contact_active(c.name):
            a = pin.getFrameAcceleration(pm, pd, oracle.frame_id(pm, c.frame), pin.LOCAL)
            contact = max(contact, float(np.max(np.abs(a.vector))))
    return eom, contact


def _run(name: str) -> tuple[float, float]:
    robot, controller, (com, orientation, foot, posture), pm = _setup(name)
    cm = robot.model
    rng = np.random.default_rng(3)
    worst = (0.0, 0.0)
    for k in range(N_STATES):
        q = cm.independent_configuration(robot.q0)
        q[7:] += rng.uniform(-0.1, 0.1, q.size - 7)
        y = cm.spanning_configuration(q, guess=robot.q0)
        v = rng.normal(scale=0.3, size=cm.nv)
        com.set_target(wbc.center_of_mass(cm.tree, robot.q0) + rng.uniform(-0.02, 0.02, 3))
        orientation.set_target_from_configuration(cm.tree, robot.q0)
        foot.set_target_from_configuration(cm.tree, y)
        posture.set_target(robot.q0)
        if k == N_STATES - 1:  # one step with the second foot released
            controller.deactivate_contact(robot.feet[1])
        cmd = controller.step(y, v)
        assert cmd.failure is None, cmd.status
        assert cmd.tau.shape == (cm.n_motors,)
        eom, contact = check_step(pm, cm, controller, y, v, cmd)
        worst = (max(worst[0], eom), max(worst[1], contact))
    controller.activate_contact(robot.feet[1])
    assert worst[0] < TOL_EOM, worst
    assert worst[1] < TOL_CONTACT, worst
    return worst


def test_tello_steps_satisfy_the_constrained_equations_of_motion():
    _run("tello")


@pytest.mark.slow
def test_g1_parallel_ankle_steps_satisfy_the_constrained_equations_of_motion():
    _run("g1_parallel_ankle")


def test_inputs_are_motors_with_motor_limits():
    robot, controller, _, _ = _setup("tello")
    cm = robot.model
    assert controller.n_u == cm.n_motors + 12
    limit = wbc.TorqueLimit()
    limit.check(cm)
    assert np.array_equal(limit.limit, cm.motor_effort_limit)
    with pytest.raises(InputError, match="10 numbers"):
        wbc.TorqueLimit(np.ones(cm.nv)).check(cm)


def test_torque_limits_bound_the_motors():
    robot, _, _, pm = _setup("tello")
    cm = robot.model
    contacts = [wbc.SurfaceContact(f, robot.sole.length, robot.sole.width, mu=0.8) for f in robot.feet]
    com = tasks.CoMTask(weight=10.0, kp=100.0)
    posture = tasks.PostureTask(cm, weight=1e-2, kp=30.0)
    limit = np.full(cm.n_motors, 3.0)
    controller = wbc.WholeBodyController(cm, [com, posture], contacts, torque_limit=limit)
    com.set_target(wbc.center_of_mass(cm.tree, robot.q0) + np.array([0.0, 0.03, -0.02]))
    posture.set_target(robot.q0)
    cmd = controller.step(robot.q0, np.zeros(cm.nv))
    assert np.all(np.abs(cmd.tau) <= limit + 1e-6)
    eom, _ = check_step(pm, cm, controller, robot.q0, np.zeros(cm.nv), cmd)
    assert eom < TOL_EOM


def test_posture_acts_on_independent_coordinates():
    robot = robots.load("tello")
    cm = robot.model
    posture = tasks.PostureTask(cm)
    assert posture.dim == cm.nv - 6
    assert posture.target_size == cm.tree.nq
    with pytest.raises(InputError, match="another model"):
        posture.check(robots.load("four_bar").model)


def test_bad_state_sizes_are_named():
    robot, controller, _, _ = _setup("tello")
    cm = robot.model
    with pytest.raises(InputError, match="y"):
        controller.step(np.zeros(cm.nq), np.zeros(cm.nv))
    with pytest.raises(InputError, match="v"):
        controller.step(robot.q0, np.zeros(cm.tree.nv))


def test_joint_limits_act_on_independent_coordinates():
    robot = robots.load("tello")
    cm = robot.model
    position, velocity = wbc.JointPositionLimit(), wbc.JointVelocityLimit()
    position.check(cm)
    velocity.check(cm)
    names = [j.name for j in position.joints]
    assert names == [n for n in cm.joint_names if n != "root_joint"]  # rotors and rods get no limit of their own
    assert np.array_equal(position.indices, [cm.joint_names.index(n) + 5 for n in names])
    assert np.array_equal(position.q_indices, [cm.tree.joints[cm.tree.joint_id(n)].idx_q for n in names])
    assert np.array_equal(velocity.indices, position.indices)
    with pytest.raises(InputError, match="not an independent coordinate"):
        wbc.JointPositionLimit(["left_crank_joint"]).check(cm)


def test_a_knee_moving_into_its_limit_stays_viable():
    """A linkage-driven knee moving toward its limit just fast enough to still stop by braking at ``ā``
    is kept in that viable set by its limit (next state: ``v⁺² ≤ 2ā(q̄ − q⁺)`` for both integrators),
    and leaves it without the limit (the posture pulls it further out)."""
    robot = robots.load("tello")
    cm = robot.model
    braking, dt, gap = 10.0, 1e-3, 0.05
    limit = wbc.JointPositionLimit(["left_shin_joint"], braking=braking)
    limit.check(cm)
    k = limit.indices[0]  # in the independent velocity
    j = cm.independent_q_indices.tolist().index(limit.q_indices[0])  # in the independent configuration
    q_bar = limit.effective_limits[1][0]
    q = cm.independent_configuration(robot.q0)
    q[j] = q_bar - gap
    y = cm.spanning_configuration(q, guess=robot.q0)
    q[j] = q_bar + 0.5
    y_target = cm.spanning_configuration(q, guess=robot.q0)
    v = np.zeros(cm.nv)
    v[k] = 0.99 * np.sqrt(2 * braking * gap)
    for limits, kept in (([wbc.TorqueLimit()], False), ([wbc.TorqueLimit(), limit], True)):
        # no contact pose feedback: the moving knee moves its foot, whose damping would brake the knee too
        contacts = [
            wbc.SurfaceContact(f, robot.sole.length, robot.sole.width, mu=0.8, kp=0.0, kd=0.0) for f in robot.feet
        ]
        posture = tasks.PostureTask(cm, weight=1.0, kp=400.0)
        controller = wbc.WholeBodyController(cm, [posture], contacts, limits=limits, dt=dt)
        posture.set_target(y_target)
        cmd = controller.step(y, v)
        assert cmd.failure is None, cmd.status
        x = v[k] + dt * cmd.qdd[k]
        room = min(gap - dt * v[k] - theta * dt**2 * cmd.qdd[k] for theta in (0.5, 1.0))
        viable = bool(x <= 0 or x * x <= 2 * braking * room + 1e-9)
        assert viable is kept, (x, room)
