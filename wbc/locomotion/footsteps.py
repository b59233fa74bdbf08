"""Footholds and footstep plans: from a velocity command or from a list of footsteps.

A :class:`Footstep` is where a foot rests: its sole frame's origin (3,) in the world, its yaw
(rad) about the world z axis and the normal of the surface it rests on (default up: flat ground;
footholds may be at different heights and, on slopes or rough ground, inclined). :class:`StepLimits`
bounds where a foot may land relative to the foot it stands on (in that stance foot's frame):
forward/backward reach, a lateral band on the foot's own side (minimum width against collisions and
crossing, maximum reach), relative yaw, height change, and a clearance between the two soles.

**From a velocity command** (:func:`plan_from_velocity`). The command ``(v_x, v_y, ω)`` is a
constant twist of a *body frame* halfway between the feet, in that frame's own axes. The body pose
is integrated exactly (the SE(2) exponential: straight lines, or circular arcs when turning) and
sampled at the step times ``k T`` (``T`` the step period: single plus double support); step ``k``
places its foot at the sampled body pose offset by half the nominal width to its side. Feet
alternate, starting with the foot on the side the command moves or turns towards. Sideways and
turning, the foot on that side *leads*: its step opens the stance by one more step of lateral
motion (``v_y T``) and turn (``ω T``, about the body origin) and the other foot's step closes it back
to the nominal width and parallel feet, so the feet never come closer than the nominal width (the
symmetric alternative narrows the stance by ``v_y T`` every other step). The last commanded step
does not lead, and a final *closing* step puts the trailing foot beside it, so that the robot ends
standing symmetrically about the body pose at ``n T``: after ``n`` commanded steps the stance's
midpoint has moved by exactly the integrated command and its heading turned by ``ω n T``. A command
that would ask for a step beyond the limits is scaled down uniformly (keeping its direction) until
every step is feasible; the plan reports the command it realizes. Turning in place is ``(0, 0, ω)``.

**From a list of footsteps** (:func:`plan_from_footsteps`): every step is checked against the
limits relative to the stance foot at that moment (the other foot's latest foothold); a violation
raises :class:`~wbc.errors.InputError` naming the step and the limit.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Sequence

import numpy as np

from ..errors import InputError
from ..model import checks
from . import polygon as _polygon

__all__ = [
    "Foot",
    "Footstep",
    "FootShape",
    "StepLimits",
    "VelocityCommand",
    "FootstepPlan",
    "plan_from_velocity",
    "plan_from_footsteps",
    "MAX_STEPS",
    "step_violations",
    "support_polygon",
    "integrate_twist",
    "tilt_rotation",
]


class Foot(enum.Enum):
    """A foot of a biped; ``side`` is +1 for the left foot (world +y when facing +x), -1 for the right."""

    LEFT = "left"
    RIGHT = "right"

    @property
    def side(self) -> int:
        return 1 if self is Foot.LEFT else -1

    @property
    def other(self) -> Foot:
        return Foot.RIGHT if self is Foot.LEFT else Foot.LEFT


def _rz(yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


#: Steepest surface a foothold may rest on: its normal's z component at least this (cos 60°).
MIN_NORMAL_Z = 0.5


def tilt_rotation(normal) -> np.ndarray:
    """The smallest rotation (3, 3) taking the world z axis onto the unit ``normal`` (3,)."""
    n = np.asarray(normal, dtype=float).reshape(3)
    axis = np.array([-n[1], n[0], 0.0])  # e_z × n
    s = float(np.linalg.norm(axis))
    if s < 1e-15:
        return np.eye(3)
    c = float(n[2])
    k = axis / s
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + s * K + (1.0 - c) * (K @ K)


@dataclasses.dataclass(frozen=True, eq=False)
class Footstep:
    """A foothold: ``foot`` rests with its sole frame at ``position`` (3,) m, yawed by ``yaw`` rad.

    The sole frame's z axis is the surface ``normal`` (3,) (default None: the world z axis, a flat
    foothold); its orientation is the yaw about the world z axis followed by the smallest rotation
    taking z onto the normal (:func:`tilt_rotation`). ``yaw`` is kept unwrapped, so a sequence of
    footsteps turning several times around stays continuous.
    """

    foot: Foot
    position: np.ndarray
    yaw: float = 0.0
    normal: np.ndarray | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.foot, Foot):
            raise InputError(f"footstep: foot must be a wbc.locomotion.Foot, got {self.foot!r}")
        p = np.array(self.position, dtype=float).reshape(-1)
        if p.shape != (3,) or not np.all(np.isfinite(p)):
            raise InputError(f"footstep of the {self.foot.value} foot: position must be 3 finite numbers, got {p}")
        if not math.isfinite(float(self.yaw)):
            raise InputError(f"footstep of the {self.foot.value} foot: yaw must be finite, got {self.yaw!r}")
        p.setflags(write=False)
        object.__setattr__(self, "position", p)
        object.__setattr__(self, "yaw", float(self.yaw))
        if self.normal is not None:
            n = np.array(self.normal, dtype=float).reshape(-1)
            norm = float(np.linalg.norm(n)) if n.shape == (3,) and np.all(np.isfinite(n)) else 0.0
            if norm == 0.0 or n[2] / norm < MIN_NORMAL_Z:
                raise InputError(
                    f"footstep of the {self.foot.value} foot: normal must be 3 finite numbers pointing up "
                    f"(z >= {MIN_NORMAL_Z} of its length), got {self.normal!r}"
                )
            n = n / norm
            n.setflags(write=False)
            object.__setattr__(self, "normal", None if n[2] == 1.0 else n)

    @property
    def up(self) -> np.ndarray:
        """The surface normal (3,) (the world z axis on flat ground)."""
        return np.array([0.0, 0.0, 1.0]) if self.normal is None else np.array(self.normal)

    @classmethod
    def from_pose(cls, foot: Foot, pose) -> Footstep:
        """The footstep of a sole frame's world ``pose`` (4, 4) (its yaw; roll and pitch are dropped)."""
        T = np.asarray(pose, dtype=float)
        if T.shape != (4, 4) or not np.all(np.isfinite(T)):
            raise InputError(f"pose of the {getattr(foot, 'value', foot)} foot must be a finite (4, 4) transform")
        return cls(foot, T[0:3, 3], math.atan2(T[1, 0], T[0, 0]))

    @property
    def rotation(self) -> np.ndarray:
        """Rotation (3, 3) of the sole frame in the world (the yaw, then the tilt onto the normal)."""
        if self.normal is None:
            return _rz(self.yaw)
        return tilt_rotation(self.normal) @ _rz(self.yaw)

    @property
    def pose(self) -> np.ndarray:
        """Homogeneous transform (4, 4) of the sole frame in the world."""
        T = np.eye(4)
        T[0:3, 0:3] = self.rotation
        T[0:3, 3] = self.position
        return T

    def to_world(self, local) -> np.ndarray:
        """World coordinates (3,) of a point given in the sole frame ((2,) or (3,), m)."""
        x = np.zeros(3)
        local = np.asarray(local, dtype=float).reshape(-1)
        x[: len(local)] = local
        return self.position + self.rotation @ x

    def to_local(self, world) -> np.ndarray:
        """Sole-frame coordinates (3,) of a world point (3,)."""
        return self.rotation.T @ (np.asarray(world, dtype=float).reshape(3) - self.position)

    def moved(self, offset) -> Footstep:
        """This footstep translated by a world ``offset`` ((2,) or (3,), m)."""
        d = np.zeros(3)
        offset = np.asarray(offset, dtype=float).reshape(-1)
        d[: len(offset)] = offset
        return Footstep(self.foot, self.position + d, self.yaw, self.normal)

    def __repr__(self) -> str:
        x, y, z = self.position
        return f"Footstep({self.foot.value}, ({x:.4f}, {y:.4f}, {z:.4f}), yaw={self.yaw:.4f})"


