"""Walking in MuJoCo under the whole-body controller: the loop that closes a gait on the simulator.

:class:`Walker` owns a :class:`~wbc.sim.mujoco.MujocoSim`, a :class:`wbc.WholeBodyController`
(CoM, pelvis orientation, posture and one swing-foot frame task per foot; two sole contacts) and a
gait (:mod:`wbc.locomotion`: footsteps from a velocity command, Englsberger's DCM reference on the
linear inverted pendulum, a DCM stabilizer, capture steps), and runs them at 1 kHz
(:meth:`Walker.run`), torque-controlled, every step solved.

The walking logic of a control step (re-plans, contact switching through the controller's contact
schedule, the stabilizer, task targets) is :class:`wbc.locomotion.GaitSequencer`, which knows no
simulator; this module senses MuJoCo for it (CoM, sole poses, sole normal forces), steps the
simulation and logs. Contact switching: before lift-off the stance foot's normal-force bound ramps
to zero over the double support, so the force never jumps; the contact is released when the ramp
ends and the foot's frame task takes it over. Touchdown is the swing's planned end, or earlier when
MuJoCo reports the sole loaded; the contact is then re-enforced where the foot landed (flattened
onto the ground), its force bound rising from zero.

With ``adjust`` the capture-step planner re-solves the next step's location and timing online from
the measured DCM (:class:`wbc.locomotion.CaptureStepPlanner`); with ``recover`` a standing robot
whose capture point leaves the feet takes a recovery step (:func:`stand_and_push`); with
``crossover`` that step may cross in front of the stance foot, the legs kept apart by a
:class:`wbc.SelfCollisionLimit` (:func:`lateral_push_with_and_without_crossover`).

With a ``terrain`` (:mod:`wbc.locomotion.terrain`, built in MuJoCo by :mod:`wbc.sim.terrain`)
:meth:`Walker.walk_terrain` plans footholds on its surfaces, swings that clear it and a CoM height
that follows the lower foot (:data:`TERRAIN_GAITS` per robot); landed feet are held on the surface
under them. :data:`FAST_GAITS` are the faster gaits (``PRESETS["fast"]``).
:func:`summarize` turns a run's log into the figures of ``demos/walk.py``'s ``summary.json``.

MuJoCo is the optional ``sim`` extra; ``import wbc`` never imports this module.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from collections.abc import Sequence

import mujoco
import numpy as np
from tqdm import tqdm

import wbc
from wbc import locomotion as loco
from wbc.locomotion.sequencer import RISE_LOAD, TOUCHDOWN_LOAD, TOUCHDOWN_WINDOW, FootPhase, flat_foothold
from wbc.sim import catalog
from wbc.sim.catalog import LeggedRobot
from wbc.sim.faults import Faults
from wbc.sim.injection import inject
from wbc.sim.mujoco import MujocoSim
from wbc.sim.terrain import terrain_scene

__all__ = [
    "CONTACT_KP",
    "DT",
    "FAST_GAITS",
    "GAITS",
    "PRESETS",
    "RISE_LOAD",
    "TOUCHDOWN_LOAD",
    "TOUCHDOWN_WINDOW",
    "FootPhase",
    "RobotGait",
    "leg_collision_pairs",
    "leg_links",
    "lateral_push_with_and_without_crossover",
    "LATERAL_TOLERANCE",
    "TERRAIN_GAITS",
    "TerrainGait",
    "Walker",
    "stand_and_push",
    "summarize",
]

#: Control and simulation period, s.
DT = 1e-3


@dataclasses.dataclass(frozen=True)
class RobotGait:
    """Per-robot gait settings: timings (s), lift height (m), step limits (m, rad), swing-foot task
    stiffness (1/s²: G1's light legs need the stiffer swing tracking, measured: 400 fell sideways),
    how much lower than standing the CoM walks (m: long steps need bent knees), the DCM feedback
    gain (1/s) unless the walker is given one, and how far a crossover recovery step lands turned
    toward the stance foot's side (rad, toe in: within the hip yaw range; see :class:`Walker`)."""

    single_support: float
    double_support: float
    initial_double_support: float
    final_double_support: float
    lift: float
    limits: dict
    swing_kp: float
    crouch: float = 0.0
    k_dcm: float = 2.0
    cross_yaw: float = 0.0


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
        # cross_yaw 0: its hip yaw turns a leg at most 0.35 rad inward (README, crossover steps)
    ),
    "g1": RobotGait(
        0.5,
        0.2,
        1.0,
        1.0,
        0.05,
        dict(width=0.237, min_width=0.2, max_width=0.4, max_forward=0.25, max_backward=0.1, max_turn=0.4),
        900.0,
        cross_yaw=1.6,  # a quarter turn: its hip yaw range is ±2.76 rad
    ),
}

#: Faster gaits (``--preset fast``): shorter steps in time, longer in space (issue 28: Talos ≥ 0.4 m/s,
#: G1 ≥ 0.5 m/s).
FAST_GAITS = {
    "talos": dataclasses.replace(
        GAITS["talos"], single_support=0.6, double_support=0.1, limits={**GAITS["talos"].limits, "max_forward": 0.36}
    ),
    "g1": dataclasses.replace(
        GAITS["g1"],
        single_support=0.4,
        double_support=0.1,
        limits={**GAITS["g1"].limits, "max_forward": 0.32},
        crouch=0.05,
        k_dcm=4.0,
    ),
}

