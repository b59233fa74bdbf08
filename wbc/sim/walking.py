"""Walking in MuJoCo under the whole-body controller: the loop that closes a gait on the simulator.

:class:`Walker` owns a :class:`~wbc.sim.mujoco.MujocoSim`, a :class:`wbc.WholeBodyController`
(CoM, pelvis orientation, posture and one swing-foot frame task per foot; two sole contacts) and a
gait (:mod:`wbc.locomotion`: footsteps from a velocity command, Englsberger's DCM reference on the
linear inverted pendulum, a DCM stabilizer, capture steps), and runs them at 1 kHz
(:meth:`Walker.run`), torque-controlled, every step solved.

Contact switching goes through the controller's contact schedule: before lift-off the stance
foot's normal-force bound ramps to zero over the double support (``deactivate_contact(name,
ramp)``), so the force never jumps; the contact is released when the ramp ends and the foot's
frame task takes it over. Touchdown is the swing's planned end, or earlier when MuJoCo reports the
sole loaded; the contact is then re-enforced where the foot landed (flattened onto the ground:
``activate_contact(name, placement, ramp, ramp_force)``, the bound rising from zero).

With ``adjust`` the capture-step planner re-solves the next step's location and timing online from
the measured DCM (:class:`wbc.locomotion.CaptureStepPlanner`); with ``recover`` a standing robot
whose capture point leaves the feet takes a recovery step (:func:`stand_and_push`).
:func:`summarize` turns a run's log into the figures of ``demos/walk.py``'s ``summary.json``.

MuJoCo is the optional ``sim`` extra; ``import wbc`` never imports this module.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import sys
import time
from collections.abc import Sequence

import mujoco
import numpy as np
from tqdm import tqdm

import wbc
from wbc import locomotion as loco
from wbc.sim import catalog
from wbc.sim.catalog import LeggedRobot
from wbc.sim.faults import Faults
from wbc.sim.injection import inject
from wbc.sim.mujoco import MujocoSim

__all__ = [
    "DT",
    "GAITS",
    "PRESETS",
    "FootPhase",
    "RobotGait",
    "Walker",
    "stand_and_push",
    "summarize",
]

#: Control and simulation period, s.
DT = 1e-3


@dataclasses.dataclass(frozen=True)
class RobotGait:
    """Per-robot gait settings: timings (s), lift height (m), step limits (m, rad), swing-foot task
    stiffness (1/s²: G1's light legs need the stiffer swing tracking, measured: 400 fell sideways)."""

    single_support: float
    double_support: float
    initial_double_support: float
    final_double_support: float
    lift: float
    limits: dict
    swing_kp: float


#: Gait settings per catalog robot.
GAITS = {
    "talos": RobotGait(
        0.8,
        0.3,
        1.2,
        1.2,
        0.05,
        dict(width=0.17, min_width=0.15, max_width=0.35, max_forward=0.25, max_backward=0.1, max_turn=0.4),
        400.0,
    ),
    "g1": RobotGait(
        0.5,
        0.2,
        1.0,
        1.0,
        0.05,
        dict(width=0.237, min_width=0.2, max_width=0.4, max_forward=0.25, max_backward=0.1, max_turn=0.4),
        900.0,
    ),
}

#: Walking presets (``--preset``): velocity command (m/s, m/s, rad/s) and number of steps per robot.
PRESETS = {
    "forward": {"talos": ((0.22, 0.0, 0.0), 16), "g1": ((0.25, 0.0, 0.0), 18)},
    "lateral": {"talos": ((0.0, 0.06, 0.0), 12), "g1": ((0.0, 0.05, 0.0), 16)},
    "turn": {"talos": ((0.0, 0.0, 0.2), 14), "g1": ((0.0, 0.0, 0.3), 14)},
}

#: Pose-feedback stiffness of the stance feet (1/s²; damping 2 √kp), as the balance demo's.
CONTACT_KP = 3000.0
#: A swinging sole counts as landed when MuJoCo reports this share of the weight on it ...
TOUCHDOWN_LOAD = 0.1
#: ... within this many seconds before its planned touchdown.
TOUCHDOWN_WINDOW = 0.15
#: The online step adjustment leaves the plan alone while the measured DCM is this close to the
#: planned one (m): the multibody robot departs from the LIPM by a few cm while walking (G1: up to
#: 5 cm), which is the stabilizer's job; re-planning for it makes the steps erratic.
DCM_TOLERANCE = 0.06
#: After touchdown the contact's normal-force bound rises from zero to this multiple of the weight.
RISE_LOAD = 1.2


def gait_of(robot: LeggedRobot) -> RobotGait:
    """The gait settings of ``robot`` (:data:`GAITS`).

    Raises:
        ModelError: no settings for it, naming the robot and the robots that have them.
    """
    try:
        return GAITS[robot.name]
    except KeyError:
        raise wbc.ModelError(
            f"robot {robot.name!r} cannot walk: no gait settings (wbc.sim.walking.GAITS has {', '.join(GAITS)})"
        ) from None


class FootPhase(enum.Enum):
    """What the controller does with a foot."""

    STANCE = "stance"  # contact enforced
    RELEASING = "releasing"  # contact enforced, its force bound ramping to zero before lift-off
    SWING = "swing"  # contact released, the frame task tracks the swing reference


class Walker:
    """The simulator, the controller, the gait and the per-step bookkeeping of one run.

    Args:
        robot: a catalog name (``"talos"``, ``"g1"``) or a :class:`~wbc.sim.catalog.LeggedRobot` on
            soles with :data:`GAITS` settings under its name.
        k_dcm: DCM error decay rate of the stabilizer, 1/s.
        swing_kp: stiffness of the swing-foot frame tasks, 1/s² (default the robot's :class:`RobotGait`).
        adjust: re-solve the next step's location and timing online from the measured DCM.
        rise: duration of the touchdown force rise, s (default the double support).
        dcm_tolerance: DCM error (m) beyond which the next step is re-planned (with ``adjust``).
        clip_zmp: the CoM acceleration realizes the stabilizer's ZMP clipped to the support polygon
            (LIPM-feasible); False: the feedback law's unclipped ZMP, left to the QP's CoP limits.
        faults: model errors, sensor noise, latency, actuator limits (:mod:`wbc.sim.faults`): the
            controller and the CoM estimate of the stabilizer see the faulty robot.
    """

    def __init__(
        self,
        robot: str | LeggedRobot,
        k_dcm: float = 2.0,
        swing_kp: float | None = None,
        adjust: bool = False,
        rise: float | None = None,
        com_weight: float = 10.0,
        swing_weight: float = 10.0,
        contact_kp: float = CONTACT_KP,
        dcm_tolerance: float = DCM_TOLERANCE,
        clip_zmp: bool = True,
        faults: Faults | None = None,
    ) -> None:
        self.spec = spec = catalog.legged_robot(robot, "walk")
        self.robot = spec.name
        self.model = model = spec.model
        if spec.sole is None:
            raise wbc.ModelError(f"robot {spec.name!r} cannot walk: the walking controller needs soles, not point feet")
        gait = gait_of(spec)
        tasks = catalog.tasks()
        self.sim = MujocoSim(model, [(f, spec.sole.length, spec.sole.width) for f in spec.feet])
        self.sim.reset(spec.q0)
        self.faults = inject(faults, self.sim, model, dict(getattr(spec, "locked", ())))
        if self.faults is not None:  # the controller's model and sensors, the motors (wbc.sim.injection)
            self.sim, model = self.faults.sim, self.faults.controller_model
        self.frame = {loco.Foot.LEFT: spec.feet[0], loco.Foot.RIGHT: spec.feet[1]}
        self.contacts = {
            f: wbc.SurfaceContact(frame, spec.sole.length, spec.sole.width, mu=0.7, kp=contact_kp)
            for f, frame in self.frame.items()
        }
        self.base = model.joints[1].link
        self.com_task = tasks.CoMTask(weight=com_weight, kp=[0.0, 0.0, 100.0], kd=[0.0, 0.0, 20.0])
        self.orientation = tasks.OrientationTask(self.base, weight=1.0, kp=100.0)
        self.posture = tasks.PostureTask(model, weight=1e-2, kp=30.0)
        self.foot_tasks = {
            f: tasks.FrameTask(
                frame, weight=0.0, kp=gait.swing_kp if swing_kp is None else swing_kp, name=f"swing_{f.value}"
            )
            for f, frame in self.frame.items()
        }
        for f, task in self.foot_tasks.items():  # a target even at weight 0 (a zero rotation has no log)
            task.set_target(wbc.frame_placement(model, spec.q0, self.frame[f]))
        self.swing_weight = swing_weight
        all_tasks = [self.com_task, self.orientation, self.posture, *self.foot_tasks.values()]
        self.controller = wbc.WholeBodyController(model, all_tasks, list(self.contacts.values()))
        self.controller.compile()
        if self.faults is not None:
            self.controller = self.faults.controller(self.controller)
        self.posture.set_target(self.controller.within_limits(spec.q0))
        self.weight = model.total_mass * loco.GRAVITY
        self.shape = loco.FootShape(spec.sole.length, spec.sole.width)
        self.params = loco.GaitParameters(
            single_support=gait.single_support,
            double_support=gait.double_support,
            initial_double_support=gait.initial_double_support,
            final_double_support=gait.final_double_support,
            lift_height=gait.lift,
        )
        self.limits = loco.StepLimits(**gait.limits)
        self.rise = self.params.double_support if rise is None else rise
        self.stabilizer = loco.DCMStabilizer(k_dcm=k_dcm, margin=0.01)
        self.planner = loco.CaptureStepPlanner(self.params, self.shape, self.limits, dcm_tolerance=dcm_tolerance)
        self.adjust = adjust
        self.clip_zmp = clip_zmp
        self.com0, _ = self._com()
        self.feet0 = self.footholds()
        self.timeline = loco.plan_stand(self.feet0, self.com0, self.params, self.shape)
        self.plan: loco.FootstepPlan | None = None

    # ------------------------------------------------------------------------------ plans
    def footholds(self) -> dict:
        """Where the soles stand now (ground height 0)."""
        out = {}
        for f, frame in self.frame.items():
            fs = loco.Footstep.from_pose(f, self.sim.frame_placement(frame))
            out[f] = loco.Footstep(f, fs.position * [1.0, 1.0, 0.0], fs.yaw)
        return out

    def walk(self, command, n_steps: int, t0: float = 0.0) -> loco.GaitTimeline:
        """Plan ``n_steps`` steps of the velocity ``command`` (vx, vy, yaw rate) from rest at ``t0``."""
        self.plan = loco.plan_from_velocity(
            loco.VelocityCommand(*command),
            self.feet0[loco.Foot.LEFT],
            self.feet0[loco.Foot.RIGHT],
            n_steps,
            self.params.step_duration,
            self.limits,
            self.shape,
        )
        self.timeline = loco.plan_walk(self.plan, self.com0, self.params, self.shape, t0)
        return self.timeline

    def _com(self) -> tuple[np.ndarray, np.ndarray]:
        """MuJoCo's CoM (3,) and CoM velocity (3,) at the current state (with faults, the
        controller's estimate: :meth:`wbc.sim.injection.Injection.center_of_mass`)."""
        if self.faults is not None:
            return self.faults.center_of_mass()
        self.sim.forward()
        m, d = self.sim.mjmodel, self.sim.mjdata
        mujoco.mj_subtreeVel(m, d)
        return d.subtree_com[1].copy(), d.subtree_linvel[1].copy()

    def _landing(self, foot: loco.Foot) -> np.ndarray:
        """Where a landed sole is held: its measured position and yaw, flat on the ground (4, 4)."""
        pose = self.sim.frame_placement(self.frame[foot])
        fs = loco.Footstep.from_pose(foot, pose)
        return loco.Footstep(foot, pose[0:3, 3] * [1.0, 1.0, 0.0], fs.yaw).pose

    # ------------------------------------------------------------------------------ the loop
    def run(
        self,
        duration: float,
        pushes: Sequence = (),
        recover: bool = False,
        progress: bool = True,
        replay=None,
        on_step=None,
    ) -> dict:
        """Simulate ``duration`` s following :attr:`timeline`; returns the log (arrays over time).

        Args:
            pushes: ``(time s, force (3,) N, duration s)`` on the pelvis.
            recover: standing, take a recovery step when the capture point leaves the support
                polygon (see :meth:`wbc.locomotion.CaptureStepPlanner.recovery`) and a step within the
                step limits captures it (a lateral push toward a loaded foot needs a crossing step,
                which the limits exclude: the robot then stays on both feet).
            replay: a :class:`wbc.viz.Replay` to record into (about 30 frames per second).
            on_step: called as ``on_step(q, v, cmd)`` after every control step (tests check each step).
        """
        sim, ctrl, p = self.sim, self.controller, self.params
        steps = int(round(duration / DT))
        keys: tuple[str, ...] = (
            "t",
            "com",
            "com_ref",
            "dcm",
            "dcm_ref",
            "zmp_ref",
            "zmp_cmd",
            "normal_sim",
            "normal_cmd",
        )
        keys += ("tau", "status", "base_z", "step_us", "walking", "yaw", "sat", "phase")
        log: dict = {k: [] for k in keys}
        phase = {f: FootPhase.STANCE for f in self.frame}
        anchor = {f: sim.frame_placement(self.frame[f])[0:2, 3].copy() for f in self.frame}
        touchdowns: list = []  # (t, foot, landed (x, y, yaw), planned (x, y, yaw))
        recoveries: list = []
        last_recovery, declined = -1.0, 0  # recovery steps not taken: not capturable within the step limits
        slip = 0.0
        fell = False
        z0 = sim.get_state()[0][2]
        yaw_prev, yaw_total = None, 0.0
        pending = sorted(pushes, key=lambda push: push[0])
        last_adjust = -1.0
        bar = tqdm(total=steps, unit="step", disable=not (progress and sys.stderr.isatty()))
        names = {f: c.name for f, c in self.contacts.items()}
        for i in range(steps):
            t = i * DT
            q, v = sim.get_state()
            com, vel = self._com()
            tl = self.timeline
            if self.adjust and tl.steps and t - last_adjust >= 0.02 and t < tl.steps[-1].touchdown:
                last_adjust = t
                new = self.planner.adjust(tl, t, com, vel)
                if new is not None:
                    tl = self.timeline = new.timeline
            if (
                recover
                and all(s is FootPhase.STANCE for s in phase.values())
                and not any(st.touchdown > t for st in tl.steps)
            ):
                feet = self.footholds()
                xi = loco.dcm_of(com, vel, tl.omega)
                if t - last_recovery >= 0.02 and self.planner.needs_step(
                    xi, loco.support_polygon(list(feet.values()), self.shape)
                ):
                    last_recovery = t
                    plan = self.planner.recovery(t, com, vel, feet, omega=tl.omega)
                    if plan.captured:  # else no step within reach stops it: stay on both feet
                        tl = self.timeline = plan.timeline
                        recoveries.append({"t": round(t, 3), "foot": plan.step.foot.value})
                    else:
                        declined += 1
            ref = tl.sample(t)
            forces = sim.normal_forces()
            for f in self.frame:
                fr, name = ref.feet[f], names[f]
                if (
                    phase[f] is FootPhase.STANCE
                    and fr.state is loco.ContactState.STANCE  # not an early touchdown of a planned swing
                    and fr.liftoff is not None
                    and t >= fr.liftoff - p.double_support - DT / 2
                ):
                    if fr.liftoff - t < DT:  # a re-plan moved the lift-off to now: release at once
                        ctrl.deactivate_contact(name)
                    else:
                        ctrl.deactivate_contact(name, ramp=fr.liftoff - t)
                    phase[f] = FootPhase.RELEASING
                if phase[f] is FootPhase.RELEASING and not ctrl.contact_active(name):
                    phase[f] = FootPhase.SWING
                    self.foot_tasks[f].set_weight(self.swing_weight)
                if phase[f] is FootPhase.SWING:
                    early = (
                        fr.touchdown is not None
                        and t >= fr.touchdown - TOUCHDOWN_WINDOW
                        and forces[self.frame[f]] > TOUCHDOWN_LOAD * self.weight
                    )
                    # planned: the reference is in stance and not about to lift off (float round-off
                    # can put a lift-off a hair after the end of its own release ramp)
                    planned = fr.state is loco.ContactState.STANCE and (fr.liftoff is None or fr.liftoff > t + DT / 2)
                    if planned or early:
                        landing = self._landing(f)
                        ctrl.activate_contact(name, landing, ramp=self.rise, ramp_force=RISE_LOAD * self.weight)
                        self.foot_tasks[f].set_weight(0.0)
                        phase[f] = FootPhase.STANCE
                        anchor[f] = landing[0:2, 3].copy()
                        foothold = fr.foothold
                        touchdowns.append(
                            (
                                t,
                                f.value,
                                [*landing[0:2, 3], loco.Footstep.from_pose(f, landing).yaw],
                                [*foothold.position[0:2], foothold.yaw],
                                bool(early and not planned),
                            )
                        )
                    else:
                        self.foot_tasks[f].set_target(fr.pose, fr.velocity, fr.acceleration)
            if i % 10 == 0:
                for f in self.frame:
                    if phase[f] is not FootPhase.SWING:
                        moved = sim.frame_placement(self.frame[f])[0:2, 3] - anchor[f]
                        slip = max(slip, float(np.linalg.norm(moved)))
            stance = [self.footholds()[f] for f in self.frame if phase[f] is not FootPhase.SWING]
            out = self.stabilizer.compute(ref, com, vel, loco.support_polygon(stance, self.shape))
            acc = out.com_acceleration
            if not self.clip_zmp:  # the feedback law's CoM acceleration: the QP's CoP limits bound it
                acc = acc.copy()
                acc[0:2] = ref.omega**2 * (com[0:2] - out.zmp_unconstrained[0:2])
            self.com_task.set_target(ref.com, [ref.com_velocity[0], ref.com_velocity[1], 0.0], acc)
            self.orientation.set_target(
                ref.heading_rotation(), [0.0, 0.0, ref.heading_rate], [0.0, 0.0, ref.heading_acceleration]
            )
            clock = time.perf_counter()
            cmd = ctrl.step(q, v)
            log["step_us"].append((time.perf_counter() - clock) * 1e6)
            if on_step is not None:
                on_step(q, v, cmd)
            sim.set_torques(cmd.tau)
            while pending and pending[0][0] <= t:
                _, force, length = pending.pop(0)
                sim.apply_push(self.base, np.asarray(force, float), length)
            try:
                sim.step()
            except wbc.SimulationDiverged:
                fell = True
                break
            yaw = _yaw(q)
            if yaw_prev is not None:
                yaw_total += math.remainder(yaw - yaw_prev, 2 * math.pi)
            yaw_prev = yaw
            log["t"].append(t)
            log["com"].append(com)
            log["com_ref"].append(ref.com)
            log["dcm"].append(out.dcm)
            log["dcm_ref"].append(ref.dcm)
            log["zmp_ref"].append(ref.zmp)
            log["zmp_cmd"].append(out.zmp)
            log["normal_sim"].append([forces[self.frame[f]] for f in loco.Foot])
            log["normal_cmd"].append([self.contacts[f].normal_force(cmd.forces[names[f]]) for f in loco.Foot])
            log["tau"].append(cmd.tau)
            log["status"].append(cmd.status is wbc.StepStatus.OPTIMAL)
            log["base_z"].append(q[2])
            log["walking"].append(any(s is not FootPhase.STANCE for s in phase.values()))
            log["yaw"].append(yaw_total)
            log["sat"].append(out.saturated)
            log["phase"].append([list(FootPhase).index(phase[f]) for f in loco.Foot])
            if replay is not None and i % 33 == 0:
                from wbc.viz import contact_arrows

                arrows = contact_arrows(self.model, q, ctrl.contacts, cmd.forces)
                active = {
                    f"push {k}": (q[0:3], np.asarray(f, float))
                    for k, (tp, f, d) in enumerate(pushes)
                    if tp <= t < tp + d
                }
                replay.add(t, q, arrows, active)
            if q[2] < 0.7 * z0:
                fell = True
                break
            bar.update(1)
        bar.close()
        run: dict = {k: np.asarray(val) for k, val in log.items()}
        run.update(fell=fell, slip=slip, touchdowns=touchdowns, recoveries=recoveries, declined=declined, base_z0=z0)
        return run


def _yaw(q: np.ndarray) -> float:
    x, y, z, w = q[3:7]
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def summarize(walker: Walker, run: dict, command=None) -> dict:
    """Distance (forward, sideways, in the start's heading frame), turn, average speed, fell, max
    foot slip, failed steps, footstep errors and the control-step time walking vs standing."""
    t = run["t"]
    if len(t) == 0:
        return {"robot": walker.robot, "fell": True, "steps": 0}
    com = run["com"]
    heading0 = _yaw(walker.spec.q0)
    c, s = math.cos(heading0), math.sin(heading0)
    d = com[-1, 0:2] - com[0, 0:2]
    forward, lateral = c * d[0] + s * d[1], -s * d[0] + c * d[1]
    walking = run["walking"]
    if walking.any():
        first, last = np.argmax(walking), len(walking) - 1 - np.argmax(walking[::-1])
        walk_time = float(t[last] - t[first])
    else:
        walk_time = 0.0
    us = run["step_us"]
    stand_us = float(np.median(us[~walking])) if (~walking).any() else None
    walk_us = float(np.median(us[walking])) if walking.any() else None
    errors = [
        float(np.linalg.norm(np.subtract(landed[0:2], planned[0:2]))) for _, _, landed, planned, _ in run["touchdowns"]
    ]
    plan_target = None
    if walker.plan is not None:
        mid = loco.FootstepPlan.midpose(walker.plan.final)
        mid0 = loco.FootstepPlan.midpose(walker.feet0)
        plan_target = np.round(np.asarray(mid)[0:2] - np.asarray(mid0)[0:2], 4).tolist()
    distance = float(np.linalg.norm(d))
    return {
        "robot": walker.robot,
        "command": None if command is None else [float(x) for x in command],
        "fell": bool(run["fell"]),
        "duration_s": round(float(t[-1] + DT), 3),
        "forward_m": round(float(forward), 4),
        "lateral_m": round(float(lateral), 4),
        "distance_m": round(distance, 4),
        "turn_deg": round(math.degrees(float(run["yaw"][-1])), 2),
        "planned_displacement_m": plan_target,
        "walking_time_s": round(walk_time, 3),
        "average_speed_m_s": round(distance / walk_time, 4) if walk_time > 0 else 0.0,
        "footsteps": len(run["touchdowns"]),
        "touchdowns_detected_early": sum(1 for *_, early in run["touchdowns"] if early),
        "max_footstep_error_m": round(max(errors), 4) if errors else 0.0,
        "max_foot_slip_m": round(float(run["slip"]), 5),
        "failed_steps": int(np.sum(~run["status"])),
        "min_pelvis_height_ratio": round(float(np.min(run["base_z"]) / run["base_z0"]), 4),
        "max_dcm_error_m": round(float(np.max(np.linalg.norm((run["dcm"] - run["dcm_ref"])[:, 0:2], axis=1))), 4),
        "stabilizer_saturated_steps": int(np.sum(run["sat"])),
        "recovery_steps": run["recoveries"],
        "recovery_steps_declined": int(run["declined"]),
        "step_us_median_standing": None if stand_us is None else round(stand_us, 1),
        "step_us_median_walking": None if walk_us is None else round(walk_us, 1),
        "step_time_ratio_walking_to_standing": round(walk_us / stand_us, 3) if stand_us and walk_us else None,
    }


# ================================================================================== push recovery
#: DCM feedback gain (1/s) of the standing robot in :func:`stand_and_push`: as stiff as the balance
#: demo's CoM feedback (``c̈ = −(ω + k) ċ`` for a push, about its ``−20 ċ``), measured best of 2-15 on
#: Talos (lateral push survived standing: 2 → 437 N, 15 → 520 N; forward, with steps: 359 → 400 N).
STANDING_K_DCM = 15.0


def stand_and_push(
    robot: str | LeggedRobot,
    force,
    push_time: float = 1.0,
    duration: float = 3.0,
    push_length: float = 0.1,
    recover: bool = True,
    faults: Faults | None = None,
):
    """Stand, push the pelvis with ``force`` (3,) N over ``push_length`` s at ``push_time``, recover
    by stepping when the capture point leaves the feet (unless ``recover`` is False); returns
    ``(walker, run, summary)``.

    Standing, the DCM feedback is stiff (:data:`STANDING_K_DCM`) and its CoM acceleration is not
    clipped to the support polygon: the QP's centre-of-pressure limits bound what the feet give and
    the rest comes from the upper body's angular momentum (the hip strategy), as in the balance demo.
    """
    walker = Walker(robot, adjust=True, k_dcm=STANDING_K_DCM, clip_zmp=False, faults=faults)
    pushes = [(push_time, np.asarray(force, float), push_length)]
    run = walker.run(duration, pushes=pushes, recover=recover, progress=False)
    return walker, run, summarize(walker, run)
