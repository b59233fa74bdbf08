"""A compiled MuJoCo model's actuators, as wbc reads them: which joints are actuated, their effort
limits, the actuators' reflected armature, and how a joint torque reaches each actuator.

wbc's inputs are joint torques. An actuator is one of wbc's inputs when its transmission is a hinge,
slide or ball joint (``joint``, ``jointinparent``) or a fixed tendon over one joint; its moment on
that joint is its ``gear`` (times the tendon's coefficient). Then:

* the joint is actuated; its effort limit (per degree of freedom, symmetric) is the sum over its
  actuators of ``|moment| · f_max``, with ``f_max`` the largest symmetric actuator force: for a
  torque motor (``motor``, or ``general`` with fixed gain, no bias, no dynamics, no delay)
  ``|gain| · min(|ctrlrange|)`` and, where limited, ``min(|forcerange|)``; for servos and other
  actuators ``min(|forcerange|)`` where limited, else unbounded; capped by the joint's
  ``actuatorfrcrange``;
* its ``armature`` (MuJoCo 4's actuator armature) adds ``moment² · armature`` to the joint's.

A fixed tendon over several joints drives them together, which wbc's joint-torque inputs cannot
express: it is read, left out of the inputs and named in a :class:`~wbc.errors.ModelWarning`.
An actuator on a free joint, a spatial tendon, a site, a body or a slider-crank raises
:class:`~wbc.errors.ModelError` naming it and why. A file without actuators actuates every joint
but free joints (as ``load_urdf`` does), without effort limits.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import warnings

import numpy as np

from ..errors import ModelError, ModelWarning
from .model import Joint, JointType

__all__ = ["ActuatorKind", "MjcfActuator", "Actuation", "actuator_kind", "read_actuators"]


class ActuatorKind(enum.Enum):
    """How an actuator's force follows its control."""

    MOTOR = "motor"  # force = gain · ctrl: wbc's torque reaches it through ctrl = τ / (moment · gain)
    OTHER = "other"  # servos, filters, muscles, delays: the force also depends on the state or the past


@dataclasses.dataclass(frozen=True)
class MjcfActuator:
    """One MuJoCo actuator that is a wbc input.

    Attributes:
        index: MuJoCo's actuator id.
        name: its name (``actuator{id}`` when unnamed).
        joint: the wbc joint it drives.
        moment: its moment on the joint's degrees of freedom (nv_joint,): N m (or N) per unit force.
        kind: :class:`ActuatorKind`.
        gain: force per unit control (motors), else 0.
        force_limit: largest symmetric actuator force, ``inf`` when unbounded.
    """

    index: int
    name: str
    joint: int
    moment: np.ndarray
    kind: ActuatorKind
    gain: float
    force_limit: float


@dataclasses.dataclass(frozen=True)
class Actuation:
    """What :func:`read_actuators` found.

    Attributes:
        actuated: the actuated wbc joints, ascending.
        effort: effort limits (nv_joint,) of each actuated joint, N m or N.
        armature: the actuators' reflected armature per velocity (nv,).
        actuators: the actuators that are wbc inputs.
        tendon_driven: MuJoCo ids of actuators left out of wbc's inputs (fixed tendons over several joints).
    """

    actuated: tuple[int, ...]
    effort: dict[int, np.ndarray]
    armature: np.ndarray
    actuators: tuple[MjcfActuator, ...]
    tendon_driven: tuple[int, ...]


def _symmetric(lo: float, hi: float) -> float:
    """The largest ``r`` with ``[-r, r]`` inside ``[lo, hi]`` (0 when the range excludes zero)."""
    return max(0.0, min(-float(lo), float(hi)))


def actuator_kind(m, a: int) -> ActuatorKind:
    """How actuator ``a`` of compiled model ``m`` turns its control into force."""
    import mujoco

    fixed = int(m.actuator_gaintype[a]) == int(mujoco.mjtGain.mjGAIN_FIXED)
    no_bias = int(m.actuator_biastype[a]) == int(mujoco.mjtBias.mjBIAS_NONE)
    no_dyn = int(m.actuator_dyntype[a]) == int(mujoco.mjtDyn.mjDYN_NONE)
    delay = float(m.actuator_delay[a]) if hasattr(m, "actuator_delay") else 0.0
    if fixed and no_bias and no_dyn and delay == 0.0 and m.actuator_gainprm[a][0] != 0.0:
        return ActuatorKind.MOTOR
    return ActuatorKind.OTHER


def _force_limit(m, a: int, kind: ActuatorKind) -> float:
    limit = math.inf
    if kind is ActuatorKind.MOTOR and m.actuator_ctrllimited[a]:
        limit = abs(float(m.actuator_gainprm[a][0])) * _symmetric(*m.actuator_ctrlrange[a])
    if m.actuator_forcelimited[a]:
        limit = min(limit, _symmetric(*m.actuator_forcerange[a]))
    return limit


def _armature(m, a: int) -> float:
    """Actuator ``a``'s armature (MuJoCo 4), kg m² or kg."""
    return float(m.actuator_armature[a]) if hasattr(m, "actuator_armature") else 0.0


def _fixed_tendon(m, t: int, mujoco) -> list[tuple[int, float]] | None:
    """``(MuJoCo joint, coefficient)`` of fixed tendon ``t``, or None for a spatial tendon."""
    adr, num = int(m.tendon_adr[t]), int(m.tendon_num[t])
    if any(int(m.wrap_type[w]) != int(mujoco.mjtWrap.mjWRAP_JOINT) for w in range(adr, adr + num)):
        return None
    return [(int(m.wrap_objid[w]), float(m.wrap_prm[w])) for w in range(adr, adr + num)]