#: Walking presets (``--preset``): velocity command (m/s, m/s, rad/s) and number of steps per robot
#: (``fast``: with :data:`FAST_GAITS`).
PRESETS = {
    "forward": {"talos": ((0.22, 0.0, 0.0), 16), "g1": ((0.25, 0.0, 0.0), 18)},
    "lateral": {"talos": ((0.0, 0.06, 0.0), 12), "g1": ((0.0, 0.05, 0.0), 16)},
    "turn": {"talos": ((0.0, 0.0, 0.2), 14), "g1": ((0.0, 0.0, 0.3), 14)},
    "fast": {"talos": ((0.5, 0.0, 0.0), 16), "g1": ((0.5, 0.0, 0.0), 18)},
}


@dataclasses.dataclass(frozen=True)
class TerrainGait:
    """Per-robot settings for walking over terrain (:meth:`Walker.walk_terrain`).

    Attributes:
        size: the scenes' dimensions (:class:`wbc.locomotion.terrain.TerrainSize`).
        step_length: nominal step length, m.
        limits: step limits replacing the robot's :class:`RobotGait` ones (longer reach for stairs
            and stones, larger height changes).
        max_climb: largest height change of one foot from foothold to foothold, m (one riser: a
            step-to gait on stairs).
        distance: how far the scenes are walked, m.
        single_support, double_support: the timings over terrain, s (None: the robot's :class:`RobotGait`).
        rough_contact_kp: the stance feet's pose-feedback stiffness on a height field, 1/s²: a sole
            on a curved patch rests on three or four of its corners (in MuJoCo: the corner spheres
            of :data:`wbc.sim.mujoco.SOLE_CORNER_RADIUS`), and a stiff pull towards its landing pose
            rocks it onto two (measured on the ±2 cm field: Talos walks at 300 and at
            :data:`CONTACT_KP`; G1 walks at 600 and 1000, falls after 10 steps at 2000 and after 3 at
            :data:`CONTACT_KP`, its left foot standing on two corners).
    """

    size: loco.TerrainSize
    step_length: float
    limits: dict
    max_climb: float
    distance: float
    single_support: float | None = None
    double_support: float | None = None
    rough_contact_kp: float = 300.0


#: Terrain settings per catalog robot: Talos climbs 15 cm risers, G1 10 cm (issue 28).
TERRAIN_GAITS = {
    "talos": TerrainGait(
        loco.TerrainSize(riser=0.15, tread=0.3, stone=(0.26, 0.2), stone_pitch=0.34, lane=0.17),
        0.25,
        dict(max_forward=0.36, max_height=0.16),
        0.16,
        2.6,
    ),
    "g1": TerrainGait(
        loco.TerrainSize(riser=0.1, tread=0.25, stone=(0.22, 0.12), stone_pitch=0.28, lane=0.237),
        0.15,
        dict(max_forward=0.3, max_height=0.11),
        0.11,
        2.4,
        1.0,
        0.3,
        1000.0,
    ),
}

#: Pose-feedback stiffness of the stance feet (1/s²; damping 2 √kp), as the balance demo's (on rough
#: ground: :attr:`TerrainGait.rough_contact_kp`).
CONTACT_KP = 3000.0
#: The online step adjustment leaves the plan alone while the measured DCM is this close to the
#: planned one (m): the multibody robot departs from the LIPM by a few cm while walking (G1: up to
#: 5 cm), which is the stabilizer's job; re-planning for it makes the steps erratic.
DCM_TOLERANCE = 0.06


#: Crossover steps: how far past the stance foot a crossing foot may land (stance widths) ...
MAX_CROSS = 1.5
#: ... with this forward reach (m: ahead of the stance sole, so longer than the usual reach) ...
CROSS_REACH = 0.4
#: ... after a weight transfer this short (s: pushed toward the stance foot, it is loaded already) ...
CROSS_TRANSFER = 0.05
#: ... swinging at least this long (s: Talos's crossing foot planned for 0.3 s lagged its reference
#: by up to 0.2 m and landed 0.21 s late, pushed 540 N sideways) ...
CROSS_MIN_SWING = 0.4
#: ... planned for a centre of pressure this far inside the stance sole (m: a foot pushed to its edge
#: rolls; the step lands farther out instead) ...
CROSS_ZMP_MARGIN = 0.045
#: ... re-planned as soon as the DCM departs from the plan by this much (m: a step planned during
#: the push is corrected once it ends) ...
CROSS_DCM_TOLERANCE = 0.02
#: ... the swing ending with this downward speed (m/s), so that a lagging foot still strikes on time ...
CROSS_TOUCHDOWN_SPEED = 0.2
#: ... the crossing foot landing turned toe in (:attr:`RobotGait.cross_yaw`), with no closing step
#: right after it; the pelvis yaw compliant while the crossing leg swings and this long after it
#: lands (s), with these gains (1/s², 1/s): held at the orientation task's own gains, G1's crossing
#: foot hovered 3-5 cm above the floor until the late-touchdown limit ...
CROSS_YAW_HOLD = 1.0
CROSS_YAW_GAINS = (4.0, 4.0)
#: ... a recovery step's touchdown loaded at once (force rise, s: over the double support the weight
#: stayed on the stance foot while the DCM ran on) ...
CROSS_RISE = 0.02
#: ... and, still standing crossed this long after it landed (s), the other foot steps beside the
#: crossed one after a weight transfer this long (s), the robot ending turned toward the push (left
#: crossed, G1 drifted off within seconds, its stance leg at its joint limits) ...
CROSS_UNCROSS = (0.5, 0.4)
#: ... any recovery step taken only once the DCM is this far outside the feet (m): Talos pushed
#: 520 N sideways standing holds it by its hip strategy, the DCM at most 6.4 mm outside; a crossing
#: step taken at once (at 0) fell at 2.31 s ...
CROSS_TRIGGER = 0.01
#: ... and the legs' collision capsules kept this far apart (m) from the release of a foot on ...
LEG_MARGIN = 0.01
#: ... by a barrier of this gain (1/s, ``λ`` of :class:`wbc.SelfCollisionLimit`) ...
LEG_GAIN = 20.0
#: ... and this far while both feet are planted (m): planted feet do not cross, and the barrier at
#: :data:`LEG_MARGIN` made the QP infeasible while a lateral push moved the pelvis (the legs'
#: capsules 1.8 cm apart approaching: measured at 540 N, from 0.06 s into the push) and its
#: fallback softened the contacts, unloading both feet (to 6 and 8 N) before the crossing step ...
STANCE_LEG_MARGIN = 0.0
#: ... with this gain (1/s): at :data:`LEG_GAIN` the barrier held the hip strategy back (pushed
#: 520 N sideways, standing Talos with the legs' limit fell at 2.95 s without a step, and held the
#: push without the limit; 540 N: fell at 2.61 s instead of 2.90 s); at this gain it holds 520 N
#: and falls at 2.89 s at 540 N, and the barrier at :data:`LEG_MARGIN` from the release has the
#: legs 1 cm apart at the lift-off (every step solved as posed until then).
STANCE_LEG_GAIN = 100.0
#: The legs' links checked against each other: the last this many joints of each leg (thigh, shin,
#: ankle, foot) ...
LEG_LINKS = 4
#: ... the pairs at least this much farther apart than the margin standing ...
LEG_CLEARANCE = 0.01
#: ... (capsules overlapping standing shrink by at most this share of their radius) ...
LEG_SHRINK = 0.4
#: ... at most this many, nearest first.
MAX_LEG_PAIRS = 12


