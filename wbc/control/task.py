"""The task interface: what a task is to the controller.

A task contributes one :class:`~wbc.control.pieces.Cost` piece (an
:class:`~wbc.control.pieces.AccelerationCost` when its Jacobian selects joints, as a posture's: the
same rows, assembled from the kernel's ``B̂`` outside it): ``dim`` weighted least-squares rows in the
inputs ``u = (τ, f)``,

    minimize ‖ W^½ (A_u u + d − ẍ*) ‖²,   ẍ* = ẍ_ref + K_d (ẋ_ref − ẋ) + K_p e,

where ``ẍ = A_u u + d`` is the task acceleration as a function of the inputs (by default
``A_u = J B̂`` and ``d = J a₀ + J̇ v``, since ``q̈ = a₀ + B̂ u``), ``e`` the task error and ``ẋ`` the
task velocity. References, gains and weights are kernel *parameters*: the compiled kernel reads
them from the task's own parameter array every step, so changing them never recompiles, and the
controller never writes to the task.

Concrete tasks live in :mod:`wbc.tasks`. A new task subclasses :class:`Task` and implements
:attr:`Task.target_size`, :meth:`Task.measure` and :meth:`Task.error` (plus :meth:`Task.input_rows`
when it knows a cheaper exact map than ``J B̂``, and :meth:`Task.set_target_from_configuration`).
``measure`` and ``error`` receive CasADi symbols (they are traced once, into the controller's
kernel): compute with ``casadi`` (``ca.mtimes``, ``ca.vertcat``, ...), not numpy, on them.

Targets at the speed of the step: :meth:`Task.set_target_parameters` (which every ``set_target``
calls) copies the target, velocity and acceleration into a staging buffer (a shape check and a copy
per argument), checks all of them at once for finiteness (one dot product), lets the task check the
target (:meth:`Task._check_target`: a rotation, unit quaternions) and copies the buffer into the
parameters the kernel reads: all or nothing (a refused target leaves the task as it was), with an
:class:`~wbc.errors.InputError` naming the task and the argument. After its first successful call,
a task whose class describes its ``set_target`` (:meth:`Task._target_layout`) gets the same steps
in one C call as its own ``set_target`` (:mod:`wbc.control.target_call`: under a microsecond), which
hands anything unusual back to the Python method; a subclass overriding any of the methods
involved keeps the Python path.

Parameter layout of a task (its slice of the controller's parameter vector)::

    [ target (target_size) | ẋ_ref (dim) | ẍ_ref (dim) | K_p (dim) | K_d (dim) | √w (dim) ]
"""

from __future__ import annotations

import abc
import traceback
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import casadi as ca
import numpy as np

from ..errors import InputError, WbcError
from ..model.checks import UNIT_TOLERANCE
from ..model.model import Model
from .contributor import Contributor, Runtime
from .pieces import AccelerationCost, Cost, Group, Kind
from .target_call import TargetArgument, TargetLayout, target_call

if TYPE_CHECKING:
    from .step_context import StepContext

__all__ = ["Task", "Gain", "unready_tasks"]

Gain = float | Sequence[float] | np.ndarray

_INF = float("inf")


