"""Simulation bridge: a MuJoCo model built from a :class:`wbc.Model` (or the user's own MJCF), and
exact state conversion.

MuJoCo is optional (the ``sim`` extra, ``pip install 'wbc[sim]'``); ``import wbc`` never imports it,
this module does.

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

**A user's MJCF** (:meth:`MujocoSim.from_mjcf`): the file itself is simulated, as written (its geoms,
contacts, options, solver settings, passive forces), not a scene generated from the model;
:mod:`wbc.sim.mjcf_scene` says how wbc's joint torques reach its actuators.

**Coordinates.** MuJoCo and wbc agree on everything but these, which the converters handle:

==========================  =====================================  ====================================
quantity                    wbc (Pinocchio)                        MuJoCo
==========================  =====================================  ====================================
free-flyer quaternion       ``[qx qy qz qw]``                      ``[qw qx qy qz]``
ball-joint quaternion       ``[qx qy qz qw]``                      ``[qw qx qy qz]``
free-flyer linear velocity  base-origin velocity, **base** axes    base-origin velocity, **world** axes
free-flyer angular vel.     base axes                              base axes
continuous joint            ``q = (cos θ, sin θ)``, one velocity   ``qpos = θ``
==========================  =====================================  ====================================

With ``R`` the base rotation, ``v_mj = T v`` with ``T = diag(R, I₃, I)`` (each free joint's ``R`` on
its linear block when an MJCF has several; a ball joint's angular velocity is in its child frame in
both). Generalized forces map with ``Tᵀ`` (power is invariant), so ``M = Tᵀ M_mj T`` and, since
``Ṫ v = [R (ω × v_lin); 0]`` (``d/dt (R v_lin) = R (v̇_lin + ω × v_lin)``), ``h = Tᵀ (h_mj + M_mj Ṫ v)`` and
``q̈_mj = T v̇ + Ṫ v``. Actuator torques map one to one (a user's file: through its motors' gears).

**Contacts.** Defaults (:class:`ContactParameters`) are chosen for a standing humanoid at 1 ms:
elliptic friction cones with ``impratio = 10`` (little creeping slip), ``condim = 3`` (each box
touches the floor at up to four corners, so the foot resists torsion through the corner forces),
friction 1, ``solref = (0.005, 1)`` (5 ms critically damped contact, ≥ 2 time steps as MuJoCo
requires for stability) and ``solimp = (0.95, 0.99, 0.001)``: a 75 kg robot sinks by micrometres.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

try:
    import mujoco
except ImportError as _e:  # pragma: no cover - exercised only without mujoco
    raise ImportError(
        "wbc.mujoco_bridge needs MuJoCo, which is optional: install the 'sim' extra (pip install 'wbc[sim]')"
    ) from _e

from ..errors import FrameError, InputError, ModelError, SimulationDiverged
from ..model import checks
from ..model.clusters import ClosureKind, ClusterModel, JointCoupling, LoopClosure, PolynomialCoupling
from ..model.configuration import neutral
from ..model.model import JointType, Model
from ..spatial.lie import quaternion_to_rotation, rotation_to_quaternion

__all__ = [
    "SimOptions",
    "HEIGHT_FIELD_COLLISION",
    "SOLE_CORNER_RADIUS",
    "SOLID_COLLISION",
    "ContactBox",
    "ContactSphere",
    "ContactParameters",
    "LoopParameters",
    "MujocoSim",
    "SimulationDiverged",
    "build_spec",
    "sole_corner_names",
    "qpos_from_q",
    "q_from_qpos",
    "velocity_map",
    "qvel_from_v",
    "v_from_qvel",
    "mass_matrix_to_wbc",
    "bias_to_wbc",
    "acceleration_to_wbc",
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

#: MuJoCo's mjMAXVAL: larger controls are zeroed, larger states flag an unstable simulation.
_MAX_VALUE = 1e10
_BAD_STATE = ("mjWARN_BADQPOS", "mjWARN_BADQVEL", "mjWARN_BADQACC")


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


def _contact_box(box: BoxLike) -> ContactBox:
    if isinstance(box, ContactBox):
        return box
    try:
        return ContactBox(*box)
    except TypeError:
        raise InputError(f"a contact box is a ContactBox or (frame, length, width[, thickness]), got {box!r}") from None


# ===================================================================================== rotations
def _matrix_to_quat_wxyz(R: np.ndarray) -> np.ndarray:
    """MuJoCo's quaternion order ``(w, x, y, z)`` of a rotation."""
    x, y, z, w = rotation_to_quaternion(R)
    return np.array([w, x, y, z])


