"""Collision primitives from a URDF, and candidate pairs for :class:`~.collision.SelfCollisionLimit`.

:func:`collision_shapes` reads every ``<collision>`` of a URDF as written (a
:class:`CollisionShape`: the link, the geometry, its origin; what an independent collision checker
such as MuJoCo's measures, :mod:`wbc.sim.leg_clearance`). :func:`collision_primitives` returns one
primitive per element bounding it, attached to the element's link (a frame of the model, fixed links
included):

* ``<sphere>`` as is;
* ``<cylinder>`` as the capsule of the same axis, length and radius (it contains the cylinder);
* ``<box>`` as the capsule along its longest side containing it;
* ``<mesh>`` (STL, binary or ASCII, or OBJ; its ``scale`` applied) as the bounding capsule of its
  vertices (:func:`~.geometry.bounding_capsule`); ``package://name/...`` is looked up in
  ``package_dirs`` and in the directories above the URDF.

:func:`propose_pairs` proposes the pairs worth watching: primitives on different bodies that are not
parent and child in the kinematic tree (their bounding shapes overlap at the joint) and that are
farther apart than a clearance at a reference configuration (pairs already overlapping there are
bounding-shape artefacts, not collisions to avoid), nearest first.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import os
import struct
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ...errors import InputError, ModelError
from ...model.files import xml_source
from ...model.model import Model
from ...model.urdf import _floats, _origin
from .collision import CollisionPair, pair_distances
from .geometry import Capsule, Primitive, Sphere, bounding_capsule

__all__ = [
    "CollisionShape",
    "ShapeKind",
    "collision_primitives",
    "collision_shapes",
    "propose_pairs",
    "read_mesh_vertices",
]


def read_mesh_vertices(path: str | os.PathLike) -> np.ndarray:
    """The vertices (k, 3) of an STL (binary or ASCII) or OBJ mesh file, in the file's units.

    Raises:
        ModelError: a missing, unreadable or unsupported file (naming it).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ModelError(f"{path}: cannot read mesh: {e}") from None
    suffix = path.suffix.lower()
    if suffix == ".stl":
        if len(data) >= 84:
            (count,) = struct.unpack_from("<I", data, 80)
            if len(data) == 84 + 50 * count:  # binary
                records = np.frombuffer(data, dtype=np.uint8, count=50 * count, offset=84).reshape(count, 50)
                vertices = records[:, 12:48].copy().view("<f4").reshape(-1, 3)
                return vertices.astype(float)
        text = data.decode("ascii", errors="replace")
        rows = [line.split()[1:4] for line in text.splitlines() if line.strip().startswith("vertex")]
    elif suffix == ".obj":
        text = data.decode("utf-8", errors="replace")
        rows = [line.split()[1:4] for line in text.splitlines() if line.startswith("v ")]
    else:
        raise ModelError(f"{path}: unsupported mesh format {suffix!r} (STL and OBJ are read)")
    try:
        vertices = np.array(rows, dtype=float).reshape(-1, 3)
    except ValueError:
        raise ModelError(f"{path}: malformed vertex lines") from None
    if vertices.shape[0] == 0:
        raise ModelError(f"{path}: no vertices")
    return vertices


def _resolve(filename: str, urdf_dir: Path | None, package_dirs: Sequence[str | os.PathLike]) -> Path:
    if filename.startswith("file://"):
        return Path(filename[len("file://") :])
    if filename.startswith("package://"):
        package, _, rest = filename[len("package://") :].partition("/")
        roots = [Path(d) for d in package_dirs]
        if urdf_dir is not None:
            roots += [urdf_dir, *urdf_dir.parents]
        for root in roots:
            for candidate in (root / package / rest, root / rest if root.name == package else None):
                if candidate is not None and candidate.exists():
                    return candidate
        raise ModelError(f"mesh {filename!r}: package {package!r} not found (give package_dirs)")
    path = Path(filename)
    return path if path.is_absolute() or urdf_dir is None else urdf_dir / path


class ShapeKind(enum.Enum):
    """The geometry of a URDF ``<collision>`` element."""

    SPHERE = "sphere"
    BOX = "box"
    CYLINDER = "cylinder"
    MESH = "mesh"


@dataclasses.dataclass(frozen=True, eq=False)
class CollisionShape:
    """One URDF ``<collision>`` element as written: the geometry itself, not a bound of it.

    Attributes:
        link: the link (a frame of the model) it is attached to.
        kind: its :class:`ShapeKind`.
        rotation, position: its origin in the link frame ((3, 3), (3,) m).
        size: ``(radius,)`` of a sphere, the three sides of a box, ``(radius, length)`` of a
            cylinder (along its z), () for a mesh, m.
        vertices: a mesh's vertices (k, 3) in its own frame, m, its ``scale`` applied (a negative
            scale mirrors it: Talos's right leg is its left one mirrored); None for the others.
    """

    link: str
    kind: ShapeKind
    rotation: np.ndarray
    position: np.ndarray
    size: tuple[float, ...] = ()
    vertices: np.ndarray | None = None

    def bound(self) -> Primitive:
        """The :class:`Sphere` or :class:`Capsule` (in the link frame) containing the shape: a sphere
        as is; a cylinder as the capsule of its axis, length and radius; a box as the capsule along
        its longest side; a mesh as the bounding capsule of its vertices."""
        R, p = self.rotation, self.position
        if self.kind is ShapeKind.SPHERE:
            return Sphere(self.link, self.size[0], tuple(p))
        if self.kind is ShapeKind.CYLINDER:
            r, half, axis = self.size[0], 0.5 * self.size[1], R[:, 2]
            return Capsule(self.link, r, tuple(p - half * axis), tuple(p + half * axis))
        if self.kind is ShapeKind.BOX:
            size = np.asarray(self.size)
            k = int(np.argmax(size))
            r, half = 0.5 * float(np.hypot(*np.delete(size, k))), 0.5 * float(size[k])
            if half < 1e-9:
                return Sphere(self.link, r, tuple(p))
            return Capsule(self.link, r, tuple(p - half * R[:, k]), tuple(p + half * R[:, k]))
        assert self.vertices is not None
        return bounding_capsule(self.vertices @ R.T + p, self.link)


