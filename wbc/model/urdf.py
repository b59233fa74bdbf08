"""URDF loader: a :class:`~wbc.model.Model` laid out exactly as Pinocchio's ``buildModelFromUrdf``.

Layout rules (checked against Pinocchio in the tests):

* the tree is walked depth-first from the root link, children of a link in the alphabetical
  order of their joint names (the order urdfdom hands them to Pinocchio);
* a fixed joint merges its child link into the parent body (inertia added, a ``FIXED_JOINT``
  frame and a ``BODY`` frame kept); ``floating`` joints become free-flyers;
* ``continuous`` joints are ``REVOLUTE_UNBOUNDED`` (q = cos, sin); mimic joints are independent.

What real files contain, and what happens to it:

* **Inertias that are not positive semi-definite by rounding.** A link's rotational inertia
  (about its centre of mass) whose most negative principal moment is within
  :data:`INERTIA_TOLERANCE` (relative) of the largest principal moment of the *body* it belongs to
  (the link and every link welded to it by fixed joints: the rigid body the dynamics see), about
  that body's joint, is projected to the nearest PSD inertia (negative principal moments set to
  zero, the Frobenius-nearest PSD matrix) with a :class:`~wbc.errors.ModelWarning` naming the link. TIAGo's antenna
  links (principal moment −3.5e-8 kg m² on a 43 kg base) are such a case. A larger defect is a
  wrong file and raises :class:`~wbc.errors.ModelError` (``inertia_tolerance=`` overrides).
* **Joints that move no mass** (massless finger links, a sensor's point mass on its own axis) load:
  kinematics, Jacobians, CRBA and RNEA work on them. What needs ``M⁻¹`` (ABA, B̂, Delassus, the
  controller) raises a clear error naming them (:func:`wbc.model.checks.invertible_dynamics`)
  and suggests :func:`wbc.lock_joints`.
* **Deep trees** (chains of thousands of links) are walked iteratively, never recursively.

Every problem with the file raises :class:`~wbc.errors.ModelError` naming the source and element.
"""

from __future__ import annotations

import math
import os
import re
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import casadi as ca
import numpy as np

from ..errors import InputError, ModelError, ModelWarning
from ..spatial.algebra import SE3, act_inertia, compose, rigid_inertia
from .files import xml_source
from .model import Frame, FrameKind, Joint, JointType, Mimic, Model

__all__ = ["load_urdf", "INERTIA_TOLERANCE"]

#: How negative a link's principal moment of inertia (about its centre of mass) may be before the
#: file is refused, relative to the largest principal moment, about its joint's origin, of the body
#: the link belongs to (the link and everything welded to it by fixed joints). Below it the inertia
#: is rounding noise and is projected to the nearest PSD inertia, with a warning.
INERTIA_TOLERANCE = 1e-6
#: Negative principal moments smaller than this fraction of their body's scale are below double
#: precision once added to the body (zeros written as ``-5.4e-20``, as iCub's): left as they are.
_ROUNDOFF = 1e-12

_INF = math.inf
#: A number as URDF writes it (XML Schema's double): ASCII digits, no underscores (Python's float()
#: would also take "1_000" and other scripts' digits).
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|infinity|nan)", re.ASCII | re.IGNORECASE)
_MOVABLE = {"revolute", "continuous", "prismatic", "floating"}
_KNOWN = _MOVABLE | {"fixed"}


@dataclass
class _Link:
    name: str
    mass: float  # kg
    com: np.ndarray  # (3,) in the link frame, m
    inertia_com: np.ndarray  # (3, 3) about the COM in the link axes, kg m²
    parent_joint: str | None = None
    child_joints: list[str] = field(default_factory=list)


@dataclass
class _UJoint:
    name: str
    type: str
    parent: str
    child: str
    origin: SE3
    axis: np.ndarray
    lower: float
    upper: float
    effort: float
    velocity: float
    mimic: Mimic | None