def _free_joints(model: Model) -> tuple:
    """The free joints of ``model`` (a floating base is joint 1; an MJCF may have more, each on a
    body hanging from the world)."""
    return tuple(j for j in model.joints[1:] if j.type is JointType.FREE_FLYER)


def _free_rotation(j, q: np.ndarray) -> np.ndarray:
    """Rotation (3, 3) in the world of the body of free joint ``j``."""
    return quaternion_to_rotation(q[j.idx_q + 3 : j.idx_q + 7])


# ===================================================================================== states
def _qpos_layout(model: Model) -> tuple[np.ndarray, int]:
    """MuJoCo qpos address of each wbc joint (njoints,) (-1 for the universe) and MuJoCo's nq."""
    adr = np.full(model.njoints, -1, dtype=int)
    n = 0
    for i, j in enumerate(model.joints[1:], start=1):
        adr[i] = n
        n += j.nq if j.type in (JointType.FREE_FLYER, JointType.SPHERICAL) else 1
    return adr, n


def qpos_from_q(model: Model, q, reference: np.ndarray | None = None) -> np.ndarray:
    """MuJoCo ``qpos`` of a wbc configuration.

    Args:
        q: wbc configuration (nq,).
        reference: a MuJoCo ``qpos`` (nq_mj,) whose continuous-joint angles are kept within ±π of
            the result (so setting a state does not unwind a continuous joint); None: angles in
            (-π, π].

    Returns:
        qpos (nq_mj,): wbc order; quaternions [w x y z]; continuous joints as angles (rad).
    """
    q = checks.configuration(model, q)
    adr, nq_mj = _qpos_layout(model)
    if reference is not None:
        reference = checks.vector(reference, nq_mj, "reference")
    qpos = np.zeros(nq_mj)
    for i, j in enumerate(model.joints[1:], start=1):
        a, s = adr[i], j.idx_q
        if j.type is JointType.FREE_FLYER:
            qpos[a : a + 3] = q[s : s + 3]
            qpos[a + 3] = q[s + 6]
            qpos[a + 4 : a + 7] = q[s + 3 : s + 6]
        elif j.type is JointType.SPHERICAL:
            qpos[a] = q[s + 3]
            qpos[a + 1 : a + 4] = q[s : s + 3]
        elif j.type is JointType.REVOLUTE_UNBOUNDED:
            theta = np.arctan2(q[s + 1], q[s])
            if reference is not None:
                ref = float(reference[a])
                theta = ref + np.arctan2(np.sin(theta - ref), np.cos(theta - ref))
            qpos[a] = theta
        else:
            qpos[a] = q[s]
    return qpos


def q_from_qpos(model: Model, qpos) -> np.ndarray:
    """wbc configuration (nq,) of a MuJoCo ``qpos`` (nq_mj,) (inverse of :func:`qpos_from_q`)."""
    adr, nq_mj = _qpos_layout(model)
    qpos = checks.vector(qpos, nq_mj, "qpos")
    q = np.zeros(model.nq)
    for i, j in enumerate(model.joints[1:], start=1):
        a, s = adr[i], j.idx_q
        if j.type is JointType.FREE_FLYER:
            q[s : s + 3] = qpos[a : a + 3]
            q[s + 3 : s + 6] = qpos[a + 4 : a + 7]
            q[s + 6] = qpos[a + 3]
        elif j.type is JointType.SPHERICAL:
            q[s : s + 3] = qpos[a + 1 : a + 4]
            q[s + 3] = qpos[a]
        elif j.type is JointType.REVOLUTE_UNBOUNDED:
            q[s : s + 2] = np.cos(qpos[a]), np.sin(qpos[a])
        else:
            q[s] = qpos[a]
    return q


def velocity_map(model: Model, q) -> np.ndarray:
    """``T`` (nv, nv) with ``qvel = T v``: each free joint's rotation on its linear block, else I."""
    q = checks.configuration(model, q)
    T = np.eye(model.nv)
    for j in _free_joints(model):
        T[j.idx_v : j.idx_v + 3, j.idx_v : j.idx_v + 3] = _free_rotation(j, q)
    return T


def _rotate_base(model: Model, q: np.ndarray, x: np.ndarray, transpose: bool) -> np.ndarray:
    """``x`` (nv, ...) with each free joint's linear block multiplied by its R (or Rᵀ)."""
    out = np.array(x, dtype=float)
    for j in _free_joints(model):
        R = _free_rotation(j, q)
        s = slice(j.idx_v, j.idx_v + 3)
        out[s] = (R.T if transpose else R) @ out[s]
    return out


