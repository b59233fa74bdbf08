"""The MuJoCo model (``mujoco.MjSpec``) of a :class:`wbc.Model` or :class:`wbc.ClusterModel`:
:func:`build_spec`, as :class:`~wbc.sim.mujoco.MujocoSim` simulates it.

**What is built.** :class:`MujocoSim` generates the MuJoCo model from the wbc model itself through
``mujoco.MjSpec`` (no meshes): one MuJoCo body per wbc joint, in wbc's depth-first order, carrying
that joint's merged inertia (mass, centre of mass, principal axes computed here in float64 from the
6x6 spatial inertia); a free joint for a free-flyer root, hinges for revolute joints (continuous ones
unlimited), slides for prismatic joints, balls for spherical joints (three torque motors each, about
the child frame's axes, their cone as the ball's ``range``); position limits as joint ranges where
finite (optional); no damping, armature, friction loss or springs, so the smooth dynamics are exactly wbc's; a torque
motor (gear 1) on every actuated joint, in ``model.actuated`` order, unlimited or clamped to the
effort limits (optional); gravity ``model.gravity``; a floor plane at z = 0 (floating-base models by
default); thin collision boxes under the given soles and spheres at the given point feet. Only
those collide, and only with the floor (and a ``scene``'s terrain: on a height field the soles
collide through spheres at their four corners, :data:`SOLE_CORNER_RADIUS`): every other body has no
geometry at all.

**Contacts.** Defaults (:class:`ContactParameters`) are chosen for a standing humanoid at 1 ms:
elliptic friction cones with ``impratio = 10`` (little creeping slip), ``condim = 3`` (each box
touches the floor at up to four corners, so the foot resists torsion through the corner forces),
friction 1, ``solref = (0.005, 1)`` (5 ms critically damped contact, ≥ 2 time steps as MuJoCo
requires for stability) and ``solimp = (0.95, 0.99, 0.001)``: a 75 kg robot sinks by micrometres.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence

import numpy as np

try:
    import mujoco
except ImportError as _e:  # pragma: no cover - exercised only without mujoco
    raise ImportError(
        "wbc.sim.mujoco_spec needs MuJoCo, which is optional: install the 'sim' extra (pip install 'wbc[sim]')"
    ) from _e

from ..errors import FrameError, InputError, ModelError
from ..model.clusters import ClosureKind, ClusterModel, JointCoupling, LoopClosure, PolynomialCoupling
from ..model.model import JointType, Model
from .mujoco_coordinates import quat_wxyz

__all__ = [
    "FLOOR",
    "HEIGHT_FIELD_COLLISION",
    "SOLE_CORNER_RADIUS",
    "SOLID_COLLISION",
    "ROTOR_MASS",
    "BoxLike",
    "ContactBox",
    "ContactParameters",
    "ContactSphere",
    "LoopParameters",
    "SimOptions",
    "build_spec",
    "contact_box",
    "set_contact",
    "sole_corner_names",
]

#: Name of the floor geom.
FLOOR = "floor"
#: Collision classes (MuJoCo ``contype`` / ``conaffinity`` bits): the floor and terrain solids collide
#: with the sole boxes and point feet ...
SOLID_COLLISION = 1
#: ... height fields with point feet and the soles' corner spheres (:data:`SOLE_CORNER_RADIUS`), not
#: their boxes.
HEIGHT_FIELD_COLLISION = 2
#: Radius of the spheres at a sole's four corners that stand in for its box on a height field, m.
#: MuJoCo collides a box with a height field one triangular prism at a time, one contact per prism,
#: at an arbitrary point where a flat face overlaps a flat prism: the contacts under a sole standing
#: on a flat height field come and go (0 to 50 of them) and the sole rocks (measured: G1 walking on a
#: height field of zero heights fell after 4 steps at the stance stiffness it walks with on the
#: floor). The box on a plane touches at its four corners; the corner spheres do the same on a height
#: field, their lowest points on the sole plane.
SOLE_CORNER_RADIUS = 0.005

#: Mass (kg) given to a clustered model's massless rotor bodies (MuJoCo refuses massless moving
#: bodies); at the body origin, on the rotor's axis: its effect on the dynamics is of this order.
ROTOR_MASS = 1e-12


# ===================================================================================== inputs
@dataclasses.dataclass(frozen=True)
class ContactBox:
    """A rectangular sole: a thin box whose bottom face is the sole plane of ``frame``.

    Attributes:
        frame: a frame of the model; its origin is the sole centre, its z axis the contact normal
            (pointing from the ground into the foot). The box lies on the frame's positive z side,
            its bottom face in the frame's xy plane, so the frame origin rests on the floor.
        length: extent along the frame's x axis, m.
        width: extent along the frame's y axis, m.
        thickness: box height, m (it only matters for collision robustness).

    On a height field the box does not collide: spheres at its four corners do
    (:data:`SOLE_CORNER_RADIUS`, :data:`HEIGHT_FIELD_COLLISION`), named ``<frame>_contact_corner<k>``.
    """

    frame: str
    length: float
    width: float
    thickness: float = 0.02

    def __post_init__(self) -> None:
        for name in ("length", "width", "thickness"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0):
                raise InputError(f"contact box {self.frame!r}: {name} must be positive and finite, got {value!r}")


BoxLike = ContactBox | tuple


@dataclasses.dataclass(frozen=True)
class ContactSphere:
    """A point foot: a sphere of ``radius`` (m) centred on the origin of ``frame`` (a quadruped's
    foot frame), touching the floor at its lowest point."""

    frame: str
    radius: float

    def __post_init__(self) -> None:
        if not (np.isfinite(self.radius) and self.radius > 0):
            raise InputError(f"contact sphere {self.frame!r}: radius must be positive and finite, got {self.radius!r}")


@dataclasses.dataclass(frozen=True)
class ContactParameters:
    """MuJoCo contact settings of the sole boxes and the floor (see the module docstring).

    Attributes:
        friction: sliding friction coefficient μ.
        torsional: torsional friction (m), used when ``condim`` is 4 or 6.
        rolling: rolling friction (m), used when ``condim`` is 6.
        condim: 1 (frictionless), 3 (point friction), 4 (+ torsion) or 6 (+ rolling).
        solref: (time constant s, damping ratio) of the contact.
        solimp: (d0, dwidth, width m, midpoint, power) impedance.
        cone: ``"elliptic"`` or ``"pyramidal"``.
        impratio: frictional-to-normal impedance ratio (elliptic cones only).
    """

    friction: float = 1.0
    torsional: float = 0.005
    rolling: float = 0.0001
    condim: int = 3
    solref: tuple[float, float] = (0.005, 1.0)
    solimp: tuple[float, float, float, float, float] = (0.95, 0.99, 0.001, 0.5, 2.0)
    cone: str = "elliptic"
    impratio: float = 10.0

    def __post_init__(self) -> None:
        if self.condim not in (1, 3, 4, 6):
            raise InputError(f"condim must be 1, 3, 4 or 6, got {self.condim!r}")
        if self.cone not in ("elliptic", "pyramidal"):
            raise InputError(f"cone must be 'elliptic' or 'pyramidal', got {self.cone!r}")
        if not self.friction >= 0:
            raise InputError(f"friction must be non-negative, got {self.friction!r}")


def contact_box(box: BoxLike) -> ContactBox:
    if isinstance(box, ContactBox):
        return box
    try:
        return ContactBox(*box)
    except TypeError:
        raise InputError(f"a contact box is a ContactBox or (frame, length, width[, thickness]), got {box!r}") from None


# ===================================================================================== model
def _body_inertial(
    I6: np.ndarray, where: str, pure_inertia: bool = False
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """Mass (kg), COM (3,) m, principal-axes quaternion [w x y z] and principal moments (3,) kg m²
    of a spatial inertia (6, 6) about the body frame origin, [linear; angular] ordering.

    With ``pure_inertia`` a massless body with a positive rotational inertia (a rotor given by its
    inertia alone) gets :data:`ROTOR_MASS` at its origin, since MuJoCo refuses massless moving bodies."""
    m = float(I6[0, 0])
    if pure_inertia and m == 0.0 and np.linalg.eigvalsh(I6[3:6, 3:6]).min() > 0:
        I6 = np.array(I6, dtype=float)
        I6[0:3, 0:3] = ROTOR_MASS * np.eye(3)
        m = ROTOR_MASS
    if not m > 0:
        raise ModelError(f"{where}: MuJoCo needs a positive mass for every moving body, got {m!r}")
    mC = I6[3:6, 0:3]  # m [c]x
    c = np.array([mC[2, 1], mC[0, 2], mC[1, 0]]) / m
    C = np.array([[0.0, -c[2], c[1]], [c[2], 0.0, -c[0]], [-c[1], c[0], 0.0]])
    Ic = I6[3:6, 3:6] + m * C @ C
    Ic = 0.5 * (Ic + Ic.T)
    moments, axes = np.linalg.eigh(Ic)
    # A thin disc (a rotor given by its spin inertia) has A + B = C exactly; rounding may break
    # MuJoCo's triangle check by an ulp: restore it by moving A and B up by that much.
    short = moments[2] - moments[0] - moments[1]
    if 0.0 < short <= 1e-9 * moments[2]:
        moments = moments + np.array([short, short, 0.0])
    if np.linalg.det(axes) < 0:
        axes[:, 2] = -axes[:, 2]
    return m, c, quat_wxyz(axes), moments


def _massless_chain(model: Model, i: int) -> list[int]:
    """``[i]``, or the chain ``[i, c₁, ..., c_k]`` when body ``i`` and its descendants up to ``c_k``
    are massless with one child each: MuJoCo gets one body (``c_k``'s) with the chain's joints."""
    chain = [i]
    while not np.any(model.inertias[chain[-1]]):
        kids = model.children(chain[-1])
        if len(kids) != 1 or model.joints[kids[0]].type is JointType.FREE_FLYER:
            break
        chain.append(kids[0])
    return chain


def _placement(j) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(j.placement.R, dtype=float), np.asarray(j.placement.p, dtype=float).reshape(3)


def _add_body(
    spec, parent_body, model: Model, i: int, position_limits: bool, armature=None, pure_inertia: bool = False
):
    """The MuJoCo body of joint ``i``'s body, and the joints it carries (``i`` and the joints of
    the massless bodies merged into it, see :func:`_massless_chain`): ``(body, chain)``.

    A chain of joints in one MuJoCo body is applied in order, each about its anchor in the moving
    body frame: with the body frame at the last body's, joint ``k`` sits at ``(P_{k+1} ⋯ P_n)⁻¹``
    (``P`` the joint placements), which reproduces the spanning tree's kinematics exactly."""
    chain = _massless_chain(model, i) if pure_inertia else [i]
    last = model.joints[chain[-1]]
    j = model.joints[i]
    body = parent_body.add_body(name=last.link)
    where = f"model {model.name!r}, joint {last.name!r}"
    m, c, iquat, moments = _body_inertial(np.asarray(model.inertias[chain[-1]]), where, pure_inertia)
    body.explicitinertial = True
    body.mass, body.ipos, body.iquat, body.inertia = m, c, iquat, moments
    R, p = _placement(j)
    if j.type is JointType.FREE_FLYER:
        if not (np.allclose(R, np.eye(3), atol=1e-12) and np.allclose(p, 0.0, atol=1e-12)):
            raise ModelError(f"{where}: a free-flyer with a non-identity placement is not supported")
        body.add_freejoint(name=j.name)
        return body, chain
    # the body frame: the chain's placements composed; each joint's frame in it
    Rb, pb = R, p
    for k in chain[1:]:
        Rk, pk = _placement(model.joints[k])
        Rb, pb = Rb @ Rk, pb + Rb @ pk
    body.pos, body.quat = pb, quat_wxyz(Rb)
    Rin, pin_ = np.eye(3), np.zeros(3)  # joint frame in the body frame, from the last joint backwards
    frames = []
    for k in reversed(chain):
        frames.append((k, Rin, pin_))
        Rk, pk = _placement(model.joints[k])
        # the frame of the body above joint k: F · P_k⁻¹
        Rin, pin_ = Rin @ Rk.T, pin_ - Rin @ Rk.T @ pk
    for k, Rj, pj in reversed(frames):
        _add_joint(body, model, k, Rj, pj, position_limits, armature)
    return body, chain


