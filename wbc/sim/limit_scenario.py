"""Joint limits, a strict task hierarchy and self-collision avoidance: Talos in MuJoCo.

Talos stands on both feet at 1 kHz (MuJoCo's joint ranges disabled: only the controller keeps the
joints inside their limits) while its posture task is asked, over a smooth ramp, for the impossible
(:data:`TARGETS`: the left knee straighter than straight, the left elbow bent backwards, the right
hand through the torso). :func:`run` with the pieces: joint position and velocity limits,
self-collision avoidance between the right forearm / hand and the torso / pelvis (capsules bounding
their collision meshes), the CoM at level 0 and the posture at level 1; without them: torque limits
only, one weighted level. :class:`DistanceProbe` measures the distances with MuJoCo's own
``mj_geomDistance`` on the same capsules. ``demos/limits.py`` is the command line.

MuJoCo is the optional ``sim`` extra; ``import wbc`` never imports this module.
"""

from __future__ import annotations

import mujoco
import numpy as np

import wbc
from wbc.control.limits import collision_primitives

from . import catalog
from .balance import step_survived
from .catalog import LeggedRobot
from .mujoco import MujocoSim, SimOptions, build_spec, qpos_from_q

__all__ = ["ELBOW", "KNEE", "TARGETS", "DistanceProbe", "run", "summarize", "watched_pairs", "worst_violation"]

#: Control and simulation period, s.
DT = 1e-3
KNEE, ELBOW = "leg_left_4_joint", "arm_left_4_joint"
#: The posture's adversarial targets (rad): beyond the knee's and the elbow's limits, and the right arm
#: folded so that its hand is inside the torso.
TARGETS = {
    KNEE: -0.5,
    ELBOW: 0.6,
    "arm_right_1_joint": -0.46,
    "arm_right_2_joint": -0.13,
    "arm_right_3_joint": 1.97,
    "arm_right_4_joint": -2.15,
}
#: Watched pairs: (moving link, torso or pelvis link).
ARM_LINKS = ("arm_right_5_link", "arm_right_7_link", "gripper_right_base_link", "gripper_right_motor_single_link")
BODY_LINKS = ("torso_2_link", "base_link")


def watched_pairs(spec: LeggedRobot) -> list[wbc.CollisionPair]:
    """The pairs of the demo: each right forearm / hand primitive against the torso and the pelvis."""
    prims = {p.frame: p for p in collision_primitives(spec.model, spec.urdf)}
    return [wbc.CollisionPair(prims[a], prims[b]) for a in ARM_LINKS for b in BODY_LINKS]


class DistanceProbe:
    """MuJoCo's own distance (``mj_geomDistance``) between the same primitives, on a kinematic copy of
    the robot: the independent measure of the demo and of the tests."""

    def __init__(self, model: wbc.Model, pairs) -> None:
        spec = build_spec(model, options=SimOptions(floor=False, position_limits=False, torque_limits=False))
        bodies = {b.name: b for b in spec.bodies}
        self.model = model
        self.ids: list[tuple[str, str]] = []
        names = {}
        for k, pair in enumerate(pairs):
            ids = []
            for j, prim in enumerate((pair.first, pair.second)):
                key = (prim.frame, str(prim), prim.radius, prim.points.tobytes())
                if key not in names:
                    names[key] = f"probe_{k}_{j}"
                    add_geom(bodies, model, prim, names[key])
                ids.append(names[key])
            self.ids.append((ids[0], ids[1]))
        self.mjmodel = spec.compile()
        self.mjdata = mujoco.MjData(self.mjmodel)
        self.geom = [(self.mjmodel.geom(a).id, self.mjmodel.geom(b).id) for a, b in self.ids]

    def distances(self, q: np.ndarray) -> np.ndarray:
        """Distances (k,) m of the pairs at configuration ``q`` (nq,)."""
        self.mjdata.qpos[:] = qpos_from_q(self.model, q)
        mujoco.mj_kinematics(self.mjmodel, self.mjdata)
        fromto = np.zeros(6)
        return np.array([mujoco.mj_geomDistance(self.mjmodel, self.mjdata, a, b, 10.0, fromto) for a, b in self.geom])


