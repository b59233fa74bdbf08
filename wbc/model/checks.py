"""Validation of user inputs: sizes, finiteness, unit quaternions, frame names; and of models for
what needs ``M⁻¹``.

Every public entry point runs its arguments through these before any algorithm sees them, so
bad input becomes an :class:`~wbc.errors.InputError` (a ``ValueError``) or a
:class:`~wbc.errors.FrameError` naming the argument, never a crash or a silent NaN.

Models whose joints move no mass (massless finger links, a point mass on its own joint axis, a
free-flyer stacked on a massless link) load, and their kinematics, Jacobians, CRBA and RNEA work;
:func:`massless_joints` finds those joints once per model and :func:`invertible_dynamics` refuses,
naming them, what would divide by their zero inertia (ABA, B̂, Delassus matrices, the controller).
"""

from __future__ import annotations

import enum
import functools
import math
import numbers
import weakref
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np

from ..errors import InputError, ModelError
from ..spatial.lie import exp3, quaternion_to_rotation, skew
from .joints import motion_subspace
from .model import Joint, JointType, Model

__all__ = [
    "UNIT_TOLERANCE",
    "MASSLESS_TOLERANCE",
    "vector",
    "configuration",
    "velocity",
    "unit_parts",
    "frame_index",
    "option",
    "massless_joints",
    "invertible_dynamics",
]

#: How far from 1 the norm of a free-flyer quaternion or of a continuous joint's (cos, sin) may be.
UNIT_TOLERANCE = 1e-6
#: A joint moves no mass when its articulated inertia about its motion is at most this fraction of
#: its composite inertia about it (both are zero for a massless subtree; the ratio is unit-free).
MASSLESS_TOLERANCE = 1e-9


def vector(x: Any, n: int, name: str) -> np.ndarray:
    """``x`` as a float array of shape (n,), or :class:`InputError` naming ``name``.

    A column (n, 1) or row (1, n) is accepted and flattened. Complex input is refused (its imaginary
    part would be lost silently).
    """
    if type(x) is np.ndarray and x.dtype == np.float64 and x.shape == (n,):  # the control loop's case
        if not np.isfinite(x).all():
            bad = np.flatnonzero(~np.isfinite(x))
            raise InputError(f"{name} has non-finite entries at indices {bad.tolist()}")
        return x
    if isinstance(x, np.ma.MaskedArray):
        raise InputError(
            f"{name} is a numpy masked array: its masked entries hold no value; pass a plain array "
            "(e.g. np.ma.filled(x, value), or the measured values)"
        )
    if np.iscomplexobj(x):
        raise InputError(f"{name} must be real numbers, got complex values")
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be an array of {n} numbers, got {type(x).__name__}") from None
    if a.ndim == 2 and 1 in a.shape:
        a = a.reshape(-1)
    if a.shape != (n,):
        raise InputError(f"{name} must have shape ({n},), got {a.shape}")
    if not np.isfinite(a).all():
        bad = np.flatnonzero(~np.isfinite(a))
        raise InputError(f"{name} has non-finite entries at indices {bad.tolist()}")
    return a


R = TypeVar("R")


def _per_model(function: Callable[[Model], R]) -> Callable[[Model], R]:
    """Memoize ``function(model)`` for as long as the model lives (weakly: a dropped model is freed)."""
    memo: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    @functools.wraps(function)
    def memoized(model: Model) -> R:
        try:
            return memo[model]
        except KeyError:
            value = memo[model] = function(model)
            return value
        except TypeError:  # not weakly referenceable: computed every time
            return function(model)

    return memoized


@_per_model
def unit_parts(model: Model) -> tuple[tuple[int, int, str, str], ...]:
    """(start, stop, joint name, what) of every slice of q that must have unit norm."""
    parts = []
    for j in model.joints[1:]:
        if j.type is JointType.FREE_FLYER:
            parts.append((j.idx_q + 3, j.idx_q + 7, j.name, "quaternion"))
        elif j.type is JointType.SPHERICAL:
            parts.append((j.idx_q, j.idx_q + 4, j.name, "quaternion"))
        elif j.type is JointType.REVOLUTE_UNBOUNDED:
            parts.append((j.idx_q, j.idx_q + 2, j.name, "(cos, sin) pair"))
    return tuple(parts)


