"""Capture steps: recovery steps when the DCM leaves the support polygon, and online step adjustment.

**When.** While the DCM (capture point) ``ξ`` lies in the support polygon, the ZMP can be put on it
and the robot stops without stepping; once it leaves the polygon (shrunk by a margin), no ZMP the
feet can produce stops it: the robot must step (Koolen et al. 2012, "Capturability-based analysis
and control of legged locomotion, Part 1", IJRR 31(9): the 0-step capture region is the support
polygon). :meth:`CaptureStepPlanner.needs_step` is that test.

**Where and when to step.** A plan's DCM at its start is an affine function of its footholds (the
backward recursion of :mod:`wbc.locomotion.dcm` is linear in the ZMP knots, and the knots are
affine in the footholds). So, for a candidate swing foot and swing duration, the foothold offset
``δ`` (2,) that makes the plan's DCM at ``t`` equal the measured one solves a 2×2 linear system
``ξ_plan(t; δ) = a + J δ = ξ_measured``: the plan then *starts from the measured state* and ends at
rest over the new stance. This is the DCM-based step adjustment of Griffin et al. (2017,
"Walking stabilization using step timing and location adjustment on the humanoid robot Atlas",
IROS) and Khadiv et al. (2020, "Walking control based on step timing adaptation", IEEE T-RO), here
solved exactly over the whole remaining plan instead of over the next step's DCM only. The foothold
is kept within the step limits relative to the stance foot (a box in the stance sole's frame: a
2-variable box-constrained least squares, solved exactly by enumerating its active sets); when the
box cuts the solution the plan cannot start from the measured DCM (``captured`` is False) and the
residual is left to the stabilizer and the next adjustment.

**Timing.** The swing duration is chosen among a grid of candidates (and, standing, the swing foot
among both feet) by the smallest ``w_ξ ‖residual‖² + w_δ ‖δ‖² + w_T (T − T_nominal)²``: a short
swing lets the DCM run away less (smaller step), a long one is easier to track.

- :meth:`CaptureStepPlanner.recovery`: standing in double support, a recovery step of either foot
  (after a short weight transfer), optionally a closing step of the other foot back beside it,
  then standing (a new :class:`~wbc.locomotion.timeline.GaitTimeline` from the measured state).
- :meth:`CaptureStepPlanner.adjust`: re-solve the next (or in-flight) step of any timeline from the
  measured state at ``t`` (later steps move with it), re-timing its touchdown; a swing in flight is
  re-planned from its current state (C² references). Calling it periodically adjusts step location
  and timing online.

**Crossover steps.** Pushed toward its stance foot, a robot cannot capture the DCM with the other
foot on its own side: the step must cross in front of the stance foot (``StepLimits.max_cross``).
Standing, :meth:`~CaptureStepPlanner.recovery` considers both; walking, :meth:`~CaptureStepPlanner.adjust`
crosses only when no own-side step captures the DCM to within ``cross_residual`` (a crossing
step is harder to follow: around the stance foot, the legs close). Such a swing goes ahead first,
then across; the step after it, which uncrosses the legs, goes across first while it is still
behind the crossed foot, then forward (:func:`wbc.locomotion.timeline._around`).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import InputError
from . import polygon as _polygon
from .dcm import dcm_of, omega_of_height
from .footsteps import Foot, FootShape, Footstep, StepLimits, support_polygon
from .timeline import GaitParameters, GaitTimeline, TimedStep, _around, _crosses, _dcm_at_start, _feet, _knots, _vec3

__all__ = ["RecoveryPlan", "CaptureStepPlanner"]


@dataclasses.dataclass(frozen=True)
class RecoveryPlan:
    """A (re-)planned step and the timeline that carries it.

    Attributes:
        timeline: the new timeline, starting at the planning time from the measured state.
        step: the planned step (foothold, lift-off and touchdown times).
        offset: the step's foothold displacement from its nominal foothold (2,), m (for a recovery
            step from standing, the nominal foothold is where the foot stands).
        dcm: the measured DCM (3,), m.
        residual: the plan's DCM minus the measured DCM at the planning time (2,), m.
        captured: whether the plan starts from the measured DCM (residual below 1 mm): following it
            brings the robot to rest.
        cost: the selection cost.
    """

    timeline: GaitTimeline
    step: TimedStep
    offset: np.ndarray
    dcm: np.ndarray
    residual: np.ndarray
    captured: bool
    cost: float


@dataclasses.dataclass(frozen=True)
class _Candidate:
    """One way to take the next step: its steps (the first moved by the solve, the rest with it), the
    stance ZMP's nominal position (2,) in the stance sole's frame, the swing duration ``T`` (s),
    whether it crosses in front of the stance foot, and ``reach``: ``(centre (2,), radius)`` in the
    stance sole's frame, a box the landing must also lie in (None: none)."""

    template: list
    z_nominal: np.ndarray
    T: float
    crossing: bool = False
    reach: tuple[np.ndarray, float] | None = None


