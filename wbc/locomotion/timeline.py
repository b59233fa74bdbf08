"""The gait timeline: contact phases, the centroidal (CoM / DCM / ZMP) reference and the swing feet,
queryable at any time.

A :class:`GaitTimeline` is built from the feet's footholds, a list of :class:`TimedStep` (foothold,
lift-off and touchdown times) and the CoM. Between two steps both feet are in contact (double
support); from lift-off to touchdown the swing foot follows a :class:`~wbc.locomotion.swing.SwingTrajectory`
and the other foot carries the robot (single support). After the last touchdown the robot comes to
rest over the middle of its feet and stays there.

**ZMP plan** (piecewise linear, see :mod:`wbc.locomotion.dcm` for the DCM that follows from it):

- in single support the ZMP moves inside the stance sole from ``zmp_heel_toe[0]`` to
  ``zmp_heel_toe[1]`` (sole-frame x, m; both 0: it stays at the sole's centre), offset by
  ``zmp_inward`` towards the other foot;
- in double support it moves in a straight line from where it was in the last stance sole to
  where it starts in the next one: it is inside the convex hull of the two soles throughout;
- after the last touchdown it moves to the midpoint of the feet in ``final_double_support`` s.

**Starting from rest** (:func:`plan_walk`): a plan's DCM at its start is fixed by its ZMP knots, and
the robot starts at rest (``ξ = c``). The initial double support therefore gets one more ZMP knot,
halfway through it, solved (the map is affine) so that the planned DCM at the start is exactly the
initial CoM: the ZMP first moves *away* from the first stance foot, which is what pushes the CoM
towards it, then moves under it. The solved knot is checked to lie inside the support polygon (a
too short initial double support raises :class:`~wbc.errors.InputError`). The recovery planner
(:mod:`wbc.locomotion.recovery`) solves a foothold instead, for a plan that starts from a measured,
moving state.

Times are absolute (s, the controller's clock); queries before the start are clamped to it.
"""

from __future__ import annotations

import bisect
import dataclasses
import enum
import math
from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import InputError
from . import polygon as _polygon
from .dcm import GRAVITY, DCMTrajectory, PiecewiseLinearZMP, dcm_of, omega_of_height
from .footsteps import Foot, FootShape, Footstep, FootstepPlan, support_polygon
from .swing import SwingState, SwingTrajectory

__all__ = [
    "CoMHeight",
    "GaitParameters",
    "PhaseKind",
    "ContactState",
    "TimedStep",
    "Phase",
    "FootReference",
    "GaitSample",
    "GaitTimeline",
    "plan_walk",
    "plan_stand",
    "plan_from_state",
]

#: Where in the initial double support the solved ZMP knot sits (fraction of its duration).
START_KNOT_FRACTION = 0.5
#: A crossover swing (landing on the stance foot's far side) moves forward in the first 45 % of the
#: swing and sideways in the last 55 %: wholly ahead of the stance foot before it starts across.
#: (Forward in the first 65 % and sideways from 25 %, the leg started across while its foot was
#: still beside the stance foot: the legs' collision limit held it at its margin, the foot lagged
#: its reference by 0.1-0.2 m and landed 0.2 s late; measured on Talos pushed 540 N sideways.)
CROSSING_WINDOWS = ((0.0, 0.55), (0.45, 0.0))
#: A swing from behind the stance foot to its other side (the step that uncrosses the legs after a
#: crossover step) mirrors it: across in the first 45 %, while still behind, then forward.
UNCROSSING_WINDOWS = ((0.45, 0.0), (0.0, 0.55))


def _ramp(z0: float, z1: float, t: float, t0: float, t1: float, tail: float) -> tuple[float, float, float]:
    """A minimum-jerk change from ``z0`` to ``z1`` over ``[t0, t1]`` (``t1`` infinite: ``tail`` s long):
    value, rate and second derivative at ``t``."""
    span = (t1 if math.isfinite(t1) else t0 + tail) - t0
    u = min(max((t - t0) / span, 0.0), 1.0)
    if u in (0.0, 1.0):
        return z0 + (z1 - z0) * u, 0.0, 0.0
    p, dp, ddp = u**3 * (10 - 15 * u + 6 * u * u), 30 * u * u * (1 - u) ** 2, 60 * u * (1 - 3 * u + 2 * u * u)
    dz = z1 - z0
    return z0 + dz * p, dz * dp / span, dz * ddp / (span * span)


def _crosses(start: Footstep, target: Footstep, stance: Footstep) -> bool:
    """Whether a swing from ``start`` to ``target`` crosses to the far side of the ``stance`` foot."""
    side = start.foot.side
    return bool(side * stance.to_local(start.position)[1] > 0 and side * stance.to_local(target.position)[1] < 0)


def _around(start: Footstep, target: Footstep, stance: Footstep) -> tuple[tuple, tuple | None]:
    """The swing windows ``(window, lateral_window)`` of a swing from ``start`` to ``target`` that
    goes around the ``stance`` foot.

    A swing that passes the stance foot's centre line (a crossover step, or the step that uncrosses
    the legs after one) moves across at the end farther from the stance foot along its length:
    ahead first then across (:data:`CROSSING_WINDOWS`) when it lands farther ahead or behind than it
    starts, else across first then forward (:data:`UNCROSSING_WINDOWS`). Any other swing moves
    straight: ``((0, 0), None)``.
    """
    a, b = stance.to_local(start.position), stance.to_local(target.position)
    if a[1] * b[1] >= 0:
        return (0.0, 0.0), None
    return CROSSING_WINDOWS if abs(b[0]) >= abs(a[0]) else UNCROSSING_WINDOWS


