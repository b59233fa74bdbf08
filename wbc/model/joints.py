"""Joint kinematics: the motion each joint type allows, as CasADi expressions.

For every joint type wbc supports, the motion subspace ``S`` (6, nv) is constant in the joint
frame and the joint bias ``cJ`` is zero (Pinocchio's free-flyer, revolute, prismatic and spherical
joints: a ball joint's ``S = [0; I₃]``, its velocity the angular velocity in its child frame),
so a joint's velocity is ``vJ = S v_j`` and all algorithms can treat ``S`` as a numpy constant:
its zeros fold away when tracing.
"""

from __future__ import annotations

import casadi as ca
import numpy as np

from ..spatial.algebra import SE3, compose, rotation_about_axis
from ..spatial.lie import quaternion_to_rotation
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


def joint_transform(joint: Joint, qj) -> SE3:
    """Placement of the joint's moving frame in its parent joint's frame (Pinocchio's ``liMi``)."""
    return compose(joint.placement, joint_motion(joint, qj))


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
