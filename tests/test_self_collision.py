"""Self-collision avoidance: distances, their derivatives and the barrier row against MuJoCo, the
URDF collision primitives, and a closed loop in MuJoCo.

Oracles: MuJoCo's ``mj_geomDistance`` on the very same spheres and capsules (attached to a kinematic
copy of the robot) gives the distances, and, by finite differences along a trajectory, their first
and second time derivatives; MuJoCo integrates the closed loop; Pinocchio's RNEA checks every step.
"""

from __future__ import annotations

import struct

import numpy as np
import pinocchio as pin
import pytest

import wbc
from tests.helpers import eom_residual, robot_case
from wbc import tasks
from wbc.control.limits import collision_primitives, pair_distances, propose_pairs

mujoco = pytest.importorskip("mujoco")
from wbc.sim.limit_scenario import add_geom  # noqa: E402
from wbc.sim.mujoco import MujocoSim, SimOptions, build_spec, qpos_from_q  # noqa: E402


class Probe:
    """MuJoCo's distances between primitives attached to a kinematic copy of ``model``."""

    def __init__(self, model: wbc.Model, pairs) -> None:
        spec = build_spec(model, options=SimOptions(floor=False, position_limits=False, torque_limits=False))
        bodies = {b.name: b for b in spec.bodies}
        names = []
        for k, pair in enumerate(pairs):
            names.append(tuple(f"g{k}_{j}" for j in range(2)))
            for j, p in enumerate(pair):
                add_geom(bodies, model, p, f"g{k}_{j}")
        self.model, self.mjmodel = model, spec.compile()
        self.mjdata = mujoco.MjData(self.mjmodel)
        self.ids = [(self.mjmodel.geom(a).id, self.mjmodel.geom(b).id) for a, b in names]

    def __call__(self, q) -> np.ndarray:
        self.mjdata.qpos[:] = qpos_from_q(self.model, q)
        mujoco.mj_kinematics(self.mjmodel, self.mjdata)
        fromto = np.zeros(6)
        return np.array([mujoco.mj_geomDistance(self.mjmodel, self.mjdata, a, b, 10.0, fromto) for a, b in self.ids])


def _panda_pairs():
    """Every kind of pair on the Panda, the fixed base (universe body) included."""
    S, C = wbc.Sphere, wbc.Capsule
    return [
        wbc.CollisionPair(S("panda_hand", 0.06, (0, 0, 0.05)), C("panda_link0", 0.12, (0, 0, 0), (0, 0, 0.35))),
        wbc.CollisionPair(
            C("panda_link7", 0.05, (0, 0, 0), (0, 0.1, 0.1)), C("panda_link3", 0.06, (0, 0, -0.1), (0.05, 0, 0.1))
        ),
        wbc.CollisionPair(C("panda_link6", 0.04, (0.02, 0, 0), (0.08, 0.05, 0)), S("panda_link2", 0.06, (0, 0, -0.1))),
        wbc.CollisionPair(S("panda_leftfinger", 0.02), S("panda_link4", 0.07, (0.05, 0.02, 0))),
        wbc.CollisionPair(
            C("panda_hand", 0.03, (0, -0.08, 0.02), (0, 0.08, 0.02)),
            C("panda_link5", 0.05, (0, 0.05, -0.2), (0, 0.08, 0)),
        ),
    ]


def test_distances_match_mujoco_on_the_same_primitives():
    """Random configurations of Talos and the Panda (penetrations included): wbc's distances equal
    MuJoCo's to round-off, for spheres and capsules, on moving and fixed bodies."""
    rng = np.random.default_rng(0)
    talos = robot_case("talos")
    prims = collision_primitives(talos.model, talos.spec.urdf)
    talos_pairs = [wbc.CollisionPair(*rng.choice(prims, 2, replace=False)) for _ in range(40)]
    talos_pairs = [p for p in talos_pairs if p.first.frame != p.second.frame]
    worst, seen_negative = 0.0, False
    for case, pairs in ((talos, talos_pairs), (robot_case("panda"), _panda_pairs())):
        model = case.model
        probe = Probe(model, [(p.first, p.second) for p in pairs])
        for _ in range(5):
            q = wbc.random_configuration(model, rng)
            ours, theirs = pair_distances(model, q, pairs), probe(q)
            worst = max(worst, float(np.abs(ours - theirs).max()))
            seen_negative |= bool((theirs < 0).any())
    assert worst < 1e-9, worst
    assert seen_negative, "some pairs interpenetrate"


