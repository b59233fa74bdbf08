"""A legged robot from any floating-base MJCF: :func:`mjcf_robot` (what ``--mjcf PATH --feet NAME...``
builds in the balance and quadruped demos).

The feet are named by the user, each a geom, a site or a body of the file:

* a ``sphere`` geom: a point foot at its centre, of its radius;
* a ``capsule`` geom: a point foot at the centre of its lower end (at the standing configuration),
  of its radius (gymnasium's ant);
* a ``box`` geom: a sole, its bottom face (the face lowest when standing), length and width read
  from the box;
* a body: a sole, the bottom of the box bounding its geoms (in the body's axes; its z axis up when
  standing), length and width of that box (dm_control's humanoids, whose feet are two capsules);
* a site: a point foot at the site, of the site's size.

All feet are soles or all are points. The standing configuration ``q0`` is the file's keyframe (if
named) or ``qpos0``, hinge and slide joints moved 5 % inside their ranges, the base lowered or
raised to put the lowest foot on ``z = 0`` (the floor of the file), or where MuJoCo holds it: its
contacts' ``margin − gap`` above. The contacts of each foot in the
simulation are its geom's, or its body's geoms. The simulation is the file as written
(:meth:`wbc.sim.mujoco.MujocoSim.from_mjcf`), its time step the control period unless one is given.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import InputError, ModelError
from ..model.clusters import ClusterModel
from ..model.mjcf import compile_mjcf, load_mjcf, mujoco_module, quat_wxyz_matrix
from ..model.model import JointType, Model
from ..numeric import frame_placement
from ..spatial.algebra import SE3
from .mujoco import MujocoSim, q_from_qpos, qpos_from_q

__all__ = ["MjcfSole", "MjcfRobot", "mjcf_robot", "add_arguments", "from_arguments"]

#: How far inside its range a joint of the standing configuration is put (share of the range).
RANGE_INSET = 0.05


@dataclasses.dataclass(frozen=True)
class MjcfSole:
    """A sole rectangle (``length`` along the foot frame's x, ``width`` along its y), m."""

    length: float
    width: float


@dataclasses.dataclass(frozen=True)
class MjcfRobot:
    """A robot from an MJCF file, shaped as :class:`wbc.sim.catalog.LeggedRobot`.

    Attributes:
        name: the model's name.
        model: the clustered model of the file (armature, couplings), its foot frames added.
        urdf: the MJCF file (the protocol's name for the robot's file).
        q0: the standing configuration (nq,).
        feet: the foot frames.
        sole: the sole rectangle, or None for point feet.
        foot_radius: point feet's radius (m), or None for soles.
        source: what the robot was loaded from (a path, text or a ``mujoco.MjSpec``).
        foot_geoms: the file's geoms whose contacts count for each foot.
        timestep: the simulation's time step (s), or None for the file's.
    """

    name: str
    model: ClusterModel
    urdf: Path
    q0: np.ndarray
    feet: tuple[str, ...]
    sole: MjcfSole | None
    foot_radius: float | None
    source: object
    foot_geoms: dict[str, tuple[str, ...]]
    timestep: float | None = None

    def simulator(self) -> MujocoSim:
        """The file itself in MuJoCo, driven by wbc's torques."""
        return MujocoSim.from_mjcf(self.source, self.model, contact_geoms=self.foot_geoms, timestep=self.timestep)


def _se3(R, p) -> SE3:
    return SE3(np.asarray(R, dtype=float), np.asarray(p, dtype=float).reshape(3, 1))


class _Feet:
    """The feet of compiled model ``m`` for the wbc ``tree`` (body ``b``'s frame is ``tree.frames[b]``)."""

    def __init__(self, m, tree: Model, q: np.ndarray, where: str) -> None:
        self.m, self.tree, self.q, self.where = m, tree, q, where
        self.mujoco = mujoco_module()
        self.frames: list[tuple[str, str, SE3]] = []  # (name, body frame, placement in it)
        self.geoms: dict[str, tuple[str, ...]] = {}

    def _name(self, objtype, i: int) -> str:
        return self.mujoco.mj_id2name(self.m, objtype, i) or ""

    def _body_geoms(self, b: int) -> tuple[str, ...]:
        G = self.mujoco.mjtObj.mjOBJ_GEOM
        names = tuple(self._name(G, g) for g in range(self.m.ngeom) if self.m.geom_bodyid[g] == b)
        if not all(names):
            raise ModelError(
                f"{self.where}: body {self.tree.frames[b].name!r} has unnamed geoms; name them to use it as a foot"
            )
        return names

    def _world_z(self, body: int, p: np.ndarray) -> float:
        T = frame_placement(self.tree, self.q, self.tree.frames[body].name)
        return float((T[0:3, 0:3] @ p + T[0:3, 3])[2])

    def add(self, name: str) -> tuple[str, float | None, MjcfSole | None]:
        """The foot called ``name``: (its frame, its radius or None, its sole or None)."""
        m, obj = self.m, self.mujoco.mjtObj
        geom_id = self.mujoco.mj_name2id(m, obj.mjOBJ_GEOM, name)
        site_id = self.mujoco.mj_name2id(m, obj.mjOBJ_SITE, name)
        body_id = self.mujoco.mj_name2id(m, obj.mjOBJ_BODY, name)
        if geom_id >= 0:
            return self._geom(name, geom_id)
        if body_id >= 0:
            return self._body(name, body_id)
        if site_id >= 0:
            b = int(m.site_bodyid[site_id])
            R, p = quat_wxyz_matrix(m.site_quat[site_id]), np.array(m.site_pos[site_id])
            frame = self._frame(f"{name}_foot", b, _se3(R, p), self._body_geoms(b))
            return frame, float(m.site_size[site_id][0]), None
        raise ModelError(f"{self.where}: no geom, body or site called {name!r} to stand on")

    def _frame(self, name: str, body: int, placement: SE3, geoms: tuple[str, ...]) -> str:
        """Add the foot frame ``name`` (``name_foot`` if taken) on ``body``; its contacts: ``geoms``."""
        frame = name if not self.tree.has_frame(name) else f"{name}_foot"
        self.frames.append((frame, self.tree.frames[body].name, placement))
        self.geoms[frame] = geoms
        return frame

    def _geom(self, name: str, g: int) -> tuple[str, float | None, MjcfSole | None]:
        m, kinds = self.m, self.mujoco.mjtGeom
        b, kind = int(m.geom_bodyid[g]), int(m.geom_type[g])
        R, p, size = quat_wxyz_matrix(m.geom_quat[g]), np.array(m.geom_pos[g]), np.array(m.geom_size[g])
        if kind == int(kinds.mjGEOM_SPHERE):
            return self._frame(name, b, _se3(np.eye(3), p), (name,)), float(size[0]), None
        if kind == int(kinds.mjGEOM_CAPSULE):
            ends = [p + R[:, 2] * size[1], p - R[:, 2] * size[1]]
            low = min(ends, key=lambda e: self._world_z(b, e))
            return self._frame(name, b, _se3(np.eye(3), low), (name,)), float(size[0]), None
        if kind == int(kinds.mjGEOM_BOX):
            return self._sole(name, b, R, p, size, (name,))
        raise ModelError(
            f"{self.where}: foot geom {name!r} is a {kinds(kind).name.removeprefix('mjGEOM_').lower()}; "
            "feet are spheres or capsules (points) or boxes (soles)"
        )

    def _sole(self, name: str, b: int, R: np.ndarray, centre: np.ndarray, half: np.ndarray, geoms: tuple[str, ...]):
        """The face of the box (axes ``R``, centre, half sizes, in body ``b``) lowest when standing."""
        faces = [(axis, sign) for axis in range(3) for sign in (-1.0, 1.0)]
        axis, sign = min(faces, key=lambda f: self._world_z(b, centre + f[1] * half[f[0]] * R[:, f[0]]))
        z = -sign * R[:, axis]  # the sole frame's z: from the ground into the foot
        x = R[:, (axis + 1) % 3]
        y = np.cross(z, x)
        frame_R = np.column_stack([x, y, z])
        origin = centre + sign * half[axis] * R[:, axis]
        length, width = 2 * half[(axis + 1) % 3], 2 * half[(axis + 2) % 3]
        return self._frame(name, b, _se3(frame_R, origin), geoms), None, MjcfSole(float(length), float(width))

    def _body(self, name: str, b: int) -> tuple[str, float | None, MjcfSole | None]:
        m = self.m
        corners = []
        for g in range(m.ngeom):
            if m.geom_bodyid[g] != b:
                continue
            R, p = quat_wxyz_matrix(m.geom_quat[g]), np.array(m.geom_pos[g])
            centre, half = np.array(m.geom_aabb[g][0:3]), np.array(m.geom_aabb[g][3:6])
            for s in np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T:
                corners.append(p + R @ (centre + s * half))
        if not corners:
            raise ModelError(f"{self.where}: body {name!r} has no geoms to stand on")
        lo, hi = np.min(corners, axis=0), np.max(corners, axis=0)
        centre, half = (lo + hi) / 2, (hi - lo) / 2
        frame, _, sole = self._sole(f"{self.tree.frames[b].name}_sole", b, np.eye(3), centre, half, self._body_geoms(b))
        return frame, None, sole


def _resting_distance(m, tree: Model, q: np.ndarray, geoms: list[str]) -> float:
    """How far above the floor MuJoCo holds the feet (``geoms``) in contact: the largest ``margin −
    gap`` of their contacts when they touch it (MuJoCo's ``includemargin``), else 0."""
    mujoco = mujoco_module()
    d = mujoco.MjData(m)
    d.qpos[:] = qpos_from_q(tree, q)
    mujoco.mj_kinematics(m, d)
    mujoco.mj_collision(m, d)
    ids = {mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, g) for g in geoms}
    return max((float(c.includemargin) for c in d.contact[: d.ncon] if c.geom1 in ids or c.geom2 in ids), default=0.0)