def add_geom(bodies: dict, model: wbc.Model, prim, name: str) -> None:
    """Add ``prim`` (a Sphere or a Capsule) to its body of a MuJoCo spec built by ``build_spec``,
    colliding with nothing (it only measures)."""
    frame = model.frames[model.frame_id(prim.frame)]
    body = bodies[model.joints[frame.joint].link] if frame.joint > 0 else bodies["world"]
    R, p = np.asarray(frame.placement.R, float), np.asarray(frame.placement.p, float).reshape(3)
    points = prim.points @ R.T + p
    if isinstance(prim, wbc.Sphere):
        geom = body.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[prim.radius, 0, 0], pos=points[0])
    else:
        geom = body.add_geom(
            name=name, type=mujoco.mjtGeom.mjGEOM_CAPSULE, size=[prim.radius, 0, 0], fromto=points.reshape(-1)
        )
    geom.contype, geom.conaffinity, geom.mass = 0, 0, 0.0


def _ramp(t: float, start: float, duration: float) -> float:
    """Smooth (quintic) 0 → 1 between ``start`` and ``start + duration``."""
    x = min(max((t - start) / duration, 0.0), 1.0)
    return x**3 * (10 - 15 * x + 6 * x * x)


def run(
    with_limits: bool,
    duration: float = 4.0,
    ramp_start: float = 0.5,
    ramp: float = 1.5,
    targets: dict | None = None,
    on_step=None,
) -> dict:
    """One simulated run; returns its log (arrays over time).

    Args:
        targets: joint name -> posture target (rad), default :data:`TARGETS`.
        on_step: called as ``on_step(controller, q, v, command)`` after every control step.
    """
    targets = TARGETS if targets is None else targets
    spec = catalog.legged_robot("talos", "run the limits scenario")
    sole = spec.sole
    if sole is None:  # pragma: no cover - Talos has soles
        raise wbc.ModelError("the limits scenario needs Talos's soles")
    tasks = catalog.tasks()
    model = spec.model
    sim = MujocoSim(model, [(f, sole.length, sole.width) for f in spec.feet], position_limits=False)
    sim.reset(spec.q0)
    # the controller keeps the centres of pressure within 80 % of the soles: MuJoCo's feet stay flat.
    # No contact pose feedback here: a loaded sole sticks (friction) and sits in MuJoCo's soft contact
    # (~1.5 mrad of tilt, ~0.1 mm of creep), so the feedback's correcting acceleration (kp 1000) is one
    # the floor does not realize, and with the knee held at its limit that mismatch moved it 9 mrad past
    # its URDF limit (41 mrad when only slip and yaw were corrected: measured). The plain contact (zero
    # acceleration) is what the floor does.
    contacts = [wbc.SurfaceContact(f, 0.8 * sole.length, 0.8 * sole.width, mu=0.7, kp=0.0, kd=0.0) for f in spec.feet]
    com = tasks.CoMTask(weight=10.0, kp=100.0)
    weights = np.full(model.n_actuated, 1e-2)
    weights[list(model.actuated).index(model.joint_id(KNEE))] = 1.0  # the knee's request dominates the posture
    posture = tasks.PostureTask(model, weight=weights, kp=30.0)
    pairs = watched_pairs(spec)
    if with_limits:
        posture.set_priority(1)  # strictly below the CoM
        limits = [
            wbc.TorqueLimit(),
            wbc.JointPositionLimit(),
            wbc.JointVelocityLimit(),
            wbc.SelfCollisionLimit(pairs, margin=0.02, gain=20.0),
        ]
    else:
        limits = [wbc.TorqueLimit()]
    controller = wbc.WholeBodyController(model, [com, posture], contacts, limits=limits)
    controller.compile()
    com.set_target(wbc.center_of_mass(model, spec.q0))
    q_target = spec.q0.copy()
    for name, value in targets.items():
        q_target[model.joints[model.joint_id(name)].idx_q] = value
    probe = DistanceProbe(model, pairs)
    idx = {n: model.joints[model.joint_id(n)].idx_q for n in (KNEE, ELBOW)}
    vidx = np.array([model.joints[i].idx_v for i in model.actuated])
    log: dict[str, list] = {k: [] for k in ("t", "q", "v", "knee", "elbow", "distance", "com_error", "posture_error")}
    log["ok"] = []
    log["velocity_ratio"] = []
    steps = int(round(duration / DT))
    fell = False
    step_us = []
    for i in range(steps):
        t = i * DT
        q, v = sim.get_state()
        s = _ramp(t, ramp_start, ramp)
        posture.set_target(spec.q0 + s * (q_target - spec.q0))
        cmd = controller.step(q, v)
        step_us.append(cmd.timings["total"])
        if on_step is not None:
            on_step(controller, q, v, cmd)
        sim.set_torques(cmd.tau)
        if not step_survived(sim):
            fell = True
            break
        log["t"].append(t)
        log["q"].append(q)
        log["v"].append(v)
        log["knee"].append(q[idx[KNEE]])
        log["elbow"].append(q[idx[ELBOW]])
        log["distance"].append(probe.distances(q).min() if i % 5 == 0 else log["distance"][-1])
        log["com_error"].append(float(np.linalg.norm(cmd.task_errors["com"])))
        log["posture_error"].append(float(np.linalg.norm(cmd.task_errors["posture"])))
        log["velocity_ratio"].append(float(np.max(np.abs(v[vidx]) / model.velocity_limit[vidx])))
        log["ok"].append(cmd.status is wbc.StepStatus.OPTIMAL)
        if q[2] < 0.5 * spec.q0[2]:
            fell = True
            break
    out: dict = {k: np.asarray(x) for k, x in log.items()}
    out["fell"] = fell
    out["step_us"] = np.asarray(step_us)
    return out


