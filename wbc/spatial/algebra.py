"""Spatial algebra, written once against CasADi's matrix API.

**Ordering.** Every spatial vector in wbc is ordered ``[linear; angular]``, as in Pinocchio:
a motion (twist, spatial acceleration) is ``[v; ω]`` and a force (wrench) is ``[f; n]``.
No other ordering is used anywhere in the package.

**Placements.** A placement ``M = SE3(R, p)`` of a child frame in a parent frame maps child
coordinates to parent coordinates, ``x_parent = R x_child + p`` (Pinocchio's ``SE3``).
``act_*`` expresses a child-frame quantity in the parent frame, ``act_inv_*`` the reverse.

Every function accepts CasADi ``DM`` (numbers, eager evaluation), ``SX`` (symbols, tracing) or
numpy arrays for constants, and returns CasADi matrices. Matrix arguments of shape ``(6, k)`` are
transformed column by column, so the same functions move single vectors and the matrix-valued
quantities of the IIM and the Delassus algorithms. Functions avoid forming 6x6 transforms: they
work on the 3x3 blocks, which keeps traced kernels small.

Glossary (Featherstone's names, used in the algorithms):
  ``X``  placement / Plücker transform   ``I``  spatial inertia (6, 6)
  ``×m`` motion cross product            ``×*`` force cross product
"""

from __future__ import annotations

from typing import Any, NamedTuple

import casadi as ca
import numpy as np

from .lie import skew

#: A CasADi SX / DM / MX matrix or a numpy array (CasADi's stubs do not type mixed operands).
Matrix = Any

__all__ = [
    "SE3",
    "identity",
    "compose",
    "inverse",
    "act_motion",
    "act_inv_motion",
    "act_force",
    "act_inv_force",
    "act_inertia",
    "act_inv_inertia",
    "cross_motion",
    "cross_force",
    "rigid_inertia",
    "first_moment",
    "RigidInertia",
    "rigid_body_force",
    "symmetric",
    "rotation_about_axis",
]


class SE3(NamedTuple):
    """A rigid placement: rotation ``R`` (3, 3) and translation ``p`` (3, 1), in metres."""

    R: Matrix
    p: Matrix


def identity() -> SE3:
    """The identity placement, as numpy constants."""
    return SE3(np.eye(3), np.zeros((3, 1)))


def compose(a: SE3, b: SE3) -> SE3:
    """``a * b``: placement of frame c in frame a, given c in b (``b``) and b in a (``a``)."""
    return SE3(ca.mtimes(a.R, b.R), a.p + ca.mtimes(a.R, b.p))


def inverse(m: SE3) -> SE3:
    """The inverse placement (parent in child)."""
    Rt = m.R.T
    return SE3(Rt, -ca.mtimes(Rt, m.p))


def _cross(p: Matrix, X: Matrix) -> Matrix:
    """``p × X`` column by column, for ``X`` of shape (3, k)."""
    if X.shape[1] == 1:
        return ca.cross(_as_ca(p), _as_ca(X))
    return ca.mtimes(skew(p), X)


def _as_ca(x: Matrix) -> Matrix:
    return ca.DM(x) if isinstance(x, np.ndarray) else x


def act_motion(m: SE3, V: Matrix) -> Matrix:
    """Express motion(s) ``V`` (6, k), given in the child frame, in the parent frame."""
    w = ca.mtimes(m.R, V[3:6, :])
    return ca.vertcat(ca.mtimes(m.R, V[0:3, :]) + _cross(m.p, w), w)


def act_inv_motion(m: SE3, V: Matrix) -> Matrix:
    """Express motion(s) ``V`` (6, k), given in the parent frame, in the child frame."""
    Rt = m.R.T
    return ca.vertcat(ca.mtimes(Rt, V[0:3, :] - _cross(m.p, V[3:6, :])), ca.mtimes(Rt, V[3:6, :]))


