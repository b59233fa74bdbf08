r"""A ball joint's cone limit as a viability bound on the acceleration of its rotation angle.

MuJoCo limits a ball joint by the angle of its rotation, ``θ = |log₃(R)| ≤ θ_max`` (a cone around
the reference orientation, ``range="0 θ_max"``; :attr:`wbc.Joint.max_angle`). :class:`JointPositionLimit
<.joint_position.JointPositionLimit>` keeps that scalar inside ``[0, θ̄]`` (``θ̄ = θ_max − m``) with
the same viability bound as a revolute joint's upper side (:mod:`.joint_position`), once its rate
and acceleration are written in the joint's velocity ``ω`` (angular velocity in the child frame).

Derivation
----------
Write ``R = exp(φ)``, ``θ = |φ|``, ``n = φ/θ`` (a unit axis, the same in the parent and child frames
since ``Rφ = φ``). With ``Ṙ = R [ω]×``, ``φ̇ = J_r⁻¹(φ) ω`` (right Jacobian of SO(3)); since
``J_r⁻ᵀ n = J_l⁻¹ n = n``,

* ``θ̇ = nᵀ φ̇ = nᵀ ω``;
* ``θ̈ = nᵀ ω̇ + ṅᵀ ω``, ``ṅ = (I − n nᵀ) φ̇ / θ``; for ``w ⊥ n``,
  ``J_l⁻¹ w = (θ/2) cot(θ/2) w − (θ/2) n × w``, and ``ωᵀ (n × ω⊥) = 0``, so
  ``θ̈ = nᵀ ω̇ + κ |ω⊥|²`` with ``κ = ½ cot(θ/2)`` and ``ω⊥ = ω − n (nᵀ ω)``.

``κ |ω⊥|² ≥ 0`` is the centripetal part: a joint circling along the cone's edge must accelerate
inward to stay on it. The bound asks ``nᵀ ω̇ ≤ U(θ, θ̇) − κ |ω⊥|²`` with ``U`` the upper side of
:func:`~.joint_position.position_bounds` (braking ``ā``, margin band, return from beyond
``θ_max``), on ``ω̇ = a₀ + B̂u``.

Where it applies
----------------
``n`` is undefined at ``θ = 0`` and ``κ ~ 1/θ`` there, where the one-period prediction
``θ̇⁺ = θ̇ + Δθ̈`` is meaningless (the rotation passes by the reference in less than a period). The
row is therefore active only in the outer half of the cone, ``θ ≥ θ̄/2`` (elsewhere it is the void
row ``0 ≤ 1``). The bound is viable, as a revolute joint's, for a joint that enters the outer half
at a rate it can brake from, ``θ̇² ≤ ā θ̄`` (e.g. with velocity limits ``|ω| ≤ √(ā θ̄)``); faster, it
asks for up to the braking acceleration plus the centripetal term, and returns from beyond
``θ_max`` along the braking curve. A cone of ``θ_max ≥ π`` limits nothing (``θ ≤ π``) and gets no row.
"""

from __future__ import annotations

from collections.abc import Sequence

import casadi as ca
import numpy as np

from ...errors import InputError
from ...model.clusters import ClusterModel
from ...model.model import Joint, JointType, Model
from ...spatial.lie import exp3_quaternion, log3, quaternion_to_rotation

__all__ = ["has_cone_limit", "select_ball_joints", "cone_rate", "cone_row", "inside_cone"]

#: Where the row turns on: at this fraction of the effective limit θ̄ (module docstring).
ACTIVE_FRACTION = 0.5


def has_cone_limit(joint: Joint) -> bool:
    """Whether ``joint`` is a ball joint whose cone limits something (``max_angle < π``)."""
    return joint.type is JointType.SPHERICAL and joint.max_angle < np.pi