def leg_links(robot: LeggedRobot) -> tuple[frozenset[str], frozenset[str]]:
    """The links (URDF names) of each leg's last :data:`LEG_LINKS` joints before its foot, first foot's
    leg first: the links whose collisions the crossover walker watches."""
    model = robot.model
    chains = []
    for foot in robot.feet[0:2]:
        joint, chain = model.frames[model.frame_id(foot)].joint, list[str]()
        while joint > 1 and len(chain) < LEG_LINKS:  # joint 1 is the free flyer
            chain.append(model.joints[joint].link)
            joint = model.parents[joint]
        chains.append(frozenset(chain))
    return chains[0], chains[1]


def leg_collision_pairs(robot: LeggedRobot) -> list:
    """The collision pairs (:class:`wbc.CollisionPair`) between one leg's and the other's lower links
    (the last :data:`LEG_LINKS` joints before each foot), from the robot's URDF collision geometry:
    at least :data:`LEG_MARGIN` + :data:`LEG_CLEARANCE` apart standing (``q0``; closer pairs' radii
    shrink by up to :data:`LEG_SHRINK`), the :data:`MAX_LEG_PAIRS` nearest.

    Raises:
        ModelError: the URDF has no collision primitives on those links.
    """
    from wbc.control.limits import collision_primitives
    from wbc.control.limits.collision import pair_distances

    model = robot.model
    chains = leg_links(robot)
    prims = collision_primitives(model, robot.urdf)
    legs = [[p for p in prims if p.frame in chain] for chain in chains]
    if not legs[0] or not legs[1]:
        raise wbc.ModelError(f"robot {robot.name!r}: no collision primitives on its legs' links {sorted(chains[0])}")
    pairs = [wbc.CollisionPair(a, b) for a in legs[0] for b in legs[1]]
    # Pairs closer than the margin standing would push the legs apart from the start: capsules
    # fitted around the meshes (Talos's) overlap there. Each such pair's radii shrink (equally, by
    # at most LEG_SHRINK of the smaller) to leave the clearance; pairs that would need more are left
    # out, as propose_pairs does.
    d = pair_distances(model, robot.q0, pairs)
    kept = []
    for k in np.argsort(d):
        pair, short = pairs[k], LEG_MARGIN + LEG_CLEARANCE - d[k]
        if short > 0:
            if short / 2 > LEG_SHRINK * min(pair.first.radius, pair.second.radius):
                continue
            pair = wbc.CollisionPair(
                *(dataclasses.replace(p, radius=p.radius - short / 2) for p in (pair.first, pair.second))
            )
        kept.append(pair)
    return kept[:MAX_LEG_PAIRS]


def terrain_gait_of(robot: LeggedRobot) -> TerrainGait:
    """The terrain settings of ``robot`` (:data:`TERRAIN_GAITS`).

    Raises:
        ModelError: none for it, naming the robot and the robots that have them.
    """
    try:
        return TERRAIN_GAITS[robot.name]
    except KeyError:
        raise wbc.ModelError(
            f"robot {robot.name!r} has no terrain settings "
            f"(wbc.sim.walking.TERRAIN_GAITS has {', '.join(TERRAIN_GAITS)})"
        ) from None


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


