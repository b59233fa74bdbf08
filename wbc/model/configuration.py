"""Operations on configurations (numpy): neutral, random, integrate, difference, normalize.

These follow Pinocchio's Lie-group conventions: a free-flyer integrates its local twist through
the SE(3) exponential, a ball joint its local angular velocity through the SO(3) exponential
(``quat ⊗ exp(ω)``), a continuous joint rotates its (cos, sin) pair.
"""

from __future__ import annotations

import casadi as ca
import numpy as np

from ..spatial.lie import (
    exp3_quaternion,
    exp6,
    log3,
    log6,
    quaternion_multiply,
    quaternion_to_rotation,
    rotation_to_quaternion,
)
from .checks import configuration, finite_number, vector
from .model import JointType, Model

__all__ = ["neutral", "random_configuration", "integrate", "integrated", "difference", "normalize"]


def neutral(model: Model) -> np.ndarray:
    """The neutral configuration (nq,): zero angles, identity quaternions, (cos, sin) = (1, 0)."""
    q = np.zeros(model.nq)
    for j in model.joints[1:]:
        if j.type is JointType.FREE_FLYER:
            q[j.idx_q + 6] = 1.0
        elif j.type is JointType.SPHERICAL:
            q[j.idx_q + 3] = 1.0
        elif j.type is JointType.REVOLUTE_UNBOUNDED:
            q[j.idx_q] = 1.0
    return q


def random_configuration(model: Model, rng: np.random.Generator | None = None, scale: float = 1.0) -> np.ndarray:
    """A random valid configuration (nq,): within finite joint limits, else within ±``scale``.

    Quaternions are uniform on the unit sphere (a uniformly random rotation), except for a ball
    joint with a finite ``max_angle``: then a uniformly random axis and an angle uniform in
    ``[0, max_angle]``.
    """
    rng = rng or np.random.default_rng()
    q = np.zeros(model.nq)
    for j in model.joints[1:]:
        s = slice(j.idx_q, j.idx_q + j.nq)
        if j.type is JointType.FREE_FLYER:
            quat = rng.normal(size=4)
            q[s] = np.concatenate([rng.uniform(-scale, scale, 3), quat / np.linalg.norm(quat)])
        elif j.type is JointType.SPHERICAL:
            q[s] = _random_rotation(rng, j.max_angle)
        elif j.type is JointType.REVOLUTE_UNBOUNDED:
            t = rng.uniform(-np.pi, np.pi)
            q[s] = [np.cos(t), np.sin(t)]
        else:
            lo, hi = j.lower[0], j.upper[0]
            if not (np.isfinite(lo) and np.isfinite(hi)):
                lo, hi = -scale, scale
            q[s] = rng.uniform(lo, hi)
    return q


def _random_rotation(rng: np.random.Generator, max_angle: float) -> np.ndarray:
    """A unit quaternion (4,): uniform over SO(3), or of angle uniform in [0, max_angle] if finite."""
    if not np.isfinite(max_angle):
        quat = rng.normal(size=4)
        return quat / np.linalg.norm(quat)
    axis = rng.normal(size=3)
    return np.asarray(exp3_quaternion(axis / np.linalg.norm(axis) * rng.uniform(0.0, min(max_angle, np.pi))))


def normalize(model: Model, q) -> np.ndarray:
    """A copy of ``q`` with unit quaternions and unit (cos, sin) pairs."""
    q = np.array(vector(q, model.nq, "q"))
    for j in model.joints[1:]:
        if j.type is JointType.FREE_FLYER:
            s = slice(j.idx_q + 3, j.idx_q + 7)
        elif j.type is JointType.SPHERICAL:
            s = slice(j.idx_q, j.idx_q + 4)
        elif j.type is JointType.REVOLUTE_UNBOUNDED:
            s = slice(j.idx_q, j.idx_q + 2)
        else:
            continue
        q[s] /= np.linalg.norm(q[s])
    return q


def integrate(model: Model, q, v, dt: float = 1.0) -> np.ndarray:
    """``q ⊕ v dt`` (nq,): the configuration reached from ``q`` moving at constant ``v`` for ``dt`` s.

    A free-flyer moves along the SE(3) exponential of its body twist (Pinocchio's ``integrate``);
    its quaternion stays on the input's side of the double cover (no sign jumps along a trajectory).
    A ball joint's quaternion becomes ``quat ⊗ exp(ω dt)``, renormalised (Pinocchio's).

    Evaluated in numpy (tens of microseconds on a humanoid); :func:`wbc.integrate` is the same
    formulas compiled (one C call).
    """
    dt = finite_number(dt, "dt")
    return np.asarray(integrated(model, configuration(model, q), vector(v, model.nv, "v") * dt))


