"""The rotation and rigid-motion groups SO(3) and SE(3): written once, for numpy and for CasADi.

Every function takes either numpy values (then it computes with numpy and returns numpy arrays) or
CasADi matrices (``SX`` symbols while tracing, ``MX``, or ``DM`` numbers; then it returns CasADi
expressions whose branches are ``if_else`` nodes, safe to trace and compile). The formulas are the
same text in both cases; :class:`_Backend` supplies the handful of primitives that differ.

Conventions (Pinocchio's):

* a rotation vector ``ω`` (3,) is axis × angle; ``exp3(ω)`` is the rotation by ``|ω|`` about ``ω``;
  ``log3(R)`` returns the angle in ``[0, π]``;
* quaternions are ``(x, y, z, w)``, Eigen's and Pinocchio's storage order;
* a twist is ``ν = [v; ω]`` (linear first), and ``exp6(ν)`` is the placement ``(R, p)`` reached by
  moving at the constant body twist ``ν`` for unit time; ``log6`` is its inverse, so
  ``q₁ ⊖ q₀ = log6(M₀⁻¹ M₁)`` for a free-flyer (Pinocchio's ``difference``).

Accuracy: ``log3`` is accurate at every angle. Away from π it uses ``atan2(|w|, cos θ)`` with
``w = vee(R − Rᵀ)/2 = sin θ · axis`` (no ``arccos``, whose derivative blows up at 0 and π); near π,
where ``w`` carries no precision, it reads the axis off the symmetric part
``(R + Rᵀ)/2 − cos θ I = (1 − cos θ) a aᵀ`` (well conditioned there) and takes the sign from ``w``.
Small angles use Taylor series in ``exp3``, ``log3``, ``exp6`` and ``log6``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import casadi as ca
import numpy as np

__all__ = [
    "skew",
    "vee",
    "exp3",
    "log3",
    "exp6",
    "log6",
    "quaternion_to_rotation",
    "rotation_to_quaternion",
    "quaternion_multiply",
    "exp3_quaternion",
    "is_rotation",
]

#: Below this angle (rad) the small-angle series are used (their error is below 1e-20 there).
SMALL_ANGLE = 1e-4
#: Where ``cos θ`` is below this, ``log3`` reads the axis off the symmetric part of ``R``.
NEAR_PI_COS = -0.9


class _Backend:
    """The primitives the formulas need, for numpy (``symbolic=False``) or CasADi."""

    sin: Any
    cos: Any
    sqrt: Any
    atan2: Any
    fmax: Any
    fmin: Any

    def __init__(self, symbolic: bool) -> None:
        self.symbolic = symbolic
        if symbolic:
            self.sin, self.cos, self.sqrt, self.atan2 = ca.sin, ca.cos, ca.sqrt, ca.atan2
            self.fmax, self.fmin = ca.fmax, ca.fmin
        else:
            self.sin, self.cos, self.sqrt, self.atan2 = np.sin, np.cos, np.sqrt, np.arctan2
            self.fmax, self.fmin = np.maximum, np.minimum

    def where(self, condition, a, b):
        """``a`` where ``condition`` holds, else ``b`` (both already evaluated)."""
        if self.symbolic:
            return ca.if_else(condition, a, b)
        return a if bool(condition) else b

    def select(self, condition, a, b):
        """``a()`` where ``condition`` holds, else ``b()``: numpy evaluates only the branch taken (no
        warnings from the other), CasADi builds both into an ``if_else`` (whose untaken branch may be
        NaN without effect)."""
        if self.symbolic:
            return ca.if_else(condition, a(), b())
        return a() if bool(condition) else b()

    def numbers(self, x):
        """``x`` as this backend's value: a float array for numpy, unchanged for CasADi."""
        return x if self.symbolic else np.asarray(x, dtype=float)

    def vector(self, *entries):
        """A 3- or 4-vector: (n, 1) for CasADi, (n,) for numpy."""
        if self.symbolic:
            return ca.vertcat(*entries)
        return np.array([float(e) for e in entries])

    def matrix(self, rows):
        """A matrix from a list of rows of scalars."""
        if self.symbolic:
            return ca.vertcat(*[ca.horzcat(*row) for row in rows])
        return np.array([[float(e) for e in row] for row in rows])

    def eye(self, n: int):
        return ca.DM.eye(n) if self.symbolic else np.eye(n)

    def mul(self, a, b):
        return ca.mtimes(a, b) if self.symbolic else a @ b

    def dot(self, a, b):
        return ca.dot(a, b) if self.symbolic else float(np.dot(a, b))

    def entries(self, x, n: int) -> list:
        """The ``n`` scalar entries of a vector."""
        if self.symbolic:
            x = ca.vec(x)
            return [x[i] for i in range(n)]
        x = np.asarray(x, dtype=float).reshape(-1)
        return [x[i] for i in range(n)]