class Walker:
    """The simulator, the controller, the gait and the per-step bookkeeping of one run.

    Args:
        robot: a catalog name (``"talos"``, ``"g1"``) or a :class:`~wbc.sim.catalog.LeggedRobot` on
            soles with :data:`GAITS` settings under its name.
        k_dcm: DCM error decay rate of the stabilizer, 1/s (default the gait's, :class:`RobotGait`).
        swing_kp: stiffness of the swing-foot frame tasks, 1/s² (default the robot's :class:`RobotGait`).
        adjust: re-solve the next step's location and timing online from the measured DCM.
        rise: duration of the touchdown force rise, s (default the double support).
        dcm_tolerance: DCM error (m) beyond which the next step is re-planned (with ``adjust``).
        contact_kp: pose-feedback stiffness of the stance feet, 1/s² (default :data:`CONTACT_KP`, on a
            height field the robot's :attr:`TerrainGait.rough_contact_kp`).
        clip_zmp: the CoM acceleration realizes the stabilizer's ZMP clipped to the support polygon
            (LIPM-feasible); False: the feedback law's unclipped ZMP, left to the QP's CoP limits.
        gait: timings, lift and step limits (default the robot's :data:`GAITS` entry).
        terrain: the ground (a :class:`wbc.locomotion.terrain.Terrain`, or a
            :class:`~wbc.locomotion.terrain.TerrainKind` sized by :data:`TERRAIN_GAITS`); None: the
            flat floor. Landed feet are held on the surface under them (its height and normal).
        crossover: recovery steps may cross over in front of the stance foot (``max_cross`` of
            :data:`MAX_CROSS` stance widths; forward reach :data:`CROSS_REACH`; weight transfer
            :data:`CROSS_TRANSFER`; swings of at least :data:`CROSS_MIN_SWING` landing at
            :data:`CROSS_TOUCHDOWN_SPEED`; planned once the DCM is :data:`CROSS_TRIGGER` outside the
            feet; landing turned :attr:`RobotGait.cross_yaw` toe in, the robot then standing on its
            crossed feet), with the legs kept :data:`LEG_MARGIN` apart (from a foot's release) by a
            :class:`wbc.SelfCollisionLimit` on their collision capsules (:func:`leg_collision_pairs`);
            the pelvis yaw compliant (:data:`CROSS_YAW_GAINS`) while a crossing leg swings and
            :data:`CROSS_YAW_HOLD` after it lands, recovery steps loaded at once on touchdown
            (:data:`CROSS_RISE`), the standing plan after the crossing re-made from the measured
            state where it lands, the legs uncrossed by a step of the other foot
            (:data:`CROSS_UNCROSS`).
        recovery_tolerance: take a recovery step whose plan leaves at most this much of the DCM
            uncaptured, m (:class:`wbc.locomotion.GaitSequencer`).
        faults: model errors, sensor noise, latency, actuator limits (:mod:`wbc.sim.faults`): the
            controller and the CoM estimate of the stabilizer see the faulty robot.
    """

    def __init__(
        self,
        robot: str | LeggedRobot,
        k_dcm: float | None = None,
        swing_kp: float | None = None,
        adjust: bool = False,
        rise: float | None = None,
        com_weight: float = 10.0,
        swing_weight: float = 10.0,
        contact_kp: float | None = None,
        dcm_tolerance: float = DCM_TOLERANCE,
        clip_zmp: bool = True,
        gait: RobotGait | None = None,
        terrain: loco.Terrain | loco.TerrainKind | str | None = None,
        crossover: bool = False,
        recovery_tolerance: float = 0.0,
        faults: Faults | None = None,
    ) -> None:
        self.spec = spec = catalog.legged_robot(robot, "walk")
        self.robot = spec.name
        self.model = model = spec.model
        if spec.sole is None:
            raise wbc.ModelError(f"robot {spec.name!r} cannot walk: the walking controller needs soles, not point feet")
        gait = gait_of(spec) if gait is None else gait
        if not isinstance(gait, RobotGait):
            raise wbc.InputError(f"gait must be a wbc.sim.walking.RobotGait, got {type(gait).__name__}")
        self.gait = gait
        tasks = catalog.tasks()
        if terrain is not None and not isinstance(terrain, loco.Terrain):
            terrain = loco.make_terrain(terrain, terrain_gait_of(spec).size)
        self.terrain: loco.Terrain | None = terrain
        boxes = [(f, spec.sole.length, spec.sole.width) for f in spec.feet]
        if terrain is None:
            self.sim = MujocoSim(model, boxes)
        else:
            self.sim = MujocoSim(model, boxes, floor=False, scene=terrain_scene(terrain))
        self.sim.reset(spec.q0)
        self.faults = inject(faults, self.sim, model, dict(getattr(spec, "locked", ())))
        if self.faults is not None:  # the controller's model and sensors, the motors (wbc.sim.injection)
            self.sim, model = self.faults.sim, self.faults.controller_model
        self.frame = {loco.Foot.LEFT: spec.feet[0], loco.Foot.RIGHT: spec.feet[1]}
        self.contacts = {
            f: wbc.SurfaceContact(frame, spec.sole.length, spec.sole.width, mu=0.7, kp=self._contact_kp(contact_kp))
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
        limits = None
        self.legs_limit: wbc.SelfCollisionLimit | None = None
        self._clearance = None
        if crossover:  # the default limits and the legs kept apart
            self.leg_pairs = leg_collision_pairs(spec)
            self.legs_limit = wbc.SelfCollisionLimit(self.leg_pairs, margin=LEG_MARGIN, gain=LEG_GAIN, name="legs")
            limits = [wbc.TorqueLimit(), wbc.JointPositionLimit(), wbc.JointVelocityLimit(), self.legs_limit]
        self.controller = wbc.WholeBodyController(model, all_tasks, list(self.contacts.values()), limits=limits)
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
            crouch=gait.crouch,
        )
        self.limits = loco.StepLimits(**gait.limits)
        transfer, zmp_margin, min_cross_swing, cross_trigger = 0.1, 0.02, 0.0, 0.0
        cross_yaw = 0.0
        self.crossover = crossover
        if crossover:  # wider reach, a quicker lift-off, and feet that strike the ground on time
            self.limits = self.limits.scaled(max_cross=MAX_CROSS * self.limits.width, max_forward=CROSS_REACH)
            self.params = dataclasses.replace(self.params, touchdown_velocity=CROSS_TOUCHDOWN_SPEED)
            transfer, zmp_margin, min_cross_swing = CROSS_TRANSFER, CROSS_ZMP_MARGIN, CROSS_MIN_SWING
            cross_trigger, cross_yaw = CROSS_TRIGGER, gait.cross_yaw
            dcm_tolerance = min(dcm_tolerance, CROSS_DCM_TOLERANCE)
        self.rise = self.params.double_support if rise is None else rise
        self.stabilizer = loco.DCMStabilizer(k_dcm=gait.k_dcm if k_dcm is None else k_dcm, margin=0.01)
        self.planner = loco.CaptureStepPlanner(
            self.params,
            self.shape,
            self.limits,
            dcm_tolerance=dcm_tolerance,
            transfer=transfer,
            zmp_margin=zmp_margin,
            min_cross_swing=min_cross_swing,
            cross_trigger=cross_trigger,
            cross_yaw=cross_yaw,
            close_crossing=not crossover,
        )
        self.adjust = adjust
        self.clip_zmp = clip_zmp
        self.recovery_tolerance = recovery_tolerance
        self.com0, _ = self._com()
        self.feet0 = self.footholds()
        self.timeline = loco.plan_stand(self.feet0, self.com0, self.params, self.shape)
        self.plan: loco.FootstepPlan | None = None

    def _contact_kp(self, given: float | None) -> float:
        """The stance feet's pose-feedback stiffness: ``given``, else on a height field the robot's
        :attr:`TerrainGait.rough_contact_kp`, else :data:`CONTACT_KP`."""
        if given is not None:
            return float(given)
        if self.terrain is not None and self.terrain.heightfield is not None:
            return terrain_gait_of(self.spec).rough_contact_kp
        return CONTACT_KP

    # ------------------------------------------------------------------------------ plans
    def footholds(self) -> dict:
        """Where the soles stand now (ground height 0)."""
        return {f: flat_foothold(f, self.sim.frame_placement(frame)) for f, frame in self.frame.items()}

    def foothold(self, foot: loco.Foot, pose: np.ndarray) -> loco.Footstep:
        """Where a sole at ``pose`` (4, 4) stands: on the terrain's surface under it (flat ground:
        height 0), with its measured x, y and yaw."""
        if self.terrain is not None:
            fs = self.terrain.landing(foot, pose, self.shape)
            if fs is not None:
                return fs
        return flat_foothold(foot, pose)

    def walk_terrain(self, distance: float | None = None, t0: float = 0.0) -> loco.GaitTimeline:
        """Plan a walk straight ahead over :attr:`terrain` (``distance`` m, default the robot's
        :class:`TerrainGait`): footholds on its surfaces (:func:`wbc.locomotion.plan_on_terrain`), swings
        clearing it, the DCM plan over the footholds' heights (the 3D DCM's VRP follows them)."""
        tg = terrain_gait_of(self.spec)
        terrain = self.terrain if self.terrain is not None else loco.make_terrain(loco.TerrainKind.FLAT)
        limits = self.limits.scaled(**tg.limits)
        params = self.params
        if tg.single_support is not None:
            params = dataclasses.replace(params, single_support=tg.single_support)
        if tg.double_support is not None:
            params = dataclasses.replace(params, double_support=tg.double_support)
        # the CoM height follows the lower foot, changing in the phases the legs allow (CoMHeight)
        self.params = dataclasses.replace(params, com_height=loco.CoMHeight.LOWER_FOOT)
        self.plan = loco.plan_on_terrain(
            terrain,
            self.feet0[loco.Foot.LEFT],
            self.feet0[loco.Foot.RIGHT],
            tg.distance if distance is None else distance,
            tg.step_length,
            limits,
            self.shape,
            tg.max_climb,
        )
        self.timeline = loco.plan_walk(self.plan, self.com0, self.params, self.shape, t0, terrain=terrain)
        return self.timeline

    def walk(self, command, n_steps: int, t0: float = 0.0) -> loco.GaitTimeline:
        """Plan ``n_steps`` steps of the velocity ``command`` (vx, vy, yaw rate) from rest at ``t0``, on
        flat ground at z = 0 (a walker on stairs, a slope, rough ground or stones plans with
        :meth:`walk_terrain`). The command is clamped to the step limits
        (:func:`wbc.locomotion.plan_from_velocity`; ``plan.command`` is what is walked).

        Raises:
            InputError: the walker's terrain is not flat, naming it.
        """
        terrain = self.terrain
        if terrain is not None and (terrain.patches or terrain.heightfield is not None):
            kind = terrain.kind.value if terrain.kind is not None else "a custom terrain"
            raise wbc.InputError(
                f"walk() plans on flat ground, and this walker stands on {kind!r}: plan with walk_terrain()"
            )
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

    # ------------------------------------------------------------------------------ the loop
    @staticmethod
    def _pelvis_height(q: np.ndarray, s: loco.Sensing) -> float:
        """The pelvis height above the lower sole, m (a fall is this dropping below 70 % of its start)."""
        return float(q[2] - min(pose[2, 3] for pose in s.soles.values()))

    def sensing(self, t: float) -> loco.Sensing:
        """What the gait sequencer needs from MuJoCo at the current state: CoM state, sole poses
        and sole normal forces."""
        com, vel = self._com()
        forces = self.sim.normal_forces()
        soles = {f: self.sim.frame_placement(frame) for f, frame in self.frame.items()}
        return loco.Sensing(t, com, vel, soles, {f: forces[frame] for f, frame in self.frame.items()})

    def sequencer(self, recover: bool = False) -> loco.GaitSequencer:
        """A fresh :class:`~wbc.locomotion.GaitSequencer` over :attr:`timeline` and this walker's
        controller, tasks, stabilizer and planner."""
        return loco.GaitSequencer(
            self.controller,
            self.contacts,
            self.foot_tasks,
            self.com_task,
            self.orientation,
            self.timeline,
            self.params,
            self.shape,
            self.stabilizer,
            self.planner,
            self.weight,
            self.rise,
            self.swing_weight,
            adjust=self.adjust,
            recover=recover,
            clip_zmp=self.clip_zmp,
            foothold=self.foothold,
            recovery_tolerance=self.recovery_tolerance,
            recovery_rise=CROSS_RISE if self.crossover else None,
            crossing_yaw_gains=CROSS_YAW_GAINS if self.crossover else None,
            crossing_yaw_hold=CROSS_YAW_HOLD,
            uncross=CROSS_UNCROSS if self.crossover else None,
            replan_crossed=self.crossover,
        )

    def run(
        self,
        duration: float,
        pushes: Sequence = (),
        recover: bool = False,
        progress: bool = True,
        replay=None,
        on_step=None,
    ) -> dict:
        """Simulate ``duration`` s following :attr:`timeline`; returns the log (arrays over time, one
        row per control step whose simulator step succeeded: all of the same length) and ``fell``
        (the pelvis sank below 70 % of its start height, or the simulation diverged: then
        ``diverged`` holds MuJoCo's message, else None).

        Each control step senses MuJoCo (:meth:`sensing`), lets the gait sequencer
        (:meth:`sequencer`: re-plans, contact switches, stabilizer, task targets) update the
        controller, solves it, applies the torques and any pushes, and steps MuJoCo. The controller is
        warmed up at the initial state right before the loop
        (:meth:`~wbc.WholeBodyController.warm_up`): the first step costs what a step costs. A walker
        that keeps its legs apart (crossover steps) also measures, every 10 ms, how near its legs
        come on their own collision geometry (``legs_clearance``: the nearest
        :class:`~wbc.sim.leg_clearance.Clearance` of the run, MuJoCo's distance, not the capsules').

        Args:
            pushes: ``(time s, force (3,) N, duration s)`` on the pelvis.
            recover: standing, take a recovery step when the capture point leaves the support
                polygon (see :meth:`wbc.locomotion.CaptureStepPlanner.recovery`) and a step within the
                step limits captures it (a lateral push toward a loaded foot needs a crossing step,
                which the limits exclude: the robot then stays on both feet).
            replay: a :class:`wbc.viz.Replay` to record into (about 30 frames per second).
            on_step: called as ``on_step(q, v, cmd)`` after every control step (tests check each step).
        """
        wbc.checks.positive(duration, "run: duration (s)")
        sim, ctrl = self.sim, self.controller
        steps = int(round(duration / DT))
        log = _Log()
        seq = self.sequencer(recover)
        seq.anchor.update({f: sim.frame_placement(frame)[0:2, 3].copy() for f, frame in self.frame.items()})
        slip = 0.0
        fell = False
        diverged: str | None = None
        z0 = self._pelvis_height(sim.get_state()[0], self.sensing(0.0))
        clearance = self._leg_clearance()
        nearest = None
        yaw_prev, yaw_total = None, 0.0
        pending = sorted(_checked_pushes(pushes), key=lambda push: push[0])
        bar = tqdm(total=steps, unit="step", disable=not (progress and sys.stderr.isatty()))
        ctrl.warm_up(*sim.get_state())  # last before the loop: its first step costs what a step costs
        for i in range(steps):
            t = i * DT
            q, v = sim.get_state()
            s = self.sensing(t)
            out = seq.update(s, DT)
            if self.legs_limit is not None:  # see STANCE_LEG_MARGIN, STANCE_LEG_GAIN
                standing = all(p is FootPhase.STANCE for p in seq.phase.values())
                if standing:
                    self.legs_limit.set(margin=STANCE_LEG_MARGIN, gain=STANCE_LEG_GAIN)
                else:
                    self.legs_limit.set(margin=LEG_MARGIN, gain=LEG_GAIN)
            if i % 10 == 0:
                if clearance is not None:
                    c = clearance(q)
                    nearest = c if nearest is None or c.distance < nearest.distance else nearest
                for f, frame in self.frame.items():
                    if seq.phase[f] is not FootPhase.SWING:
                        moved = sim.frame_placement(frame)[0:2, 3] - seq.anchor[f]
                        slip = max(slip, float(np.linalg.norm(moved)))
            clock = time.perf_counter()
            cmd = ctrl.step(q, v)
            step_us = (time.perf_counter() - clock) * 1e6
            if on_step is not None:
                on_step(q, v, cmd)
            sim.set_torques(cmd.tau)
            while pending and pending[0][0] <= t:
                _, force, length = pending.pop(0)
                sim.apply_push(self.base, np.asarray(force, float), length)
            try:
                sim.step()
            except wbc.SimulationDiverged as exc:  # a fall: this step is not logged (no state after it)
                fell, diverged = True, str(exc)
                break
            yaw = _yaw(q)
            if yaw_prev is not None:
                yaw_total += math.remainder(yaw - yaw_prev, 2 * math.pi)
            yaw_prev = yaw
            log.add(self, s, out, cmd, q, step_us, yaw_total)
            if replay is not None and i % 33 == 0:
                from wbc.viz import contact_arrows

                arrows = contact_arrows(self.model, q, ctrl.contacts, cmd.forces)
                active = {
                    f"push {k}": (q[0:3], np.asarray(f, float))
                    for k, (tp, f, d) in enumerate(pushes)
                    if tp <= t < tp + d
                }
                replay.add(t, q, arrows, active)
            if self._pelvis_height(q, s) < 0.7 * z0:
                fell = True
                break
            bar.update(1)
        bar.close()
        self.timeline = seq.timeline
        run = log.arrays()
        touchdowns = [(d.t, d.foot.value, d.landed, d.planned, d.early) for d in seq.touchdowns]
        run.update(
            fell=fell,
            diverged=diverged,
            slip=slip,
            touchdowns=touchdowns,
            recoveries=seq.recoveries,
            declined=seq.declined,
            base_z0=z0,
            late_touchdowns=sum(1 for d in seq.touchdowns if d.late > 0),
            legs_clearance=nearest,
        )
        return run

    def _leg_clearance(self):
        """The legs' clearance on their own collision geometry (:class:`wbc.sim.leg_clearance.LegClearance`)
        for a walker that keeps its legs apart (crossover steps), else None; built once."""
        if self.legs_limit is None:
            return None
        if self._clearance is None:
            from .leg_clearance import LegClearance

            self._clearance = LegClearance(self.spec)
        return self._clearance


