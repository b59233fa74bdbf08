"""Ball joints in the controller: the posture task's error on SO(3) and the cone limit.

Oracles: Pinocchio integrates the closed loop (``pin.aba`` on the ``JointModelSpherical`` twin,
semi-implicit Euler through ``pin.integrate``), so the controller's own model is not the plant;
finite differences check the cone's rate and acceleration formulas.
"""

from __future__ import annotations

import casadi as ca
import numpy as np
import pinocchio as pin
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.helpers import BALL_CLUSTER_CASES, assert_close, ball_cluster_model
from wbc import tasks
from wbc.control.limits import ball_cone
from wbc.robots import synthetic
from wbc.spatial import exp3, log3, quaternion_to_rotation, rotation_to_quaternion

DT = 1e-3
BALL = wbc.JointType.SPHERICAL


def _arm(max_angle: float = np.inf) -> wbc.Model:
    """A fixed-base 4-link chain whose first and third joints are ball joints (``max_angle`` cones)."""
    return synthetic.with_ball_joints(synthetic.chain(4), ["joint1", "joint3"], max_angle=max_angle)


def _angle(q: np.ndarray, joint: wbc.Joint) -> float:
    return float(np.linalg.norm(log3(quaternion_to_rotation(q[joint.idx_q : joint.idx_q + 4]))))


def _run(model, ctrl, q, v, steps: int, watch=None):
    """Closed loop on Pinocchio's twin: τ from the controller, ``pin.aba``, semi-implicit Euler."""
    pm = oracle.from_wbc(model)
    pd = pm.createData()
    S = model.actuation_matrix()
    for _ in range(steps):
        cmd = ctrl.step(q, v)
        assert cmd.failure is None, cmd.failure
        a = pin.aba(pm, pd, q, v, S @ cmd.tau)
        assert_close(cmd.qdd, a, tol=1e-8, what="the controller's q̈ vs Pinocchio's ABA")
        v = v + DT * a
        q = pin.integrate(pm, q, DT * v)
        if watch is not None:
            watch(q, v, cmd)
    return q, v


# ----------------------------------------------------------------------------- the cone's formulas
def test_cone_rate_and_acceleration_vs_finite_differences():
    """Along ``R(t) = R₀ exp(t ω₀ + ½ t² α)`` (body velocity ω₀ and acceleration α at t = 0) the angle
    θ(t) = |log₃ R(t)| has θ̇ = nᵀω₀ and θ̈ = nᵀα + ½cot(θ/2)|ω₀⊥|² (central differences, O(h²))."""
    rng = np.random.default_rng(90)
    qs, ws = ca.SX.sym("q", 4), ca.SX.sym("w", 3)
    rate = ca.Function("rate", [qs, ws], list(ball_cone.cone_rate(qs, ws)))
    h = 1e-4
    for _ in range(20):
        axis = rng.normal(size=3)
        R0 = exp3(axis / np.linalg.norm(axis) * rng.uniform(0.4, 2.8))
        w0, alpha = rng.normal(size=3), rng.normal(size=3)

        def theta(t, R0=R0, w0=w0, alpha=alpha):
            return float(np.linalg.norm(log3(R0 @ exp3(t * w0 + 0.5 * t * t * alpha))))

        th, th_dot = (float(x) for x in rate(rotation_to_quaternion(R0), w0))
        assert abs(th - theta(0.0)) < 1e-12
        assert abs(th_dot - (theta(h / 10) - theta(-h / 10)) / (h / 5)) < 1e-7
        n = np.asarray(log3(R0)) / th
        perp = w0 - n * (n @ w0)
        predicted = n @ alpha + 0.5 / np.tan(th / 2) * (perp @ perp)
        assert abs(predicted - (theta(h) - 2 * theta(0.0) + theta(-h)) / h**2) < 1e-5