def configuration(model: Model, q: Any, name: str = "q") -> np.ndarray:
    """A valid configuration (nq,): right size, finite, unit quaternions and (cos, sin) pairs."""
    q = vector(q, model.nq, name)
    for start, stop, joint, what in unit_parts(model):
        part = q[start:stop]
        norm = float(np.sqrt(part @ part))
        if abs(norm - 1.0) > UNIT_TOLERANCE:
            raise InputError(
                f"{name}: the {what} of joint {joint!r} (q[{start}:{stop}]) has norm "
                f"{norm:.9g}; it must be 1 within {UNIT_TOLERANCE} (normalize it, e.g. wbc.normalize)"
            )
    return q


def velocity(model: Model, v: Any, name: str = "v") -> np.ndarray:
    """A valid velocity-sized vector (nv,)."""
    return vector(v, model.nv, name)


def frame_index(model: Model, frame: Any) -> int:
    """The index of ``frame``: a frame name (:class:`~wbc.errors.FrameError` if unknown) or an index
    into ``model.frames`` (:class:`InputError` if out of range)."""
    if isinstance(frame, (int, np.integer)) and not isinstance(frame, (bool, np.bool_)):
        if not 0 <= frame < len(model.frames):
            raise InputError(f"frame index {frame} out of range (model {model.name!r} has {len(model.frames)} frames)")
        return int(frame)
    return model.frame_id(frame)


E = TypeVar("E", bound=enum.Enum)


def external_forces(fext: Any) -> Mapping | None:
    """``fext`` as given to the dynamics: None for no force (None or an empty mapping), else the
    mapping ``{frame: wrench (6,)}`` itself (its frames and wrenches are checked where they are used).

    Raises:
        InputError: ``fext`` is not a mapping (one wrench without its frame, a list of pairs, ...).
    """
    if fext is None:
        return None
    if type(fext) is not dict and not isinstance(fext, Mapping):
        raise InputError(f"fext must be a mapping {{frame name: wrench (6,)}}, got {type(fext).__name__}")
    return fext or None