def _stage(buffer: np.ndarray, value) -> None:
    """Copy the feed-forward ``value`` into ``buffer`` (zeros for None); TypeError, AttributeError or
    ValueError for anything but an array of ``buffer``'s shape (the caller then converts it)."""
    if value is None:
        buffer.fill(0.0)
    elif value.shape != buffer.shape:
        raise TypeError
    else:
        np.copyto(buffer, value)


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
        self._staging: tuple[np.ndarray, ...] | None = None
        self._target_call_tried = False
        self._target_given = False
        self._owner: weakref.ref | None = None
        self._priority = 0
        self.set_gains(kp, kd)
        self.set_weight(weight)

    def default_name(self) -> str:
        """The name used when none is given: the class name without ``Task``, lower case."""
        return type(self).__name__.removesuffix("Task").lower() or "task"

    # ----------------------------------------------------------------------------- to override
    #: Whether the controller's first step refuses the task until a target is set: its zero target
    #: means nothing (a frame at the world origin, a matrix of zeros for a rotation). False where
    #: zero is a target (no momentum).
    needs_target: bool = True

    @property
    def target_given(self) -> bool:
        """Whether a target was set (``set_target``, ``set_target_parameters``, ...)."""
        return getattr(self, "_target_given", True)  # (True for a task pickled before the flag)

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

    def set_target_parameters(self, target, velocity=None, acceleration=None) -> None:
        """Set the target parameters ``target`` (target_size,), the velocity feed-forward ``ẋ_ref``
        (dim,) and the acceleration feed-forward ``ẍ_ref`` (dim,) (None: zero) at once.

        What a task's ``set_target`` calls (see the module docstring: about a microsecond with
        float arrays of these shapes); anything else is converted, or refused with an
        :class:`~wbc.errors.InputError` naming the task and the argument, and the task keeps its
        previous target.
        """
        staging = self._staging or self._make_staging()
        t = staging[0]
        try:
            if target.shape != t.shape:
                raise TypeError
            np.copyto(t, target)
        except (AttributeError, TypeError, ValueError):
            t[:] = self._numbers(target, self.target_size, self.target_name)
        self._commit(staging, velocity, acceleration)

    def _commit(self, staging: tuple[np.ndarray, ...], velocity, acceleration) -> None:
        """Stage the feed-forwards next to the staged target, check everything once, copy it where
        the kernel reads it (nothing when anything is refused)."""
        t, v, a, stage, live = staging
        try:
            _stage(v, velocity)
            _stage(a, acceleration)
        except (AttributeError, TypeError, ValueError):
            v[:] = np.zeros(self.dim) if velocity is None else self._numbers(velocity, self.dim, "velocity")
            a[:] = np.zeros(self.dim) if acceleration is None else self._numbers(acceleration, self.dim, "acceleration")
        if not stage.dot(stage) < _INF:
            self._refuse_non_finite()
        self._check_target(t)
        np.copyto(live, stage)
        self._target_given = True
        if not self._target_call_tried:
            self._install_target_call()

    # ----------------------------------------------------------------------------- set_target in C
    #: Derived state a fingerprint of the task leaves out (the staging buffer, the compiled setter).
    _fingerprint_skip = ("set_target", "_staging", "_views", "_unit_parts", "_target_call_tried", "_target_given")

    #: The methods a task's compiled ``set_target`` stands for: overridden outside wbc, it is not used.
    _TARGET_METHODS = (
        "set_target",
        "set_target_parameters",
        "_commit",
        "_check_target",
        "_convert_target",
        "_make_staging",
        "_target_layout",
    )

    def _target_layout(self) -> TargetLayout | None:
        """What this class's ``set_target`` does with its positional arguments (see
        :mod:`wbc.control.target_call`), or None (the Python path only). A class defining
        ``set_target`` defines this too, or gets no compiled ``set_target``."""
        return None

    def _forwarded_layout(self) -> TargetLayout:
        """The layout of a ``set_target(target, velocity=None, acceleration=None)`` that forwards
        its arguments to :meth:`set_target_parameters`."""
        ts, d = self.target_size, self.dim
        return TargetLayout(
            [
                TargetArgument((ts,), [(i, 0) for i in range(ts)], 0),
                TargetArgument((d,), [(i, 0) for i in range(d)], ts, none_ok=True),
                TargetArgument((d,), [(i, 0) for i in range(d)], ts + d, none_ok=True),
            ]
        )

    def _install_target_call(self) -> None:
        """Make the compiled ``set_target`` this task's own (once; see the module docstring)."""
        self._target_call_tried = True
        cls = type(self)
        definer = next((c for c in cls.__mro__ if "set_target" in c.__dict__), None)
        if definer is None or "_target_layout" not in definer.__dict__:
            return
        for name in self._TARGET_METHODS:
            method = getattr(cls, name, None)
            module = getattr(method, "__module__", None) or ""
            if method is not None and not (module == "wbc" or module.startswith("wbc.")):
                return
        layout = self._target_layout()
        if layout is None or self._staging is None:
            return
        _, _, _, stage, live = self._staging
        call = target_call(layout, stage, live, cls.set_target.__get__(self), UNIT_TOLERANCE)  # type: ignore[attr-defined]
        if call is not None:
            self.__dict__["set_target"] = call

    def __getstate__(self) -> dict:
        """Copies and pickles leave out the staging buffer (views of the parameters) and the
        compiled ``set_target`` bound to it: they are made again on first use."""
        state = self.__dict__.copy()
        for name in ("set_target", "_views", "_unit_parts"):
            state.pop(name, None)
        state["_staging"] = None
        state["_target_call_tried"] = False
        return state

    #: What the target is called in error messages (``"position"``, ``"rotation"``, ...).
    target_name = "target"

    def _check_target(self, target: np.ndarray) -> None:
        """Raise an :class:`~wbc.errors.InputError` naming the task when the staged ``target``
        (target_size,) (finite) is not a valid target; nothing by default."""

    def _set_target_parameters(self, values) -> None:
        """Set the target parameters alone (target_size,), the feed-forwards unchanged."""
        v, a = self._params[self._slice(0)].copy(), self._params[self._slice(1)].copy()
        self.set_target_parameters(values, v, a)

    def _make_staging(self) -> tuple[np.ndarray, ...]:
        """Views ``(target, velocity, acceleration)`` of a staging buffer, the buffer, and the
        parameters it is copied into (target, ẋ_ref, ẍ_ref: contiguous)."""
        ts, d = self.target_size, self.dim
        stage = np.zeros(ts + 2 * d)
        self._staging = (stage[:ts], stage[ts : ts + d], stage[ts + d :], stage, self._params[: ts + 2 * d])
        return self._staging

    def _numbers(self, value, n: int, what: str) -> np.ndarray:
        """``value`` as (n,) floats, or an InputError naming the task and ``what``."""
        if np.iscomplexobj(value):
            raise InputError(f"task {self.name!r}: {what} must be real numbers, got complex values")
        try:
            arr = np.asarray(value, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise InputError(f"task {self.name!r}: {what} must be {n} numbers, got {value!r}") from None
        if arr.shape != (n,):
            raise InputError(f"task {self.name!r}: {what} must be {n} numbers, got shape {arr.shape}")
        return arr

    def _refuse_non_finite(self) -> None:
        """Name the staged argument that is not finite (returns when all are: an overflow of the check)."""
        names = (self.target_name, "velocity", "acceleration")
        for into, what in zip(self._staging or self._make_staging(), names):
            if not np.all(np.isfinite(into)):
                raise InputError(
                    f"task {self.name!r}: {what} must be finite numbers, got non-finite entries at "
                    f"{np.flatnonzero(~np.isfinite(into)).tolist()}"
                )

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
    def pieces(self, ctx: StepContext, p) -> list[Cost | AccelerationCost]:
        """The task's weighted rows from its parameters ``p`` (parameter_size, 1) (traced): an
        :class:`~wbc.control.pieces.AccelerationCost` when ``J`` selects joints (each row one 1, the
        drift zero, :meth:`input_rows` not overridden: ``A_u = B̂[joints]``, assembled outside the
        kernel), a :class:`~wbc.control.pieces.Cost` otherwise."""
        ts, d = self.target_size, self.dim
        target = p[0:ts]
        vel_ref, acc_ref = p[ts : ts + d], p[ts + d : ts + 2 * d]
        kp, kd, sw = p[ts + 2 * d : ts + 3 * d], p[ts + 3 * d : ts + 4 * d], p[ts + 4 * d : ts + 5 * d]
        J, drift, velocity, e = self._measured(ctx, target)
        desired = acc_ref + kd * (vel_ref - velocity) + kp * e
        joints = _selected_joints(J, drift) if type(self).input_rows is Task.input_rows else None
        if joints is not None:
            group = Group(Kind.TASK, self.name)
            return [AccelerationCost(joints, sw, desired, group, error=e, priority=self._priority)]
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

    def _measured(self, ctx: StepContext, target) -> tuple:
        """``measure(ctx)`` and ``error(ctx, target)``, their shapes checked: an InputError naming the
        task, the method and the shape expected (rather than CasADi's dimension error further on)."""
        d, nv = self.dim, ctx.model.nv if ctx.kin.v is None else ctx.kin.v.shape[0]
        measured = self._traced("measure", ctx)
        if not isinstance(measured, (tuple, list)) or len(measured) != 3:
            raise InputError(
                f"task {self.name!r}: measure() must return (J, drift, velocity), got {type(measured).__name__}"
            )
        J = _shaped(measured[0], (d, nv), self.name, "measure", "J")
        drift = _shaped(measured[1], (d, 1), self.name, "measure", "drift J̇v")
        velocity = _shaped(measured[2], (d, 1), self.name, "measure", "velocity Jv")
        e = _shaped(self._traced("error", ctx, target), (d, 1), self.name, "error", "the error")
        return J, drift, velocity, e

    def _traced(self, method: str, *args):
        try:
            return getattr(self, method)(*args)
        except WbcError:
            raise
        except (TypeError, ValueError, AttributeError, IndexError, NotImplementedError, RuntimeError) as e:
            raise InputError(f"task {self.name!r}: {method}() failed: {type(e).__name__}: {e}{_numpy_hint(e)}") from e

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dim={self.dim})"