#: Shortest double support, s (the ZMP crosses from foot to foot in this time at least).
MIN_DOUBLE_SUPPORT = 1e-3


class CoMHeight(enum.Enum):
    """How the CoM height reference follows footholds at different heights.

    - ``DCM``: the 3D DCM plan's own CoM height (its VRP rides on the ZMP knots' heights): it
      anticipates each height change by about ``1/ω``, in whatever phase that falls, and can ask
      for large vertical accelerations.
    - ``LOWER_FOOT``: a constant height above the lower of the feet's footholds at the end of each
      phase, reached by a minimum-jerk change over the phase (:meth:`GaitTimeline.com_height`): on
      stairs up the CoM rises while the trailing foot swings (the upper leg extends), on stairs down
      it drops while the leading foot swings down (the stance leg bends), so no leg is asked to
      reach beyond its nominal length while both feet are down.
    """

    DCM = "dcm"
    LOWER_FOOT = "lower_foot"


@dataclasses.dataclass(frozen=True)
class GaitParameters:
    """Timings and shapes of a gait.

    Attributes:
        single_support: swing duration, s.
        double_support: double support between two steps, s.
        initial_double_support: double support before the first lift-off when starting from rest, s.
        final_double_support: time for the ZMP to reach the feet's midpoint after the last touchdown, s.
        lift_height: swing apex above the higher foothold, m.
        touchdown_velocity: downward foot speed at touchdown, m/s (0: lands at rest).
        zmp_heel_toe: sole-frame x of the ZMP at the start and the end of single support, m.
        zmp_inward: lateral offset of the single-support ZMP towards the other foot, m.
        com_height: how the CoM height reference follows footholds at different heights (:class:`CoMHeight`).
        crouch: the CoM walks this much lower than it starts (m; long steps need bent knees): it
            lowers during the first phase (a minimum-jerk change), and the LIPM frequency is that of
            the lower height.
        gravity: m/s².
    """

    single_support: float = 0.8
    double_support: float = 0.2
    initial_double_support: float = 1.0
    final_double_support: float = 1.0
    lift_height: float = 0.05
    touchdown_velocity: float = 0.0
    zmp_heel_toe: tuple[float, float] = (0.0, 0.0)
    zmp_inward: float = 0.0
    gravity: float = GRAVITY
    com_height: CoMHeight = CoMHeight.DCM
    crouch: float = 0.0

    def __post_init__(self) -> None:
        positive = ("single_support", "double_support", "initial_double_support", "final_double_support", "gravity")
        for name in positive:
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise InputError(f"gait parameters: {name} must be a positive number, got {v!r}")
        for name in ("lift_height", "touchdown_velocity", "zmp_inward", "crouch"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise InputError(f"gait parameters: {name} must be a finite number >= 0, got {v!r}")
        ht = tuple(float(x) for x in self.zmp_heel_toe)
        if len(ht) != 2 or not all(math.isfinite(x) for x in ht):
            raise InputError(f"gait parameters: zmp_heel_toe must be two finite numbers, got {self.zmp_heel_toe!r}")
        object.__setattr__(self, "zmp_heel_toe", ht)

    @property
    def step_duration(self) -> float:
        """Step period: single plus double support, s."""
        return self.single_support + self.double_support

    def check_shape(self, shape: FootShape) -> None:
        """Raise :class:`InputError` when the single-support ZMP offsets leave the sole."""
        for x in self.zmp_heel_toe:
            if abs(x) > shape.length / 2:
                raise InputError(f"zmp_heel_toe {self.zmp_heel_toe} leaves the sole (length {shape.length} m)")
        if self.zmp_inward > shape.width / 2:
            raise InputError(f"zmp_inward {self.zmp_inward} m leaves the sole (width {shape.width} m)")


class PhaseKind(enum.Enum):
    DOUBLE_SUPPORT = "double_support"
    SINGLE_SUPPORT = "single_support"


class ContactState(enum.Enum):
    STANCE = "stance"
    SWING = "swing"


@dataclasses.dataclass(frozen=True)
class TimedStep:
    """A step: the swing foot leaves the ground at ``liftoff`` and lands on ``footstep`` at ``touchdown`` (s).

    ``stance_zmp``, when given, overrides the gait parameters' single-support ZMP for this step:
    ``((x0, y0), (x1, y1))``, the ZMP at lift-off and at touchdown in the stance sole's frame (m).
    """

    footstep: Footstep
    liftoff: float
    touchdown: float
    stance_zmp: tuple | None = None

    @property
    def foot(self) -> Foot:
        return self.footstep.foot

    def shifted(self, offset=None, dt: float = 0.0) -> TimedStep:
        """This step with its foothold moved by a world ``offset`` (2,) or (3,) m and its times by ``dt`` s."""
        fs = self.footstep if offset is None else self.footstep.moved(offset)
        return TimedStep(fs, self.liftoff + dt, self.touchdown + dt, self.stance_zmp)


@dataclasses.dataclass(frozen=True)
class Phase:
    """A contact phase over ``[t_start, t_end]`` (s; ``t_end`` is ``inf`` for the final standing phase).

    Attributes:
        kind: double or single support.
        stance: the feet in contact.
        swing: the swing foot (single support) or None.
        step: index of the step being taken (single support) or of the next one (double support;
            ``len(steps)`` in the final phase).
    """

    kind: PhaseKind
    t_start: float
    t_end: float
    stance: tuple
    swing: Foot | None
    step: int


@dataclasses.dataclass(frozen=True)
class FootReference:
    """One foot's reference at a time.

    Attributes:
        foot: which foot.
        state: stance or swing.
        pose: sole frame pose (4, 4), world.
        velocity: spatial velocity (6,) ``[linear; angular]``, world axes (zero in stance).
        acceleration: spatial acceleration (6,) ``[linear; angular]``, world axes (classical).
        foothold: the foothold the foot stands on (stance) or is heading for (swing).
        liftoff: lift-off time of the current swing, or of the next one in stance (None: no more swings), s.
        touchdown: touchdown time of that swing, s (None likewise).
        yaw: the sole's yaw, rad (unwrapped like the footholds'); its rates are ``velocity[5]``
            and ``acceleration[5]``.
    """

    foot: Foot
    state: ContactState
    pose: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    foothold: Footstep
    liftoff: float | None
    touchdown: float | None
    yaw: float


@dataclasses.dataclass(frozen=True)
class GaitSample:
    """The whole reference at time ``t`` (all vectors world, (3,), SI units).

    ``load`` is each foot's nominal share of the vertical load (0 to 1, summing to 1): 1 on the
    stance foot in single support; in double support, the ZMP's position along the line between
    the two soles' centres (used to ramp contact forces).

    ``heading`` (rad), ``heading_rate`` (rad/s) and ``heading_acceleration`` (rad/s²) are the mean
    yaw of the two soles and its derivatives: a smooth reference for the pelvis and torso yaw.
    """

    t: float
    phase: Phase
    feet: dict
    com: np.ndarray
    com_velocity: np.ndarray
    com_acceleration: np.ndarray
    dcm: np.ndarray
    dcm_velocity: np.ndarray
    zmp: np.ndarray
    zmp_velocity: np.ndarray
    load: dict
    omega: float
    heading: float = 0.0
    heading_rate: float = 0.0
    heading_acceleration: float = 0.0

    @property
    def stance(self) -> tuple:
        return self.phase.stance

    def heading_rotation(self) -> np.ndarray:
        """Rotation (3, 3) about the world z axis by :attr:`heading`."""
        c, s = math.cos(self.heading), math.sin(self.heading)
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])

    def contact(self, foot: Foot) -> ContactState:
        return self.feet[foot].state


