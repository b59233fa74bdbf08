"""Gait sequencing: from a gait timeline and what the robot senses to the controller's contacts and targets.

A :class:`GaitSequencer` is the walking logic of one control step without a simulator: given the
time and the measured state (:class:`Sensing`: CoM, sole poses, sole normal forces) it

1. re-plans the next step from the measured DCM (``adjust``, :meth:`CaptureStepPlanner.adjust`) or,
   standing, plans a recovery step when the capture point leaves the feet (``recover``);
2. switches contacts through the controller's contact schedule: before lift-off the stance foot's
   normal-force bound ramps to zero over the double support (``deactivate_contact(name, ramp)``),
   the contact is released when the ramp ends and the foot's frame task takes it over (weight
   ``swing_weight``); touchdown is the swing's planned end, or earlier when the sole carries
   :data:`TOUCHDOWN_LOAD` of the weight within :data:`TOUCHDOWN_WINDOW` of it, or later when the sole
   is still above the surface at the planned time (more than :data:`LATE_HEIGHT`: the swing goes on
   down at :data:`LATE_SPEED` until it lands, at most :data:`LATE_LIMIT`); the contact is then
   re-enforced where the foot landed, on the surface under it (``foothold``:
   ``activate_contact(name, placement, ramp, ramp_force)``). A late touchdown delays the rest of the
   plan by its lateness (:meth:`GaitTimeline.delayed`: the next release, double support and swing
   start from the actual touchdown), so that the other foot's release ramp starts with the landed
   foot's force rise, not before it ends (released at once, the other foot's force bound ramped down
   while the landed foot's was still rising from zero and the QP was infeasible); the online step
   adjustment waits while a foot is overdue;
3. runs the DCM stabilizer on the support polygon of the feet in contact and sets the CoM and
   pelvis-orientation targets.

It drives any controller with the contact-schedule methods of :class:`wbc.WholeBodyController`
(``activate_contact``, ``deactivate_contact``, ``contact_active``) and tasks with ``set_target`` /
``set_weight``; it imports neither a simulator nor the controller, so the same sequencing runs on
MuJoCo (:class:`wbc.sim.walking.Walker`) or a real robot's estimator.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from .dcm import dcm_of
from .footsteps import Foot, FootShape, Footstep, support_polygon
from .recovery import CaptureStepPlanner
from .stabilizer import DCMStabilizer, StabilizerOutput
from .timeline import ContactState, GaitParameters, GaitSample, GaitTimeline, TimedStep, _crosses, plan_from_state

__all__ = [
    "FootPhase",
    "Sensing",
    "SequencerStep",
    "Touchdown",
    "GaitSequencer",
    "TOUCHDOWN_LOAD",
    "TOUCHDOWN_WINDOW",
    "RISE_LOAD",
]

#: A swinging sole counts as landed when it carries this share of the weight ...
TOUCHDOWN_LOAD = 0.1
#: ... within this many seconds before its planned touchdown.
TOUCHDOWN_WINDOW = 0.15
#: After touchdown the contact's normal-force bound rises from zero to this multiple of the weight.
RISE_LOAD = 1.2
#: A sole still this high above the surface under it at its planned touchdown has not landed (m):
#: the swing goes on down ...
LATE_HEIGHT = 0.01
#: ... at this speed (m/s) ...
LATE_SPEED = 0.15
#: ... until it lands (loaded, or within LATE_HEIGHT), at most this long (s); then the contact is
#: enforced where the sole is.
LATE_LIMIT = 0.3


class FootPhase(enum.Enum):
    """What the controller does with a foot."""

    STANCE = "stance"  # contact enforced
    RELEASING = "releasing"  # contact enforced, its force bound ramping to zero before lift-off
    SWING = "swing"  # contact released, the frame task tracks the swing reference


@dataclasses.dataclass(frozen=True)
class Sensing:
    """What the robot measures at one control step.

    Attributes:
        t: time, s.
        com: CoM (3,), m, world.
        com_velocity: CoM velocity (3,), m/s.
        soles: each foot's sole-frame pose (4, 4), world.
        normal_forces: each sole's vertical contact force, N.
    """

    t: float
    com: np.ndarray
    com_velocity: np.ndarray
    soles: Mapping
    normal_forces: Mapping


@dataclasses.dataclass(frozen=True)
class Touchdown:
    """A landing: time (s), foot, where it landed and where it was to land ``(x, y, yaw)``, whether
    the sole's load detected it before the planned touchdown, how late after it (s) the sole landed,
    the landed foothold."""

    t: float
    foot: Foot
    landed: list
    planned: list
    early: bool
    late: float = 0.0
    foothold: Footstep | None = None


@dataclasses.dataclass(frozen=True)
class SequencerStep:
    """One control step's reference, stabilizer output and foot phases."""

    reference: GaitSample
    stabilizer: StabilizerOutput
    phase: dict


