"""Builders of clustered models: actuator transmissions and loop closures declared on a URDF.

A :class:`Transmission` says which joints a mechanism couples and which rotor bodies it adds;
:func:`build_cluster_model` inserts the rotors into the URDF text as real bodies (a revolute joint
each, mounted on a link of the robot), loads the resulting spanning tree with
:func:`wbc.load_urdf` (whose behaviour on ordinary files is unchanged) and declares the clusters.
The augmented URDF text is kept on the model (``ClusterModel.urdf``), so an oracle can load the
very same spanning tree.

Kinds (the cluster paper's cluster joints):

* :meth:`Transmission.geared`: a revolute joint driven by a rotor turning ``ratio`` times faster
  (``y_rotor = N q``), the rotor mounted on the joint's parent link by default;
* :meth:`Transmission.parallel_belt`: joints ``q₁..qₙ`` of a chain driven from one link through
  belts: rotor ``k`` turns ``N_k Σ_{i≤k} (Π_{m≤i} b_{k,m}) q_i`` (the MIT Humanoid's knee and ankle);
* :meth:`Transmission.differential`: two joints driven by two rotors, ``N (q_a ± q_b)``;
* :meth:`Transmission.coupled`: any linear map ``y_rotors = T q`` (the three above are special cases);
* :meth:`Transmission.loop`: bodies already in the URDF closed by loop closures between frames
  (four-bars, parallel rods), optionally with geared rotors of their own.
"""

from __future__ import annotations

import dataclasses
import math
import os
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import ModelError
from ..spatial.algebra import SE3
from .clusters import Cluster, ClusterModel, JointCoupling, LoopClosure, PolynomialCoupling
from .urdf import load_urdf

__all__ = ["Rotor", "Transmission", "build_cluster_model", "rotor_inertia"]

#: Position limits given to rotor joints (a rotor turns many times), rad.
ROTOR_LIMIT = 1e6


def rotor_inertia(spin: float, transverse: float | None = None) -> np.ndarray:
    """Rotational inertia (3, 3) of a rotor spinning about its z axis, kg m².

    Args:
        spin: inertia about the spin axis.
        transverse: inertia about the two other axes (default ``spin / 2``, a thin disc).
    """
    t = spin / 2 if transverse is None else transverse
    return np.diag([t, t, spin])


@dataclasses.dataclass(frozen=True)
class Rotor:
    """A rotor body added to the spanning tree.

    Attributes:
        inertia: rotational inertia (3, 3) about its centre of mass in the rotor frame, or a scalar
            spin inertia (then :func:`rotor_inertia`), kg m².
        mass: kg (0: only its rotational inertia matters).
        placement: the rotor frame in its mounting link's frame; the rotor spins about the frame's
            z axis. Default: the driven joint's frame, spinning about the joint's axis.
        parent: the link it is mounted on (default: the driven joint's parent link).
        name: rotor link name (default ``{joint}_rotor``); its joint is ``{name}_joint``.
    """

    inertia: float | np.ndarray
    mass: float = 0.0
    placement: SE3 | None = None
    parent: str | None = None
    name: str | None = None