def _feet(feet: Mapping) -> dict:
    try:
        out = {Foot.LEFT: feet[Foot.LEFT], Foot.RIGHT: feet[Foot.RIGHT]}
    except (KeyError, TypeError):
        raise InputError("feet must map Foot.LEFT and Foot.RIGHT to their footholds") from None
    for foot, fs in out.items():
        if not isinstance(fs, Footstep) or fs.foot is not foot:
            raise InputError(f"the {foot.value} foothold must be a Footstep of the {foot.value} foot, got {fs!r}")
    return out


def _vec3(x, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=float).reshape(-1)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise InputError(f"{name} must be 3 finite numbers, got {np.asarray(x).shape}")
    return a


def _zmp_point(params: GaitParameters, stance: Footstep, end: bool, step: TimedStep | None = None) -> np.ndarray:
    """World ZMP (3,) in the stance sole at the start (``end=False``) or end of single support."""
    if step is not None and step.stance_zmp is not None:
        x, y = step.stance_zmp[1 if end else 0]
    else:
        x = params.zmp_heel_toe[1 if end else 0]
        y = -stance.foot.side * params.zmp_inward  # towards the other foot
    return stance.to_world((x, y, 0.0))


def _midpoint(feet: dict) -> np.ndarray:
    return 0.5 * (feet[Foot.LEFT].position + feet[Foot.RIGHT].position)


def _knots(
    feet0: dict,
    steps: Sequence[TimedStep],
    t0: float,
    zmp0: np.ndarray,
    params: GaitParameters,
    extra: Sequence = (),
) -> tuple[list, list]:
    """ZMP knots (times, points) of a schedule (see the module docstring), with the ``extra`` knots
    ``[(t, point), ...]`` that fall strictly inside the first double support (others are dropped)."""
    times, points = [t0], [zmp0]
    end = steps[0].liftoff if steps else t0 + params.final_double_support
    for t_extra, p_extra in extra:
        if t0 < t_extra < end:
            times.append(float(t_extra))
            points.append(np.asarray(p_extra, dtype=float))
    feet = dict(feet0)
    for step in steps:
        stance = feet[step.foot.other]
        if step.liftoff > t0:
            times.append(step.liftoff)
            points.append(_zmp_point(params, stance, False, step))
        times.append(step.touchdown)
        points.append(_zmp_point(params, stance, True, step))
        feet[step.foot] = step.footstep
    t_last = steps[-1].touchdown if steps else t0
    times.append(t_last + params.final_double_support)
    points.append(_midpoint(feet))
    return times, points


