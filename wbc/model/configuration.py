"""Operations on configurations (numpy): neutral, random, integrate, difference, normalize.

These follow Pinocchio's Lie-group conventions: a free-flyer integrates its local twist through
the SE(3) exponential, a continuous joint rotates its (cos, sin) pair.
"""

from __future__ import annotations

import numpy as np

from .checks import configuration, vector
from .model import JointType, Model

__all__ = ["neutral", "random_configuration", "integrate", "difference", "normalize"]


def neutral(model: Model) -> np.ndarray:
    """The neutral configuration (nq,): zero angles, identity quaternions, (cos, sin) = (1, 0)."""
    q = np.zeros(model.nq)
    for j in model.joints[1:]:
        if j.type is JointType.FREE_FLYER:
            q[j.idx_q + 6] = 1.0
        elif j.type is JointType.REVOLUTE_UNBOUNDED:
            q[j.idx_q] = 1.0
    return q


def random_configuration(model: Model, rng: np.random.Generator | None = None, scale: float = 1.0) -> np.ndarray:
    """A random valid configuration (nq,): within finite joint limits, else within ±``scale``."""
    rng = rng or np.random.default_rng()
    q = np.zeros(model.nq)
    for j in model.joints[1:]:
        s = slice(j.idx_q, j.idx_q + j.nq)
        if j.type is JointType.FREE_FLYER:
            quat = rng.normal(size=4)
            q[s] = np.concatenate([rng.uniform(-scale, scale, 3), quat / np.linalg.norm(quat)])
        elif j.type is JointType.REVOLUTE_UNBOUNDED:
            t = rng.uniform(-np.pi, np.pi)
            q[s] = [np.cos(t), np.sin(t)]
        else:
            lo, hi = j.lower[0], j.upper[0]
            if not (np.isfinite(lo) and np.isfinite(hi)):
                lo, hi = -scale, scale
            q[s] = rng.uniform(lo, hi)
    return q


def normalize(model: Model, q) -> np.ndarray:
    """A copy of ``q`` with unit quaternions and unit (cos, sin) pairs."""
    q = np.array(vector(q, model.nq, "q"))
    for j in model.joints[1:]:
        if j.type is JointType.FREE_FLYER:
            s = slice(j.idx_q + 3, j.idx_q + 7)
        elif j.type is JointType.REVOLUTE_UNBOUNDED:
            s = slice(j.idx_q, j.idx_q + 2)
        else:
            continue
        q[s] /= np.linalg.norm(q[s])
    return q


def _skew(w: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _exp3(w: np.ndarray) -> np.ndarray:
    t = np.linalg.norm(w)
    K = _skew(w)
    if t < 1e-8:
        return np.eye(3) + K + 0.5 * K @ K
    return np.eye(3) + np.sin(t) / t * K + (1 - np.cos(t)) / t**2 * K @ K


def _exp6(nu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SE(3) exponential of a twist [v; ω] given in the body frame: (R, p) of the displacement."""
    v, w = nu[0:3], nu[3:6]
    t = np.linalg.norm(w)
    K = _skew(w)
    if t < 1e-8:
        V = np.eye(3) + 0.5 * K + K @ K / 6.0
    else:
        V = np.eye(3) + (1 - np.cos(t)) / t**2 * K + (t - np.sin(t)) / t**3 * K @ K
    return _exp3(w), V @ v


def rotation_from_quaternion(x: np.ndarray) -> np.ndarray:
    """Rotation matrix (3, 3) of a unit quaternion ``(x, y, z, w)`` (numpy)."""
    qx, qy, qz, qw = x
    return np.array(
        [
            [1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)],
            [2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)],
            [2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)],
        ]
    )


def _matrix_to_quat(R: np.ndarray) -> np.ndarray:
    tr = np.trace(R)
    if tr > 0:
        s = 2.0 * np.sqrt(tr + 1.0)
        q = [(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s]
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        q = [0.0, 0.0, 0.0, (R[k, j] - R[j, k]) / s]
        q[i] = 0.25 * s
        q[j] = (R[j, i] + R[i, j]) / s
        q[k] = (R[k, i] + R[i, k]) / s
    q = np.array(q)
    return q / np.linalg.norm(q)


def integrate(model: Model, q, v, dt: float = 1.0) -> np.ndarray:
    """``q ⊕ v dt`` (nq,): the configuration reached from ``q`` moving at constant ``v`` for ``dt`` s."""
    q = configuration(model, q)
    dv = vector(v, model.nv, "v") * dt
    out = q.copy()
    for j in model.joints[1:]:
        sq, sv = slice(j.idx_q, j.idx_q + j.nq), slice(j.idx_v, j.idx_v + j.nv)
        if j.type is JointType.FREE_FLYER:
            R0 = rotation_from_quaternion(q[j.idx_q + 3 : j.idx_q + 7])
            dR, dp = _exp6(dv[sv])
            quat = _matrix_to_quat(R0 @ dR)
            if np.dot(quat, q[j.idx_q + 3 : j.idx_q + 7]) < 0.0:
                quat = -quat  # stay on the input's side, as Pinocchio: no sign jumps along a trajectory
            out[sq] = np.concatenate([q[j.idx_q : j.idx_q + 3] + R0 @ dp, quat])
        elif j.type is JointType.REVOLUTE_UNBOUNDED:
            c, s = q[sq]
            t = dv[j.idx_v]
            out[sq] = [c * np.cos(t) - s * np.sin(t), s * np.cos(t) + c * np.sin(t)]
        else:
            out[sq] = q[sq] + dv[sv]
    return out


def difference(model: Model, q0, q1) -> np.ndarray:
    """The velocity (nv,) that takes ``q0`` to ``q1`` in unit time (``q1 ⊖ q0``), joint by joint.

    For a free-flyer, the body-frame twist of the relative placement (log of SE(3) is
    approximated to first order in the translation: exact rotation, ``R0ᵀ (p1 − p0)``).
    """
    q0 = configuration(model, q0, "q0")
    q1 = configuration(model, q1, "q1")
    out = np.zeros(model.nv)
    for j in model.joints[1:]:
        sv = j.idx_v
        if j.type is JointType.FREE_FLYER:
            R0 = rotation_from_quaternion(q0[j.idx_q + 3 : j.idx_q + 7])
            R1 = rotation_from_quaternion(q1[j.idx_q + 3 : j.idx_q + 7])
            out[sv : sv + 3] = R0.T @ (q1[j.idx_q : j.idx_q + 3] - q0[j.idx_q : j.idx_q + 3])
            out[sv + 3 : sv + 6] = _log3(R0.T @ R1)
        elif j.type is JointType.REVOLUTE_UNBOUNDED:
            c0, s0 = q0[j.idx_q : j.idx_q + 2]
            c1, s1 = q1[j.idx_q : j.idx_q + 2]
            out[sv] = np.arctan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)
        else:
            out[sv] = q1[j.idx_q] - q0[j.idx_q]
    return out


def _log3(R: np.ndarray) -> np.ndarray:
    """Rotation vector (3,) of ``R``, angle in [0, π], accurate at every angle (through the quaternion:
    the arccos of the trace loses half the digits near π and the axis sign right at it)."""
    x, y, z, w = _matrix_to_quat(R)
    if w < 0.0:
        x, y, z, w = -x, -y, -z, -w
    s = np.sqrt(x * x + y * y + z * z)
    if s < 1e-12:
        return 2.0 / w * np.array([x, y, z])
    return 2.0 * np.arctan2(s, w) / s * np.array([x, y, z])
