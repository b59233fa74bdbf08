"""Joint velocity limits as bounds on the joint accelerations ``q̈ = a₀ + B̂u``.

Over one control period ``Δ`` the command's acceleration ``a`` is held, so the next velocity is
``v⁺ = v + Δ a`` (exactly, whatever the integrator of the position). Keeping ``|v⁺| ≤ v̄`` (``v̄``
the limit shrunk by a relative margin) is the pair of bounds ``(−v̄ − v)/Δ ≤ a ≤ (v̄ − v)/Δ``. When
the joint already moves faster than ``v̄`` (a push, a model error), returning inside in one period
could ask for any acceleration; the bounds then ask for at most the braking acceleration ``ā``::

    U_v = max((v̄ − v)/Δ, −ā),    L_v = min((−v̄ − v)/Δ, ā).

``L_v ≤ U_v`` always (clamping only widens), and ``[L_v, U_v]`` always meets ``[−ā, ā]``, so these
rows never make the QP infeasible by themselves; with ``|v| ≤ v̄`` they hold at ``a = 0``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import casadi as ca
import numpy as np

from ...errors import InputError
from ...model.clusters import ClusterModel
from ...model.model import Joint, Model
from ..pieces import AccelerationBounds, Group, Kind
from .joint_limit import JointLimit
from .joint_selection import JointLimitParameters, joint_velocities, positive_per_joint, select_joints, state_indices

if TYPE_CHECKING:
    from ..step_context import StepContext

__all__ = ["JointVelocityLimit", "velocity_bounds", "DEFAULT_VELOCITY_MARGIN", "DEFAULT_BRAKING"]

#: Default relative margin of the velocity limits (the bounds keep ``|v| ≤ (1 − margin) v_max``).
DEFAULT_VELOCITY_MARGIN = 0.05
#: Default braking acceleration ``ā`` of the joint limits, rad/s² (m/s² for prismatic joints).
DEFAULT_BRAKING = 10.0


def _has_velocity_limit(joint: Joint) -> bool:
    return bool(np.isfinite(joint.velocity[0]))


def velocity_bounds(v, v_bar, braking, dt) -> tuple:
    """``(L_v, U_v)``: the acceleration bounds that keep ``|v| ≤ v̄`` (see the module docstring).

    Args:
        v: joint velocities (n, 1). v_bar: velocity limits with their margin (n, 1).
        braking: ``ā`` (n, 1). dt: the control period ``Δ``, s.
    """
    upper = ca.fmax((v_bar - v) / dt, -braking)
    lower = ca.fmin((-v_bar - v) / dt, braking)
    return lower, upper


class JointVelocityLimit(JointLimit):
    """Keep joint velocities within their limits (rows on ``q̈ = a₀ + B̂u``; see the module docstring).

    Args:
        joints: joint names; default every actuated 1-dof joint whose URDF gives a velocity limit
            (joints without one get no rows).
        margin: relative margin: the bounds keep ``|v| ≤ (1 − margin) v_max`` (0 ≤ margin < 1).
        braking: ``ā``, rad/s² (m/s² for prismatic joints), scalar or per joint: the largest
            acceleration asked to bring a joint moving faster than its limit back.
        velocity_limit: the limits ``v_max`` (per joint), default the URDF's.
        name: a readable name (default ``"joint_velocity_limit"``).

    The limits, margin and braking are kernel parameters: :meth:`set_margin` and :meth:`set_braking`
    never recompile. The rows' group is ``Group(Kind.JOINT_VELOCITY_LIMIT, name)``.
    """

    def __init__(
        self,
        joints: Sequence[str] | None = None,
        margin: float = DEFAULT_VELOCITY_MARGIN,
        braking=DEFAULT_BRAKING,
        velocity_limit=None,
        name: str = "joint_velocity_limit",
    ) -> None:
        super().__init__(joints, braking, velocity_limit, name, 2)
        self._margin = _fraction(margin, name)

    def check(self, model: Model | ClusterModel) -> None:
        joints = select_joints(model, self._names, _has_velocity_limit, "velocity limit", self.name)
        n = len(joints)
        limit = np.array([j.velocity[0] for j in joints], dtype=float)
        if self._velocity_request is not None:
            limit = positive_per_joint(self._velocity_request, n, "velocity_limit", self.name, allow_zero=True)
        braking = positive_per_joint(self._braking_request, n, "braking", self.name)
        self.joints = tuple(joints)
        self._v_indices = state_indices(model, joints)[1]
        self._v_max = limit
        self._p = JointLimitParameters(n, 2)
        self._p.block(0)[:] = (1.0 - self._margin) * limit
        self._p.block(1)[:] = braking

    @property
    def limit(self) -> np.ndarray:
        """``(1 − margin) v_max`` per joint (n,), a copy."""
        return self._p.block(0).copy()

    def set_margin(self, margin: float) -> None:
        """Relative margin in [0, 1) (no recompilation)."""
        self._margin = _fraction(margin, self.name)
        if self.joints:
            self._p.block(0)[:] = (1.0 - self._margin) * self._v_max

    def set_braking(self, braking) -> None:
        """``ā`` (scalar or per joint), rad/s² (no recompilation)."""
        self._braking_request = braking
        if self.joints:
            self._p.block(1)[:] = positive_per_joint(braking, len(self.joints), "braking", self.name)

    def pieces(self, ctx: StepContext, p) -> list[AccelerationBounds]:
        n = len(self.joints)
        if n == 0:
            return []
        dt, (v_bar, braking) = JointLimitParameters.split(p, n, 2)
        idx = self.indices.tolist()
        lower, upper = velocity_bounds(joint_velocities(ctx)[idx], v_bar, braking, dt)
        return [AccelerationBounds(tuple(idx), lower, upper, Group(Kind.JOINT_VELOCITY_LIMIT, self.name))]


def _fraction(margin, owner: str) -> float:
    try:
        value = float(margin)
    except (TypeError, ValueError):
        raise InputError(f"{owner}: margin must be a number in [0, 1), got {margin!r}") from None
    if not 0.0 <= value < 1.0:
        raise InputError(f"{owner}: margin must be a number in [0, 1), got {margin!r}")
    return value