def _lands_after(timeline: GaitTimeline, t: float) -> bool:
    """Whether a step of ``timeline`` lands after ``t`` (s)."""
    return any(st.touchdown > t for st in timeline.steps)


def flat_foothold(foot: Foot, pose: np.ndarray) -> Footstep:
    """The foothold of a sole pose (4, 4) on flat ground at height 0 (its x, y and yaw)."""
    fs = Footstep.from_pose(foot, pose)
    return Footstep(foot, fs.position * [1.0, 1.0, 0.0], fs.yaw)


class GaitSequencer:
    """The per-step walking logic (see the module docstring); one instance per run (it keeps state).

    Args:
        controller: the whole-body controller (its contact schedule is driven).
        contacts: each foot's contact (its ``name`` is the schedule's key).
        foot_tasks: each foot's swing frame task (weight 0 in stance).
        com_task, orientation: the CoM and pelvis-orientation tasks.
        timeline: the gait to follow (replaced by re-plans: :attr:`timeline`).
        params, shape: the gait parameters and the sole.
        stabilizer: the DCM stabilizer.
        planner: the capture-step planner (re-plans and recovery steps).
        weight: the robot's weight, N (touchdown detection and force rise).
        rise: touchdown force-rise duration, s.
        swing_weight: the swing frame tasks' weight.
        adjust: re-plan the next step from the measured DCM every 20 ms.
        recover: standing, take a recovery step when the capture point leaves the feet and a
            step within the step limits captures it (else count it in :attr:`declined`).
        clip_zmp: the CoM acceleration realizes the stabilizer's ZMP clipped to the support polygon;
            False: the feedback law's unclipped ZMP, left to the QP's CoP limits.
        foothold: the foothold (ground height and yaw) of a measured sole pose (default
            :func:`flat_foothold`); landings are held there.
        recovery_tolerance: a recovery step is also taken when its plan leaves at most this much
            (m) of the DCM uncaptured (the rest to the stabilizer and the upper body); 0: only plans
            that capture it.
        recovery_rise: the touchdown force rise (s) of a recovery plan's steps (default ``rise``): a
            foot put down to catch a fall is loaded at once.
        crossing_yaw_gains: ``(kp, kd)`` of the pelvis orientation's yaw (1/s², 1/s) while a crossover
            step swings and ``crossing_yaw_hold`` s after it lands (then the task's own gains, as
            they were when the sequencer was made); None: unchanged. The crossing leg swings
            across with the pelvis turning; held straight, the pelvis takes the QP's effort from
            the swing.
        crossing_yaw_hold: see ``crossing_yaw_gains``, s.
        uncross: ``(delay, transfer)`` s: still standing on crossed feet ``delay`` after a crossover
            step landed, the other foot steps beside the crossed one (at the planner's nominal width,
            in the crossed foot's frame: the robot ends turned as that foot landed) after a weight
            transfer of ``transfer`` (a plan from the measured state:
            :func:`~wbc.locomotion.timeline.plan_from_state`); None: stay crossed. Standing crossed, the
            stance leg sits at its joint limits and the robot drifts off within seconds.
        replan_crossed: when a crossover step lands and no step follows it, the standing plan
            restarts from the measured state there (:func:`~wbc.locomotion.timeline.plan_from_state`:
            its DCM from the measured one, at rest over the middle of the crossed feet). The plan made
            before the step has its DCM where the step was to stop it, 0.2 m from the measured one
            on G1; pulling the DCM back toward it, the stabilizer put the ZMP on the crossed foot's
            front edge and pushed the DCM out behind the feet.
    """

    def __init__(
        self,
        controller,
        contacts: Mapping,
        foot_tasks: Mapping,
        com_task,
        orientation,
        timeline: GaitTimeline,
        params: GaitParameters,
        shape: FootShape,
        stabilizer: DCMStabilizer,
        planner: CaptureStepPlanner,
        weight: float,
        rise: float,
        swing_weight: float,
        adjust: bool = False,
        recover: bool = False,
        clip_zmp: bool = True,
        foothold: Callable[[Foot, np.ndarray], Footstep] = flat_foothold,
        recovery_tolerance: float = 0.0,
        recovery_rise: float | None = None,
        crossing_yaw_gains: tuple[float, float] | None = None,
        crossing_yaw_hold: float = 0.0,
        uncross: tuple[float, float] | None = None,
        replan_crossed: bool = False,
    ) -> None:
        self.controller = controller
        self.names = {f: c.name for f, c in contacts.items()}
        self.foot_tasks, self.com_task, self.orientation = foot_tasks, com_task, orientation
        self.timeline = timeline
        self.params, self.shape = params, shape
        self.stabilizer, self.planner = stabilizer, planner
        self.weight, self.rise, self.swing_weight = float(weight), float(rise), float(swing_weight)
        self.adjust, self.recover, self.clip_zmp = adjust, recover, clip_zmp
        self.foothold = foothold
        self.recovery_tolerance = float(recovery_tolerance)
        self.recovery_rise = self.rise if recovery_rise is None else float(recovery_rise)
        self.crossing_yaw_gains = crossing_yaw_gains
        self.crossing_yaw_hold = float(crossing_yaw_hold)
        # the orientation task's own gains, put back after a crossing (set only when they change)
        self._orientation_gains = (orientation.kp, orientation.kd) if crossing_yaw_gains is not None else None
        self._yaw_compliant = False
        self.uncross = uncross
        self.replan_crossed = bool(replan_crossed)
        self.crossing: Foot | None = None  # the foot swinging across the stance foot, if any
        self._crossed_at = -math.inf  # when the last crossover step landed, s
        self._crossed: Foot | None = None  # the foot that landed across, until the other one closes
        self._recovering = False  # the timeline's steps are a recovery plan's
        self.phase = {f: FootPhase.STANCE for f in self.names}
        self.anchor: dict = {}  # where each foot was last put down (x, y), m
        self.touchdowns: list[Touchdown] = []
        self.recoveries: list[dict] = []
        self.declined = 0  # recovery steps not taken: not capturable within the step limits
        self._last_adjust = -1.0
        self._last_recovery = -1.0
        # foot -> (its planned touchdown, the first control step past it) (s), while a late sole goes on down
        self._late: dict = {}

    def footholds(self, sensing: Sensing) -> dict:
        """Where the soles stand now."""
        return {f: self.foothold(f, sensing.soles[f]) for f in self.names}

    def _replan(self, s: Sensing) -> GaitTimeline:
        tl, t = self.timeline, s.t
        if (
            self.adjust
            and tl.steps
            and t - self._last_adjust >= 0.02
            and t < tl.steps[-1].touchdown
            and not self._overdue(t)
        ):
            self._last_adjust = t
            new = self.planner.adjust(tl, t, s.com, s.com_velocity)
            if new is not None:
                tl = self.timeline = new.timeline
        if self.recover and all(p is FootPhase.STANCE for p in self.phase.values()) and not _lands_after(tl, t):
            feet = self.footholds(s)
            xi = dcm_of(s.com, s.com_velocity, tl.omega)
            if t - self._last_recovery >= 0.02 and self.planner.needs_step(
                xi, support_polygon(list(feet.values()), self.shape)
            ):
                self._last_recovery = t
                plan = self.planner.recovery(t, s.com, s.com_velocity, feet, omega=tl.omega)
                if plan.captured or float(np.linalg.norm(plan.residual)) <= self.recovery_tolerance:
                    tl = self.timeline = plan.timeline
                    self._recovering = True
                    self.recoveries.append(
                        {
                            "t": round(t, 3),
                            "foot": plan.step.foot.value,
                            "landing": np.round(plan.step.footstep.position, 4).tolist(),
                            "residual_m": round(float(np.linalg.norm(plan.residual)), 4),
                        }
                    )
                else:  # no step within reach stops it: stay on both feet
                    self.declined += 1
        if self.uncross is not None:
            tl = self._uncross(s, tl)
        return tl

    def _uncross(self, s: Sensing, tl: GaitTimeline) -> GaitTimeline:
        """Standing on crossed feet :attr:`uncross` ``[0]`` s after the crossing landed: the other foot
        steps beside the crossed one (a plan from the measured state; once per crossing)."""
        t, crossed = s.t, self._crossed
        if (
            crossed is None
            or self.uncross is None
            or t < self._crossed_at + self.uncross[0]
            or any(p is not FootPhase.STANCE for p in self.phase.values())
            or _lands_after(tl, t)
        ):
            return tl
        self._crossed = None
        feet = self.footholds(s)
        other = crossed.other
        if crossed.side * feet[other].to_local(feet[crossed].position)[1] > 0:
            return tl  # recovery steps since have uncrossed the legs
        beside = feet[crossed].to_world((0.0, other.side * self.planner.limits.width, 0.0))
        beside[2] = feet[crossed].position[2]
        lift = t + self.uncross[1]
        step = TimedStep(Footstep(other, beside, feet[crossed].yaw), lift, lift + self.params.single_support)
        self._recovering = True
        self.timeline = self._plan_from(s, [step])
        return self.timeline

    def _plan_from(self, s: Sensing, steps: Sequence[TimedStep] = ()) -> GaitTimeline:
        """A plan from the measured state at ``s.t`` on the feet where they stand: ``steps``, then
        standing (:func:`~wbc.locomotion.timeline.plan_from_state`)."""
        omega = self.timeline.omega
        return plan_from_state(self.footholds(s), s.com, s.com_velocity, self.params, self.shape, s.t, omega, steps)

    def _overdue(self, t: float) -> bool:
        """Whether a swinging foot is past its planned touchdown (landing late: the plan is re-timed
        when it lands, :meth:`GaitTimeline.delayed`)."""
        tl = self.timeline
        phase = self.phase.items()
        return any(p is FootPhase.SWING and tl.contact_state(f, t) is ContactState.STANCE for f, p in phase)

    def _planned_touchdown(self, f: Foot, t: float) -> float:
        """The planned touchdown (s) of foot ``f``'s swing that ended at or before ``t`` (``t`` if none)."""
        done = [st.touchdown for st in self.timeline.steps if st.foot is f and st.touchdown <= t]
        return max(done) if done else t

    def _switch(self, f: Foot, ref: GaitSample, s: Sensing, dt: float) -> None:
        """Advance foot ``f``'s phase (release, swing, touchdown) at the reference ``ref``."""
        ctrl, p, t = self.controller, self.params, s.t
        fr, name = ref.feet[f], self.names[f]
        if (
            self.phase[f] is FootPhase.STANCE
            and fr.state is ContactState.STANCE  # not an early touchdown of a planned swing
            and fr.liftoff is not None
            and t >= fr.liftoff - p.double_support - dt / 2
            and self.phase[f.other] is not FootPhase.SWING  # the other foot landed (it may be late)
        ):
            if fr.liftoff - t < dt:  # a re-plan moved the lift-off to now: release at once
                ctrl.deactivate_contact(name)
            else:
                ctrl.deactivate_contact(name, ramp=fr.liftoff - t)
            self.phase[f] = FootPhase.RELEASING
        if self.phase[f] is FootPhase.RELEASING and not ctrl.contact_active(name):
            self.phase[f] = FootPhase.SWING
            self.foot_tasks[f].set_weight(self.swing_weight)
            here, stance = self.foothold(f, s.soles[f]), self.foothold(f.other, s.soles[f.other])
            if fr.foothold is not None and _crosses(here, fr.foothold, stance):
                self.crossing = f
        if self.phase[f] is FootPhase.SWING:
            early = (
                fr.touchdown is not None
                and t >= fr.touchdown - TOUCHDOWN_WINDOW
                and s.normal_forces[f] > TOUCHDOWN_LOAD * self.weight
            )
            # planned: the reference is in stance and not about to lift off (float round-off
            # can put a lift-off a hair after the end of its own release ramp)
            planned = fr.state is ContactState.STANCE and (fr.liftoff is None or fr.liftoff > t + dt / 2)
            foothold = self.foothold(f, s.soles[f]) if planned or early else None
            late = 0.0
            if planned and not early and foothold is not None:
                height = float(s.soles[f][2, 3] - foothold.position[2])
                if f not in self._late:
                    self._late[f] = (self._planned_touchdown(f, t), t)
                late = t - self._late[f][1]
                loaded = s.normal_forces[f] > TOUCHDOWN_LOAD * self.weight
                if height > LATE_HEIGHT and not loaded and late < LATE_LIMIT:
                    pose = fr.pose.copy()  # the planned foothold, lowered as time goes on
                    pose[2, 3] -= LATE_SPEED * (late + dt)
                    velocity = np.zeros(6)
                    velocity[2] = -LATE_SPEED
                    self.foot_tasks[f].set_target(pose, velocity, np.zeros(6))
                    return
            if foothold is not None:
                due = self._late.pop(f, (t, t))[0]
                tl = self.timeline
                if late > 0 and due >= tl.t0 and not tl.in_swing(due):
                    # what follows the touchdown starts from it (the other foot's release with this rise)
                    self.timeline = tl.delayed(due, t - due, foothold)
                landing = foothold.pose
                rise = self.recovery_rise if self._recovering else self.rise
                ctrl.activate_contact(name, landing, ramp=rise, ramp_force=RISE_LOAD * self.weight)
                self.foot_tasks[f].set_weight(0.0)
                if self.crossing is f:
                    self.crossing, self._crossed_at, self._crossed = None, t, f
                    if self.replan_crossed and not _lands_after(self.timeline, t):
                        self.timeline = self._plan_from(s)
                if self._recovering and not _lands_after(self.timeline, t):
                    self._recovering = False
                self.phase[f] = FootPhase.STANCE
                self.anchor[f] = landing[0:2, 3].copy()
                target = fr.foothold
                self.touchdowns.append(
                    Touchdown(
                        t,
                        f,
                        [*landing[0:2, 3], Footstep.from_pose(f, landing).yaw],
                        [*target.position[0:2], target.yaw],
                        bool(early and not planned),
                        late,
                        foothold,
                    )
                )
            else:
                self.foot_tasks[f].set_target(fr.pose, fr.velocity, fr.acceleration)

    def update(self, s: Sensing, dt: float) -> SequencerStep:
        """One control step at ``s.t`` (``dt`` the control period, s): re-plans, contact switches,
        stabilizer and task targets; the caller then runs the controller."""
        tl = self._replan(s)
        ref = tl.sample(s.t)
        for f in self.names:
            self._switch(f, ref, s, dt)
            if self.timeline is not tl:  # a late touchdown re-timed the plan: the other foot follows it
                tl = self.timeline
                ref = tl.sample(s.t)
        if self.crossing_yaw_gains is not None:
            self._crossing_yaw(s.t)
        feet = self.footholds(s)
        stance = [feet[f] for f in self.names if self.phase[f] is not FootPhase.SWING]
        polygon = support_polygon(stance, self.shape) if stance else tl.support_polygon(s.t)
        out = self.stabilizer.compute(ref, s.com, s.com_velocity, polygon)
        acc = out.com_acceleration
        if not self.clip_zmp:  # the feedback law's CoM acceleration: the QP's CoP limits bound it
            acc = acc.copy()
            acc[0:2] = ref.omega**2 * (s.com[0:2] - out.zmp_unconstrained[0:2])
        self.com_task.set_target(ref.com, ref.com_velocity, acc)
        self.orientation.set_target(
            ref.heading_rotation(), [0.0, 0.0, ref.heading_rate], [0.0, 0.0, ref.heading_acceleration]
        )
        return SequencerStep(ref, out, dict(self.phase))

    def _crossing_yaw(self, t: float) -> None:
        """The pelvis yaw's gains: :attr:`crossing_yaw_gains` while a crossover step swings and
        :attr:`crossing_yaw_hold` s after it lands, else the orientation task's own."""
        compliant = self.crossing is not None or t - self._crossed_at < self.crossing_yaw_hold
        if compliant == self._yaw_compliant or self._orientation_gains is None or self.crossing_yaw_gains is None:
            return
        self._yaw_compliant = compliant
        kp, kd = (np.array(g, float) for g in self._orientation_gains)
        if compliant:
            kp[2], kd[2] = self.crossing_yaw_gains
        self.orientation.set_gains(kp, kd)

    @property
    def walking(self) -> bool:
        """Whether a foot is not in stance."""
        return any(p is not FootPhase.STANCE for p in self.phase.values())
