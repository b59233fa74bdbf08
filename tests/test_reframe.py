"""The equivalent model with cheaper joint frames (wbc.model.reframe) and the traced transforms it
feeds: RNEA, CRBA and ABA on it equal Pinocchio's on random trees whose placements are rotated as
real robots' are (about the joint's own axis, about the parent's axis then the own one, arbitrary),
with aligned and arbitrary axes; every frame keeps its world placement; on G1 the placements lose
coordinates and rotations and the traced kernels operations."""

from __future__ import annotations

import dataclasses

import casadi as ca
import numpy as np
import pinocchio as pin
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.helpers import assert_close, robot_case
from wbc.algorithms import dynamics as dyn
from wbc.algorithms.kinematics import TreeKinematics
from wbc.codegen import algorithm_functions as af
from wbc.codegen import cache
from wbc.model.joints import joint_motion, joint_transform
from wbc.model.reframe import reframed
from wbc.spatial.algebra import SE3, compose

AXES = {"x": np.array([1.0, 0.0, 0.0]), "y": np.array([0.0, 1.0, 0.0]), "z": np.array([0.0, 0.0, 1.0])}


def _rot(axis: np.ndarray, angle: float) -> np.ndarray:
    a = axis / np.linalg.norm(axis)
    K = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * K @ K


def _rpy(R: np.ndarray) -> np.ndarray:
    """URDF roll-pitch-yaw of R = Rz(y) Ry(p) Rx(r)."""
    return np.array([np.arctan2(R[2, 1], R[2, 2]), np.arcsin(-R[2, 0]), np.arctan2(R[1, 0], R[0, 0])])


def _f(x) -> str:
    return " ".join(repr(float(v)) for v in np.ravel(x))


def structured_tree_urdf(seed: int, n: int) -> str:
    """A random tree of ``n`` links: revolute (axis x, y, z or arbitrary), continuous, prismatic and
    fixed joints; each placement rotation the identity, one about the joint's own axis, one about
    the parent joint's axis then the own one (G1's hip roll), two about perpendicular coordinate
    axes, or arbitrary; translations with random zeros."""
    rng = np.random.default_rng(seed)
    axes: dict[int, np.ndarray] = {0: AXES["z"]}

    def link(i: int) -> str:
        m = float(rng.uniform(0.2, 2.0))
        d = rng.uniform(0.01, 0.1, 3)
        com, rpy = rng.uniform(-0.1, 0.1, 3), rng.uniform(-np.pi, np.pi, 3)
        return (
            f'<link name="link{i}"><inertial><origin xyz="{_f(com)}" rpy="{_f(rpy)}"/><mass value="{m!r}"/>'
            f'<inertia ixx="{float(d[0])!r}" iyy="{float(d[1])!r}" izz="{float(d[2])!r}" ixy="0" ixz="0" iyz="0"/>'
            "</inertial></link>\n"
        )

    parts = [f'<robot name="structured_{seed}_{n}">\n', link(0)]
    for i in range(1, n + 1):
        parent = int(rng.integers(0, i)) if rng.random() < 0.3 else i - 1
        kind = str(rng.choice(["revolute", "revolute", "revolute", "continuous", "prismatic", "fixed"]))
        axis = AXES[str(rng.choice(list("xyz")))] if rng.random() < 0.75 else rng.normal(size=3)
        axis = axis / np.linalg.norm(axis)
        a_p = axes[parent]
        shape = int(rng.integers(0, 5))
        R = [
            np.eye(3),
            _rot(axis, rng.uniform(-np.pi, np.pi)),
            _rot(a_p, rng.uniform(-np.pi, np.pi)) @ _rot(axis, rng.uniform(-np.pi, np.pi)),
            _rot(AXES["x"], rng.uniform(-1, 1)) @ _rot(AXES["y"], rng.uniform(-1, 1)),
            _rot(rng.normal(size=3), rng.uniform(-np.pi, np.pi)),
        ][shape]
        xyz = rng.uniform(-0.3, 0.3, 3) * (rng.random(3) < 0.7)
        extra = ""
        if kind in ("revolute", "prismatic"):
            extra = f'<axis xyz="{_f(axis)}"/><limit lower="-2" upper="2" effort="100" velocity="10"/>'
        elif kind == "continuous":
            extra = f'<axis xyz="{_f(axis)}"/><limit effort="100" velocity="10"/>'
        axes[i] = R.T @ a_p if kind == "fixed" else axis  # a fixed joint's child moves with its parent's joint
        parts.append(link(i))
        parts.append(
            f'<joint name="joint{i}" type="{kind}"><parent link="link{parent}"/><child link="link{i}"/>'
            f'<origin xyz="{_f(xyz)}" rpy="{_f(_rpy(R))}"/>{extra}</joint>\n'
        )
    parts.append("</robot>\n")
    return "".join(parts)


