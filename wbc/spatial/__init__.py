"""Spatial algebra and the Lie groups SO(3) / SE(3), each written once.

* :mod:`.lie`: ``skew``, ``exp3`` / ``log3``, ``exp6`` / ``log6``, quaternions: numpy or CasADi in,
  the same kind out;
* :mod:`.algebra`: placements (:class:`SE3`), motion / force / inertia transforms and cross
  products on CasADi matrices, ordered ``[linear; angular]`` (the only ordering in wbc).
"""

from __future__ import annotations

from . import algebra, lie
from .algebra import *  # the names of algebra.__all__
from .lie import *  # the names of lie.__all__

__all__ = [*algebra.__all__, *lie.__all__]
