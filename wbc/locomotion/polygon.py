"""Convex support polygons in the ground plane: hulls, containment, distances, projections.

Everything is 2D (world x, y) and pure numpy. Polygons are arrays (k, 2) of vertices in
counter-clockwise order without repetition (``k ≥ 1``; a single point or a segment are degenerate
polygons and handled as such). The support polygon of a biped is the convex hull of the corners
of the soles in contact (:func:`support_polygon` in :mod:`wbc.locomotion.footsteps`).
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError

__all__ = ["convex_hull", "signed_distance", "contains", "project", "shrink"]

_EPS = 1e-12


def _points(points, name: str) -> np.ndarray:
    P = np.asarray(points, dtype=float)
    if P.ndim != 2 or P.shape[1] != 2 or P.shape[0] == 0:
        raise InputError(f"{name} must be an array (k, 2) of ground-plane points with k >= 1, got shape {P.shape}")
    if not np.all(np.isfinite(P)):
        raise InputError(f"{name} has non-finite entries")
    return P


def _point(point, name: str = "point") -> np.ndarray:
    p = np.asarray(point, dtype=float).reshape(-1)
    if p.shape not in ((2,), (3,)) or not np.all(np.isfinite(p)):
        raise InputError(f"{name} must be 2 or 3 finite numbers (x, y[, z]), got {np.asarray(point).shape}")
    return p[0:2]


def convex_hull(points) -> np.ndarray:
    """Convex hull (k, 2) of ground-plane points (n, 2), counter-clockwise (Andrew's monotone chain).

    Collinear and duplicate points are dropped; a single distinct point gives (1, 2), collinear
    points the segment's two ends (2, 2).
    """
    P = _points(points, "points")
    P = np.unique(np.round(P, 15), axis=0)  # sorted by x, then y
    if len(P) <= 2:
        return P

    def cross(o, a, b) -> float:
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower: list = []
    for p in P:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= _EPS:
            lower.pop()
        lower.append(p)
    upper: list = []
    for p in P[::-1]:
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= _EPS:
            upper.pop()
        upper.append(p)
    hull = np.array(lower[:-1] + upper[:-1])
    return hull if len(hull) else P[:1]


def _closest_on_segment(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = b - a
    L2 = float(d @ d)
    if L2 <= _EPS:
        return a.copy()
    s = min(1.0, max(0.0, float((p - a) @ d) / L2))
    return a + s * d


def signed_distance(point, polygon) -> float:
    """Signed distance (m) from ``point`` (2,) or (3,) (z ignored) to a convex ``polygon`` (k, 2).

    Negative inside (minus the distance to the nearest edge), positive outside (the Euclidean
    distance to the polygon), zero on the boundary. Degenerate polygons (a point, a segment) have
    no inside: the distance is then never negative.
    """
    p = _point(point)
    V = _points(polygon, "polygon")
    if len(V) == 1:
        return float(np.linalg.norm(p - V[0]))
    if len(V) == 2:
        return float(np.linalg.norm(p - _closest_on_segment(p, V[0], V[1])))
    edges = np.roll(V, -1, axis=0) - V
    normals = np.stack([edges[:, 1], -edges[:, 0]], axis=1)  # outward for counter-clockwise order
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    along = np.einsum("ij,ij->i", p - V, normals)
    if np.all(along <= 0.0):
        return float(np.max(along))
    return float(min(np.linalg.norm(p - _closest_on_segment(p, V[i], V[(i + 1) % len(V)])) for i in range(len(V))))


def contains(polygon, point, tolerance: float = 1e-9) -> bool:
    """Whether ``point`` lies in the convex ``polygon`` (k, 2), within ``tolerance`` (m)."""
    return signed_distance(point, polygon) <= tolerance


def project(point, polygon) -> np.ndarray:
    """The point (2,) of the convex ``polygon`` (k, 2) closest to ``point`` (itself when inside)."""
    p = _point(point)
    V = _points(polygon, "polygon")
    if len(V) == 1:
        return V[0].copy()
    if len(V) >= 3 and signed_distance(p, V) <= 0.0:
        return p.copy()
    n = len(V) if len(V) >= 3 else 1
    best = min(
        (_closest_on_segment(p, V[i], V[(i + 1) % len(V)]) for i in range(n)), key=lambda c: np.sum((c - p) ** 2)
    )
    return best


def shrink(polygon, margin: float) -> np.ndarray:
    """The convex ``polygon`` (k, 2) with every edge moved inwards by ``margin`` (m ≥ 0).

    Returns the shrunken polygon (k', 2); when the margin consumes the polygon, its vertex
    average (1, 2) is returned instead of an empty set, so callers always get a target.
    """
    V = _points(polygon, "polygon")
    if not (np.isfinite(margin) and margin >= 0):
        raise InputError(f"margin must be finite and >= 0, got {margin!r}")
    if margin == 0.0 or len(V) < 3:
        return V.copy()
    edges = np.roll(V, -1, axis=0) - V
    normals = np.stack([edges[:, 1], -edges[:, 0]], axis=1)
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    offsets = np.einsum("ij,ij->i", V, normals) - margin  # the half-planes n·x <= offset
    P = V.copy()
    for n, c in zip(normals, offsets):  # Sutherland-Hodgman clipping by each moved edge
        P = _clip(P, n, c)
        if len(P) == 0:
            break
    if len(P) >= 3:
        return convex_hull(P)
    # the margin consumes the polygon: fall back on its vertex average
    return V.mean(axis=0).reshape(1, 2)


def _clip(P: np.ndarray, n: np.ndarray, c: float) -> np.ndarray:
    """The convex polygon ``P`` (k, 2) cut by the half-plane ``n·x <= c``."""
    out = []
    k = len(P)
    for i in range(k):
        a, b = P[i], P[(i + 1) % k]
        da, db = float(n @ a) - c, float(n @ b) - c
        if da <= 0.0:
            out.append(a)
        if (da < 0.0 < db) or (db < 0.0 < da):
            out.append(a + da / (da - db) * (b - a))
    return np.array(out).reshape(-1, 2)
