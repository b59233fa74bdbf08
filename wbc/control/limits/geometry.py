"""Convex primitives attached to links, their closest points, and bounding capsules.

A :class:`Sphere` is a centre and a radius; a :class:`Capsule` is a segment and a radius (every
point within ``radius`` of the segment). Both are attached to a frame of the model (usually a URDF
link's), their points given in that frame. The distance between two of them is the distance between
their *cores* (a point or a segment) minus both radii, so everything reduces to the closest points
of two segments (a point being a segment of zero length):

* point–point: the points themselves;
* point–segment: the projection of the point on the segment's line, clamped to the segment;
* segment–segment: the classic clamped solution of the 2×2 normal equations of
  ``min_{s,t∈[0,1]} ‖p₁ + s d₁ − p₂ − t d₂‖²`` (minimize over ``s`` unclamped, clamp; solve ``t``
  for that ``s``, clamp; if ``t`` was clamped, solve ``s`` again for that ``t``, clamp), with
  ``s = 0`` for parallel segments (any closest pair gives the same distance).

:func:`closest_core_points` is written once against CasADi's matrix API: it runs eagerly on ``DM``
numbers and is traced on ``SX`` symbols into the control kernel (branches as ``if_else``, no
division by zero in any branch). :func:`bounding_capsule` fits a capsule around a point cloud (a
mesh's vertices) in numpy.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import casadi as ca
import numpy as np

from ...errors import InputError
from ...model import checks

__all__ = ["Sphere", "Capsule", "Primitive", "Closest", "closest_core_points", "bounding_capsule", "core_points"]


def _point(value, what: str, owner: str) -> tuple[float, float, float]:
    try:
        arr = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise InputError(f"{owner}: {what} must be 3 numbers, got {value!r}") from None
    if arr.shape != (3,) or not np.all(np.isfinite(arr)):
        raise InputError(f"{owner}: {what} must be 3 finite numbers, got {value!r}")
    return float(arr[0]), float(arr[1]), float(arr[2])


def _checked(primitive, kind: str) -> str:
    """Check ``primitive``'s frame and radius (a number > 0, set as a float); the name it goes by."""
    if not isinstance(primitive.frame, str):
        raise InputError(f"a {kind}'s frame must be a frame name, got {primitive.frame!r}")
    owner = f"{kind} on {primitive.frame!r}"
    object.__setattr__(primitive, "radius", checks.positive(primitive.radius, f"{owner}: radius"))
    return owner


@dataclasses.dataclass(frozen=True)
class Sphere:
    """A sphere of ``radius`` (m) centred at ``center`` (3,) m in ``frame``."""

    frame: str
    radius: float
    center: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        owner = _checked(self, "sphere")
        object.__setattr__(self, "center", _point(self.center, "center", owner))

    @property
    def points(self) -> np.ndarray:
        """The core (1, 3): the centre, in the frame."""
        return np.array([self.center])

    def __str__(self) -> str:
        return f"sphere({self.frame})"


@dataclasses.dataclass(frozen=True)
class Capsule:
    """The points within ``radius`` (m) of the segment ``start``–``end`` ((3,) m each, in ``frame``)."""

    frame: str
    radius: float
    start: tuple[float, float, float]
    end: tuple[float, float, float]

    def __post_init__(self) -> None:
        owner = _checked(self, "capsule")
        object.__setattr__(self, "start", _point(self.start, "start", owner))
        object.__setattr__(self, "end", _point(self.end, "end", owner))
        if np.linalg.norm(np.subtract(self.end, self.start)) < 1e-9:
            raise InputError(f"{owner}: start and end coincide; use a Sphere")

    @property
    def points(self) -> np.ndarray:
        """The core (2, 3): the segment's ends, in the frame."""
        return np.array([self.start, self.end])

    @property
    def length(self) -> float:
        return float(np.linalg.norm(np.subtract(self.end, self.start)))

    def __str__(self) -> str:
        return f"capsule({self.frame})"


Primitive = Sphere | Capsule


def core_points(primitive: Primitive, R, p) -> list:
    """The core's points in the world (3, 1) each, the primitive's frame being at ``(R, p)``."""
    return [ca.mtimes(R, ca.DM(x.reshape(3, 1))) + p for x in primitive.points]


def _clamp01(x):
    return ca.fmin(ca.fmax(x, 0), 1)