@dataclasses.dataclass(frozen=True)
class FootShape:
    """The sole rectangle, centred on the sole frame's origin: ``length`` along x, ``width`` along y, m."""

    length: float
    width: float

    def __post_init__(self) -> None:
        for name in ("length", "width"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise InputError(f"foot shape: {name} must be a positive number of metres, got {v!r}")

    def corners(self, footstep: Footstep) -> np.ndarray:
        """World ground-plane corners (4, 2) of the sole at ``footstep``, counter-clockwise."""
        hx, hy = self.length / 2, self.width / 2
        local = [(-hx, -hy), (hx, -hy), (hx, hy), (-hx, hy)]
        return np.array([footstep.to_world(c)[0:2] for c in local])

    def contains(self, footstep: Footstep, point, margin: float = 0.0, tolerance: float = 1e-9) -> bool:
        """Whether the ground-plane ``point`` lies in the sole at ``footstep`` shrunk by ``margin`` (m)."""
        x = footstep.to_local(np.append(np.asarray(point, float).reshape(-1)[0:2], footstep.position[2]))
        return abs(x[0]) <= self.length / 2 - margin + tolerance and abs(x[1]) <= self.width / 2 - margin + tolerance


def support_polygon(footsteps: Sequence[Footstep], shape: FootShape, margin: float = 0.0) -> np.ndarray:
    """Convex hull (k, 2) of the soles at ``footsteps`` (those in contact), shrunk by ``margin`` m."""
    if not footsteps:
        raise InputError("a support polygon needs at least one foot in contact")
    hull = _polygon.convex_hull(np.vstack([shape.corners(f) for f in footsteps]))
    return _polygon.shrink(hull, margin) if margin > 0 else hull


@dataclasses.dataclass(frozen=True)
class StepLimits:
    """Where a foot may land, relative to the stance foot (in the stance sole's frame).

    Attributes:
        width: nominal distance between the feet's centres across the stance, m (the velocity
            planner places feet at ± width / 2 from the body path).
        min_width: least lateral offset of the landing foot on its own side, m (no crossing).
        max_width: largest lateral offset, m.
        max_forward: largest forward reach, m.
        max_backward: largest backward reach, m (≥ 0).
        max_turn: largest yaw of the landing foot relative to the stance foot, rad.
        max_height: largest height change between the two footholds, m.
        clearance: least distance between the two soles, m (needs a :class:`FootShape` to check).
        max_cross: crossover steps: a landing foot may cross to the stance foot's far side, up to
            this lateral offset (m) past the stance foot's centre, when it lands ahead of the stance
            sole (forward offset at least the sole's length plus ``clearance``, within
            ``max_forward``; needs a :class:`FootShape`); 0: no crossing (``min_width`` holds).
    """

    width: float = 0.2
    min_width: float = 0.14
    max_width: float = 0.4
    max_forward: float = 0.3
    max_backward: float = 0.15
    max_turn: float = 0.35
    max_height: float = 0.1
    clearance: float = 0.01
    max_cross: float = 0.0

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise InputError(f"step limits: {f.name} must be a finite number >= 0, got {v!r}")
        if not self.min_width <= self.width <= self.max_width:
            raise InputError(
                "step limits: need min_width <= width <= max_width, got "
                f"{self.min_width}, {self.width}, {self.max_width}"
            )

    def scaled(self, **changes) -> StepLimits:
        """A copy with some limits replaced (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)


def _soles_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Distance (m) between two convex polygons (k, 2); negative (-1) when they overlap."""
    axes: list[np.ndarray] = []  # separating axis test over both polygons' edge normals
    for P in (a, b):
        e = np.roll(P, -1, axis=0) - P
        axes.extend(np.stack([e[:, 1], -e[:, 0]], axis=1))
    separated = False
    for n in axes:
        n = n / np.linalg.norm(n)
        pa, pb = a @ n, b @ n
        if pa.max() < pb.min() or pb.max() < pa.min():
            separated = True
            break
    if not separated:
        return -1.0
    d = min(_polygon.signed_distance(p, b) for p in a)
    return min(d, min(_polygon.signed_distance(p, a) for p in b))


def step_violations(stance: Footstep, landing: Footstep, limits: StepLimits, shape: FootShape | None = None) -> list:
    """The limits a step from ``stance`` to ``landing`` violates (empty when feasible).

    Returns:
        list of ``(name, value, bound)``: the violated limit's name, the step's value and the bound.
    """
    tol = 1e-9
    d = stance.to_local(landing.position)
    lateral = landing.foot.side * d[1]
    turn = landing.yaw - stance.yaw
    turn = math.atan2(math.sin(turn), math.cos(turn))
    out = []
    if d[0] > limits.max_forward + tol:
        out.append(("max_forward", d[0], limits.max_forward))
    if -d[0] > limits.max_backward + tol:
        out.append(("max_backward", -d[0], limits.max_backward))
    crossing = (
        limits.max_cross > 0
        and shape is not None
        and lateral >= -limits.max_cross - tol
        and d[0] >= shape.length + limits.clearance - tol
    )
    if lateral < limits.min_width - tol and not crossing:
        out.append(("min_width", lateral, limits.min_width))
    if lateral > limits.max_width + tol:
        out.append(("max_width", lateral, limits.max_width))
    if abs(turn) > limits.max_turn + tol:
        out.append(("max_turn", abs(turn), limits.max_turn))
    if abs(d[2]) > limits.max_height + tol:
        out.append(("max_height", abs(d[2]), limits.max_height))
    if shape is not None and landing.foot is not stance.foot:
        gap = _soles_distance(shape.corners(stance), shape.corners(landing))
        if gap < limits.clearance - tol:
            out.append(("clearance", gap, limits.clearance))
    return out


@dataclasses.dataclass(frozen=True)
class VelocityCommand:
    """A walking command in the body frame: ``vx`` forward, ``vy`` leftward (m/s), ``yaw_rate`` (rad/s)."""

    vx: float = 0.0
    vy: float = 0.0
    yaw_rate: float = 0.0

    def __post_init__(self) -> None:
        for f in ("vx", "vy", "yaw_rate"):
            # a numpy scalar (an array's entry) kept as a float
            object.__setattr__(self, f, checks.finite_number(getattr(self, f), f"velocity command: {f}"))

    def scaled(self, s: float) -> VelocityCommand:
        return VelocityCommand(self.vx * s, self.vy * s, self.yaw_rate * s)


def integrate_twist(pose, command: VelocityCommand, t: float) -> np.ndarray:
    """The planar pose ``(x, y, θ)`` reached from ``pose`` (3,) after ``t`` s at the body-frame twist
    ``command`` (the exact SE(2) exponential: a straight line, or a circular arc when turning)."""
    x, y, th = (float(v) for v in np.asarray(pose, dtype=float).reshape(3))
    vx, vy, w = command.vx, command.vy, command.yaw_rate
    a = w * t
    if abs(a) < 1e-9:  # second-order series of sin(a)/a and (1 - cos a)/a
        s1, s2 = t * (1 - a * a / 6), t * (a / 2 - a**3 / 24)
    else:
        s1, s2 = math.sin(a) / w, (1 - math.cos(a)) / w
    dx, dy = vx * s1 - vy * s2, vx * s2 + vy * s1
    c, s = math.cos(th), math.sin(th)
    return np.array([x + c * dx - s * dy, y + s * dx + c * dy, th + a])


@dataclasses.dataclass(frozen=True)
class FootstepPlan:
    """A sequence of footholds from an initial stance.

    Attributes:
        initial: the feet's footholds before the first step, ``{Foot.LEFT: ..., Foot.RIGHT: ...}``.
        steps: the footholds in the order the feet land.
        command: the velocity command realized (after any scaling to the limits), or None for a
            plan given as a list.
        step_duration: the step period assumed by the velocity planner, s (None for a list).
    """

    initial: dict
    steps: tuple
    command: VelocityCommand | None = None
    step_duration: float | None = None

    def footholds_after(self, k: int) -> dict:
        """The feet's footholds after the first ``k`` steps have landed."""
        feet = dict(self.initial)
        for step in self.steps[:k]:
            feet[step.foot] = step
        return feet

    @property
    def final(self) -> dict:
        """The feet's footholds after the last step."""
        return self.footholds_after(len(self.steps))

    @staticmethod
    def midpose(feet: dict) -> np.ndarray:
        """The planar pose ``(x, y, θ)`` (3,) halfway between two footholds (mean yaw)."""
        left, right = feet[Foot.LEFT], feet[Foot.RIGHT]
        mid = 0.5 * (left.position + right.position)
        dyaw = math.atan2(math.sin(left.yaw - right.yaw), math.cos(left.yaw - right.yaw))
        return np.array([mid[0], mid[1], right.yaw + 0.5 * dyaw])


def _initial(left: Footstep, right: Footstep) -> dict:
    if not (isinstance(left, Footstep) and isinstance(right, Footstep)):
        raise InputError("initial footholds must be Footstep objects")
    if left.foot is not Foot.LEFT or right.foot is not Foot.RIGHT:
        raise InputError(f"initial footholds must be the left then the right foot, got {left.foot}, {right.foot}")
    return {Foot.LEFT: left, Foot.RIGHT: right}


def _check_sequence(initial: dict, steps: Sequence[Footstep], limits: StepLimits, shape: FootShape | None) -> None:
    feet = dict(initial)
    for k, step in enumerate(steps):
        if not isinstance(step, Footstep):
            raise InputError(f"step {k} must be a Footstep, got {type(step).__name__}")
        stance = feet[step.foot.other]
        bad = step_violations(stance, step, limits, shape)
        if bad:
            what = ", ".join(f"{n} ({v:.4g} vs limit {b:.4g})" for n, v, b in bad)
            raise InputError(
                f"step {k} ({step.foot.value} foot to {step.position.round(4).tolist()}, yaw {step.yaw:.4g}) "
                f"is out of reach from the {stance.foot.value} foot at {stance.position.round(4).tolist()}: {what}"
            )
        feet[step.foot] = step


def plan_from_footsteps(
    left: Footstep,
    right: Footstep,
    steps: Sequence[Footstep],
    limits: StepLimits | None = None,
    shape: FootShape | None = None,
) -> FootstepPlan:
    """A plan from explicit footholds, checked against ``limits`` (default :class:`StepLimits`).

    Args:
        left, right: the initial footholds.
        steps: footholds in landing order (any foot order; normally alternating).
        limits: reach limits relative to the stance foot.
        shape: the sole rectangle, to check the clearance between the soles (optional).

    Raises:
        InputError: a step out of reach, naming the step, the limit and the values.
    """
    initial = _initial(left, right)
    limits = limits or StepLimits()
    steps = tuple(steps)
    _check_sequence(initial, steps, limits, shape)
    return FootstepPlan(initial, steps)


def _velocity_steps(initial: dict, command: VelocityCommand, n: int, T: float, width: float, first: Foot) -> list:
    start = FootstepPlan.midpose(initial)
    z = 0.5 * (initial[Foot.LEFT].position[2] + initial[Foot.RIGHT].position[2])
    steps = []
    foot = first
    for k in range(1, n + 2):
        x, y, th = integrate_twist(start, command, min(k, n) * T)
        # an opening step (towards the side the body moves or turns to) leads by one step's motion
        lead = k < n
        lateral = command.vy * T if lead and foot.side * command.vy > 0 else 0.0
        turn = command.yaw_rate * T if lead and foot.side * command.yaw_rate > 0 else 0.0
        offset = foot.side * width / 2 + lateral
        yaw = th + turn
        p = np.array([x - math.sin(yaw) * offset, y + math.cos(yaw) * offset, z])
        steps.append(Footstep(foot, p, yaw))
        foot = foot.other
    return steps


#: The most steps one velocity plan holds (about 80 min of walking at 0.5 s a step): a longer walk is
#: planned as successive plans (the next one from the footholds the last one ends on), so a mistyped
#: count fails at once instead of planning for hours.
MAX_STEPS = 10_000


def plan_from_velocity(
    command: VelocityCommand,
    left: Footstep,
    right: Footstep,
    n_steps: int,
    step_duration: float,
    limits: StepLimits | None = None,
    shape: FootShape | None = None,
    first_foot: Foot | None = None,
) -> FootstepPlan:
    """Footsteps following a constant body twist for ``n_steps`` steps, then a closing step.

    Args:
        command: body-frame velocity (see :class:`VelocityCommand`).
        left, right: the initial footholds; the body frame starts halfway between them.
        n_steps: number of commanded steps (1 to :data:`MAX_STEPS`); the plan has ``n_steps + 1`` footsteps.
        step_duration: the step period ``T`` (single + double support), s.
        limits: reach limits (default :class:`StepLimits`); ``limits.width`` is the nominal width.
        shape: the sole rectangle, to check the clearance between the soles (optional).
        first_foot: the first foot to step; default the foot on the side the command moves
            (``vy``) or, without lateral motion, turns (``yaw_rate``) towards; the left foot otherwise.

    Returns:
        The plan; ``plan.command`` is the command realized: ``command`` itself, or scaled down
        uniformly when it asked for steps beyond the limits. The final stance is symmetric about
        ``integrate_twist(midpose(initial), plan.command, n_steps * step_duration)``.

    Raises:
        InputError: bad arguments, or initial footholds from which even stepping in place is out of
            the limits.
    """
    if not isinstance(command, VelocityCommand):
        raise InputError(f"command must be a VelocityCommand, got {type(command).__name__}")
    if not (isinstance(n_steps, (int, np.integer)) and not isinstance(n_steps, bool) and 1 <= n_steps <= MAX_STEPS):
        raise InputError(
            f"n_steps must be an integer from 1 to {MAX_STEPS} (wbc.locomotion.MAX_STEPS; plan a longer walk as "
            f"successive plans), got {n_steps!r}"
        )
    if not (isinstance(step_duration, (int, float)) and math.isfinite(step_duration) and step_duration > 0):
        raise InputError(f"step_duration must be a positive number of seconds, got {step_duration!r}")
    initial = _initial(left, right)
    limits = limits or StepLimits()
    if first_foot is None:
        lead = command.vy if abs(command.vy) > 1e-12 else command.yaw_rate
        first_foot = Foot.RIGHT if lead < 0 else Foot.LEFT
    if not isinstance(first_foot, Foot):
        raise InputError(f"first_foot must be a Foot, got {first_foot!r}")

    def feasible(s: float) -> bool:
        steps = _velocity_steps(initial, command.scaled(s), int(n_steps), step_duration, limits.width, first_foot)
        try:
            _check_sequence(initial, steps, limits, shape)
        except InputError:
            return False
        return True

    scale = 1.0
    if not feasible(1.0):
        if not feasible(0.0):
            steps = _velocity_steps(initial, command.scaled(0.0), int(n_steps), step_duration, limits.width, first_foot)
            _check_sequence(initial, steps, limits, shape)  # raises with the offending step
        lo, hi = 0.0, 1.0
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if feasible(mid) else (lo, mid)
        scale = lo
    realized = command.scaled(scale)
    steps = _velocity_steps(initial, realized, int(n_steps), step_duration, limits.width, first_foot)
    return FootstepPlan(initial, tuple(steps), realized, float(step_duration))
