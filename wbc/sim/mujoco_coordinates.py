"""wbc and MuJoCo coordinates: configurations, velocities, and the mass matrix, bias forces and
accelerations between them, exactly. Needs no MuJoCo.

**Coordinates.** MuJoCo and wbc agree on everything but these, which the converters here handle:

==========================  =====================================  ====================================
quantity                    wbc (Pinocchio)                        MuJoCo
==========================  =====================================  ====================================
free-flyer quaternion       ``[qx qy qz qw]``                      ``[qw qx qy qz]``
ball-joint quaternion       ``[qx qy qz qw]``                      ``[qw qx qy qz]``
free-flyer linear velocity  base-origin velocity, **base** axes    base-origin velocity, **world** axes
free-flyer angular vel.     base axes                              base axes
continuous joint            ``q = (cos θ, sin θ)``, one velocity   ``qpos = θ``
==========================  =====================================  ====================================

With ``R`` the base rotation, ``v_mj = T v`` with ``T = diag(R, I₃, I)`` (each free joint's ``R`` on
its linear block when an MJCF has several; a ball joint's angular velocity is in its child frame in
both). Generalized forces map with ``Tᵀ`` (power is invariant), so ``M = Tᵀ M_mj T`` and, since
``Ṫ v = [R (ω × v_lin); 0]`` (``d/dt (R v_lin) = R (v̇_lin + ω × v_lin)``), ``h = Tᵀ (h_mj + M_mj Ṫ v)`` and
``q̈_mj = T v̇ + Ṫ v``. Actuator torques map one to one (a user's file: through its motors' gears).
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..model import checks
from ..model.model import JointType, Model
from ..spatial.lie import quaternion_to_rotation, rotation_to_quaternion

__all__ = [
    "quat_wxyz",
    "qpos_from_q",
    "q_from_qpos",
    "qpos_layout",
    "velocity_map",
    "qvel_from_v",
    "v_from_qvel",
    "mass_matrix_to_wbc",
    "bias_to_wbc",
    "acceleration_to_wbc",
]


# ===================================================================================== rotations
def quat_wxyz(R: np.ndarray) -> np.ndarray:
    """MuJoCo's quaternion order ``(w, x, y, z)`` of a rotation."""
    x, y, z, w = rotation_to_quaternion(R)
    return np.array([w, x, y, z])


def _free_joints(model: Model) -> tuple:
    """The free joints of ``model`` (a floating base is joint 1; an MJCF may have more, each on a
    body hanging from the world)."""
    return tuple(j for j in model.joints[1:] if j.type is JointType.FREE_FLYER)


def _free_rotation(j, q: np.ndarray) -> np.ndarray:
    """Rotation (3, 3) in the world of the body of free joint ``j``."""
    return quaternion_to_rotation(q[j.idx_q + 3 : j.idx_q + 7])


# ===================================================================================== states
def qpos_layout(model: Model) -> tuple[np.ndarray, int]:
    """MuJoCo qpos address of each wbc joint (njoints,) (-1 for the universe) and MuJoCo's nq."""
    adr = np.full(model.njoints, -1, dtype=int)
    n = 0
    for i, j in enumerate(model.joints[1:], start=1):
        adr[i] = n
        n += j.nq if j.type in (JointType.FREE_FLYER, JointType.SPHERICAL) else 1
    return adr, n


def qpos_from_q(model: Model, q, reference: np.ndarray | None = None) -> np.ndarray:
    """MuJoCo ``qpos`` of a wbc configuration.

    Args:
        q: wbc configuration (nq,).
        reference: a MuJoCo ``qpos`` (nq_mj,) whose continuous-joint angles are kept within ±π of
            the result (so setting a state does not unwind a continuous joint); None: angles in
            (-π, π].

    Returns:
        qpos (nq_mj,): wbc order; quaternions [w x y z]; continuous joints as angles (rad).
    """
    q = checks.configuration(model, q)
    adr, nq_mj = qpos_layout(model)
    if reference is not None:
        reference = checks.vector(reference, nq_mj, "reference")
    qpos = np.zeros(nq_mj)
    for i, j in enumerate(model.joints[1:], start=1):
        a, s = adr[i], j.idx_q
        if j.type is JointType.FREE_FLYER:
            qpos[a : a + 3] = q[s : s + 3]
            qpos[a + 3] = q[s + 6]
            qpos[a + 4 : a + 7] = q[s + 3 : s + 6]
        elif j.type is JointType.SPHERICAL:
            qpos[a] = q[s + 3]
            qpos[a + 1 : a + 4] = q[s : s + 3]
        elif j.type is JointType.REVOLUTE_UNBOUNDED:
            theta = np.arctan2(q[s + 1], q[s])
            if reference is not None:
                ref = float(reference[a])
                theta = ref + np.arctan2(np.sin(theta - ref), np.cos(theta - ref))
            qpos[a] = theta
        else:
            qpos[a] = q[s]
    return qpos


