"""A replay a person can watch: one self-contained ``replay.html`` of a run, in 3D.

The page is meshcat's viewer (its JavaScript bundle, three.js inside, embedded in the file) with
the scene and one animation written into it as meshcat commands, the same content meshcat's own
static-HTML export produces, generated here without running meshcat's server. It works offline
from a ``file://`` URL: no server, no network. It shows:

* the robot, drawn with the meshes from its package (:mod:`wbc.viz.visuals`; collision shapes
  where a visual mesh is missing), moving as recorded;
* the floor (z = 0) and meshcat's grid;
* contact forces as green arrows from their points of application (centre of pressure of a sole,
  the contact point of a point foot), pushes as red arrows ending where they act;
* meshcat's animation controls (top right, *Animations*): play, pause, reset, a time slider and the
  playback speed; the mouse orbits (left), pans (right) and zooms (wheel).

The page also reads its address' fragment: ``replay.html#t=2.5`` opens paused at 2.5 s,
``#t=2.5&hide=robot`` also hides the robot (for pictures of the scene alone, and for tests).

What goes into the page (it is shared): only mesh files inside the robot's package roots
(:mod:`wbc.viz.visuals`; the others are left out with a warning naming them, and the page says
so), and at most ``max_frames`` frames (default :data:`MAX_FRAMES`): a longer recording is
decimated as it is recorded (every 2nd, then every 4th... frame kept, the last one always), with
one warning, so that memory and the page stay bounded (measured: 0.15 kB of page per link and
frame, 7.4 MB per 1,000 frames of Talos' 52 drawn links, so 10,000 frames add about 75 MB to the
page and hold at most twice that many frames' poses, 128 bytes per link each, in memory). Each
link is its own scene node, also when two link names differ only in characters a scene path
cannot hold (``arm:1`` and ``arm_1``).

Usage::

    replay = wbc.viz.Replay(model)                          # meshes from model.source
    for k in range(steps):
        ...
        if k % 33 == 0:
            replay.add(t, q, contacts=wbc.viz.contact_arrows(model, q, controller.contacts, cmd.forces))
    replay.write("out/replay.html")
"""

from __future__ import annotations

import base64
import enum
import html
import io
import json
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import casadi as ca
import numpy as np

from ..algorithms.workspace import Workspace
from ..errors import InputError, MissingDependency, WbcPerformanceWarning
from ..model import checks
from ..model.files import read_user_file
from ..model.model import Model
from .visuals import LinkVisuals, Shape, Visual, read_visuals

__all__ = ["Replay", "Arrow", "MAX_FRAMES"]

#: Frames a replay keeps by default; longer recordings are decimated as they are recorded.
MAX_FRAMES = 10_000

#: An arrow: point of application (3,) and force (3,), N, world axes.
Arrow = tuple[np.ndarray, np.ndarray]

_GREY = (0.75, 0.75, 0.78, 1.0)
_CONTACT_COLOR = 0x22AA44
_PUSH_COLOR = 0xDD2222


class ArrowKind(enum.Enum):
    """What a force arrow shows (its value names the arrow's group in the scene)."""

    CONTACT = "contact"  #: a contact force, drawn from its point of application
    PUSH = "push"  #: an external push, drawn ending at its point of application


_TINY = 1e-6  # scale of an arrow that is not there (three.js dislikes an exact zero)


def _meshcat():
    try:
        import meshcat.animation
        import meshcat.commands
        import meshcat.geometry
        import meshcat.path
        import umsgpack
    except ImportError:
        raise MissingDependency("replays need meshcat: pip install 'wbc[viz]'") from None
    return meshcat, umsgpack


