"""Spatial algebra and the Lie groups SO(3) / SE(3), each written once.

* :mod:`.lie`: ``skew``, ``exp3`` / ``log3``, ``exp6`` / ``log6``, quaternions: numpy or CasADi in,
  the same kind out;
* :mod:`.algebra`: placements (:class:`SE3`), motion / force / inertia transforms and cross
  products on CasADi matrices, ordered ``[linear; angular]`` (the only ordering in wbc).
"""

from __future__ import annotations

from .algebra import (
    SE3,
    act_force,
    act_inertia,
    act_inv_force,
    act_inv_inertia,
    act_inv_motion,
    act_motion,
    compose,
    cross_force,
    cross_motion,
    inverse,
    rigid_inertia,
    symmetric,
)
from .lie import (
    exp3,
    exp3_quaternion,
    exp6,
    is_rotation,
    log3,
    log6,
    quaternion_multiply,
    quaternion_to_rotation,
    rotation_to_quaternion,
    skew,
    vee,
)

__all__ = [
    "SE3",
    "act_force",
    "act_inertia",
    "act_inv_force",
    "act_inv_inertia",
    "act_inv_motion",
    "act_motion",
    "compose",
    "cross_force",
    "cross_motion",
    "inverse",
    "rigid_inertia",
    "symmetric",
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
