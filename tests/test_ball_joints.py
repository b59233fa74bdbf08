"""Spherical (ball) joints: the joint model, its checks and its quaternion helpers.

The oracle tests of the algorithms on random trees with ball joints sit with the other oracle
tests (kinematics, dynamics, IIM, Delassus, configuration); here: the model's layout and checks,
``S = [0; I₃]``, the joint placement from its quaternion, bad input, and the SO(3) helpers against
Pinocchio.
"""

from __future__ import annotations

import dataclasses

import casadi as ca
import numpy as np
import pinocchio as pin
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.helpers import BALL_CLUSTER_CASES, BALL_TREE_CASES, assert_close, ball_cluster_model, ball_tree_case
from wbc.model.joints import joint_motion, joint_transform, motion_subspace
from wbc.robots import synthetic
from wbc.spatial import exp3_quaternion, quaternion_multiply, quaternion_to_rotation

BALL = wbc.JointType.SPHERICAL
_PIN_FRAME = {
    wbc.FrameKind.JOINT: pin.FrameType.JOINT,
    wbc.FrameKind.FIXED_JOINT: pin.FrameType.FIXED_JOINT,
    wbc.FrameKind.BODY: pin.FrameType.BODY,
    wbc.FrameKind.OP: pin.FrameType.OP_FRAME,
}


def _balls(model):
    return [j for j in model.joints[1:] if j.type is BALL]


def test_layout_matches_pinocchio():
    """nq = 4 and nv = 3 per ball joint; idx_q / idx_v as Pinocchio lays out the same tree."""
    assert (BALL.nq, BALL.nv) == (4, 3)
    for args in BALL_TREE_CASES:
        case = ball_tree_case(*args)
        m, pm = case.model, case.pin_model
        assert _balls(m), case.name
        assert (m.nq, m.nv) == (pm.nq, pm.nv)
        for i, j in enumerate(m.joints[1:], start=1):
            assert (j.idx_q, j.idx_v, j.nq, j.nv) == (pm.idx_qs[i], pm.idx_vs[i], pm.nqs[i], pm.nvs[i]), j.name
            if j.type is BALL:
                assert pm.joints[i].shortname() == "JointModelSpherical"


def test_motion_subspace_and_placement():
    """S = [0; I₃] in [linear; angular] order; the joint's placement in its parent from its
    quaternion is Pinocchio's ``liMi`` (numerically and traced)."""
    case = ball_tree_case(*BALL_TREE_CASES[0])
    m, pm = case.model, case.pin_model
    pd = pm.createData()
    i = ball_index(m, _balls(m)[0])
    j = m.joints[i]
    np.testing.assert_array_equal(motion_subspace(j), np.vstack([np.zeros((3, 3)), np.eye(3)]))
    qs = ca.SX.sym("q", 4)
    X = joint_transform(j, qs)
    traced = ca.Function("ball", [qs], [X.R, X.p])
    rng = np.random.default_rng(80)
    for _ in range(10):
        q = wbc.random_configuration(m, rng)
        quat = q[j.idx_q : j.idx_q + 4]
        pin.forwardKinematics(pm, pd, q)
        R, p = traced(quat)
        assert_close(np.array(R), pd.liMi[i].rotation, tol=1e-14, what="R")
        assert_close(np.array(p).ravel(), pd.liMi[i].translation, tol=1e-14, what="p")
        assert_close(np.array(ca.DM(joint_motion(j, ca.DM(quat)).R)), quaternion_to_rotation(quat), tol=1e-15)
        assert_close(np.asarray(pd.joints[i].S), motion_subspace(j), tol=0.0, what="S")


