"""MJCF loader: a MuJoCo model file as a :class:`~wbc.model.clusters.ClusterModel`.

What is read (as MuJoCo Menagerie writes it):

* ``<compiler angle eulerseq>``, ``<option gravity>``, ``<default>`` classes (nested, with
  ``class`` and ``childclass``) for ``joint``, ``site`` and ``inertial`` attributes;
* ``<worldbody>``: nested ``<body pos quat|axisangle|euler|xyaxes|zaxis>`` with ``<inertial pos
  (orientation) mass diaginertia|fullinertia>``, ``<joint type="hinge|slide|free">`` (several
  joints in one body become a chain through massless intermediate bodies, as MuJoCo composes
  them), ``<freejoint>``, ``<site>`` (OP frames); a body without joints is welded to its parent;
* joint ``armature`` → :attr:`ClusterModel.armature` (the approximate rotor model the file chose:
  it stays an armature), ``range`` → limits;
* ``<equality>``: ``connect`` (a point loop closure, anchor in ``body1``, the point on ``body2``
  where it is at ``qpos0``), ``weld`` (a frame loop closure, default ``relpose``) and ``joint``
  (``joint1 = Σ polycoefₖ joint2ᵏ``); equalities sharing joints form one cluster, whose
  dependent joints are ``joint1`` of the couplings and, for loops, the non-actuated joints
  deepest in the tree that the closure rows determine (rows a planar loop leaves void dropped);
  MuJoCo's softness (``solref``/``solimp``) is not modelled: constraints are exact;
* ``<actuator>`` elements naming a joint mark it actuated.

Layout: joints in document order, depth first (MuJoCo's and Pinocchio's ``buildModelFromMJCF``
order); a free joint's configuration is wbc's ``[x y z qx qy qz qw]`` (MuJoCo stores ``qw`` first
and the linear velocity in world axes; wbc's is in the base frame, as Pinocchio's).

Anything else that changes the dynamics (ball joints, a joint ``ref``, inertia from geoms,
``<include>``, ``<frame>``, tendon or flex equalities, a non-default ``relpose``) raises a
:class:`~wbc.errors.ModelError` naming the element.
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET

import casadi as ca
import numpy as np

from ..errors import ModelError
from ..spatial.algebra import SE3, act_inertia, compose, inverse, rigid_inertia
from .clusters import Cluster, ClusterModel, LoopClosure, PolynomialCoupling, _closure_rows
from .configuration import neutral
from .files import xml_source
from .joints import joint_transform
from .model import Frame, FrameKind, Joint, JointType, Model

__all__ = ["load_mjcf"]

_INF = math.inf
_ACTUATORS = ("motor", "position", "velocity", "general", "intvelocity", "damper", "cylinder", "muscle", "adhesion")
_UNSUPPORTED_TOP = ("include",)


def load_mjcf(
    source: str | bytes | os.PathLike, *, name: str | None = None, max_bytes: int | None = None
) -> ClusterModel:
    """Load an MJCF file (or MJCF text, recognised by a leading ``<``) into a :class:`ClusterModel`.

    Args:
        source: a path (a regular file), or the document as ``str`` or ``bytes``.
        name: the model's name (default the file's ``model`` attribute).
        max_bytes: the largest file read (bytes); default :data:`wbc.model.files.MAX_FILE_BYTES`.

    Raises:
        ModelError: unreadable file, not a regular file, too large, malformed XML, bodies nested
            deeper than the reader follows, or an unsupported element (named).
    """
    text, where = xml_source(source, "MJCF file", max_bytes)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise ModelError(f"{where}: malformed XML: {e}") from None
    if root.tag != "mujoco":
        raise ModelError(f"{where}: root element is <{root.tag}>, expected <mujoco>")
    try:
        return _Loader(root, where).build(name)
    except RecursionError:
        raise ModelError(f"{where}: bodies are nested too deeply to be read") from None


def _quat_matrix(wxyz) -> np.ndarray:
    w, x, y, z = np.asarray(wxyz, float) / np.linalg.norm(wxyz)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def _world_pose(tree: Model, q: np.ndarray, joint: int, local: SE3) -> SE3:
    """World placement (numpy) of ``local`` (in ``joint``'s frame) at configuration ``q``."""
    M = SE3(np.eye(3), np.zeros((3, 1)))
    for j in tree.support(joint):
        jt = tree.joints[j]
        M = compose(M, joint_transform(jt, ca.DM(q[jt.idx_q : jt.idx_q + jt.nq])))
    M = compose(M, local)
    return SE3(np.array(ca.DM(M.R)), np.array(ca.DM(M.p)))


def _axis_angle(axis, angle: float) -> np.ndarray:
    a = np.asarray(axis, float)
    a = a / np.linalg.norm(a)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


class _Loader:
    def __init__(self, root: ET.Element, where: str) -> None:
        self.root = root
        self.where = where
        compiler = root.find("compiler")
        self.degrees = True
        self.eulerseq = "xyz"
        if compiler is not None:
            self.degrees = compiler.get("angle", "degree") == "degree"
            self.eulerseq = compiler.get("eulerseq", "xyz")
            if compiler.get("inertiafromgeom") == "true":
                raise ModelError(f'{where}: <compiler inertiafromgeom="true">: inertia from geoms is not supported')
        for tag in _UNSUPPORTED_TOP:
            if root.find(tag) is not None:
                raise ModelError(f"{where}: <{tag}> is not supported (merge the files)")
        self.defaults: dict[str, dict[str, dict[str, str]]] = {}
        self.default_parent: dict[str, str | None] = {}
        for d in root.findall("default"):
            self._read_defaults(d, None)

    # ------------------------------------------------------------------ helpers
    def _read_defaults(self, elem: ET.Element, parent: str | None) -> None:
        cls = elem.get("class", "main")
        self.default_parent[cls] = parent
        self.defaults[cls] = {child.tag: dict(child.attrib) for child in elem if child.tag != "default"}
        for child in elem.findall("default"):
            self._read_defaults(child, cls)

    def _attrs(self, elem: ET.Element, childclass: str | None) -> dict[str, str]:
        cls = elem.get("class", childclass or "main")
        if cls not in self.defaults and cls != "main":
            raise ModelError(f"{self.where}: <{elem.tag} {self._label(elem)}> uses unknown default class {cls!r}")
        chain = []
        c: str | None = cls
        while c is not None and c in self.defaults:
            chain.append(self.defaults[c].get(elem.tag, {}))
            c = self.default_parent.get(c)
        out: dict[str, str] = {}
        for d in reversed(chain):
            out.update(d)
        out.update(elem.attrib)
        return out

    @staticmethod
    def _label(elem: ET.Element) -> str:
        n = elem.get("name")
        return f"name={n!r}" if n else f"(unnamed {elem.tag})"

    def _floats(self, value: str | None, n: int | None, what: str, default=None) -> np.ndarray:
        if value is None:
            if default is None:
                raise ModelError(f"{self.where}: {what} is missing")
            return np.asarray(default, float)
        try:
            vals = np.array([float(t) for t in value.split()])
        except ValueError:
            raise ModelError(f"{self.where}: {what} = {value!r} is not numbers") from None
        if n is not None and vals.size != n:
            raise ModelError(f"{self.where}: {what} = {value!r} has {vals.size} numbers, expected {n}")
        if not np.all(np.isfinite(vals)):
            raise ModelError(f"{self.where}: {what} = {value!r} is not finite")
        return vals

    def _angle(self, x: float) -> float:
        return math.radians(x) if self.degrees else x

    def _orientation(self, a: dict[str, str], what: str) -> np.ndarray:
        given = [k for k in ("quat", "axisangle", "euler", "xyaxes", "zaxis") if k in a]
        if len(given) > 1:
            raise ModelError(f"{self.where}: {what} has several orientations ({', '.join(given)})")
        if not given:
            return np.eye(3)
        k = given[0]
        if k == "quat":
            return _quat_matrix(self._floats(a[k], 4, f"{what} quat"))
        if k == "axisangle":
            v = self._floats(a[k], 4, f"{what} axisangle")
            return _axis_angle(v[:3], self._angle(v[3]))
        if k == "euler":
            angles = [self._angle(x) for x in self._floats(a[k], 3, f"{what} euler")]
            R = np.eye(3)
            for axis_name, angle in zip(self.eulerseq, angles):
                Ri = _axis_angle(np.eye(3)["xyz".index(axis_name.lower())], angle)
                # lower case: axes rotating with the frame (post-multiply); upper case: fixed axes
                R = R @ Ri if axis_name.islower() else Ri @ R
            return R
        if k == "xyaxes":
            v = self._floats(a[k], 6, f"{what} xyaxes")
            x = v[:3] / np.linalg.norm(v[:3])
            y = v[3:] - x * (x @ v[3:])
            y = y / np.linalg.norm(y)
            return np.column_stack([x, y, np.cross(x, y)])
        z = self._floats(a[k], 3, f"{what} zaxis")
        z = z / np.linalg.norm(z)
        ez = np.array([0.0, 0.0, 1.0])
        c = float(ez @ z)
        if c < -1 + 1e-12:
            return np.diag([1.0, -1.0, -1.0])
        axis = np.cross(ez, z)
        if np.linalg.norm(axis) < 1e-12:
            return np.eye(3)
        return _axis_angle(axis, math.acos(max(-1.0, min(1.0, c))))

    def _pose(self, a: dict[str, str], what: str) -> SE3:
        p = self._floats(a.get("pos"), 3, f"{what} pos", [0.0, 0.0, 0.0])
        return SE3(self._orientation(a, what), p.reshape(3, 1))

    # ------------------------------------------------------------------ tree
    def build(self, name: str | None) -> ClusterModel:
        world = self.root.find("worldbody")
        if world is None:
            raise ModelError(f"{self.where}: no <worldbody>")
        self.joints: list[Joint] = [
            Joint(
                "universe",
                JointType.UNIVERSE,
                -1,
                SE3(np.eye(3), np.zeros((3, 1))),
                np.zeros(3),
                0,
                0,
                np.zeros(0),
                np.zeros(0),
                np.zeros(0),
                np.zeros(0),
                "universe",
            )
        ]
        self.inertias: list[np.ndarray] = [np.zeros((6, 6))]
        self.frames: list[Frame] = []
        self.armature: list[float] = []
        self.body_frame: dict[str, tuple[int, SE3]] = {"world": (0, SE3(np.eye(3), np.zeros((3, 1))))}
        self.iq = self.iv = 0
        self.frames.append(Frame("world", FrameKind.BODY, 0, SE3(np.eye(3), np.zeros((3, 1)))))
        self._sites(world, 0, SE3(np.eye(3), np.zeros((3, 1))), None)
        for tag in ("frame",):
            if world.find(tag) is not None:
                raise ModelError(f"{self.where}: <{tag}> in <worldbody> is not supported")
        for body in world.findall("body"):
            self._body(body, 0, SE3(np.eye(3), np.zeros((3, 1))), None, top=True)
        opt = self.root.find("option")
        gravity = np.array([0.0, 0.0, -9.81])
        if opt is not None and opt.get("gravity") is not None:
            gravity = self._floats(opt.get("gravity"), 3, "<option gravity>")
        actuated = self._actuated()
        model_name = name or self.root.get("model") or "mjcf"
        tree = Model(
            model_name,
            tuple(self.joints),
            tuple(self.inertias),
            tuple(self.frames),
            actuated,
            np.asarray(gravity, float),
            self.where,
        )
        tree, clusters = self._equalities(tree, actuated)
        arm = np.array(self.armature)
        return ClusterModel(tree, tuple(clusters), model_name, None, arm if arm.size and np.any(arm) else None)

    def _sites(self, body: ET.Element, joint: int, in_joint: SE3, childclass: str | None) -> None:
        for site in body.findall("site"):
            a = self._attrs(site, childclass)
            if "name" not in a:
                continue
            self.frames.append(
                Frame(a["name"], FrameKind.OP, joint, compose(in_joint, self._pose(a, f"<site {self._label(site)}>")))
            )

    def _inertia(self, body: ET.Element, childclass: str | None, label: str) -> np.ndarray:
        inertial = body.find("inertial")
        if inertial is None:
            if body.find("geom") is not None:
                raise ModelError(
                    f"{self.where}: <body {label}> has geoms but no <inertial>: inertia from geoms is not supported"
                )
            return np.zeros((6, 6))
        a = self._attrs(inertial, childclass)
        what = f"<body {label}> <inertial>"
        mass = float(self._floats(a.get("mass"), 1, f"{what} mass")[0])
        if mass < 0:
            raise ModelError(f"{self.where}: {what} has negative mass {mass}")
        pose = self._pose(a, what)
        if "diaginertia" in a:
            I = np.diag(self._floats(a["diaginertia"], 3, f"{what} diaginertia"))
        elif "fullinertia" in a:
            if any(k in a for k in ("quat", "axisangle", "euler", "xyaxes", "zaxis")):
                raise ModelError(f"{self.where}: {what}: fullinertia excludes an orientation (MuJoCo's rule)")
            v = self._floats(a["fullinertia"], 6, f"{what} fullinertia")
            I = np.array([[v[0], v[3], v[4]], [v[3], v[1], v[5]], [v[4], v[5], v[2]]])
        else:
            raise ModelError(f"{self.where}: {what} needs diaginertia or fullinertia")
        if np.linalg.eigvalsh(I).min() < -1e-12 * max(1.0, np.abs(I).max()):
            raise ModelError(f"{self.where}: {what} inertia is not positive semi-definite")
        R = np.asarray(pose.R)
        return rigid_inertia(mass, np.asarray(pose.p).reshape(3), R @ I @ R.T)

    def _body(self, body: ET.Element, parent: int, parent_frame: SE3, childclass: str | None, top: bool) -> None:
        label = self._label(body)
        bname = body.get("name")
        if bname is None:
            raise ModelError(f"{self.where}: a <body> has no name (wbc names frames after bodies)")
        if body.find("frame") is not None:
            raise ModelError(f"{self.where}: <body {label}> contains a <frame>, which is not supported")
        a = self._attrs(body, childclass)
        own_class = body.get("childclass", childclass)
        X_pb = compose(parent_frame, self._pose(a, f"<body {label}>"))  # body frame in the parent joint frame
        joints = []
        for j in body:
            if j.tag == "freejoint":
                joints.append((j, {"type": "free", **j.attrib}))
            elif j.tag == "joint":
                joints.append((j, self._attrs(j, own_class)))
        inertia = self._inertia(body, own_class, label)
        if not joints:  # welded to the parent: merge the inertia, keep the frame
            self.inertias[parent] = self.inertias[parent] + np.array(ca.DM(act_inertia(X_pb, inertia)))
            self.body_frame[bname] = (parent, X_pb)
            self.frames.append(Frame(bname, FrameKind.BODY, parent, X_pb))
            self._sites(body, parent, X_pb, own_class)
            for child in body.findall("body"):
                self._body(child, parent, X_pb, own_class, top=False)
            return
        current, frame, prev_anchor = parent, X_pb, np.zeros(3)
        for k, (_, ja) in enumerate(joints):
            jtype = ja.get("type", "hinge")
            jname = ja.get("name") or f"{bname}_joint{k}"
            what = f"<joint {jname!r}> of body {bname!r}"
            if jtype == "ball":
                raise ModelError(f"{self.where}: {what}: ball joints are not supported")
            if jtype not in ("hinge", "slide", "free"):
                raise ModelError(f"{self.where}: {what}: unknown joint type {jtype!r}")
            if "ref" in ja and float(ja["ref"]) != 0.0:
                raise ModelError(f"{self.where}: {what}: a non-zero ref is not supported")
            anchor = self._floats(ja.get("pos"), 3, f"{what} pos", [0.0, 0.0, 0.0])
            if jtype == "free":
                if not top or len(joints) > 1 or np.any(anchor):
                    raise ModelError(f"{self.where}: {what}: a free joint must be the only joint of a top-level body")
                placement, jt, axis, nq, nv = frame, JointType.FREE_FLYER, np.zeros(3), 7, 6
            else:
                axis = self._floats(ja.get("axis"), 3, f"{what} axis", [0.0, 0.0, 1.0])
                if np.linalg.norm(axis) < 1e-12:
                    raise ModelError(f"{self.where}: {what}: zero axis")
                axis = axis / np.linalg.norm(axis)
                step = SE3(np.eye(3), (anchor - prev_anchor).reshape(3, 1))
                placement = compose(frame, step) if k == 0 else step
                jt = JointType.REVOLUTE if jtype == "hinge" else JointType.PRISMATIC
                nq = nv = 1
            lower, upper = np.full(nq, -_INF), np.full(nq, _INF)
            if jt is not JointType.FREE_FLYER and "range" in ja and ja.get("limited", "auto") != "false":
                r = self._floats(ja["range"], 2, f"{what} range")
                if jt is JointType.REVOLUTE:
                    r = np.array([self._angle(x) for x in r])
                lower, upper = r[:1], r[1:]
            last = k == len(joints) - 1
            link = bname if last else f"{bname}__{jname}"
            self.joints.append(
                Joint(
                    jname,
                    jt,
                    current,
                    placement,
                    axis,
                    self.iq,
                    self.iv,
                    lower,
                    upper,
                    np.full(nv, _INF),
                    np.full(nv, _INF),
                    link,
                )
            )
            idx = len(self.joints) - 1
            self.iq += nq
            self.iv += nv
            arm = float(ja.get("armature", 0.0))
            if arm < 0:
                raise ModelError(f"{self.where}: {what}: negative armature")
            self.armature.extend([arm] * nv)
            self.frames.append(Frame(jname, FrameKind.JOINT, idx, SE3(np.eye(3), np.zeros((3, 1)))))
            self.inertias.append(np.zeros((6, 6)))
            current, prev_anchor = idx, anchor
        body_in_joint = SE3(np.eye(3), (-prev_anchor).reshape(3, 1))
        self.inertias[current] = np.array(ca.DM(act_inertia(body_in_joint, inertia)))
        self.body_frame[bname] = (current, body_in_joint)
        self.frames.append(Frame(bname, FrameKind.BODY, current, body_in_joint))
        self._sites(body, current, body_in_joint, own_class)
        for child in body.findall("body"):
            self._body(child, current, body_in_joint, own_class, top=False)

    def _actuated(self) -> tuple[int, ...]:
        names = {j.name: i for i, j in enumerate(self.joints)}
        act = self.root.find("actuator")
        if act is None:
            return tuple(i for i, j in enumerate(self.joints) if i > 0 and j.type is not JointType.FREE_FLYER)
        out = set()
        for el in act:
            if el.tag not in _ACTUATORS:
                raise ModelError(f"{self.where}: unknown actuator <{el.tag}>")
            j = el.get("joint")
            if j is None:
                continue  # tendon, site or body transmissions do not mark a joint
            if j not in names:
                raise ModelError(f"{self.where}: <{el.tag} {self._label(el)}> names unknown joint {j!r}")
            out.add(names[j])
        return tuple(sorted(out))

    # ------------------------------------------------------------------ equalities
    def _equalities(self, tree: Model, actuated) -> tuple[Model, list[Cluster]]:
        eq_root = self.root.find("equality")
        self._extra_frames: list[Frame] = []
        if eq_root is None:
            return tree, []
        q0 = neutral(tree)
        # (joints, constraint, forced dependent joint or None, label)
        items: list[tuple[set[str], PolynomialCoupling | LoopClosure, str | None, str]] = []
        for k, el in enumerate(eq_root):
            label = f"<{el.tag} {self._label(el)}>"
            if el.get("active", "true") == "false":
                continue
            name = el.get("name") or f"equality{k}"
            if el.tag == "joint":
                j1 = el.get("joint1")
                j2 = el.get("joint2")
                if j1 is None or j1 not in tree._joint_index:
                    raise ModelError(f"{self.where}: {label}: joint1 {j1!r} is not a joint of the model")
                if j2 is None:
                    raise ModelError(f"{self.where}: {label}: a locked joint (no joint2) is not supported")
                if j2 not in tree._joint_index:
                    raise ModelError(f"{self.where}: {label}: joint2 {j2!r} is not a joint of the model")
                coef = self._floats(el.get("polycoef"), 5, f"{label} polycoef", [0, 1, 0, 0, 0])
                items.append(({j1, j2}, PolynomialCoupling(j1, j2, tuple(float(c) for c in coef)), j1, label))
            elif el.tag in ("connect", "weld"):
                closure, joints = self._closure(tree, el, label, name, q0)
                items.append((joints, closure, None, label))
            else:
                raise ModelError(f"{self.where}: {label}: equality <{el.tag}> is not supported")
        # clusters: equalities sharing joints
        groups: list[tuple[set[str], list]] = []
        for joints, c, forced, label in items:
            merged = [g for g in groups if g[0] & joints]
            new_joints, members = set(joints), [(c, forced, label)]
            for g in merged:
                new_joints |= g[0]
                members = g[1] + members
                groups.remove(g)
            groups.append((new_joints, members))
        full = Model(
            tree.name,
            tree.joints,
            tree.inertias,
            tree.frames + tuple(self._extra_frames),
            tree.actuated,
            tree.gravity,
            tree.source,
        )
        clusters = [
            self._cluster(full, f"equality_cluster{n}", joints, members, actuated, q0)
            for n, (joints, members) in enumerate(groups)
        ]
        return full, clusters

    def _closure(self, tree: Model, el: ET.Element, label: str, name: str, q0) -> tuple[LoopClosure, set[str]]:
        from .clusters import ClosureKind

        b1, b2 = el.get("body1"), el.get("body2", "world")
        if el.get("site1") is not None or el.get("site2") is not None:
            raise ModelError(f"{self.where}: {label}: site-based equalities are not supported (use body1/body2)")
        if b1 is None or b1 not in self.body_frame:
            raise ModelError(f"{self.where}: {label}: unknown body {b1!r}")
        if b2 not in self.body_frame:
            raise ModelError(f"{self.where}: {label}: unknown body {b2!r}")
        if el.tag == "weld":
            rel = el.get("relpose")
            if rel is not None and np.any(self._floats(rel, 7, f"{label} relpose") != np.array([0, 1, 0, 0, 0, 0, 0])):
                raise ModelError(f"{self.where}: {label}: an explicit relpose is not supported (only the qpos0 pose)")
        anchor = self._floats(el.get("anchor"), 3, f"{label} anchor", [0.0, 0.0, 0.0])
        j1, M1 = self.body_frame[b1]
        j2, _ = self.body_frame[b2]
        Fa = compose(M1, SE3(np.eye(3), anchor.reshape(3, 1)))
        # where that frame is at qpos0, in body2's joint frame
        oMa = _world_pose(tree, q0, j1, Fa)
        oMj2 = _world_pose(tree, q0, j2, SE3(np.eye(3), np.zeros((3, 1))))
        Fb = compose(inverse(oMj2), oMa)
        Fb = SE3(np.array(ca.DM(Fb.R)), np.array(ca.DM(Fb.p)))
        fa, fb = f"{name}_a", f"{name}_b"
        self._extra_frames += [Frame(fa, FrameKind.OP, j1, Fa), Frame(fb, FrameKind.OP, j2, Fb)]
        path1, path2 = tree.support(j1), tree.support(j2)
        n = 0
        while n < min(len(path1), len(path2)) and path1[n] == path2[n]:
            n += 1
        joints = {tree.joints[j].name for j in path1[n:] + path2[n:]}
        for j in path1[n:] + path2[n:]:
            if tree.joints[j].type not in (JointType.REVOLUTE, JointType.PRISMATIC):
                raise ModelError(
                    f"{self.where}: {label}: the loop goes through joint {tree.joints[j].name!r} "
                    f"({tree.joints[j].type.value}); loops may only contain hinge and slide joints"
                )
        kind = ClosureKind.WELD if el.tag == "weld" else ClosureKind.POINT
        return LoopClosure(fa, fb, kind), joints

    def _cluster(self, tree: Model, cname: str, joint_names: set[str], members, actuated, q0) -> Cluster:
        joints = sorted(tree.joint_id(j) for j in joint_names)
        pos = {j: i for i, j in enumerate(joints)}
        ys = ca.SX.sym("y", len(joints))
        y0 = np.array([q0[tree.joints[j].idx_q] for j in joints])
        forced = []
        constraints = []
        rows_all: list[np.ndarray] = []
        for c, dep, label in members:
            if isinstance(c, LoopClosure):
                rows = _closure_rows(tree, c, joints, pos, ys, cname)
                K = np.array(ca.DM(ca.Function("k", [ys], [ca.jacobian(ca.vertcat(*rows), ys)])(y0)))
                keep = _independent_rows(K, rows_all)
                if not keep:
                    raise ModelError(f"{self.where}: {label}: the closure constrains nothing")
                rows_all += [K[r] for r in keep]
                constraints.append(LoopClosure(c.frame_a, c.frame_b, c.kind, tuple(keep)))
            else:
                if dep in forced:
                    raise ModelError(f"{self.where}: {label}: joint {dep!r} is joint1 of two joint equalities")
                forced.append(dep)
                r = np.zeros(len(joints))
                r[pos[tree.joint_id(dep)]] = 1.0
                r[pos[tree.joint_id(c.source)]] -= c.coefficients[1] if len(c.coefficients) > 1 else 0.0
                rows_all.append(r)
                constraints.append(c)
        K = np.array(rows_all)
        # dependent joints: joint1 of the couplings, then non-actuated and deepest first
        dep = [pos[tree.joint_id(d)] for d in forced]
        order = sorted(range(len(joints)), key=lambda i: (joints[i] in actuated, -joints[i]))
        for i in order:
            if len(dep) == K.shape[0]:
                break
            if i not in dep and _rank(K[:, dep + [i]]) > _rank(K[:, dep]):
                dep.append(i)
        if len(dep) != K.shape[0]:
            raise ModelError(
                f"{self.where}: equality cluster {sorted(joint_names)} has redundant or inconsistent constraints"
            )
        independent = tuple(tree.joints[joints[i]].name for i in range(len(joints)) if i not in dep)
        return Cluster(cname, tuple(tree.joints[j].name for j in joints), independent, tuple(constraints))


def _rank(A: np.ndarray) -> int:
    return 0 if A.size == 0 else int(np.linalg.matrix_rank(A, tol=1e-9))


def _independent_rows(K: np.ndarray, previous: list) -> list[int]:
    """Rows of ``K`` that raise the rank of ``previous + rows`` (void rows of planar loops dropped)."""
    keep = []
    base = list(previous)
    for r in range(K.shape[0]):
        if _rank(np.array(base + [K[r]])) > _rank(np.array(base)):
            keep.append(r)
            base.append(K[r])
    return keep