def test_the_barrier_row_predicts_the_distance_acceleration():
    """Panda, random states and inputs u: the kernel's self-collision rows give d̈ = J_d q̈ + drift at
    q̈ = a₀ + B̂u; MuJoCo's distances along q(t) = q ⊕ (vt + ½q̈t²), differenced, give the same d̈ (and
    the barrier's ḋ and d), for every kind of pair: the closest points' sliding is accounted for."""
    case = robot_case("panda")
    model = case.model
    pairs = _panda_pairs()
    margin, gain, a_max = 0.02, 20.0, 1e6
    limit = wbc.SelfCollisionLimit(pairs, margin=margin, gain=gain, max_acceleration=a_max)
    ctrl = wbc.WholeBodyController(model, [tasks.PostureTask(model, kp=1.0)], limits=[wbc.TorqueLimit(), limit])
    probe = Probe(model, [(p.first, p.second) for p in pairs])
    rng = np.random.default_rng(1)
    worst = 0.0
    for _ in range(8):
        q = wbc.random_configuration(model, rng)
        v = rng.normal(size=model.nv)
        problem = ctrl.build_problem(q, v)
        outputs = ctrl._outputs
        rows = [i for i, g in enumerate(problem.in_groups) if g.kind is wbc.Kind.SELF_COLLISION]
        assert len(rows) == len(pairs)
        u = rng.normal(size=problem.n) * 5.0
        qdd = outputs.a0 + outputs.Bhat @ u
        h = 2e-5  # truncation O(h²) and round-off O(1e-16/h²) both below 1e-6

        d0, dp, dm = (probe(wbc.integrate(model, q, v * t + 0.5 * qdd * t * t)) for t in (0.0, h, -h))
        d_dot, d_ddot = (dp - dm) / (2 * h), (dp - 2 * d0 + dm) / h**2
        wanted = np.minimum(-2 * gain * d_dot - gain**2 * (d0 - margin), a_max)
        predicted = problem.h[rows] - problem.G[rows] @ u + wanted  # the row reads −d̈(u) ≤ −wanted
        worst = max(worst, float(np.max(np.abs(predicted - d_ddot) / np.maximum(1.0, np.abs(d_ddot)))))
    assert worst < 1e-5, f"d̈ from the kernel vs MuJoCo finite differences: {worst:.2e}"


def test_panda_hand_pushed_into_its_base_keeps_the_margin_in_mujoco():
    """A position task drives the hand into the base column (and the posture folds the arm): MuJoCo's
    minimum distance over 1.5 s stays above the 2 cm margin, every step is solved and satisfies
    Pinocchio's RNEA; without the limit the hand goes through."""
    case = robot_case("panda")
    model, spec = case.model, case.spec
    pairs = _panda_pairs()[:1]
    probe = Probe(model, [(p.first, p.second) for p in pairs])
    minima = {}
    for with_limit in (True, False):
        hand = tasks.PositionTask("panda_hand_tcp", weight=1.0, kp=100.0)
        posture = tasks.PostureTask(model, weight=1e-3, kp=10.0)
        limits = [wbc.TorqueLimit(), wbc.JointPositionLimit(), wbc.JointVelocityLimit()]
        if with_limit:
            limits.append(wbc.SelfCollisionLimit(pairs, margin=0.02))
        ctrl = wbc.WholeBodyController(model, [hand, posture], limits=limits)
        hand.set_target([0.0, 0.0, 0.2])  # on the base column's axis
        posture.set_target(spec.q0)
        sim = MujocoSim(model, position_limits=False)
        sim.reset(spec.q0)
        d_min = np.inf
        for _ in range(1500):
            q, v = sim.get_state()
            cmd = ctrl.step(q, v)
            assert cmd.status is wbc.StepStatus.OPTIMAL
            assert eom_residual(case, q, v, cmd) < 1e-9
            sim.set_torques(cmd.tau)
            sim.step()
            d_min = min(d_min, float(probe(sim.get_state()[0])[0]))
        minima[with_limit] = d_min
    assert minima[True] >= 0.02 - 1e-5, minima
    assert minima[False] < 0.0, minima