def _backend(*values: Any) -> _Backend:
    return _Backend(any(isinstance(v, (ca.SX, ca.MX, ca.DM)) for v in values))


def _check_shape(x: Any, shape: tuple[int, ...], what: str) -> None:
    if isinstance(x, (ca.SX, ca.MX, ca.DM)):
        size = x.shape[0] * x.shape[1]
        ok = x.shape == shape if len(shape) == 2 else size == shape[0] and 1 in x.shape
    else:
        a = np.asarray(x)
        ok = a.shape == shape if len(shape) == 2 else a.size == shape[0] and a.ndim <= 2
    if not ok:
        raise ValueError(f"{what} must have shape {shape}, got {getattr(x, 'shape', None)}")


def skew(w):
    """The cross-product matrix ``[w]×`` (3, 3) of a 3-vector: ``[w]× x = w × x``."""
    _check_shape(w, (3,), "skew: w")
    B = _backend(w)
    x, y, z = B.entries(w, 3)
    return B.matrix([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def vee(S):
    """The 3-vector of the skew-symmetric part of ``S`` (3, 3): ``vee([w]×) = w``."""
    _check_shape(S, (3, 3), "vee: S")
    B = _backend(S)
    S = B.numbers(S)
    return B.vector((S[2, 1] - S[1, 2]) / 2, (S[0, 2] - S[2, 0]) / 2, (S[1, 0] - S[0, 1]) / 2)


def _exp3_coefficients(B: _Backend, theta2):
    """``(sin θ / θ, (1 − cos θ)/θ², θ)`` from ``θ²``, with series below :data:`SMALL_ANGLE`."""
    small = theta2 < SMALL_ANGLE**2
    theta = B.sqrt(B.where(small, 1.0, theta2))
    a = B.where(small, 1 - theta2 / 6 + theta2 * theta2 / 120, B.sin(theta) / theta)
    half = B.sin(theta / 2)  # 1 − cos θ = 2 sin²(θ/2), without cancellation
    b = B.where(small, 0.5 - theta2 / 24 + theta2 * theta2 / 720, 2 * half * half / (theta * theta))
    return a, b, small, theta


def exp3(w):
    """The rotation (3, 3) of the rotation vector ``w`` (3,): Rodrigues' formula."""
    _check_shape(w, (3,), "exp3: w")
    B = _backend(w)
    K = skew(w)
    x, y, z = B.entries(w, 3)
    a, b, _, _ = _exp3_coefficients(B, x * x + y * y + z * z)
    K2 = B.mul(K, K)
    return B.eye(3) + a * K + b * K2


def _of_largest(B, keys: Sequence, candidates: Sequence[Sequence]) -> list:
    """Entry by entry, the candidate vector whose key is the largest of the three ``keys`` (ties: the
    earlier), as branch-free selections (``B.where``: traceable)."""
    a, b, c = keys
    return [
        B.where(a >= b, B.where(a >= c, first, third), B.where(b >= c, second, third))
        for first, second, third in zip(*candidates)
    ]


def log3(R):
    """The rotation vector (3,) of a rotation matrix ``R`` (3, 3), angle in ``[0, π]``, accurate at
    every angle (see the module docstring). At exactly π either of the two opposite vectors is
    returned."""
    _check_shape(R, (3, 3), "log3: R")
    B = _backend(R)
    R = B.numbers(R)
    c = B.fmin(B.fmax((R[0, 0] + R[1, 1] + R[2, 2] - 1) / 2, -1.0), 1.0)
    wx, wy, wz = B.entries(vee(R), 3)  # sin θ · axis
    s = B.sqrt(wx * wx + wy * wy + wz * wz)
    theta = B.atan2(s, c)

    def regular():  # θ / sin θ · w, with the series at small angles
        small = theta < SMALL_ANGLE
        factor = B.where(small, 1 + theta * theta / 6, theta / B.where(small, 1.0, s))
        return B.vector(factor * wx, factor * wy, factor * wz)

    def near_pi():  # a aᵀ = ((R + Rᵀ)/2 − c I)/(1 − c): the column of the largest diagonal, sign from w
        one_c = 1 - c
        d = [(R[i, i] - c) / one_c for i in range(3)]
        candidates = []
        for i in range(3):
            ai = B.sqrt(B.fmax(d[i], 0.0))
            axis = [(R[i, j] + R[j, i]) / (2 * one_c * ai) if j != i else ai for j in range(3)]
            candidates.append(axis)
        pick = _of_largest(B, d, candidates)
        sign = B.where(pick[0] * wx + pick[1] * wy + pick[2] * wz < 0, -1.0, 1.0)
        return B.vector(*[sign * theta * pick[k] for k in range(3)])

    return B.select(c < NEAR_PI_COS, near_pi, regular)


def exp6(nu):
    """The placement ``(R (3, 3), p (3,))`` reached at constant body twist ``nu = [v; ω]`` (6,)
    after unit time (SE(3) exponential)."""
    _check_shape(nu, (6,), "exp6: nu")
    B = _backend(nu)
    e = B.entries(nu, 6)
    v, w = B.vector(*e[0:3]), B.vector(*e[3:6])
    theta2 = e[3] * e[3] + e[4] * e[4] + e[5] * e[5]
    a, b, small, theta = _exp3_coefficients(B, theta2)
    c = B.where(small, 1.0 / 6 - theta2 / 120 + theta2 * theta2 / 5040, (1 - a) / (theta * theta))
    K = skew(w)
    K2 = B.mul(K, K)
    R = B.eye(3) + a * K + b * K2
    V = B.eye(3) + b * K + c * K2
    return R, B.mul(V, v)


def log6(R, p):
    """The body twist ``[v; ω]`` (6,) with ``exp6([v; ω]) = (R, p)`` (SE(3) logarithm), ``|ω| ≤ π``."""
    _check_shape(R, (3, 3), "log6: R")
    _check_shape(p, (3,), "log6: p")
    B = _backend(R, p)
    R, p = B.numbers(R), B.numbers(p)
    w = log3(R)
    wx, wy, wz = B.entries(w, 3)
    theta2 = wx * wx + wy * wy + wz * wz
    small = theta2 < SMALL_ANGLE**2
    theta = B.sqrt(B.where(small, 1.0, theta2))
    # V⁻¹ = I − K/2 + α K²,  α = (1 − θ sin θ / (2 (1 − cos θ))) / θ² = (1 − (θ/2) cot(θ/2)) / θ²
    alpha = B.where(
        small,
        1.0 / 12 + theta2 / 720,
        (1 - theta / 2 * B.cos(theta / 2) / B.sin(theta / 2)) / (theta * theta),
    )
    K = skew(w)
    Vinv = B.eye(3) - 0.5 * K + alpha * B.mul(K, K)
    v = B.mul(Vinv, p if B.symbolic else np.asarray(p, dtype=float).reshape(3))
    if B.symbolic:
        return ca.vertcat(ca.vec(v), w)
    return np.concatenate([v, w])


def quaternion_to_rotation(quat):
    """The rotation (3, 3) of a unit quaternion ``(x, y, z, w)`` (Eigen's formula)."""
    _check_shape(quat, (4,), "quaternion_to_rotation: quat")
    B = _backend(quat)
    x, y, z, w = B.entries(quat, 4)
    tx, ty, tz = 2 * x, 2 * y, 2 * z
    twx, twy, twz = tx * w, ty * w, tz * w
    txx, txy, txz = tx * x, ty * x, tz * x
    tyy, tyz, tzz = ty * y, tz * y, tz * z
    return B.matrix(
        [
            [1 - (tyy + tzz), txy - twz, txz + twy],
            [txy + twz, 1 - (txx + tzz), tyz - twx],
            [txz - twy, tyz + twx, 1 - (txx + tyy)],
        ]
    )


def rotation_to_quaternion(R):
    """The unit quaternion ``(x, y, z, w)`` (4,) of a rotation (3, 3), with ``w ≥ 0`` (Shepperd's
    method: the largest of ``w``, ``x``, ``y``, ``z`` is computed from the diagonal, the others from
    the off-diagonal entries)."""
    _check_shape(R, (3, 3), "rotation_to_quaternion: R")
    B = _backend(R)
    R = B.numbers(R)
    t = [R[0, 0] + R[1, 1] + R[2, 2], R[0, 0], R[1, 1], R[2, 2]]
    # candidate k: the component that is largest in it is computed from 1 + (sum of signed diagonals)
    sw = 2 * B.sqrt(B.fmax(1 + t[0], 1e-300))
    by_w = [(R[2, 1] - R[1, 2]) / sw, (R[0, 2] - R[2, 0]) / sw, (R[1, 0] - R[0, 1]) / sw, sw / 4]
    cands = [by_w]
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2 * B.sqrt(B.fmax(1 + R[i, i] - R[j, j] - R[k, k], 1e-300))
        q = [None] * 4
        q[i] = s / 4
        q[j] = (R[j, i] + R[i, j]) / s
        q[k] = (R[k, i] + R[i, k]) / s
        q[3] = (R[k, j] - R[j, k]) / s
        cands.append(q)
    # pick w's candidate when the trace is positive, else the largest diagonal's
    largest = _of_largest(B, t[1:4], cands[1:4])
    q = [B.where(t[0] > 0, cands[0][c], largest[c]) for c in range(4)]
    sign = B.where(q[3] < 0, -1.0, 1.0)
    norm = B.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    return B.vector(*[sign * qc / norm for qc in q])


def quaternion_multiply(a, b):
    """The Hamilton product ``a ⊗ b`` (4,) of quaternions ``(x, y, z, w)``: the rotation ``b`` then
    ``a`` (``R(a ⊗ b) = R(a) R(b)``)."""
    _check_shape(a, (4,), "quaternion_multiply: a")
    _check_shape(b, (4,), "quaternion_multiply: b")
    B = _backend(a, b)
    ax, ay, az, aw = B.entries(a, 4)
    bx, by, bz, bw = B.entries(b, 4)
    return B.vector(
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    )


def exp3_quaternion(w):
    """The unit quaternion ``(x, y, z, w)`` (4,) of the rotation vector ``w`` (3,):
    ``(sin(θ/2) w/θ, cos(θ/2))`` with ``θ = |w|`` (Pinocchio's ``quaternion::exp3``; its real part is
    negative beyond θ = π), with a series at small angles."""
    _check_shape(w, (3,), "exp3_quaternion: w")
    B = _backend(w)
    x, y, z = B.entries(w, 3)
    theta2 = x * x + y * y + z * z
    small = theta2 < SMALL_ANGLE**2
    theta = B.sqrt(B.where(small, 1.0, theta2))
    half = B.where(small, 0.5 - theta2 / 48 + theta2 * theta2 / 3840, B.sin(theta / 2) / theta)
    real = B.where(small, 1 - theta2 / 8 + theta2 * theta2 / 384, B.cos(theta / 2))
    return B.vector(half * x, half * y, half * z, real)


def is_rotation(R: Any, tolerance: float = 1e-6) -> bool:
    """True when ``R`` (numpy, 3 × 3) is finite, orthonormal within ``tolerance`` and has determinant +1
    (a reflection, determinant −1, is not a rotation)."""
    R = np.asarray(R, dtype=float)
    if R.shape != (3, 3) or not np.all(np.isfinite(R)):
        return False
    return bool(np.abs(R @ R.T - np.eye(3)).max() <= tolerance and abs(np.linalg.det(R) - 1.0) <= tolerance)
