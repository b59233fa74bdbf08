"""The task interface: what a task is to the controller.

A task contributes one :class:`~wbc.control.pieces.Cost` piece: ``dim`` weighted least-squares rows
in the inputs ``u = (τ, f)``,

    minimize ‖ W^½ (A_u u + d − ẍ*) ‖²,   ẍ* = ẍ_ref + K_d (ẋ_ref − ẋ) + K_p e,

where ``ẍ = A_u u + d`` is the task acceleration as a function of the inputs (by default
``A_u = J B̂`` and ``d = J a₀ + J̇ v``, since ``q̈ = a₀ + B̂ u``), ``e`` the task error and ``ẋ`` the
task velocity. References, gains and weights are kernel *parameters*: the compiled kernel reads
them from the task's own parameter array every step, so changing them never recompiles, and the
controller never writes to the task.

Concrete tasks live in :mod:`wbc.tasks`. A new task subclasses :class:`Task` and implements
:attr:`Task.target_size`, :meth:`Task.measure` and :meth:`Task.error` (plus :meth:`Task.input_rows`
when it knows a cheaper exact map than ``J B̂``, and :meth:`Task.set_target_from_configuration`).

Parameter layout of a task (its slice of the controller's parameter vector)::

    [ target (target_size) | ẋ_ref (dim) | ẍ_ref (dim) | K_p (dim) | K_d (dim) | √w (dim) ]
"""

from __future__ import annotations

import abc
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import casadi as ca
import numpy as np

from ..errors import InputError
from ..model.model import Model
from .contributor import Contributor, Runtime
from .pieces import Cost, Group, Kind

if TYPE_CHECKING:
    from .step_context import StepContext

__all__ = ["Task", "Gain"]

Gain = float | Sequence[float] | np.ndarray