def test_unsatisfiable_barrier_is_named_and_the_fallback_is_finite():
    """A pair already interpenetrating, a barrier asking for more separation than tiny torque limits
    allow: the diagnosis names the barrier's group and the command is finite."""
    case = robot_case("panda")
    model, spec = case.model, case.spec
    pair = wbc.CollisionPair(wbc.Sphere("panda_hand", 0.3), wbc.Capsule("panda_link0", 0.3, (0, 0, 0), (0, 0, 0.4)))
    limits = [wbc.TorqueLimit(np.full(model.n_actuated, 1e-3)), wbc.SelfCollisionLimit([pair], max_acceleration=1e3)]
    ctrl = wbc.WholeBodyController(model, [tasks.PostureTask(model, kp=1.0)], limits=limits)
    assert pair_distances(model, spec.q0, [pair])[0] < 0
    cmd = ctrl.step(spec.q0, np.zeros(model.nv))
    assert cmd.status is not wbc.StepStatus.OPTIMAL
    assert cmd.conflict == (wbc.Group(wbc.Kind.SELF_COLLISION, "self_collision"),), cmd.conflict
    assert np.all(np.isfinite(cmd.tau)) and np.all(np.isfinite(cmd.qdd))


# ----------------------------------------------------------------------------- primitives from URDFs
def _segment_distance(points, a, b):
    d = b - a
    t = np.clip((points - a) @ d / (d @ d), 0, 1)
    return np.linalg.norm(points - (a + t[:, None] * d), axis=1)


def _contains(prim, points) -> bool:
    if isinstance(prim, wbc.Sphere):
        dist = np.linalg.norm(points - np.array(prim.center), axis=1)
    else:
        dist = _segment_distance(points, np.array(prim.start), np.array(prim.end))
    return bool(np.all(dist <= prim.radius + 1e-9))


def _write_stl(path, triangles: np.ndarray, binary: bool) -> None:
    if binary:
        data = bytearray(80) + struct.pack("<I", len(triangles))
        for tri in triangles:
            data += struct.pack("<12fH", 0, 0, 0, *tri.ravel(), 0)
        path.write_bytes(bytes(data))
    else:
        lines = ["solid test"]
        for tri in triangles:
            lines += ["facet normal 0 0 0", "outer loop"] + [f"vertex {x} {y} {z}" for x, y, z in tri]
            lines += ["endloop", "endfacet"]
        path.write_text("\n".join(lines + ["endsolid test"]))


