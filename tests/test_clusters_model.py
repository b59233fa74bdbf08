"""The clustered model: layout, loop-closure consistency (positions, velocities, accelerations to
1e-12), the transmission builders, and clear errors for bad declarations."""

from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.cluster_cases import FAST, SLOW, case, states
from wbc.model.clusters import ClosureKind, Cluster, ClusterModel, JointCoupling, LoopClosure
from wbc.robots import clustered as robots
from wbc.robots import synthetic


@pytest.mark.parametrize("name", [*FAST, *SLOW])
def test_loop_closure_consistency(name):
    """φ(q) closes every loop to 1e-12; K G = 0 (velocities) and K g = −K̇ẏ (accelerations),
    with K and K̇ẏ rebuilt from Pinocchio's kinematics of the same spanning tree."""
    c = case(name)
    cm = c.model
    for y, v, a, _ in states(cm):
        r = cm.loop_residual(y)
        assert np.max(np.abs(r), initial=0.0) <= 1e-12, f"{name}: residual {np.max(np.abs(r))}"
        yd = cm.spanning_velocity(y, v)
        K, drift = oracle.loop_constraints(c.pm, cm, y, yd)
        if not K.size:
            continue
        scale = max(1.0, np.abs(K).max())
        assert np.abs(K @ yd).max() <= 1e-12 * scale * max(1.0, np.abs(yd).max()), f"{name}: K ẏ"
        G = np.array(ca.DM(cm.G_matrix(ca.DM(y))))
        g = np.array(ca.DM(cm.g_vector(ca.DM(y), ca.DM(yd)))).ravel()
        ydd = G @ a + g
        err = np.abs(K @ ydd + drift).max()
        assert err <= 1e-12 * max(1.0, np.abs(K).max() * np.abs(ydd).max(), np.abs(drift).max()), f"{name}: K ÿ"


def test_independent_layout_and_round_trip():
    cm = case("mit_humanoid").model
    assert cm.nv == 24 and cm.tree.nv == 42 and cm.nq == 25
    y = cm.random_configuration(np.random.default_rng(1))
    q = cm.independent_configuration(y)
    assert np.allclose(cm.spanning_configuration(q), y, atol=1e-12)
    assert cm.joint_names[0] == "root_joint"
    S = cm.actuation_matrix()
    assert S.shape == (24, 18) and np.all(S[:6] == 0)


def test_gear_ratios_reach_the_rotors():
    cm = case("mini_cheetah").model
    y = cm.spanning_configuration(np.r_[0, 0, 0.3, 0, 0, 0, 1, np.linspace(-0.5, 0.5, 12)])
    for name, ratio in (("FR_knee_joint", 9.33), ("HL_abad_joint", 6.0)):
        j, r = cm.tree.joint_id(name), cm.tree.joint_id(f"{name}_rotor_joint")
        assert y[cm.tree.joints[r].idx_q] == pytest.approx(ratio * y[cm.tree.joints[j].idx_q], rel=1e-14)


def test_belt_ratios():
    """MIT Humanoid ankle rotor: N (b₁ q_knee + b₁ b₂ q_ankle) with N = 6, b = (2, 1)."""
    cm = case("mit_humanoid").model
    y = cm.random_configuration(np.random.default_rng(2))
    t = cm.tree
    qk = y[t.joints[t.joint_id("left_knee")].idx_q]
    qa = y[t.joints[t.joint_id("left_ankle")].idx_q]
    rotors = [t.joints[t.joint_id(f"left_{j}_rotor_joint")] for j in ("knee", "ankle")]
    assert [y[j.idx_q] for j in rotors] == pytest.approx([12 * qk, 12 * qk + 12 * qa], rel=1e-14)


def _tree(n=3):
    return synthetic.chain_urdf(n)