def _safe_divide(num, den):
    """``num / den`` with ``den`` kept away from zero (used where ``den > 0`` holds by construction)."""
    return num / ca.fmax(den, 1e-300)


@dataclasses.dataclass(frozen=True)
class Closest:
    """Closest points ``w1``, ``w2`` (3, 1) of two cores, with the segment parameters that locate
    them: ``w1 = p₁ + s d1`` on the first core when it is a segment (else ``s``, ``d1`` are None),
    ``w2 = p₂ + t d2`` on the second (else ``t``, ``d2`` are None); ``s, t ∈ [0, 1]``."""

    w1: Any
    w2: Any
    s: Any = None
    d1: Any = None
    t: Any = None
    d2: Any = None


def _point_segment(c, p, q):
    d = q - p
    t = _clamp01(_safe_divide(ca.dot(c - p, d), ca.dot(d, d)))
    return p + t * d, t, d


def _segment_segment(p1, q1, p2, q2) -> Closest:
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e = ca.dot(d1, d1), ca.dot(d2, d2)
    b, c, f = ca.dot(d1, d2), ca.dot(d1, r), ca.dot(d2, r)
    denom = a * e - b * b
    s0 = ca.if_else(denom > 1e-12 * a * e, _clamp01(_safe_divide(b * f - c * e, denom)), 0)
    t0 = _safe_divide(b * s0 + f, e)
    s = ca.if_else(t0 < 0, _clamp01(_safe_divide(-c, a)), ca.if_else(t0 > 1, _clamp01(_safe_divide(b - c, a)), s0))
    t = _clamp01(t0)
    return Closest(p1 + s * d1, p2 + t * d2, s, d1, t, d2)


def closest_core_points(first: list, second: list) -> Closest:
    """Closest points of two cores given as their world points (one point for a sphere, two for a
    capsule; see :func:`core_points`)."""
    if len(first) == 1 and len(second) == 1:
        return Closest(first[0], second[0])
    if len(first) == 1:
        w2, t, d2 = _point_segment(first[0], *second)
        return Closest(first[0], w2, t=t, d2=d2)
    if len(second) == 1:
        w1, s, d1 = _point_segment(second[0], *first)
        return Closest(w1, second[0], s=s, d1=d1)
    return _segment_segment(first[0], first[1], second[0], second[1])


def bounding_capsule(points, frame: str, margin: float = 0.0) -> Primitive:
    """A capsule (or a sphere, for a compact cloud) in ``frame`` containing every point (k, 3) m,
    inflated by ``margin`` m.

    The axis is the principal axis (of the three) that gives the smallest capsule volume; the radius
    is the largest distance of a point from that axis, and each end of the segment is pulled in as
    far as the hemispherical caps still cover the points.
    """
    P = np.asarray(points, dtype=float).reshape(-1, 3)
    if P.shape[0] == 0 or not np.all(np.isfinite(P)):
        raise InputError(f"bounding capsule of {frame!r}: needs finite points, got {P.shape[0]}")
    mean = P.mean(axis=0)
    X = P - mean
    _, axes = np.linalg.eigh(X.T @ X)  # principal axes: the columns
    best = None  # (volume, segment start, segment end, radius): a sphere is a segment of length 0
    for axis in axes.T:
        t = X @ axis
        rho2 = np.maximum(np.einsum("ij,ij->i", X, X) - t * t, 0.0)
        R = float(np.sqrt(rho2.max()))
        cap = np.sqrt(np.maximum(R * R - rho2, 0.0))
        hi, lo = float(np.max(t - cap)), float(np.min(t + cap))
        if hi <= lo:  # caps alone cover the cloud: a sphere around the mid point
            center = mean + 0.5 * (hi + lo) * axis
            radius = float(np.sqrt(np.max(np.einsum("ij,ij->i", P - center, P - center))))
            candidate = (4.0 / 3.0 * np.pi * radius**3, center, center, radius)
        else:
            volume = np.pi * R * R * (hi - lo) + 4.0 / 3.0 * np.pi * R**3
            candidate = (volume, mean + lo * axis, mean + hi * axis, R)
        if best is None or candidate[0] < best[0]:
            best = candidate
    assert best is not None
    _, start, end, radius = best
    if np.linalg.norm(end - start) < 1e-9:
        return Sphere(frame, max(float(radius), 1e-6) + margin, tuple(0.5 * (start + end)))
    return Capsule(frame, max(radius, 1e-6) + margin, tuple(start), tuple(end))