def read_actuators(m, where: str, joints: list[Joint]) -> Actuation:
    """The actuation of compiled model ``m`` whose wbc joints are ``joints`` (wbc joint ``i`` is
    MuJoCo joint ``i − 1``); see the module docstring.

    Raises:
        ModelError: an actuator wbc cannot represent (named, with why).
    """
    import mujoco

    trn = mujoco.mjtTrn
    nv = int(m.nv)
    armature = np.zeros(nv)
    if m.nu == 0:
        every = tuple(i for i, j in enumerate(joints) if i > 0 and j.type is not JointType.FREE_FLYER)
        return Actuation(every, {}, armature, (), ())
    found: list[MjcfActuator] = []
    tendon_driven: list[int] = []
    for a in range(m.nu):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a) or f"actuator{a}"
        what = f"{where}: actuator {name!r}"
        kind_of_trn, target = int(m.actuator_trntype[a]), int(m.actuator_trnid[a][0])
        gear = np.array(m.actuator_gear[a], dtype=float)
        if kind_of_trn in (int(trn.mjTRN_JOINT), int(trn.mjTRN_JOINTINPARENT)):
            joint = joints[target + 1]
            if joint.type is JointType.FREE_FLYER:
                raise ModelError(f"{what} drives the free joint {joint.name!r}; wbc's floating base is unactuated")
            if joint.type is JointType.SPHERICAL:
                if kind_of_trn == int(trn.mjTRN_JOINTINPARENT):
                    raise ModelError(f"{what}: a ball joint driven in its parent's frame is not supported")
                moment = gear[0:3]
            else:
                moment = gear[0:1]
            wbc_joint = target + 1
        elif kind_of_trn == int(trn.mjTRN_TENDON):
            tendon = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_TENDON, target) or f"tendon{target}"
            wraps = _fixed_tendon(m, target, mujoco)
            if wraps is None:
                raise ModelError(
                    f"{what} pulls the spatial tendon {tendon!r}, whose moment arms change with the "
                    "configuration; wbc's inputs are joint torques"
                )
            if len(wraps) != 1:
                if _armature(m, a):
                    raise ModelError(f"{what}: an armature on a tendon over several joints couples their inertia")
                tendon_driven.append(a)
                continue
            (mj_joint, coefficient) = wraps[0]
            wbc_joint = mj_joint + 1
            if joints[wbc_joint].nv != 1:
                raise ModelError(f"{what}: a fixed tendon over a {joints[wbc_joint].type.value} joint is not supported")
            moment = np.array([gear[0] * coefficient])
        else:
            kind_name = {
                int(trn.mjTRN_SITE): "a site",
                int(trn.mjTRN_BODY): "a body (adhesion)",
                int(trn.mjTRN_SLIDERCRANK): "a slider-crank",
            }.get(kind_of_trn, f"transmission type {kind_of_trn}")
            raise ModelError(
                f"{what} acts through {kind_name}: its force enters as a configuration-dependent wrench, "
                "which wbc's joint-torque inputs cannot express"
            )
        arm = _armature(m, a)
        if arm:
            if moment.size != 1:
                raise ModelError(f"{what}: an armature on a ball joint's actuator is not supported")
            armature[joints[wbc_joint].idx_v] += moment[0] ** 2 * arm
        kind = actuator_kind(m, a)
        gain = float(m.actuator_gainprm[a][0]) if kind is ActuatorKind.MOTOR else 0.0
        found.append(MjcfActuator(a, name, wbc_joint, moment, kind, gain, _force_limit(m, a, kind)))
    if tendon_driven:
        names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a) or f"actuator{a}" for a in tendon_driven]
        warnings.warn(
            f"{where}: actuators {names} pull fixed tendons over several joints; wbc's inputs are joint "
            "torques, so they are not inputs of the model (the simulation leaves them idle)",
            ModelWarning,
            stacklevel=3,
        )
    effort: dict[int, np.ndarray] = {}
    actuated: list[int] = []
    by_joint: dict[int, list[MjcfActuator]] = {}
    for act in found:
        by_joint.setdefault(act.joint, []).append(act)
    for i, mine in sorted(by_joint.items()):
        joint = joints[i]
        moments = np.array([act.moment for act in mine])
        rank = int(np.any(moments != 0.0)) if joint.nv == 1 else np.linalg.matrix_rank(moments)
        if rank < joint.nv:
            names = [act.name for act in mine]
            warnings.warn(
                f"{where}: ball joint {joint.name!r} is driven by {names}, which do not span its three "
                "axes; it is left unactuated",
                ModelWarning,
                stacklevel=3,
            )
            continue
        limit = np.zeros(joint.nv)
        for act in mine:  # (0 · inf is 0 here: an axis the actuator does not turn)
            limit += np.where(act.moment != 0.0, np.abs(act.moment) * act.force_limit, 0.0)
        k = i - 1
        if joint.nv == 1 and m.jnt_actfrclimited[k]:
            limit = np.minimum(limit, _symmetric(*m.jnt_actfrcrange[k]))
        effort[i] = limit
        actuated.append(i)
    return Actuation(tuple(actuated), effort, armature, tuple(found), tuple(tendon_driven))
