"""Joint kinematics: the motion each joint type allows, as CasADi expressions.

For every joint type wbc supports, the motion subspace ``S`` (6, nv) is constant in the joint
frame and the joint bias ``cJ`` is zero (Pinocchio's free-flyer, revolute, prismatic and spherical
joints: a ball joint's ``S = [0; I₃]``, its velocity the angular velocity in its child frame),
so a joint's velocity is ``vJ = S v_j`` and all algorithms can treat ``S`` as a numpy constant:
its zeros fold away when tracing.

A revolute joint whose placement rotation is itself a rotation about the joint's axis (a URDF
``rpy`` about the axis: G1's knees and shoulder rolls) rotates its child by one rotation about that
axis, by the joint angle plus the placement's: :func:`joint_transform` computes it that way (the
cosine and sine of the sum by the addition formulas), so the traced transform keeps the zeros of an
axis rotation instead of the dense product of two rotations.
"""

from __future__ import annotations

import functools

import casadi as ca
import numpy as np

from ..spatial.algebra import SE3, compose, rotation_about_axis
from ..spatial.lie import quaternion_to_rotation, skew
from .model import Joint, JointType

__all__ = ["joint_motion", "joint_transform", "motion_subspace"]


def joint_motion(joint: Joint, qj) -> SE3:
    """The joint's own motion: child frame in the joint frame, for joint coordinates ``qj`` (nq,)."""
    t = joint.type
    if t is JointType.FREE_FLYER:
        return SE3(quaternion_to_rotation(qj[3:7]), qj[0:3])
    if t is JointType.REVOLUTE:
        return SE3(rotation_about_axis(joint.axis, ca.cos(qj[0]), ca.sin(qj[0])), np.zeros((3, 1)))
    if t is JointType.REVOLUTE_UNBOUNDED:
        return SE3(rotation_about_axis(joint.axis, qj[0], qj[1]), np.zeros((3, 1)))
    if t is JointType.PRISMATIC:
        return SE3(np.eye(3), joint.axis.reshape(3, 1) * qj[0])
    if t is JointType.SPHERICAL:
        return SE3(quaternion_to_rotation(qj[0:4]), np.zeros((3, 1)))
    raise ValueError(f"joint {joint.name!r} of type {t.value} has no motion")


#: How far (max entry) a placement rotation may be from a rotation about the joint's axis and still
#: be merged into the joint's angle: rounding of the URDF's rpy only.
_MERGE_TOLERANCE = 1e-14


def joint_transform(joint: Joint, qj) -> SE3:
    """Placement of the joint's moving frame in its parent joint's frame (Pinocchio's ``liMi``)."""
    offset = _axis_offset(joint)
    if offset is not None:
        c, s = (ca.cos(qj[0]), ca.sin(qj[0])) if joint.type is JointType.REVOLUTE else (qj[0], qj[1])
        c0, s0 = offset
        if (c0, s0) != (1.0, 0.0):
            c, s = c0 * c - s0 * s, s0 * c + c0 * s
        return SE3(rotation_about_axis(joint.axis, c, s), joint.placement.p)
    return compose(joint.placement, joint_motion(joint, qj))


def _axis_offset(joint: Joint) -> tuple[float, float] | None:
    """``(cos γ, sin γ)`` when the revolute ``joint``'s placement rotation is the rotation by ``γ``
    about its axis (the identity included), else None."""
    if joint.type not in (JointType.REVOLUTE, JointType.REVOLUTE_UNBOUNDED):
        return None
    return _rotation_angle(joint.axis.tobytes(), np.asarray(joint.placement.R, dtype=float).tobytes())


@functools.lru_cache(maxsize=4096)
def _rotation_angle(axis_bytes: bytes, R_bytes: bytes) -> tuple[float, float] | None:
    a = np.frombuffer(axis_bytes).copy()
    R = np.frombuffer(R_bytes).reshape(3, 3)
    if np.array_equal(R, np.eye(3)):
        return (1.0, 0.0)
    e = np.cross(a, np.eye(3)[int(np.argmin(np.abs(a)))])  # a unit vector normal to the axis
    e /= np.linalg.norm(e)
    Re = R @ e
    c, s = float(e @ Re), float(a @ np.cross(e, Re))
    rebuilt = c * np.eye(3) + s * skew(a) + (1.0 - c) * np.outer(a, a)
    return (c, s) if np.max(np.abs(rebuilt - R)) <= _MERGE_TOLERANCE else None


def motion_subspace(joint: Joint) -> np.ndarray:
    """``S`` (6, nv): the joint's motion subspace in its moving frame, ordered [linear; angular]."""
    t = joint.type
    if t is JointType.FREE_FLYER:
        return np.eye(6)
    if t is JointType.SPHERICAL:
        return np.vstack([np.zeros((3, 3)), np.eye(3)])
    S = np.zeros((6, 1))
    if t in (JointType.REVOLUTE, JointType.REVOLUTE_UNBOUNDED):
        S[3:6, 0] = joint.axis
    elif t is JointType.PRISMATIC:
        S[0:3, 0] = joint.axis
    else:
        raise ValueError(f"joint {joint.name!r} of type {t.value} has no motion subspace")
    return S