def q_from_qpos(model: Model, qpos) -> np.ndarray:
    """wbc configuration (nq,) of a MuJoCo ``qpos`` (nq_mj,) (inverse of :func:`qpos_from_q`)."""
    adr, nq_mj = qpos_layout(model)
    qpos = checks.vector(qpos, nq_mj, "qpos")
    q = np.zeros(model.nq)
    for i, j in enumerate(model.joints[1:], start=1):
        a, s = adr[i], j.idx_q
        if j.type is JointType.FREE_FLYER:
            q[s : s + 3] = qpos[a : a + 3]
            q[s + 3 : s + 6] = qpos[a + 4 : a + 7]
            q[s + 6] = qpos[a + 3]
        elif j.type is JointType.SPHERICAL:
            q[s : s + 3] = qpos[a + 1 : a + 4]
            q[s + 3] = qpos[a]
        elif j.type is JointType.REVOLUTE_UNBOUNDED:
            q[s : s + 2] = np.cos(qpos[a]), np.sin(qpos[a])
        else:
            q[s] = qpos[a]
    return q


def velocity_map(model: Model, q) -> np.ndarray:
    """``T`` (nv, nv) with ``qvel = T v``: each free joint's rotation on its linear block, else I."""
    q = checks.configuration(model, q)
    T = np.eye(model.nv)
    for j in _free_joints(model):
        T[j.idx_v : j.idx_v + 3, j.idx_v : j.idx_v + 3] = _free_rotation(j, q)
    return T


def _rotate_base(model: Model, q: np.ndarray, x: np.ndarray, transpose: bool) -> np.ndarray:
    """``x`` (nv, ...) with each free joint's linear block multiplied by its R (or Rᵀ)."""
    out = np.array(x, dtype=float)
    for j in _free_joints(model):
        R = _free_rotation(j, q)
        s = slice(j.idx_v, j.idx_v + 3)
        out[s] = (R.T if transpose else R) @ out[s]
    return out


def qvel_from_v(model: Model, q, v) -> np.ndarray:
    """MuJoCo ``qvel`` (nv,) of a wbc velocity ``v`` (nv,) at configuration ``q`` (nq,)."""
    q = checks.configuration(model, q)
    return _rotate_base(model, q, checks.velocity(model, v), transpose=False)


def v_from_qvel(model: Model, q, qvel) -> np.ndarray:
    """wbc velocity (nv,) of a MuJoCo ``qvel`` (nv,) at wbc configuration ``q`` (nq,)."""
    q = checks.configuration(model, q)
    return _rotate_base(model, q, checks.vector(qvel, model.nv, "qvel"), transpose=True)


def _tdot_v(model: Model, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``Ṫ v`` (nv,): ``R (ω × v_lin)`` on the free-flyer linear block, zero elsewhere (m/s²)."""
    out = np.zeros(model.nv)
    for j in _free_joints(model):
        s = j.idx_v
        out[s : s + 3] = _free_rotation(j, q) @ np.cross(v[s + 3 : s + 6], v[s : s + 3])
    return out


def mass_matrix_to_wbc(model: Model, q, M_mj) -> np.ndarray:
    """wbc's ``M(q)`` (nv, nv) from MuJoCo's dense mass matrix ``M_mj`` (nv, nv): ``Tᵀ M_mj T``."""
    q = checks.configuration(model, q)
    M_mj = np.asarray(M_mj, dtype=float)
    if M_mj.shape != (model.nv, model.nv):
        raise InputError(f"M_mj must have shape ({model.nv}, {model.nv}), got {M_mj.shape}")
    T = velocity_map(model, q)
    return T.T @ M_mj @ T


def bias_to_wbc(model: Model, q, v, M_mj, h_mj) -> np.ndarray:
    """wbc's ``h(q, v)`` (nv,) from MuJoCo's ``M_mj`` (nv, nv) and ``qfrc_bias`` ``h_mj`` (nv,), N / N m.

    ``h = Tᵀ (h_mj + M_mj Ṫ v)``: MuJoCo's bias is the force at zero *MuJoCo* acceleration, where
    the base's world-frame linear velocity is constant; wbc's is at zero base-frame acceleration.
    """
    q = checks.configuration(model, q)
    v = checks.velocity(model, v)
    h_mj = checks.vector(h_mj, model.nv, "h_mj")
    M_mj = np.asarray(M_mj, dtype=float)
    return _rotate_base(model, q, h_mj + M_mj @ _tdot_v(model, q, v), transpose=True)


def acceleration_to_wbc(model: Model, q, v, qacc) -> np.ndarray:
    """wbc's ``v̇`` (nv,) from MuJoCo's ``qacc`` (nv,): ``T⁻¹ (qacc − Ṫ v)``."""
    q = checks.configuration(model, q)
    v = checks.velocity(model, v)
    qacc = checks.vector(qacc, model.nv, "qacc")
    return _rotate_base(model, q, qacc - _tdot_v(model, q, v), transpose=True)