def _dcm_at_start(times: list, points: list, omega: float) -> np.ndarray:
    """The planned DCM (3,) at the first knot (the backward recursion only; ZMP-to-VRP shift included)."""
    xi = np.asarray(points[-1], float)  # in ZMP coordinates: ξ − Δz e_z, the shift cancels
    for j in range(len(times) - 2, -1, -1):
        r0, r1 = np.asarray(points[j], float), np.asarray(points[j + 1], float)
        dt = times[j + 1] - times[j]
        s = (r1 - r0) / dt
        xi = r0 + s / omega + math.exp(-omega * dt) * (xi - r1 - s / omega)
    return xi


class GaitTimeline:
    """Contact phases, centroidal reference and swing feet of a planned motion (see the module docstring).

    Args:
        feet: the footholds at ``t0`` (a foot in flight at ``t0`` maps to the foothold it left).
        steps: the steps in time order, non-overlapping, with a double support between any two.
        com: the CoM at ``t0`` (3,), m; its height above ``zmp0`` sets ``ω``.
        t0: start time, s.
        params: gait parameters (lift height, ZMP offsets, final double support, gravity).
        shape: the sole rectangle (support polygons).
        zmp0: the ZMP at ``t0`` (3,); default the CoM's ground projection (onto the support
            polygon) at the feet's mean height.
        swing0: the swing in flight at ``t0``, when ``steps[0]`` lifted off before ``t0``; its state at
            ``t0`` starts the new swing (which lands on ``steps[0]``).
        extra_knots: additional ZMP knots ``[(t, point (3,)), ...]`` strictly inside the first
            double support (used to start from rest; kept as ``extra_knots``, and kept by re-plans
            while they lie ahead).
        omega: LIPM frequency, 1/s; default from the CoM height above ``zmp0``.
        crouch_phase: ``(t_start, t_end)``, s: the CoM lowers by ``params.crouch`` then (a plan from
            standing); None: the CoM is already as low as it walks (a re-plan).
        terrain: the ground (:class:`~wbc.locomotion.terrain.Terrain`): fresh swings are shaped to
            clear it (:meth:`~wbc.locomotion.terrain.Terrain.swing`); None: flat ground.

    Raises:
        InputError: inconsistent schedules (overlapping steps, a step without double support before
            it, a first step lifting off before ``t0`` without ``swing0``), bad vectors.
    """

    def __init__(
        self,
        feet: Mapping,
        steps: Sequence[TimedStep],
        com,
        t0: float,
        params: GaitParameters,
        shape: FootShape,
        zmp0=None,
        swing0: SwingTrajectory | None = None,
        extra_knots: Sequence = (),
        omega: float | None = None,
        terrain=None,
        crouch_phase: tuple[float, float] | None = None,
    ) -> None:
        feet0 = _feet(feet)
        self.terrain = terrain
        self.crouch_phase = None if crouch_phase is None or params.crouch == 0 else crouch_phase
        if not isinstance(params, GaitParameters):
            raise InputError(f"params must be GaitParameters, got {type(params).__name__}")
        if not isinstance(shape, FootShape):
            raise InputError(f"shape must be a FootShape, got {type(shape).__name__}")
        params.check_shape(shape)
        if not math.isfinite(t0):
            raise InputError(f"t0 must be finite, got {t0!r}")
        com = _vec3(com, "com")
        steps = tuple(steps)
        self._check_schedule(steps, t0, swing0)
        for k, st in enumerate(steps):
            if st.stance_zmp is not None:
                pts = np.asarray(st.stance_zmp, dtype=float)
                if pts.shape != (2, 2) or not np.all(np.isfinite(pts)):
                    raise InputError(f"step {k}: stance_zmp must be ((x0, y0), (x1, y1)), m")
                if np.any(np.abs(pts) > np.array([shape.length / 2, shape.width / 2]) + 1e-12):
                    raise InputError(f"step {k}: stance_zmp {pts.tolist()} leaves the sole {shape}")
        ground = 0.5 * (feet0[Foot.LEFT].position[2] + feet0[Foot.RIGHT].position[2])
        polygon0 = self._polygon_at_start(feet0, steps, t0, shape)
        if zmp0 is None:
            zmp0 = np.append(_polygon.project(com[0:2], polygon0), ground)
        zmp0 = _vec3(zmp0, "zmp0")
        if omega is None:
            omega = omega_of_height(com[2] - zmp0[2], params.gravity)
        self.t0, self.params, self.shape, self.omega = float(t0), params, shape, float(omega)
        self.feet0, self.steps = feet0, steps
        end = steps[0].liftoff if steps else t0 + params.final_double_support
        extra = [(float(t), _vec3(p, "extra ZMP knot")) for t, p in extra_knots]
        for t_extra, _ in extra:
            if not t0 < t_extra < end:
                raise InputError(f"extra ZMP knot at t = {t_extra} is not inside the first double support")
        self.extra_knots = tuple(extra)
        times, points = _knots(feet0, steps, t0, zmp0, params, extra)
        order = np.argsort(times, kind="stable")
        self.zmp_plan = PiecewiseLinearZMP(np.asarray(times)[order], np.asarray(points)[order])
        self.centroidal = DCMTrajectory(self.zmp_plan, self.omega, com)
        self.t_end = float(self.zmp_plan.times[-1])
        self.swings = self._swings(swing0)
        self.phases = self._phases()
        self._phase_starts = [ph.t_start for ph in self.phases]
        self._phase_feet = []
        feet = dict(feet0)
        for ph in self.phases:
            for st in steps:
                if st.touchdown <= ph.t_start:
                    feet[st.foot] = st.footstep
            self._phase_feet.append(dict(feet))
        self._polygons: dict = {}
        self._levels: list | None = None

    # ------------------------------------------------------------------------------- construction
    @staticmethod
    def _check_schedule(steps: tuple, t0: float, swing0: SwingTrajectory | None) -> None:
        prev = -math.inf
        for k, s in enumerate(steps):
            if not isinstance(s, TimedStep):
                raise InputError(f"step {k} must be a TimedStep, got {type(s).__name__}")
            if not (math.isfinite(s.liftoff) and math.isfinite(s.touchdown) and s.touchdown > s.liftoff):
                raise InputError(
                    f"step {k}: need finite times with touchdown > liftoff, got {s.liftoff}, {s.touchdown}"
                )
            if s.touchdown <= t0:
                raise InputError(f"step {k} touches down at {s.touchdown} s, not after the start {t0} s")
            if k == 0 and s.liftoff < t0 and swing0 is None:
                raise InputError(f"step 0 lifted off at {s.liftoff} s before the start {t0} s: give its swing (swing0)")
            if k > 0 and s.liftoff < prev + MIN_DOUBLE_SUPPORT:
                raise InputError(
                    f"step {k} lifts off at {s.liftoff} s, less than {MIN_DOUBLE_SUPPORT} s after step {k - 1} "
                    f"touches down ({prev} s): a double support is needed between steps"
                )
            prev = s.touchdown
        if swing0 is not None and (not steps or steps[0].liftoff >= t0 or swing0.foot is not steps[0].foot):
            raise InputError("swing0 is the swing of step 0 in flight at t0 (its foot, lifted off before t0)")

    @staticmethod
    def _polygon_at_start(feet0: dict, steps: tuple, t0: float, shape: FootShape) -> np.ndarray:
        in_flight = steps[0].foot if steps and steps[0].liftoff < t0 else None
        return support_polygon([f for foot, f in feet0.items() if foot is not in_flight], shape)

    def _swings(self, swing0: SwingTrajectory | None) -> list:
        p, out = self.params, []
        feet = dict(self.feet0)
        for k, s in enumerate(self.steps):
            if k == 0 and swing0 is not None:
                traj = swing0.replanned(self.t0, s.footstep, s.touchdown)
            elif self.terrain is not None:
                start = SwingState.at_rest(feet[s.foot])
                traj = self.terrain.swing(
                    start, s.footstep, s.liftoff, s.touchdown, p.lift_height, p.touchdown_velocity, self.shape
                )
            else:
                window, lateral_window = _around(feet[s.foot], s.footstep, feet[s.foot.other])
                traj = SwingTrajectory(
                    SwingState.at_rest(feet[s.foot]),
                    s.footstep,
                    s.liftoff,
                    s.touchdown,
                    p.lift_height,
                    p.touchdown_velocity,
                    window=window,
                    lateral_window=lateral_window,
                )
            out.append(traj)
            feet[s.foot] = s.footstep
        return out

    def _phases(self) -> tuple:
        phases = []
        t = self.t0
        both = (Foot.LEFT, Foot.RIGHT)
        for k, s in enumerate(self.steps):
            if s.liftoff > t:
                phases.append(Phase(PhaseKind.DOUBLE_SUPPORT, t, s.liftoff, both, None, k))
            start = max(s.liftoff, self.t0)
            phases.append(Phase(PhaseKind.SINGLE_SUPPORT, start, s.touchdown, (s.foot.other,), s.foot, k))
            t = s.touchdown
        phases.append(Phase(PhaseKind.DOUBLE_SUPPORT, t, math.inf, both, None, len(self.steps)))
        return tuple(phases)

    def delayed(self, since: float, delay: float, landed: Footstep | None = None) -> GaitTimeline:
        """This plan from ``since`` on, ``delay`` s later (a late touchdown re-times what follows it).

        The new timeline starts at ``since + delay`` from this one's state at ``since`` (the footholds,
        the CoM and its height, the ZMP), and the steps that lift off at or after ``since`` lift off
        and land ``delay`` s later: its reference at ``since + delay + τ`` is this one's at
        ``since + τ``. ``landed``: where a foot actually stands, in place of its planned foothold
        (its next swing starts there, and the ZMP plan stands on it).

        Raises:
            InputError: ``since`` before the start, in a swing (the plan is re-timed between
                steps) or before the crouch is done, or ``delay`` not finite and >= 0.
        """
        since, delay = float(since), float(delay)
        if not (math.isfinite(since) and since >= self.t0):
            raise InputError(f"a timeline starting at {self.t0} s cannot be delayed from {since!r} s")
        if not (math.isfinite(delay) and delay >= 0):
            raise InputError(f"a timeline's delay must be finite and >= 0 s, got {delay!r}")
        if landed is not None and not isinstance(landed, Footstep):
            raise InputError(f"landed must be a Footstep, got {type(landed).__name__}")
        if self.in_swing(since):
            raise InputError(f"the timeline is in a swing at {since} s: it is delayed between steps only")
        if self.crouch_phase is not None and since < self.crouch_phase[1]:
            raise InputError(f"the timeline is still crouching at {since} s: it is delayed after its first lift-off")
        c = self.evaluate(since)
        com = c["com"][0].copy()
        if self.params.com_height is CoMHeight.LOWER_FOOT or self.params.crouch > 0:
            com[2] = self.com_height(since)[0]  # the same height base (the crouch already done)
        start = since + delay
        feet = self.footholds_at(since)
        if landed is not None:
            feet[landed.foot] = landed
        return GaitTimeline(
            feet,
            [s.shifted(dt=delay) for s in self.steps if s.liftoff >= since],
            com,
            start,
            self.params,
            self.shape,
            c["zmp"][0],
            extra_knots=[(t + delay, p) for t, p in self.extra_knots if t > since],
            omega=self.omega,
            terrain=self.terrain,
        )

    # ------------------------------------------------------------------------------- queries
    @property
    def duration(self) -> float:
        """Time from the start to the last ZMP knot (the robot then stands), s."""
        return self.t_end - self.t0

    def phase_index(self, t: float) -> int:
        """Index in :attr:`phases` of the phase containing ``t``."""
        return max(bisect.bisect_right(self._phase_starts, max(float(t), self.t0)) - 1, 0)

    def phase_at(self, t: float) -> Phase:
        """The phase containing ``t``: lift-off instants belong to the single support they start,
        touchdown instants to the double support that follows."""
        return self.phases[self.phase_index(t)]

    def footholds_at(self, t: float) -> dict:
        """The footholds at ``t``: the latest one each foot stood on (or, in swing, left)."""
        return dict(self._phase_feet[self.phase_index(t)])

    def in_swing(self, t: float) -> bool:
        """Whether a step is in the air at ``t`` (strictly between its lift-off and its touchdown)."""
        return any(s.liftoff < t < s.touchdown for s in self.steps)

    def contact_state(self, foot: Foot, t: float) -> ContactState:
        """Stance or swing of ``foot`` at ``t`` (swing from its lift-off instant to before its touchdown)."""
        return ContactState.SWING if self.phase_at(t).swing is foot else ContactState.STANCE

    def swing_intervals(self, foot: Foot) -> list:
        """``[(liftoff, touchdown), ...]`` of ``foot``, s."""
        return [(s.liftoff, s.touchdown) for s in self.steps if s.foot is foot]

    def next_liftoff(self, foot: Foot, t: float) -> float | None:
        """The first lift-off of ``foot`` at or after ``t`` (s), or None."""
        return next((s.liftoff for s in self.steps if s.foot is foot and s.liftoff >= t), None)

    def next_touchdown(self, foot: Foot, t: float) -> float | None:
        """The first touchdown of ``foot`` after ``t`` (s), or None."""
        return next((s.touchdown for s in self.steps if s.foot is foot and s.touchdown > t), None)

    def support_polygon(self, t: float, margin: float = 0.0) -> np.ndarray:
        """The planned support polygon (k, 2) at ``t`` (the phase's stance feet), shrunk by ``margin`` m."""
        i = self.phase_index(t)
        key = (i, float(margin))
        if key not in self._polygons:
            feet = self._phase_feet[i]
            self._polygons[key] = support_polygon([feet[f] for f in self.phases[i].stance], self.shape, margin)
        return self._polygons[key].copy()

    def evaluate(self, t) -> dict:
        """The centroidal reference at times ``t`` (n,): arrays (n, 3) (see :meth:`DCMTrajectory.evaluate`)."""
        return self.centroidal.evaluate(t)

    def foot_reference(self, foot: Foot, t: float) -> FootReference:
        """The reference of one foot at ``t``."""
        t = max(float(t), self.t0)
        i = self.phase_index(t)
        ph = self.phases[i]
        if ph.swing is foot:
            s = self.steps[ph.step]
            traj = self.swings[ph.step]
            st = traj.state(t)
            if traj.tilted:
                pose, vel, acc = traj.reference(t)
            else:
                c, sn = math.cos(st.yaw), math.sin(st.yaw)
                pose = np.eye(4)
                pose[0:2, 0:2] = ((c, -sn), (sn, c))
                pose[0:3, 3] = st.position
                vel = np.array([*st.velocity[0:3], 0.0, 0.0, st.velocity[3]])
                acc = np.array([*st.acceleration[0:3], 0.0, 0.0, st.acceleration[3]])
            return FootReference(
                foot, ContactState.SWING, pose, vel, acc, s.footstep, s.liftoff, s.touchdown, float(st.yaw)
            )
        nxt = next((s for s in self.steps[ph.step :] if s.foot is foot and s.liftoff >= t), None)
        fs = self._phase_feet[i][foot]
        return FootReference(
            foot,
            ContactState.STANCE,
            fs.pose,
            np.zeros(6),
            np.zeros(6),
            fs,
            None if nxt is None else nxt.liftoff,
            None if nxt is None else nxt.touchdown,
            fs.yaw,
        )

    def load_share(self, t: float, zmp=None) -> dict:
        """Each foot's nominal share of the vertical load at ``t`` (see :class:`GaitSample`)."""
        ph = self.phase_at(t)
        if ph.kind is PhaseKind.SINGLE_SUPPORT:
            return {ph.stance[0]: 1.0, ph.swing: 0.0}
        if zmp is None:
            zmp = self.evaluate(t)["zmp"][0]
        feet = self.footholds_at(t)
        a, b = feet[Foot.LEFT].position[0:2], feet[Foot.RIGHT].position[0:2]
        d = b - a
        lam = float(np.clip((np.asarray(zmp)[0:2] - a) @ d / max(float(d @ d), 1e-12), 0.0, 1.0))
        return {Foot.LEFT: 1.0 - lam, Foot.RIGHT: lam}

    def com_height(self, t: float) -> tuple[float, float, float]:
        """With ``params.com_height`` :attr:`CoMHeight.LOWER_FOOT` (or a ``crouch``), the CoM height (m)
        and its first two derivatives at ``t`` (see :class:`CoMHeight`), lowered by the crouch over
        :attr:`crouch_phase`."""
        if self._levels is None:
            levels, z = [], min(f.position[2] for f in self.feet0.values())
            for i, ph in enumerate(self.phases):
                after = dict(self._phase_feet[i])
                if ph.swing is not None:
                    after[ph.swing] = self.steps[ph.step].footstep
                levels.append((ph.t_start, ph.t_end, z, min(f.position[2] for f in after.values())))
                z = levels[-1][3]
            self._levels = levels
        base = float(self.centroidal.com0[2]) - self._levels[0][2]
        i = self.phase_index(t)
        t0, t1, z0, z1 = self._levels[i]
        h, hd, hdd = base + z0, 0.0, 0.0
        if z1 != z0:
            h, hd, hdd = _ramp(z0, z1, t, t0, t1, self.params.final_double_support)
            h += base
        if self.crouch_phase is not None:
            c0, c1 = self.crouch_phase
            ch, chd, chdd = _ramp(0.0, self.params.crouch, t, c0, c1, self.params.final_double_support)
            h, hd, hdd = h - ch, hd - chd, hdd - chdd
        return h, hd, hdd

    def sample(self, t: float) -> GaitSample:
        """Everything at time ``t`` (s)."""
        t = max(float(t), self.t0)
        c = self.evaluate(t)
        if self.params.com_height is CoMHeight.LOWER_FOOT or self.params.crouch > 0:
            c = {k: v.copy() for k, v in c.items()}
            c["com"][0, 2], c["com_velocity"][0, 2], c["com_acceleration"][0, 2] = self.com_height(t)
        zmp = c["zmp"][0]
        feet = {f: self.foot_reference(f, t) for f in (Foot.LEFT, Foot.RIGHT)}
        left, right = feet[Foot.LEFT], feet[Foot.RIGHT]
        gap = right.yaw - left.yaw
        return GaitSample(
            t=t,
            phase=self.phase_at(t),
            feet=feet,
            com=c["com"][0],
            com_velocity=c["com_velocity"][0],
            com_acceleration=c["com_acceleration"][0],
            dcm=c["dcm"][0],
            dcm_velocity=c["dcm_velocity"][0],
            zmp=zmp,
            zmp_velocity=c["zmp_velocity"][0],
            load=self.load_share(t, zmp),
            omega=self.omega,
            heading=left.yaw + 0.5 * math.atan2(math.sin(gap), math.cos(gap)),
            heading_rate=0.5 * float(left.velocity[5] + right.velocity[5]),
            heading_acceleration=0.5 * float(left.acceleration[5] + right.acceleration[5]),
        )


