"""What a robot looks like: the ``<visual>`` (and, where those are missing, ``<collision>``) shapes of
its URDF links, with mesh files resolved on this machine.

A mesh is named ``package://NAME/rest`` (ROS), ``file://...``, or a path relative to the URDF. A
package is looked up, in order, in the directories given by the caller, among the URDF file's
ancestors (a directory called ``NAME``), and under the Python environment's ``share`` directories
and site-packages (where example-robot-data, icub-models and jvrc-description install). A link
whose visual mesh cannot be found is drawn with its collision shapes instead (primitives, or
collision meshes that resolve); :attr:`LinkVisuals.substituted` records which, so a replay can say
so. Links without any visual stay invisible, as their authors meant.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import os
import sys
import sysconfig
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import ModelError

__all__ = ["Shape", "Visual", "LinkVisuals", "read_visuals", "resolve_mesh"]


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
    """The shapes drawn for one link; ``substituted`` when they are its collision shapes."""

    link: str
    visuals: tuple[Visual, ...]
    substituted: bool = False


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
    """The file a URDF mesh name refers to on this machine, or None when it cannot be found."""
    if filename.startswith("package://"):
        package, _, rest = filename[len("package://") :].partition("/")
        if urdf is not None:
            for parent in urdf.resolve().parents:
                if parent.name == package and (parent / rest).is_file():
                    return parent / rest
        for root in _search_roots(package_dirs):
            if (root / package / rest).is_file():
                return root / package / rest
        return None
    if filename.startswith("file://"):
        path = Path(filename[len("file://") :])
    else:
        path = Path(filename)
        if not path.is_absolute() and urdf is not None:
            path = urdf.parent / path
    return path if path.is_file() else None


def _shapes(link: ET.Element, tag: str, urdf: Path | None, package_dirs, colors: dict) -> tuple[list[Visual], bool]:
    """The ``tag`` (visual / collision) shapes of a link; the flag says a mesh could not be found."""
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
            mesh = resolve_mesh(g.get("filename", ""), urdf, package_dirs)
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

    Raises:
        ModelError: the file cannot be read or parsed.
    """
    path: Path | None
    if isinstance(urdf, str) and urdf.lstrip().startswith("<"):
        text, path = urdf, None
    else:
        path = Path(urdf)
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise ModelError(f"{path}: cannot read URDF file: {e}") from None
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
        shapes, missing = _shapes(link, "visual", path, package_dirs, colors)
        substituted = False
        if missing:  # a visual mesh that is not on this machine: draw the collision shapes instead
            collision, _ = _shapes(link, "collision", path, package_dirs, colors)
            if collision:
                shapes, substituted = collision, True
        out[name] = LinkVisuals(name, tuple(shapes), substituted)
    return out
