r"""Joint position limits as viability bounds on the joint accelerations ``q̈ = a₀ + B̂u``.

A bound on the acceleration of the next period only (``q⁺ ≤ q_max``) lets a joint arrive at its
limit too fast to stop: the next step then needs more deceleration than the actuators have, and the
QP becomes infeasible. The bounds here keep every joint in a *viable* state, one from which braking
at a given acceleration ``ā`` stops it before its limit; they are always compatible with the
velocity limits (:mod:`.joint_velocity`) and never empty, including for a robot started outside
its limits. (The idea of viability-based bounds is Del Prete's, "Joint position and velocity bounds
in discrete-time acceleration/torque control of robot manipulators", RA-L 2018; the derivation below
is this module's own.)

Derivation (one joint, the upper side; the lower side is the mirror image)
--------------------------------------------------------------------------
Notation: position ``q``, velocity ``v``, acceleration ``a`` held over the control period ``Δ``;
URDF limit ``q_max``; effective limit ``q̄ = q_max − m`` (``m`` the margin); braking acceleration
``ā > 0``, an acceleration the joint can always produce (it is what the bounds count on, not a
limit on the joint's acceleration). Over one period ``v⁺ = v + Δa`` and
``q⁺ = q + Δv + θΔ²a``, with ``θ = ½`` for an exact (constant-acceleration) integration and
``θ = 1`` for semi-implicit Euler (MuJoCo's); every bound is taken as the smaller of its values at
``θ = ½`` and ``θ = 1``, so it holds for both.

*Viable set.* ``V = {q ≤ q̄ and (v ≤ 0 or v² ≤ 2ā(q̄ − q))}``: braking at ``ā`` from a state of
``V`` stops the joint before ``q̄``.

*The bound.* Ask the next state to be in ``V``. Write ``x = v⁺`` for the next velocity, so that
``q⁺ = q + (1 − θ)Δv + θΔx``, and let ``r = q̄ − q − (1 − θ)Δv``. Then

* for ``x > 0``: ``x² ≤ 2ā(q̄ − q⁺) = 2ā(r − θΔx)``, i.e. ``x² + 2cx − 2ār ≤ 0`` with
  ``c = āθΔ``: ``x ≤ x_in = −c + √(c² + 2ā r)`` (which needs ``r ≥ 0``);
* for ``x ≤ 0``: ``q⁺ ≤ q̄``, i.e. ``x ≤ r/(θΔ)``, implied by ``x ≤ 0`` when ``r ≥ 0``.

Since ``√`` is concave, ``x_in ≤ ār/c = r/(θΔ)``; so the next velocity is bounded by
``x_max = min(x_in(max(r, 0)), r/(θΔ))``, which is ``x_in ≥ 0`` when ``r ≥ 0`` and ``r/(θΔ) < 0``
otherwise; and ``a ≤ U = (x_max − v)/Δ``.

*It never empties from a viable state* (``(q, v) ∈ V``, ``|v| ≤ v̄``): if ``v ≥ āΔ``, ``a = −ā``
gives ``x = v − āΔ ≥ 0`` and ``x² ≤ 2ā(r − θΔx)`` reduces to ``v² ≤ 2ā(q̄ − q) + (2θ − 1)ā²Δ²``,
true for ``θ ≥ ½``. If ``0 < v < āΔ``, ``a = −(v + s)/Δ`` with ``s = max(0, (½Δv − (q̄ − q))/(½Δ))``
gives ``q⁺ ≤ q̄`` for both ``θ``; since ``q̄ − q ≥ v²/(2ā)``, ``s ≤ v − v²/(āΔ) ≤ āΔ/4`` and
``|a| ≤ ā``. If ``v ≤ 0``, ``a = 0`` is allowed on this side. The lower side holds at these
accelerations too (the next velocity is ``≥ −āΔ/4``, so it only needs a range wider than ``āΔ²``:
micro-radians at 1 kHz), and ``|v⁺| ≤ max(|v|, āΔ/4) ≤ v̄``: the position and velocity bounds share
an acceleration of magnitude ``≤ ā`` and the next state is again viable. By induction a joint
started in ``V`` never leaves it (up to the band below: it passes ``q̄`` by at most ``½āΔ²``).

*Outside the viable set* (a robot started outside its limits, a push, a model error) the bound
would ask for an arbitrary acceleration. Instead:

* in the margin band ``q̄ < q ≤ q_max`` the next velocity is only asked to be ``≤ 0``: the joint
  may not move further out, and is not pushed back (a gripper resting at its URDF limit stays);
* beyond ``q_max`` by ``δ`` it is asked to be ``≤ −√(2āδ)``: the joint returns along the braking
  curve and reaches ``q_max`` in finite time;

that is ``x_max = min(x_in, max(r/(θΔ), −√(2ā max(q − q_max, 0))))``, and at most ``ā`` is ever
asked for: ``U = max((x_max − v)/Δ, −ā)``. Finally, so that the position bounds ``[L, U]`` and the
velocity bounds ``[L_v, U_v]`` (same ``v̄``, ``ā``, ``Δ``) always intersect — they do on viable
states, where these clamps are inactive — the position bounds give way outside:
``U ← max(U, L_v)``, ``L ← min(L, U_v)``, ``L ← min(L, U)``.

Ball joints
-----------
A ball joint's limit is a cone on its rotation angle ``θ ≤ θ_max`` (:attr:`wbc.Joint.max_angle`,
MuJoCo's ball ``range``); the same upper-side bound applies to ``θ`` with ``θ̇ = nᵀω`` and
``θ̈ = nᵀω̇ + ½cot(θ/2)|ω⊥|²`` (:mod:`.ball_cone`), one row per ball joint.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import casadi as ca
import numpy as np

from ...errors import InputError
from ...model import checks
from ...model.clusters import ClusterModel
from ...model.model import Joint, JointType, Model
from ..pieces import AccelerationBounds, Group, Inequality, Kind
from . import ball_cone
from .joint_limit import JointLimit
from .joint_selection import JointLimitParameters, joint_velocities, positive_per_joint, select_joints, state_indices
from .joint_velocity import DEFAULT_BRAKING, DEFAULT_VELOCITY_MARGIN, velocity_bounds

if TYPE_CHECKING:
    from ..step_context import StepContext

__all__ = ["JointPositionLimit", "position_bounds", "DEFAULT_POSITION_MARGIN"]

#: Default margin of the position limits, rad (m for prismatic joints); at most a quarter of a range.
DEFAULT_POSITION_MARGIN = 0.01

#: The integrators the bounds hold for: q⁺ = q + Δv + θΔ²a (θ = ½ exact, θ = 1 semi-implicit Euler).
_THETAS = (0.5, 1.0)

_BLOCKS = 6  # effective lower, effective upper, URDF lower, URDF upper, braking, velocity limit
_BALL_BLOCKS = 3  # per ball joint, after the blocks: effective limit θ̄, θ_max, braking


def _has_position_limits(joint: Joint) -> bool:
    return (
        joint.type is not JointType.REVOLUTE_UNBOUNDED
        and bool(np.isfinite(joint.lower[0]))
        and bool(np.isfinite(joint.upper[0]))
    )


def _next_velocity_bound(q, v, q_bar, q_max, braking, dt):
    """``x_max`` (n, 1): the largest next velocity that keeps the upper side viable (module docstring)."""
    floor = -ca.sqrt(2 * braking * ca.fmax(q - q_max, 0))
    bound = None
    for theta in _THETAS:
        c = braking * theta * dt
        r = q_bar - q - (1 - theta) * dt * v
        inside = -c + ca.sqrt(c * c + 2 * braking * ca.fmax(r, 0))
        x = ca.fmin(inside, ca.fmax(r / (theta * dt), floor))
        bound = x if bound is None else ca.fmin(bound, x)
    return bound


def upper_position_bound(q, v, q_upper, upper, braking, dt):
    """``U`` (n, 1): the upper side of the bounds of the module docstring, before the velocity limits
    (``q_upper = q̄``, ``upper = q_max``)."""
    return ca.fmax((_next_velocity_bound(q, v, q_upper, upper, braking, dt) - v) / dt, -braking)


def position_bounds(q, v, q_lower, q_upper, lower, upper, braking, v_bar, dt) -> tuple:
    """``(L, U)``: the acceleration bounds (n, 1) of the module docstring.

    Args:
        q, v: joint positions and velocities (n, 1).
        q_lower, q_upper: effective limits ``q̲ = q_min + m``, ``q̄ = q_max − m`` (n, 1).
        lower, upper: the URDF limits ``q_min``, ``q_max`` (n, 1).
        braking: ``ā`` (n, 1). v_bar: the velocity limits the bounds stay compatible with (n, 1).
        dt: the control period ``Δ``, s.
    """
    U = upper_position_bound(q, v, q_upper, upper, braking, dt)
    L = ca.fmin((-_next_velocity_bound(-q, -v, -q_lower, -lower, braking, dt) - v) / dt, braking)
    L_v, U_v = velocity_bounds(v, v_bar, braking, dt)
    U = ca.fmax(U, L_v)
    L = ca.fmin(ca.fmin(L, U_v), U)
    return L, U


class JointPositionLimit(JointLimit):
    """Keep joints inside their position limits (viability bounds on ``q̈ = a₀ + B̂u``; module docstring).

    Args:
        joints: joint names; default every actuated joint with finite position limits in the URDF
            (continuous joints and joints without limits get none) and every actuated ball joint with
            a cone limit (``max_angle < π``: one row on its rotation angle, :mod:`.ball_cone`).
        margin: ``m``, rad (m for prismatic joints), scalar or per joint (1-dof joints first, then
            ball joints): the bounds keep each joint in ``[q_min + m, q_max − m]`` (a ball joint's
            angle below ``max_angle − m``); at most a quarter of the joint's range is used.
        braking: ``ā``, rad/s² (m/s²), scalar or per joint: the acceleration the bounds count on to
            stop a joint or bring it back; the actuators must be able to produce it in any state.
        velocity_limit: the velocity limits the position bounds are kept compatible with, per joint;
            default those of a default :class:`~.joint_velocity.JointVelocityLimit` (the URDF's,
            less its relative margin). Use the same values and ``braking`` as the velocity limit.
        name: a readable name (default ``"joint_position_limit"``).

    Margin and braking are kernel parameters (:meth:`set_margin`, :meth:`set_braking`: no
    recompilation). The rows' group is ``Group(Kind.JOINT_POSITION_LIMIT, name)``.
    """

    def __init__(
        self,
        joints: Sequence[str] | None = None,
        margin=DEFAULT_POSITION_MARGIN,
        braking=DEFAULT_BRAKING,
        velocity_limit=None,
        name: str = "joint_position_limit",
    ) -> None:
        super().__init__(joints, braking, velocity_limit, name, _BLOCKS)
        self._margin_request = margin
        self.ball_joints: tuple[Joint, ...] = ()
        self._q_indices = np.zeros(0, dtype=int)
        self._ball_q = self._ball_v = np.zeros(0, dtype=int)
        self._ball_max = np.zeros(0)
        self._model: Model | None = None  # the (tree) model check() resolved the joints in

    def check(self, model: Model | ClusterModel) -> None:
        tree = model.tree if isinstance(model, ClusterModel) else model
        names, ball_names = self._names, None
        if names is not None:
            is_ball = {j.name for j in tree.joints if j.type is JointType.SPHERICAL}
            ball_names, names = [n for n in names if n in is_ball], [n for n in names if n not in is_ball]
        balls = ball_cone.select_ball_joints(model, ball_names, self.name)
        if ball_names is not None and len(balls) != len(set(ball_names)):
            missing = sorted(set(ball_names) - {j.name for j in balls})
            raise InputError(f"{self.name}: ball joints {missing} are not moved by the inputs of model {model.name!r}")
        joints = select_joints(model, names, _has_position_limits, "position limits", self.name)
        self._model = tree
        self.ball_joints = tuple(balls)
        self._ball_q, self._ball_v = state_indices(model, balls)
        self._ball_max = np.array([j.max_angle for j in balls], dtype=float)
        n = len(joints)
        self.joints = tuple(joints)
        self._q_indices, self._v_indices = state_indices(model, joints)
        self._lower = np.array([j.lower[0] for j in joints], dtype=float)
        self._upper = np.array([j.upper[0] for j in joints], dtype=float)
        if self._velocity_request is None:
            v_max = np.array([j.velocity[0] for j in joints], dtype=float)
            v_bar = (1.0 - DEFAULT_VELOCITY_MARGIN) * v_max
        else:
            v_bar = positive_per_joint(self._velocity_request, n, "velocity_limit", self.name, allow_zero=True)
        self._p = JointLimitParameters(n, _BLOCKS, _BALL_BLOCKS * len(balls))
        self._ball_block(1)[:] = self._ball_max
        self._p.block(2)[:] = self._lower
        self._p.block(3)[:] = self._upper
        self._p.block(5)[:] = v_bar  # may hold inf (no velocity limit): the bounds stay finite
        self.set_margin(self._margin_request)
        self.set_braking(self._braking_request)

    def inside(self, q, inset=None) -> np.ndarray:
        """``q`` (nq,) with every joint of this limit moved at least ``inset`` inside its effective
        limits ``[q_min + m, q_max − m]`` (to the middle when the range is narrower), a copy.

        Use it for posture targets. A target in the margin band (Talos's grippers rest at their URDF
        limit in ``half_sitting``) or on the effective limit itself sits on the bound's edge, where
        the joint may only stop: the posture task then pushes into the bound and it binds at every step
        (the controller solves a QP instead of taking its one-product shortcut), and the task never
        reaches its target anyway. A target ``inset`` inside leaves the bound inactive at rest.

        Args:
            q: a configuration (nq,) of the model this limit was checked against.
            inset: rad (m), scalar or per joint; default the margin ``m`` (targets in
                ``[q_min + 2m, q_max − 2m]``).

        Raises:
            InputError: the limit is not attached to a model yet (``check`` not run: a controller runs
                it), or ``q`` is not a configuration of it.
        """
        if self._model is None:
            raise InputError(f"{self.name}: inside() needs the limit attached to a model (controller or check())")
        q = checks.configuration(self._model, q).copy()
        q = self._inside_cones(q, inset)
        if not self.joints:
            return q
        lo, hi = self._p.block(0), self._p.block(1)  # the effective limits
        margin = self._upper - hi
        step = margin if inset is None else self._per_joint(inset, "inset", True)[0]
        low, high = lo + step, hi - step
        wide = low <= high
        middle = 0.5 * (lo + hi)
        low, high = np.where(wide, low, middle), np.where(wide, high, middle)
        idx = self._q_indices
        q[idx] = np.clip(q[idx], low, high)
        return q

    def _inside_cones(self, q: np.ndarray, inset) -> np.ndarray:
        """``q`` with every ball joint's angle at most its effective limit less ``inset`` (default ``m``)."""
        if not self.ball_joints:
            return q
        hi = self._ball_block(0)
        step = self._ball_max - hi if inset is None else self._per_joint(inset, "inset", True)[1]
        for k, start in enumerate(self._ball_q):
            q[start : start + 4] = ball_cone.inside_cone(q[start : start + 4], hi[k] - step[k])
        return q

    def _ball_block(self, k: int) -> np.ndarray:
        n = len(self.ball_joints)
        return self._p.extra[k * n : (k + 1) * n]

    @property
    def q_indices(self) -> np.ndarray:
        """The joints' indices in the state's ``q`` (n,) (the spanning configuration of a clustered model)."""
        return self._q_indices.copy()

    @property
    def effective_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """``(q_min + m, q_max − m)`` per joint, copies."""
        return self._p.block(0).copy(), self._p.block(1).copy()

    @property
    def cone_limits(self) -> np.ndarray:
        """The ball joints' effective angle limits ``max_angle − m`` (n_ball,), rad, a copy."""
        return self._ball_block(0).copy()

    def _per_joint(self, value, what: str, allow_zero: bool) -> tuple[np.ndarray, np.ndarray]:
        """``value`` for the 1-dof joints and for the ball joints (a scalar, or 1-dof then ball values)."""
        n = len(self.joints)
        arr = positive_per_joint(value, n + len(self.ball_joints), what, self.name, allow_zero=allow_zero)
        return arr[:n], arr[n:]

    def set_margin(self, margin) -> None:
        """The margin ``m`` (scalar or per joint; at most a quarter of each range), no recompilation."""
        self._margin_request = margin
        if not self.joints and not self.ball_joints:
            return
        m, m_ball = self._per_joint(margin, "margin", True)
        m = np.minimum(m, 0.25 * (self._upper - self._lower))
        self._p.block(0)[:] = self._lower + m
        self._p.block(1)[:] = self._upper - m
        self._ball_block(0)[:] = self._ball_max - np.minimum(m_ball, 0.25 * self._ball_max)

    def set_braking(self, braking) -> None:
        """``ā`` (scalar or per joint), rad/s² (m/s²), no recompilation."""
        self._braking_request = braking
        if self.joints or self.ball_joints:
            b, b_ball = self._per_joint(braking, "braking", False)
            self._p.block(4)[:] = b
            self._ball_block(2)[:] = b_ball

    def pieces(self, ctx: StepContext, p) -> list[AccelerationBounds | Inequality]:
        n, nb = len(self.joints), len(self.ball_joints)
        if n == 0 and nb == 0:
            return []
        dt, (q_lo, q_hi, lo, hi, braking, v_bar) = JointLimitParameters.split(p, n, _BLOCKS)
        group = Group(Kind.JOINT_POSITION_LIMIT, self.name)
        pieces: list[AccelerationBounds | Inequality] = []
        G, h = [], []
        v = joint_velocities(ctx)
        if n:
            q = ctx.kin.q[self.q_indices.tolist()]
            idx = self.indices.tolist()
            L, U = position_bounds(q, v[idx], q_lo, q_hi, lo, hi, braking, v_bar, dt)
            pieces.append(AccelerationBounds(tuple(idx), L, U, group))  # rows of B̂: read outside the kernel
        extra = p[1 + _BLOCKS * n :]
        for k in range(nb):
            iq, iv = int(self._ball_q[k]), int(self._ball_v[k])
            row, rhs = ball_cone.cone_row(
                ctx.kin.q[iq : iq + 4],
                v[iv : iv + 3],
                ctx.Bhat[iv : iv + 3, :],
                ctx.a0[iv : iv + 3],
                extra[k],  # θ̄
                extra[nb + k],  # θ_max
                extra[2 * nb + k],  # braking
                dt,
                upper_position_bound,
            )
            G.append(row)
            h.append(rhs)
        if nb:
            pieces.append(Inequality(ca.vertcat(*G), ca.vertcat(*h), group))
        return pieces