def integrated(model: Model, q, dv):
    """``q ⊕ dv`` (nq,), unchecked: numbers (numpy arrays in, an array out) or CasADi symbols
    (columns in, a column out), joint by joint with the formulas of :func:`integrate`."""
    symbolic = isinstance(q, (ca.SX, ca.MX, ca.DM)) or isinstance(dv, (ca.SX, ca.MX, ca.DM))
    parts = []
    for j in model.joints[1:]:
        sq, sv = slice(j.idx_q, j.idx_q + j.nq), slice(j.idx_v, j.idx_v + j.nv)
        if j.type is JointType.FREE_FLYER:
            quat0 = q[j.idx_q + 3 : j.idx_q + 7]
            R0 = quaternion_to_rotation(quat0)
            dR, dp = exp6(dv[sv])
            R = ca.mtimes(R0, dR) if symbolic else R0 @ dR
            quat = rotation_to_quaternion(R)
            position = q[j.idx_q : j.idx_q + 3] + (ca.mtimes(R0, dp) if symbolic else R0 @ dp)
            if symbolic:  # the input's side of the double cover
                quat = ca.if_else(ca.dot(quat, quat0) < 0.0, -quat, quat)
            elif np.dot(quat, quat0) < 0.0:
                quat = -quat
            parts += [position, quat]
        elif j.type is JointType.SPHERICAL:
            quat = quaternion_multiply(q[sq], exp3_quaternion(dv[sv]))
            parts.append(quat / (ca.norm_2(quat) if symbolic else np.linalg.norm(quat)))
        elif j.type is JointType.REVOLUTE_UNBOUNDED:
            c, s, t = q[j.idx_q], q[j.idx_q + 1], dv[j.idx_v]
            cos, sin = (ca.cos(t), ca.sin(t)) if symbolic else (np.cos(t), np.sin(t))
            parts.append(
                ca.vertcat(c * cos - s * sin, s * cos + c * sin) if symbolic else [c * cos - s * sin, s * cos + c * sin]
            )
        else:
            parts.append(q[sq] + dv[sv])
    if symbolic:
        return ca.vertcat(*parts)
    return np.concatenate(parts) if parts else np.zeros(0)


def difference(model: Model, q0, q1) -> np.ndarray:
    """The velocity (nv,) that takes ``q0`` to ``q1`` in unit time (``q1 ⊖ q0``), joint by joint:
    ``integrate(model, q0, difference(model, q0, q1)) == q1``.

    A free-flyer's part is the SE(3) logarithm of the relative placement, ``log6(M₀⁻¹ M₁)`` (a body
    twist, exactly Pinocchio's ``difference``); a ball joint's the SO(3) logarithm ``log3(R₀ᵀ R₁)``
    (angle at most π); a continuous joint's the shortest signed angle.
    """
    q0 = configuration(model, q0, "q0")
    q1 = configuration(model, q1, "q1")
    out = np.zeros(model.nv)
    for j in model.joints[1:]:
        sv = j.idx_v
        if j.type is JointType.FREE_FLYER:
            R0 = quaternion_to_rotation(q0[j.idx_q + 3 : j.idx_q + 7])
            R1 = quaternion_to_rotation(q1[j.idx_q + 3 : j.idx_q + 7])
            out[sv : sv + 6] = log6(R0.T @ R1, R0.T @ (q1[j.idx_q : j.idx_q + 3] - q0[j.idx_q : j.idx_q + 3]))
        elif j.type is JointType.SPHERICAL:
            R0 = quaternion_to_rotation(q0[j.idx_q : j.idx_q + 4])
            R1 = quaternion_to_rotation(q1[j.idx_q : j.idx_q + 4])
            out[sv : sv + 3] = log3(R0.T @ R1)
        elif j.type is JointType.REVOLUTE_UNBOUNDED:
            c0, s0 = q0[j.idx_q : j.idx_q + 2]
            c1, s1 = q1[j.idx_q : j.idx_q + 2]
            out[sv] = np.arctan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)
        else:
            out[sv] = q1[j.idx_q] - q0[j.idx_q]
    return out