@dataclasses.dataclass(frozen=True)
class Transmission:
    """One cluster: driven joints, rotors and the constraints between them.

    Attributes:
        name: cluster name.
        joints: the driven joints, in the URDF: the motors (their efforts, at the gearbox output, are
            a controller's inputs) and, unless ``independent`` says otherwise, the independent ones.
        rotors: rotors to add, each with the joint it is placed after by default (``drives``).
        drives: for each rotor, the joint whose frame and parent link are its defaults.
        ratios: (n_rotors, n_joints) rotor angle per joint angle.
        extra_joints: joints of the URDF that belong to the cluster besides ``joints`` (rods, cranks).
        independent: the cluster's independent joints (default ``joints``).
        closures: loop closures between frames.
        couplings: extra couplings (e.g. MuJoCo polynomials).
    """

    name: str
    joints: tuple[str, ...]
    rotors: tuple[Rotor, ...] = ()
    drives: tuple[str, ...] = ()
    ratios: np.ndarray | None = None
    extra_joints: tuple[str, ...] = ()
    independent: tuple[str, ...] | None = None
    closures: tuple[LoopClosure, ...] = ()
    couplings: tuple[JointCoupling | PolynomialCoupling, ...] = ()

    def __post_init__(self) -> None:
        if self.ratios is None:
            return
        try:
            T = np.asarray(self.ratios, dtype=float)
        except (TypeError, ValueError):
            raise ModelError(f"transmission {self.name!r}: ratios must be numbers, got {self.ratios!r}") from None
        if T.shape != (len(self.rotors), len(self.joints)):
            raise ModelError(
                f"transmission {self.name!r}: ratios must have shape (rotors, joints) = "
                f"{(len(self.rotors), len(self.joints))}, got {T.shape}"
            )
        if not np.all(np.isfinite(T)):
            raise ModelError(f"transmission {self.name!r}: ratios must be finite, got {T.tolist()}")
        for k in range(T.shape[0]):
            if not T[k].any():
                raise ModelError(f"transmission {self.name!r}: rotor {k} has a zero ratio to every joint")

    @staticmethod
    def geared(
        joint: str,
        ratio: float,
        rotor_inertia: float | np.ndarray,
        rotor_placement: SE3 | None = None,
        *,
        rotor_mass: float = 0.0,
        rotor_parent: str | None = None,
        name: str | None = None,
    ) -> Transmission:
        """A revolute joint with a geared rotor: ``y_rotor = ratio · q``."""
        rotor = Rotor(rotor_inertia, rotor_mass, rotor_placement, rotor_parent)
        return Transmission(name or joint, (joint,), (rotor,), (joint,), np.array([[_ratio(ratio, name or joint)]]))

    @staticmethod
    def parallel_belt(
        joints: Sequence[str],
        gear_ratios: Sequence[float],
        belt_ratios: Sequence[Sequence[float]],
        rotors: Sequence[Rotor],
        name: str | None = None,
    ) -> Transmission:
        """Joints of a chain driven through belts by rotors mounted on one link.

        Rotor ``k`` turns ``N_k Σ_{i≤k} (Π_{m≤i} b_{k,m}) q_i``: its belts run over the pulleys of
        joints ``1..k`` (``belt_ratios[k]`` has ``k + 1`` entries, one per belt stage).
        """
        joints = tuple(joints)
        n = len(joints)
        if not (len(gear_ratios) == len(belt_ratios) == len(rotors) == n):
            raise ModelError(f"parallel belt {name or joints[0]!r}: one gear ratio, belt row and rotor per joint")
        T = np.zeros((n, n))
        for k in range(n):
            b = [float(x) for x in belt_ratios[k]]
            if len(b) != k + 1:
                raise ModelError(
                    f"parallel belt {name or joints[0]!r}: rotor {k} needs {k + 1} belt ratios, got {len(b)}"
                )
            T[k, : k + 1] = float(gear_ratios[k]) * np.cumprod(b)
        default_parent = rotors[0].parent
        rs = tuple(r if r.parent is not None else dataclasses.replace(r, parent=default_parent) for r in rotors)
        return Transmission(name or "_".join(joints), joints, rs, joints, T)

    @staticmethod
    def differential(
        joints: tuple[str, str], ratio: float, rotors: Sequence[Rotor], name: str | None = None
    ) -> Transmission:
        """Two joints driven by two rotors through a differential: ``N (q_a + q_b)``, ``N (q_a − q_b)``."""
        if len(joints) != 2 or len(rotors) != 2:
            raise ModelError("a differential couples two joints with two rotors")
        T = _ratio(ratio, name or "_".join(joints)) * np.array([[1.0, 1.0], [1.0, -1.0]])
        return Transmission(name or "_".join(joints), tuple(joints), tuple(rotors), (joints[0], joints[0]), T)

    @staticmethod
    def coupled(
        joints: Sequence[str], ratios, rotors: Sequence[Rotor], drives: Sequence[str] | None = None, name=None
    ) -> Transmission:
        """Rotors driving ``joints`` through any linear map: ``y_rotors = ratios @ q`` (n_rotors, n_joints)."""
        T = np.atleast_2d(ratios)  # checked (numbers, shape, finite) by the Transmission
        joints = tuple(joints)
        drives = (
            tuple(drives) if drives is not None else tuple(joints[min(k, len(joints) - 1)] for k in range(len(rotors)))
        )
        return Transmission(name or "_".join(joints), joints, tuple(rotors), drives, T)

    @staticmethod
    def loop(
        name: str,
        joints: Sequence[str],
        independent: Sequence[str],
        closures: Sequence[LoopClosure],
        couplings: Sequence[JointCoupling | PolynomialCoupling] = (),
    ) -> Transmission:
        """A loop of bodies already in the URDF (four-bar, rods), closed by ``closures``."""
        return Transmission(
            name,
            tuple(independent),
            extra_joints=tuple(j for j in joints if j not in independent),
            independent=tuple(independent),
            closures=tuple(closures),
            couplings=tuple(couplings),
        )