class _Log:
    """The per-step log of :meth:`Walker.run`: lists that become arrays over time."""

    KEYS = (
        "t",
        "com",
        "com_ref",
        "dcm",
        "dcm_ref",
        "zmp_ref",
        "zmp_cmd",
        "normal_sim",
        "normal_cmd",
        "tau",
        "status",
        "base_z",  # pelvis height above the lower sole
        "step_us",
        "walking",
        "yaw",
        "sat",
        "phase",
        "soles",
    )

    def __init__(self) -> None:
        self.lists: dict = {k: [] for k in self.KEYS}

    def add(self, walker: Walker, s: loco.Sensing, out: loco.SequencerStep, cmd, q, step_us: float, yaw: float):
        ref, stab, phase = out.reference, out.stabilizer, out.phase
        row = {
            "t": s.t,
            "com": s.com,
            "com_ref": ref.com,
            "dcm": stab.dcm,
            "dcm_ref": ref.dcm,
            "zmp_ref": ref.zmp,
            "zmp_cmd": stab.zmp,
            "normal_sim": [s.normal_forces[f] for f in loco.Foot],
            "normal_cmd": [walker.contacts[f].normal_force(cmd.forces[walker.contacts[f].name]) for f in loco.Foot],
            "tau": cmd.tau,
            "status": cmd.status is wbc.StepStatus.OPTIMAL,
            "base_z": walker._pelvis_height(q, s),
            "step_us": step_us,
            "walking": any(p is not FootPhase.STANCE for p in phase.values()),
            "yaw": yaw,
            "sat": stab.saturated,
            "phase": [list(FootPhase).index(phase[f]) for f in loco.Foot],
            "soles": [s.soles[f][0:3, 3] for f in loco.Foot],
        }
        for k, value in row.items():
            self.lists[k].append(value)

    def arrays(self) -> dict:
        return {k: np.asarray(v) for k, v in self.lists.items()}


