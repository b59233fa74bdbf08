"""Joint posture task on the actuated joints (the independent joints of a clustered model)."""

from __future__ import annotations

import math

import casadi as ca
import numpy as np

from wbc.control.step_context import StepContext
from wbc.control.target_call import TargetLayout
from wbc.control.task import Gain, Task
from wbc.errors import InputError
from wbc.model import checks
from wbc.model.clusters import ClusterModel
from wbc.model.configuration import neutral
from wbc.model.model import JointType, Model
from wbc.spatial.lie import log3, quaternion_to_rotation

__all__ = ["PostureTask"]


class PostureTask(Task):
    """Track a joint configuration on the actuated joints (one row per actuated degree of freedom).

    The target is a full configuration ``q_ref`` (nq,); the error is joint-wise ``q_ref ⊖ q``
    (the shortest angle for continuous joints; for a ball joint the rotation vector
    ``log₃(R(q)ᵀ R(q_ref))`` (3,), in its child frame like its velocity: an error on SO(3), exact
    at any angle, as ``wbc.difference``). Default name ``"posture"``.

    On a clustered model (:class:`~wbc.ClusterModel`) the rows are its independent coordinates but
    a free-flyer's (a linkage-driven ankle's pitch and roll, not its cranks or rods), and the target
    is a spanning configuration ``y_ref`` (tree.nq), e.g. from ``cm.spanning_configuration``.

    Until a target is set it is the model's neutral configuration (``wbc.neutral``: revolute and
    prismatic joints at zero, ball joints at the identity), a reference posture that needs no call.
    """

    needs_target = False

    def __init__(
        self,
        model: Model | ClusterModel,
        weight: Gain = 1.0,
        kp: Gain = 0.0,
        kd: Gain | None = None,
        name: str | None = None,
    ) -> None:
        self._model = model
        if isinstance(model, ClusterModel):
            tree = model.tree
            joints = [
                tree.joints[j] for j in model.independent_joints if tree.joints[j].type is not JointType.FREE_FLYER
            ]
            self._tree, self._nv = tree, model.nv
            self._v_indices = np.asarray(model.actuated_v_indices)
        else:
            joints = [model.joints[i] for i in model.actuated]
            self._tree, self._nv = model, model.nv
            self._v_indices = np.asarray(model.actuated_v_indices)
        self._joints = joints
        super().__init__(int(self._v_indices.size), weight, kp, kd, name)
        self._params[: self.target_size] = neutral(self._tree)

    def default_name(self) -> str:
        return "posture"

    @property
    def target_size(self) -> int:
        return self._tree.nq

    def check(self, model: Model | ClusterModel) -> None:
        if isinstance(model, ClusterModel) or isinstance(self._model, ClusterModel):
            if model is not self._model:
                raise InputError(f"task {self.name!r} was built for another model")
            return
        if model.nq != self._model.nq or model.actuated != self._model.actuated:
            raise InputError(f"task {self.name!r} was built for another model (nq or actuation differs)")

    target_name = "configuration"

    def set_target(self, q, velocity=None, acceleration=None) -> None:
        """Target configuration ``q`` (nq,) (a spanning configuration for a clustered model), optional
        joint velocity / acceleration (dim,)."""
        self.set_target_parameters(q, velocity, acceleration)

    def _make_staging(self) -> tuple[np.ndarray, ...]:
        staging = super()._make_staging()
        self._unit_parts = [staging[0][start:stop] for start, stop, _, _ in checks.unit_parts(self._tree)]
        return staging

    def _target_layout(self) -> TargetLayout:
        parts = [(start, stop) for start, stop, _, _ in checks.unit_parts(self._tree)]
        return self._forwarded_layout()._replace(unit_parts=parts)

    def _check_target(self, target: np.ndarray) -> None:
        for part in self._unit_parts:  # quaternions and (cos, sin) pairs: unit norm
            if abs(math.sqrt(part.dot(part)) - 1.0) > checks.UNIT_TOLERANCE:
                checks.configuration(self._tree, target.copy(), f"task {self.name!r}: target")  # names the joint

    def set_target_from_configuration(self, model: Model | ClusterModel, q) -> None:
        """Target configuration ``q`` itself, at rest."""
        self.check(model)
        self.set_target(q)

    def measure(self, ctx: StepContext):
        act = self._v_indices
        S = np.zeros((self.dim, self._nv))
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
            elif j.type is JointType.SPHERICAL:
                R = quaternion_to_rotation(q[j.idx_q : j.idx_q + 4])
                R_ref = quaternion_to_rotation(target[j.idx_q : j.idx_q + 4])
                parts.append(log3(ca.mtimes(R.T, R_ref)))
            else:
                parts.append(target[j.idx_q : j.idx_q + j.nq] - q[j.idx_q : j.idx_q + j.nq])
        return ca.vertcat(*parts)