def load_urdf(
    source: str | bytes | os.PathLike,
    floating_base: bool = True,
    *,
    actuated: list[str] | None = None,
    inertia_tolerance: float = INERTIA_TOLERANCE,
    max_bytes: int | None = None,
) -> Model:
    """Load a URDF file (or a URDF document given as a string or bytes) into a :class:`Model`.

    Args:
        source: path to a ``.urdf`` file (a regular file; a FIFO or a device is refused), or the
            XML text itself (``str`` or ``bytes``, recognised by a leading ``<``; bytes are decoded
            by their byte-order mark or XML declaration, UTF-8 by default, UTF-16 and UTF-32
            included).
        floating_base: add a free-flyer ``root_joint`` between the world and the root link.
        actuated: names of the actuated joints; default every movable joint but the free-flyer.
        inertia_tolerance: relative tolerance below which a link inertia that is not positive
            semi-definite is projected (with a :class:`~wbc.errors.ModelWarning`) rather than
            refused; see :data:`INERTIA_TOLERANCE` and the module docstring.
        max_bytes: the largest file read (bytes); default :data:`wbc.model.files.MAX_FILE_BYTES`.

    Raises:
        ModelError: unreadable file, not a regular file, larger than ``max_bytes``, bytes that
            do not decode in their declared encoding, malformed XML, missing or duplicate links
            and joints, several roots, cycles, unknown joint types, zero axes, negative mass, an
            inertia that is not positive semi-definite beyond ``inertia_tolerance``, non-numeric
            attributes (numbers as URDF writes them: no underscores), a ``floating`` joint from a
            massless root link with ``floating_base=True``.
        InputError: a negative or non-finite ``inertia_tolerance``, a ``max_bytes`` that is not a
            positive integer.
    """
    if not (isinstance(inertia_tolerance, (int, float)) and 0.0 <= inertia_tolerance < math.inf):
        raise InputError(f"inertia_tolerance must be a finite non-negative number, got {inertia_tolerance!r}")
    text, where = xml_source(source, "URDF file", max_bytes)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise ModelError(f"{where}: malformed XML: {e}") from None
    if root.tag != "robot":
        raise ModelError(f"{where}: root element is <{root.tag}>, expected <robot>")
    links = _parse_links(root, where)
    joints = _parse_joints(root, where, links)
    root_link = _find_root(links, joints, where)
    if floating_base:
        _check_no_second_free_flyer(links, joints, root_link, where)
    model = _build(root.get("name", "robot"), links, joints, root_link, floating_base, where, float(inertia_tolerance))
    if actuated is not None:
        model = model.with_actuation(actuated)
    return model


# --------------------------------------------------------------------------------- reading
def _number(text: str, what: str, where: str) -> float:
    """``text`` as a float, written as URDF writes numbers (see :data:`_NUMBER`)."""
    if not _NUMBER.fullmatch(text.strip()):
        hint = " (underscores are not allowed in numbers)" if "_" in text else ""
        raise ModelError(f"{where}: {what} = {text!r} is not a number{hint}")
    return float(text)


def _floats(text: str | None, n: int, what: str, where: str, default: list[float] | None = None) -> np.ndarray:
    if text is None:
        if default is None:
            raise ModelError(f"{where}: {what} is missing")
        return np.array(default, dtype=float)
    tokens = text.split()
    if any(not _NUMBER.fullmatch(t) for t in tokens):
        hint = " (underscores are not allowed in numbers)" if "_" in text else ""
        raise ModelError(f"{where}: {what} = {text!r} is not {n} numbers{hint}")
    values = [float(t) for t in tokens]
    if len(values) != n:
        raise ModelError(f"{where}: {what} = {text!r} has {len(values)} numbers, expected {n}")
    if not all(math.isfinite(v) for v in values):
        raise ModelError(f"{where}: {what} = {text!r} is not finite")
    return np.array(values)


def _float_attr(elem: ET.Element, name: str, what: str, where: str, default: float) -> float:
    text = elem.get(name)
    if text is None:
        return default
    value = _number(text, f"{what} {name}", where)
    if math.isnan(value):
        raise ModelError(f"{where}: {what} {name} is NaN")
    return value


def _rpy_matrix(rpy: np.ndarray) -> np.ndarray:
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def _origin(elem: ET.Element, what: str, where: str) -> SE3:
    o = elem.find("origin")
    if o is None:
        return SE3(np.eye(3), np.zeros((3, 1)))
    xyz = _floats(o.get("xyz"), 3, f"{what} origin xyz", where, [0.0, 0.0, 0.0])
    rpy = _floats(o.get("rpy"), 3, f"{what} origin rpy", where, [0.0, 0.0, 0.0])
    return SE3(_rpy_matrix(rpy), xyz.reshape(3, 1))


def _parse_links(root: ET.Element, where: str) -> dict[str, _Link]:
    links: dict[str, _Link] = {}
    for elem in root.findall("link"):
        name = elem.get("name")
        if not name:
            raise ModelError(f"{where}: a <link> has no name")
        if name in links:
            raise ModelError(f"{where}: link {name!r} is defined twice")
        links[name] = _Link(name, *_parse_inertial(elem, f"link {name!r}", where))
    if not links:
        raise ModelError(f"{where}: no <link> elements")
    return links


