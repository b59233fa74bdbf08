"""The task interface: what a task is to the controller.

A task produces, inside the compiled kernel, ``dim`` weighted least-squares rows in the inputs
``u = (τ, f)``:

    minimize ‖ W^½ (A_u u + d − ẍ*) ‖²,   ẍ* = ẍ_ref + K_d (ẋ_ref − ẋ) + K_p e

where ``ẍ = A_u u + d`` is the task acceleration as a function of the inputs (by default
``A_u = J B̂`` and ``d = J a₀ + J̇ v``, since ``q̈ = a₀ + B̂ u``), ``e`` the task error and ``ẋ`` the
task velocity. References, gains and weights are kernel *inputs* (a parameter vector the task
writes into), so changing them never recompiles.

Concrete tasks live in the top-level ``tasks`` package; a new task subclasses :class:`Task` and
implements :meth:`Task.target_size`, :meth:`Task.measure` and :meth:`Task.error` (plus
:meth:`Task.input_rows` when it knows a cheaper exact map than ``J B̂``).

Parameter layout of a task (its slice of the controller's parameter vector)::

    [ target (target_size) | ẋ_ref (dim) | ẍ_ref (dim) | K_p (dim) | K_d (dim) | √w (dim) ]
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

import casadi as ca
import numpy as np

from ..algorithms.kinematics import TreeKinematics
from ..errors import InputError
from ..model.model import Model

__all__ = ["Task", "TaskContext", "TaskRows", "Gain"]

Gain = float | Sequence[float] | np.ndarray
_ids = itertools.count()


@dataclasses.dataclass
class TaskContext:
    """What a task may use when it builds its rows (all CasADi expressions of the kernel inputs).

    Attributes:
        model: the robot model.
        kin: kinematics of the current state (``kin.q``, ``kin.v``).
        a0: free acceleration ``−M⁻¹ h`` (nv, 1).
        Bhat: ``M⁻¹ B`` (nv, n_u); columns: actuated joints, then every declared contact's force variables.
        n_u: number of inputs.
        contact_wrenches: per declared contact, ``(columns, W)``: the input columns of its force
            variables and ``W`` (6, k), the world wrench about the world origin per unit variable.
    """

    model: Model
    kin: TreeKinematics
    a0: object
    Bhat: object
    n_u: int
    contact_wrenches: list


@dataclasses.dataclass
class TaskRows:
    """A task's contribution: weighted rows ``A u ≈ b`` (dim, n_u), (dim,), and its error (dim,)."""

    A: object
    b: object
    error: object


def _per_axis(value: Gain, dim: int, what: str, name: str) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0:
        arr = np.full(dim, float(arr))
    if arr.shape != (dim,):
        raise InputError(f"task {name!r}: {what} must be a scalar or have {dim} entries, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise InputError(f"task {name!r}: {what} must be finite and non-negative, got {arr}")
    return arr


class Task:
    """Base class of all tasks (see the module docstring).

    Args:
        dim: number of task rows.
        weight: scalar or per-axis weight (dim,) of the rows in the cost.
        kp: proportional gain(s), 1/s².
        kd: derivative gain(s), 1/s; default ``2 √kp`` (critically damped).
        name: a readable name (default: class name and a number).
    """

    def __init__(
        self, dim: int, weight: Gain = 1.0, kp: Gain = 0.0, kd: Gain | None = None, name: str | None = None
    ) -> None:
        self.dim = dim
        self.name = name or f"{type(self).__name__.lower()}{next(_ids)}"
        self._params = np.zeros(self.parameter_size)
        self._bound = False
        self.set_gains(kp, kd)
        self.set_weight(weight)

    # ----------------------------------------------------------------------------- to override
    @property
    def target_size(self) -> int:
        """Number of parameters that describe the target (e.g. 3 for a position)."""
        raise NotImplementedError

    def measure(self, ctx: TaskContext):
        """``(J, drift, velocity)``: Jacobian (dim, nv), ``J̇ v`` (dim, 1) and ``ẋ = J v`` (dim, 1)."""
        raise NotImplementedError

    def error(self, ctx: TaskContext, target) -> object:
        """The task error ``e`` (dim, 1) towards ``target`` (target_size, 1), e.g. ``x_ref − x``."""
        raise NotImplementedError

    def input_rows(self, ctx: TaskContext, J, drift):
        """``(A_u, d)`` with task acceleration ``ẍ = A_u u + d``; default ``(J B̂, J a₀ + J̇ v)``."""
        return ca.mtimes(J, ctx.Bhat), ca.mtimes(J, ctx.a0) + drift

    def check(self, model: Model) -> None:
        """Raise a clear error if the task does not fit ``model`` (unknown frame, ...)."""

    # ----------------------------------------------------------------------------- parameters
    @property
    def parameter_size(self) -> int:
        return self.target_size + 5 * self.dim

    def _slice(self, k: int) -> slice:
        start = self.target_size + k * self.dim
        return slice(start, start + self.dim)

    @property
    def target(self) -> np.ndarray:
        """The target parameters (target_size,) (a copy)."""
        return self._params[: self.target_size].copy()

    def _set_target_parameters(self, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=float).reshape(-1)
        if values.shape != (self.target_size,) or not np.all(np.isfinite(values)):
            raise InputError(
                f"task {self.name!r}: target must be {self.target_size} finite numbers, got {values.shape}"
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
        self._params[self._slice(2)] = kp_arr
        self._params[self._slice(3)] = kd_arr

    def set_weight(self, weight: Gain) -> None:
        """Set the weight(s) of the task rows in the cost (scalar or per axis, ≥ 0)."""
        self._params[self._slice(4)] = np.sqrt(_per_axis(weight, self.dim, "weight", self.name))

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
        arr = np.asarray(value, dtype=float).reshape(-1)
        if arr.shape != (self.dim,) or not np.all(np.isfinite(arr)):
            raise InputError(f"task {self.name!r}: {what} must be {self.dim} finite numbers, got shape {arr.shape}")
        return arr

    def _bind(self, view: np.ndarray) -> None:
        """Make the controller's parameter vector slice ``view`` the storage of this task's parameters."""
        view[:] = self._params
        self._params = view
        self._bound = True

    def _unbind(self) -> None:
        self._params = self._params.copy()
        self._bound = False

    # ----------------------------------------------------------------------------- the rows
    def rows(self, ctx: TaskContext, p) -> TaskRows:
        """The weighted rows of this task from its parameters ``p`` (parameter_size, 1) (traced)."""
        ts, d = self.target_size, self.dim
        target = p[0:ts]
        vel_ref, acc_ref = p[ts : ts + d], p[ts + d : ts + 2 * d]
        kp, kd, sw = p[ts + 2 * d : ts + 3 * d], p[ts + 3 * d : ts + 4 * d], p[ts + 4 * d : ts + 5 * d]
        J, drift, velocity = self.measure(ctx)
        e = self.error(ctx, target)
        desired = acc_ref + kd * (vel_ref - velocity) + kp * e
        A_u, d0 = self.input_rows(ctx, J, drift)
        return TaskRows(ca.mtimes(ca.diag(sw), A_u), sw * (desired - d0), e)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dim={self.dim})"