CASES = [(seed, n, fb) for seed, n in ((1, 8), (2, 15), (3, 25)) for fb in (True, False)]


@pytest.mark.parametrize(
    "seed,n,floating", CASES, ids=[f"tree{s}_{n}-{'floating' if f else 'fixed'}" for s, n, f in CASES]
)
def test_dynamics_on_the_reframed_model_match_pinocchio(seed, n, floating):
    """RNEA (with external forces), CRBA, ABA (with external forces), eager and compiled, equal
    Pinocchio's to 1e-9 on random trees with structured and arbitrary placement rotations."""
    text = structured_tree_urdf(seed, n)
    m = wbc.load_urdf(text, floating)
    pm = oracle.build_model(text, floating, from_text=True)
    pd = pm.createData()
    kernels = {q: wbc.codegen.compile_function(getattr(af, f"{q}_function")(m)) for q in ("rnea", "crba", "aba")}
    rng = np.random.default_rng(seed)
    for k in range(5):
        q = wbc.random_configuration(m, rng)
        v, a, tau = rng.normal(size=m.nv), rng.normal(size=m.nv), rng.normal(size=m.nv)
        where = f"tree {seed} state {k}"
        M = oracle.symmetrized(pin.crba(pm, pd, q))
        assert_close(wbc.eager.crba(m, q), M, what=f"{where} CRBA")
        assert_close(kernels["crba"](q)[0], M, what=f"{where} compiled CRBA")
        assert_close(kernels["rnea"](q, v, a)[0], pin.rnea(pm, pd, q, v, a), what=f"{where} compiled RNEA")
        assert_close(kernels["aba"](q, v, tau)[0], pin.aba(pm, pd, q, v, tau), what=f"{where} compiled ABA")
        names = [str(x) for x in rng.choice([f.name for f in m.frames], size=3, replace=False)]
        fext = {name: 10.0 * rng.normal(size=6) for name in names}
        pf = oracle.external_forces(pm, fext)
        assert_close(wbc.eager.rnea(m, q, v, a, fext), pin.rnea(pm, pd, q, v, a, pf), what=f"{where} RNEA fext")
        assert_close(wbc.eager.aba(m, q, v, tau, fext), pin.aba(pm, pd, q, v, tau, pf), what=f"{where} ABA fext")


@pytest.mark.parametrize("seed,n,floating", CASES[:2])
def test_reframed_frames_keep_their_world_placements(seed, n, floating):
    """Every frame of the equivalent model is where the original's is, at random configurations,
    and its joints have the original's types, axes and layout."""
    m = wbc.load_urdf(structured_tree_urdf(seed, n), floating)
    r = reframed(m).model
    assert [(j.type, j.idx_q, j.idx_v, j.parent) for j in r.joints] == [
        (j.type, j.idx_q, j.idx_v, j.parent) for j in m.joints
    ]
    for ja, jb in zip(m.joints, r.joints):
        np.testing.assert_array_equal(ja.axis, jb.axis)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        q = ca.DM(wbc.random_configuration(m, rng))
        ka, kb = TreeKinematics(m, q), TreeKinematics(r, q)
        for f in range(len(m.frames)):
            A, B = ka.frame_placement(f), kb.frame_placement(f)
            np.testing.assert_allclose(np.array(ca.DM(B.R)), np.array(ca.DM(A.R)), rtol=0, atol=1e-12)
            np.testing.assert_allclose(np.array(ca.DM(B.p)), np.array(ca.DM(A.p)), rtol=0, atol=1e-12)