def _shape(link: str, geometry: ET.Element, R, p, where, urdf_dir, package_dirs) -> CollisionShape | None:
    shape = next(iter(geometry), None)
    if shape is None:
        return None
    what = f"link {link!r} collision {shape.tag}"
    if shape.tag == "sphere":
        r = float(_floats(shape.get("radius"), 1, f"{what} radius", where)[0])
        return CollisionShape(link, ShapeKind.SPHERE, R, p, (r,))
    if shape.tag == "cylinder":
        r = float(_floats(shape.get("radius"), 1, f"{what} radius", where)[0])
        length = float(_floats(shape.get("length"), 1, f"{what} length", where)[0])
        return CollisionShape(link, ShapeKind.CYLINDER, R, p, (r, length))
    if shape.tag == "box":
        size = _floats(shape.get("size"), 3, f"{what} size", where)
        return CollisionShape(link, ShapeKind.BOX, R, p, tuple(float(x) for x in size))
    if shape.tag == "mesh":
        filename = shape.get("filename")
        if not filename:
            raise ModelError(f"{where}: {what} has no filename")
        scale = _floats(shape.get("scale"), 3, f"{what} scale", where, [1.0, 1.0, 1.0])
        vertices = read_mesh_vertices(_resolve(filename, urdf_dir, package_dirs)) * scale
        return CollisionShape(link, ShapeKind.MESH, R, p, (), vertices)
    raise ModelError(f"{where}: {what}: unsupported collision geometry {shape.tag!r}")


def collision_shapes(
    model: Model, urdf: str | os.PathLike, package_dirs: Sequence[str | os.PathLike] = ()
) -> list[CollisionShape]:
    """One :class:`CollisionShape` per ``<collision>`` element of ``urdf`` (a file or its text), in
    file order, on links the model has as frames.

    Raises:
        ModelError: malformed collision elements, unreadable meshes, links the model does not have.
    """
    text, where = xml_source(urdf, "URDF file")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise ModelError(f"{where}: invalid XML: {e}") from None
    urdf_dir = None if where == "<string>" else Path(where).resolve().parent
    out: list[CollisionShape] = []
    for link in root.iter("link"):
        name = link.get("name", "")
        for collision in link.findall("collision"):
            geometry = collision.find("geometry")
            if geometry is None:
                continue
            if not model.has_frame(name):
                raise ModelError(f"{where}: link {name!r} has collision geometry but model {model.name!r} no frame")
            M = _origin(collision, f"link {name!r} collision", where)
            R, p = np.asarray(M.R, dtype=float), np.asarray(M.p, dtype=float).reshape(3)
            shape = _shape(name, geometry, R, p, where, urdf_dir, package_dirs)
            if shape is not None:
                out.append(shape)
    return out


def collision_primitives(
    model: Model, urdf: str | os.PathLike, package_dirs: Sequence[str | os.PathLike] = ()
) -> list[Primitive]:
    """One primitive per ``<collision>`` element of ``urdf`` (a file or its text), in file order, on
    links the model has as frames: each :class:`CollisionShape`'s :meth:`~CollisionShape.bound` (see
    the module docstring).

    Raises:
        ModelError: malformed collision elements, unreadable meshes, links the model does not have.
    """
    return [shape.bound() for shape in collision_shapes(model, urdf, package_dirs)]


def propose_pairs(
    model: Model,
    primitives: Sequence[Primitive],
    q=None,
    clearance: float = 0.0,
    links: Sequence[str] | None = None,
) -> list[CollisionPair]:
    """Candidate pairs among ``primitives`` (see the module docstring), nearest first.

    Args:
        q: the reference configuration (nq,); default the model's neutral one.
        clearance: pairs closer than this (m) at ``q`` are left out.
        links: if given, only pairs with at least one primitive on one of these frames.
    """
    from ...model.configuration import neutral

    q = neutral(model) if q is None else q
    body = {}
    for prim in primitives:
        if not isinstance(prim, (Sphere, Capsule)):
            raise InputError(f"propose_pairs: expected Sphere or Capsule primitives, got {type(prim).__name__}")
        body[id(prim)] = model.frames[model.frame_id(prim.frame)].joint
    parents = model.parents
    wanted = None if links is None else set(links)
    candidates = []
    for a, b in itertools.combinations(primitives, 2):
        i, j = body[id(a)], body[id(b)]
        if i == j or parents[i] == j or parents[j] == i:
            continue
        if wanted is not None and a.frame not in wanted and b.frame not in wanted:
            continue
        candidates.append(CollisionPair(a, b))
    if not candidates:
        return []
    d = pair_distances(model, q, candidates)
    order = np.argsort(d)
    return [candidates[k] for k in order if d[k] > clearance]