def _yaw(q: np.ndarray) -> float:
    x, y, z, w = q[3:7]
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def _height_gained(run: dict, weight: float, lowest: bool = False) -> float:
    """The highest height (m) a standing sole reached above the soles' mean height at the start
    (``lowest``: how far below it the lowest one stood, m). A sole stands while its contact is
    enforced (stance) and it carries at least :data:`TOUCHDOWN_LOAD` of the ``weight`` (N): a foot
    flung up by a fall, its contact still enforced, does not count."""
    z, phase = run["soles"][:, :, 2], run["phase"]
    if not len(z):
        return 0.0
    standing = (phase == list(FootPhase).index(FootPhase.STANCE)) & (run["normal_sim"] >= TOUCHDOWN_LOAD * weight)
    if not standing.any():
        return 0.0
    if lowest:
        return float(np.mean(z[0]) - np.min(np.where(standing, z, np.inf)))
    return float(np.max(np.where(standing, z, -np.inf)) - np.mean(z[0]))


def summarize(walker: Walker, run: dict, command=None) -> dict:
    """Distance (forward, sideways, in the start's heading frame), turn, average speed (over the walk)
    and cruise speed (forward, over the whole gait cycles between the third and the last-but-one
    steps' lift-offs: the walk without its start and stop), fell (and whether by a diverged
    simulation), max foot slip, failed steps, footstep errors, height gained (the highest
    height a loaded stance sole reached above the start), the control-step time walking vs standing,
    and, for a walker that keeps its legs apart, the nearest its legs' collision elements came (m,
    negative: overlapping) and their links.

    Raises:
        InputError: the per-step arrays of ``run`` differ in length.
    """
    t = run["t"]
    lengths = {k: len(run[k]) for k in _Log.KEYS if k in run}
    if len(set(lengths.values())) > 1:
        raise wbc.InputError(f"walking log with per-step arrays of different lengths: {lengths}")
    diverged = run.get("diverged") is not None
    if len(t) == 0:
        return {"robot": walker.robot, "fell": True, "diverged": diverged, "steps": 0, "height_gained_m": 0.0}
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
    legs = run.get("legs_clearance")
    cruise = None
    steps = walker.timeline.steps
    if len(steps) >= 6:  # whole cycles in the middle of the walk: from step 2's lift-off to step n-2's
        t0, t1 = steps[2].liftoff, steps[len(steps) - 2].liftoff
        i0, i1 = np.searchsorted(t, t0), np.searchsorted(t, t1)
        if i1 < len(t) and t1 > t0:
            dd = com[i1, 0:2] - com[i0, 0:2]
            cruise = round(float(c * dd[0] + s * dd[1]) / float(t[i1] - t[i0]), 4)
    return {
        "robot": walker.robot,
        "command": None if command is None else [float(x) for x in command],
        "fell": bool(run["fell"]),
        "diverged": diverged,
        "duration_s": round(float(t[-1] + DT), 3),
        "forward_m": round(float(forward), 4),
        "lateral_m": round(float(lateral), 4),
        "distance_m": round(distance, 4),
        "turn_deg": round(math.degrees(float(run["yaw"][-1])), 2),
        "planned_displacement_m": plan_target,
        "walking_time_s": round(walk_time, 3),
        "average_speed_m_s": round(distance / walk_time, 4) if walk_time > 0 else 0.0,
        "cruise_speed_m_s": cruise,
        "footsteps": len(run["touchdowns"]),
        "touchdowns_detected_early": sum(1 for *_, early in run["touchdowns"] if early),
        "touchdowns_late": int(run.get("late_touchdowns", 0)),
        "max_footstep_error_m": round(max(errors), 4) if errors else 0.0,
        "max_foot_slip_m": round(float(run["slip"]), 5),
        "failed_steps": int(np.sum(~run["status"])),
        "min_pelvis_height_ratio": round(float(np.min(run["base_z"]) / run["base_z0"]), 4),
        "height_gained_m": round(_height_gained(run, walker.weight), 4) + 0.0,  # not -0.0
        "height_descended_m": round(_height_gained(run, walker.weight, lowest=True), 4) + 0.0,
        "max_dcm_error_m": round(float(np.max(np.linalg.norm((run["dcm"] - run["dcm_ref"])[:, 0:2], axis=1))), 4),
        "stabilizer_saturated_steps": int(np.sum(run["sat"])),
        "recovery_steps": run["recoveries"],
        "recovery_steps_declined": int(run["declined"]),
        "step_us_median_standing": None if stand_us is None else round(stand_us, 1),
        "step_us_median_walking": None if walk_us is None else round(walk_us, 1),
        "step_time_ratio_walking_to_standing": round(walk_us / stand_us, 3) if stand_us and walk_us else None,
        "legs_min_distance_m": None if legs is None else round(legs.distance, 4),
        "legs_nearest_links": None if legs is None else list(legs.links),
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
    crossover: bool = False,
    recovery_tolerance: float = 0.0,
    clip_zmp: bool = False,
    faults: Faults | None = None,
):
    """Stand, push the pelvis with ``force`` (3,) N over ``push_length`` s at ``push_time``, recover
    by stepping when the capture point leaves the feet (unless ``recover`` is False); returns
    ``(walker, run, summary)``.

    Standing, the DCM feedback is stiff (:data:`STANDING_K_DCM`) and its CoM acceleration is not
    clipped to the support polygon: the QP's centre-of-pressure limits bound what the feet give and
    the rest comes from the upper body's angular momentum (the hip strategy), as in the balance demo.
    """
    walker = Walker(
        robot,
        adjust=True,
        k_dcm=STANDING_K_DCM,
        clip_zmp=clip_zmp,
        crossover=crossover,
        recovery_tolerance=recovery_tolerance,
        faults=faults,
    )
    pushes = [(push_time, np.asarray(force, float), push_length)]
    run = walker.run(duration, pushes=pushes, recover=recover, progress=False)
    return walker, run, summarize(walker, run)


