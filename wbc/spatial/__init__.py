"""Spatial algebra: placements, motion and force transforms, inertias (``[linear; angular]``)."""

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
    rigid_inertia,
    skew,
    symmetric,
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
    "rigid_inertia",
    "skew",
    "symmetric",
]
