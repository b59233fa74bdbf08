"""What a robot looks like: the ``<visual>`` (and, where those are missing, ``<collision>``) shapes of
its URDF links, with mesh files resolved on this machine.

A mesh is named ``package://NAME/rest`` (ROS) or a path relative to the URDF. A package is looked
up, in order, among the URDF file's ancestors (a directory called ``NAME``), in the directories
given by the caller, and under the Python environment's ``share`` directories and site-packages
(where example-robot-data, icub-models and jvrc-description install). A link whose visual mesh
cannot be found is drawn with its collision shapes instead (primitives, or collision meshes that
resolve); :attr:`LinkVisuals.substituted` records which, so a replay can say so. Links without any
visual stay invisible, as their authors meant.

Replays are shared, and embed the mesh files they draw, so a mesh is used only from inside the
robot's **package roots**: the package directory ``package://NAME/`` resolved to, or the URDF's
own directory for a relative path. Refused, and named in a :class:`~wbc.errors.WbcSecurityWarning`
(:attr:`LinkVisuals.refused`): absolute paths, ``file://`` URLs, paths with ``..``, a path in a
URDF given as text (no directory to be relative to), files that resolve (symbolic links followed)
outside their root, files that are not regular files or are larger than
:data:`~wbc.model.files.MAX_FILE_BYTES`. See ``docs/security.md``.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import os
import stat
import sys
import sysconfig
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import ModelError, WbcSecurityWarning
from ..model.files import MAX_FILE_BYTES, read_user_file, xml_text

__all__ = ["Shape", "Visual", "LinkVisuals", "MeshLookup", "read_visuals", "resolve_mesh", "locate_mesh"]


class Shape(enum.Enum):
    """URDF geometry kinds."""

    MESH = "mesh"
    BOX = "box"
    CYLINDER = "cylinder"
    SPHERE = "sphere"


@dataclasses.dataclass(frozen=True)
class Visual:
    """One shape of a link.

    Attributes:
        shape: its :class:`Shape`.
        origin: (4, 4) placement in the link frame (mesh scale not included).
        size: box (x, y, z) extents; cylinder (radius, length); sphere (radius,); mesh scale (3,).
        mesh: the resolved mesh file (``.stl``, ``.dae`` or ``.obj``), or None.
        color: RGBA (4,) in [0, 1] from the URDF material, or None.
    """

    shape: Shape
    origin: np.ndarray
    size: tuple[float, ...]
    mesh: Path | None = None
    color: tuple[float, ...] | None = None


@dataclasses.dataclass(frozen=True)
class LinkVisuals:
    """The shapes drawn for one link; ``substituted`` when they are its collision shapes;
    ``refused``: its mesh names left out because they lead outside the robot's package roots
    (each with the reason)."""

    link: str
    visuals: tuple[Visual, ...]
    substituted: bool = False
    refused: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class MeshLookup:
    """Where a URDF mesh name leads: ``path`` (a regular file inside its root), or None; ``refused``
    says why a name that leads outside the robot's package roots was not used."""

    path: Path | None
    refused: str | None = None


def _rpy(r: float, p: float, y: float) -> np.ndarray:
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return (
        np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
        @ np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
        @ np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    )


def _numbers(text: str | None, n: int, default: Sequence[float]) -> np.ndarray:
    if not text:
        return np.array(default, float)
    try:
        values = np.array([float(t) for t in text.split()])
    except ValueError:
        return np.array(default, float)
    return values if values.size == n and np.all(np.isfinite(values)) else np.array(default, float)


def _origin(elem: ET.Element) -> np.ndarray:
    T = np.eye(4)
    o = elem.find("origin")
    if o is not None:
        T[:3, :3] = _rpy(*_numbers(o.get("rpy"), 3, (0, 0, 0)))
        T[:3, 3] = _numbers(o.get("xyz"), 3, (0, 0, 0))
    return T


def _search_roots(package_dirs: Sequence[os.PathLike | str]) -> list[Path]:
    roots = [Path(d) for d in package_dirs]
    purelib = Path(sysconfig.get_paths()["purelib"])
    roots += [Path(sys.prefix) / "share", purelib / "cmeel.prefix" / "share", purelib]
    return roots


def resolve_mesh(filename: str, urdf: Path | None, package_dirs: Sequence[os.PathLike | str] = ()) -> Path | None:
    """The file a URDF mesh name refers to on this machine, inside the robot's package roots, or
    None when it cannot be found or is refused (:func:`locate_mesh` says why)."""
    return locate_mesh(filename, urdf, package_dirs).path


def _confined(candidate: Path, root: Path) -> MeshLookup | None:
    """``candidate`` if it is a regular file resolving inside ``root`` (None: no such file)."""
    if not os.path.lexists(candidate):
        return None
    real, real_root = Path(os.path.realpath(candidate)), Path(os.path.realpath(root))
    if not real.is_relative_to(real_root):
        return MeshLookup(None, f"it resolves to {real}, outside its root {real_root}")
    try:
        st = os.stat(real)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return MeshLookup(None, "not a regular file")
    if st.st_size > MAX_FILE_BYTES:
        return MeshLookup(None, f"{st.st_size} bytes, more than {MAX_FILE_BYTES}")
    return MeshLookup(real)