def _box_lsq(M: np.ndarray, y: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """argmin ‖M u − y‖² over the box ``lo ≤ u ≤ hi`` (a few variables; exact).

    Every assignment of each variable to its lower bound, its upper bound or free is tried (3ⁿ
    reduced least-squares problems); the best feasible one is the constrained minimum, since the
    minimum of a convex problem has some such active set. A tiny Tikhonov term keeps the reduced
    problems well posed.
    """
    n = M.shape[1]
    best, best_cost = np.clip(np.zeros(n), lo, hi), math.inf
    for assignment in itertools.product((0, 1, 2), repeat=n):  # 0 free, 1 at lo, 2 at hi
        u = np.where(np.array(assignment) == 1, lo, hi).astype(float)
        free = np.array([a == 0 for a in assignment])
        if np.any(free):
            Mf = M[:, free]
            rhs = y - M[:, ~free] @ u[~free]
            u[free] = np.linalg.solve(Mf.T @ Mf + 1e-14 * np.eye(int(free.sum())), Mf.T @ rhs)
            if np.any(u[free] < lo[free] - 1e-12) or np.any(u[free] > hi[free] + 1e-12):
                continue
        r = M @ u - y
        cost = float(r @ r)
        if cost < best_cost - 1e-18:
            best, best_cost = np.clip(u, lo, hi), cost
    return best


def _capture_solve(
    J: np.ndarray, target: np.ndarray, weights: np.ndarray, nominal: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> np.ndarray:
    """The variables (n,) in the box that satisfy ``J u = target`` (2 equations) nearest ``nominal``
    in the weighted norm ``Σ wᵢ (uᵢ − nᵢ)²``; when no point of the box satisfies them, the box point
    minimizing ``‖J u − target‖²`` (then the weighted distance, slightly).

    Exact: each assignment of the variables to a bound or free is tried; with some free, the
    equality-constrained weighted least-norm problem has a closed form (its KKT system).
    """
    n = J.shape[1]
    best, best_cost = None, math.inf
    winv = 1.0 / weights
    for assignment in itertools.product((0, 1, 2), repeat=n):
        a = np.array(assignment)
        free = a == 0
        if free.sum() < J.shape[0]:
            continue
        u = np.where(a == 1, lo, hi).astype(float)
        u[free] = nominal[free]
        Jf = J[:, free]
        S = (Jf * winv[free]) @ Jf.T
        if np.linalg.cond(S) > 1e12:
            continue
        rhs = target - J @ u
        u[free] += winv[free] * (Jf.T @ np.linalg.solve(S, rhs))
        if np.any(u < lo - 1e-12) or np.any(u > hi + 1e-12):
            continue
        cost = float(weights @ (u - nominal) ** 2)
        if cost < best_cost:
            best, best_cost = np.clip(u, lo, hi), cost
    if best is not None:
        return best
    scale = 1e3 * max(1.0, float(np.max(weights)))
    M = np.vstack([scale * J, np.diag(np.sqrt(weights)) * 1e-3])
    y = np.concatenate([scale * target, 1e-3 * np.sqrt(weights) * nominal])
    return _box_lsq(M, y, lo, hi)


class CaptureStepPlanner:
    """Recovery steps and online step adjustment (see the module docstring).

    Args:
        params: gait parameters (the closing step's and final phases' timings, swing shape).
        shape: the sole rectangle.
        limits: where a step may land relative to the stance foot.
        swing_durations: candidate swing durations, s (grid); default 9 values from 0.3 s to
            ``params.single_support``.
        transfer: weight transfer (double support) before a recovery step's lift-off, s.
        margin: the DCM must stay this far inside the support polygon, m (:meth:`needs_step`).
        closing_step: after a recovery step, step the other foot back beside it (nominal width).
        dcm_weight, step_weight, zmp_weight, timing_weight: weights, in the choice among the
            candidates, of the DCM mismatch, the foothold displacement, the stance-ZMP displacement
            (1/m²) and the swing duration's departure from ``params.single_support`` (1/s²); the
            step and ZMP weights also choose, per candidate, among the footholds and ZMPs that
            match the DCM.
        min_remaining: least time left before a re-planned touchdown, s.
        zmp_margin: the stance ZMP stays this far inside the stance sole, m.
        dcm_tolerance: :meth:`adjust` leaves a plan alone while the measured DCM is within this
            distance of the planned one (m): small errors are the stabilizer's (a far-off step
            barely moves today's DCM, so matching a millimetre with it would move it by centimetres).
        min_cross_swing: shortest swing of a crossover step, s: it goes around the stance leg (ahead,
            then across), farther than a step on its own side, and a swing the leg cannot follow
            lands late, the DCM running on meanwhile.
        cross_trigger: with crossover steps allowed (``limits.max_cross`` > 0), a step is needed
            (:meth:`needs_step`) only once the DCM is this far outside the support polygon, m (before
            the margin): nearer, the hip strategy may still bring it back, and a crossing step (on
            one foot for over half a second) does worse than not stepping.
        cross_residual: while walking (:meth:`adjust`), the next step may cross in front of the
            stance foot (``limits.max_cross`` > 0) when the best step on its own side leaves more than
            this much of the DCM uncaptured (m) and the crossing one no more; None (default): only
            recovery steps from standing cross.
        cross_speed: a swing in flight re-planned across the stance foot lands at most this far
            (m/s times the time left, along each axis) from where the foot is: a heavy leg cannot be
            thrown across late in its swing (Talos's fell where re-targeted 0.26 m in 0.15 s).
        cross_yaw: a crossover step lands turned this much (rad) toward the stance foot's side, toe
            in (the pelvis turns with the crossing leg; a foot kept straight must twist back against it).
        close_crossing: after a crossover recovery step, step the other foot beside it too (as
            ``closing_step``); False: stand on the crossed feet (the closing step goes around the
            crossed foot to its far side, a long swing while the DCM runs on).
    """

    def __init__(
        self,
        params: GaitParameters,
        shape: FootShape,
        limits: StepLimits,
        swing_durations: Sequence[float] | None = None,
        transfer: float = 0.1,
        margin: float = 0.0,
        closing_step: bool = True,
        dcm_weight: float = 1e6,
        step_weight: float = 1.0,
        zmp_weight: float = 1.0,
        timing_weight: float = 0.5,
        min_remaining: float = 0.05,
        zmp_margin: float = 0.02,
        dcm_tolerance: float = 0.02,
        min_cross_swing: float = 0.0,
        cross_trigger: float = 0.0,
        cross_residual: float | None = None,
        cross_speed: float = math.inf,
        cross_yaw: float = 0.0,
        close_crossing: bool = True,
    ) -> None:
        if not isinstance(params, GaitParameters):
            raise InputError(f"params must be GaitParameters, got {type(params).__name__}")
        if not isinstance(shape, FootShape):
            raise InputError(f"shape must be a FootShape, got {type(shape).__name__}")
        if not isinstance(limits, StepLimits):
            raise InputError(f"limits must be StepLimits, got {type(limits).__name__}")
        candidates = (
            np.linspace(min(0.3, params.single_support), params.single_support, 9)
            if swing_durations is None
            else swing_durations
        )
        durations = np.unique(np.asarray(candidates, float).reshape(-1))
        if len(durations) == 0 or not np.all(np.isfinite(durations)) or np.any(durations <= 0):
            raise InputError(f"swing_durations must be positive numbers of seconds, got {swing_durations!r}")
        for name, v in (
            ("transfer", transfer),
            ("margin", margin),
            ("dcm_weight", dcm_weight),
            ("step_weight", step_weight),
            ("zmp_weight", zmp_weight),
            ("timing_weight", timing_weight),
            ("min_remaining", min_remaining),
            ("zmp_margin", zmp_margin),
            ("dcm_tolerance", dcm_tolerance),
            ("min_cross_swing", min_cross_swing),
            ("cross_trigger", cross_trigger),
            ("cross_yaw", cross_yaw),
            *((("cross_residual", cross_residual),) if cross_residual is not None else ()),
        ):
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise InputError(f"capture-step planner: {name} must be finite and >= 0, got {v!r}")
        if transfer <= 0:
            raise InputError(f"capture-step planner: transfer must be positive, got {transfer!r} s")
        for name, v in (("dcm_weight", dcm_weight), ("step_weight", step_weight), ("zmp_weight", zmp_weight)):
            if v <= 0:
                raise InputError(f"capture-step planner: {name} must be positive, got {v!r}")
        self.params, self.shape, self.limits = params, shape, limits
        self.swing_durations = durations
        self.transfer, self.margin, self.closing_step = float(transfer), float(margin), bool(closing_step)
        self.dcm_weight, self.step_weight, self.zmp_weight = float(dcm_weight), float(step_weight), float(zmp_weight)
        self.timing_weight = float(timing_weight)
        self.min_remaining = float(min_remaining)
        self.dcm_tolerance = float(dcm_tolerance)
        self.min_cross_swing = float(min_cross_swing)
        self.cross_trigger = float(cross_trigger)
        self.cross_residual = None if cross_residual is None else float(cross_residual)
        if not (isinstance(cross_speed, (int, float)) and cross_speed > 0):
            raise InputError(f"capture-step planner: cross_speed must be positive (m/s), got {cross_speed!r}")
        self.cross_speed = float(cross_speed)
        if cross_yaw >= math.pi:
            raise InputError(f"capture-step planner: cross_yaw must be below pi rad, got {cross_yaw!r}")
        self.cross_yaw = float(cross_yaw)
        self.close_crossing = bool(close_crossing)
        self.zmp_margin = min(float(zmp_margin), shape.length / 2, shape.width / 2)

    # ------------------------------------------------------------------------------- decision
    def needs_step(self, dcm, polygon) -> bool:
        """Whether the DCM ``dcm`` ((2,) or (3,)) is outside ``polygon`` (k, 2) shrunk by the margin
        (with crossover steps allowed: grown by ``cross_trigger``)."""
        trigger = self.cross_trigger if self.limits.max_cross > 0 else 0.0
        return _polygon.signed_distance(dcm, polygon) > trigger - self.margin

    # ------------------------------------------------------------------------------- solving
    def _boxes(self, foot: Foot, crossing: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Bounds (lo, hi) (4,) of the variables: landing position (x, y) in the stance sole's frame,
        then the stance ZMP (x, y) in the same frame. ``crossing``: the crossover box (ahead of the
        stance sole, up to ``max_cross`` past its centre on its far side)."""
        L = self.limits
        if crossing:
            lateral = (-L.max_cross, L.min_width)
            x_lo = self.shape.length + L.clearance
        else:
            lateral, x_lo = (L.min_width, L.max_width), -L.max_backward
        y_lo, y_hi = lateral if foot.side > 0 else (-lateral[1], -lateral[0])
        half = np.array([self.shape.length / 2, self.shape.width / 2]) - self.zmp_margin
        return np.array([x_lo, y_lo, -half[0], -half[1]]), np.array([L.max_forward, y_hi, half[0], half[1]])

    def _steps(self, template: list, stance: Footstep, u: np.ndarray, crossing: bool = False) -> list:
        """``template`` with its first step landing at ``u[0:2]`` and standing on the ZMP ``u[2:4]``
        (stance-sole frame); the later steps move with the first. A ``crossing`` step lands turned
        ``cross_yaw`` toward the stance foot's side from the stance foot's yaw."""
        first = template[0]
        landing = stance.to_world((u[0], u[1], 0.0))
        landing[2] = first.footstep.position[2]
        delta = landing[0:2] - first.footstep.position[0:2]
        z = (float(u[2]), float(u[3]))
        yaw = stance.yaw - first.foot.side * self.cross_yaw if crossing and self.cross_yaw else first.footstep.yaw
        head = TimedStep(
            Footstep(first.foot, landing, yaw, first.footstep.normal),
            first.liftoff,
            first.touchdown,
            (z, z),
        )
        return [head] + [s.shifted(delta) for s in template[1:]]

    def _solve(self, t, feet, candidate: _Candidate, zmp0, omega, xi, extra):
        """Solve one candidate: the variables u (4,), the residual (2,) and u's nominal values; None
        when its reach leaves no landing."""
        template, z_nominal = candidate.template, candidate.z_nominal
        step = template[0]
        stance = feet[step.foot.other]

        def plan_dcm(u: np.ndarray) -> np.ndarray:
            steps = self._steps(template, stance, u, candidate.crossing)
            times, points = _knots(feet, steps, t, zmp0, self.params, extra)
            return _dcm_at_start(times, points, omega)[0:2]

        u0 = np.concatenate([stance.to_local(step.footstep.position)[0:2], z_nominal])
        a = plan_dcm(u0)
        J = np.column_stack([plan_dcm(u0 + e) - a for e in np.eye(4)])  # exact: the map is affine
        lo, hi = self._boxes(step.foot, candidate.crossing)
        if candidate.reach is not None:
            centre, radius = candidate.reach
            lo[0:2], hi[0:2] = np.maximum(lo[0:2], centre - radius), np.minimum(hi[0:2], centre + radius)
            if np.any(lo > hi):
                return None
        # a + J (u − u0) = ξ, nearest the nominal foothold and ZMP, within reach and inside the sole
        weights = np.array([self.step_weight, self.step_weight, self.zmp_weight, self.zmp_weight])
        u = _capture_solve(J, xi[0:2] - a + J @ u0, weights, u0, lo, hi)
        residual = a + J @ (u - u0) - xi[0:2]
        return u, residual, u0

    def _best(self, t, feet, candidates: list[_Candidate], zmp0, omega, xi, extra=()):
        """The cheapest candidate: ``(cost, candidate, u, residual)``, None when none has a landing."""
        best = None
        for candidate in candidates:
            solved = self._solve(t, feet, candidate, zmp0, omega, xi, extra)
            if solved is None:
                continue
            u, residual, u0 = solved
            d = u - u0
            cost = (
                self.dcm_weight * float(residual @ residual)
                + self.step_weight * float(d[0:2] @ d[0:2])
                + self.zmp_weight * float(d[2:4] @ d[2:4])
                + self.timing_weight * (candidate.T - self.params.single_support) ** 2
            )
            if best is None or cost < best[0]:
                best = (cost, candidate, u, residual)
        return best

    def _plan(self, t, feet, best, com, zmp0, omega, xi, swing0=None, extra=(), terrain=None) -> RecoveryPlan:
        cost, candidate, u, residual = best
        template = candidate.template
        stance = feet[template[0].foot.other]
        steps = self._steps(template, stance, u, candidate.crossing)
        end = steps[0].liftoff
        extra = [(tk, p) for tk, p in extra if t < tk < end]
        timeline = GaitTimeline(
            feet,
            steps,
            com,
            t,
            self.params,
            self.shape,
            zmp0,
            swing0=swing0,
            extra_knots=extra,
            omega=omega,
            terrain=terrain,
        )
        return RecoveryPlan(
            timeline=timeline,
            step=steps[0],
            offset=steps[0].footstep.position[0:2] - template[0].footstep.position[0:2],
            dcm=xi,
            residual=residual,
            captured=bool(np.linalg.norm(residual) < 1e-3),
            cost=cost,
        )

    # ------------------------------------------------------------------------------- public
    def recovery(
        self,
        t: float,
        com,
        com_velocity,
        feet: Mapping,
        zmp=None,
        omega: float | None = None,
        feet_to_try: Sequence[Foot] = (Foot.LEFT, Foot.RIGHT),
    ) -> RecoveryPlan:
        """A recovery step from double support at ``t`` from the measured CoM state, then standing.

        Args:
            t: now, s.
            com, com_velocity: measured CoM (3,) m and velocity (3,) m/s.
            feet: the footholds (both feet in contact).
            zmp: the ZMP now (3,) (e.g. the stabilizer's command); default the DCM projected onto
                the support polygon.
            omega: LIPM frequency, 1/s; default from the CoM height above the feet.
            feet_to_try: the candidate swing feet.

        Returns:
            The best :class:`RecoveryPlan` over the candidate feet and swing durations. Its plan
            shifts the weight onto the stance foot in ``transfer`` s, swings, lands, (closes the
            stance with the other foot,) and comes to rest.
        """
        feet = _feet(feet)
        com, cd = _vec3(com, "com"), _vec3(com_velocity, "com_velocity")
        ground = 0.5 * (feet[Foot.LEFT].position[2] + feet[Foot.RIGHT].position[2])
        if omega is None:
            omega = omega_of_height(com[2] - ground, self.params.gravity)
        xi = dcm_of(com, cd, omega)
        polygon = support_polygon(list(feet.values()), self.shape)
        if zmp is None:
            zmp = np.append(_polygon.project(xi[0:2], polygon), ground)
        zmp0 = _vec3(zmp, "zmp")
        p = self.params
        candidates: list[_Candidate] = []
        for foot in feet_to_try:
            if not isinstance(foot, Foot):
                raise InputError(f"feet_to_try must hold Foot values, got {foot!r}")
            for T in self.swing_durations:
                lift = t + self.transfer
                step = TimedStep(feet[foot], lift, lift + float(T))
                template = [step]
                if self.closing_step:
                    beside = step.footstep.to_world((0.0, foot.other.side * self.limits.width, 0.0))
                    beside[2] = feet[foot.other].position[2]
                    closing = Footstep(foot.other, beside, step.footstep.yaw)
                    t_lift = step.touchdown + p.double_support
                    template.append(TimedStep(closing, t_lift, t_lift + p.single_support))
                candidates.append(_Candidate(template, np.zeros(2), float(T)))
                if self.limits.max_cross > 0 and self.min_cross_swing - 1e-12 <= T:
                    # the same step crossing over, ahead of the stance foot
                    across = template if self.close_crossing else [step]
                    candidates.append(_Candidate(across, np.zeros(2), float(T), crossing=True))
        best = self._best(t, feet, candidates, zmp0, omega, xi)
        return self._plan(t, feet, best, com, zmp0, omega, xi)

    def adjust(self, timeline: GaitTimeline, t: float, com, com_velocity) -> RecoveryPlan | None:
        """Re-solve the next step of ``timeline`` (in flight or not yet lifted) from the measured state at ``t``.

        The step's foothold and its stance ZMP move (every later step moving with the foothold);
        its touchdown is kept or re-timed among the candidate swing durations (later steps shift in
        time by the same amount), never sooner than ``min_remaining`` from now. A swing in flight
        continues from its current reference state. Returns None (keep the plan) when the measured
        DCM is within ``dcm_tolerance`` of the plan's, when no step is left (standing: use
        :meth:`recovery`), when the next touchdown is less than ``min_remaining`` away, or when the
        swing in flight goes around the stance foot (a crossover step or the step that uncrosses
        the legs: re-planned from its state it would cut through the stance leg) and is not yet
        ahead of the stance sole. With ``cross_residual`` set, the step may become a crossover step
        when no step on its own side captures the DCM to within it: not yet lifted (a fresh swing,
        ahead first then across, at least ``min_cross_swing`` long), or in flight once ahead of the
        stance sole and within ``cross_speed`` of where the foot is.
        """
        if not isinstance(timeline, GaitTimeline):
            raise InputError(f"timeline must be a GaitTimeline, got {type(timeline).__name__}")
        com, cd = _vec3(com, "com"), _vec3(com_velocity, "com_velocity")
        t = max(float(t), timeline.t0)
        j = next((k for k, s in enumerate(timeline.steps) if s.touchdown > t), None)
        if j is None:
            return None
        omega = timeline.omega
        xi = dcm_of(com, cd, omega)
        now = timeline.evaluate(t)
        if np.linalg.norm(xi[0:2] - now["dcm"][0][0:2]) <= self.dcm_tolerance:
            return None
        step = timeline.steps[j]
        if step.touchdown - t < self.min_remaining:
            return None  # too close to touchdown to move the foot
        feet = timeline.footholds_at(t)
        crossing = _crosses(feet[step.foot], step.footstep, feet[step.foot.other])
        in_flight = step.liftoff < t
        # where the swinging foot is now, in the stance sole's frame (x, y)
        here = feet[step.foot.other].to_local(timeline.swings[j].state(t).position)[0:2] if in_flight else None
        # re-planned from its state, a swing goes straight to its new foothold: only once it is ahead
        # of the stance sole does a path to the stance foot's far side stay clear of the stance leg
        clear = here is None or bool(here[0] >= self.shape.length + self.limits.clearance)
        if not clear and _around(feet[step.foot], step.footstep, feet[step.foot.other])[1] is not None:
            return None
        may_cross = self.cross_residual is not None and self.limits.max_cross > 0 and not crossing and clear

        zmp0 = now["zmp"][0]
        stance = feet[step.foot.other]
        z_nominal = stance.to_local(timeline.evaluate(step.touchdown)["zmp"][0])[0:2]
        swing0 = timeline.swings[j] if step.liftoff < t else None
        touchdowns = {float(step.touchdown)}
        shortest = self.min_cross_swing if crossing else 0.0
        touchdowns.update(
            float(step.liftoff + T)
            for T in self.swing_durations
            if step.liftoff + T >= t + self.min_remaining and shortest - 1e-12 <= T
        )
        candidates: list[_Candidate] = []
        across: list[_Candidate] = []  # the same step across the stance foot
        for touchdown in sorted(touchdowns):
            dt = touchdown - step.touchdown
            rest = [s.shifted(dt=dt) for s in timeline.steps[j:]]
            rest[0] = dataclasses.replace(step, touchdown=touchdown)
            T = touchdown - step.liftoff
            candidates.append(_Candidate(rest, z_nominal, T, crossing))
            if may_cross and here is not None:
                across.append(_Candidate(rest, z_nominal, T, True, (here, self.cross_speed * (touchdown - t))))
            elif may_cross and self.min_cross_swing - 1e-12 <= T:
                across.append(_Candidate(rest, z_nominal, T, crossing=True))
        extra = timeline.extra_knots
        best = self._best(t, feet, candidates, zmp0, omega, xi, extra)
        tolerated = self.cross_residual
        if across and tolerated is not None and float(np.linalg.norm(best[3])) > tolerated:  # none on its side will do
            crossed = self._best(t, feet, across, zmp0, omega, xi, extra)
            if crossed is not None and float(np.linalg.norm(crossed[3])) <= tolerated:
                best = crossed
        return self._plan(t, feet, best, com, zmp0, omega, xi, swing0=swing0, extra=extra, terrain=timeline.terrain)