#: Crossover steps leaving at most this much (m) of the DCM uncaptured are taken in
#: :func:`lateral_push_with_and_without_crossover`: the rest is the hip strategy's.
LATERAL_TOLERANCE = 0.1


def lateral_push_with_and_without_crossover(
    robot: str | LeggedRobot,
    force: float,
    duration: float = 5.0,
    tolerance: float = LATERAL_TOLERANCE,
    push_time: float = 1.0,
) -> dict:
    """The standing robot pushed toward its right (``force`` N over 0.1 s at ``push_time`` s), once as
    today (recovery steps within the step limits, taken when they capture the DCM; else the hip
    strategy) and once with crossover steps (the crossover walker of :class:`Walker`), taken when
    they capture it to within ``tolerance`` m (the rest left to the hip strategy); returns
    ``{"without_crossover": (walker, run, summary), "with_crossover": (...)}``, ``duration`` s each.
    Pushed toward its right, the robot's right foot carries the weight and cannot lift in time: only
    the left foot can step, across the right one (G1 survives most pushes of 224-245 N this way:
    see the README and :mod:`wbc.sim.crossover_map`)."""
    out = {}
    for crossover in (False, True):
        out["with_crossover" if crossover else "without_crossover"] = stand_and_push(
            robot,
            (0.0, -float(force), 0.0),
            push_time=push_time,
            duration=duration,
            crossover=crossover,
            recovery_tolerance=tolerance if crossover else 0.0,
        )
    return out


def _checked_pushes(pushes: Sequence) -> list[tuple[float, np.ndarray, float]]:
    """``pushes`` as ``(time s, force (3,) N, duration s)``, checked before the run starts (not when
    each one's time comes); an InputError naming the push otherwise."""
    out = []
    for k, push in enumerate(pushes):
        try:
            t, force, length = push
        except (TypeError, ValueError):
            raise wbc.InputError(f"push {k}: expected (time s, force (3,) N, duration s), got {push!r}") from None
        if wbc.checks.finite_number(t, f"push {k}'s time (s)") < 0:
            raise wbc.InputError(f"push {k}'s time (s) must be ≥ 0, got {t!r}")
        out.append(
            (
                float(t),
                wbc.checks.vector(force, 3, f"push {k}'s force"),
                wbc.checks.positive(length, f"push {k}'s duration (s)"),
            )
        )
    return out
