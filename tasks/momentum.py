"""Centroidal momentum task."""

from __future__ import annotations

import casadi as ca
import numpy as np

from wbc.control.step_context import StepContext
from wbc.control.target_call import TargetArgument, TargetLayout
from wbc.control.task import Gain, Task
from wbc.model.model import Model

__all__ = ["MomentumTask"]


class MomentumTask(Task):
    """Regulate the centroidal momentum (about the CoM, world axes): angular, optionally linear too.

    Rows are ``[linear; angular]`` (or angular only). The desired rate is
    ``ḣ* = ḣ_ref + K_p (h_ref − h)``: the target is a momentum ``h_ref`` (kg m/s, kg m²/s), ``kp`` the
    damping rate (1/s); ``kd`` is unused. For a floating base the rate comes from the contact
    wrenches about the CoM plus gravity (exact, cheaper than ``A_g B̂``). Default name
    ``"momentum"`` (``"angular_momentum"`` without the linear part). Its target is zero momentum
    until one is set.
    """

    needs_target = False

    def __init__(self, linear: bool = False, weight: Gain = 1.0, kp: Gain = 0.0, name: str | None = None) -> None:
        self.linear = bool(linear)
        self.rows_ = [0, 1, 2, 3, 4, 5] if linear else [3, 4, 5]
        super().__init__(len(self.rows_), weight, kp, 0.0, name)

    def default_name(self) -> str:
        return "momentum" if self.linear else "angular_momentum"

    @property
    def target_size(self) -> int:
        return self.dim

    target_name = "momentum"

    def set_target(self, momentum=None, rate=None) -> None:
        """Target momentum ``h_ref`` (dim,), default zero, and rate feed-forward ``ḣ_ref`` (dim,)."""
        self.set_target_parameters(self._zero if momentum is None else momentum, None, rate)

    def _target_layout(self) -> TargetLayout:
        d = self.dim
        rows = [(i, 0) for i in range(d)]
        momentum, rate = TargetArgument((d,), rows, 0, none_ok=True), TargetArgument((d,), rows, 2 * d, none_ok=True)
        return TargetLayout([momentum, rate])  # the velocity feed-forward stays zero

    @property
    def _zero(self) -> np.ndarray:
        return np.zeros(self.dim)

    def set_target_from_configuration(self, model: Model, q) -> None:
        """At rest in any configuration the momentum is zero: target zero momentum and rate."""
        self.set_target()

    def measure(self, ctx: StepContext):
        Ag = ctx.kin.centroidal_map()[self.rows_, :]
        return Ag, ctx.kin.centroidal_drift()[self.rows_], ca.DM.zeros(self.dim, 1)

    def error(self, ctx: StepContext, target):
        return target - ctx.kin.centroidal_momentum()[self.rows_]

    def input_rows(self, ctx: StepContext, J, drift):
        if not ctx.model.floating_base:
            return super().input_rows(ctx, J, drift)
        c = ctx.kin.center_of_mass()
        A = ca.SX(6, ctx.n_u)
        for cols, W in ctx.contact_wrenches:
            A[0:3, cols] = W[0:3, :]
            A[3:6, cols] = W[3:6, :] - ca.mtimes(ca.skew(c), W[0:3, :])
        g = np.concatenate([ctx.kin.total_mass * np.asarray(ctx.model.gravity), np.zeros(3)])
        return A[self.rows_, :], ca.DM(g[self.rows_])
