"""The model's layout equals Pinocchio's on the same URDF: sizes, joint order and index ranges,
frames, limits, masses and body inertias, for every catalog robot and random trees, floating and
fixed base."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.helpers import ROBOT_NAMES, TREE_CASES, assert_close, robot_case, tree_case, tree_urdf
from wbc.model.joints import motion_subspace

CASES = [("robot", name, fb) for name in ROBOT_NAMES for fb in (True, False)] + [
    ("tree", (seed, n), fb) for seed, n in TREE_CASES for fb in (True, False)
]


def _case(kind, what, fb):
    return robot_case(what, fb) if kind == "robot" else tree_case(*what, fb)


def _id(c):
    kind, what, fb = c
    name = what if kind == "robot" else f"tree{what[0]}_{what[1]}"
    return f"{name}-{'floating' if fb else 'fixed'}"


@pytest.fixture(params=CASES, ids=[_id(c) for c in CASES])
def case(request):
    return _case(*request.param)


def test_sizes_and_joint_order(case):
    """nq, nv, njoints and the joint names in order are Pinocchio's."""
    m, pm = case.model, case.pin_model
    assert (m.nq, m.nv, m.njoints) == (pm.nq, pm.nv, pm.njoints)
    assert list(m.joint_names) == list(pm.names)
    assert m.floating_base == (pm.joints[1].shortname() == "JointModelFreeFlyer")


def test_joint_index_ranges_and_parents(case):
    """Each joint's idx_q / idx_v / nq / nv and parent are Pinocchio's."""
    m, pm = case.model, case.pin_model
    for i in range(1, pm.njoints):
        j, pj = m.joints[i], pm.joints[i]
        assert (j.idx_q, j.idx_v, j.nq, j.nv) == (pj.idx_q, pj.idx_v, pj.nq, pj.nv), j.name
        assert j.parent == pm.parents[i], j.name


def test_joint_types_and_motion_subspaces(case):
    """Joint types map to Pinocchio's (continuous joints are unbounded revolute joints) and each joint's
    motion subspace S (its axis) is Pinocchio's."""
    m, pm = case.model, case.pin_model
    q = pin.neutral(pm)
    for i in range(1, pm.njoints):
        j, short = m.joints[i], pm.joints[i].shortname()
        prefix = {
            wbc.JointType.FREE_FLYER: ("JointModelFreeFlyer",),
            wbc.JointType.REVOLUTE: ("JointModelRX", "JointModelRY", "JointModelRZ", "JointModelRevoluteUnaligned"),
            wbc.JointType.REVOLUTE_UNBOUNDED: ("JointModelRUB", "JointModelRevoluteUnbounded"),
            wbc.JointType.PRISMATIC: ("JointModelPX", "JointModelPY", "JointModelPZ", "JointModelPrismaticUnaligned"),
        }[j.type]
        assert short in prefix or (j.type is wbc.JointType.REVOLUTE_UNBOUNDED and short.startswith(prefix)), (
            j.name,
            short,
        )
        jd = pm.joints[i].createData()
        pm.joints[i].calc(jd, q)
        assert_close(motion_subspace(j), np.asarray(jd.S).reshape(6, j.nv), what=f"S of {j.name}")


def test_joint_placements(case):
    """Joint placements in their parents are Pinocchio's ``jointPlacements``."""
    m, pm = case.model, case.pin_model
    for i in range(1, pm.njoints):
        P = m.joints[i].placement
        assert_close(np.asarray(P.R, float), pm.jointPlacements[i].rotation, what=f"{m.joints[i].name} R")
        assert_close(np.asarray(P.p, float).reshape(3), pm.jointPlacements[i].translation, what=f"{m.joints[i].name} p")


def test_frames_in_order(case):
    """Frames (names, carrying joint, placement) are Pinocchio's, in order; OP frames are the catalog's
    additions only, appended after the URDF frames."""
    m, pm = case.model, case.pin_model
    urdf_frames = [f for f in m.frames if f.kind is not wbc.FrameKind.OP]
    extra = [f.name for f in m.frames if f.kind is wbc.FrameKind.OP]
    assert m.frames[: len(urdf_frames)] == tuple(urdf_frames)
    expected_extra = [name for name, _, _ in case.spec.extra_frames] if case.spec else []
    assert extra == expected_extra
    assert [f.name for f in urdf_frames] == [f.name for f in pm.frames][: len(urdf_frames)]
    assert len(pm.frames) == len(m.frames)  # the test's Pinocchio model has the OP frames added too
    for f, pf in zip(m.frames, pm.frames):
        assert f.name == pf.name
        assert f.joint == pf.parentJoint, f.name
        assert_close(np.asarray(f.placement.R, float), pf.placement.rotation, what=f"frame {f.name} R")
        assert_close(np.asarray(f.placement.p, float).reshape(3), pf.placement.translation, what=f"frame {f.name} p")


