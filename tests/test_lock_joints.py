"""``wbc.lock_joints`` against Pinocchio's ``buildReducedModel`` (issue 15, item 2).

For catalog robots (Talos without its grippers, G1 without its hands, Panda, Romeo without its
fingers) and random trees with every joint kind (locking revolute, continuous, prismatic joints,
chains of locked joints, and the free-flyer itself): the same joints, q/v layout, frames (names,
kinds, parent joints, placements), body inertias and actuation as Pinocchio's reduced model, and the
same dynamics at random states. Independently of Pinocchio: the reduced model's kinematics equal
the full model's at the locked positions.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.helpers import TREE_CASES, assert_close, robot_case, tree_case
from wbc import robots

PIN_KIND = {
    wbc.FrameKind.JOINT: pin.FrameType.JOINT,
    wbc.FrameKind.FIXED_JOINT: pin.FrameType.FIXED_JOINT,
    wbc.FrameKind.BODY: pin.FrameType.BODY,
    wbc.FrameKind.OP: pin.FrameType.OP_FRAME,
}


def _locked_values(model: wbc.Model, names, q: np.ndarray) -> dict[str, np.ndarray]:
    joints = [model.joints[model.joint_id(n)] for n in names]
    return {j.name: q[j.idx_q : j.idx_q + j.nq] for j in joints}


def _reduced_pair(model: wbc.Model, pm: pin.Model, names, rng: np.random.Generator):
    q = wbc.random_configuration(model, rng)
    reduced = wbc.lock_joints(model, _locked_values(model, names, q))
    pr = pin.buildReducedModel(pm, [pm.getJointId(n) for n in names], q)
    return reduced, pr, q


def _assert_same_model(reduced: wbc.Model, pr: pin.Model) -> None:
    assert reduced.joint_names == tuple(pr.names)
    assert reduced.parents[1:] == tuple(pr.parents)[1:]
    assert (reduced.nq, reduced.nv) == (pr.nq, pr.nv)
    assert [j.idx_q for j in reduced.joints[1:]] == list(pr.idx_qs)[1:]
    for i in range(1, reduced.njoints):
        X = reduced.joints[i].placement
        assert_close(np.asarray(X.R), pr.jointPlacements[i].rotation, what=f"joint {i} R")
        assert_close(np.asarray(X.p).ravel(), pr.jointPlacements[i].translation, what=f"joint {i} p")
    for i, I in enumerate(reduced.inertias):
        assert_close(I, pr.inertias[i].matrix(), what=f"inertia {reduced.joints[i].name}")
    assert len(reduced.frames) == len(pr.frames)
    for f, pf in zip(reduced.frames, pr.frames):
        assert (f.name, PIN_KIND[f.kind], f.joint) == (pf.name, pf.type, pf.parentJoint), f.name
        assert_close(np.asarray(f.placement.R), pf.placement.rotation, what=f"frame {f.name} R")
        assert_close(np.asarray(f.placement.p).ravel(), pf.placement.translation, what=f"frame {f.name} p")


def _assert_same_dynamics(reduced: wbc.Model, pr: pin.Model, rng: np.random.Generator) -> None:
    pd = pr.createData()
    q = wbc.random_configuration(reduced, rng)
    v, tau = rng.normal(size=reduced.nv), rng.normal(size=reduced.nv)
    assert_close(wbc.eager.crba(reduced, q), oracle.symmetrized(pin.crba(pr, pd, q)), what="M")
    assert_close(wbc.eager.aba(reduced, q, v, tau), pin.aba(pr, pd, q, v, tau), what="aba")
    pin.forwardKinematics(pr, pd, q)
    pin.updateFramePlacements(pr, pd)
    for k in range(0, len(reduced.frames), 3):
        assert_close(wbc.eager.frame_placement(reduced, q, reduced.frames[k].name), pd.oMf[k].homogeneous, what="oMf")


CATALOG_LOCKS = {
    "talos": lambda m: [n for n in m.joint_names if n.startswith("gripper_")] + ["torso_1_joint", "arm_left_4_joint"],
    "g1_with_hands": lambda m: [n for n in m.joint_names if "_hand_" in n],
    "panda": lambda m: ["panda_joint4", "panda_finger_joint1", "panda_finger_joint2"],
    "allegro": lambda m: ["joint_0.0", "joint_1.0", "joint_2.0", "joint_3.0", "joint_12.0"],
}


@pytest.mark.parametrize("name", list(CATALOG_LOCKS))
def test_catalog_robots_match_pinocchio_reduced_model(name):
    case = robot_case(name)
    names = CATALOG_LOCKS[name](case.model)
    assert names
    rng = np.random.default_rng(11)
    reduced, pr, _ = _reduced_pair(case.model, case.pin_model, names, rng)
    assert reduced.nv == case.model.nv - len(names)
    _assert_same_model(reduced, pr)
    _assert_same_dynamics(reduced, pr, rng)
    kept = [n for n in case.model.actuated_joint_names if n not in names]
    assert reduced.actuated_joint_names == tuple(kept)
    welded_too = [sum(I[0, 0] for I in m.inertias) for m in (reduced, case.model)]  # the universe's included
    assert welded_too[0] == pytest.approx(welded_too[1], rel=1e-12)


@pytest.mark.parametrize(("seed", "n"), TREE_CASES)
@pytest.mark.parametrize("floating_base", [False, True], ids=["fixed", "floating"])
def test_random_trees_match_pinocchio_reduced_model(seed, n, floating_base):
    """Random subsets of every joint kind, consecutive locked joints included; on floating trees the
    free-flyer is locked too in one of the draws (the model becomes fixed-base)."""
    case = tree_case(seed, n, floating_base)
    model, pm = case.model, case.pin_model
    rng = np.random.default_rng(seed + 100)
    movable = list(model.joint_names[1:])
    for draw in range(3):
        names = [str(x) for x in rng.choice(movable, size=max(1, len(movable) // 2), replace=False)]
        if floating_base and draw == 2 and "root_joint" not in names:
            names.append("root_joint")
        reduced, pr, _ = _reduced_pair(model, pm, names, rng)
        _assert_same_model(reduced, pr)
        _assert_same_dynamics(reduced, pr, rng)


def test_the_random_trees_lock_every_joint_kind():
    kinds = {j.type for seed, n in TREE_CASES for j in tree_case(seed, n, True).model.joints[1:]}
    assert kinds == {
        wbc.JointType.FREE_FLYER,
        wbc.JointType.REVOLUTE,
        wbc.JointType.REVOLUTE_UNBOUNDED,
        wbc.JointType.PRISMATIC,
    }


def test_reduced_kinematics_equal_the_full_model_at_the_locked_positions():
    """Without Pinocchio: every frame of Talos with both arms locked is where the full model puts it,
    the centre of mass and total mass are the same, and the reduced M is the full M's kept block."""
    case = robot_case("talos")
    model = case.model
    rng = np.random.default_rng(4)
    q = wbc.random_configuration(model, rng)
    names = [n for n in model.joint_names if n.startswith(("arm_", "gripper_"))]
    reduced = wbc.lock_joints(model, _locked_values(model, names, q))
    keep = [j for j in model.joints[1:] if j.name not in names]
    q_red = np.concatenate([q[j.idx_q : j.idx_q + j.nq] for j in keep])
    for f in model.frames:
        assert_close(
            wbc.eager.frame_placement(reduced, q_red, f.name),
            wbc.eager.frame_placement(model, q, f.name),
            1e-12,
            f.name,
        )
    assert_close(wbc.eager.center_of_mass(reduced, q_red), wbc.eager.center_of_mass(model, q), 1e-12, "com")
    assert reduced.total_mass == pytest.approx(model.total_mass, rel=1e-12)
    v_idx = np.concatenate([np.arange(j.idx_v, j.idx_v + j.nv) for j in keep])
    assert_close(wbc.eager.crba(reduced, q_red), wbc.eager.crba(model, q)[np.ix_(v_idx, v_idx)], 1e-12, "M block")