def _add_joint(body, model: Model, k: int, R: np.ndarray, p: np.ndarray, position_limits: bool, armature) -> None:
    """Joint ``k`` in ``body``, its frame at ``(R, p)`` in the body frame."""
    j = model.joints[k]
    if j.type is JointType.SPHERICAL:  # MuJoCo's ball turns the body about the anchor: frames must agree
        if not np.allclose(R, np.eye(3), atol=1e-12):
            raise ModelError(f"model {model.name!r}: ball joint {j.name!r} inside a chain of massless bodies")
        joint = body.add_joint(name=j.name, type=mujoco.mjtJoint.mjJNT_BALL, pos=p)
        joint.armature, joint.frictionloss = 0.0, 0.0
        if armature is not None:
            joint.armature = float(armature[j.idx_v])
        joint.damping, joint.stiffness = np.zeros_like(joint.damping), np.zeros_like(joint.stiffness)
        if position_limits and np.isfinite(j.max_angle):
            joint.limited, joint.range = mujoco.mjtLimited.mjLIMITED_TRUE, [0.0, float(j.max_angle)]
        else:
            joint.limited = mujoco.mjtLimited.mjLIMITED_FALSE
        return
    kind = mujoco.mjtJoint.mjJNT_SLIDE if j.type is JointType.PRISMATIC else mujoco.mjtJoint.mjJNT_HINGE
    joint = body.add_joint(name=j.name, type=kind, axis=R @ np.asarray(j.axis, dtype=float), pos=p)
    joint.armature, joint.frictionloss = 0.0, 0.0  # exact rigid-body dynamics: no added terms
    if armature is not None:
        joint.armature = float(armature[j.idx_v])  # the clustered model's own (approximate) armature
    joint.damping, joint.stiffness = np.zeros_like(joint.damping), np.zeros_like(joint.stiffness)
    lo, hi = float(j.lower[0]), float(j.upper[0])
    finite = j.type is not JointType.REVOLUTE_UNBOUNDED and np.isfinite(lo) and np.isfinite(hi)
    if position_limits and finite:
        joint.limited, joint.range = mujoco.mjtLimited.mjLIMITED_TRUE, [lo, hi]
    else:
        joint.limited = mujoco.mjtLimited.mjLIMITED_FALSE
    return body