def act_force(m: SE3, F: Matrix) -> Matrix:
    """Express force(s) ``F`` (6, k), given in the child frame, in the parent frame."""
    f = ca.mtimes(m.R, F[0:3, :])
    return ca.vertcat(f, ca.mtimes(m.R, F[3:6, :]) + _cross(m.p, f))


def act_inv_force(m: SE3, F: Matrix) -> Matrix:
    """Express force(s) ``F`` (6, k), given in the parent frame, in the child frame."""
    Rt = m.R.T
    return ca.vertcat(ca.mtimes(Rt, F[0:3, :]), ca.mtimes(Rt, F[3:6, :] - _cross(m.p, F[0:3, :])))


def cross_motion(v: Matrix, M: Matrix) -> Matrix:
    """``v ×m M``: the motion cross product of a motion ``v`` (6,) with motion(s) ``M`` (6, k)."""
    lin, ang = v[0:3], v[3:6]
    return ca.vertcat(_cross(ang, M[0:3, :]) + _cross(lin, M[3:6, :]), _cross(ang, M[3:6, :]))


def cross_force(v: Matrix, F: Matrix) -> Matrix:
    """``v ×* F``: the force cross product of a motion ``v`` (6,) with force(s) ``F`` (6, k)."""
    lin, ang = v[0:3], v[3:6]
    return ca.vertcat(_cross(ang, F[0:3, :]), _cross(ang, F[3:6, :]) + _cross(lin, F[0:3, :]))


def symmetric(S: Matrix) -> Matrix:
    """The symmetric matrix whose upper triangle is that of ``S``.

    When tracing, the entries below the diagonal are then never computed: use it on results
    known to be symmetric (inertias, Delassus blocks) to save operations.
    """
    if isinstance(S, np.ndarray):
        return np.triu(S) + np.triu(S, 1).T
    return ca.triu2symm(ca.triu(S))


def _blocks(I: Matrix) -> tuple[Matrix, Matrix, Matrix]:
    return I[0:3, 0:3], I[0:3, 3:6], I[3:6, 3:6]


def _assemble(A: Matrix, B: Matrix, C: Matrix) -> Matrix:
    return ca.vertcat(ca.horzcat(symmetric(A), B), ca.horzcat(B.T, symmetric(C)))


def act_inertia(m: SE3, I: Matrix) -> Matrix:
    """Express a spatial inertia ``I`` (6, 6), given in the child frame, in the parent frame.

    Any symmetric 6x6 inertia-like matrix (rigid, composite or articulated): ``X* I X⁻¹``.
    """
    A, B, C = _blocks(_as_ca(I))
    R, Rt = m.R, m.R.T
    A = ca.mtimes(ca.mtimes(R, A), Rt)
    B = ca.mtimes(ca.mtimes(R, B), Rt)
    C = ca.mtimes(ca.mtimes(R, C), Rt)
    P = skew(m.p)
    AP = ca.mtimes(A, P)
    PB = ca.mtimes(P, B)
    return _assemble(A, B - AP, C + PB + PB.T - ca.mtimes(P, AP))


def act_inv_inertia(m: SE3, I: Matrix) -> Matrix:
    """Express a spatial inertia ``I`` (6, 6), given in the parent frame, in the child frame."""
    A, B, C = _blocks(_as_ca(I))
    P = skew(m.p)
    AP = ca.mtimes(A, P)
    PB = ca.mtimes(P, B)
    B = B + AP
    C = C - PB - PB.T - ca.mtimes(P, AP)
    R, Rt = m.R, m.R.T
    A = ca.mtimes(ca.mtimes(Rt, A), R)
    B = ca.mtimes(ca.mtimes(Rt, B), R)
    C = ca.mtimes(ca.mtimes(Rt, C), R)
    return _assemble(A, B, C)