def test_continuous_joint_accepts_an_angle_or_a_unit_pair():
    model = tree_case(2, 12, False).model
    name = next(j.name for j in model.joints if j.type is wbc.JointType.REVOLUTE_UNBOUNDED)
    a = wbc.lock_joints(model, {name: 0.7})
    b = wbc.lock_joints(model, {name: [np.cos(0.7), np.sin(0.7)]})
    for x, y in zip(a.inertias, b.inertias):
        np.testing.assert_allclose(x, y, atol=1e-15)


def test_bad_requests_are_clear_errors():
    model = robot_case("panda").model
    with pytest.raises(wbc.ModelError, match=r"no joint 'panda_joint9'.*'panda_joint"):
        wbc.lock_joints(model, {"panda_joint9": 0.0})
    with pytest.raises(wbc.ModelError, match="universe"):
        wbc.lock_joints(model, {"universe": 0.0})
    with pytest.raises(wbc.InputError, match=r"'panda_joint1'.*shape \(1,\)"):
        wbc.lock_joints(model, {"panda_joint1": [0.0, 1.0]})
    with pytest.raises(wbc.InputError, match=r"'panda_joint1'.*non-finite"):
        wbc.lock_joints(model, {"panda_joint1": np.nan})
    with pytest.raises(wbc.InputError, match="mapping"):
        wbc.lock_joints(model, ["panda_joint1"])
    talos = robot_case("talos").model
    with pytest.raises(wbc.InputError, match=r"'root_joint'.*quaternion.*norm"):
        wbc.lock_joints(talos, {"root_joint": [0, 0, 1, 0, 0, 0, 2.0]})
    assert wbc.lock_joints(model, {}).joint_names == model.joint_names


def test_the_input_model_is_not_modified():
    model = robots.load("panda").model
    before = (model.joint_names, model.frame_names, [np.array(I) for I in model.inertias])
    wbc.lock_joints(model, {"panda_joint2": 0.5})
    assert (model.joint_names, model.frame_names) == before[:2]
    for I, J in zip(model.inertias, before[2]):
        np.testing.assert_array_equal(I, J)