def _add_actuators(spec, model: Model, torque_limits: bool, joints: Sequence[int] | None = None) -> None:
    for i in model.actuated if joints is None else joints:
        j = model.joints[i]
        for k in range(j.nv):  # a ball joint: one motor per axis of its child frame
            name = j.name if j.nv == 1 else f"{j.name}[{k}]"
            act = spec.add_actuator(name=name, target=j.name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
            gear = np.zeros(6)
            gear[k] = 1.0
            act.gear = gear
            act.gaintype, act.biastype = mujoco.mjtGain.mjGAIN_FIXED, mujoco.mjtBias.mjBIAS_NONE
            act.dyntype = mujoco.mjtDyn.mjDYN_NONE
            act.gainprm[:3] = [1.0, 0.0, 0.0]
            effort = float(j.effort[k])
            if torque_limits and np.isfinite(effort) and effort > 0:
                act.ctrllimited, act.ctrlrange = mujoco.mjtLimited.mjLIMITED_TRUE, [-effort, effort]
            else:
                act.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE


def set_contact(geom, contact: ContactParameters) -> None:
    geom.friction = [contact.friction, contact.torsional, contact.rolling]
    geom.condim = contact.condim
    geom.solref = list(contact.solref)
    geom.solimp = list(contact.solimp)


def _add_contact_box(body, model: Model, box: ContactBox, contact: ContactParameters) -> None:
    frame = model.frames[model.frame_id(box.frame)]
    R = np.asarray(frame.placement.R, dtype=float)
    p = np.asarray(frame.placement.p, dtype=float).reshape(3)
    half = np.array([box.length, box.width, box.thickness]) / 2
    geom = body.add_geom(
        name=f"{box.frame}_contact",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=half,
        pos=p + R @ np.array([0.0, 0.0, half[2]]),
        quat=quat_wxyz(R),
        rgba=[0.8, 0.3, 0.3, 1.0],
    )
    geom.contype, geom.conaffinity = SOLID_COLLISION, 0  # touches the floor and solids, not other soles
    geom.mass = 0.0
    set_contact(geom, contact)


def sole_corner_names(frame: str) -> list[str]:
    """The names of the corner spheres of the sole box on ``frame`` (:class:`ContactBox`)."""
    return [f"{frame}_contact_corner{k}" for k in range(4)]


def _add_sole_corners(body, model: Model, box: ContactBox, contact: ContactParameters) -> None:
    """Spheres at the four corners of ``box`` (their lowest points on the sole plane) colliding with
    height fields only (:data:`SOLE_CORNER_RADIUS`)."""
    frame = model.frames[model.frame_id(box.frame)]
    R = np.asarray(frame.placement.R, dtype=float)
    p = np.asarray(frame.placement.p, dtype=float).reshape(3)
    r = SOLE_CORNER_RADIUS
    corners = [(x, y) for x in (-box.length / 2, box.length / 2) for y in (-box.width / 2, box.width / 2)]
    for name, (x, y) in zip(sole_corner_names(box.frame), corners):
        geom = body.add_geom(
            name=name,
            type=mujoco.mjtGeom.mjGEOM_SPHERE,
            size=[r, 0.0, 0.0],
            pos=p + R @ np.array([x, y, r]),
            rgba=[0.8, 0.3, 0.3, 1.0],
        )
        geom.contype, geom.conaffinity = HEIGHT_FIELD_COLLISION, 0
        geom.mass = 0.0
        set_contact(geom, contact)


def _add_contact_sphere(body, model: Model, sphere: ContactSphere, contact: ContactParameters) -> None:
    frame = model.frames[model.frame_id(sphere.frame)]
    geom = body.add_geom(
        name=f"{sphere.frame}_contact",
        type=mujoco.mjtGeom.mjGEOM_SPHERE,
        size=[sphere.radius, 0.0, 0.0],
        pos=np.asarray(frame.placement.p, dtype=float).reshape(3),
        rgba=[0.8, 0.3, 0.3, 1.0],
    )
    geom.contype, geom.conaffinity = SOLID_COLLISION | HEIGHT_FIELD_COLLISION, 0
    geom.mass = 0.0
    set_contact(geom, contact)


@dataclasses.dataclass(frozen=True)
class LoopParameters:
    """MuJoCo settings of a clustered model's constraints (loop closures and joint couplings).

    MuJoCo enforces equality constraints softly: each behaves as a critically damped spring of time
    constant ``solref[0]`` (at least two time steps) with impedance ``solimp``. The defaults, a 2 ms
    time constant and impedance 0.9999, keep the G1-like ankle rods closed to micrometres during the
    balance scenario (the transmission demo reports the largest loop error it saw).

    Attributes:
        solref: (time constant s, damping ratio).
        solimp: (d0, dwidth, width m, midpoint, power).
    """

    solref: tuple[float, float] = (0.002, 1.0)
    solimp: tuple[float, float, float, float, float] = (0.9999, 0.9999, 0.001, 0.5, 2.0)


@dataclasses.dataclass(frozen=True)
class SimOptions:
    """How a scene is built and simulated: :class:`MujocoSim`'s keyword arguments of the same names
    (see there), as :func:`build_spec` takes them."""

    contact_spheres: tuple[ContactSphere, ...] = ()
    timestep: float = 1e-3
    floor: bool | None = None
    position_limits: bool = True
    torque_limits: bool = True
    contact: ContactParameters = ContactParameters()
    loops: LoopParameters = LoopParameters()
    scene: Callable | None = None


def build_spec(model: Model | ClusterModel, contact_boxes: Iterable[BoxLike] = (), options: SimOptions = SimOptions()):
    """A ``mujoco.MjSpec`` of ``model`` (see the module docstring) with ``contact_boxes`` (soles) and
    ``options`` (see :class:`MujocoSim`)."""
    if not isinstance(model, (Model, ClusterModel)):
        raise InputError(f"model must be a wbc.Model or a wbc.ClusterModel, got {type(model).__name__}")
    if not (np.isfinite(options.timestep) and options.timestep > 0):
        raise InputError(f"timestep must be positive and finite, got {options.timestep!r}")
    cm = model if isinstance(model, ClusterModel) else None
    tree = model.tree if isinstance(model, ClusterModel) else model
    boxes = [contact_box(b) for b in contact_boxes]
    spec = mujoco.MjSpec()
    spec.modelname = model.name
    spec.compiler.degree = False
    spec.compiler.alignfree = False
    spec.compiler.balanceinertia = False
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    spec.option.timestep = float(options.timestep)
    spec.option.gravity = np.asarray(tree.gravity, dtype=float)
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_EULER
    spec.option.cone = (
        mujoco.mjtCone.mjCONE_ELLIPTIC if options.contact.cone == "elliptic" else mujoco.mjtCone.mjCONE_PYRAMIDAL
    )
    spec.option.impratio = options.contact.impratio
    spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_AUTORESET)
    bodies: dict = {0: spec.worldbody}
    armature = None if cm is None else cm.armature
    for i in range(1, tree.njoints):
        if i in bodies:
            continue
        body, chain = _add_body(
            spec, bodies[tree.joints[i].parent], tree, i, options.position_limits, armature, cm is not None
        )
        for k in chain:
            bodies[k] = None  # merged into the chain's last body
        bodies[chain[-1]] = body
    sole_bodies = []
    for box in boxes:
        joint = tree.frames[tree.frame_id(box.frame)].joint
        if joint == 0:
            raise FrameError(f"contact box frame {box.frame!r} is attached to the ground, not to a moving body")
        sole_bodies.append(_body_of(bodies, tree, joint, box.frame))
        _add_contact_box(sole_bodies[-1], tree, box, options.contact)
    for sphere in options.contact_spheres:
        if not isinstance(sphere, ContactSphere):
            raise InputError(f"contact_spheres must hold ContactSphere objects, got {sphere!r}")
        joint = tree.frames[tree.frame_id(sphere.frame)].joint
        if joint == 0:
            raise FrameError(f"contact sphere frame {sphere.frame!r} is attached to the ground, not to a moving body")
        _add_contact_sphere(_body_of(bodies, tree, joint, sphere.frame), tree, sphere, options.contact)
    if tree.floating_base if options.floor is None else options.floor:
        plane = spec.worldbody.add_geom(name=FLOOR, type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05])
        plane.contype, plane.conaffinity = 0, SOLID_COLLISION
        set_contact(plane, options.contact)
    if cm is None:
        _add_actuators(spec, tree, options.torque_limits)
    else:
        _add_constraints(spec, cm, bodies, options.loops)
        _add_actuators(spec, tree, options.torque_limits, cm.motor_joints)
    if options.scene is not None:  # world geoms around the robot (wbc.sim.terrain)
        options.scene(spec)
    if spec.hfields:  # soles touch height fields through their corners (SOLE_CORNER_RADIUS)
        for body, box in zip(sole_bodies, boxes):
            _add_sole_corners(body, tree, box, options.contact)
    return spec


