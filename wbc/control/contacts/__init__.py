"""Contacts: force variables, the no-acceleration equalities, friction cones and force limits.

* :class:`PointContact`: a 3D force at a point of a frame, in world axes, friction pyramid about a
  world normal.
* :class:`SurfaceContact`: a rectangular sole, one 6D wrench in the sole frame constrained by the
  exact contact wrench cone of the rectangle (Caron, Pham, Nakamura 2015).
* :class:`SurfaceCornersContact`: the same sole as four corner forces (one pyramid each).

A rigid contact always contributes the equality "its frame (point) does not accelerate" (full
row rank), whatever its force variables; its inequalities act on its own variables only.
Activation and force ramps live in the controller (:mod:`wbc.control.schedule`), not here.
"""

from __future__ import annotations

from .base import Contact, friction_pyramid
from .point import PointContact
from .surface import RectangularContact, SurfaceContact, SurfaceCornersContact

__all__ = [
    "Contact",
    "PointContact",
    "RectangularContact",
    "SurfaceContact",
    "SurfaceCornersContact",
    "friction_pyramid",
]
