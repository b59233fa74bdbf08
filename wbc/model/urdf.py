"""URDF loader: a :class:`~wbc.model.Model` laid out exactly as Pinocchio's ``buildModelFromUrdf``.

Layout rules (checked against Pinocchio in the tests):

* the tree is walked depth-first from the root link, children of a link in the alphabetical
  order of their joint names (the order urdfdom hands them to Pinocchio);
* a fixed joint merges its child link into the parent body (inertia added, a ``FIXED_JOINT``
  frame and a ``BODY`` frame kept); ``floating`` joints become free-flyers;
* ``continuous`` joints are ``REVOLUTE_UNBOUNDED`` (q = cos, sin); mimic joints are independent.

Every problem with the file raises :class:`~wbc.errors.ModelError` naming the source and element.
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import casadi as ca
import numpy as np

from ..errors import ModelError
from ..spatial.algebra import SE3, act_inertia, compose, rigid_inertia
from .model import Frame, FrameKind, Joint, JointType, Mimic, Model

__all__ = ["load_urdf"]

_INF = math.inf
_MOVABLE = {"revolute", "continuous", "prismatic", "floating"}
_KNOWN = _MOVABLE | {"fixed"}


@dataclass
class _Link:
    name: str
    inertia: np.ndarray  # (6, 6) about the link frame
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
    source: str | os.PathLike,
    floating_base: bool = True,
    *,
    actuated: list[str] | None = None,
) -> Model:
    """Load a URDF file (or a URDF document given as a string) into a :class:`Model`.

    Args:
        source: path to a ``.urdf`` file, or the XML text itself (recognised by a leading ``<``).
        floating_base: add a free-flyer ``root_joint`` between the world and the root link.
        actuated: names of the actuated joints; default every movable joint but the free-flyer.

    Raises:
        ModelError: unreadable file, malformed XML, missing or duplicate links and joints,
            several roots, cycles, unknown joint types, zero axes, negative mass, an inertia
            that is not positive semi-definite, non-numeric attributes.
    """
    text, where = _read(source)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise ModelError(f"{where}: malformed XML: {e}") from None
    if root.tag != "robot":
        raise ModelError(f"{where}: root element is <{root.tag}>, expected <robot>")
    links = _parse_links(root, where)
    joints = _parse_joints(root, where, links)
    root_link = _find_root(links, joints, where)
    model = _build(root.get("name", "robot"), links, joints, root_link, floating_base, where)
    if actuated is not None:
        model = model.with_actuation(actuated)
    return model


# --------------------------------------------------------------------------------- reading
def _read(source: str | os.PathLike) -> tuple[str, str]:
    if isinstance(source, str) and source.lstrip().startswith("<"):
        return source, "<string>"
    path = Path(source)
    try:
        return path.read_text(), str(path)
    except FileNotFoundError:
        raise ModelError(f"{path}: no such URDF file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ModelError(f"{path}: cannot read URDF file: {e}") from None


def _floats(text: str | None, n: int, what: str, where: str, default: list[float] | None = None) -> np.ndarray:
    if text is None:
        if default is None:
            raise ModelError(f"{where}: {what} is missing")
        return np.array(default, dtype=float)
    try:
        values = [float(t) for t in text.split()]
    except ValueError:
        raise ModelError(f"{where}: {what} = {text!r} is not {n} numbers") from None
    if len(values) != n:
        raise ModelError(f"{where}: {what} = {text!r} has {len(values)} numbers, expected {n}")
    if not all(math.isfinite(v) for v in values):
        raise ModelError(f"{where}: {what} = {text!r} is not finite")
    return np.array(values)


def _float_attr(elem: ET.Element, name: str, what: str, where: str, default: float) -> float:
    text = elem.get(name)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        raise ModelError(f"{where}: {what} {name}={text!r} is not a number") from None
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
        links[name] = _Link(name, _parse_inertial(elem, f"link {name!r}", where))
    if not links:
        raise ModelError(f"{where}: no <link> elements")
    return links


def _parse_inertial(link: ET.Element, what: str, where: str) -> np.ndarray:
    inertial = link.find("inertial")
    if inertial is None:
        return np.zeros((6, 6))
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
    scale = max(1.0, float(np.abs(I).max()))
    eig = np.linalg.eigvalsh(I)
    if eig.min() < -1e-9 * scale:
        raise ModelError(
            f"{where}: {what} inertia is not positive semi-definite (principal moments {np.round(eig, 9)})"
        )
    origin = _origin(inertial, f"{what} inertial", where)
    # Rotational inertia about the COM, expressed in the link axes.
    I_link = origin.R @ I @ origin.R.T
    return rigid_inertia(mass, np.asarray(origin.p).reshape(3), I_link)


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
def _build(
    name: str,
    links: dict[str, _Link],
    ujoints: dict[str, _UJoint],
    root_link: str,
    floating_base: bool,
    where: str,
) -> Model:
    identity = SE3(np.eye(3), np.zeros((3, 1)))
    zero = np.zeros(0)
    joints: list[Joint] = [
        Joint("universe", JointType.UNIVERSE, -1, identity, np.zeros(3), 0, 0, zero, zero, zero, zero, "universe")
    ]
    inertias: list[np.ndarray] = [np.zeros((6, 6))]
    frames: list[Frame] = [Frame("universe", FrameKind.FIXED_JOINT, 0, identity)]
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
        inertias.append(np.zeros((6, 6)))
        counters["q"] += nq
        counters["v"] += nv
        return len(joints) - 1

    def append_body(joint: int, inertia: np.ndarray, placement: SE3) -> None:
        if np.any(inertia):
            moved = np.array(ca.DM(act_inertia(placement, inertia)))
            inertias[joint] = inertias[joint] + moved

    def visit(link_name: str, joint: int, in_joint: SE3) -> None:
        """Visit the children of ``link_name``, whose frame sits at ``in_joint`` in ``joint``."""
        for jname in links[link_name].child_joints:
            u = ujoints[jname]
            placement = compose(in_joint, u.origin)
            placement = SE3(np.array(ca.DM(placement.R)), np.array(ca.DM(placement.p)).reshape(3, 1))
            child = links[u.child]
            if u.type == "fixed":
                frames.append(Frame(jname, FrameKind.FIXED_JOINT, joint, placement))
                frames.append(Frame(child.name, FrameKind.BODY, joint, placement))
                append_body(joint, child.inertia, placement)
                visit(child.name, joint, placement)
                continue
            jtype = {
                "revolute": JointType.REVOLUTE,
                "continuous": JointType.REVOLUTE_UNBOUNDED,
                "prismatic": JointType.PRISMATIC,
                "floating": JointType.FREE_FLYER,
            }[u.type]
            k = add_joint(jname, jtype, joint, placement, u.axis, child.name, u)
            frames.append(Frame(jname, FrameKind.JOINT, k, identity))
            frames.append(Frame(child.name, FrameKind.BODY, k, identity))
            append_body(k, child.inertia, identity)
            visit(child.name, k, identity)

    root = links[root_link]
    if floating_base:
        k = add_joint("root_joint", JointType.FREE_FLYER, 0, identity, np.zeros(3), root.name, None)
        frames.append(Frame("root_joint", FrameKind.JOINT, k, identity))
        frames.append(Frame(root.name, FrameKind.BODY, k, identity))
        append_body(k, root.inertia, identity)
        visit(root.name, k, identity)
    else:
        frames.append(Frame(root.name, FrameKind.BODY, 0, identity))
        append_body(0, root.inertia, identity)
        visit(root.name, 0, identity)

    actuated = tuple(i for i, j in enumerate(joints) if i > 0 and j.type is not JointType.FREE_FLYER)
    model = Model(name, tuple(joints), tuple(inertias), tuple(frames), actuated, source=where)
    _check_massless(model, where)
    return model


def _check_massless(model: Model, where: str) -> None:
    """A movable joint whose whole subtree has no mass and no inertia makes M singular."""
    for i in range(1, model.njoints):
        if not any(np.any(model.inertias[k]) for k in model.subtree(i)):
            raise ModelError(
                f"{where}: joint {model.joints[i].name!r} moves no mass or inertia "
                "(its subtree is massless), so the mass matrix would be singular"
            )