def _body_of(bodies: dict, tree: Model, joint: int, frame: str):
    """The MuJoCo body carrying ``joint``'s body; FrameError for a body merged into a chain."""
    body = bodies[joint]
    if body is None:
        raise FrameError(
            f"frame {frame!r} is on the massless body of joint {tree.joints[joint].name!r}, which MuJoCo "
            "merges into its child: give that body an inertia or move the frame"
        )
    return body


def _add_constraints(spec, cm: ClusterModel, bodies: dict, loops: LoopParameters) -> None:
    """Each declared constraint as a MuJoCo equality: couplings as ``<equality joint>`` (MuJoCo's
    polynomial, relative to qpos0 = 0: exact), loop closures as site ``connect`` / ``weld``."""
    tree = cm.tree

    def equality(kind, name1: str, name2: str | None, data=None, objtype=None):
        e = spec.add_equality()
        e.type = kind
        if objtype is not None:
            e.objtype = objtype
        e.name1 = name1
        if name2 is not None:
            e.name2 = name2
        if data is not None:
            d = np.zeros(len(e.data))
            d[: len(data)] = data
            e.data = d
        e.solref, e.solimp = list(loops.solref), list(loops.solimp)
        return e

    sites: set[str] = set()

    def site(frame: str) -> str:
        name = f"{frame}_loop"
        if name not in sites:
            fr = tree.frames[tree.frame_id(frame)]
            body = spec.worldbody if fr.joint == 0 else _body_of(bodies, tree, fr.joint, frame)
            s = body.add_site(name=name, pos=np.asarray(fr.placement.p, dtype=float).reshape(3))
            s.quat = quat_wxyz(np.asarray(fr.placement.R, dtype=float))
            sites.add(name)
        return name

    for cluster in cm.clusters:
        for c in cluster.constraints:
            where = f"cluster {cluster.name!r}"
            if isinstance(c, JointCoupling):
                if len(c.sources) > 1:  # belts, differentials: a fixed tendon Σ coef q held at the offset
                    tendon = spec.add_tendon(name=f"{c.joint}_coupling")
                    tendon.wrap_joint(c.joint, 1.0)
                    for src, ratio in c.sources:
                        tendon.wrap_joint(src, -float(ratio))
                    equality(mujoco.mjtEq.mjEQ_TENDON, tendon.name, None, [c.offset])
                elif not c.sources:
                    equality(mujoco.mjtEq.mjEQ_JOINT, c.joint, None, [c.offset])
                else:
                    src, ratio = c.sources[0]
                    equality(mujoco.mjtEq.mjEQ_JOINT, c.joint, src, [c.offset, ratio])
            elif isinstance(c, PolynomialCoupling):
                if len(c.coefficients) > 5:
                    raise ModelError(f"{where}: MuJoCo's joint polynomial has at most 5 coefficients")
                equality(mujoco.mjtEq.mjEQ_JOINT, c.joint, c.source, list(c.coefficients))
            elif isinstance(c, LoopClosure):
                a, b = site(c.frame_a), site(c.frame_b)
                if c.kind is ClosureKind.WELD:
                    equality(mujoco.mjtEq.mjEQ_WELD, a, b, [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1], mujoco.mjtObj.mjOBJ_SITE)
                else:
                    equality(mujoco.mjtEq.mjEQ_CONNECT, a, b, None, mujoco.mjtObj.mjOBJ_SITE)
            else:  # pragma: no cover - ClusterModel validates its constraints
                raise ModelError(f"{where}: unknown constraint {type(c).__name__}")
