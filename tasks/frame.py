"""Frame tasks: 6D pose, 3D position of a point, 3D orientation (world-aligned axes)."""

from __future__ import annotations

from collections.abc import Sequence

import casadi as ca
import numpy as np

from wbc.algorithms.constraints import PointConstraint, WeldConstraint, resolve
from wbc.control.step_context import StepContext
from wbc.control.target_call import TargetArgument, TargetLayout
from wbc.control.task import Gain, Task
from wbc.errors import InputError
from wbc.model.model import Model
from wbc.numeric import frame_placement
from wbc.spatial.lie import is_rotation, log3

__all__ = ["FrameTask", "PositionTask", "OrientationTask"]

#: A transform's last row.
_LAST_ROW = np.array([0.0, 0.0, 0.0, 1.0])


class _FrameTaskBase(Task):
    """A task on one frame; its default name is ``<kind>_<frame>``, e.g. ``"frame_left_sole_link"``.
    A kind gives its rows (the task's ``dim``) and ``target_size`` as class attributes."""

    rows: int

    def __init__(
        self, frame: str, weight: Gain = 1.0, kp: Gain = 0.0, kd: Gain | None = None, name: str | None = None
    ) -> None:
        if not isinstance(frame, str) or not frame:
            raise InputError(f"{type(self).__name__}: frame must be a frame name, got {frame!r}")
        self.frame = frame
        super().__init__(self.rows, weight, kp, kd, name)

    def default_name(self) -> str:
        return f"{super().default_name()}_{self.frame}"

    def check(self, model: Model) -> None:
        model.frame_id(self.frame)

    def _matrix(self, value, shape: tuple[int, int], expected: str) -> np.ndarray:
        """``value`` as a float array of ``shape``, else an InputError naming the task and saying ``expected``."""
        try:
            M = np.asarray(value, float)
        except (TypeError, ValueError):
            raise InputError(f"task {self.name!r}: {expected}, got {value!r}") from None
        if M.shape != shape:
            raise InputError(f"task {self.name!r}: {expected}, got shape {M.shape}")
        return M

    def _check_rotation(self, check: _RotationCheck) -> None:
        if not check.is_rotation():
            raise InputError(
                f"task {self.name!r}: expected a rotation matrix (3, 3), orthonormal with determinant +1, "
                f"got {check.matrix.tolist()}"
            )

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

    rows = 6
    target_size = 12  # position (3) and rotation columns (9)
    target_name = "placement"

    def set_target(self, placement, velocity=None, acceleration=None) -> None:
        """Target ``placement`` (4, 4) in the world; optional spatial ``velocity``/``acceleration`` (6,).

        The target parameters (:meth:`set_target_parameters`) are the position (3,) and the
        rotation's columns (9,)."""
        staging = self._staging or self._make_staging()
        p, R, _ = self._views
        try:
            if placement.shape != (4, 4):
                raise TypeError
            np.copyto(p, placement[0:3, 3])
            np.copyto(R, placement[0:3, 0:3])
            last = placement[3]
        except (AttributeError, TypeError, ValueError):
            T = self._matrix(placement, (4, 4), "placement must be a (4, 4) transform")
            staging[0][:] = np.concatenate([T[0:3, 3], T[0:3, 0:3].reshape(-1, order="F")])
            last = T[3]
        if not np.abs(last - _LAST_ROW).max() <= 1e-9:
            raise InputError(f"task {self.name!r}: placement's last row must be [0, 0, 0, 1], got {np.asarray(last)}")
        self._commit(staging, velocity, acceleration)

    def _make_staging(self) -> tuple[np.ndarray, ...]:
        staging = super()._make_staging()
        t = staging[0]
        self._views = (t[0:3], t[3:12].reshape((3, 3), order="F"), _RotationCheck(t[3:12]))
        return staging

    def _check_target(self, target: np.ndarray) -> None:
        self._check_rotation(self._views[2])

    def _target_layout(self) -> TargetLayout:
        position = [(i, 3) for i in range(3)]
        rotation = [(i, j) for j in range(3) for i in range(3)]  # columns
        six = [(i, 0) for i in range(6)]
        return TargetLayout(
            [
                TargetArgument((4, 4), position + rotation, 0, homogeneous=True),
                TargetArgument((6,), six, 12, none_ok=True),
                TargetArgument((6,), six, 18, none_ok=True),
            ],
            rotation=3,
        )

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
        super().__init__(frame, weight, kp, kd, name)

    rows = 3
    target_size = 3

    def _constraint(self):
        return PointConstraint(self.frame, self.offset)

    target_name = "position"

    def set_target(self, position, velocity=None, acceleration=None) -> None:
        """Target ``position`` (3,) m, optional ``velocity`` (3,) and ``acceleration`` (3,)."""
        self.set_target_parameters(position, velocity, acceleration)

    def _target_layout(self) -> TargetLayout:
        return self._forwarded_layout()

    def set_target_from_configuration(self, model: Model, q) -> None:
        """Target the point's position at configuration ``q`` (nq,), at rest."""
        T = frame_placement(model, q, self.frame)
        self.set_target(T[0:3, 3] + T[0:3, 0:3] @ np.asarray(self.offset))

    def error(self, ctx: StepContext, target):
        oMf = ctx.kin.frame_placement(ctx.model.frame_id(self.frame))
        return target - (oMf.p + ca.mtimes(oMf.R, ca.DM(self.offset)))