def locate_mesh(filename: str, urdf: Path | None, package_dirs: Sequence[os.PathLike | str] = ()) -> MeshLookup:
    """Where the URDF mesh name ``filename`` leads on this machine (see the module docstring):
    a file inside the robot's package roots, nothing, or a refusal saying why."""
    if filename.startswith("file://"):
        return MeshLookup(None, "a file:// URL (outside the robot's package roots)")
    if filename.startswith("package://"):
        package, _, rest = filename[len("package://") :].partition("/")
        parts = Path(rest).parts
        if not package or package in (".", "..") or "/" in package or ".." in parts or Path(rest).is_absolute():
            return MeshLookup(None, "a package path with '..' or an absolute part")
        candidates = [p for p in urdf.resolve().parents if p.name == package] if urdf is not None else []
        candidates += [root / package for root in _search_roots(package_dirs)]
        for package_dir in candidates:
            found = _confined(package_dir / rest, package_dir)
            if found is not None:
                return found
        return MeshLookup(None)
    path = Path(filename)
    if path.is_absolute():
        return MeshLookup(None, "an absolute path (outside the robot's package roots)")
    if ".." in path.parts:
        return MeshLookup(None, "a path with '..' (outside the robot's package roots)")
    if urdf is None:
        return MeshLookup(None, "a relative path in a URDF given as text (no directory it is relative to)")
    return _confined(urdf.parent / path, urdf.parent) or MeshLookup(None)


def _shapes(
    link: ET.Element, tag: str, urdf: Path | None, package_dirs, colors: dict, refused: list[str]
) -> tuple[list[Visual], bool]:
    """The ``tag`` (visual / collision) shapes of a link; the flag says a mesh could not be found
    (refused mesh names are appended to ``refused`` with their reason)."""
    out, missing = [], False
    for elem in link.findall(tag):
        geometry = elem.find("geometry")
        if geometry is None or not len(geometry):
            continue
        g = geometry[0]
        color = None
        material = elem.find("material")
        if material is not None:
            c = material.find("color")
            rgba = c.get("rgba") if c is not None else colors.get(material.get("name", ""))
            if rgba:
                color = tuple(float(x) for x in _numbers(rgba, 4, (0.7, 0.7, 0.7, 1.0)))
        T = _origin(elem)
        if g.tag == "mesh":
            lookup = locate_mesh(g.get("filename", ""), urdf, package_dirs)
            mesh = lookup.path
            if lookup.refused is not None:
                refused.append(f"{g.get('filename', '')!r} ({lookup.refused})")
            if mesh is None or mesh.suffix.lower() not in (".stl", ".dae", ".obj"):
                missing = True
                continue
            scale = tuple(float(x) for x in _numbers(g.get("scale"), 3, (1, 1, 1)))
            out.append(Visual(Shape.MESH, T, scale, mesh, color))
        elif g.tag == "box":
            out.append(
                Visual(Shape.BOX, T, tuple(float(x) for x in _numbers(g.get("size"), 3, (0, 0, 0))), None, color)
            )
        elif g.tag == "cylinder":
            size = (float(_numbers(g.get("radius"), 1, (0,))[0]), float(_numbers(g.get("length"), 1, (0,))[0]))
            out.append(Visual(Shape.CYLINDER, T, size, None, color))
        elif g.tag == "sphere":
            out.append(Visual(Shape.SPHERE, T, (float(_numbers(g.get("radius"), 1, (0,))[0]),), None, color))
    return out, missing


def read_visuals(urdf: os.PathLike | str, package_dirs: Sequence[os.PathLike | str] = ()) -> dict[str, LinkVisuals]:
    """The shapes to draw for every link of ``urdf`` (a path, or the XML text), by link name.

    Mesh names leading outside the robot's package roots are left out (see the module docstring)
    with one :class:`~wbc.errors.WbcSecurityWarning` naming them.

    Raises:
        ModelError: the file cannot be read or parsed.
    """
    path: Path | None
    if isinstance(urdf, str) and urdf.lstrip().startswith("<"):
        text, path = urdf, None
    else:
        path = Path(urdf)
        text = xml_text(read_user_file(path, what="URDF file"), str(path))
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise ModelError(f"{path or '<string>'}: malformed XML: {e}") from None
    colors = {}
    for m in root.findall("material"):
        c = m.find("color")
        if c is not None and m.get("name"):
            colors[m.get("name")] = c.get("rgba")
    out = {}
    for link in root.findall("link"):
        name = link.get("name", "")
        refused: list[str] = []
        shapes, missing = _shapes(link, "visual", path, package_dirs, colors, refused)
        substituted = False
        if missing:  # a visual mesh that is not on this machine: draw the collision shapes instead
            collision, _ = _shapes(link, "collision", path, package_dirs, colors, refused)
            if collision:
                shapes, substituted = collision, True
        out[name] = LinkVisuals(name, tuple(shapes), substituted, tuple(dict.fromkeys(refused)))
    left_out = [f"link {v.link!r}: {r}" for v in out.values() for r in v.refused]
    if left_out:
        warnings.warn(
            f"{path or '<string>'}: mesh files left out (they lead outside the robot's package roots; "
            f"drawn with collision shapes where those resolve): {'; '.join(left_out)}",
            WbcSecurityWarning,
            stacklevel=2,
        )
    return out
