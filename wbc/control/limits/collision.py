r"""Self-collision avoidance: a second-order control barrier function on primitive distances.

For each declared pair of primitives (:mod:`.geometry`: spheres and capsules attached to links) the
distance ``d(q)`` between them is kept above a margin ``d_s`` by one inequality on the inputs.

*Distance and its derivatives* (traced in the kernel). With ``w₁, w₂`` the closest points of the two
cores (centres or segments) and ``w = w₁ − w₂``, ``d = ‖w‖ − r₁ − r₂`` and ``n = w/‖w‖``. The
minimum distance between convex sets is differentiable where positive, its gradient given by the
closest points held fixed on their bodies (envelope theorem), so with ``J_{w}`` the Jacobian of the
body point at ``w`` (world axes),

    ḋ = J_d v,   J_d = nᵀ(J_{w₁} − J_{w₂}),
    d̈ = J_d q̈ + nᵀ(a_{w₁} − a_{w₂}) + (‖ẇ‖² − ḋ² − cᵀH⁻¹c)/‖w‖,

``a_w`` the classical acceleration drift of the body point (at ``q̈ = 0``), ``ẇ`` the velocity of
``w`` with the closest points held on their bodies, ``‖ẇ‖² − ḋ²`` the rotation of ``n``, and
``cᵀH⁻¹c`` the sliding of the closest points along the segments: ``½‖w‖²`` is minimized over the
segment parameters ``x`` (``w = p₁ + s d₁ − p₂ − t d₂``), and the second derivative of a minimum is
``g̈ − ġ_xᵀ g_xx⁻¹ ġ_x`` over the parameters strictly inside ``(0, 1)`` (those at an end stay
there), with ``c = (ẇ·d₁ + w·(ω₁×d₁), −ẇ·d₂ − w·(ω₂×d₂))`` and ``H = [[d₁·d₁, −d₁·d₂], [−d₁·d₂,
d₂·d₂]]`` restricted to them. So ``d̈`` is exact wherever the closest-point configuration does not
switch (checked against finite differences in the tests).

*Constraint: a second-order (exponential) control barrier function*, critically damped: with
``h = d − d_s``,

    ḧ + 2λ ḣ + λ² h ≥ 0,

which keeps ``h ≥ 0`` for all time when it holds at the start with ``ḣ + λh ≥ 0`` (``h`` then
decays at most like ``(1 + λt) e^{−λt}`` towards 0, never below): a pair approaching at ``ḋ < 0``
is braked smoothly from about ``|ḋ|/λ`` away, and a pair moving apart is free. It is not the
velocity damper of mc_rtc (a velocity-level bound activated inside an influence distance); at the
acceleration level the damper's bound on ``ḋ`` would demand ``Δḋ/Δt`` within one period. As for the
joint limits, at most ``ā`` (``max_acceleration``, m/s²) of separating acceleration is ever asked
for (outside the safe set, e.g. started too close), so the row never demands the impossible:

    −J_d B̂ u ≤ J_d a₀ + nᵀ(a_{w₁} − a_{w₂}) + (‖ẇ‖² − ḋ²)/‖w‖ − min(−2λḋ − λ²(d − d_s), ā).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

import casadi as ca
import numpy as np

from ...errors import InputError
from ...model.model import Model
from ...spatial.algebra import act_motion, skew
from ..contributor import Contributor, Runtime
from ..pieces import Group, Inequality, Kind
from .geometry import Capsule, Primitive, Sphere, closest_core_points

if TYPE_CHECKING:
    from ..step_context import StepContext

__all__ = ["CollisionPair", "SelfCollisionLimit", "pair_distances"]


@dataclasses.dataclass(frozen=True)
class CollisionPair:
    """Two primitives whose distance is kept above the margin."""

    first: Primitive
    second: Primitive

    def __post_init__(self) -> None:
        for p in (self.first, self.second):
            if not isinstance(p, (Sphere, Capsule)):
                raise InputError(f"a collision pair holds Sphere or Capsule primitives, got {type(p).__name__}")

    def __str__(self) -> str:
        return f"{self.first}-{self.second}"


def _pairs(pairs, owner: str) -> tuple[CollisionPair, ...]:
    out = []
    for pair in pairs:
        if isinstance(pair, CollisionPair):
            out.append(pair)
            continue
        try:
            first, second = pair
        except (TypeError, ValueError):
            raise InputError(f"{owner}: a pair is a CollisionPair or two primitives, got {pair!r}") from None
        out.append(CollisionPair(first, second))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class _Attached:
    """A primitive resolved against a model: its body (joint index) and core points in the joint frame."""

    joint: int
    points: np.ndarray  # (k, 3)
    radius: float


def _attach(model: Model, primitive: Primitive) -> _Attached:
    frame = model.frames[model.frame_id(primitive.frame)]
    R = np.asarray(frame.placement.R, dtype=float)
    p = np.asarray(frame.placement.p, dtype=float).reshape(3)
    return _Attached(frame.joint, primitive.points @ R.T + p, primitive.radius)


def _world_points(kin, a: _Attached) -> list:
    M = kin.oMi[a.joint]
    return [ca.mtimes(M.R, ca.DM(x.reshape(3, 1))) + M.p for x in a.points]


def _distance(kin, a: _Attached, b: _Attached):
    """``(d, n, closest, ‖w‖)`` of two attached primitives at the kinematics' state."""
    closest = closest_core_points(_world_points(kin, a), _world_points(kin, b))
    w = closest.w1 - closest.w2
    norm = ca.sqrt(ca.dot(w, w))
    n = w / ca.fmax(norm, 1e-12)
    return norm - a.radius - b.radius, n, closest, norm


