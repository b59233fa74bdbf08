"""Validation of user inputs: sizes, finiteness, unit quaternions, frame names.

Every public entry point runs its arguments through these before any algorithm sees them, so
bad input becomes an :class:`~wbc.errors.InputError` (a ``ValueError``) or a
:class:`~wbc.errors.FrameError` naming the argument, never a crash or a silent NaN.
"""

from __future__ import annotations

import enum
import functools
from typing import Any, TypeVar

import numpy as np

from ..errors import InputError
from .model import JointType, Model

__all__ = ["UNIT_TOLERANCE", "vector", "configuration", "velocity", "frame_index", "option"]

#: How far from 1 the norm of a free-flyer quaternion or of a continuous joint's (cos, sin) may be.
UNIT_TOLERANCE = 1e-6


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


@functools.lru_cache(maxsize=64)
def _unit_parts(model: Model) -> tuple[tuple[int, int, str, str], ...]:
    """(start, stop, joint name, what) of every slice of q that must have unit norm."""
    parts = []
    for j in model.joints[1:]:
        if j.type is JointType.FREE_FLYER:
            parts.append((j.idx_q + 3, j.idx_q + 7, j.name, "quaternion"))
        elif j.type is JointType.REVOLUTE_UNBOUNDED:
            parts.append((j.idx_q, j.idx_q + 2, j.name, "(cos, sin) pair"))
    return tuple(parts)


def configuration(model: Model, q: Any, name: str = "q") -> np.ndarray:
    """A valid configuration (nq,): right size, finite, unit quaternions and (cos, sin) pairs."""
    q = vector(q, model.nq, name)
    for start, stop, joint, what in _unit_parts(model):
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
    """The index of ``frame`` (a frame name); :class:`~wbc.errors.FrameError` if unknown."""
    return model.frame_id(frame)


E = TypeVar("E", bound=enum.Enum)


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