def unready_tasks(tasks: Sequence[Task]) -> tuple[list[str], list[str]]:
    """The names of the ``tasks`` that need a target and were never given one, and of those that
    need one and have no gains (``kp = kd = 0``): what a controller's first step checks, in one call
    (attributes only: the step's path enters this module once)."""
    missing, no_gains = [], []
    for t in tasks:
        if t.needs_target:
            if not t.target_given:
                missing.append(t.name)
            kp, kd = t._gains
            if not (kp.any() or kd.any()):
                no_gains.append(t.name)
    return missing, no_gains


def _selected_joints(J, drift) -> tuple[int, ...] | None:
    """The velocity index each row of ``J`` selects when ``J`` (dim, nv) is constant with one 1 per
    row and the drift is a constant zero (``ẍ = q̈[joints]``), else None."""
    if not all(isinstance(x, ca.DM) or (isinstance(x, ca.SX) and x.is_constant()) for x in (J, drift)):
        return None
    J_, drift_ = (np.array(ca.evalf(ca.SX(x)), dtype=float) for x in (J, drift))
    nonzero = J_ != 0
    if np.any(drift_ != 0) or np.any(nonzero.sum(axis=1) != 1):
        return None
    columns = np.argmax(nonzero, axis=1)
    if np.any(J_[np.arange(J_.shape[0]), columns] != 1.0):
        return None
    return tuple(int(c) for c in columns)