def plan_walk(
    plan: FootstepPlan,
    com,
    params: GaitParameters,
    shape: FootShape,
    t0: float = 0.0,
    terrain=None,
) -> GaitTimeline:
    """The timeline of a footstep plan, starting at rest at ``t0`` with the CoM at ``com`` (3,).

    Step ``k`` lifts off at ``t0 + initial_double_support + k (single + double support)`` and
    touches down ``single_support`` later; the initial double support carries the solved ZMP knot
    that makes the plan start exactly at rest (see the module docstring). Without steps, the
    timeline of :func:`plan_stand`. With a ``terrain`` the swings clear it (see :class:`GaitTimeline`).

    Raises:
        InputError: the solved start knot leaves the support polygon (make the initial double support
            longer, or start with the CoM nearer the middle of the feet).
    """
    if not isinstance(plan, FootstepPlan):
        raise InputError(f"plan must be a FootstepPlan, got {type(plan).__name__}")
    if not isinstance(params, GaitParameters):
        raise InputError(f"params must be GaitParameters, got {type(params).__name__}")
    steps = []
    t = t0 + params.initial_double_support
    for fs in plan.steps:
        steps.append(TimedStep(fs, t, t + params.single_support))
        t += params.step_duration
    first = params.initial_double_support if steps else params.final_double_support
    return _from_rest(plan.initial, steps, com, params, shape, t0, t0 + START_KNOT_FRACTION * first, terrain)