def qvel_from_v(model: Model, q, v) -> np.ndarray:
    """MuJoCo ``qvel`` (nv,) of a wbc velocity ``v`` (nv,) at configuration ``q`` (nq,)."""
    q = checks.configuration(model, q)
    return _rotate_base(model, q, checks.velocity(model, v), transpose=False)


def v_from_qvel(model: Model, q, qvel) -> np.ndarray:
    """wbc velocity (nv,) of a MuJoCo ``qvel`` (nv,) at wbc configuration ``q`` (nq,)."""
    q = checks.configuration(model, q)
    return _rotate_base(model, q, checks.vector(qvel, model.nv, "qvel"), transpose=True)


def _tdot_v(model: Model, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``Ṫ v`` (nv,): ``R (ω × v_lin)`` on the free-flyer linear block, zero elsewhere (m/s²)."""
    out = np.zeros(model.nv)
    for j in _free_joints(model):
        s = j.idx_v
        out[s : s + 3] = _free_rotation(j, q) @ np.cross(v[s + 3 : s + 6], v[s : s + 3])
    return out


def mass_matrix_to_wbc(model: Model, q, M_mj) -> np.ndarray:
    """wbc's ``M(q)`` (nv, nv) from MuJoCo's dense mass matrix ``M_mj`` (nv, nv): ``Tᵀ M_mj T``."""
    q = checks.configuration(model, q)
    M_mj = np.asarray(M_mj, dtype=float)
    if M_mj.shape != (model.nv, model.nv):
        raise InputError(f"M_mj must have shape ({model.nv}, {model.nv}), got {M_mj.shape}")
    T = velocity_map(model, q)
    return T.T @ M_mj @ T


def bias_to_wbc(model: Model, q, v, M_mj, h_mj) -> np.ndarray:
    """wbc's ``h(q, v)`` (nv,) from MuJoCo's ``M_mj`` (nv, nv) and ``qfrc_bias`` ``h_mj`` (nv,), N / N m.

    ``h = Tᵀ (h_mj + M_mj Ṫ v)``: MuJoCo's bias is the force at zero *MuJoCo* acceleration, where
    the base's world-frame linear velocity is constant; wbc's is at zero base-frame acceleration.
    """
    q = checks.configuration(model, q)
    v = checks.velocity(model, v)
    h_mj = checks.vector(h_mj, model.nv, "h_mj")
    M_mj = np.asarray(M_mj, dtype=float)
    return _rotate_base(model, q, h_mj + M_mj @ _tdot_v(model, q, v), transpose=True)


def acceleration_to_wbc(model: Model, q, v, qacc) -> np.ndarray:
    """wbc's ``v̇`` (nv,) from MuJoCo's ``qacc`` (nv,): ``T⁻¹ (qacc − Ṫ v)``."""
    q = checks.configuration(model, q)
    v = checks.velocity(model, v)
    qacc = checks.vector(qacc, model.nv, "qacc")
    return _rotate_base(model, q, qacc - _tdot_v(model, q, v), transpose=True)


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
    return m, c, _matrix_to_quat_wxyz(axes), moments


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
    body.pos, body.quat = pb, _matrix_to_quat_wxyz(Rb)
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


def _set_contact(geom, contact: ContactParameters) -> None:
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
        quat=_matrix_to_quat_wxyz(R),
        rgba=[0.8, 0.3, 0.3, 1.0],
    )
    geom.contype, geom.conaffinity = SOLID_COLLISION, 0  # touches the floor and solids, not other soles
    geom.mass = 0.0
    _set_contact(geom, contact)


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
        _set_contact(geom, contact)


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
    _set_contact(geom, contact)


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
    boxes = [_contact_box(b) for b in contact_boxes]
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
        _set_contact(plane, options.contact)
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
            s.quat = _matrix_to_quat_wxyz(np.asarray(fr.placement.R, dtype=float))
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


# ===================================================================================== simulator
@dataclasses.dataclass
class _Push:
    body: int
    point: np.ndarray  # in the body frame, m
    force: np.ndarray  # world frame, N
    steps_left: int


class MujocoSim:
    """A MuJoCo simulation of a :class:`wbc.Model`, driven in wbc coordinates.

    Every query (:meth:`mass_matrix`, :meth:`bias_forces`, :meth:`acceleration`,
    :meth:`contact_forces`, :meth:`frame_placement`) refers to the *current* state, commands and
    pushes: after a :meth:`step`, MuJoCo's derived quantities belong to the state before the step,
    so the first query after it reruns ``mj_forward`` (tens of µs).

    Args:
        model: the robot.
        contact_boxes: soles, each a :class:`ContactBox` or ``(frame, length, width[, thickness])``.
        contact_spheres: point feet, each a :class:`ContactSphere` (reported by :meth:`contact_forces`
            under their frame's name, like the soles).
        timestep: integration step, s (MuJoCo's semi-implicit Euler: ``v += dt a; q ⊕= dt v``).
        floor: add a floor plane at z = 0 (default: for floating-base models).
        position_limits: joint ranges from the model's finite position limits.
        torque_limits: clamp actuator commands to the model's effort limits (the URDF's ``effort``;
            default), as a real robot's drives do; ``False``: apply any torque.
        contact: contact settings of soles and floor.
        scene: called with the ``mujoco.MjSpec`` before it is compiled, to add world geoms (terrain:
            :func:`wbc.sim.terrain.terrain_scene`, with ``floor=False``).

    Raises:
        InputError: bad arguments. FrameError: a contact-box frame the model does not have.
        ModelError: a body MuJoCo cannot simulate (zero mass, actuated free-flyer).

    Attributes:
        model: the wbc model. spec: the ``mujoco.MjSpec``. mjmodel, mjdata: MuJoCo's model and
        data (raw access; writing ``mjdata.qpos`` / ``qvel`` directly bypasses the conversions).
        contact_boxes: the soles. options: the :class:`SimOptions` the scene was built with (None
        for a user's file, :meth:`from_mjcf`).
    """

    def __init__(
        self,
        model: Model | ClusterModel,
        contact_boxes: Iterable[BoxLike] = (),
        *,
        contact_spheres: Iterable[ContactSphere] = (),
        timestep: float = 1e-3,
        floor: bool | None = None,
        position_limits: bool = True,
        torque_limits: bool = True,
        contact: ContactParameters = ContactParameters(),
        loops: LoopParameters = LoopParameters(),
        scene: Callable | None = None,
    ) -> None:
        self.contact_boxes = tuple(_contact_box(b) for b in contact_boxes)
        self.contact_spheres = tuple(contact_spheres)
        self.model = model
        self.cluster_model = model if isinstance(model, ClusterModel) else None
        self.tree: Model = model.tree if isinstance(model, ClusterModel) else model
        options = SimOptions(
            self.contact_spheres, timestep, floor, position_limits, torque_limits, contact, loops, scene
        )
        self.options: SimOptions | None = options
        self.spec = build_spec(model, self.contact_boxes, options)
        try:
            mjmodel = self.spec.compile()
        except ValueError as e:
            raise ModelError(f"MuJoCo rejected the model {model.name!r}: {e}") from None
        geoms: dict[str, tuple[str, ...]] = {
            b.frame: (f"{b.frame}_contact",) for b in self.contact_boxes + self.contact_spheres
        }
        if self.spec.hfields:
            geoms.update({b.frame: (f"{b.frame}_contact", *sole_corner_names(b.frame)) for b in self.contact_boxes})
        self._setup(mjmodel, geoms, None)
        self._check_layout()
        self.reset(neutral(self.tree) if self.cluster_model is None else self.cluster_model.neutral())

    @classmethod
    def from_mjcf(
        cls,
        source,
        model: Model | ClusterModel | None = None,
        *,
        contact_geoms: Mapping[str, Sequence[str]] | None = None,
        timestep: float | None = None,
    ) -> MujocoSim:
        """A simulation of the user's own MJCF, as written (see :mod:`wbc.sim.mjcf_scene`).

        Its geoms, contacts, options, solver settings and passive forces are the file's; wbc's joint
        torques reach MuJoCo through the file's torque motors (servos are replaced by torque motors,
        with a :class:`~wbc.sim.mjcf_scene.ServoReplacedWarning`).

        Args:
            source: a path, MJCF text, a ``mujoco.MjSpec`` (copied) or a ``mujoco.MjModel``.
            model: the wbc model of the file (default ``wbc.load_mjcf(source)``).
            contact_geoms: for :meth:`contact_forces`, the file's geoms (names) whose contacts count
                for each foot frame.
            timestep: s, instead of the file's ``<option timestep>`` (the only setting changed).

        Raises:
            ModelError: a file MuJoCo rejects, or that wbc cannot represent. InputError: ``model`` is
                not the file's, an unknown geom, a bad time step.
        """
        from ..model.mjcf import load_mjcf
        from .mjcf_scene import user_scene

        model = load_mjcf(source) if model is None else model
        scene = user_scene(source, model)
        self = cls.__new__(cls)
        self.contact_boxes, self.contact_spheres, self.options = (), (), None
        self.model = model
        self.cluster_model = model if isinstance(model, ClusterModel) else None
        self.tree = model.tree if isinstance(model, ClusterModel) else model
        self.spec = scene.spec
        if timestep is not None:
            if not (np.isfinite(timestep) and timestep > 0):
                raise InputError(f"timestep must be positive and finite, got {timestep!r}")
            if self.spec is None:
                raise InputError(f"{scene.where}: a compiled MjModel's time step cannot be changed here")
            self.spec.option.timestep = float(timestep)
        try:
            mjmodel = scene.mjmodel if self.spec is None else self.spec.compile()
        except ValueError as e:
            raise ModelError(f"{scene.where}: MuJoCo rejected the scene: {e}") from None
        ctrl = np.zeros((mjmodel.nu, len(scene.drives)))
        for k, drive in enumerate(scene.drives):
            for key, c in drive:
                ctrl[key if isinstance(key, int) else mjmodel.actuator(key).id, k] += c
        self._setup(mjmodel, dict(contact_geoms or {}), ctrl)
        adr, _ = _qpos_layout(self.tree)
        for i, j in enumerate(self.tree.joints[1:], start=1):
            if mjmodel.jnt_qposadr[i - 1] != adr[i] or mjmodel.jnt_dofadr[i - 1] != j.idx_v:
                raise InputError(f"{scene.where}: joint {j.name!r} of {model.name!r} is not the file's")
        q0 = q_from_qpos(self.tree, mjmodel.qpos0)
        self.reset(
            q0
            if self.cluster_model is None
            else self.cluster_model.spanning_configuration(self.cluster_model.independent_configuration(q0), q0)
        )
        return self

    def _setup(self, mjmodel, contact_geoms: Mapping[str, Sequence[str]], ctrl: np.ndarray | None) -> None:
        """Data, contact geoms, the body of each joint, the input map (None: one actuator per input)."""
        self.mjmodel = mjmodel
        self.mjdata = mujoco.MjData(mjmodel)
        self._box_geoms: dict[str, tuple[int, ...]] = {}
        for frame, names in contact_geoms.items():
            self.tree.frame_id(frame)
            try:
                self._box_geoms[frame] = tuple(mjmodel.geom(n).id for n in names)
            except KeyError:
                raise InputError(f"contact geoms of {frame!r}: the scene has no geom among {list(names)}") from None
        self._ctrl = ctrl
        if ctrl is not None and ctrl.shape[1] != self.n_inputs:
            raise ModelError(f"{self.model.name!r}: {ctrl.shape[1]} drives for {self.n_inputs} inputs (internal error)")
        self._joint_body = self._bodies_of_joints()
        self._pushes: list[_Push] = []
        self._M = np.zeros((self.tree.nv, self.tree.nv))
        self._residuals = None if self.cluster_model is None else _residual_function(self.cluster_model)
        self._stale = True
        self._warnings = dict.fromkeys(_BAD_STATE, 0)

    def _bodies_of_joints(self) -> dict[int, int]:
        """MuJoCo body of each tree joint whose frame is a body's (a generated scene: by the link's
        name; a user's file: the body of the last of its joints)."""
        m, out = self.mjmodel, {}
        if self._ctrl is None:
            for i, j in enumerate(self.tree.joints[1:], start=1):
                try:
                    out[i] = m.body(j.link).id
                except KeyError:
                    continue  # a massless body merged into its child
            return out
        for i in range(1, self.tree.njoints):
            b = int(m.jnt_bodyid[i - 1])
            if i - 1 == int(m.body_jntadr[b]) + int(m.body_jntnum[b]) - 1:
                out[i] = b
        return out

    @property
    def n_inputs(self) -> int:
        """Number of actuators: the model's actuated joints, or a clustered model's motors."""
        return self.tree.n_actuated if self.cluster_model is None else self.cluster_model.n_motors

    def _check_layout(self) -> None:
        adr, nq_mj = _qpos_layout(self.tree)
        m = self.mjmodel
        if m.nq != nq_mj or m.nv != self.tree.nv or m.nu != self.n_inputs:
            raise ModelError(f"MuJoCo model of {self.model.name!r} has an unexpected size (internal error)")
        for i, j in enumerate(self.tree.joints[1:], start=1):
            mj = m.joint(j.name)
            if mj.qposadr[0] != adr[i] or mj.dofadr[0] != j.idx_v:
                raise ModelError(f"joint {j.name!r}: MuJoCo laid it out differently from wbc (internal error)")

    # ------------------------------------------------------------------------------- state
    @property
    def time(self) -> float:
        """Simulated time, s."""
        return float(self.mjdata.time)

    @property
    def timestep(self) -> float:
        """Integration step, s."""
        return float(self.mjmodel.opt.timestep)

    def reset(self, q, v=None) -> None:
        """Time 0, zero torques, no pushes, state ``(q, v)`` (``v`` default zero)."""
        mujoco.mj_resetData(self.mjmodel, self.mjdata)
        self._warnings = dict.fromkeys(_BAD_STATE, 0)
        self._pushes.clear()
        self.set_state(q, v, time=0.0)

    def get_state(self) -> tuple[np.ndarray, np.ndarray]:
        """The current wbc state: ``q`` (nq,), ``v`` (nv,); for a clustered model the spanning
        configuration ``y`` (tree.nq) and the independent velocity ``v`` (nv,) (``ẏ``'s independent
        entries: exact, since ``G`` has identity rows there)."""
        q = q_from_qpos(self.tree, self.mjdata.qpos)
        v = v_from_qvel(self.tree, q, self.mjdata.qvel)
        if self.cluster_model is not None:
            v = v[self.cluster_model.independent_v_indices]
        return q, v

    def get_spanning_state(self) -> tuple[np.ndarray, np.ndarray]:
        """The spanning tree's state ``(y, ẏ)`` (tree.nq,), (tree.nv,), as MuJoCo integrates it."""
        q = q_from_qpos(self.tree, self.mjdata.qpos)
        return q, v_from_qvel(self.tree, q, self.mjdata.qvel)

    def loop_error(self) -> float:
        """Largest residual of the clustered model's loop closures at the current state, m (or rad
        for weld rows); 0 for a tree."""
        return self._constraint_errors()[0]

    def coupling_error(self) -> float:
        """Largest residual of the clustered model's joint couplings (gears, belts) at the current
        state, rad (or m); 0 for a tree."""
        return self._constraint_errors()[1]

    def _constraint_errors(self) -> tuple[float, float]:
        if self._residuals is None:
            return 0.0, 0.0
        y = q_from_qpos(self.tree, self.mjdata.qpos)
        loop, coupling = self._residuals(y)
        return float(np.max(np.abs(np.asarray(loop)), initial=0.0)), float(
            np.max(np.abs(np.asarray(coupling)), initial=0.0)
        )

    def center_of_mass(self) -> np.ndarray:
        """Centre of mass (3,) of the whole robot at the current state, world, m (MuJoCo's)."""
        self._fresh()
        return np.array(self.mjdata.subtree_com[0])

    def set_state(self, q, v=None, time: float | None = None) -> None:
        """Set the state from wbc's ``q`` (nq,) and ``v`` (nv,) (default zero); optionally the time, s.

        Continuous joints keep their winding (the angle nearest the current one is used). Torque
        commands and pushes are kept.

        Raises:
            InputError: wrong sizes, non-finite values, non-unit quaternions or (cos, sin) pairs.
        """
        q = checks.configuration(self.tree, q)
        if self.cluster_model is not None:
            cm = self.cluster_model
            v = np.zeros(cm.nv) if v is None else checks.vector(v, cm.nv, "v")
            v = cm.spanning_velocity(q, v)
        else:
            v = np.zeros(self.tree.nv) if v is None else checks.velocity(self.tree, v)
        self.mjdata.qpos[:] = qpos_from_q(self.tree, q, reference=np.array(self.mjdata.qpos))
        self.mjdata.qvel[:] = qvel_from_v(self.tree, q, v)
        self.mjdata.qacc_warmstart[:] = 0.0
        if time is not None:
            self.mjdata.time = float(time)
        self.forward()

    def set_torques(self, tau) -> None:
        """Actuator torques (n_actuated,), N m or N, in ``model.actuated`` order; held until changed.

        With ``torque_limits`` MuJoCo clamps them to the effort limits.

        Raises:
            InputError: wrong size, non-finite entries or entries beyond 1e10.
        """
        tau = checks.vector(tau, self.n_inputs, "tau")
        ctrl = tau if self._ctrl is None else self._ctrl @ tau
        if np.any(np.abs(ctrl) >= _MAX_VALUE):
            raise InputError(f"tau has entries beyond {_MAX_VALUE:g}, which MuJoCo would replace by zero")
        self.mjdata.ctrl[:] = ctrl
        self._stale = True

    def step(self, n: int = 1) -> None:
        """Advance ``n`` time steps with the current torques, applying the active pushes."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise InputError(f"n must be a non-negative integer, got {n!r}")
        for _ in range(int(n)):
            if self._pushes:
                mujoco.mj_step1(self.mjmodel, self.mjdata)
                self._apply_pushes()
                mujoco.mj_step2(self.mjmodel, self.mjdata)
                self._expire_pushes()
            else:
                mujoco.mj_step(self.mjmodel, self.mjdata)
            self._stale = True
            self._check_finite()

    def _check_finite(self) -> None:
        for name in _BAD_STATE:
            w = self.mjdata.warning[int(getattr(mujoco.mjtWarning, name))]
            if w.number > self._warnings[name]:
                self._warnings[name] = w.number
                what = {"mjWARN_BADQPOS": "position", "mjWARN_BADQVEL": "velocity"}.get(name, "acceleration")
                vector = "MuJoCo qpos" if name == "mjWARN_BADQPOS" else "v"
                raise SimulationDiverged(
                    f"MuJoCo simulation of {self.model.name!r} diverged at t = {self.time:.4f} s: bad {what} "
                    f"(index {int(w.lastinfo)} of {vector}); lower the gains or the time step"
                )

    def forward(self) -> None:
        """Recompute MuJoCo's derived quantities (``mj_forward``) at the current state and commands."""
        if self._pushes:
            mujoco.mj_kinematics(self.mjmodel, self.mjdata)
            mujoco.mj_comPos(self.mjmodel, self.mjdata)
            self._apply_pushes()
        mujoco.mj_forward(self.mjmodel, self.mjdata)
        self._stale = False

    def _fresh(self) -> None:
        if self._stale:
            self.forward()

    # ------------------------------------------------------------------------------- pushes
    def apply_push(self, frame: str, force, duration: float, point=None) -> None:
        """Push the body carrying ``frame`` during the next ``duration`` s of simulation.

        Args:
            frame: a model frame.
            force: force (3,), N, world axes, constant during the push.
            duration: s; rounded to a whole number of steps, at least one.
            point: point of application (3,) in ``frame`` coordinates, m (default the frame
                origin); it moves with the body.

        Pushes go through ``mjdata.xfrc_applied`` (the force at the body's centre of mass plus the
        moment of the offset), which :meth:`step` overwrites while pushes are active.

        Raises:
            FrameError: unknown frame, or a frame on the fixed ground. InputError: bad force,
                point or duration.
        """
        fr = self.tree.frames[self.tree.frame_id(frame)]
        if fr.joint == 0:
            raise FrameError(f"frame {frame!r} is attached to the ground; pushing it does nothing")
        force = checks.vector(force, 3, "force")
        offset = np.zeros(3) if point is None else checks.vector(point, 3, "point")
        if not (isinstance(duration, (int, float, np.floating)) and np.isfinite(duration) and duration > 0):
            raise InputError(f"duration must be positive and finite, s; got {duration!r}")
        R = np.asarray(fr.placement.R, dtype=float)
        p_body = np.asarray(fr.placement.p, dtype=float).reshape(3) + R @ offset
        body = self._mj_body(fr.joint, frame)
        steps = max(1, int(round(duration / self.timestep)))
        self._pushes.append(_Push(body, p_body, force.copy(), steps))
        self._stale = True

    def clear_pushes(self) -> None:
        """Cancel every push and zero ``mjdata.xfrc_applied``."""
        self._pushes.clear()
        self.mjdata.xfrc_applied[:] = 0.0
        self._stale = True

    def _apply_pushes(self) -> None:
        d = self.mjdata
        d.xfrc_applied[:] = 0.0
        for push in self._pushes:
            b = push.body
            point = d.xpos[b] + d.xmat[b].reshape(3, 3) @ push.point
            d.xfrc_applied[b, 0:3] += push.force
            d.xfrc_applied[b, 3:6] += np.cross(point - d.xipos[b], push.force)

    def _expire_pushes(self) -> None:
        for push in self._pushes:
            push.steps_left -= 1
        self._pushes = [p for p in self._pushes if p.steps_left > 0]
        if not self._pushes:
            self.mjdata.xfrc_applied[:] = 0.0

    # ------------------------------------------------------------------------------- dynamics
    def mass_matrix(self) -> np.ndarray:
        """MuJoCo's mass matrix at the current state, in wbc coordinates: ``M(q)`` (nv, nv)."""
        self._fresh()
        q, _ = self.get_spanning_state()
        return mass_matrix_to_wbc(self.tree, q, self._mj_mass_matrix())

    def bias_forces(self) -> np.ndarray:
        """MuJoCo's bias forces at the current state, in wbc coordinates: ``h(q, v)`` (nv,), N / N m."""
        self._fresh()
        q, v = self.get_spanning_state()
        return bias_to_wbc(self.tree, q, v, self._mj_mass_matrix(), self.mjdata.qfrc_bias)

    def acceleration(self) -> np.ndarray:
        """MuJoCo's acceleration ``v̇`` (nv,) at the current state, torques, pushes and contacts, in
        wbc coordinates (m/s², rad/s²)."""
        self._fresh()
        q, v = self.get_spanning_state()
        return acceleration_to_wbc(self.tree, q, v, self.mjdata.qacc)

    def _mj_mass_matrix(self) -> np.ndarray:
        mujoco.mj_fullM(self.mjmodel, self.mjdata, self._M)
        return self._M.copy()

    # ------------------------------------------------------------------------------- readout
    def contact_forces(self) -> dict[str, np.ndarray]:
        """Total contact force (3,) the floor exerts on each sole box and point foot, N, world axes."""
        self._fresh()
        out = {name: np.zeros(3) for name in self._box_geoms}
        owner = {g: name for name, geoms in self._box_geoms.items() for g in geoms}
        f6 = np.zeros(6)
        d = self.mjdata
        for k in range(d.ncon):
            con = d.contact[k]
            # the contact frame's first row is the normal, from geom1 to geom2; f6 acts on geom2
            for geom, sign in ((con.geom2, 1.0), (con.geom1, -1.0)):
                if geom in owner:
                    mujoco.mj_contactForce(self.mjmodel, d, k, f6)
                    out[owner[geom]] += sign * (con.frame.reshape(3, 3).T @ f6[0:3])
        return out

    def normal_forces(self) -> dict[str, float]:
        """Vertical (world z) contact force on each sole box, N."""
        return {name: float(f[2]) for name, f in self.contact_forces().items()}

    def frame_placement(self, frame: str) -> np.ndarray:
        """Homogeneous transform (4, 4) of a model frame in the world, from MuJoCo's kinematics."""
        fr = self.tree.frames[self.tree.frame_id(frame)]
        self._fresh()
        if fr.joint == 0:
            R0, p0 = np.eye(3), np.zeros(3)
        else:
            b = self._mj_body(fr.joint, frame)
            R0, p0 = self.mjdata.xmat[b].reshape(3, 3), self.mjdata.xpos[b]
        T = np.eye(4)
        T[0:3, 0:3] = R0 @ np.asarray(fr.placement.R, dtype=float)
        T[0:3, 3] = p0 + R0 @ np.asarray(fr.placement.p, dtype=float).reshape(3)
        return T

    def _mj_body(self, joint: int, frame: str) -> int:
        """MuJoCo's id of the body of tree joint ``joint`` (FrameError for a merged massless body)."""
        try:
            return self._joint_body[joint]
        except KeyError:
            raise FrameError(
                f"frame {frame!r} is on the massless body {self.tree.joints[joint].link!r}, which MuJoCo "
                "merges into its child (or a joint inside a MuJoCo body)"
            ) from None

    def to_xml(self) -> str:
        """The generated model as MJCF text, to inspect it or open it in MuJoCo's viewer.

        MuJoCo prints numbers with 6 significant digits, so a model reloaded from this text is not
        exactly wbc's; the simulation itself uses the compiled spec at full precision.
        """
        return self.spec.to_xml()


def _closure_rows_of(cluster) -> list[int]:
    """Indices, in a declared cluster's residual, of its loop-closure rows (metres, radians)."""
    rows: list[int] = []
    n = 0
    for c in cluster.constraints:
        if isinstance(c, LoopClosure):
            k = len(c.rows) if c.rows is not None else (6 if c.kind is ClosureKind.WELD else 3)
            rows.extend(range(n, n + k))
            n += k
        else:
            n += 1
    return rows


def _residual_function(cm: ClusterModel):
    """``y -> (loop-closure residuals, coupling residuals)`` of every declared cluster (CasADi)."""
    import casadi as ca

    y = ca.SX.sym("y", cm.tree.nq)
    loops, couplings = [], []
    for k, c in enumerate(cm.infos):
        if c.declared is None:
            continue
        residual, _, _ = c.loop_functions()
        r = residual(cm.cluster_coordinates(k, y))
        rows = _closure_rows_of(c.declared)
        others = [i for i in range(r.shape[0]) if i not in rows]
        loops += [r[i] for i in rows]
        couplings += [r[i] for i in others]
    return ca.Function("residuals", [y], [ca.vertcat(*loops, 0), ca.vertcat(*couplings, 0)])