# ----------------------------------------------------------------------------- posture on SO(3)
def test_posture_error_is_the_so3_difference_and_converges():
    """The posture task's error is ``wbc.difference(q, q_ref)`` on every row, ball joints included
    (their rotation vector ``log₃(Rᵀ R_ref)``, exact at large angles), and the closed loop reaches a
    target 2.5 rad away on each ball joint."""
    model = _arm()
    rng = np.random.default_rng(91)
    q0 = wbc.random_configuration(model, rng)
    target = q0.copy()
    for j in model.joints[1:]:
        if j.type is BALL:
            axis = rng.normal(size=3)
            target[j.idx_q : j.idx_q + 4] = rotation_to_quaternion(
                quaternion_to_rotation(q0[j.idx_q : j.idx_q + 4]) @ exp3(2.5 * axis / np.linalg.norm(axis))
            )
    posture = tasks.PostureTask(model, kp=40.0, kd=2 * np.sqrt(40.0))
    posture.set_target(target)
    ctrl = wbc.WholeBodyController(model, [posture], limits=[], dt=DT)
    act = model.actuated_v_indices
    cmd = ctrl.step(q0, np.zeros(model.nv))
    assert_close(cmd.task_errors["posture"], wbc.difference(model, q0, target)[act], tol=1e-12, what="error")
    assert max(np.linalg.norm(cmd.task_errors["posture"][k : k + 3]) for k in (0, 4)) > 2.49
    q, v = _run(model, ctrl, q0, np.zeros(model.nv), 2500)
    assert np.linalg.norm(wbc.difference(model, q, target)) < 1e-3
    assert np.linalg.norm(v) < 1e-2


# ----------------------------------------------------------------------------- the cone limit
def test_position_limit_selects_ball_joints_with_a_cone():
    """The default JointPositionLimit takes the ball joints whose cone limits something, next to the
    1-dof joints; a named ball joint without a cone is refused, naming it."""
    model = _arm(max_angle=0.8)
    limit = wbc.JointPositionLimit()
    limit.check(model)
    assert [j.name for j in limit.ball_joints] == ["joint1", "joint3"]
    assert [j.name for j in limit.joints] == ["joint2", "joint4"]
    np.testing.assert_allclose(limit.cone_limits, 0.8 - 0.01)
    free = _arm()
    limit = wbc.JointPositionLimit()
    limit.check(free)
    assert limit.ball_joints == ()
    with pytest.raises(wbc.InputError, match="ball joint 'joint1' has no cone limit"):
        wbc.JointPositionLimit(["joint1"]).check(free)
    with pytest.raises(wbc.InputError, match="only 1-dof joints have velocity limit"):
        wbc.JointVelocityLimit(["joint1"]).check(model)


@pytest.mark.parametrize("spin", [0.0, 2.0], ids=["radial", "circling"])
def test_cone_limit_holds_in_closed_loop(spin):
    """A posture target 1.4 rad away on ball joints whose cone is 0.8 rad, from rest inside the cone
    (and, ``circling``, spinning about the joint's tilt with 2 rad/s across the cone): the angle never
    passes the effective limit θ̄ = θ_max − m by more than ½āΔ² (as a revolute joint's bound), and the
    joints settle on θ̄ (without the limit they reach the target, 1.4 rad)."""
    model = _arm(max_angle=0.8)
    rng = np.random.default_rng(92)
    balls = [j for j in model.joints[1:] if j.type is BALL]
    q0, target, v0 = wbc.neutral(model), wbc.neutral(model), np.zeros(model.nv)
    for j in balls:
        axis = rng.normal(size=3)
        axis[2] = 0.0
        axis /= np.linalg.norm(axis)
        q0[j.idx_q : j.idx_q + 4] = rotation_to_quaternion(exp3(0.3 * axis))
        target[j.idx_q : j.idx_q + 4] = rotation_to_quaternion(exp3(1.4 * axis))
        v0[j.idx_v : j.idx_v + 3] = spin * np.cross(axis, [0.0, 0.0, 1.0])
    posture = tasks.PostureTask(model, kp=60.0, kd=2 * np.sqrt(60.0))
    posture.set_target(target)
    limit = wbc.JointPositionLimit()
    ctrl = wbc.WholeBodyController(model, [posture], limits=[limit, wbc.TorqueLimit()], dt=DT)
    peak = {j.name: 0.0 for j in balls}

    def watch(q, v, cmd):
        for j in balls:
            peak[j.name] = max(peak[j.name], _angle(q, j))

    q, _ = _run(model, ctrl, q0, v0, 1500, watch)
    theta_bar = limit.cone_limits
    for k, j in enumerate(balls):
        assert peak[j.name] <= theta_bar[k] + 0.5 * 10.0 * DT**2, f"{j.name} reached {peak[j.name]:.6f} rad"
        assert abs(_angle(q, j) - theta_bar[k]) < 1e-4, f"{j.name} settles at {_angle(q, j):.6f}"