def _point_motion(kin, joint: int, point):
    """Jacobian (3, nv), velocity (3, 1) and classical acceleration drift (3, 1) of the body point of
    ``joint``'s body at world position ``point`` (world axes), and the body's angular velocity (3, 1)."""
    J = kin.joint_jacobian_world(joint)
    Jp = J[0:3, :] - ca.mtimes(skew(point), J[3:6, :])
    V = act_motion(kin.oMi[joint], kin.velocities[joint])  # world spatial velocity, linear part at the origin
    A = act_motion(kin.oMi[joint], kin.drift_accelerations[joint])
    v = V[0:3] + ca.cross(V[3:6], point)
    a = A[0:3] + ca.cross(A[3:6], point) + ca.cross(V[3:6], v)
    return Jp, v, a, V[3:6]


def _interior(x):
    return ca.logic_and(x > 0, x < 1)


def _sliding(closest, w, dw, omega1, omega2):
    """``cᵀH⁻¹c`` (the module docstring's sliding term times ``‖w‖``) over the interior segment
    parameters; zero when the closest points sit at segment ends or centres."""
    terms = {}
    if closest.s is not None:
        c_s = ca.dot(dw, closest.d1) + ca.dot(w, ca.cross(omega1, closest.d1))
        terms["s"] = (c_s, ca.dot(closest.d1, closest.d1), _interior(closest.s))
    if closest.t is not None:
        c_t = -(ca.dot(dw, closest.d2) + ca.dot(w, ca.cross(omega2, closest.d2)))
        terms["t"] = (c_t, ca.dot(closest.d2, closest.d2), _interior(closest.t))
    if not terms:
        return 0
    if len(terms) == 1:
        c, a, inside = next(iter(terms.values()))
        return ca.if_else(inside, c * c / a, 0)
    (c_s, a, in_s), (c_t, e, in_t) = terms["s"], terms["t"]
    b = ca.dot(closest.d1, closest.d2)
    both = (e * c_s * c_s + 2 * b * c_s * c_t + a * c_t * c_t) / ca.fmax(a * e - b * b, 1e-300)
    return ca.if_else(
        ca.logic_and(in_s, in_t), both, ca.if_else(in_s, c_s * c_s / a, ca.if_else(in_t, c_t * c_t / e, 0))
    )