def test_errors_name_the_culprit():
    tree = wbc.load_urdf(_tree(), False)
    with pytest.raises(wbc.ModelError, match="no joint 'nope'"):
        ClusterModel(tree, (Cluster("c", ("nope",), (), ()),))
    with pytest.raises(wbc.ModelError, match="constraint rows are needed"):
        ClusterModel(tree, (Cluster("c", ("joint1", "joint2"), ("joint1",), ()),))
    with pytest.raises(wbc.ModelError, match="in clusters"):
        ClusterModel(
            tree,
            (
                Cluster("a", ("joint1", "joint2"), ("joint1",), (JointCoupling("joint2", (("joint1", 2.0),)),)),
                Cluster("b", ("joint2", "joint3"), ("joint3",), (JointCoupling("joint2", (("joint3", 2.0),)),)),
            ),
        )
    with pytest.raises(wbc.ModelError, match="not one of its joints"):
        ClusterModel(tree, (Cluster("c", ("joint1",), ("joint2",), ()),))
    with pytest.raises(wbc.ModelError, match="do not determine"):
        ClusterModel(
            tree, (Cluster("c", ("joint1", "joint2"), ("joint1",), (JointCoupling("joint1", (("joint2", 0.0),)),)),)
        )
    with pytest.raises(wbc.ModelError, match="not in the cluster"):
        ClusterModel(
            tree,
            (
                Cluster(
                    "c", ("joint2", "joint3"), ("joint2",), (LoopClosure("link0", "link3", ClosureKind.POINT, (0,)),)
                ),
            ),
        )
    ff = wbc.load_urdf(_tree(), True)
    with pytest.raises(wbc.ModelError, match="free_flyer"):
        ClusterModel(ff, (Cluster("c", ("root_joint", "joint1"), ("joint1",), ()),))


def test_transmission_builder_errors():
    T = wbc.Transmission
    with pytest.raises(wbc.ModelError, match=r"transmission 'joint1': ratios must be finite, got \[\[nan\]\]"):
        T.geared("joint1", float("nan"), 1e-4)
    with pytest.raises(wbc.ModelError, match=r"transmission 'joint1': rotor 0 has a zero ratio to every joint"):
        T.geared("joint1", 0.0, 1e-4)
    with pytest.raises(wbc.ModelError, match=r"transmission 'joint1': the ratio must be a number, got 'abc'"):
        T.geared("joint1", "abc", 1e-4)
    with pytest.raises(wbc.ModelError, match=r"transmission 'a_b': ratios must be finite"):
        T.differential(("a", "b"), float("inf"), [wbc.Rotor(1e-4), wbc.Rotor(1e-4)])
    with pytest.raises(wbc.ModelError, match="no joint 'missing'"):
        wbc.build_cluster_model(_tree(), [wbc.Transmission.geared("missing", 6.0, 1e-4)], False)
    with pytest.raises(wbc.ModelError, match="inertia"):
        wbc.build_cluster_model(_tree(), [wbc.Transmission.geared("joint1", 6.0, -1.0)], False)
    with pytest.raises(wbc.ModelError, match="unknown link"):
        rotor = wbc.Rotor(1e-4, parent="nowhere", placement=None)
        wbc.build_cluster_model(_tree(), [wbc.Transmission("t", ("joint1",), (rotor,), ("joint1",), np.eye(1))], False)
    with pytest.raises(wbc.ModelError, match="belt ratios"):
        wbc.Transmission.parallel_belt(("joint1", "joint2"), (6, 6), ((2,), (2,)), (wbc.Rotor(1e-4), wbc.Rotor(1e-4)))


def test_unreachable_configuration_is_an_input_error():
    cm = robots.g1_parallel_ankle(floating_base=False).model
    q = np.zeros(cm.nq)
    q[cm.joint_names.index("left_ankle_pitch_joint")] = 2.0  # beyond what the rods reach
    with pytest.raises(wbc.InputError, match="'left_ankle': the loop could not be closed"):
        cm.spanning_configuration(q)
    with pytest.raises(wbc.InputError, match=r"shape \(29,\)"):
        cm.spanning_configuration(np.zeros(2))
