"""The controller's model under a :class:`~wbc.sim.faults.ModelMismatch`: a new :class:`~wbc.Model`
built from the simulated one (never modified), its bodies' masses, rotational inertias and centres
of mass perturbed, or loaded from another robot file.

Each body's spatial inertia (about its joint frame, [linear; angular]) is taken apart into mass
``m``, centre of mass ``c`` and rotational inertia about the centre of mass ``I_c``, perturbed
(``m (1 + δ_m)``, ``I_c (1 + δ_I)``, ``c + d u`` with ``u`` a random unit vector) and put back
together (:func:`wbc.spatial.algebra.rigid_inertia`). A body merged from several URDF links by fixed
joints is perturbed as one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import InputError
from ..model.model import Model
from ..model.reduce import lock_joints
from ..spatial.algebra import first_moment, rigid_inertia
from ..spatial.lie import skew
from .faults import ModelMismatch, Perturbation

__all__ = ["body_inertial", "controller_model", "perturbed_model"]


def body_inertial(I6: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass (kg), centre of mass (3,) m and rotational inertia about it (3, 3) kg m² of a spatial
    inertia (6, 6) about the body frame origin (the inverse of :func:`~wbc.spatial.algebra.rigid_inertia`)."""
    I6 = np.asarray(I6, dtype=float)
    m = float(I6[0, 0])
    if m == 0.0:
        return 0.0, np.zeros(3), np.array(I6[3:6, 3:6])
    c = first_moment(I6).reshape(3) / m
    C = skew(c)
    return m, c, I6[3:6, 3:6] + m * C @ C


def _factors(rng: np.random.Generator, n: int, amount: float, how: Perturbation) -> np.ndarray:
    if amount == 0.0:
        return np.ones(n)
    if how is Perturbation.SIGNS:
        return 1.0 + amount * rng.choice([-1.0, 1.0], size=n)
    return 1.0 + rng.uniform(-amount, amount, size=n)


def perturbed_model(model: Model, mismatch: ModelMismatch, rng: np.random.Generator) -> Model:
    """``model`` with every massive body's mass, rotational inertia and centre of mass perturbed as
    ``mismatch`` says (its ``robot_file`` is ignored here), the draws taken from ``rng`` in body
    order (masses, then inertias, then centre-of-mass directions and lengths)."""
    n = model.njoints
    how = mismatch.perturbation
    mass = _factors(rng, n, mismatch.mass, how)
    inertia = _factors(rng, n, mismatch.inertia, how)
    if mismatch.com_m:
        direction = rng.normal(size=(n, 3))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        length = np.full(n, mismatch.com_m) if how is Perturbation.SIGNS else rng.uniform(0, mismatch.com_m, size=n)
        shift = direction * length[:, None]
    else:
        shift = np.zeros((n, 3))
    inertias = [np.array(model.inertias[0])]
    for i in range(1, n):
        m, c, Ic = body_inertial(model.inertias[i])
        if m == 0.0:
            inertias.append(np.array(model.inertias[i]))
            continue
        inertias.append(rigid_inertia(m * mass[i], c + shift[i], Ic * inertia[i]))
    return dataclasses.replace(model, inertias=tuple(inertias), name=model.name)


def _same_layout(model: Model, other: Model, where: str) -> None:
    """Raise unless ``other`` has ``model``'s joints (names, types, order) and actuation."""
    if other.nq != model.nq or other.nv != model.nv or other.njoints != model.njoints:
        raise InputError(
            f"{where}: the controller's model has nq={other.nq}, nv={other.nv}, {other.njoints} joints; the "
            f"simulated robot {model.name!r} has nq={model.nq}, nv={model.nv}, {model.njoints} joints"
        )
    for a, b in zip(model.joints[1:], other.joints[1:]):
        if a.name != b.name or a.type is not b.type:
            raise InputError(
                f"{where}: joint {b.name!r} ({b.type.value}) of the controller's model stands where the simulated "
                f"robot has {a.name!r} ({a.type.value})"
            )
    if other.actuated != model.actuated:
        raise InputError(f"{where}: the controller's model actuates other joints than the simulated robot")


def controller_model(
    model: Model,
    mismatch: ModelMismatch,
    rng: np.random.Generator,
    locked: Mapping[str, Sequence[float]] | None = None,
) -> Model:
    """The model the controller uses while ``model`` is simulated: ``model`` itself without a
    mismatch, else a new model (the robot file's, checked against ``model``'s joints, then
    perturbed).

    Args:
        model: the simulated robot.
        mismatch: what differs.
        rng: the generator of the perturbation.
        locked: joints of the robot file locked at these positions (a catalog robot's
            ``RobotSpec.locked``, so a full URDF reduces as the simulated model was); the robot
            file's model is then actuated as ``model`` is (by joint names).

    Raises:
        InputError: the robot file's model has other joints (names, types, order) or actuation.
        ModelError: the robot file cannot be loaded (the loader's error, naming the file).
    """
    if not mismatch.active:
        return model
    base = model
    if mismatch.robot_file is not None:
        from ..model.urdf import load_urdf

        where = f"ModelMismatch.robot_file {mismatch.robot_file!r}"
        base = load_urdf(mismatch.robot_file, floating_base=model.floating_base)
        if locked:
            base = lock_joints(base, {k: v for k, v in locked.items() if k in base.joint_names})
        missing = [n for n in model.actuated_joint_names if n not in base.joint_names]
        if missing:
            raise InputError(f"{where}: the controller's model has no joint {missing[0]!r} of the simulated robot")
        base = base.with_actuation(model.actuated_joint_names)
        _same_layout(model, base, where)
    if mismatch.mass or mismatch.inertia or mismatch.com_m:
        return perturbed_model(base, mismatch, rng)
    return base