def _parse_inertial(link: ET.Element, what: str, where: str) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass (kg), centre of mass (3,) in the link frame and rotational inertia (3, 3) about it, in the
    link axes. Positive semi-definiteness is judged later, against the body the link belongs to."""
    inertial = link.find("inertial")
    if inertial is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    mass_el = inertial.find("mass")
    mass = 0.0 if mass_el is None else _float_attr(mass_el, "value", f"{what} mass", where, 0.0)
    if not math.isfinite(mass) or mass < 0.0:
        raise ModelError(f"{where}: {what} has mass {mass}, expected a finite non-negative value")
    I = np.zeros((3, 3))
    inertia_el = inertial.find("inertia")
    if inertia_el is not None:
        keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
        v = {k: _float_attr(inertia_el, k, f"{what} inertia", where, 0.0) for k in keys}
        if not all(math.isfinite(x) for x in v.values()):
            raise ModelError(f"{where}: {what} inertia is not finite")
        I = np.array([[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]], [v["ixz"], v["iyz"], v["izz"]]])
    origin = _origin(inertial, f"{what} inertial", where)
    # Rotational inertia about the COM, expressed in the link axes.
    return mass, np.asarray(origin.p, float).reshape(3), origin.R @ I @ origin.R.T


def _parse_joints(root: ET.Element, where: str, links: dict[str, _Link]) -> dict[str, _UJoint]:
    joints: dict[str, _UJoint] = {}
    for elem in root.findall("joint"):
        name = elem.get("name")
        if not name:
            raise ModelError(f"{where}: a <joint> has no name")
        what = f"joint {name!r}"
        if name in joints:
            raise ModelError(f"{where}: {what} is defined twice")
        jtype = elem.get("type")
        if jtype not in _KNOWN:
            raise ModelError(f"{where}: {what} has unsupported type {jtype!r} (supported: {', '.join(sorted(_KNOWN))})")
        ends = {}
        for tag in ("parent", "child"):
            e = elem.find(tag)
            link = None if e is None else e.get("link")
            if not link:
                raise ModelError(f"{where}: {what} has no <{tag} link=...>")
            if link not in links:
                raise ModelError(f"{where}: {what} refers to {tag} link {link!r}, which is not defined")
            ends[tag] = link
        axis = np.zeros(3)
        if jtype in ("revolute", "continuous", "prismatic"):
            a = elem.find("axis")
            axis = _floats(None if a is None else a.get("xyz"), 3, f"{what} axis", where, [1.0, 0.0, 0.0])
            norm = float(np.linalg.norm(axis))
            if norm < 1e-12:
                raise ModelError(f"{where}: {what} has a zero axis")
            axis = axis / norm
        lower, upper, effort, velocity = -_INF, _INF, _INF, _INF
        lim = elem.find("limit")
        if lim is not None and jtype in ("revolute", "prismatic", "continuous"):
            if jtype != "continuous":
                lower = _float_attr(lim, "lower", f"{what} limit", where, 0.0)
                upper = _float_attr(lim, "upper", f"{what} limit", where, 0.0)
                if lower > upper:
                    raise ModelError(f"{where}: {what} limit lower={lower} > upper={upper}")
            effort = _float_attr(lim, "effort", f"{what} limit", where, _INF)
            velocity = _float_attr(lim, "velocity", f"{what} limit", where, _INF)
            if effort < 0 or velocity < 0:
                raise ModelError(f"{where}: {what} has a negative effort or velocity limit")
        mimic = None
        m = elem.find("mimic")
        if m is not None:
            mimic = Mimic(
                m.get("joint", ""),
                _float_attr(m, "multiplier", f"{what} mimic", where, 1.0),
                _float_attr(m, "offset", f"{what} mimic", where, 0.0),
            )
        joints[name] = _UJoint(
            name,
            jtype,
            ends["parent"],
            ends["child"],
            _origin(elem, what, where),
            axis,
            lower,
            upper,
            effort,
            velocity,
            mimic,
        )
    for j in joints.values():
        child = links[j.child]
        if child.parent_joint is not None:
            raise ModelError(f"{where}: link {j.child!r} has two parent joints ({child.parent_joint!r} and {j.name!r})")
        child.parent_joint = j.name
        links[j.parent].child_joints.append(j.name)
    for parsed in links.values():
        parsed.child_joints.sort()  # urdfdom keeps joints in a name-sorted map
    return joints


def _find_root(links: dict[str, _Link], joints: dict[str, _UJoint], where: str) -> str:
    roots = [n for n, l in links.items() if l.parent_joint is None]
    if len(roots) > 1:
        raise ModelError(f"{where}: several root links (links without a parent joint): {sorted(roots)}")
    if not roots:
        raise ModelError(f"{where}: the joints form a cycle: every link has a parent joint")
    reached, stack = set(), [roots[0]]
    while stack:
        name = stack.pop()
        reached.add(name)
        stack.extend(joints[j].child for j in links[name].child_joints)
    if len(reached) != len(links):
        unreached = sorted(set(links) - reached)
        raise ModelError(f"{where}: the joints form a cycle through links {unreached}")
    return roots[0]


# --------------------------------------------------------------------------------- building
def _check_no_second_free_flyer(
    links: dict[str, _Link], joints: dict[str, _UJoint], root_link: str, where: str
) -> None:
    """``floating_base=True`` on a file whose massless root (typically ``world``) already carries a
    ``floating`` joint would stack two free-flyers, the first moving no mass of its own: M would be
    singular. Pinocchio builds that model; wbc refuses it and says how to load the file."""
    root = links[root_link]
    if root.mass > 0.0 or np.any(root.inertia_com):
        return
    floating = [j for j in root.child_joints if joints[j].type == "floating"]
    if floating:
        raise ModelError(
            f"{where}: the root link {root_link!r} is massless and its joint {floating[0]!r} is already a "
            "floating joint (a free-flyer); floating_base=True would stack a second free-flyer on it, "
            "which moves no mass (singular mass matrix). Load this file with floating_base=False: "
            f"{floating[0]!r} is then the free-flyer"
        )


def _body_scale(parts: list[tuple[_Link, SE3]]) -> float:
    """Largest principal moment (kg m²) of the rotational inertia about the body frame's origin (the
    joint) of the rigid body made of ``parts`` (links and their placements in the body frame)."""
    I_origin = np.zeros((3, 3))
    for link, X in parts:
        R, p = np.asarray(X.R, float), np.asarray(X.p, float).reshape(3)
        c = R @ link.com + p
        I_origin += R @ link.inertia_com @ R.T + link.mass * (c @ c * np.eye(3) - np.outer(c, c))
    return float(np.max(np.abs(np.linalg.eigvalsh(0.5 * (I_origin + I_origin.T)))))


def _repair_inertias(
    bodies: dict[int, list[tuple[_Link, SE3]]], body_names: dict[int, str], tolerance: float, where: str
) -> dict[str, np.ndarray]:
    """The rotational inertias (3, 3) to use instead of the file's for links that are not PSD by
    rounding; raises for links that are not PSD beyond ``tolerance`` of their body's scale."""
    repaired: dict[str, np.ndarray] = {}
    for joint, parts in bodies.items():
        scale = None
        for link, _ in parts:
            eig, vec = np.linalg.eigh(0.5 * (link.inertia_com + link.inertia_com.T))
            if eig[0] >= 0.0:
                continue
            if scale is None:
                scale = _body_scale(parts)
            relative = -eig[0] / scale if scale > 0.0 else math.inf
            if relative <= _ROUNDOFF:
                continue  # below double precision on this body: an exact zero written with noise
            what = (
                f"link {link.name!r} inertia is not positive semi-definite (principal moments "
                f"{np.array2string(eig, precision=3)} kg m² about its centre of mass; the most negative is "
                f"{relative:.2g} of the largest principal moment, {scale:.3g} kg m², of body "
                f"{body_names[joint]!r} about its joint)"
            )
            if relative > tolerance:
                raise ModelError(
                    f"{where}: {what}: beyond rounding (inertia_tolerance={tolerance:g}), the file is wrong; fix it, "
                    "or pass a larger inertia_tolerance to project it to the nearest PSD inertia anyway"
                )
            warnings.warn(
                f"{where}: {what}: projected to the nearest PSD inertia (negative moments set to 0)",
                ModelWarning,
                stacklevel=4,
            )
            repaired[link.name] = (vec * np.clip(eig, 0.0, None)) @ vec.T
    return repaired


