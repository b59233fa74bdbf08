"""A user's own MJCF as the simulated scene: the file as written, driven by wbc's joint torques.

:meth:`wbc.sim.mujoco.MujocoSim.from_mjcf` simulates the file itself (its geoms, contacts, options,
solver settings, passive forces), not a scene regenerated from the wbc model. wbc's inputs (the
actuated joints' torques, :mod:`wbc.model.mjcf_actuators`) reach MuJoCo through ``ctrl``:

* a joint whose actuators include torque motors spanning its degrees of freedom (``motor``, or
  ``general`` with a fixed gain and neither bias nor dynamics) is driven through them:
  ``ctrl = C τ``, the least-norm split ``τ_j = Σ moment · gain · ctrl`` (``τ / (gear · gain)`` for one
  motor); the file's control ranges still clamp, as written;
* servos and other actuators whose force depends on the state (``position``, ``velocity``,
  ``intvelocity``, filters, muscles, delays) are removed from the scene, wherever they act, with a
  :class:`ServoReplacedWarning` naming them, and each wbc joint without spanning torque motors gets
  torque motors added through ``mujoco.MjSpec`` (gear 1 per degree of freedom, unlimited);
* fixed-tendon motors over several joints (not wbc inputs) stay and idle at zero control.

Frames: wbc joint ``i`` is MuJoCo joint ``i − 1``; a frame on the last joint of a MuJoCo body is on
that body.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np

from ..errors import InputError
from ..model.clusters import ClusterModel
from ..model.mjcf import compile_mjcf, mujoco_module
from ..model.mjcf_actuators import ActuatorKind, actuator_kind, read_actuators
from ..model.model import Model

__all__ = ["ServoReplacedWarning", "UserScene", "user_scene"]

#: Name prefix of the torque motors added for joints the file drives with servos.
ADDED_MOTOR = "wbc_torque_"


class ServoReplacedWarning(UserWarning):
    """The file's servos (position, velocity, ...) were replaced by torque motors for wbc's torques."""


@dataclasses.dataclass
class UserScene:
    """The spec to compile and how wbc's inputs map to its controls.

    Attributes:
        spec: the ``mujoco.MjSpec`` (a copy of the user's, with servos replaced), or None when the
            user gave a compiled ``MjModel`` that needed no change.
        mjmodel: the given ``MjModel`` (when ``spec`` is None).
        where: the source, for messages.
        drives: per wbc input column, ``(actuator, coefficient)`` pairs, ``ctrl[a] += c τ[k]``, the
            actuator by name in ``spec`` (every actuator named there), by id in ``mjmodel``.
        replaced: names of the removed actuators.
    """

    spec: Any
    mjmodel: Any
    where: str
    drives: list[list[tuple[str | int, float]]]
    replaced: tuple[str, ...]


def _spec_of(source, mujoco) -> tuple[Any, Any, str]:
    """``(spec or None, compiled model, where)`` of a user's source."""
    if isinstance(source, mujoco.MjModel):
        return None, source, "<mujoco.MjModel>"
    m, where = compile_mjcf(source)  # checks the file, names MuJoCo's error
    if isinstance(source, mujoco.MjSpec):
        return source.copy(), m, where
    if isinstance(source, str) and source.lstrip().startswith("<"):
        return mujoco.MjSpec.from_string(source), m, where
    return mujoco.MjSpec.from_file(str(source)), m, where


def user_scene(source, model: Model | ClusterModel) -> UserScene:
    """The scene of ``source`` for ``model`` (``wbc.load_mjcf(source)``); see the module docstring.

    Raises:
        InputError: ``model`` does not have the file's joints, or servos must be replaced in a
            compiled ``MjModel`` (pass the file, its text or its ``MjSpec`` instead).
    """
    mujoco = mujoco_module()
    tree = model.tree if isinstance(model, ClusterModel) else model
    spec, m, where = _spec_of(source, mujoco)
    if m.njnt != tree.njoints - 1 or m.nv != tree.nv:
        raise InputError(f"{where}: the model {tree.name!r} does not have this file's joints ({m.njnt}, nv {m.nv})")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # load_mjcf has said it already
        actuation = read_actuators(m, where, list(tree.joints))
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a) or f"actuator{a}" for a in range(m.nu)]
    # every actuator whose force depends on the state goes (a servo left in would hold its joint)
    remove = {a for a in range(m.nu) if actuator_kind(m, a) is not ActuatorKind.MOTOR}
    drives: list[list[tuple[str | int, float]]] = []
    added: list[tuple[int, int]] = []  # (wbc joint, degree of freedom)
    for i in model.motor_joints if isinstance(model, ClusterModel) else tree.actuated:
        joint = tree.joints[i]
        mine = [act for act in actuation.actuators if act.joint == i]
        motors = [act for act in mine if act.kind is ActuatorKind.MOTOR]
        A = np.array([act.moment * act.gain for act in motors]).reshape(len(motors), joint.nv)
        if motors and np.linalg.matrix_rank(A) == joint.nv:
            split = np.linalg.pinv(A.T)  # ctrl (n_motors,) = split @ τ_j
            for k in range(joint.nv):
                key = (lambda a: a) if spec is None else (lambda a: names[a])
                drives.append([(key(act.index), float(split[r, k])) for r, act in enumerate(motors)])
        else:
            remove.update(act.index for act in mine)
            for k in range(joint.nv):
                drives.append([(f"{ADDED_MOTOR}{joint.name}" + (f"_{k}" if joint.nv > 1 else ""), 1.0)])
                added.append((i, k))
    replaced = tuple(names[a] for a in sorted(remove))
    if spec is not None:
        for a, act in enumerate(spec.actuators):  # name them all: the drives find them by name
            if not act.name:
                act.name = names[a]
    if not remove and not added:
        return UserScene(spec, m if spec is None else None, where, drives, ())
    if spec is None:
        raise InputError(
            f"{where}: its actuators {list(replaced)} are servos, which wbc replaces by torque motors in the "
            "model's spec: pass the file, its text or its mujoco.MjSpec instead of a compiled MjModel"
        )
    for name in replaced:
        spec.delete(spec.actuator(name))
    for i, k in added:
        joint = tree.joints[i]
        gear = np.zeros(6)
        gear[k if joint.nv > 1 else 0] = 1.0
        target = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, i - 1)
        if not target:
            raise InputError(f"{where}: joint {joint.name!r} is unnamed in the file; name it to drive it with a motor")
        act = spec.add_actuator(
            name=f"{ADDED_MOTOR}{joint.name}" + (f"_{k}" if joint.nv > 1 else ""),
            target=target,
            trntype=mujoco.mjtTrn.mjTRN_JOINT,
        )
        act.gear = gear
        act.gaintype, act.biastype, act.dyntype = (
            mujoco.mjtGain.mjGAIN_FIXED,
            mujoco.mjtBias.mjBIAS_NONE,
            mujoco.mjtDyn.mjDYN_NONE,
        )
        act.gainprm[:3] = [1.0, 0.0, 0.0]
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE
    if replaced:
        warnings.warn(
            f"{where}: actuators {list(replaced)} are servos or filtered (their force depends on the state): "
            "removed from the simulation; their joints are driven by added torque motors",
            ServoReplacedWarning,
            stacklevel=3,
        )
    return UserScene(spec, None, where, drives, replaced)
