"""Reduced models: some joints locked at given positions (Pinocchio's ``buildReducedModel``).

``lock_joints(model, {"LFinger11": 0.0, ...})`` returns a new :class:`~wbc.model.Model` in which
each locked joint has become a fixed joint at its given position: the body it moved is merged into
its parent's (inertia added at the locked placement), its children hang from that parent with the
locked placement composed into theirs, and every frame is kept, in the same order, re-attached with
its placement composed (the locked joint's own frame becomes a ``FIXED_JOINT`` frame). Joint order,
``q``/``v`` layout and actuation of the remaining joints follow. This is the usual way to control a
robot without its fingers (Talos, Romeo) or with a mobile base held still, and the fix for joints
that move no mass (:func:`wbc.checks.massless_joints`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import casadi as ca
import numpy as np

from ..errors import InputError, ModelError
from ..spatial.algebra import SE3, act_inertia
from . import checks
from .joints import joint_transform
from .model import Frame, FrameKind, Joint, JointType, Model

__all__ = ["lock_joints"]


def _np(X: SE3) -> SE3:
    return SE3(np.array(ca.DM(X.R), dtype=float), np.array(ca.DM(X.p), dtype=float).reshape(3, 1))


def _compose(a: SE3, b: SE3) -> SE3:
    return SE3(a.R @ b.R, a.p + a.R @ b.p)


def _joint_value(model: Model, joint: Joint, value: Any) -> np.ndarray:
    """The locked position of ``joint`` as its configuration slice (nq,), validated."""
    what = f"lock_joints: the value of joint {joint.name!r}"
    if joint.type is JointType.REVOLUTE_UNBOUNDED and np.ndim(value) == 0:
        angle = checks.vector([value], 1, what)[0]
        return np.array([np.cos(angle), np.sin(angle)])
    x = checks.vector(np.atleast_1d(value) if np.ndim(value) == 0 else value, joint.nq, what)
    unit = {JointType.FREE_FLYER: x[3:7], JointType.SPHERICAL: x, JointType.REVOLUTE_UNBOUNDED: x}.get(joint.type)
    if unit is not None and abs(float(np.linalg.norm(unit)) - 1.0) > checks.UNIT_TOLERANCE:
        part = "(cos, sin) pair" if joint.type is JointType.REVOLUTE_UNBOUNDED else "quaternion"
        raise InputError(f"{what}: its {part} has norm {np.linalg.norm(unit):.9g}, expected 1")
    return x


def lock_joints(model: Model, locked: Mapping[str, Any]) -> Model:
    """The model with the joints in ``locked`` fixed at the given positions (see the module docstring).

    Args:
        model: the full model (not modified).
        locked: ``{joint name: position}``; a position is the joint's slice of ``q`` (nq,): an angle
            (rad) or a displacement (m) for revolute and prismatic joints; an angle or a unit
            ``(cos, sin)`` pair for continuous ones; ``[x, y, z, qx, qy, qz, qw]`` for a free-flyer;
            a unit quaternion ``[qx, qy, qz, qw]`` for a ball joint.

    Returns:
        The reduced :class:`~wbc.model.Model` (same name and source), laid out as Pinocchio's
        ``buildReducedModel`` lays it out from the same model and positions.

    Raises:
        ModelError: an unknown joint (with suggestions) or the universe.
        InputError: a position of the wrong size, not finite, or a non-unit quaternion / (cos, sin)
            pair (positions outside the joint's limits are accepted, as Pinocchio accepts them).
    """
    if not isinstance(model, Model):
        raise InputError(f"lock_joints: model must be a wbc.Model, got {type(model).__name__}")
    if not isinstance(locked, Mapping):
        raise InputError("lock_joints: locked must be a mapping {joint name: position}")
    values: dict[int, np.ndarray] = {}
    for name, value in locked.items():
        i = model.joint_id(name)
        if i == 0:
            raise ModelError("lock_joints: the universe is not a joint that can be locked")
        values[i] = _joint_value(model, model.joints[i], value)

    identity = SE3(np.eye(3), np.zeros((3, 1)))
    new_index = [0] * model.njoints  # original joint -> the reduced joint whose body carries it
    in_new = [identity] * model.njoints  # original joint's moving frame in that reduced joint's frame
    joints: list[Joint] = [model.joints[0]]
    iq = iv = 0
    for i, joint in enumerate(model.joints[1:], start=1):
        parent, X_parent = new_index[joint.parent], in_new[joint.parent]
        placement = _compose(X_parent, _np(joint.placement))
        if i in values:
            moving = _compose(X_parent, _np(joint_transform(joint, values[i])))
            new_index[i], in_new[i] = parent, moving
            continue
        joints.append(dataclasses.replace(joint, parent=parent, placement=placement, idx_q=iq, idx_v=iv))
        iq, iv = iq + joint.nq, iv + joint.nv
        new_index[i], in_new[i] = len(joints) - 1, identity

    inertias = [np.zeros((6, 6)) for _ in joints]
    for i, I in enumerate(model.inertias):
        if not np.any(I):
            continue
        moved = I if i not in values else np.array(ca.DM(act_inertia(in_new[i], I)), dtype=float)
        inertias[new_index[i]] = inertias[new_index[i]] + moved

    frames = []
    for f in model.frames:
        j = f.joint
        kind = FrameKind.FIXED_JOINT if (j in values and f.kind is FrameKind.JOINT) else f.kind
        placement = f.placement if j not in values else _compose(in_new[j], _np(f.placement))
        frames.append(Frame(f.name, kind, new_index[j], placement))

    actuated = tuple(new_index[a] for a in model.actuated if a not in values)
    return Model(
        model.name,
        tuple(joints),
        tuple(inertias),
        tuple(frames),
        actuated,
        gravity=model.gravity,
        source=model.source,
    )