def _fmt(x) -> str:
    return " ".join(f"{float(v):.17g}" for v in np.asarray(x, dtype=float).reshape(-1))


def rpy_from_matrix(R: np.ndarray) -> np.ndarray:
    """Roll, pitch, yaw (3,) with ``R = Rz(yaw) Ry(pitch) Rx(roll)`` (URDF's convention)."""
    R = np.asarray(R, dtype=float)
    pitch = math.atan2(-R[2, 0], math.hypot(R[0, 0], R[1, 0]))
    if abs(math.cos(pitch)) < 1e-12:  # gimbal lock: put everything in yaw
        return np.array([0.0, pitch, math.atan2(-R[0, 1], R[1, 1])])
    return np.array([math.atan2(R[2, 1], R[2, 2]), pitch, math.atan2(R[1, 0], R[0, 0])])


def _read(source: str | os.PathLike) -> str:
    if isinstance(source, str) and source.lstrip().startswith("<"):
        return source
    try:
        return Path(source).read_text()
    except OSError as e:
        raise ModelError(f"{source}: cannot read URDF file: {e}") from None


def _floats(element: ET.Element | None, attribute: str, default: np.ndarray) -> np.ndarray:
    """The numbers of ``element``'s ``attribute`` (``default`` when the element or attribute is absent)."""
    text = None if element is None else element.get(attribute)
    return default if text is None else np.array([float(t) for t in text.split()])


def _origin_of(joint: ET.Element) -> tuple[np.ndarray, np.ndarray]:
    o = joint.find("origin")
    return _floats(o, "xyz", np.zeros(3)), _floats(o, "rpy", np.zeros(3))


def _parent_link(joint: ET.Element, where: str) -> str:
    """The parent link's name of a URDF ``joint`` element."""
    parent = joint.find("parent")
    link = None if parent is None else parent.get("link")
    if link is None:
        raise ModelError(f"{where}: joint {joint.get('name')!r} has no <parent link=...>")
    return link