def plan_stand(feet: Mapping, com, params: GaitParameters, shape: FootShape, t0: float = 0.0) -> GaitTimeline:
    """A timeline without steps: from rest at ``com``, the CoM comes to rest over the middle of the feet
    in ``final_double_support`` s."""
    return _from_rest(feet, (), com, params, shape, t0, t0 + START_KNOT_FRACTION * params.final_double_support)


def plan_from_state(
    feet: Mapping,
    com,
    com_velocity,
    params: GaitParameters,
    shape: FootShape,
    t0: float,
    omega: float,
    steps: Sequence[TimedStep] = (),
) -> GaitTimeline:
    """A timeline from a moving state: the DCM from where it is at ``t0`` (``com`` (3,) m,
    ``com_velocity`` (3,) m/s, LIPM frequency ``omega`` 1/s) comes to rest over the middle of the
    feet in ``final_double_support`` s, or first takes ``steps`` (the first lifting off after ``t0``).
    Its first ZMP knot (halfway through the first double support) is solved for the plan's DCM at
    ``t0`` to be the measured one; when that knot would leave the feet it is put on their edge (the
    plan then starts off the measured DCM by what the feet cannot give, left to the stabilizer).

    Raises:
        InputError: a non-positive ``omega``, a first step not lifting off after ``t0``, bad vectors
            or schedules (as :class:`GaitTimeline`).
    """
    if not (isinstance(omega, (int, float)) and math.isfinite(omega) and omega > 0):
        raise InputError(f"omega must be a positive number of 1/s, got {omega!r}")
    com = _vec3(com, "com")
    dcm = dcm_of(com, _vec3(com_velocity, "com_velocity"), float(omega))
    feet = _feet(feet)
    steps = tuple(steps)
    if steps and not steps[0].liftoff > t0:
        raise InputError(f"the first step lifts off at {steps[0].liftoff} s, not after t0 = {t0} s")
    ground = 0.5 * (feet[Foot.LEFT].position[2] + feet[Foot.RIGHT].position[2])
    polygon = support_polygon(list(feet.values()), shape)
    zmp0 = np.append(_polygon.project(dcm[0:2], polygon), ground)
    end = steps[0].liftoff if steps else t0 + params.final_double_support
    t_knot = t0 + START_KNOT_FRACTION * (end - t0)
    xy = _polygon.project(_start_knot(feet, steps, t0, zmp0, params, t_knot, float(omega), dcm[0:2]), polygon)
    knot = np.array([xy[0], xy[1], ground])
    return GaitTimeline(feet, steps, com, t0, params, shape, zmp0, extra_knots=[(t_knot, knot)], omega=omega)