def select_ball_joints(model: Model | ClusterModel, names: Sequence[str] | None, owner: str) -> list[Joint]:
    """The ball joints with a cone limit among ``names`` (default: every such joint the inputs move:
    a tree's actuated joints, a clustered model's independent ones), in model order.

    Raises:
        InputError: a named ball joint without a cone limit (``max_angle`` infinite or ≥ π).
    """
    if isinstance(model, ClusterModel):
        tree = model.tree
        candidates = [tree.joints[j] for j in model.independent_joints]
    else:
        tree, candidates = model, [model.joints[i] for i in model.actuated]
    balls = [j for j in candidates if j.type is JointType.SPHERICAL]
    if names is None:
        return [j for j in balls if has_cone_limit(j)]
    out = []
    for j in balls:
        if j.name in names:
            if not has_cone_limit(j):
                raise InputError(
                    f"{owner}: ball joint {j.name!r} has no cone limit in model {model.name!r} "
                    f"(max_angle {j.max_angle!r} rad; a cone of π or more limits nothing)"
                )
            out.append(j)
    return out


def _angle_axis(quat):
    """``(θ, n, φ)`` of a unit quaternion (4, 1) (CasADi): angle, unit axis (``φ/θ``, finite at 0), vector."""
    phi = log3(quaternion_to_rotation(quat))
    theta = ca.norm_2(phi)
    return theta, phi / ca.fmax(theta, 1e-12), phi


def cone_rate(quat, omega):
    """``(θ, θ̇)`` (CasADi scalars) of a ball joint at quaternion ``quat`` (4, 1) and velocity ``omega``
    (3, 1): its rotation angle and the rate ``nᵀω`` (module docstring)."""
    theta, n, _ = _angle_axis(quat)
    return theta, ca.dot(n, omega)


def cone_row(quat, omega, Bhat_rows, a0_rows, theta_bar, theta_max, braking, dt, upper_bound):
    """``(G, h)``: the row ``G u ≤ h`` (1, n_u), (1, 1) of one ball joint's cone limit (CasADi).

    Args:
        quat: the joint's quaternion (4, 1). omega: its velocity (3, 1), rad/s, child frame.
        Bhat_rows, a0_rows: its rows of ``B̂`` (3, n_u) and of ``a₀`` (3, 1).
        theta_bar: effective limit ``θ̄ = θ_max − m``, rad. theta_max: ``θ_max``, rad.
        braking: ``ā``, rad/s². dt: the control period, s.
        upper_bound: ``U(θ, θ̇, θ̄, θ_max, ā, Δ)``, the upper side of a joint position bound.
    """
    theta, n, _ = _angle_axis(quat)
    rate = ca.dot(n, omega)
    perp = omega - n * rate
    half = ca.fmax(theta, ACTIVE_FRACTION * theta_bar) / 2  # finite where the row is void
    kappa = ca.cos(half) / (2 * ca.sin(half))
    U = upper_bound(theta, rate, theta_bar, theta_max, braking, dt)
    active = theta >= ACTIVE_FRACTION * theta_bar
    G = ca.if_else(active, ca.mtimes(n.T, Bhat_rows), ca.DM.zeros(1, Bhat_rows.shape[1]))
    h = ca.if_else(active, U - kappa * ca.dot(perp, perp) - ca.dot(n, a0_rows), 1.0)
    return G, h


def inside_cone(quat: np.ndarray, limit: float) -> np.ndarray:
    """A unit quaternion (4,) of the same rotation axis with its angle at most ``limit`` (rad; ``≤ 0``
    gives the identity); ``quat`` itself when already inside."""
    phi = np.asarray(log3(quaternion_to_rotation(np.asarray(quat, float))), float)
    theta = float(np.linalg.norm(phi))
    if theta <= limit:
        return np.asarray(quat, float).copy()
    if limit <= 0.0:
        return np.array([0.0, 0.0, 0.0, 1.0])
    return np.asarray(exp3_quaternion(phi * (limit / theta)), float)
