"""A :class:`wbc.locomotion.terrain.Terrain` in MuJoCo: the same surfaces as solids the soles collide with.

Each patch becomes a box whose top face is the patch (its depth below it), the height field a MuJoCo
``hfield`` (bilinear samples triangulated, as MuJoCo collides them), the floor a plane at its height.
They are static world geoms with the floor's contact settings, colliding with the robot's soles
only (``contype 0``; ``conaffinity`` :data:`~wbc.sim.mujoco.SOLID_COLLISION` as the floor
:mod:`wbc.sim.mujoco` builds, the height field
:data:`~wbc.sim.mujoco.HEIGHT_FIELD_COLLISION`: the soles touch it through spheres at their corners,
:data:`~wbc.sim.mujoco.SOLE_CORNER_RADIUS`, as a box touches a plane). Use
:func:`terrain_scene` as :class:`~wbc.sim.mujoco.MujocoSim`'s ``scene`` with ``floor=False``.
"""

from __future__ import annotations

from collections.abc import Callable

import mujoco
import numpy as np

from ..locomotion.terrain import Terrain
from .mujoco_coordinates import quat_wxyz
from .mujoco_spec import HEIGHT_FIELD_COLLISION, SOLID_COLLISION, ContactParameters, set_contact

__all__ = ["add_terrain", "terrain_scene"]

#: Colours of the terrain geoms (RGBA).
_COLOR = [0.62, 0.6, 0.55, 1.0]


def add_terrain(spec, terrain: Terrain, contact: ContactParameters | None = None) -> None:
    """Add ``terrain``'s floor, patches and height field to the world body of a ``mujoco.MjSpec``
    (``contact``: the floor's settings, default :class:`~wbc.sim.mujoco.ContactParameters`)."""
    contact = ContactParameters() if contact is None else contact
    world = spec.worldbody
    geoms = []  # solids: the floor and the patches
    if terrain.floor is not None:
        geoms.append(
            world.add_geom(
                name="terrain_floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05], pos=[0, 0, terrain.floor]
            )
        )
    for k, patch in enumerate(terrain.patches):
        C = patch.corners
        e1, e2 = C[1] - C[0], C[3] - C[0]
        R = np.column_stack([e1 / np.linalg.norm(e1), e2 / np.linalg.norm(e2), patch.normal])
        half = [np.linalg.norm(e1) / 2, np.linalg.norm(e2) / 2, patch.depth / 2]
        centre = C.mean(axis=0) - patch.normal * patch.depth / 2
        geoms.append(
            world.add_geom(
                name=f"terrain_patch_{k}",
                type=mujoco.mjtGeom.mjGEOM_BOX,
                size=half,
                pos=centre,
                quat=quat_wxyz(R),
                rgba=_COLOR if k % 2 == 0 else [c * 0.9 for c in _COLOR[0:3]] + [1.0],
            )
        )
    hf = terrain.heightfield
    if hf is not None:
        H = hf.heights
        lo, hi = float(H.min()), float(H.max())
        span = max(hi - lo, 1e-6)
        x0, x1, y0, y1 = hf.extent
        field = spec.add_hfield(name="terrain_hfield")
        field.size = [(x1 - x0) / 2, (y1 - y0) / 2, span, 0.05]
        field.nrow, field.ncol = H.shape
        field.userdata = ((H - lo) / span).ravel().tolist()  # row 0 at y0, column 0 at x0
        rough = world.add_geom(
            name="terrain_rough",
            type=mujoco.mjtGeom.mjGEOM_HFIELD,
            hfieldname="terrain_hfield",
            pos=[(x0 + x1) / 2, (y0 + y1) / 2, lo],
            rgba=_COLOR,
        )
        rough.contype, rough.conaffinity = 0, HEIGHT_FIELD_COLLISION
        set_contact(rough, contact)
    for geom in geoms:
        geom.contype, geom.conaffinity = 0, SOLID_COLLISION
        set_contact(geom, contact)


def terrain_scene(terrain: Terrain, contact: ContactParameters | None = None) -> Callable:
    """A ``scene`` callable for :class:`~wbc.sim.mujoco.MujocoSim` that adds ``terrain``."""

    def scene(spec) -> None:
        add_terrain(spec, terrain, contact)

    return scene