def test_inside_moves_ball_targets_into_the_cone():
    """JointPositionLimit.inside (and the controller's within_limits) shrinks a ball joint's target
    rotation onto θ̄ − inset about the same axis; targets already inside are kept."""
    model = _arm(max_angle=0.8)
    limit = wbc.JointPositionLimit()
    ctrl = wbc.WholeBodyController(model, [], limits=[limit], dt=DT)
    q = wbc.neutral(model)
    j1, j3 = (j for j in model.joints[1:] if j.type is BALL)
    q[j1.idx_q : j1.idx_q + 4] = rotation_to_quaternion(exp3(np.array([1.5, 0.0, 0.0])))
    q[j3.idx_q : j3.idx_q + 4] = rotation_to_quaternion(exp3(np.array([0.0, 0.2, 0.0])))
    inside = ctrl.within_limits(q)
    assert abs(_angle(inside, j1) - (0.8 - 2 * 0.01)) < 1e-12
    axis = np.asarray(log3(quaternion_to_rotation(inside[j1.idx_q : j1.idx_q + 4])))
    assert_close(axis / np.linalg.norm(axis), [1.0, 0.0, 0.0], tol=1e-12, what="same axis")
    np.testing.assert_array_equal(inside[j3.idx_q : j3.idx_q + 4], q[j3.idx_q : j3.idx_q + 4])


def test_clustered_robot_with_ball_joints_in_the_controller():
    """A clustered robot (the G1's parallel ankles) with ball joints at the waist, hip and shoulder:
    the controller's inputs include each ball joint's three motor axes, its q̈ is C-ABA's for the
    motor efforts it commands (through ``motor_map``), and the posture error is the SO(3) difference."""
    from tests.cluster_cases import evaluate
    from wbc.codegen import cluster_functions as ck

    cm = ball_cluster_model("g1_parallel_ankle", BALL_CLUSTER_CASES["g1_parallel_ankle"])
    rng = np.random.default_rng(93)
    y = cm.random_configuration(rng, scale=0.3)
    target = cm.random_configuration(rng, scale=0.3)
    v = 0.1 * rng.normal(size=cm.nv)
    posture = tasks.PostureTask(cm, kp=30.0, kd=10.0)
    posture.set_target(target)
    ctrl = wbc.WholeBodyController(cm, [posture], limits=[], dt=DT)
    cmd = ctrl.step(y, v)
    assert cmd.tau.shape == (cm.n_motors,)
    (qdd,) = evaluate(ck.c_aba_function(cm), y, v, cm.motor_map(y) @ cmd.tau)
    assert_close(cmd.qdd, qdd, tol=1e-9, what="controller q̈ vs C-ABA")
    tree = cm.tree
    expected = wbc.difference(tree, y, target)[np.asarray(cm.independent_v_indices)][6:]
    assert_close(cmd.task_errors["posture"], expected, tol=1e-12, what="posture error")