def finite_number(value: Any, name: str) -> float:
    """``value`` as a finite real number (a Python or numpy scalar, not a string), or
    :class:`InputError` naming ``name``."""
    if not (isinstance(value, numbers.Real) and math.isfinite(value)):
        raise InputError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def positive(value: Any, name: str) -> float:
    """``value`` as a finite number > 0, or :class:`InputError` naming ``name``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {value!r}") from None
    if not (np.isfinite(number) and number > 0):
        raise InputError(f"{name} must be a finite number > 0, got {value!r}")
    return number


def option(kind: type[E], value: Any, name: str) -> E:
    """``value`` as a member of the enum ``kind``: a member, or its value as a convenience (resolved
    here, once); :class:`InputError` naming ``name`` and the choices otherwise."""
    if isinstance(value, kind):
        return value
    try:
        return kind(value)
    except ValueError:
        choices = ", ".join(f"{kind.__name__}.{m.name} ({m.value!r})" for m in kind)
        raise InputError(f"{name} must be one of {choices}; got {value!r}") from None


# ------------------------------------------------------------------------------ massless joints
def _parent_to_child(joint: Joint, rng: np.random.Generator) -> np.ndarray:
    """The motion transform (6, 6) from the parent joint's frame to this joint's moving frame, at a
    generic joint position drawn from ``rng`` (within the limits)."""
    R0, p = np.asarray(joint.placement.R, float), np.asarray(joint.placement.p, float).reshape(3)
    if joint.type is JointType.FREE_FLYER:
        Rj, pj = quaternion_to_rotation(np.array([0.1, 0.2, 0.3, 0.9]) / np.sqrt(0.95)), np.array([0.1, -0.2, 0.3])
    elif joint.type is JointType.SPHERICAL:
        Rj, pj = quaternion_to_rotation(np.array([0.3, -0.1, 0.2, 0.9]) / np.sqrt(0.95)), np.zeros(3)
    else:
        lo, hi = joint.lower[0], joint.upper[0]
        if joint.type is JointType.REVOLUTE_UNBOUNDED or not (np.isfinite(lo) and np.isfinite(hi)):
            lo, hi = -1.0, 1.0
        x = rng.uniform(lo, hi) if hi > lo else lo
        if joint.type is JointType.PRISMATIC:
            Rj, pj = np.eye(3), joint.axis * x
        else:
            Rj, pj = exp3(joint.axis * x), np.zeros(3)
    R, p = R0 @ Rj, p + R0 @ pj  # the moving frame in the parent frame
    Y = np.zeros((6, 6))
    Y[0:3, 0:3] = R.T
    Y[0:3, 3:6] = -R.T @ skew(p)
    Y[3:6, 3:6] = R.T
    return Y


def _vanishes(D: np.ndarray, Dc: np.ndarray) -> bool:
    """Whether the articulated inertia ``D`` about a joint's motion vanishes next to the composite
    inertia ``Dc`` about it (generalized eigenvalues of ``(D, Dc)`` in [0, 1], after scaling)."""
    d = np.sqrt(np.clip(np.diag(Dc), 0.0, None))
    if not np.all(d > 0.0):
        return True
    N = 1.0 / np.outer(d, d)
    Cn, Dn = Dc * N, D * N
    if np.linalg.eigvalsh(Cn).min() <= MASSLESS_TOLERANCE:
        return True
    Linv = np.linalg.inv(np.linalg.cholesky(Cn))
    return bool(np.linalg.eigvalsh(Linv @ Dn @ Linv.T).min() <= MASSLESS_TOLERANCE)


@_per_model
def massless_joints(model: Model) -> tuple[str, ...]:
    """The joints whose motion moves no mass, in model order: those at which the articulated-body
    algorithm would divide by zero, so ``M(q)`` is singular at every configuration.

    A joint qualifies when its articulated inertia about its motion subspace ``D = Sᵀ Iᴬ S``
    vanishes (relative to the composite inertia ``Sᵀ Iᶜ S``, :data:`MASSLESS_TOLERANCE`): a joint
    whose subtree is massless, a point mass on its own axis, a prismatic joint moving inertia but
    no mass, a joint coaxial with a child that carries everything, a free-flyer on a massless link.
    Evaluated once per model at a generic configuration (a fixed pseudo-random one within the
    limits): a joint that moves mass somewhere moves it almost everywhere, and the configurations
    where it does not are singular configurations of the mechanism, like any other.
    """
    rng = np.random.default_rng(0x5EED)
    n = model.njoints
    IA = [np.array(I, dtype=float) for I in model.inertias]
    Ic = [I.copy() for I in IA]
    found = []
    for i in range(n - 1, 0, -1):
        joint = model.joints[i]
        S = motion_subspace(joint)
        U = IA[i] @ S
        D = S.T @ U
        if _vanishes(D, S.T @ Ic[i] @ S):
            found.append(i)
            Ia = IA[i]  # D = 0 with Iᴬ PSD means U = 0: nothing to remove
        else:
            Ia = IA[i] - U @ np.linalg.solve(D, U.T)
        Y = _parent_to_child(joint, rng)
        IA[joint.parent] += Y.T @ Ia @ Y
        Ic[joint.parent] += Y.T @ Ic[i] @ Y
    return tuple(model.joints[i].name for i in sorted(found))


def invertible_dynamics(model: Model, what: str) -> None:
    """Raise :class:`~wbc.errors.ModelError` when ``model`` has joints that move no mass, so that
    ``what`` (something that needs ``M⁻¹``) is undefined; name them and say how to lock them."""
    names = massless_joints(model)
    if not names:
        return
    shown = ", ".join(repr(n) for n in names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
    example = ", ".join(f"{n!r}: 0.0" for n in names[:2])
    raise ModelError(
        f"model {model.name!r}: {what} needs M(q)⁻¹, but joint{'s' if len(names) > 1 else ''} {shown} "
        f"move{'' if len(names) > 1 else 's'} no mass (zero inertia about {'their' if len(names) > 1 else 'its'} "
        "motion), so M(q) is singular. Kinematics, Jacobians, tasks, CRBA and RNEA work on this model; for the "
        f"dynamics, lock those joints: wbc.lock_joints(model, {{{example}{', ...' if len(names) > 2 else ''}}})"
    )