def _build(
    name: str,
    links: dict[str, _Link],
    ujoints: dict[str, _UJoint],
    root_link: str,
    floating_base: bool,
    where: str,
    inertia_tolerance: float,
) -> Model:
    identity = SE3(np.eye(3), np.zeros((3, 1)))
    zero = np.zeros(0)
    joints: list[Joint] = [
        Joint("universe", JointType.UNIVERSE, -1, identity, np.zeros(3), 0, 0, zero, zero, zero, zero, "universe")
    ]
    frames: list[Frame] = [Frame("universe", FrameKind.FIXED_JOINT, 0, identity)]
    bodies: dict[int, list[tuple[_Link, SE3]]] = {}  # joint -> its links and their placements, in visit order
    counters = {"q": 0, "v": 0}

    def add_joint(
        jname: str, jtype: JointType, parent: int, placement: SE3, axis: np.ndarray, link: str, u: _UJoint | None
    ) -> int:
        nq, nv = jtype.nq, jtype.nv
        if u is None or jtype is JointType.FREE_FLYER:
            lower, upper = np.full(nq, -_INF), np.full(nq, _INF)
            effort, velocity = np.full(nv, _INF), np.full(nv, _INF)
        elif jtype is JointType.REVOLUTE_UNBOUNDED:
            lower, upper = np.full(2, -1.0), np.full(2, 1.0)
            effort, velocity = np.full(1, u.effort), np.full(1, u.velocity)
        else:
            lower, upper = np.full(1, u.lower), np.full(1, u.upper)
            effort, velocity = np.full(1, u.effort), np.full(1, u.velocity)
        joints.append(
            Joint(
                jname,
                jtype,
                parent,
                placement,
                axis,
                counters["q"],
                counters["v"],
                lower,
                upper,
                effort,
                velocity,
                link,
                None if u is None else u.mimic,
            )
        )
        counters["q"] += nq
        counters["v"] += nv
        return len(joints) - 1

    def add_body(joint: int, link: _Link, placement: SE3) -> None:
        bodies.setdefault(joint, []).append((link, placement))

    root = links[root_link]
    if floating_base:
        k = add_joint("root_joint", JointType.FREE_FLYER, 0, identity, np.zeros(3), root.name, None)
        frames.append(Frame("root_joint", FrameKind.JOINT, k, identity))
    else:
        k = 0
    frames.append(Frame(root.name, FrameKind.BODY, k, identity))
    add_body(k, root, identity)

    # Depth-first, children in name order (urdfdom's), iteratively: a stack of the joints still to
    # visit, each with the body it hangs from and the placement of its parent link in that body.
    stack = [(jname, k, identity) for jname in reversed(links[root_link].child_joints)]
    while stack:
        jname, joint, in_joint = stack.pop()
        u = ujoints[jname]
        placement = compose(in_joint, u.origin)
        placement = SE3(np.array(ca.DM(placement.R)), np.array(ca.DM(placement.p)).reshape(3, 1))
        child = links[u.child]
        if u.type == "fixed":
            frames.append(Frame(jname, FrameKind.FIXED_JOINT, joint, placement))
            frames.append(Frame(child.name, FrameKind.BODY, joint, placement))
            add_body(joint, child, placement)
            body, child_placement = joint, placement
        else:
            jtype = {
                "revolute": JointType.REVOLUTE,
                "continuous": JointType.REVOLUTE_UNBOUNDED,
                "prismatic": JointType.PRISMATIC,
                "floating": JointType.FREE_FLYER,
            }[u.type]
            body = add_joint(jname, jtype, joint, placement, u.axis, child.name, u)
            frames.append(Frame(jname, FrameKind.JOINT, body, identity))
            frames.append(Frame(child.name, FrameKind.BODY, body, identity))
            add_body(body, child, identity)
            child_placement = identity
        stack.extend((c, body, child_placement) for c in reversed(child.child_joints))

    body_names = {j: joints[j].link if j > 0 else root_link for j in bodies}
    repaired = _repair_inertias(bodies, body_names, inertia_tolerance, where)
    inertias: list[np.ndarray] = [np.zeros((6, 6)) for _ in joints]
    for joint, parts in bodies.items():
        for link, placement in parts:
            I_com = repaired.get(link.name, link.inertia_com)
            if link.mass == 0.0 and not np.any(I_com):
                continue
            I = rigid_inertia(link.mass, link.com, I_com)
            inertias[joint] = inertias[joint] + np.array(ca.DM(act_inertia(placement, I)))

    actuated = tuple(i for i, j in enumerate(joints) if i > 0 and j.type is not JointType.FREE_FLYER)
    return Model(name, tuple(joints), tuple(inertias), tuple(frames), actuated, source=where)
