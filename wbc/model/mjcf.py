"""MJCF loader: a MuJoCo model, compiled by MuJoCo itself, as a :class:`~wbc.model.clusters.ClusterModel`.

wbc does not interpret MJCF: ``mujoco`` compiles the file (includes, defaults, ``<frame>``,
compiler settings, inertias from geoms and meshes, names, everything the simulator will run) and
this module reads the compiled ``mujoco.MjModel``:

* bodies, their placements at ``qpos0`` and their inertias (``body_mass``, ``body_ipos``,
  ``body_iquat``, ``body_inertia``, whatever their source); a body without joints is welded to its
  parent (its inertia merged, its frame kept);
* joints, one wbc joint per MuJoCo joint and in MuJoCo's order, so wbc's ``q`` is MuJoCo's
  ``qpos`` up to the quaternions' order: free (``FREE_FLYER``, on a body hanging from the world),
  ball (``SPHERICAL``, its ``range`` a cone: ``max_angle``), hinge (``REVOLUTE``) and slide
  (``PRISMATIC``). Several joints in one body become a chain through massless bodies, each about
  its anchor, as MuJoCo composes them. A joint's ``ref`` (``qpos0``) is in the placement: MuJoCo
  turns a hinge by ``qpos − qpos0`` from the body's pose in the file, so wbc's joint frame is that
  pose turned back by ``qpos0``. Ranges become position limits;
* ``armature``: the joints' and the joint actuators' (``gear² · armature``) in
  :attr:`ClusterModel.armature`;
* equality constraints (:mod:`wbc.model.mjcf_equalities`): connect, weld, joint polynomials and
  fixed-tendon equalities, as clusters; actuators (:mod:`wbc.model.mjcf_actuators`): which joints
  are actuated and their effort limits;
* sites and bodies as frames (bodies first, so a body's name finds the body), then joint frames;
  gravity from ``<option>`` (zero when the file disables it).

Conventions that differ from MuJoCo's (the MuJoCo bridge converts them): quaternions are wbc's
``[x y z w]`` (MuJoCo's ``qpos`` stores ``w`` first), a free joint's linear velocity is in the base
frame (MuJoCo's ``qvel`` has it in world axes). What only the simulator has (geoms and contacts,
joint damping, springs and friction loss, tendon limits, fluid forces, softness of constraints) is
not part of the model. What wbc cannot represent raises :class:`~wbc.errors.ModelError` naming the
element and why: a flex, a free joint below another body, an equality on a spatial tendon or with a
non-linear tendon polynomial, an actuator on a site, a body or a slider-crank.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from typing import Any

import numpy as np

from ..errors import MissingDependency, ModelError
from ..spatial.algebra import SE3, rigid_inertia
from ..spatial.lie import skew
from .clusters import ClusterModel
from .files import xml_source
from .model import Frame, FrameKind, Joint, JointType, Model

__all__ = ["load_mjcf", "compile_mjcf", "mujoco_module"]

_I3 = np.eye(3)
#: The root element's tag, after an XML declaration, comments and a doctype.
_ROOT = re.compile(r"\ufeff?\s*(?:(?:<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^>]*>)\s*)*<([A-Za-z_][\w.-]*)", re.S)


def mujoco_module() -> Any:
    """The ``mujoco`` package, or :class:`~wbc.errors.MissingDependency` naming the ``sim`` extra."""
    try:
        import mujoco
    except ImportError:
        raise MissingDependency(
            "loading MJCF needs MuJoCo's compiler, the 'mujoco' package: pip install 'wbc[sim]'"
        ) from None
    return mujoco


def compile_mjcf(source: Any, max_bytes: int | None = None) -> tuple[Any, str]:
    """``source`` compiled by MuJoCo: ``(mujoco.MjModel, where)``, ``where`` naming it in messages.

    Args:
        source: a path to an MJCF file (a regular file, read from its folder so that its includes
            and meshes are found), the document as ``str`` (recognised by a leading ``<``) or
            ``bytes``, a ``mujoco.MjSpec`` (a copy is compiled; the caller's spec is not touched) or
            a compiled ``mujoco.MjModel`` (used as it is).
        max_bytes: the largest file read; default :data:`wbc.model.files.MAX_FILE_BYTES`.

    Raises:
        ModelError: no such file, not a regular file, too large, not a ``<mujoco>`` document, or a
            file MuJoCo rejects (with MuJoCo's message).
        MissingDependency: ``mujoco`` is not installed.
    """
    mujoco = mujoco_module()
    if isinstance(source, mujoco.MjModel):
        return source, "<mujoco.MjModel>"
    if isinstance(source, mujoco.MjSpec):
        where = "<mujoco.MjSpec>"
        try:
            return source.copy().compile(), where
        except ValueError as e:
            raise ModelError(f"{where}: MuJoCo rejected the model: {e}") from None
    if isinstance(source, (bytearray, memoryview)):
        source = bytes(source)
    if not isinstance(source, (str, bytes, os.PathLike)):
        raise ModelError(
            "an MJCF source is a path, the document (str or bytes), a mujoco.MjSpec or a mujoco.MjModel, "
            f"got {type(source).__name__}"
        )
    text, where = xml_source(source, "MJCF file", max_bytes)  # a regular file of bounded size, decoded
    root = _ROOT.match(text)
    if root is None or root.group(1) != "mujoco":
        found = "no XML element" if root is None else f"<{root.group(1)}>"
        hint = " (a URDF: use wbc.load_urdf)" if root is not None and root.group(1) == "robot" else ""
        raise ModelError(f"{where}: root element is {found}, expected <mujoco>{hint}")
    try:
        if where.startswith("<"):
            return mujoco.MjModel.from_xml_string(text), where
        return mujoco.MjModel.from_xml_path(where), where
    except ValueError as e:
        raise ModelError(f"{where}: MuJoCo rejected the file: {str(e).strip()}") from None


def load_mjcf(source: Any, *, name: str | None = None, max_bytes: int | None = None) -> ClusterModel:
    """Load an MJCF model (see the module docstring) into a :class:`ClusterModel`.

    Args:
        source: a path, the document (``str`` or ``bytes``), a ``mujoco.MjSpec`` or a
            ``mujoco.MjModel`` (:func:`compile_mjcf`).
        name: the model's name (default: the file's ``<mujoco model>``, else its file name without
            extension, else ``"mjcf"``).
        max_bytes: the largest file read (bytes); default :data:`wbc.model.files.MAX_FILE_BYTES`.

    Raises:
        ModelError: a file MuJoCo rejects, or an element wbc cannot represent (named, with why).
        MissingDependency: ``mujoco`` is not installed (the ``sim`` extra).
    """
    from .mjcf_actuators import read_actuators
    from .mjcf_equalities import read_equalities

    m, where = compile_mjcf(source, max_bytes)
    mujoco = mujoco_module()
    if m.nflex:
        raise ModelError(f"{where}: flex {_name(m, mujoco.mjtObj.mjOBJ_FLEX, 0)!r}: deformable bodies are not rigid")
    tree = _Tree(m, where, mujoco)
    model_name = name or _model_name(m, where)
    actuation = read_actuators(m, where, tree.joints)
    base = Model(
        model_name,
        tuple(dataclasses.replace(j, effort=actuation.effort.get(i, j.effort)) for i, j in enumerate(tree.joints)),
        tuple(tree.inertias),
        tuple(tree.frames),
        actuation.actuated,
        _gravity(m, mujoco),
        where,
    )
    full, clusters = read_equalities(m, where, base, tree.body_frames, actuation.actuated)
    armature = np.asarray(m.dof_armature, dtype=float) + actuation.armature
    return ClusterModel(full, tuple(clusters), model_name, None, armature if np.any(armature) else None)


def _name(m, objtype, i: int) -> str:
    """MuJoCo's name of object ``i`` (empty when unnamed)."""
    import mujoco

    return mujoco.mj_id2name(m, objtype, i) or ""


def _model_name(m, where: str) -> str:
    """The file's ``<mujoco model>``, else the file's stem, else ``"mjcf"``."""
    given = m.names[: m.names.index(b"\0")].decode() if m.names else ""
    if given and given != "MuJoCo Model":  # (MuJoCo's name for a model without one)
        return given
    return os.path.splitext(os.path.basename(where))[0] if not where.startswith("<") else "mjcf"


def _gravity(m, mujoco) -> np.ndarray:
    if int(m.opt.disableflags) & int(mujoco.mjtDisableBit.mjDSBL_GRAVITY):
        return np.zeros(3)
    return np.array(m.opt.gravity, dtype=float)


def quat_wxyz_matrix(wxyz) -> np.ndarray:
    """Rotation (3, 3) of MuJoCo's quaternion ``(w, x, y, z)``."""
    w, x, y, z = np.asarray(wxyz, dtype=float) / np.linalg.norm(wxyz)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def _se3(R: np.ndarray, p) -> SE3:
    return SE3(np.asarray(R, dtype=float), np.asarray(p, dtype=float).reshape(3, 1))


def compose(a: SE3, b: SE3) -> SE3:
    """``a * b`` in numpy (the loader's placements are numbers; CasADi's would cost 50× more)."""
    return SE3(a.R @ b.R, a.p + a.R @ b.p)


def act_inertia(X: SE3, I: np.ndarray) -> np.ndarray:
    """A spatial inertia (6, 6) given in frame B, expressed in frame A, ``X`` being B's placement in A:
    ``F I Fᵀ`` with the force transform ``F = [R 0; [p]ₓR R]`` ([linear; angular])."""
    R, p = np.asarray(X.R), np.asarray(X.p).reshape(3)
    F = np.zeros((6, 6))
    F[0:3, 0:3] = F[3:6, 3:6] = R
    F[3:6, 0:3] = skew(p) @ R
    return F @ I @ F.T


def _rotation_about(axis: np.ndarray, angle: float) -> np.ndarray:
    a = axis / np.linalg.norm(axis)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return _I3 + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


class _Tree:
    """The kinematic tree of a compiled MuJoCo model, as wbc joints, inertias and frames.

    Attributes:
        joints: wbc joints (the universe first, then MuJoCo's joints in order).
        inertias: each wbc joint's spatial inertia (6, 6) in its frame.
        frames: bodies, sites, then joints.
        body_frames: MuJoCo body id -> (wbc joint, the body frame in that joint's frame).
    """

    def __init__(self, m, where: str, mujoco) -> None:
        self.m, self.where, self.mujoco = m, where, mujoco
        origin = _se3(_I3, np.zeros(3))
        self.joints: list[Joint] = [
            Joint(
                "universe",
                JointType.UNIVERSE,
                -1,
                origin,
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
        self.body_frames: dict[int, tuple[int, SE3]] = {0: (0, origin)}
        self.body_names = self._unique_names(mujoco.mjtObj.mjOBJ_BODY, m.nbody, "body")
        body_frames: list[Frame] = [Frame(self.body_names[0], FrameKind.BODY, 0, origin)]
        joint_frames: list[Frame] = []
        for b in range(1, m.nbody):
            joint, in_joint = self._body(b, joint_frames)
            self.body_frames[b] = (joint, in_joint)
            body_frames.append(Frame(self.body_names[b], FrameKind.BODY, joint, in_joint))
        sites = []
        for s in range(m.nsite):
            site_name = _name(m, mujoco.mjtObj.mjOBJ_SITE, s)
            if site_name:
                joint, in_joint = self.body_frames[int(m.site_bodyid[s])]
                placement = compose(in_joint, _se3(quat_wxyz_matrix(m.site_quat[s]), m.site_pos[s]))
                sites.append(Frame(site_name, FrameKind.OP, joint, placement))
        self.frames = body_frames + sites + joint_frames

    def _unique_names(self, objtype, n: int, kind: str) -> list[str]:
        """Names of the ``n`` objects; an unnamed one is called ``{kind}{id}`` (made unique)."""
        names = [_name(self.m, objtype, i) for i in range(n)]
        taken = set(names)
        for i, given in enumerate(names):
            if not given:
                candidate = "world" if kind == "body" and i == 0 else f"{kind}{i}"
                while candidate in taken:
                    candidate = f"_{candidate}"
                names[i] = candidate
                taken.add(candidate)
        return names

    def _body(self, b: int, joint_frames: list[Frame]) -> tuple[int, SE3]:
        """Add body ``b``'s joints; returns (its wbc joint, its frame in that joint's frame)."""
        m, where = self.m, self.where
        parent_joint, parent_frame = self.body_frames[int(m.body_parentid[b])]
        label = f"body {self.body_names[b]!r}"
        placement = compose(parent_frame, _se3(quat_wxyz_matrix(m.body_quat[b]), m.body_pos[b]))
        inertia = self._inertia(b)
        first, count = int(m.body_jntadr[b]), int(m.body_jntnum[b])
        if count == 0:  # welded to its parent: the inertia merges, the frame stays
            self.inertias[parent_joint] = self.inertias[parent_joint] + act_inertia(placement, inertia)
            return parent_joint, placement
        current, step = parent_joint, placement
        anchor = np.zeros(3)
        mj = self.mujoco.mjtJoint
        for k in range(first, first + count):
            jtype = int(m.jnt_type[k])
            jname = _name(m, self.mujoco.mjtObj.mjOBJ_JOINT, k) or f"{self.body_names[b]}_joint{k - first}"
            what = f"{where}: joint {jname!r} of {label}"
            anchor_k = np.array(m.jnt_pos[k], dtype=float)
            axis = np.array(m.jnt_axis[k], dtype=float)
            max_angle = math.inf
            lower = upper = np.zeros(0)
            if jtype == mj.mjJNT_FREE:
                if int(m.body_parentid[b]) != 0 or count != 1:
                    raise ModelError(
                        f"{what}: a free joint must be the only joint of a body hanging from the world "
                        "(wbc's free-flyer moves relative to its parent)"
                    )
                jt, here, axis = JointType.FREE_FLYER, _se3(_I3, np.zeros(3)), np.zeros(3)
                lower, upper = np.full(7, -math.inf), np.full(7, math.inf)
                anchor_k = np.zeros(3)
            else:
                # the joint frame: at the anchor, the body's axes turned back by qpos0 (a hinge's ref)
                offset = _se3(_I3, anchor_k - anchor)
                here = compose(step, offset) if current == parent_joint else offset
                q0 = float(m.qpos0[m.jnt_qposadr[k]])
                if jtype == mj.mjJNT_HINGE:
                    jt = JointType.REVOLUTE
                    here = compose(here, _se3(_rotation_about(axis, -q0), np.zeros(3)))
                elif jtype == mj.mjJNT_SLIDE:
                    jt = JointType.PRISMATIC
                    here = compose(here, _se3(_I3, -q0 * axis))
                else:
                    jt, axis = JointType.SPHERICAL, np.zeros(3)
                limited = bool(m.jnt_limited[k])
                if jt is JointType.SPHERICAL:
                    lower, upper = np.full(4, -math.inf), np.full(4, math.inf)
                    max_angle = float(m.jnt_range[k][1]) if limited and m.jnt_range[k][1] > 0 else math.inf
                else:
                    lo, hi = (float(x) for x in m.jnt_range[k]) if limited else (-math.inf, math.inf)
                    lower, upper = np.array([lo]), np.array([hi])
            nv = jt.nv
            last = k == first + count - 1
            idx_q, idx_v = int(m.jnt_qposadr[k]), int(m.jnt_dofadr[k])
            self.joints.append(
                Joint(
                    jname,
                    jt,
                    current,
                    here,
                    axis,
                    idx_q,
                    idx_v,
                    lower,
                    upper,
                    np.full(nv, math.inf),
                    np.full(nv, math.inf),
                    self.body_names[b] if last else f"{self.body_names[b]}__{jname}",
                    None,
                    max_angle,
                )
            )
            self.inertias.append(np.zeros((6, 6)))
            current, anchor = len(self.joints) - 1, anchor_k
            joint_frames.append(Frame(jname, FrameKind.JOINT, current, _se3(_I3, np.zeros(3))))
        body_in_joint = _se3(_I3, -anchor)
        self.inertias[current] = act_inertia(body_in_joint, inertia)
        return current, body_in_joint

    def _inertia(self, b: int) -> np.ndarray:
        """Body ``b``'s spatial inertia (6, 6) about its frame origin, in its axes."""
        m = self.m
        R = quat_wxyz_matrix(m.body_iquat[b])
        return rigid_inertia(float(m.body_mass[b]), np.asarray(m.body_ipos[b]), R @ np.diag(m.body_inertia[b]) @ R.T)