def _shaped(value, shape: tuple[int, int], task: str, method: str, what: str):
    """``value`` (CasADi, or numbers taken as a constant) of ``shape``; a vector may come as (n,)."""
    if isinstance(value, (ca.SX, ca.MX, ca.DM)):
        got = value.shape
    else:
        try:
            array = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise InputError(
                f"task {task!r}: {method}() returned {what} as {type(value).__name__}; expected a CasADi "
                f"expression of shape {shape}{_NUMPY_HINT}"
            ) from None
        if array.ndim == 1 and shape[1] == 1:
            array = array.reshape(-1, 1)
        got, value = array.shape, ca.DM(array) if array.ndim == 2 else value
    if got != shape:
        raise InputError(f"task {task!r}: {method}() returned {what} of shape {tuple(got)}, expected {shape}")
    return value


_NUMPY_HINT = (
    "; measure() and error() receive CasADi symbols (they are traced once into the controller's kernel): "
    "compute with casadi (ca.mtimes, ca.vertcat, ca.norm_2, ca.cross, ...), not numpy"
)


def _numpy_hint(error: BaseException) -> str:
    """The hint about CasADi symbols when ``error`` came from numpy (or from converting a symbol)."""
    frames = traceback.extract_tb(error.__traceback__)
    from_numpy = any("/numpy/" in f.filename or "\\numpy\\" in f.filename for f in frames)
    return _NUMPY_HINT if from_numpy or "numpy" in str(error) or "Implicit conversion" in str(error) else ""
