"""Frame tasks: 6D pose, 3D position of a point, 3D orientation (world-aligned axes)."""

from __future__ import annotations

from collections.abc import Sequence

import casadi as ca
import numpy as np

from wbc.algorithms.constraints import PointConstraint, WeldConstraint, resolve
from wbc.control.step_context import StepContext
from wbc.control.task import Gain, Task
from wbc.errors import InputError
from wbc.model.model import Model
from wbc.numeric import frame_placement
from wbc.spatial.lie import is_rotation, log3

__all__ = ["FrameTask", "PositionTask", "OrientationTask"]


class _FrameTaskBase(Task):
    """A task on one frame; its default name is ``<kind>_<frame>``, e.g. ``"frame_left_sole_link"``."""

    def __init__(self, frame: str, dim: int, weight: Gain, kp: Gain, kd: Gain | None, name: str | None) -> None:
        if not isinstance(frame, str) or not frame:
            raise InputError(f"{type(self).__name__}: frame must be a frame name, got {frame!r}")
        self.frame = frame
        super().__init__(dim, weight, kp, kd, name)

    def default_name(self) -> str:
        return f"{super().default_name()}_{self.frame}"

    def check(self, model: Model) -> None:
        model.frame_id(self.frame)

    def _rotation(self, value) -> np.ndarray:
        try:
            R = np.asarray(value, float)
        except (TypeError, ValueError):
            raise InputError(f"task {self.name!r}: expected a rotation matrix (3, 3), got {value!r}") from None
        if not is_rotation(R):
            raise InputError(
                f"task {self.name!r}: expected a rotation matrix (3, 3), orthonormal with determinant +1, got {R}"
            )
        return R

    def _constraint(self):
        return WeldConstraint(self.frame)

    def measure(self, ctx: StepContext):
        c = resolve(ctx.model, [self._constraint()])[0]
        J = c.jacobian(ctx.kin)
        return J, c.drift(ctx.kin), ca.mtimes(J, ctx.kin.v)


class FrameTask(_FrameTaskBase):
    """6D pose of ``frame``: rows [position; orientation], world axes (``LOCAL_WORLD_ALIGNED``).

    Error ``[p_ref − p; log(R_ref Rᵀ)]``; velocities and accelerations are linear (of the frame
    origin) and angular, world axes.
    """

    def __init__(
        self, frame: str, weight: Gain = 1.0, kp: Gain = 0.0, kd: Gain | None = None, name: str | None = None
    ) -> None:
        super().__init__(frame, 6, weight, kp, kd, name)

    @property
    def target_size(self) -> int:
        return 12

    def set_target(self, placement, velocity=None, acceleration=None) -> None:
        """Target ``placement`` (4, 4) in the world; optional spatial ``velocity``/``acceleration`` (6,)."""
        try:
            T = np.asarray(placement, float)
        except (TypeError, ValueError):
            raise InputError(f"task {self.name!r}: placement must be a (4, 4) transform, got {placement!r}") from None
        if T.shape != (4, 4):
            raise InputError(f"task {self.name!r}: placement must be a (4, 4) transform, got shape {T.shape}")
        self._set_target_parameters(np.concatenate([T[0:3, 3], self._rotation(T[0:3, 0:3]).reshape(-1, order="F")]))
        self.set_reference_velocity(np.zeros(6) if velocity is None else velocity)
        self.set_reference_acceleration(np.zeros(6) if acceleration is None else acceleration)

    def set_target_from_configuration(self, model: Model, q) -> None:
        """Target the frame's placement at configuration ``q`` (nq,), at rest."""
        self.set_target(frame_placement(model, q, self.frame))

    def error(self, ctx: StepContext, target):
        oMf = ctx.kin.frame_placement(ctx.model.frame_id(self.frame))
        R_ref = ca.reshape(target[3:12], 3, 3)
        return ca.vertcat(target[0:3] - oMf.p, log3(ca.mtimes(R_ref, oMf.R.T)))


class PositionTask(_FrameTaskBase):
    """3D position of the point ``offset`` (m, in ``frame``), world axes."""

    def __init__(
        self,
        frame: str,
        offset: Sequence[float] = (0.0, 0.0, 0.0),
        weight: Gain = 1.0,
        kp: Gain = 0.0,
        kd: Gain | None = None,
        name: str | None = None,
    ) -> None:
        off = np.asarray(offset, dtype=float).reshape(-1)
        if off.shape != (3,) or not np.all(np.isfinite(off)):
            raise InputError(f"PositionTask({frame!r}): offset must be 3 finite numbers, got {offset!r}")
        self.offset = tuple(float(x) for x in off)
        super().__init__(frame, 3, weight, kp, kd, name)

    @property
    def target_size(self) -> int:
        return 3

    def _constraint(self):
        return PointConstraint(self.frame, self.offset)

    def set_target(self, position, velocity=None, acceleration=None) -> None:
        """Target ``position`` (3,) m, optional ``velocity`` (3,) and ``acceleration`` (3,)."""
        self._set_target_parameters(position)
        self.set_reference_velocity(np.zeros(3) if velocity is None else velocity)
        self.set_reference_acceleration(np.zeros(3) if acceleration is None else acceleration)

    def set_target_from_configuration(self, model: Model, q) -> None:
        """Target the point's position at configuration ``q`` (nq,), at rest."""
        T = frame_placement(model, q, self.frame)
        self.set_target(T[0:3, 3] + T[0:3, 0:3] @ np.asarray(self.offset))

    def error(self, ctx: StepContext, target):
        oMf = ctx.kin.frame_placement(ctx.model.frame_id(self.frame))
        return target - (oMf.p + ca.mtimes(oMf.R, ca.DM(self.offset)))


class OrientationTask(_FrameTaskBase):
    """3D orientation of ``frame``: error ``log(R_ref Rᵀ)``, angular velocity in world axes."""

    def __init__(
        self, frame: str, weight: Gain = 1.0, kp: Gain = 0.0, kd: Gain | None = None, name: str | None = None
    ) -> None:
        super().__init__(frame, 3, weight, kp, kd, name)

    @property
    def target_size(self) -> int:
        return 9

    def set_target(self, rotation, velocity=None, acceleration=None) -> None:
        """Target ``rotation`` (3, 3), optional angular ``velocity``/``acceleration`` (3,), world axes."""
        self._set_target_parameters(self._rotation(rotation).reshape(-1, order="F"))
        self.set_reference_velocity(np.zeros(3) if velocity is None else velocity)
        self.set_reference_acceleration(np.zeros(3) if acceleration is None else acceleration)

    def set_target_from_configuration(self, model: Model, q) -> None:
        """Target the frame's orientation at configuration ``q`` (nq,), at rest."""
        self.set_target(frame_placement(model, q, self.frame)[0:3, 0:3])

    def measure(self, ctx: StepContext):
        J, drift, v = super().measure(ctx)
        return J[3:6, :], drift[3:6], v[3:6]

    def error(self, ctx: StepContext, target):
        oMf = ctx.kin.frame_placement(ctx.model.frame_id(self.frame))
        return log3(ca.mtimes(ca.reshape(target, 3, 3), oMf.R.T))
