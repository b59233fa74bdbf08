"""Centre-of-mass task."""

from __future__ import annotations

import casadi as ca
import numpy as np

from wbc.control.step_context import StepContext
from wbc.control.task import Gain, Task
from wbc.errors import InputError
from wbc.model.model import Model
from wbc.numeric import center_of_mass

__all__ = ["CoMTask"]

_AXES = {"x": 0, "y": 1, "z": 2}


class CoMTask(Task):
    """Track a centre-of-mass position (world frame) on the selected axes.

    Args:
        axes: the controlled axes, e.g. ``"xyz"`` (default) or ``"xy"``.
        weight, kp, kd, name: see :class:`wbc.control.task.Task` (default name ``"com"``).

    For a floating base the task acceleration is taken from Newton's law, ``m c̈ = Σ f + m g``
    (internal torques cannot move the CoM): exact, and cheaper than ``J_com B̂``.
    """

    def __init__(
        self, axes: str = "xyz", weight: Gain = 1.0, kp: Gain = 0.0, kd: Gain | None = None, name: str | None = None
    ) -> None:
        if not isinstance(axes, str) or not axes or any(a not in _AXES for a in axes) or len(set(axes)) != len(axes):
            raise InputError(f"CoMTask axes must be distinct letters among 'xyz', got {axes!r}")
        self.axes = [_AXES[a] for a in axes]
        super().__init__(len(self.axes), weight, kp, kd, name)

    def default_name(self) -> str:
        return "com"

    @property
    def target_size(self) -> int:
        return self.dim

    target_name = "position"

    def set_target(self, position, velocity=None, acceleration=None) -> None:
        """Target CoM ``position`` (3,) m, with optional ``velocity`` (3,) m/s and ``acceleration`` (3,) m/s²."""
        if self.dim == 3:  # every axis: the arrays as given
            self.set_target_parameters(position, velocity, acceleration)
            return
        self.set_target_parameters(
            self._select(position, "position"),
            None if velocity is None else self._select(velocity, "velocity"),
            None if acceleration is None else self._select(acceleration, "acceleration"),
        )

    def set_target_from_configuration(self, model: Model, q) -> None:
        """Target the CoM of configuration ``q`` (nq,), at rest."""
        self.set_target(center_of_mass(model, q))

    def _select(self, value, what: str) -> np.ndarray:
        try:
            arr = np.asarray(value, float).reshape(-1)
        except (TypeError, ValueError):
            raise InputError(f"task {self.name!r}: CoM {what} must be 3 numbers, got {value!r}") from None
        if arr.shape != (3,):
            raise InputError(f"task {self.name!r}: CoM {what} must have 3 entries, got {arr.shape}")
        return arr[self.axes]

    def measure(self, ctx: StepContext):
        J = ctx.kin.com_jacobian()[self.axes, :]
        return J, ctx.kin.com_drift()[self.axes], ca.mtimes(J, ctx.kin.v)

    def error(self, ctx: StepContext, target):
        return target - ctx.kin.center_of_mass()[self.axes]

    def input_rows(self, ctx: StepContext, J, drift):
        if not ctx.model.floating_base:
            return super().input_rows(ctx, J, drift)
        mass = ctx.kin.total_mass
        A = ca.SX(len(self.axes), ctx.n_u)
        for cols, W in ctx.contact_wrenches:
            A[:, cols] = W[self.axes, :] / mass
        return A, ca.DM(np.asarray(ctx.model.gravity)[self.axes])