def test_quaternion_helpers_vs_pinocchio():
    """quaternion_multiply and exp3_quaternion equal Eigen's product and Pinocchio's
    ``quaternion.exp3`` (small angles, beyond π, numpy and CasADi)."""
    rng = np.random.default_rng(81)
    w = ca.SX.sym("w", 3)
    a, b = ca.SX.sym("a", 4), ca.SX.sym("b", 4)
    exp_f = ca.Function("e", [w], [exp3_quaternion(w)])
    mul_f = ca.Function("m", [a, b], [quaternion_multiply(a, b)])
    for k in range(30):
        v = rng.normal(size=3) * [1e-7, 1e-3, 1.0, 5.0][k % 4]
        expected = pin.exp3_quat(v)  # (x, y, z, w)
        assert_close(exp3_quaternion(v), expected, tol=1e-15, what="exp3_quaternion")
        assert_close(np.array(exp_f(v)).ravel(), expected, tol=1e-15, what="exp3_quaternion traced")
        qa, qb = rng.normal(size=4), rng.normal(size=4)
        expected = (pin.Quaternion(qa) * pin.Quaternion(qb)).coeffs()
        assert_close(quaternion_multiply(qa, qb), expected, tol=1e-15, what="product")
        assert_close(np.array(mul_f(qa, qb)).ravel(), expected, tol=1e-15, what="product traced")
        qa, qb = qa / np.linalg.norm(qa), qb / np.linalg.norm(qb)
        assert_close(
            quaternion_to_rotation(quaternion_multiply(qa, qb)),
            quaternion_to_rotation(qa) @ quaternion_to_rotation(qb),
            tol=1e-15,
            what="R(a ⊗ b) = R(a) R(b)",
        )


@pytest.mark.parametrize("factor", [0.5, 1.0 + 10 * wbc.checks.UNIT_TOLERANCE, 0.0])
@pytest.mark.parametrize(
    "call",
    [
        lambda m, q: wbc.eager.crba(m, q),
        lambda m, q: wbc.eager.frame_placement(m, q, m.frames[-1].name),
        lambda m, q: wbc.integrate(m, q, np.zeros(m.nv)),
        lambda m, q: wbc.difference(m, q, wbc.neutral(m)),
    ],
    ids=["crba", "frame_placement", "integrate", "difference"],
)
def test_non_unit_ball_quaternion_is_rejected(call, factor):
    """A ball joint's quaternion off unit norm is an InputError naming the joint, its slice and norm."""
    m = ball_tree_case(*BALL_TREE_CASES[1]).model
    j = _balls(m)[-1]
    q = wbc.random_configuration(m, np.random.default_rng(82))
    q[j.idx_q : j.idx_q + 4] *= factor
    with pytest.raises(wbc.InputError, match=rf"quaternion of joint '{j.name}' \(q\[{j.idx_q}:{j.idx_q + 4}\]\)"):
        call(m, q)


def test_max_angle_is_checked():
    """Only ball joints carry a cone limit, and it is a positive angle."""
    m = ball_tree_case(*BALL_TREE_CASES[0]).model
    ball = _balls(m)[0]
    other = next(j for j in m.joints[1:] if j.type is not BALL)

    def replaced(joint, **changes):
        joints = tuple(dataclasses.replace(j, **changes) if j is joint else j for j in m.joints)
        return dataclasses.replace(m, joints=joints)

    assert replaced(ball, max_angle=0.5).joints[ball_index(m, ball)].max_angle == 0.5
    with pytest.raises(wbc.ModelError, match=f"ball joint '{ball.name}' has max_angle"):
        replaced(ball, max_angle=0.0)
    with pytest.raises(wbc.ModelError, match=f"joint '{other.name}' is .*only ball joints have a max_angle"):
        replaced(other, max_angle=1.0)


def ball_index(m, joint):
    return m.joint_names.index(joint.name)


def test_lock_ball_joint_vs_pinocchio():
    """Locking a ball joint at a quaternion (lock_joints) gives Pinocchio's ``buildReducedModel``:
    same frame placements and mass matrix at random states."""
    case = ball_tree_case(*BALL_TREE_CASES[1])
    m, pm = case.model, case.pin_model
    rng = np.random.default_rng(83)
    q_full = wbc.random_configuration(m, rng)
    ball = _balls(m)[0]
    reduced = wbc.lock_joints(m, {ball.name: q_full[ball.idx_q : ball.idx_q + 4]})
    pr = pin.buildReducedModel(pm, [pm.getJointId(ball.name)], q_full)
    assert (reduced.nq, reduced.nv) == (pr.nq, pr.nv)
    pd = pr.createData()
    for _ in range(3):
        q = wbc.random_configuration(reduced, rng)
        pin.framesForwardKinematics(pr, pd, q)
        for f in reduced.frames[1:]:
            T = wbc.eager.frame_placement(reduced, q, f.name)
            assert_close(T, pd.oMf[pr.getFrameId(f.name, _PIN_FRAME[f.kind])].homogeneous, what=f"placement {f.name}")
        assert_close(
            wbc.eager.crba(reduced, q), np.triu(pin.crba(pr, pd, q)) + np.triu(pin.crba(pr, pd, q), 1).T, what="M"
        )
    with pytest.raises(wbc.InputError, match="quaternion has norm"):
        wbc.lock_joints(m, {ball.name: [0.0, 0.0, 0.0, 2.0]})