def _standing(m, tree: Model, keyframe: str | None, where: str) -> np.ndarray:
    """The keyframe's or ``qpos0``'s configuration, hinges and slides moved inside their ranges."""
    mujoco = mujoco_module()
    if keyframe is not None:
        k = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, keyframe)
        if k < 0:
            raise ModelError(f"{where}: no keyframe called {keyframe!r}")
        q = q_from_qpos(tree, m.key_qpos[k])
    else:
        q = q_from_qpos(tree, m.qpos0)
    for j in tree.joints[1:]:
        if j.type in (JointType.REVOLUTE, JointType.PRISMATIC) and np.isfinite(j.lower[0]) and np.isfinite(j.upper[0]):
            inset = RANGE_INSET * (j.upper[0] - j.lower[0])
            q[j.idx_q] = np.clip(q[j.idx_q], j.lower[0] + inset, j.upper[0] - inset)
    return q


def mjcf_robot(
    source,
    feet: Sequence[str],
    *,
    name: str | None = None,
    keyframe: str | None = None,
    timestep: float | None = None,
) -> MjcfRobot:
    """A floating-base robot from an MJCF file, standing on ``feet`` (see the module docstring).

    Args:
        source: a path, MJCF text or a ``mujoco.MjSpec``.
        feet: names of the geoms, bodies or sites it stands on.
        name: the robot's name (default the model's).
        keyframe: the file's keyframe to stand in (default ``qpos0``).
        timestep: the simulation's time step, s (default the file's).

    Raises:
        InputError: ``feet`` is one string, not a list of names.
        ModelError: not a floating base, no feet, unknown or unsuitable foot names, soles mixed with
            points, or a file wbc cannot load.
    """
    if isinstance(feet, str):
        raise InputError(f"feet must be a list of names, got one string: write [{feet!r}]")
    cm = load_mjcf(source)
    m, where = compile_mjcf(source)
    tree = cm.tree
    if not tree.floating_base:
        raise ModelError(f"{where}: the model has no free joint at its root; a standing robot needs a floating base")
    if not feet:
        raise ModelError(f"{where}: name the geoms, bodies or sites the robot stands on (feet)")
    q = _standing(m, tree, keyframe, where)
    found = _Feet(m, tree, q, where)
    parts = [found.add(f) for f in feet]
    kinds = {sole is not None for _, _, sole in parts}
    if len(kinds) > 1:
        raise ModelError(f"{where}: feet {list(feet)} mix soles (boxes, bodies) and points (spheres, capsules, sites)")
    for frame, parent, placement in found.frames:
        tree = tree.add_frame(frame, parent, placement)
    cm = ClusterModel(tree, cm.clusters, cm.name, None, cm.armature)
    frames = tuple(f for f, _, _ in parts)
    q[2] -= min(frame_placement(tree, q, f)[2, 3] - (radius or 0.0) for f, radius, _ in parts)
    q[2] += _resting_distance(m, tree, q, [g for f in frames for g in found.geoms[f]])
    if cm.clusters:
        q = cm.spanning_configuration(cm.independent_configuration(q), q)
    radii = [r for _, r, _ in parts if r is not None]
    soles = [s for _, _, s in parts if s is not None]
    sole = MjcfSole(min(s.length for s in soles), min(s.width for s in soles)) if soles else None
    text = isinstance(source, str) and source.lstrip().startswith("<")
    path = Path(os.fsdecode(source)) if isinstance(source, (str, os.PathLike)) and not text else Path(where)
    return MjcfRobot(
        name or cm.name,
        cm,
        path,
        q,
        frames,
        sole,
        min(radii) if radii else None,
        source,
        {f: found.geoms[f] for f in frames},
        timestep,
    )


def add_arguments(parser) -> None:
    """The balance demos' ``--mjcf PATH --feet NAME... [--keyframe K] [--timestep S]``."""
    group = parser.add_argument_group("a robot from any MJCF file")
    group.add_argument("--mjcf", type=Path, default=None, help="stand this floating-base MJCF file's robot")
    group.add_argument(
        "--feet", nargs="+", default=None, metavar="NAME", help="with --mjcf: foot geoms, bodies or sites"
    )
    group.add_argument("--keyframe", default=None, help="with --mjcf: the keyframe to stand in (default qpos0)")
    group.add_argument(
        "--timestep", type=float, default=None, help="with --mjcf: simulation step, s (default the file's)"
    )


def from_arguments(parser, args) -> MjcfRobot | None:
    """The robot ``--mjcf`` names (None without it); a usage error when ``--feet`` is missing."""
    if args.mjcf is None:
        if args.feet or args.keyframe or args.timestep:
            parser.error("--feet, --keyframe and --timestep go with --mjcf")
        return None
    if not args.feet:
        parser.error("--mjcf needs --feet: the geoms, bodies or sites the robot stands on")
    return mjcf_robot(args.mjcf, args.feet, keyframe=args.keyframe, timestep=args.timestep)