def test_urdf_collision_geometry_becomes_bounding_primitives(tmp_path):
    """Spheres stay spheres; cylinders, boxes and meshes (binary and ASCII STL, OBJ, scaled, found
    through package://) become capsules containing every point of the original shape."""
    rng = np.random.default_rng(2)
    mesh_dir = tmp_path / "pkg" / "meshes"
    mesh_dir.mkdir(parents=True)
    cloud = rng.normal(size=(60, 3)) * [0.2, 0.05, 0.03] + [0.1, 0, 0]
    _write_stl(mesh_dir / "bin.stl", cloud.reshape(20, 3, 3).astype(np.float32).astype(float), binary=True)
    _write_stl(mesh_dir / "text.stl", cloud.reshape(20, 3, 3), binary=False)
    (mesh_dir / "m.obj").write_text("\n".join(f"v {x} {y} {z}" for x, y, z in cloud) + "\nf 1 2 3\n")
    inertial = '<inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>'
    shapes = {
        "sphere": '<sphere radius="0.1"/>',
        "cylinder": '<cylinder radius="0.05" length="0.3"/>',
        "box": '<box size="0.1 0.4 0.2"/>',
        "bin": '<mesh filename="package://pkg/meshes/bin.stl" scale="1 -1 2"/>',
        "text": '<mesh filename="package://pkg/meshes/text.stl"/>',
        "obj": '<mesh filename="package://pkg/meshes/m.obj"/>',
    }
    links = "".join(
        f'<link name="{n}">{inertial}<collision><origin xyz="0.1 0.2 0.3" rpy="0.3 -0.2 0.5"/><geometry>{g}'
        f"</geometry></collision></link>"
        for n, g in shapes.items()
    )
    joints = "".join(
        f'<joint name="j_{n}" type="revolute"><parent link="base"/><child link="{n}"/><axis xyz="0 0 1"/>'
        f'<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
        for n in shapes
    )
    urdf = tmp_path / "pkg" / "urdf" / "robot.urdf"
    urdf.parent.mkdir()
    urdf.write_text(f'<robot name="shapes"><link name="base">{inertial}</link>{links}{joints}</robot>')
    model = wbc.load_urdf(urdf)
    prims = {p.frame: p for p in collision_primitives(model, urdf)}
    assert isinstance(prims["sphere"], wbc.Sphere) and prims["sphere"].radius == 0.1
    R = pin.rpy.rpyToMatrix(0.3, -0.2, 0.5)
    o = np.array([0.1, 0.2, 0.3])
    # points of each original shape, in the link frame
    theta = np.linspace(0, 2 * np.pi, 50)
    rim = np.concatenate([np.c_[0.05 * np.cos(theta), 0.05 * np.sin(theta), np.full(50, z)] for z in (-0.15, 0.15)])
    corners = np.array([[x, y, z] for x in (-0.05, 0.05) for y in (-0.2, 0.2) for z in (-0.1, 0.1)])
    expected = {
        "cylinder": rim,
        "box": corners,
        "bin": cloud.astype(np.float32).astype(float) * [1, -1, 2],
        "text": cloud,
        "obj": cloud,
    }
    for name, points in expected.items():
        prim = prims[name]
        assert isinstance(prim, wbc.Capsule), name
        assert _contains(prim, points @ R.T + o), f"{name}: the capsule contains the shape"
    assert prims["cylinder"].radius == pytest.approx(0.05) and prims["cylinder"].length == pytest.approx(0.3)
    assert prims["box"].length == pytest.approx(0.4)
    (mesh_dir / "m.obj").unlink()
    with pytest.raises(wbc.ModelError, match=r"m\.obj"):
        collision_primitives(model, urdf)


def test_proposed_pairs_skip_neighbours_and_overlaps():
    case = robot_case("talos")
    model, spec = case.model, case.spec
    prims = collision_primitives(model, spec.urdf)
    pairs = propose_pairs(model, prims, spec.q0, clearance=0.01, links=["gripper_right_base_link"])
    assert pairs
    d = pair_distances(model, spec.q0, pairs)
    assert np.all(d > 0.01) and np.all(np.diff(d) >= 0)
    for p in pairs:
        i = model.frames[model.frame_id(p.first.frame)].joint
        j = model.frames[model.frame_id(p.second.frame)].joint
        assert i != j and model.joints[i].parent != j and model.joints[j].parent != i
        assert "gripper_right_base_link" in (p.first.frame, p.second.frame)


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: wbc.Sphere("panda_hand", -1.0), wbc.InputError, "radius"),
        (lambda: wbc.Capsule("panda_hand", 0.1, (0, 0, 0), (0, 0, 0)), wbc.InputError, "coincide"),
        (lambda: wbc.SelfCollisionLimit([]), wbc.InputError, "at least one pair"),
        (lambda: wbc.SelfCollisionLimit([(wbc.Sphere("panda_hand", 0.1), "x")]), wbc.InputError, "Sphere or Capsule"),
        (
            lambda: wbc.SelfCollisionLimit([(wbc.Sphere("panda_hand", 0.1), wbc.Sphere("panda_hand_tcp", 0.1))]),
            wbc.InputError,
            "same body",
        ),
        (
            lambda: wbc.SelfCollisionLimit([(wbc.Sphere("nope", 0.1), wbc.Sphere("panda_link0", 0.1))]),
            wbc.FrameError,
            "nope",
        ),
        (
            lambda: wbc.SelfCollisionLimit([(wbc.Sphere("panda_hand", 0.1), wbc.Sphere("panda_link0", 0.1))], gain=0),
            wbc.InputError,
            "gain",
        ),
    ],
)
def test_bad_collision_input_is_refused(build, error, message):
    model = robot_case("panda").model
    with pytest.raises(error, match=message):
        wbc.WholeBodyController(model, [], limits=[build()])