def test_with_ball_joints_refuses_what_cannot_be_a_ball():
    """The synthetic builder names what it cannot turn into a ball joint."""
    base = synthetic.random_tree(4, np.random.default_rng(1), floating_base=True)
    with pytest.raises(ValueError, match="no joints"):
        synthetic.with_ball_joints(base, ["nope"])
    with pytest.raises(ValueError, match="only one-axis joints"):
        synthetic.with_ball_joints(base, ["root_joint"])


# ------------------------------------------------------------------ clustered models with ball joints
@pytest.mark.parametrize("name", sorted(BALL_CLUSTER_CASES))
def test_cluster_algorithms_with_ball_joints_vs_pinocchio(name):
    """C-RNEA, C-ABA (through Pinocchio's KKT system), C-EFPA and the clustered IIM (through the
    top-left block of the KKT inverse) on clustered robots with ball joints, to 1e-9; the motor
    inputs of an actuated ball joint are its three axes."""
    from tests.cluster_cases import evaluate, span_tau
    from wbc.codegen import cluster_functions as ck

    cm = ball_cluster_model(name, BALL_CLUSTER_CASES[name])
    pm = oracle.cluster_model(cm)
    rng = np.random.default_rng(84)
    balls = [j for j in cm.tree.joints if j.type is BALL]
    actuated = [j for j in balls if cm.tree.joint_id(j.name) in cm.tree.actuated]
    assert len(actuated) == len(BALL_CLUSTER_CASES[name])  # every ball joint is actuated
    assert cm.n_motors == len(cm.motor_joints) + 2 * len(actuated)
    for j in actuated:
        assert {f"{j.name}[{k}]" for k in range(3)} <= set(cm.motor_names)
    frames = [f.name for f in cm.tree.frames if f.joint > 0][:: max(1, len(cm.tree.frames) // 4)]
    constraints = [wbc.PointConstraint(f, (0.01, 0.02, -0.03)) for f in frames]
    rnea, aba = ck.c_rnea_function(cm), ck.c_aba_function(cm)
    efpa, iim = ck.c_efpa_function(cm, constraints), ck.c_iim_function(cm, constraints)
    ind = np.asarray(cm.independent_v_indices)
    S = cm.actuation_matrix()
    for i in range(5):
        y = cm.random_configuration(rng, scale=0.5)
        v, a, tau = rng.normal(size=(3, cm.nv))
        yd = cm.spanning_velocity(y, v)
        where = f"{cm.name} state {i}"
        (tau_w,) = evaluate(rnea, y, v, a)
        assert_close(tau_w, oracle.kkt_inverse_dynamics(pm, cm, y, yd, a), what=f"{where} C-RNEA")
        (qdd,) = evaluate(aba, y, v, tau)
        ydd = oracle.kkt_forward_dynamics(pm, cm, y, yd, span_tau(cm, tau))
        assert_close(qdd, ydd[ind], what=f"{where} C-ABA")
        H, _, K, _ = oracle.kkt(pm, cm, y, np.zeros(pm.nv))
        P = oracle.kkt_inverse(H, K) if K.size else np.linalg.inv(H)
        J = oracle.constraint_jacobian(pm, y, constraints)
        (L,) = evaluate(efpa, y)
        assert_close(L, J @ P @ J.T, what=f"{where} C-EFPA")
        (B,) = evaluate(iim, y)
        assert_close(B, np.hstack([P[np.ix_(ind, ind)] @ S, P[ind] @ J.T]), what=f"{where} clustered IIM")
        A = cm.motor_map(y)
        assert A.shape == (cm.nv, cm.n_motors)
        for j in actuated:  # an actuated ball joint's three inputs are its three generalized forces
            cols = [cm.motor_names.index(f"{j.name}[{k}]") for k in range(3)]
            rows = [int(np.flatnonzero(ind == j.idx_v + k)[0]) for k in range(3)]
            expected = np.zeros((cm.nv, 3))
            expected[rows, [0, 1, 2]] = 1.0
            np.testing.assert_array_equal(A[:, cols], expected)