def violation(model: wbc.Model, name: str, values: np.ndarray) -> float:
    """Largest excursion (rad) of joint ``name``'s positions ``values`` beyond its URDF limits (≤ 0 inside)."""
    j = model.joints[model.joint_id(name)]
    return float(np.max(np.maximum(values - j.upper[0], j.lower[0] - values)))


def worst_violation(model: wbc.Model, qs: np.ndarray) -> float:
    """Largest excursion (rad or m) of any joint beyond its URDF position limits over ``qs`` (k, nq)."""
    lo, hi = model.lower_position_limit, model.upper_position_limit
    finite = np.isfinite(lo) & np.isfinite(hi)
    return float(np.max(np.maximum(qs[:, finite] - hi[finite], lo[finite] - qs[:, finite])))


def summarize(runs: dict[str, dict], model: wbc.Model) -> dict:
    """Per run (label -> log of :func:`run`): fell, steps, non-optimal steps, the knee's and the
    elbow's largest violation and the worst joint's (rad), the smallest distance (m), the largest
    velocity ratio, CoM error (m), the final posture error (rad) and the median step time (µs)."""
    out = {}
    for label, r in runs.items():
        out[label] = {
            "fell": bool(r["fell"]),
            "steps": int(len(r["t"])),
            "non_optimal_steps": int(np.sum(~r["ok"])),
            "knee_violation_rad": round(violation(model, KNEE, r["knee"]), 5),
            "elbow_violation_rad": round(violation(model, ELBOW, r["elbow"]), 5),
            "min_distance_m": round(float(np.min(r["distance"])), 7),
            "worst_joint_violation_rad": round(worst_violation(model, r["q"]), 5),
            "max_velocity_ratio": round(float(np.max(r["velocity_ratio"])), 4),
            "max_com_error_m": round(float(np.max(r["com_error"])), 5),
            "final_posture_error_rad": round(float(r["posture_error"][-1]), 4),
            "step_us_median": round(float(np.median(r["step_us"])), 1),
        }
    return out