class SelfCollisionLimit(Contributor):
    """Keep the distance of declared primitive pairs above a margin (see the module docstring).

    Args:
        pairs: :class:`CollisionPair` objects or ``(primitive, primitive)`` tuples; the two of a pair
            must be on different bodies. :func:`~.collision_model.propose_pairs` proposes pairs from a
            URDF's collision geometry.
        margin: ``d_s``, m: the smallest distance kept.
        gain: ``λ``, 1/s, of the barrier ``ḧ + 2λḣ + λ²h ≥ 0``.
        max_acceleration: ``ā``, m/s²: the largest separating acceleration ever asked for.
        name: a readable name (default ``"self_collision"``).

    ``margin``, ``gain`` and ``max_acceleration`` are kernel parameters (:meth:`set`: no
    recompilation). The rows' group is ``Group(Kind.SELF_COLLISION, name)``; one row per pair, in
    order.
    """

    def __init__(
        self,
        pairs: Sequence,
        margin: float = 0.02,
        gain: float = 20.0,
        max_acceleration: float = 20.0,
        name: str = "self_collision",
    ) -> None:
        self.name = name
        self.pairs = _pairs(pairs, name)
        if not self.pairs:
            raise InputError(f"{name}: give at least one pair of primitives")
        self._p = np.zeros(3)
        self.set(margin, gain, max_acceleration)
        self._attached: list[tuple[_Attached, _Attached]] = []

    def set(self, margin: float | None = None, gain: float | None = None, max_acceleration: float | None = None):
        """Change the margin (m, ≥ 0), the gain (1/s, > 0) or the maximum acceleration (m/s², > 0)."""
        for k, (value, what, low) in enumerate(
            ((margin, "margin", 0.0), (gain, "gain", None), (max_acceleration, "max_acceleration", None))
        ):
            if value is None:
                continue
            try:
                x = float(value)
            except (TypeError, ValueError):
                raise InputError(f"{self.name}: {what} must be a number, got {value!r}") from None
            if not np.isfinite(x) or (x < 0 if low is not None else x <= 0):
                raise InputError(f"{self.name}: {what} must be finite and {'>= 0' if low is not None else '> 0'}")
            self._p[k] = x

    @property
    def margin(self) -> float:
        return float(self._p[0])

    def check(self, model: Model) -> None:
        attached = []
        for pair in self.pairs:
            a, b = _attach(model, pair.first), _attach(model, pair.second)
            if a.joint == b.joint:
                raise InputError(
                    f"{self.name}: the primitives of pair {pair} are on the same body (joint "
                    f"{model.joints[a.joint].name!r}); their distance never changes"
                )
            attached.append((a, b))
        self._attached = attached

    @property
    def parameter_size(self) -> int:
        return 3

    def parameters(self, runtime: Runtime) -> np.ndarray:
        return self._p

    def pieces(self, ctx: StepContext, p) -> list[Inequality]:
        margin, gain, a_max = p[0], p[1], p[2]
        kin = ctx.kin
        rows, rhs = [], []
        for a, b in self._attached:
            d, n, closest, norm = _distance(kin, a, b)
            J1, v1, acc1, omega1 = _point_motion(kin, a.joint, closest.w1)
            J2, v2, acc2, omega2 = _point_motion(kin, b.joint, closest.w2)
            Jd = ca.mtimes(n.T, J1 - J2)  # (1, nv)
            dv = v1 - v2
            d_dot = ca.dot(n, dv)
            sliding = _sliding(closest, closest.w1 - closest.w2, dv, omega1, omega2)
            curvature = (ca.dot(dv, dv) - d_dot * d_dot - sliding) / ca.fmax(norm, 1e-12)
            drift = ca.dot(n, acc1 - acc2) + curvature
            wanted = ca.fmin(-2 * gain * d_dot - gain * gain * (d - margin), a_max)
            rows.append(-ca.mtimes(Jd, ctx.Bhat))
            rhs.append(ca.mtimes(Jd, ctx.a0) + drift - wanted)
        return [Inequality(ca.vertcat(*rows), ca.vertcat(*rhs), Group(Kind.SELF_COLLISION, self.name))]


def pair_distances(model: Model, q, pairs: Sequence) -> np.ndarray:
    """Distances (k,) m of ``pairs`` at configuration ``q`` (nq,), evaluated eagerly (numbers).

    Raises:
        InputError / FrameError: bad pairs, unknown frames, a bad configuration.
    """
    from ...algorithms.kinematics import TreeKinematics
    from ...model import checks

    q = checks.configuration(model, q)
    kin = TreeKinematics(model, ca.DM(q))
    out = []
    for pair in _pairs(pairs, "pair_distances"):
        d, *_ = _distance(kin, _attach(model, pair.first), _attach(model, pair.second))
        out.append(float(d))
    return np.array(out)