def rigid_inertia(mass: float, com: np.ndarray, inertia_com: np.ndarray) -> np.ndarray:
    """The spatial inertia (6, 6) of a rigid body about the frame origin, numpy.

    Args:
        mass: kg.
        com: centre of mass in the frame, (3,), m.
        inertia_com: rotational inertia about the centre of mass in the frame axes, (3, 3), kg m².
    """
    C = skew(np.asarray(com, float).reshape(3))
    I = np.zeros((6, 6))
    I[0:3, 0:3] = mass * np.eye(3)
    I[0:3, 3:6] = -mass * C
    I[3:6, 0:3] = mass * C
    I[3:6, 3:6] = np.asarray(inertia_com, float) - mass * C @ C
    return I


def first_moment(I: np.ndarray) -> np.ndarray:
    """``m c`` (3, 1) of a rigid spatial inertia (numpy): mass times centre of mass, kg m."""
    return np.array([I[5, 1], I[3, 2], I[4, 0]], dtype=float).reshape(3, 1)


class RigidInertia(NamedTuple):
    """A rigid (or composite rigid) body's spatial inertia by its ten parameters, Featherstone's
    ``(m, h, Ī)``: cheaper to move and add than the (6, 6) matrix it stands for,
    ``[[m 1, -[h]×], [[h]×, I]]`` (:func:`rigid_inertia`; its upper-left block stays ``m 1``, which
    the matrix form, traced, would compute as ``m R Rᵀ``).

    Attributes:
        m: mass, kg (a number: the composites of a model have constant masses).
        h: first moment ``m c`` (3, 1), kg m.
        I: rotational inertia (3, 3) about the frame origin, symmetric, kg m².
    """

    m: float
    h: Matrix
    I: Matrix

    @classmethod
    def from_matrix(cls, I6: np.ndarray) -> RigidInertia:
        """The parameters of a rigid spatial inertia (6, 6) (numpy, as :func:`rigid_inertia` builds it)."""
        I6 = np.asarray(I6, dtype=float)
        return cls(float(I6[0, 0]), ca.DM(first_moment(I6)), ca.DM(I6[3:6, 3:6]))

    def __add__(self, other: object) -> RigidInertia:  # type: ignore[override]
        """The inertia of both bodies together (same frame)."""
        if not isinstance(other, RigidInertia):
            return NotImplemented
        return RigidInertia(self.m + other.m, self.h + other.h, self.I + other.I)

    def act(self, X: SE3) -> RigidInertia:
        """This inertia, given in the child frame of ``X``, expressed in the parent frame: ``X* I X⁻¹``.

        With ``h' = R h`` and the origin moved by ``p``: ``I' = R I Rᵀ − [h']×[p]× − [p]×[h']× − m [p]×[p]×``,
        ``h' + m p`` (no division by the mass: composites of massless bodies are fine).
        """
        moved, constant = self.moved(X)
        return moved + constant

    def moved(self, X: SE3) -> tuple[RigidInertia, RigidInertia]:
        """:meth:`act` as two parts whose sum it is: one that varies with ``X.R`` and a constant one
        (numpy, mass 0) when ``X.p`` is a constant: ``m p`` and ``−m [p]×[p]×``. A sum of moved
        inertias (a composite) adds its constants first, where they fold, and once to the rest.

        A constant ``p`` takes ``[x]×[y]× = y xᵀ − (x·y) 1`` entry by entry: terms of its zero
        components are never formed when tracing. A symbolic ``p`` gives a zero constant part.
        """
        Rh = ca.mtimes(X.R, self.h)
        RIRt = ca.mtimes(ca.mtimes(X.R, self.I), X.R.T)
        if not isinstance(X.p, np.ndarray):
            P = skew(X.p)
            HP = ca.mtimes(skew(Rh), P)
            I = symmetric(RIRt - HP - HP.T - self.m * ca.mtimes(P, P))
            return RigidInertia(self.m, Rh + self.m * X.p, I), RigidInertia(0.0, ca.DM.zeros(3, 1), ca.DM.zeros(3, 3))
        p = np.asarray(X.p, dtype=float).reshape(3)
        xp = [Rh[k] * p[k] if p[k] != 0.0 else None for k in range(3)]
        I = ca.SX.zeros(3, 3) if isinstance(RIRt, ca.SX) else ca.DM.zeros(3, 3)
        for j in range(3):
            for k in range(j, 3):
                if j == k:  # 2 Σ_{l≠k} x_l p_l
                    terms = [xp[l] for l in range(3) if l != k and xp[l] is not None]
                    I[j, k] = RIRt[j, k] + 2 * _sum(terms) if terms else RIRt[j, k]
                else:  # −(p_j x_k + x_j p_k)
                    terms = [t for t in (_scaled(Rh[k], p[j]), _scaled(Rh[j], p[k])) if t is not None]
                    I[j, k] = RIRt[j, k] - _sum(terms) if terms else RIRt[j, k]
        constant = RigidInertia(
            0.0, ca.DM(self.m * p.reshape(3, 1)), ca.DM(self.m * (float(p @ p) * np.eye(3) - np.outer(p, p)))
        )
        return RigidInertia(self.m, Rh, symmetric(I)), constant

    def times(self, V: Matrix) -> Matrix:
        """``I V`` (6, k): the momenta of the motions ``V`` (6, k), ``[m v − h × ω; I ω + h × v]``."""
        lin, ang = V[0:3, :], V[3:6, :]
        return ca.vertcat(self.m * lin - _cross(self.h, ang), ca.mtimes(self.I, ang) + _cross(self.h, lin))


