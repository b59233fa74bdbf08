"""Limits: contributors of hard constraints that are neither tasks nor contacts.

Each limit is one file with one :class:`~wbc.control.contributor.Contributor` subclass returning
:class:`~wbc.control.pieces.Bounds` or :class:`~wbc.control.pieces.Inequality` pieces; a new kind of
limit needs no edit of the controller or of the QP builder.

* :class:`TorqueLimit` — actuator efforts (bounds on ``τ``);
* :class:`JointPositionLimit`, :class:`JointVelocityLimit` — viability bounds on joint accelerations;
* :class:`SelfCollisionLimit` — distances between :class:`Sphere` / :class:`Capsule` primitives on
  links (a second-order barrier); :func:`collision_primitives` and :func:`propose_pairs` build them
  from a URDF's collision geometry (read as written by :func:`collision_shapes`),
  :func:`pair_distances` evaluates them.
"""

from __future__ import annotations

from .collision import CollisionPair, SelfCollisionLimit, pair_distances
from .collision_model import (
    CollisionShape,
    ShapeKind,
    collision_primitives,
    collision_shapes,
    propose_pairs,
    read_mesh_vertices,
)
from .geometry import Capsule, Sphere, bounding_capsule
from .joint_position import JointPositionLimit
from .joint_velocity import JointVelocityLimit
from .torque import TorqueLimit

__all__ = [
    "TorqueLimit",
    "JointPositionLimit",
    "JointVelocityLimit",
    "SelfCollisionLimit",
    "CollisionPair",
    "Sphere",
    "Capsule",
    "bounding_capsule",
    "CollisionShape",
    "ShapeKind",
    "collision_shapes",
    "collision_primitives",
    "propose_pairs",
    "pair_distances",
    "read_mesh_vertices",
]
