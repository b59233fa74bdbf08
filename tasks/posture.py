"""Joint posture task on the actuated joints."""

from __future__ import annotations

import casadi as ca
import numpy as np

from wbc.control.context import StepContext
from wbc.control.task import Gain, Task
from wbc.errors import InputError
from wbc.model import checks
from wbc.model.model import JointType, Model

__all__ = ["PostureTask"]


class PostureTask(Task):
    """Track a joint configuration on the actuated joints (one row per actuated degree of freedom).

    The target is a full configuration ``q_ref`` (nq,); the error is joint-wise ``q_ref ⊖ q``
    (the shortest angle for continuous joints). Default name ``"posture"``.
    """

    def __init__(
        self, model: Model, weight: Gain = 1.0, kp: Gain = 0.0, kd: Gain | None = None, name: str | None = None
    ) -> None:
        self._model = model
        self._joints = [model.joints[i] for i in model.actuated]
        super().__init__(model.n_actuated, weight, kp, kd, name)

    def default_name(self) -> str:
        return "posture"

    @property
    def target_size(self) -> int:
        return self._model.nq

    def check(self, model: Model) -> None:
        if model.nq != self._model.nq or model.actuated != self._model.actuated:
            raise InputError(f"task {self.name!r} was built for another model (nq or actuation differs)")

    def set_target(self, q, velocity=None, acceleration=None) -> None:
        """Target configuration ``q`` (nq,), optional joint velocity / acceleration (n_actuated,)."""
        self._set_target_parameters(checks.configuration(self._model, q, f"task {self.name!r}: target"))
        zeros = np.zeros(self.dim)
        self.set_reference_velocity(zeros if velocity is None else velocity)
        self.set_reference_acceleration(zeros if acceleration is None else acceleration)

    def set_target_from_configuration(self, model: Model, q) -> None:
        """Target configuration ``q`` itself, at rest."""
        self.check(model)
        self.set_target(q)

    def measure(self, ctx: StepContext):
        act = ctx.model.actuated_v_indices
        S = np.zeros((self.dim, ctx.model.nv))
        S[np.arange(self.dim), act] = 1.0
        return ca.DM(S), ca.DM.zeros(self.dim, 1), ctx.kin.v[act.tolist()]

    def error(self, ctx: StepContext, target):
        q = ctx.kin.q
        parts = []
        for j in self._joints:
            if j.type is JointType.REVOLUTE_UNBOUNDED:
                c, s = q[j.idx_q], q[j.idx_q + 1]
                cr, sr = target[j.idx_q], target[j.idx_q + 1]
                parts.append(ca.atan2(c * sr - s * cr, c * cr + s * sr))
            else:
                parts.append(target[j.idx_q : j.idx_q + j.nq] - q[j.idx_q : j.idx_q + j.nq])
        return ca.vertcat(*parts)
