"""Terrain for walking: surfaces, footholds on them, swings that clear them, footstep plans over them.

A :class:`Terrain` is the ground as the planner and the simulator both see it: planar
:class:`Patch` es (the top faces of solids: stair treads, ramps, stepping stones, platforms), an
optional :class:`HeightField` (rough ground, bilinear between samples) and an optional infinite floor
at a given height. The height at a point is the highest surface over it.

- :meth:`Terrain.foothold`: where a sole at ``(x, y, yaw)`` rests: on a patch, only if the whole sole
  (shrunk by a margin) lies on it, at the patch's height and tilted onto its normal; on the height
  field, on the plane fitted to the heights under the sole and lifted onto their highest points.
- :meth:`Terrain.landing`: the foothold under a measured sole pose (its centre's surface), where a
  landed foot's contact is held.
- :meth:`Terrain.clearance` and :meth:`Terrain.swing`: a swing trajectory is checked against the
  terrain at sample times and points of the sole's underside; wherever the terrain is higher than
  the lower of the swing's two footholds (a stair's edge, a slope, a bump) and the point is not
  over one of those two footholds, the sole must be at least ``margin`` above it. A swing that fails
  is re-shaped, in order, by a horizontal window (rise, move, descend; see
  :class:`~wbc.locomotion.swing.SwingTrajectory`) and higher apexes, until it clears; else
  :class:`~wbc.errors.InputError` names the step.
- :func:`plan_on_terrain`: footsteps along the x axis at a nominal step length, each moved (1 cm
  increments, the nearest first) to where the sole rests on one surface within the step limits and
  climbs at most ``max_climb`` from its own last foothold (on stairs this places the trailing foot
  beside the leading one: a step-to gait).
- :func:`make_terrain`: the scenes of :class:`TerrainKind` (stairs up and down, a 10° slope up and
  down, ±2 cm rough ground, stepping stones) sized for a robot's sole and riser height.

Pure numpy; :mod:`wbc.sim.terrain` builds the same terrain in MuJoCo.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Sequence

import numpy as np

from ..errors import InputError
from .footsteps import MIN_NORMAL_Z, Foot, FootShape, Footstep, StepLimits, step_violations, tilt_rotation
from .swing import SwingState, SwingTrajectory

__all__ = [
    "TerrainKind",
    "Patch",
    "HeightField",
    "Terrain",
    "TerrainSize",
    "make_terrain",
    "plan_on_terrain",
    "CLEARANCE",
]

#: Least height of the swinging sole over terrain it passes above (m): tracking errors are ~1 cm.
CLEARANCE = 0.02
#: A swing is checked at this many times and, on the sole's underside, this grid of points.
_TIME_SAMPLES = 60
_SOLE_GRID = (7, 3)
#: Swing shapes tried in order: (extra apex height m, horizontal window fractions, apex time as a
#: fraction of the swing): the least extra height first; for each, the gentlest window and the apex
#: mid-swing, early (stepping down: clear the edge left behind) or late (stepping up).
_SWING_SHAPES = tuple(
    (extra, window, apex)
    for extra in (0.0, 0.02, 0.04, 0.07, 0.1)
    for window in ((0.0, 0.0), (0.15, 0.1), (0.25, 0.15), (0.3, 0.25))
    for apex in (0.5, 0.35, 0.65)
)


class TerrainKind(enum.Enum):
    """The scenes of :func:`make_terrain` (``demos/walk.py --terrain``)."""

    FLAT = "flat"
    STAIRS = "stairs"
    STAIRS_DOWN = "stairs-down"
    SLOPE = "slope"
    ROUGH = "rough"
    STONES = "stones"


@dataclasses.dataclass(frozen=True, eq=False)
class Patch:
    """A planar rectangle, the top face of a solid ``depth`` m thick below it.

    Attributes:
        corners: the rectangle's corners (4, 3), world, counter-clockwise seen from above.
        depth: thickness of the solid under the face (its normal's opposite direction), m.
    """

    corners: np.ndarray
    depth: float = 0.1

    def __post_init__(self) -> None:
        C = np.array(self.corners, dtype=float)
        if C.shape != (4, 3) or not np.all(np.isfinite(C)):
            raise InputError(f"a terrain patch needs 4 finite corners (4, 3), got shape {C.shape}")
        e1, e2 = C[1] - C[0], C[3] - C[0]
        n = np.cross(e1, e2)
        if np.linalg.norm(n) < 1e-9 or n[2] <= 0:
            raise InputError("a terrain patch's corners must be counter-clockwise seen from above, not degenerate")
        if abs(e1 @ e2) > 1e-9 * np.linalg.norm(e1) * np.linalg.norm(e2) or np.abs(C[2] - (C[1] + e2)).max() > 1e-9:
            raise InputError("a terrain patch must be a rectangle")
        if not (math.isfinite(self.depth) and self.depth > 0):
            raise InputError(f"a terrain patch's depth must be positive, got {self.depth!r}")
        C.setflags(write=False)
        object.__setattr__(self, "corners", C)

    @property
    def normal(self) -> np.ndarray:
        """Unit normal (3,), pointing up."""
        n = np.cross(self.corners[1] - self.corners[0], self.corners[3] - self.corners[0])
        return n / np.linalg.norm(n)

    @property
    def polygon(self) -> np.ndarray:
        """The face seen from above (4, 2)."""
        return self.corners[:, 0:2]

    def height(self, xy: np.ndarray) -> np.ndarray:
        """The plane's height (n,) over points (n, 2)."""
        n, p = self.normal, self.corners[0]
        return p[2] - ((xy[:, 0] - p[0]) * n[0] + (xy[:, 1] - p[1]) * n[1]) / n[2]

    def contains(self, xy: np.ndarray, margin: float = 0.0) -> np.ndarray:
        """Whether points (n, 2) lie over the face shrunk by ``margin`` m: (n,) bools."""
        P = self.polygon
        inside = np.ones(len(xy), dtype=bool)
        for k in range(4):
            a, b = P[k], P[(k + 1) % 4]
            e = b - a
            cross = e[0] * (xy[:, 1] - a[1]) - e[1] * (xy[:, 0] - a[0])
            inside &= cross >= margin * np.linalg.norm(e) - 1e-12
        return inside


@dataclasses.dataclass(frozen=True, eq=False)
class HeightField:
    """Heights on a regular grid: ``heights[i, j]`` at ``(x0 + j spacing, y0 + i spacing)``, linear
    on the two triangles of each cell in between (MuJoCo's triangulation).

    Attributes:
        origin: ``(x0, y0)``, m.
        spacing: grid spacing, m.
        heights: (ny, nx), m (at least 2 × 2).
    """

    origin: tuple
    spacing: float
    heights: np.ndarray

    def __post_init__(self) -> None:
        H = np.array(self.heights, dtype=float)
        if H.ndim != 2 or min(H.shape) < 2 or not np.all(np.isfinite(H)):
            raise InputError(f"height field heights must be a finite (ny, nx) array, ny, nx >= 2, got {H.shape}")
        if not (math.isfinite(self.spacing) and self.spacing > 0):
            raise InputError(f"height field spacing must be positive, got {self.spacing!r}")
        H.setflags(write=False)
        object.__setattr__(self, "heights", H)
        object.__setattr__(self, "origin", tuple(float(v) for v in self.origin))

    @property
    def extent(self) -> tuple[float, float, float, float]:
        """``(x_min, x_max, y_min, y_max)``, m."""
        ny, nx = self.heights.shape
        x0, y0 = self.origin
        return x0, x0 + (nx - 1) * self.spacing, y0, y0 + (ny - 1) * self.spacing

    def contains(self, xy: np.ndarray) -> np.ndarray:
        x0, x1, y0, y1 = self.extent
        return (xy[:, 0] >= x0) & (xy[:, 0] <= x1) & (xy[:, 1] >= y0) & (xy[:, 1] <= y1)

    def height(self, xy: np.ndarray) -> np.ndarray:
        """Height (n,) at points (n, 2) (clamped to the grid): each cell is two triangles split by its
        diagonal from ``(x0, y0)`` to ``(x1, y1)``, as MuJoCo collides a height field."""
        ny, nx = self.heights.shape
        u = np.clip((xy[:, 0] - self.origin[0]) / self.spacing, 0, nx - 1 - 1e-9)
        v = np.clip((xy[:, 1] - self.origin[1]) / self.spacing, 0, ny - 1 - 1e-9)
        j, i = np.floor(u).astype(int), np.floor(v).astype(int)
        fu, fv = u - j, v - i
        H = self.heights
        h00, h10, h01, h11 = H[i, j], H[i, j + 1], H[i + 1, j], H[i + 1, j + 1]
        upper = h00 + fu * (h11 - h01) + fv * (h01 - h00)  # the triangle (0, 0), (0, 1), (1, 1)
        lower = h00 + fu * (h10 - h00) + fv * (h11 - h10)  # the triangle (0, 0), (1, 0), (1, 1)
        return np.where(fv >= fu, upper, lower)


def footstep_of_pose(foot: Foot, pose) -> Footstep:
    """The foothold of a full sole ``pose`` (4, 4): its position, its z axis as the normal and the
    yaw that, tilted onto that normal, gives its rotation exactly."""
    T = np.asarray(pose, dtype=float)
    n = T[0:3, 2]
    Rz = tilt_rotation(n).T @ T[0:3, 0:3]
    return Footstep(foot, T[0:3, 3], math.atan2(Rz[1, 0], Rz[0, 0]), n)


def _sole_points(shape: FootShape, grid: tuple[int, int] = _SOLE_GRID) -> np.ndarray:
    """Points (k, 3) on the sole's underside, sole frame."""
    xs = np.linspace(-shape.length / 2, shape.length / 2, grid[0])
    ys = np.linspace(-shape.width / 2, shape.width / 2, grid[1])
    X, Y = np.meshgrid(xs, ys)
    return np.column_stack([X.ravel(), Y.ravel(), np.zeros(X.size)])


def _flat_points(shape: FootShape, xy, yaw: float) -> np.ndarray:
    """The sole's underside points (k, 2) seen from above at ``xy``, ``yaw``."""
    c, s = math.cos(yaw), math.sin(yaw)
    P = _sole_points(shape)
    return np.column_stack([xy[0] + c * P[:, 0] - s * P[:, 1], xy[1] + s * P[:, 0] + c * P[:, 1]])


class Terrain:
    """The ground: patches, an optional height field and an optional floor (see the module docstring).

    Args:
        patches: the planar faces.
        heightfield: rough ground, or None.
        floor: the height of an infinite floor plane (m), or None (nothing outside the surfaces).
        kind: what scene this is (for titles and summaries), or None.
    """

    def __init__(
        self,
        patches: Sequence[Patch] = (),
        heightfield: HeightField | None = None,
        floor: float | None = 0.0,
        kind: TerrainKind | None = None,
    ) -> None:
        for p in patches:
            if not isinstance(p, Patch):
                raise InputError(f"terrain patches must be Patch objects, got {type(p).__name__}")
        if heightfield is not None and not isinstance(heightfield, HeightField):
            raise InputError(f"heightfield must be a HeightField, got {type(heightfield).__name__}")
        if floor is not None and not math.isfinite(floor):
            raise InputError(f"floor must be a finite height or None, got {floor!r}")
        self.patches = tuple(patches)
        self.heightfield = heightfield
        self.floor = None if floor is None else float(floor)
        self.kind = kind

    # ------------------------------------------------------------------------------- heights
    def height(self, xy) -> np.ndarray:
        """The terrain height (n,) over points (n, 2) (``-inf`` where there is nothing)."""
        xy = np.atleast_2d(np.asarray(xy, dtype=float))[:, 0:2]
        h = np.full(len(xy), -math.inf if self.floor is None else self.floor)
        if self.heightfield is not None:
            inside = self.heightfield.contains(xy)
            h[inside] = np.maximum(h[inside], self.heightfield.height(xy[inside]))
        for p in self.patches:
            inside = p.contains(xy)
            if inside.any():
                h[inside] = np.maximum(h[inside], p.height(xy[inside]))
        return h

    def _top(self, xy: np.ndarray):
        """The surface highest at the point ``xy`` (2,): a Patch, the HeightField, ``"floor"`` or None."""
        best: Patch | HeightField | str | None = None
        top = -math.inf
        pt = xy.reshape(1, 2)
        if self.floor is not None:
            best, top = "floor", self.floor
        if self.heightfield is not None and self.heightfield.contains(pt)[0]:
            h = float(self.heightfield.height(pt)[0])
            if h >= top:
                best, top = self.heightfield, h
        for p in self.patches:
            if p.contains(pt)[0]:
                h = float(p.height(pt)[0])
                if h >= top - 1e-12:
                    best, top = p, h
        return best

    def _on_heightfield(self, foot: Foot, xy: np.ndarray, yaw: float, shape: FootShape) -> Footstep:
        pts = _flat_points(shape, xy, yaw)
        h = self.heightfield.height(pts)  # type: ignore[union-attr]
        A = np.column_stack([np.ones(len(pts)), pts[:, 0] - xy[0], pts[:, 1] - xy[1]])
        coef, *_ = np.linalg.lstsq(A, h, rcond=None)
        coef[0] += float(np.max(h - A @ coef))  # resting on the highest points
        normal = np.array([-coef[1], -coef[2], 1.0])
        return Footstep(foot, np.array([xy[0], xy[1], coef[0]]), yaw, normal)

    def foothold(self, foot: Foot, xy, yaw: float, shape: FootShape, margin: float = 0.0) -> Footstep | None:
        """Where the sole rests with its centre over ``xy`` (2,) at ``yaw`` (rad), or None where it
        would not rest on one surface (straddling an edge or a gap, or off a patch by less than
        ``margin`` m)."""
        xy = np.asarray(xy, dtype=float).reshape(-1)[0:2]
        top = self._top(xy)
        pts = _flat_points(shape, xy, yaw)
        if isinstance(top, Patch):
            if not top.contains(pts, margin).all():
                return None
            return Footstep(foot, np.array([xy[0], xy[1], top.height(xy.reshape(1, 2))[0]]), yaw, top.normal)
        if top is self.heightfield and top is not None:
            if not top.contains(pts).all():
                return None
            return self._on_heightfield(foot, xy, yaw, shape)
        if top == "floor":
            if np.any(self.height(pts) > self.floor + 1e-9):  # type: ignore[operator]
                return None  # partly on a higher surface
            return Footstep(foot, np.array([xy[0], xy[1], float(self.floor)]), yaw)  # type: ignore[arg-type]
        return None

    def landing(self, foot: Foot, pose, shape: FootShape) -> Footstep | None:
        """The foothold under a measured sole ``pose`` (4, 4) (None over nothing): on a patch or the
        floor, its x, y and yaw on that plane; on the height field, the pose itself (where the sole
        settled on the bumps, which a fitted plane only approximates)."""
        fs = Footstep.from_pose(foot, pose)
        xy = fs.position[0:2]
        top = self._top(xy)
        if isinstance(top, Patch):
            return Footstep(foot, np.array([xy[0], xy[1], top.height(xy.reshape(1, 2))[0]]), fs.yaw, top.normal)
        if top is self.heightfield and top is not None:
            T = np.asarray(pose, dtype=float)
            if T[2, 2] < MIN_NORMAL_Z:  # tipped over (falling): the surface's own plane instead
                return self._on_heightfield(foot, xy, fs.yaw, shape)
            return footstep_of_pose(foot, T)
        if top == "floor":
            return Footstep(foot, np.array([xy[0], xy[1], float(self.floor)]), fs.yaw)  # type: ignore[arg-type]
        return None

    # ------------------------------------------------------------------------------- swings
    def clearance(self, swing: SwingTrajectory, start: Footstep, shape: FootShape) -> float:
        """The swing's clearance (m, negative: too low): the least, over sample times and points of
        the sole's underside, of the height above the terrain minus :data:`CLEARANCE`, counted where the
        terrain is higher than the lower of the two footholds and the point is not over either."""
        target = swing.target
        low = min(start.position[2], target.position[2]) + 1e-3
        P = _sole_points(shape)
        worst = math.inf
        for t in np.linspace(swing.t_start, swing.t_end, _TIME_SAMPLES)[1:-1]:
            pose, _, _ = swing.reference(t)
            pts = pose[0:3, 3] + P @ pose[0:3, 0:3].T
            h = self.height(pts[:, 0:2])
            risky = h > low
            for fs in (start, target):
                local = (pts[:, 0:2] - fs.position[0:2]) @ fs.rotation[0:2, 0:2]
                over = (np.abs(local[:, 0]) <= shape.length / 2 + 0.01) & (
                    np.abs(local[:, 1]) <= shape.width / 2 + 0.01
                )
                risky &= ~over
            below = pts[:, 2] - h  # everywhere: never into the ground
            if np.any(below < -1e-3):
                worst = min(worst, float(below.min()) - CLEARANCE)
            if risky.any():
                worst = min(worst, float((pts[risky, 2] - h[risky]).min()) - CLEARANCE)
        return worst

    def swing(
        self,
        start: SwingState,
        target: Footstep,
        t_start: float,
        t_end: float,
        lift_height: float,
        touchdown_velocity: float,
        shape: FootShape,
    ) -> SwingTrajectory:
        """A swing from ``start`` (at rest on a foothold) to ``target`` that clears the terrain (see the
        module docstring).

        Raises:
            InputError: no shape tried clears it (names the footholds and the clearance).
        """
        origin = Footstep(target.foot, start.position, start.yaw, None if start.tilt is None else start.tilt[:, 2])
        worst = -math.inf
        for extra, window, apex in _SWING_SHAPES:
            T = t_end - t_start
            traj = SwingTrajectory(
                start,
                target,
                t_start,
                t_end,
                lift_height + extra,
                touchdown_velocity,
                apex_time=t_start + apex * T,
                window=window,
                flat_top=True,
            )
            c = self.clearance(traj, origin, shape)
            if c >= 0:
                return traj
            worst = max(worst, c)
        raise InputError(
            f"no swing of the {target.foot.value} foot from {np.round(start.position, 3).tolist()} to "
            f"{np.round(target.position, 3).tolist()} clears the terrain by {CLEARANCE} m "
            f"(best {worst + CLEARANCE:.3f} m): the step is too high or too long"
        )


# =================================================================================== planning
def plan_on_terrain(
    terrain: Terrain,
    left: Footstep,
    right: Footstep,
    distance: float,
    step_length: float,
    limits: StepLimits,
    shape: FootShape,
    max_climb: float,
    margin: float = 0.01,
    max_steps: int = 200,
):
    """Footsteps straight along +x over ``terrain`` until the feet's midpoint has advanced
    ``distance`` m, then a closing step (see the module docstring).

    Returns:
        A :class:`~wbc.locomotion.footsteps.FootstepPlan`.

    Raises:
        InputError: no foothold within reach for some step (named), or bad arguments.
    """
    from .footsteps import FootstepPlan, _initial

    initial = _initial(left, right)
    for name, v in (("distance", distance), ("step_length", step_length), ("max_climb", max_climb)):
        if not (math.isfinite(v) and v > 0):
            raise InputError(f"plan_on_terrain: {name} must be positive, got {v!r}")
    feet = dict(initial)
    lanes = {f: float(fs.position[1]) for f, fs in feet.items()}
    goal = 0.5 * (left.position[0] + right.position[0]) + distance
    foot, steps = Foot.LEFT, list[Footstep]()
    offsets = np.arange(-limits.max_backward - limits.max_forward, limits.max_forward + 1e-9, 0.01)
    while len(steps) < max_steps:
        stance, own = feet[foot.other], feet[foot]
        closing = stance.position[0] >= goal - 0.5 * step_length
        x_nom = stance.position[0] if closing else min(stance.position[0] + step_length, max(goal, stance.position[0]))
        candidates = sorted(stance.position[0] + offsets, key=lambda x: (abs(x - x_nom), -x))
        chosen = None
        for x in candidates:
            fs = terrain.foothold(foot, (x, lanes[foot]), 0.0, shape, margin)
            if fs is None or abs(fs.position[2] - own.position[2]) > max_climb + 1e-9:
                continue
            if step_violations(stance, fs, limits, shape):
                continue
            chosen = fs
            break
        if chosen is None:
            raise InputError(
                f"plan_on_terrain: step {len(steps)} ({foot.value} foot) has no foothold within the step limits "
                f"from the {stance.foot.value} foot at {np.round(stance.position, 3).tolist()}"
            )
        steps.append(chosen)
        feet[foot] = chosen
        foot = foot.other
        if closing:
            break
    return FootstepPlan(initial, tuple(steps))


# =================================================================================== scenes
@dataclasses.dataclass(frozen=True)
class TerrainSize:
    """Dimensions of the scenes of :func:`make_terrain` for one robot, m (angle in degrees).

    Attributes:
        riser: stair height.
        tread: stair depth (the sole fits on it with a margin).
        steps: number of stairs.
        slope_deg: ramp angle.
        ramp: ramp length (along x).
        rough: amplitude of the rough ground (heights within ± this).
        stone: stepping stone size (along x, along y).
        stone_pitch: x distance between consecutive stones (one per step, lanes alternating).
        stones: number of stones.
        lane: lateral distance between the two lanes of stones (the stance width).
        start: x where the scene begins (the robot starts at x = 0).
        width: lateral extent of the scene.
    """

    riser: float = 0.15
    tread: float = 0.3
    steps: int = 4
    slope_deg: float = 10.0
    ramp: float = 1.2
    rough: float = 0.02
    stone: tuple = (0.28, 0.2)
    stone_pitch: float = 0.25
    stones: int = 8
    lane: float = 0.2
    start: float = 0.35
    width: float = 1.2


def _box(x0: float, x1: float, y0: float, y1: float, z: float, depth: float) -> Patch:
    return Patch(np.array([[x0, y0, z], [x1, y0, z], [x1, y1, z], [x0, y1, z]]), depth)


def _ramp(x0: float, x1: float, y0: float, y1: float, z0: float, z1: float, depth: float) -> Patch:
    return Patch(np.array([[x0, y0, z0], [x1, y0, z1], [x1, y1, z1], [x0, y1, z0]]), depth)


def make_terrain(kind: TerrainKind | str, size: TerrainSize = TerrainSize(), seed: int = 0) -> Terrain:
    """The scene ``kind`` (along +x from ``size.start``; the robot starts at the origin on z = 0).

    - ``flat``: the floor.
    - ``stairs``: ``size.steps`` stairs up, then a landing; ``stairs-down``: from a platform, as many down.
    - ``slope``: a ramp up at ``size.slope_deg``, a plateau, a ramp down, the floor.
    - ``rough``: a smooth random height field (12 waves of 1 to 3 m in random directions, ``seed``),
      flat at the start, scaled so that its heights within 0.25 m of the path reach ± ``size.rough``.
    - ``stones``: stepping stones in two staggered lanes over a 0.3 m deep pit, between two platforms.
    """
    try:
        kind = TerrainKind(kind)
    except ValueError:
        raise InputError(f"unknown terrain {kind!r}: one of {', '.join(k.value for k in TerrainKind)}") from None
    s = size
    w0, w1 = -s.width / 2, s.width / 2
    if kind is TerrainKind.FLAT:
        return Terrain(floor=0.0, kind=kind)
    if kind in (TerrainKind.STAIRS, TerrainKind.STAIRS_DOWN):
        sign = 1.0 if kind is TerrainKind.STAIRS else -1.0
        base = 0.0 if sign > 0 else -s.steps * s.riser
        patches = [] if sign > 0 else [_box(-1.0, s.start, w0, w1, 0.0, -base)]
        for i in range(1, s.steps + 1):
            x0 = s.start + (i - 1) * s.tread
            x1 = x0 + (s.tread if i < s.steps else 1.5)
            z = sign * i * s.riser
            if z - base > 1e-9:  # going down, the last level is the floor
                patches.append(_box(x0, x1, w0, w1, z, z - base))
        return Terrain(patches, floor=base, kind=kind)
    if kind is TerrainKind.SLOPE:
        rise = s.ramp * math.tan(math.radians(s.slope_deg))
        a, b = s.start, s.start + s.ramp
        c, d = b + 0.8, b + 0.8 + s.ramp
        patches = [
            _ramp(a, b, w0, w1, 0.0, rise, 0.1),
            _box(b, c, w0, w1, rise, rise),
            _ramp(c, d, w0, w1, rise, 0.0, 0.1),
        ]
        return Terrain(patches, floor=0.0, kind=kind)
    if kind is TerrainKind.ROUGH:
        rng = np.random.default_rng(seed)
        spacing, length = 0.02, 4.0
        xs = np.arange(-0.6, s.start + length + 1e-9, spacing)
        ys = np.arange(w0, w1 + 1e-9, spacing)
        X, Y = np.meshgrid(xs, ys)
        H = np.zeros_like(X)
        for _ in range(12):  # wavelengths 1 to 3 m: under a sole, planar within a few millimetres
            k = 2 * math.pi / rng.uniform(1.0, 3.0)
            theta = rng.uniform(0, 2 * math.pi)
            phase = rng.uniform(0, 2 * math.pi)
            H += np.sin(k * (X * math.cos(theta) + Y * math.sin(theta)) + phase)
        ramp_in = np.clip((X - s.start) / 0.3, 0.0, 1.0)
        H = (H - H.mean()) * ramp_in * ramp_in * (3 - 2 * ramp_in)
        corridor = np.abs(Y) <= 0.25  # where the feet go: the heights there span ± rough
        H *= s.rough / np.abs(H[corridor]).max()
        H = np.clip(H, -s.rough, s.rough)
        return Terrain(heightfield=HeightField((xs[0], ys[0]), spacing, H), floor=-2 * s.rough - 0.01, kind=kind)
    # stones: the gap between consecutive stones (and the platforms) is the pitch minus a stone's length
    depth = 0.3
    gap = s.stone_pitch - s.stone[0]
    if gap <= 0:
        raise InputError(f"stepping stones {s.stone[0]} m long at a {s.stone_pitch} m pitch leave no gap")
    first = s.start + gap + s.stone[0] / 2
    patches = [_box(-1.0, s.start, w0, w1, 0.0, depth)]
    for i in range(s.stones):
        x = first + i * s.stone_pitch
        y = (s.lane / 2) * (1 if i % 2 == 0 else -1)
        patches.append(_box(x - s.stone[0] / 2, x + s.stone[0] / 2, y - s.stone[1] / 2, y + s.stone[1] / 2, 0.0, depth))
    end = first + (s.stones - 1) * s.stone_pitch + s.stone[0] / 2 + gap
    patches.append(_box(end, end + 1.5, w0, w1, 0.0, depth))
    return Terrain(patches, floor=-depth, kind=kind)