def _rpy_matrix(rpy) -> np.ndarray:
    r, p, y = rpy
    Rx = np.array([[1, 0, 0], [0, math.cos(r), -math.sin(r)], [0, math.sin(r), math.cos(r)]])
    Ry = np.array([[math.cos(p), 0, math.sin(p)], [0, 1, 0], [-math.sin(p), 0, math.cos(p)]])
    Rz = np.array([[math.cos(y), -math.sin(y), 0], [math.sin(y), math.cos(y), 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def _add_rotor(root: ET.Element, joints: dict[str, ET.Element], rotor: Rotor, drive: str, where: str) -> str:
    """Add ``rotor``'s link and joint to the URDF tree; returns the rotor joint's name."""
    if drive not in joints:
        raise ModelError(f"{where}: no joint {drive!r} in the URDF")
    dj = joints[drive]
    link_name = rotor.name or f"{drive}_rotor"
    joint_name = f"{link_name}_joint"
    if any(e.get("name") == link_name for e in root.findall("link")) or joint_name in joints:
        raise ModelError(f"{where}: the URDF already has a link {link_name!r} or joint {joint_name!r}")
    drive_parent = _parent_link(dj, where)
    parent = rotor.parent or drive_parent
    if not any(e.get("name") == parent for e in root.findall("link")):
        raise ModelError(f"{where}: rotor of {drive!r} mounted on unknown link {parent!r}")
    if rotor.placement is None:
        if rotor.parent is not None and rotor.parent != drive_parent:
            raise ModelError(f"{where}: a rotor mounted on {parent!r} needs a placement")
        xyz, rpy = _origin_of(dj)
        axis = _floats(dj.find("axis"), "xyz", np.array([1.0, 0.0, 0.0]))
    else:
        xyz = np.asarray(rotor.placement.p, dtype=float).reshape(3)
        rpy = rpy_from_matrix(np.asarray(rotor.placement.R, dtype=float))
        axis = np.array([0.0, 0.0, 1.0])
    inertia = np.asarray(rotor.inertia, dtype=float)
    if inertia.ndim == 0:
        # spin inertia about ``axis``: a thin disc with that axis
        a = axis / np.linalg.norm(axis)
        inertia = float(inertia) * (0.5 * np.eye(3) + 0.5 * np.outer(a, a))
    if (
        inertia.shape != (3, 3)
        or not np.all(np.isfinite(inertia))
        or np.linalg.eigvalsh((inertia + inertia.T) / 2).min() < 0
    ):
        raise ModelError(f"{where}: rotor inertia of {drive!r} must be a non-negative scalar or a PSD (3, 3) matrix")
    if not (np.isfinite(rotor.mass) and rotor.mass >= 0):
        raise ModelError(f"{where}: rotor mass of {drive!r} must be finite and non-negative")
    link = ET.SubElement(root, "link", {"name": link_name})
    inertial = ET.SubElement(link, "inertial")
    ET.SubElement(inertial, "origin", {"xyz": "0 0 0", "rpy": "0 0 0"})
    ET.SubElement(inertial, "mass", {"value": f"{float(rotor.mass):.17g}"})
    keys = {"ixx": (0, 0), "ixy": (0, 1), "ixz": (0, 2), "iyy": (1, 1), "iyz": (1, 2), "izz": (2, 2)}
    ET.SubElement(inertial, "inertia", {k: f"{inertia[i, j]:.17g}" for k, (i, j) in keys.items()})
    joint = ET.SubElement(root, "joint", {"name": joint_name, "type": "revolute"})
    ET.SubElement(joint, "parent", {"link": parent})
    ET.SubElement(joint, "child", {"link": link_name})
    ET.SubElement(joint, "origin", {"xyz": _fmt(xyz), "rpy": _fmt(rpy)})
    ET.SubElement(joint, "axis", {"xyz": _fmt(axis)})
    ET.SubElement(
        joint, "limit", {"lower": f"{-ROTOR_LIMIT:g}", "upper": f"{ROTOR_LIMIT:g}", "effort": "0", "velocity": "1e6"}
    )
    joints[joint_name] = joint
    return joint_name


def build_cluster_model(
    urdf: str | os.PathLike,
    transmissions: Sequence[Transmission],
    floating_base: bool = True,
    name: str | None = None,
) -> ClusterModel:
    """A :class:`ClusterModel` from a URDF (file or text) and the transmissions of its joints.

    Raises:
        ModelError: unknown joints or links, a joint in two transmissions, bad ratios or inertias,
            loops that do not close (each names the transmission).
    """
    text = _read(urdf)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise ModelError(
            f"{urdf if not str(urdf).lstrip().startswith('<') else '<string>'}: malformed XML: {e}"
        ) from None
    joints = {jn: e for e in root.findall("joint") if (jn := e.get("name")) is not None}
    clusters = []
    for t in transmissions:
        if not isinstance(t, Transmission):
            raise ModelError(f"expected wbc.Transmission objects, got {type(t).__name__}")
        where = f"transmission {t.name!r}"
        for j in t.joints + t.extra_joints:
            if j not in joints:
                raise ModelError(f"{where}: no joint {j!r} in the URDF")
        rotor_joints = []
        drives = [t.drives[k] if k < len(t.drives) else t.joints[0] for k in range(len(t.rotors))]
        for k, rotor in enumerate(t.rotors):
            if rotor.name is None and drives.count(drives[k]) > 1:
                rotor = dataclasses.replace(rotor, name=f"{t.name}_rotor{k}")
            rotor_joints.append(_add_rotor(root, joints, rotor, drives[k], where))
        couplings = list(t.couplings)
        if t.rotors:
            T = np.asarray(t.ratios, dtype=float)
            for k, rj in enumerate(rotor_joints):
                sources = tuple((t.joints[i], float(T[k, i])) for i in range(len(t.joints)) if T[k, i] != 0.0)
                if not sources:
                    raise ModelError(f"{where}: rotor {k} is driven by no joint")
                couplings.append(JointCoupling(rj, sources))
        independent = t.independent if t.independent is not None else t.joints
        all_joints = tuple(t.joints) + tuple(t.extra_joints) + tuple(rotor_joints)
        clusters.append(
            Cluster(t.name, all_joints, tuple(independent), tuple(couplings) + tuple(t.closures), tuple(t.joints))
        )
    ET.indent(root)
    augmented = ET.tostring(root, encoding="unicode")
    tree = load_urdf(augmented, floating_base)
    return ClusterModel(tree, tuple(clusters), name or tree.name, augmented)


def _ratio(value: object, transmission: str) -> float:
    """A gear ratio as a float; ModelError naming ``transmission`` for anything else."""
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ModelError(f"transmission {transmission!r}: the ratio must be a number, got {value!r}") from None