def _start_knot(feet, steps, t0, zmp0, params, t_knot, omega, dcm) -> np.ndarray:
    """The ZMP knot (x, y) at ``t_knot`` for which the plan's DCM at ``t0`` is ``dcm`` (2,): the start
    DCM is affine in the knot (the backward recursion is linear in the knots)."""
    ground = zmp0[2]

    def start_dcm(xy: np.ndarray) -> np.ndarray:
        times, points = _knots(feet, steps, t0, zmp0, params, [(t_knot, np.array([xy[0], xy[1], ground]))])
        return _dcm_at_start(times, points, omega)[0:2]

    base = start_dcm(np.zeros(2))
    J = np.column_stack([start_dcm(e) - base for e in np.eye(2)])
    return np.linalg.solve(J, np.asarray(dcm, float) - base)


def _from_rest(
    feet, steps, com, params: GaitParameters, shape: FootShape, t0: float, t_knot: float, terrain=None
) -> GaitTimeline:
    """A timeline starting at rest: one extra ZMP knot at ``t_knot``, solved for ``ξ(t0) = c(t0)``."""
    if not isinstance(params, GaitParameters):
        raise InputError(f"params must be GaitParameters, got {type(params).__name__}")
    if not isinstance(shape, FootShape):
        raise InputError(f"shape must be a FootShape, got {type(shape).__name__}")
    com = _vec3(com, "com")
    feet = _feet(feet)
    ground = 0.5 * (feet[Foot.LEFT].position[2] + feet[Foot.RIGHT].position[2])
    polygon = support_polygon(list(feet.values()), shape)
    zmp0 = np.append(_polygon.project(com[0:2], polygon), ground)
    omega = omega_of_height(com[2] - ground - params.crouch, params.gravity)
    # at rest: ξ(t0) = c(t0)
    xy = _start_knot(feet, steps, t0, zmp0, params, t_knot, omega, com[0:2])
    if not _polygon.contains(polygon, xy, 1e-9):
        raise InputError(
            f"starting from rest needs a ZMP at {xy.round(4).tolist()}, outside the feet: make the first "
            f"double support (initial_double_support = {params.initial_double_support} s) longer"
        )
    knot = np.array([xy[0], xy[1], ground])
    end = steps[0].liftoff if steps else t0 + params.final_double_support
    return GaitTimeline(
        feet,
        steps,
        com,
        t0,
        params,
        shape,
        zmp0,
        extra_knots=[(t_knot, knot)],
        omega=omega,
        terrain=terrain,
        crouch_phase=(t0, end),
    )