def _safe(name: str) -> str:
    """A meshcat path element (no slashes); not one-to-one: see :func:`_node`."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def _node(k: int, name: str) -> str:
    """The scene node of the ``k``-th item called ``name``: distinct names give distinct nodes."""
    return f"{k}-{_safe(name)}"


def _hex(rgba: tuple[float, ...] | None) -> int:
    r, g, b = (np.clip(rgba or _GREY, 0, 1)[:3] * 255).round().astype(int)
    return int(r) << 16 | int(g) << 8 | int(b)


def _translation(x: float, y: float, z: float) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


_Y_TO_Z = np.array([[1.0, 0, 0, 0], [0, 0, -1, 0], [0, 1, 0, 0], [0, 0, 0, 1]])  # three.js cylinders lie along y


def _rotation_y_to(direction: np.ndarray) -> np.ndarray:
    """A rotation (3, 3) taking +y to the unit ``direction``."""
    y = np.array([0.0, 1.0, 0.0])
    d = direction / np.linalg.norm(direction)
    c = float(y @ d)
    if c < -1 + 1e-12:
        return np.diag([1.0, -1.0, -1.0])
    v = np.cross(y, d)
    K = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return np.eye(3) + K + K @ K / (1 + c)


class Replay:
    """A recording of a run, written as a self-contained HTML page (see the module docstring).

    Args:
        model: the robot.
        urdf: the URDF it was loaded from (path or text), for its visuals; default ``model.source``.
        package_dirs: extra directories to find ``package://`` meshes in.
        title: shown on the page.
        force_scale: arrow length per newton (m/N); default: the largest force recorded is drawn
            0.8 times as long as the robot is large.
        max_frames: frames kept at most (see the module docstring; default :data:`MAX_FRAMES`).

    Raises:
        InputError: no URDF to read visuals from (a model loaded from a string: pass ``urdf``).
        MissingDependency: meshcat is not installed (the ``viz`` extra), when writing.
    """

    def __init__(
        self,
        model: Model,
        urdf: os.PathLike | str | None = None,
        *,
        package_dirs: Sequence[os.PathLike | str] = (),
        title: str | None = None,
        force_scale: float | None = None,
        max_frames: int = MAX_FRAMES,
    ) -> None:
        if not isinstance(model, Model):
            raise InputError(f"model must be a wbc.Model, got {type(model).__name__}")
        if urdf is None and model.source in ("<string>", "<bytes>"):
            raise InputError(f"model {model.name!r} was loaded from a string: pass urdf= (its path or text)")
        if force_scale is not None and not (np.isfinite(force_scale) and force_scale > 0):
            raise InputError(f"force_scale must be positive (m/N), got {force_scale!r}")
        if isinstance(max_frames, bool) or not isinstance(max_frames, int) or max_frames < 2:
            raise InputError(f"max_frames must be an integer >= 2, got {max_frames!r}")
        self.max_frames = max_frames
        self._stride = 1  # every how many add() calls a frame is kept
        self._calls = 0
        self._pending: tuple | None = None  # the latest frame, when it was not kept
        self.model = model
        self.title = title or f"wbc replay: {model.name}"
        self.force_scale = force_scale
        visuals = read_visuals(model.source if urdf is None else urdf, package_dirs)
        self.links: dict[str, LinkVisuals] = {n: v for n, v in visuals.items() if v.visuals and model.has_frame(n)}
        self._refused = tuple(f"link {v.link!r}: {r}" for v in visuals.values() for r in v.refused)
        q = ca.SX.sym("q", model.nq)
        ws = Workspace(model, q)
        blocks = []
        for name in self.links:
            X = ws.frame_placement(name)
            blocks += [ca.reshape(X.R, 9, 1), X.p]
        self._placements = ca.Function("link_placements", [q], [ca.vertcat(*blocks) if blocks else ca.DM.zeros(0, 1)])
        self.times: list[float] = []
        self._poses: list[np.ndarray] = []  # (n_links, 4, 4) per frame
        self._arrows: list[dict[tuple[ArrowKind, str], Arrow]] = []

    @property
    def substituted_links(self) -> tuple[str, ...]:
        """Links drawn with their collision shapes (their visual meshes are not on this machine)."""
        return tuple(n for n, v in self.links.items() if v.substituted)

    @property
    def refused_meshes(self) -> tuple[str, ...]:
        """Mesh names left out of the page (outside the robot's package roots), with the reason."""
        return self._refused

    def add(
        self,
        t: float,
        q,
        contacts: Mapping[str, Arrow] | None = None,
        pushes: Mapping[str, Arrow] | None = None,
    ) -> None:
        """Record the state at time ``t`` (s, increasing): configuration ``q`` (nq,), contact forces
        and pushes as ``{name: (point (3,), force (3,))}`` in world axes (m, N)."""
        q = checks.configuration(self.model, q)
        last = self._frames()[0][-1:]
        if not (np.isfinite(t) and (not last or t > last[0])):
            raise InputError(f"replay times must be finite and increasing, got {t!r} after {last}")
        flat = np.array(self._placements(q), dtype=float).reshape(-1)
        poses = np.tile(np.eye(4), (len(self.links), 1, 1))
        for k in range(len(self.links)):
            poses[k, :3, :3] = flat[12 * k : 12 * k + 9].reshape(3, 3, order="F")
            poses[k, :3, 3] = flat[12 * k + 9 : 12 * k + 12]
        arrows = {}
        for kind, group in ((ArrowKind.CONTACT, contacts), (ArrowKind.PUSH, pushes)):
            for name, (point, force) in (group or {}).items():
                arrows[(kind, name)] = (
                    checks.vector(point, 3, f"{kind.value} {name!r} point"),
                    checks.vector(force, 3, f"{kind.value} {name!r} force"),
                )
        self._record(float(t), poses, arrows)

    def _record(self, t: float, poses: np.ndarray, arrows: dict) -> None:
        """Keep the frame if it falls on the stride; halve what is kept when over ``max_frames``."""
        keep = self._calls % self._stride == 0
        self._calls += 1
        if not keep:
            self._pending = (t, poses, arrows)
            return
        self._pending = None
        self.times.append(t)
        self._poses.append(poses)
        self._arrows.append(arrows)
        if len(self.times) > self.max_frames:
            if self._stride == 1:
                warnings.warn(
                    f"replay of {self.model.name}: more than {self.max_frames} frames recorded; keeping every "
                    "2nd frame from now on, then fewer (max_frames= sets the limit)",
                    WbcPerformanceWarning,
                    stacklevel=3,
                )
            latest_dropped = len(self.times) % 2 == 0  # the latest frame sits at an odd index
            if latest_dropped:
                self._pending = (self.times[-1], self._poses[-1], self._arrows[-1])
            self.times, self._poses, self._arrows = self.times[::2], self._poses[::2], self._arrows[::2]
            # the next frame kept is 2 strides after the last one kept (1 stride from the dropped one)
            self._calls = self._stride + 1 if latest_dropped else 1
            self._stride *= 2

    def _frames(self) -> tuple[list[float], list[np.ndarray], list[dict]]:
        """The frames to write: those kept, and the latest one recorded."""
        if self._pending is None:
            return self.times, self._poses, self._arrows
        t, poses, arrows = self._pending
        return [*self.times, t], [*self._poses, poses], [*self._arrows, arrows]

    # ------------------------------------------------------------------------------ writing
    def write(self, path: os.PathLike | str) -> Path:
        """Write the page (its parent directories created); returns its path.

        Raises:
            InputError: nothing was recorded, or ``path`` cannot be written (named).
        """
        if not self.times:
            raise InputError("nothing recorded: call add() at least once before write()")
        meshcat, umsgpack = _meshcat()
        kept = self.times, self._poses, self._arrows
        self.times, self._poses, self._arrows = self._frames()  # with the latest frame, if not kept
        try:
            commands = self._scene(meshcat) + [self._animation(meshcat)]
            blobs = [base64.b64encode(umsgpack.packb(c.lower())).decode("ascii") for c in commands]
            page = self._page(meshcat, blobs)
        finally:
            self.times, self._poses, self._arrows = kept
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(page)
        except OSError as e:  # a directory at path, a file where a parent directory should be, ...
            raise InputError(f"cannot write the replay to {path}: {e.strerror or e}") from None
        return path

    def _visual_objects(self, meshcat, visual: Visual):
        g = meshcat.geometry
        material = g.MeshPhongMaterial(color=_hex(visual.color or _GREY), opacity=(visual.color or _GREY)[3])
        T = visual.origin.copy()
        if visual.shape is Shape.MESH:
            assert visual.mesh is not None
            suffix = visual.mesh.suffix.lower()
            # read as checked (a regular file of bounded size), not by meshcat's from_file
            contents = read_user_file(visual.mesh, what="mesh file")
            if suffix == ".stl":
                geometry = g.StlMeshGeometry.from_stream(io.BytesIO(contents))
            else:
                geometry = g.MeshGeometry(contents.decode("utf-8", errors="replace"), suffix[1:])
            T = T @ np.diag([*visual.size, 1.0])
        elif visual.shape is Shape.BOX:
            geometry = g.Box(list(visual.size))
        elif visual.shape is Shape.CYLINDER:
            geometry = g.Cylinder(visual.size[1], visual.size[0])
            T = T @ _Y_TO_Z
        else:
            geometry = g.Sphere(visual.size[0])
        return geometry, material, T

    def _scene(self, meshcat) -> list:
        c, g, P = meshcat.commands, meshcat.geometry, meshcat.path.Path
        target, position = self._camera()
        offset = position - target
        out = [
            # meshcat orbits its camera around the origin: the scene is shifted so that the robot's
            # centre is there; its camera sits under a node rotated to three.js' y-up, where world
            # (x, y, z) is (x, z, -y)
            c.SetTransform(_translation(*(-target)), P(("scene",))),
            c.SetProperty(
                "position", [offset[0], offset[2], -offset[1]], P(("Cameras", "default", "rotated", "<object>"))
            ),
            c.SetProperty("visible", False, P(("Grid",))),
            c.SetProperty("visible", False, P(("Axes",))),
            c.SetObject(g.Box([6.0, 6.0, 0.01]), g.MeshPhongMaterial(color=0xC8CCD0), P(("scene", "floor"))),
            c.SetTransform(_translation(target[0], target[1], -0.005), P(("scene", "floor"))),
        ]
        radius = self._arrow_radius()
        for k, (name, link) in enumerate(self.links.items()):
            for j, visual in enumerate(link.visuals):
                geometry, material, T = self._visual_objects(meshcat, visual)
                node = P(("scene", "robot", _node(k, name), f"v{j}"))
                out += [c.SetObject(geometry, material, node), c.SetTransform(T, node)]
        for k, (kind, name) in enumerate(self._arrow_names()):
            color = _CONTACT_COLOR if kind is ArrowKind.CONTACT else _PUSH_COLOR
            base = ("scene", "arrows", kind.value, _node(k, name), "length")
            # drawn over the robot (transparent objects render last; no depth test): forces act inside feet
            material = g.MeshPhongMaterial(color=color, transparent=True, opacity=0.9, depthTest=False)
            out += [
                c.SetObject(g.Cylinder(0.8, radius), material, P(base + ("shaft",))),
                c.SetTransform(_translation(0, 0.4, 0), P(base + ("shaft",))),
                c.SetObject(g.Cylinder(0.2, radiusTop=0.0, radiusBottom=2.5 * radius), material, P(base + ("head",))),
                c.SetTransform(_translation(0, 0.9, 0), P(base + ("head",))),
            ]
        return out

    def _arrow_names(self) -> list[tuple[ArrowKind, str]]:
        names: dict[tuple[ArrowKind, str], None] = {}
        for frame in self._arrows:
            names.update(dict.fromkeys(frame))
        return list(names)

    def _scale(self) -> float:
        if self.force_scale is not None:
            return self.force_scale
        largest = max((np.linalg.norm(f) for frame in self._arrows for _, f in frame.values()), default=0.0)
        return 0.8 * self._extent()[1] / largest if largest > 0 else 0.0

    def _animation(self, meshcat):
        anim_mod, P = meshcat.animation, meshcat.path.Path
        duration = self.times[-1] - self.times[0]
        fps = (len(self.times) - 1) / duration if duration > 0 else 30.0
        animation = anim_mod.Animation(default_framerate=fps)
        scale = self._scale()
        names = self._arrow_names()
        for k, (poses, arrows) in enumerate(zip(self._poses, self._arrows)):
            # key frames at the recorded times (frames of 1/fps s from the first recorded time)
            frame = (self.times[k] - self.times[0]) * fps
            for j, (pose, name) in enumerate(zip(poses, self.links)):
                node = ("scene", "robot", _node(j, name))
                anim_mod.AnimationFrameVisualizer(animation, P(node), frame).set_transform(pose)
            for j, (kind, name) in enumerate(names):
                point, force = arrows.get((kind, name), (np.zeros(3), np.zeros(3)))
                length = float(np.linalg.norm(force)) * scale
                T = np.eye(4)
                if length > 1e-9:
                    T[:3, :3] = _rotation_y_to(force)
                    # contact forces start at their point; pushes end where they act
                    T[:3, 3] = point if kind is ArrowKind.CONTACT else point - force / np.linalg.norm(force) * length
                else:
                    T[:3, 3] = point
                node = ("scene", "arrows", kind.value, _node(j, name))
                anim_mod.AnimationFrameVisualizer(animation, P(node), frame).set_transform(T)
                width = 1.0 if length > 1e-9 else _TINY  # an absent arrow shrinks to nothing
                anim_mod.AnimationFrameVisualizer(animation, P(node + ("length",)), frame).set_property(
                    "scale", "vector3", [width, max(length, _TINY), width]
                )
        return meshcat.commands.SetAnimation(animation, play=True, repetitions=1)

    def _extent(self) -> tuple[np.ndarray, float]:
        """Centre (3,) and size (m) of the box the robot's link origins sweep over the run (the
        origin and 1 m when it has no link to draw: an MJCF whose geometry is its own)."""
        points = np.concatenate([p[:, :3, 3] for p in self._poses])
        if not points.size:
            return np.zeros(3), 1.0
        lo, hi = points.min(0), points.max(0)
        return (lo + hi) / 2, max(float(np.max(hi - lo)), 0.3)

    def _camera(self) -> tuple[np.ndarray, np.ndarray]:
        """Target and camera position (world): in front of and beside the robot, a little above."""
        target, size = self._extent()
        return target, target + size * np.array([1.5, 1.0, 0.75])

    def _arrow_radius(self) -> float:
        return self._extent()[1] / 120

    def _page(self, meshcat, blobs: list[str]) -> str:
        bundle = (Path(meshcat.__file__).parent / "viewer" / "dist" / "main.min.js").read_text()
        bundle = bundle.replace("</script", "<\\/script")
        note = ""
        if self.substituted_links:
            note = f"<br>drawn with collision shapes (mesh not found): {html.escape(', '.join(self.substituted_links))}"
        if self.refused_meshes:
            note += f"<br>mesh files left out (outside the robot's package): {len(self.refused_meshes)}"
        data = json.dumps(blobs)
        return _TEMPLATE.format(
            title=html.escape(self.title),
            note=note,
            duration=f"{self.times[-1] - self.times[0]:.2f}",
            bundle=bundle,
            blobs=data,
            t0=json.dumps(self.times[0]),
        )


_TEMPLATE = """<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
  body {{ margin: 0; overflow: hidden; }}
  #meshcat-pane {{ width: 100vw; height: 100vh; overflow: hidden; }}
  #legend {{ position: absolute; left: 10px; top: 8px; font: 13px sans-serif; color: #222;
            background: rgba(255, 255, 255, 0.75); padding: 6px 9px; border-radius: 4px; }}
  #legend .c {{ color: #22aa44; font-weight: bold; }} #legend .p {{ color: #dd2222; font-weight: bold; }}
</style>
</head>
<body>
<div id="meshcat-pane"></div>
<div id="legend"><b>{title}</b> ({duration} s)<br>
<span class="c">green</span>: contact forces, <span class="p">red</span>: pushes.
Play, pause, time slider: <i>Open Controls</i> (top right), <i>Animations</i>.{note}</div>
<script>{bundle}</script>
<script>
(function () {{
  var viewer = new MeshCat.Viewer(document.getElementById("meshcat-pane"));
  window.viewer = viewer;
  var blobs = {blobs};
  blobs.forEach(function (b) {{
    var s = atob(b), bytes = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
    viewer.handle_command_bytearray(bytes);
  }});
  var args = new URLSearchParams(window.location.hash.slice(1));
  if (args.has("t")) {{
    var t = parseFloat(args.get("t")) - {t0};
    viewer.animator.pause();
    viewer.animator.seek(t);
    viewer.animator.display_progress(t);
  }}
  if (args.get("hide") === "robot") {{
    viewer.scene_tree.find(["scene", "robot"]).object.visible = false;
  }}
  viewer.set_dirty();
}})();
</script>
</body>
</html>
"""