def test_frame_kinds(case):
    """Frame kinds are Pinocchio's frame types (JOINT, FIXED_JOINT, BODY, OP_FRAME)."""
    kinds = {
        pin.FrameType.JOINT: wbc.FrameKind.JOINT,
        pin.FrameType.FIXED_JOINT: wbc.FrameKind.FIXED_JOINT,
        pin.FrameType.BODY: wbc.FrameKind.BODY,
        pin.FrameType.OP_FRAME: wbc.FrameKind.OP,
    }
    for f, pf in zip(case.model.frames, case.pin_model.frames):
        assert f.kind is kinds[pf.type], f.name


def test_limits(case):
    """Effort, velocity and position limits are Pinocchio's (continuous joints: effort and velocity)."""
    m, pm = case.model, case.pin_model
    effort, velocity = oracle.limit(pm.effortLimit), oracle.limit(pm.velocityLimit)
    lower, upper = oracle.limit(pm.lowerPositionLimit), oracle.limit(pm.upperPositionLimit)
    for j in m.joints[1:]:
        if j.type is wbc.JointType.FREE_FLYER:
            continue
        sv, sq = slice(j.idx_v, j.idx_v + j.nv), slice(j.idx_q, j.idx_q + j.nq)
        np.testing.assert_array_equal(j.effort, effort[sv], err_msg=j.name)
        np.testing.assert_array_equal(j.velocity, velocity[sv], err_msg=j.name)
        if j.type is not wbc.JointType.REVOLUTE_UNBOUNDED:
            np.testing.assert_array_equal(j.lower, lower[sq], err_msg=j.name)
            np.testing.assert_array_equal(j.upper, upper[sq], err_msg=j.name)
    # the actuated-effort vector is those of the actuated degrees of freedom, in order
    np.testing.assert_array_equal(m.effort_limit, effort[m.actuated_v_indices])
    if m.floating_base:
        np.testing.assert_array_equal(m.velocity_limit[6:], velocity[6:])
    else:
        np.testing.assert_array_equal(m.velocity_limit, velocity)


def test_actuation_default(case):
    """By default every joint but the free-flyer is actuated; Sᵀ selects those velocities."""
    m = case.model
    expected = [i for i in range(1, m.njoints) if m.joints[i].type is not wbc.JointType.FREE_FLYER]
    assert list(m.actuated) == expected
    S = m.actuation_matrix()
    assert S.shape == (m.nv, m.nv - (6 if m.floating_base else 0))
    np.testing.assert_array_equal(S.sum(axis=0), 1.0)
    if m.floating_base:
        np.testing.assert_array_equal(S[:6], 0.0)


def test_total_mass(case):
    """The total mass of the moving bodies is Pinocchio's ``computeTotalMass``."""
    assert_close(case.model.total_mass, pin.computeTotalMass(case.pin_model), what="total mass")


def test_body_inertias(case):
    """Each joint's body inertia (links welded by fixed joints merged) is Pinocchio's, the universe too."""
    m, pm = case.model, case.pin_model
    for i in range(pm.njoints):
        assert_close(m.inertias[i], pm.inertias[i].matrix(), what=f"inertia of joint {m.joints[i].name}")


def test_model_is_immutable(case):
    """The model's arrays are read-only and its fields cannot be reassigned."""
    m = case.model
    with pytest.raises(ValueError):
        m.inertias[1][0, 0] = 1.0
    with pytest.raises(ValueError):
        m.gravity[2] = 0.0
    with pytest.raises(AttributeError):
        m.name = "other"  # type: ignore[misc]


def test_string_and_file_loading_agree(tmp_path):
    """A URDF loaded from a path and from its text gives the same model."""
    text = tree_urdf(7, 8)
    path = tmp_path / "tree.urdf"
    path.write_text(text)
    for fb in (True, False):
        a, b = wbc.load_urdf(text, fb), wbc.load_urdf(path, fb)
        assert a.joint_names == b.joint_names and a.frame_names == b.frame_names
        for Ia, Ib in zip(a.inertias, b.inertias):
            np.testing.assert_array_equal(Ia, Ib)
        assert b.source == str(path) and a.source == "<string>"
        b2 = wbc.load_urdf(str(path), fb)
        assert b2.joint_names == b.joint_names


def test_catalog_default_postures_are_valid():
    """Each catalog posture is a valid configuration; floating robots stand with the lowest sole at z = 0
    (point feet: the lowest foot sphere touches z = 0, its centre at z = radius)."""
    for name in ROBOT_NAMES:
        case = robot_case(name)
        m, spec = case.model, case.spec
        q0 = wbc.checks.configuration(m, spec.q0)
        assert np.all(q0 >= m.lower_position_limit - 1e-12) and np.all(q0 <= m.upper_position_limit + 1e-12), name
        for f in spec.feet + spec.hands + spec.fingertips:
            assert m.has_frame(f), (name, f)
        if m.floating_base:
            z = [wbc.eager.frame_placement(m, q0, f)[2, 3] for f in spec.feet]
            assert abs(min(z) - (spec.foot_radius or 0.0)) <= 1e-12, (name, z)