def _nonzeros(p) -> int:
    return int(np.count_nonzero(np.asarray(p, dtype=float)))


def test_g1_placements_and_kernels_get_cheaper():
    """On G1 the equivalent model's placements have fewer nonzero translation coordinates and fewer
    rotations that are not about the joint's own axis (the hip rolls' go into the hip pitches'
    frames), and the traced CRBA, RNEA and ABA take fewer operations than on the original frames."""
    m = robot_case("g1").model
    r = reframed(m).model

    def off_axis_rotations(model: wbc.Model) -> int:
        return sum(1 for j in model.joints[1:] if np.max(np.abs(np.asarray(j.placement.R) @ j.axis - j.axis)) > 1e-12)

    assert sum(_nonzeros(j.placement.p) for j in r.joints) < sum(_nonzeros(j.placement.p) for j in m.joints) - 10
    assert off_axis_rotations(r) == off_axis_rotations(m) - 2  # the two hip rolls
    q, v, a = ca.SX.sym("q", m.nq), ca.SX.sym("v", m.nv), ca.SX.sym("a", m.nv)
    on_original = {  # the same recursions on the original frames (kinematics given)
        "crba": dyn.crba(m, q, kin=TreeKinematics(m, q)),
        "rnea": dyn.rnea(m, q, v, a, kin=TreeKinematics(m, q, v)),
        "aba": dyn.aba(m, q, v, a, kin=TreeKinematics(m, q, v)),
    }
    on_reframed = {"crba": dyn.crba(m, q), "rnea": dyn.rnea(m, q, v, a), "aba": dyn.aba(m, q, v, a)}
    at_most = {"crba": 0.93, "rnea": 0.98, "aba": 0.96}  # measured: 0.91, 0.97, 0.94
    for name, fraction in at_most.items():
        before = ca.Function("f", [q, v, a], [on_original[name]], {"cse": True}).n_instructions()
        after = ca.Function("f", [q, v, a], [on_reframed[name]], {"cse": True}).n_instructions()
        assert after < fraction * before, f"{name}: {after} operations on the reframed model, {before} on the original"


def test_rotation_about_the_own_axis_merges_into_the_angle():
    """A revolute joint whose placement rotation is about its own axis (G1's knee, and the same with
    an arbitrary axis): one axis rotation by the sum of the angles, the same transform as the
    product, fewer operations traced."""
    m = robot_case("g1").model
    knee = m.joints[m.joint_id("left_knee_joint")]
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    arbitrary = dataclasses.replace(knee, axis=axis, placement=SE3(_rot(axis, 0.4), knee.placement.p))
    theta = ca.SX.sym("theta", 1)
    for joint in (knee, arbitrary):
        merged, product = joint_transform(joint, theta), compose(joint.placement, joint_motion(joint, theta))
        for angle in (-2.0, 0.3, 1.9):
            for x, y in zip(merged, product):
                got, want = ca.Function("f", [theta], [x])(angle), ca.Function("g", [theta], [y])(angle)
                np.testing.assert_allclose(np.array(got), np.array(want), rtol=0, atol=1e-15)
        ops = [ca.Function("f", [theta], [ca.vec(X.R)], {"cse": True}).n_instructions() for X in (merged, product)]
        assert ops[0] < ops[1], f"{joint.name}: {ops[0]} operations merged, {ops[1]} as a product"


def test_vector_flags_only_on_x86_64_with_avx(monkeypatch):
    """AVX flags on an x86-64 processor that has AVX (no fused multiply-add, contraction off), none
    on other machines; the hot and default flags carry them where the processor has them."""
    assert cache._vector_flags("Linux", "aarch64") == ()
    assert cache._vector_flags("Windows", "AMD64") == ()  # nothing to read the features from
    flags = cache.vector_flags()
    assert flags in ((), ("-mavx", "-ffp-contract=off"))
    assert "-mfma" not in flags
    for f in flags:
        assert f in cache.DEFAULT_FLAGS and f in cache.HOT_FLAGS