class OrientationTask(_FrameTaskBase):
    """3D orientation of ``frame``: error ``log(R_ref Rᵀ)``, angular velocity in world axes."""

    rows = 3
    target_size = 9  # rotation columns
    target_name = "rotation"

    def set_target(self, rotation, velocity=None, acceleration=None) -> None:
        """Target ``rotation`` (3, 3), optional angular ``velocity``/``acceleration`` (3,), world axes.

        The target parameters (:meth:`set_target_parameters`) are the rotation's columns (9,)."""
        staging = self._staging or self._make_staging()
        try:
            if rotation.shape != (3, 3):
                raise TypeError
            np.copyto(self._views[0], rotation)
        except (AttributeError, TypeError, ValueError):
            staging[0][:] = self._convert_target(rotation)
        self._commit(staging, velocity, acceleration)

    def _make_staging(self) -> tuple[np.ndarray, ...]:
        staging = super()._make_staging()
        self._views = (staging[0].reshape((3, 3), order="F"), _RotationCheck(staging[0]))
        return staging

    def _convert_target(self, target) -> np.ndarray:
        return self._matrix(target, (3, 3), "expected a rotation matrix (3, 3)").reshape(-1, order="F")

    def _check_target(self, target: np.ndarray) -> None:
        self._check_rotation(self._views[1])

    def _target_layout(self) -> TargetLayout:
        three = [(i, 0) for i in range(3)]
        return TargetLayout(
            [
                TargetArgument((3, 3), [(i, j) for j in range(3) for i in range(3)], 0),
                TargetArgument((3,), three, 9, none_ok=True),
                TargetArgument((3,), three, 12, none_ok=True),
            ],
            rotation=0,
        )

    def set_target_from_configuration(self, model: Model, q) -> None:
        """Target the frame's orientation at configuration ``q`` (nq,), at rest."""
        self.set_target(frame_placement(model, q, self.frame)[0:3, 0:3])

    def measure(self, ctx: StepContext):
        J, drift, v = super().measure(ctx)
        return J[3:6, :], drift[3:6], v[3:6]

    def error(self, ctx: StepContext, target):
        oMf = ctx.kin.frame_placement(ctx.model.frame_id(self.frame))
        return log3(ca.mtimes(ca.reshape(target, 3, 3), oMf.R.T))


class _RotationCheck:
    """Whether 9 staged numbers (a rotation's columns, column-major) are a rotation: ``‖RᵀR − I‖``
    and ``det R − 1`` within :func:`~wbc.spatial.lie.is_rotation`'s tolerance, in plain float
    arithmetic (cheaper than numpy's calls on a 3 × 3 matrix); a borderline matrix is decided by
    ``is_rotation`` itself."""

    def __init__(self, columns: np.ndarray) -> None:
        self.columns = columns
        self.matrix = columns.reshape((3, 3), order="F")

    def is_rotation(self) -> bool:
        a0, a1, a2, b0, b1, b2, c0, c1, c2 = self.columns.tolist()
        aa, bb, cc = (
            a0 * a0 + a1 * a1 + a2 * a2 - 1.0,
            b0 * b0 + b1 * b1 + b2 * b2 - 1.0,
            c0 * c0 + c1 * c1 + c2 * c2 - 1.0,
        )
        ab, ac, bc = a0 * b0 + a1 * b1 + a2 * b2, a0 * c0 + a1 * c1 + a2 * c2, b0 * c0 + b1 * c1 + b2 * c2
        gram = aa * aa + bb * bb + cc * cc + 2.0 * (ab * ab + ac * ac + bc * bc)  # ‖RᵀR − I‖²_F
        det = c0 * (a1 * b2 - a2 * b1) + c1 * (a2 * b0 - a0 * b2) + c2 * (a0 * b1 - a1 * b0)
        if gram <= 1e-12 and abs(det - 1.0) <= 1e-6:
            return True
        return is_rotation(self.matrix)