def _scaled(x: Matrix, c: float) -> Matrix | None:
    return x * c if c != 0.0 else None


def _sum(terms: list) -> Matrix:
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


def rigid_body_force(I: np.ndarray, v: Matrix, a: Matrix | None = None) -> Matrix:
    """``I a + v ×* (I v)`` (6, 1): the net force on a rigid body of constant spatial inertia ``I``
    (6, 6, numpy) moving with the spatial velocity ``v`` (6, 1) and acceleration ``a`` (6, 1; None:
    zero), all in one frame.

    Written as Newton-Euler about the centre of mass ``c`` (fewer operations than the (6, 6)
    products): with ``v_c = v_lin + ω × c``, ``f = m (a_lin + α × c + ω × v_c)`` and
    ``n = I_c α + ω × (I_c ω) + c × f`` (``I_c`` the rotational inertia about ``c``). A massless
    body uses the matrix form.
    """
    m = float(I[0, 0])
    if m <= 0.0:
        Iv = ca.mtimes(I, v)
        bias = cross_force(v, Iv)
        return bias if a is None else ca.mtimes(I, a) + bias
    c = first_moment(I) / m
    Ic = ca.DM(I[3:6, 3:6] - m * (float((c.T @ c)[0, 0]) * np.eye(3) - c @ c.T))
    c = ca.DM(c)
    w = v[3:6]
    acc = ca.cross(w, v[0:3] + ca.cross(w, c))
    n = ca.cross(w, ca.mtimes(Ic, w))
    if a is not None:
        acc = a[0:3] + ca.cross(a[3:6], c) + acc
        n = ca.mtimes(Ic, a[3:6]) + n
    f = m * acc
    return ca.vertcat(f, n + ca.cross(c, f))


def rotation_about_axis(axis: np.ndarray, c: Matrix, s: Matrix) -> Matrix:
    """Rotation (3, 3) by the angle with cosine ``c`` and sine ``s`` about a unit ``axis`` (constant).

    Axis-aligned axes give matrices with constant zeros and ones, which fold away when tracing.
    """
    a = np.asarray(axis, float).reshape(3)
    K = skew(a)
    aa = np.outer(a, a)
    rows = []
    for i in range(3):
        row = []
        for j in range(3):
            # Rodrigues: R = c I + s [a]x + (1 - c) a aᵀ, written entry by entry so zeros fold.
            entry = 0
            if aa[i, j] != 0.0:
                entry = aa[i, j] * (1 - c) if i != j else aa[i, j] + (1 - aa[i, j]) * c
            elif i == j:
                entry = c
            if K[i, j] != 0.0:
                entry = entry + K[i, j] * s
            row.append(entry)
        rows.append(ca.horzcat(*row))
    return ca.vertcat(*rows)