def _per_axis(value: Gain, dim: int, what: str, name: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"task {name!r}: {what} must be numbers, got {value!r}") from None
    if arr.ndim == 0:
        arr = np.full(dim, float(arr))
    if arr.shape != (dim,):
        raise InputError(f"task {name!r}: {what} must be a scalar or have {dim} entries, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise InputError(f"task {name!r}: {what} must be finite and non-negative, got {arr}")
    return arr


class Task(Contributor):
    """Base class of all tasks (see the module docstring).

    Args:
        dim: number of task rows.
        weight: scalar or per-axis weight (dim,) of the rows in the cost.
        kp: proportional gain(s), 1/s².
        kd: derivative gain(s), 1/s; default ``2 √kp`` (critically damped).
        name: a readable name; default derived from the class (and frame), e.g. ``"com"``.
    """

    def __init__(self, dim: int, weight: Gain = 1.0, kp: Gain = 0.0, kd: Gain | None = None, name: str | None = None):
        if not isinstance(dim, int) or dim < 1:
            raise InputError(f"a task needs a positive integer dimension, got {dim!r}")
        self.dim = dim
        self.name = name if name is not None else self.default_name()
        if not isinstance(self.name, str) or not self.name:
            raise InputError(f"a task name must be a non-empty string, got {self.name!r}")
        self._params_storage: np.ndarray | None = None
        self._owner: weakref.ref | None = None
        self._priority = 0
        self.set_gains(kp, kd)
        self.set_weight(weight)

    def default_name(self) -> str:
        """The name used when none is given: the class name without ``Task``, lower case."""
        return type(self).__name__.removesuffix("Task").lower() or "task"

    # ----------------------------------------------------------------------------- to override
    @property
    @abc.abstractmethod
    def target_size(self) -> int:
        """Number of parameters that describe the target (e.g. 3 for a position)."""

    @abc.abstractmethod
    def measure(self, ctx: StepContext):
        """``(J, drift, velocity)``: Jacobian (dim, nv), ``J̇ v`` (dim, 1) and ``ẋ = J v`` (dim, 1)."""

    @abc.abstractmethod
    def error(self, ctx: StepContext, target) -> Any:
        """The task error ``e`` (dim, 1) towards ``target`` (target_size, 1), e.g. ``x_ref − x``."""

    def input_rows(self, ctx: StepContext, J, drift):
        """``(A_u, d)`` with task acceleration ``ẍ = A_u u + d``; default ``(J B̂, J a₀ + J̇ v)``."""
        return ca.mtimes(J, ctx.Bhat), ca.mtimes(J, ctx.a0) + drift

    def set_target_from_configuration(self, model: Model, q) -> None:
        """Set the target to what the task measures at configuration ``q`` (nq,), at rest."""
        raise NotImplementedError(f"{type(self).__name__} has no target to take from a configuration")

    # ----------------------------------------------------------------------------- parameters
    @property
    def _params(self) -> np.ndarray:
        """The task's parameter vector (parameter_size,), allocated on first use (sizes are known
        only once the subclass is fully built)."""
        if self._params_storage is None:
            self._params_storage = np.zeros(self.parameter_size)
            self.set_gains(*self._gains)
            self.set_weight(self._weight)
        return self._params_storage

    @property
    def parameter_size(self) -> int:
        return self.target_size + 5 * self.dim

    def parameters(self, runtime: Runtime) -> np.ndarray:
        return self._params

    def _slice(self, k: int) -> slice:
        start = self.target_size + k * self.dim
        return slice(start, start + self.dim)

    @property
    def target(self) -> np.ndarray:
        """The target parameters (target_size,) (a copy)."""
        return self._params[: self.target_size].copy()

    def _set_target_parameters(self, values) -> None:
        try:
            values = np.asarray(values, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise InputError(f"task {self.name!r}: target must be {self.target_size} numbers, got {values!r}") from None
        if values.shape != (self.target_size,) or not np.all(np.isfinite(values)):
            raise InputError(
                f"task {self.name!r}: target must be {self.target_size} finite numbers, got shape {values.shape}"
            )
        self._params[: self.target_size] = values

    def set_reference_velocity(self, velocity) -> None:
        """Velocity feed-forward ``ẋ_ref`` (dim,)."""
        self._params[self._slice(0)] = self._vector(velocity, "reference velocity")

    def set_reference_acceleration(self, acceleration) -> None:
        """Acceleration feed-forward ``ẍ_ref`` (dim,)."""
        self._params[self._slice(1)] = self._vector(acceleration, "reference acceleration")

    def set_gains(self, kp: Gain, kd: Gain | None = None) -> None:
        """Set ``K_p`` (1/s²) and ``K_d`` (1/s), scalar or per axis; ``K_d`` defaults to ``2 √K_p``."""
        kp_arr = _per_axis(kp, self.dim, "kp", self.name)
        kd_arr = 2.0 * np.sqrt(kp_arr) if kd is None else _per_axis(kd, self.dim, "kd", self.name)
        self._gains = (kp_arr, kd_arr)
        if self._params_storage is not None:
            self._params[self._slice(2)] = kp_arr
            self._params[self._slice(3)] = kd_arr

    def set_weight(self, weight: Gain) -> None:
        """Set the weight(s) of the task rows in the cost (scalar or per axis, ≥ 0)."""
        w = _per_axis(weight, self.dim, "weight", self.name)
        self._weight = w
        if self._params_storage is not None:
            self._params[self._slice(4)] = np.sqrt(w)

    @property
    def priority(self) -> int:
        """The task's level in a strict hierarchy: 0 (default) the highest; see :meth:`set_priority`."""
        return self._priority

    def set_priority(self, level: int) -> None:
        """Put the task at hierarchy ``level`` (an integer ≥ 0; 0 the highest).

        Tasks of one level are weighted against each other; a lower level never changes what a higher
        one obtains (:mod:`wbc.control.hierarchy`). The controller that owns the task re-traces its
        kernel on its next step (the compiled code is the same: it comes from the disk cache).
        """
        if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or level < 0:
            raise InputError(f"task {self.name!r}: priority must be an integer >= 0, got {level!r}")
        if int(level) == self._priority:
            return
        self._priority = int(level)
        owner = self._owner() if self._owner is not None else None
        if owner is not None:
            owner._invalidate()

    @property
    def kp(self) -> np.ndarray:
        return self._params[self._slice(2)].copy()

    @property
    def kd(self) -> np.ndarray:
        return self._params[self._slice(3)].copy()

    @property
    def weight(self) -> np.ndarray:
        return self._params[self._slice(4)] ** 2

    def _vector(self, value, what: str) -> np.ndarray:
        try:
            arr = np.asarray(value, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise InputError(f"task {self.name!r}: {what} must be {self.dim} numbers, got {value!r}") from None
        if arr.shape != (self.dim,) or not np.all(np.isfinite(arr)):
            raise InputError(f"task {self.name!r}: {what} must be {self.dim} finite numbers, got shape {arr.shape}")
        return arr

    # ----------------------------------------------------------------------------- ownership
    def _claim(self, controller: object) -> None:
        """Record that ``controller`` uses this task; a task serves one controller at a time."""
        owner = self._owner() if self._owner is not None else None
        if owner is not None and owner is not controller:
            raise InputError(
                f"task {self.name!r} already belongs to another controller; remove it there first "
                "(controller.remove_task) or create a second task"
            )
        self._owner = weakref.ref(controller)

    def _release(self) -> None:
        self._owner = None

    # ----------------------------------------------------------------------------- the piece
    def pieces(self, ctx: StepContext, p) -> list[Cost]:
        """The task's weighted rows from its parameters ``p`` (parameter_size, 1) (traced)."""
        ts, d = self.target_size, self.dim
        target = p[0:ts]
        vel_ref, acc_ref = p[ts : ts + d], p[ts + d : ts + 2 * d]
        kp, kd, sw = p[ts + 2 * d : ts + 3 * d], p[ts + 3 * d : ts + 4 * d], p[ts + 4 * d : ts + 5 * d]
        J, drift, velocity = self.measure(ctx)
        e = self.error(ctx, target)
        desired = acc_ref + kd * (vel_ref - velocity) + kp * e
        A_u, d0 = self.input_rows(ctx, J, drift)
        return [
            Cost(
                ca.mtimes(ca.diag(sw), A_u),
                sw * (desired - d0),
                Group(Kind.TASK, self.name),
                error=e,
                priority=self._priority,
            )
        ]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dim={self.dim})"
