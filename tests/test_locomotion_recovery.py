"""DCM stabilizer and capture steps: on their own, and closed-loop on a linear inverted pendulum.

The closed-loop oracle is a point-mass LIPM integrated exactly over each millisecond with the ZMP
the stabilizer commands (inside the support polygon of the feet the plan has in contact): a push is
a jump of the CoM velocity. The same push is run with the stabilizer alone (standing, or walking
on the unchanged plan) and with recovery steps / online step adjustment.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.helpers import FOOT_SHAPE as SHAPE
from wbc.errors import InputError
from wbc.locomotion import (
    CaptureStepPlanner,
    DCMStabilizer,
    Foot,
    Footstep,
    FootstepPlan,
    GaitParameters,
    PhaseKind,
    StepLimits,
    VelocityCommand,
    dcm_feedback_zmp,
    dcm_of,
    omega_of_height,
    plan_from_velocity,
    plan_stand,
    plan_walk,
    polygon,
    step_violations,
    support_polygon,
)
from wbc.locomotion.recovery import _box_lsq
from wbc.locomotion.timeline import CROSSING_WINDOWS

LIMITS = StepLimits(width=0.17, min_width=0.15, max_width=0.45, max_forward=0.35, max_backward=0.2, clearance=0.0)
LEFT = Footstep(Foot.LEFT, [0.0, 0.085, 0.0])
RIGHT = Footstep(Foot.RIGHT, [0.0, -0.085, 0.0])
FEET = {Foot.LEFT: LEFT, Foot.RIGHT: RIGHT}
PARAMS = GaitParameters(single_support=0.7, double_support=0.2)
HEIGHT = 0.88
COM = np.array([0.0, 0.0, HEIGHT])


def lipm_run(timeline, push_time, dv, stepping, duration=6.0, dt=1e-3, every=0.01, planner=None):
    """Closed loop on the LIPM; returns (recovered, final CoM, final CoM velocity, timeline, recovery plans)."""
    w = timeline.omega
    stabilizer = DCMStabilizer(k_dcm=3.0, margin=0.0)
    planner = planner or CaptureStepPlanner(PARAMS, SHAPE, LIMITS)
    ev = timeline.evaluate(timeline.t0)
    c, cd = ev["com"][0].copy(), ev["com_velocity"][0].copy()
    t, last, plans = timeline.t0, -math.inf, []
    tl = timeline
    for _ in range(int(round(duration / dt))):
        if push_time is not None and abs(t - push_time) < dt / 2:
            cd = cd + np.asarray(dv, float)
        xi = c + cd / w
        if stepping:
            ref = tl.sample(t)
            standing = ref.phase.kind is PhaseKind.DOUBLE_SUPPORT and ref.phase.step >= len(tl.steps)
            if standing and planner.needs_step(xi, tl.support_polygon(t)):
                plan = planner.recovery(t, c, cd, tl.footholds_at(t), omega=w)
                tl, last = plan.timeline, t
                plans.append(plan)
            elif t - last >= every:
                plan = planner.adjust(tl, t, c, cd)
                last = t
                if plan is not None:
                    tl = plan.timeline
                    plans.append(plan)
        out = stabilizer.compute(tl.sample(t), c, cd, tl.support_polygon(t))
        r = out.zmp[0:2]
        e = math.exp(w * dt)
        xi_next = r + e * (xi[0:2] - r)  # exact for a ZMP held over the step
        c_next = r + 0.5 * e * (xi[0:2] - r) + (c[0:2] - r - 0.5 * (xi[0:2] - r)) / e
        c[0:2], cd[0:2] = c_next, w * (xi_next - c_next)
        t += dt
        if np.linalg.norm(cd) > 5.0:
            return False, c, cd, tl, plans
    recovered = polygon.contains(tl.support_polygon(t), c + cd / w) and np.linalg.norm(cd[0:2]) < 0.02
    return recovered, c, cd, tl, plans


# ----------------------------------------------------------------------------------- stabilizer
def test_stabilizer_follows_the_dcm_tracking_law_inside_the_polygon():
    tl = plan_stand(FEET, COM, PARAMS, SHAPE)
    ref = tl.sample(0.2)
    st = DCMStabilizer(k_dcm=2.5, margin=0.0)
    w = tl.omega
    com, vel = COM + [0.005, -0.003, 0.0], np.array([0.02, 0.01, 0.0])
    out = st.compute(ref, com, vel, tl.support_polygon(0.2))
    xi = com + vel / w
    expected = ref.zmp[0:2] + (1 + 2.5 / w) * (xi[0:2] - ref.dcm[0:2])
    np.testing.assert_allclose(out.zmp[0:2], expected, atol=1e-15)
    np.testing.assert_allclose(dcm_feedback_zmp(ref.zmp, ref.dcm, xi, w, 2.5), expected)
    assert not out.saturated
    np.testing.assert_allclose(out.com_acceleration[0:2], w * w * (com[0:2] - out.zmp[0:2]))


def test_stabilizer_saturates_on_the_support_polygon():
    tl = plan_stand(FEET, COM, PARAMS, SHAPE)
    st = DCMStabilizer(k_dcm=3.0, margin=0.01)
    poly = tl.support_polygon(0.0)
    out = st.compute(tl.sample(0.0), COM, [1.0, 0.0, 0.0], poly)
    assert out.saturated
    assert polygon.signed_distance(out.zmp, poly) == pytest.approx(-0.01, abs=1e-12)
    assert out.zmp[0] == pytest.approx(0.1 - 0.01)


def test_dcm_error_decays_at_the_commanded_rate():
    """On the LIPM, the unsaturated closed loop gives ė = −k e (up to the millisecond hold)."""
    tl = plan_stand(FEET, COM, PARAMS, SHAPE)
    k, w, dt = 4.0, tl.omega, 1e-3
    st = DCMStabilizer(k_dcm=k, margin=0.0)
    c, cd = COM.copy(), np.array([0.05, -0.04, 0.0])
    e0 = (c + cd / w)[0:2]
    for _ in range(500):
        out = st.compute(tl.sample(0.0), c, cd, tl.support_polygon(0.0))
        assert not out.saturated
        r, xi = out.zmp[0:2], (c + cd / w)[0:2]
        ex = math.exp(w * dt)
        xi_n = r + ex * (xi - r)
        c_n = r + 0.5 * ex * (xi - r) + (c[0:2] - r - 0.5 * (xi - r)) / ex
        c[0:2], cd[0:2] = c_n, w * (xi_n - c_n)
    e = (c + cd / w)[0:2]
    # with the ZMP held over each step, the per-step factor is e^{ωdt} − (1 + k/ω)(e^{ωdt} − 1)
    factor = math.exp(w * dt) - (1 + k / w) * (math.exp(w * dt) - 1)
    np.testing.assert_allclose(e, e0 * factor**500, rtol=1e-9)
    np.testing.assert_allclose(e, e0 * math.exp(-k * 0.5), rtol=0.01)


def test_stabilizer_integral_is_bounded_and_resettable():
    tl = plan_stand(FEET, COM, PARAMS, SHAPE)
    st = DCMStabilizer(k_dcm=1.0, k_integral=2.0, integral_limit=0.01, margin=0.0)
    ref = tl.sample(0.0)
    for _ in range(1000):
        out = st.compute(ref, COM + [0.02, 0, 0], np.zeros(3), tl.support_polygon(0.0), dt=0.01)
    unconstrained = ref.zmp[0:2] + (1 + 1.0 / tl.omega) * np.array([0.02, 0.0])
    np.testing.assert_allclose(out.zmp_unconstrained[0:2], unconstrained + [0.01, 0.0], atol=1e-12)
    st.reset()
    out = st.compute(ref, COM + [0.02, 0, 0], np.zeros(3), tl.support_polygon(0.0))
    np.testing.assert_allclose(out.zmp_unconstrained[0:2], unconstrained, atol=1e-12)
    with pytest.raises(InputError):
        DCMStabilizer(k_dcm=-1.0)
    with pytest.raises(InputError):
        st.compute(ref, [0, math.nan, 0], np.zeros(3), tl.support_polygon(0.0))


# ----------------------------------------------------------------------------------- capture steps
def test_box_least_squares_is_the_constrained_minimum():
    rng = np.random.default_rng(7)
    grid = np.stack(np.meshgrid(np.linspace(-1, 1, 401), np.linspace(-0.5, 0.7, 401)), -1).reshape(-1, 2)
    for _ in range(20):
        M, y = rng.normal(size=(2, 2)), rng.normal(size=2) * 3
        lo, hi = np.array([-1.0, -0.5]), np.array([1.0, 0.7])
        u = _box_lsq(M, y, lo, hi)
        assert np.all(u >= lo - 1e-15) and np.all(u <= hi + 1e-15)
        best = np.min(np.sum((grid @ M.T - y) ** 2, axis=1))
        assert np.sum((M @ u - y) ** 2) <= best + 1e-12


def test_needs_step_when_the_capture_point_leaves_the_polygon():
    planner = CaptureStepPlanner(PARAMS, SHAPE, LIMITS, margin=0.01)
    poly = support_polygon([LEFT, RIGHT], SHAPE)
    assert not planner.needs_step([0.05, 0.0], poly)
    assert planner.needs_step([0.095, 0.0], poly)  # inside, but within the margin
    assert planner.needs_step([0.3, 0.1, 0.88], poly)


@pytest.mark.parametrize("velocity", [(0.45, 0.0, 0.0), (-0.35, 0.0, 0.0), (0.35, 0.25, 0.0)])
def test_recovery_step_lands_toward_the_capture_point(velocity):
    planner = CaptureStepPlanner(PARAMS, SHAPE, LIMITS)
    w = omega_of_height(HEIGHT)
    xi = dcm_of(COM, velocity, w)
    poly = support_polygon([LEFT, RIGHT], SHAPE)
    assert planner.needs_step(xi, poly)
    plan = planner.recovery(1.0, COM, velocity, FEET)
    assert plan.captured
    tl = plan.timeline
    # the plan starts from the measured state
    start = tl.evaluate(1.0)
    np.testing.assert_allclose(start["dcm"][0][0:2], xi[0:2], atol=1e-9)
    np.testing.assert_allclose(start["com_velocity"][0], velocity, atol=1e-9)
    # the step goes toward the capture point, and lands nearer to where the DCM is at touchdown
    step = plan.step
    before = FEET[step.foot].position[0:2]
    after = step.footstep.position[0:2]
    direction = xi[0:2] - poly.mean(axis=0)
    assert (after - before) @ direction > 0
    td = tl.evaluate(step.touchdown)["dcm"][0]
    assert np.linalg.norm(after - td[0:2]) < np.linalg.norm(before - td[0:2])
    np.testing.assert_allclose(plan.offset, after - before, atol=1e-12)
    # the touchdown DCM is inside what the feet span from then on, and the plan ends at rest
    future = [step.footstep, FEET[step.foot.other]] + [s.footstep for s in tl.steps]
    assert polygon.contains(support_polygon(future, SHAPE), td)
    end = tl.evaluate(tl.t_end + 6.0)
    np.testing.assert_allclose(end["com_velocity"][0], 0.0, atol=1e-3)
    # ZMP inside the support polygon every millisecond, including the weight transfer
    ts = np.arange(1.0, tl.t_end + 0.2, 1e-3)
    zmp = tl.evaluate(ts)["zmp"]
    assert max(polygon.signed_distance(z, tl.support_polygon(s)) for s, z in zip(ts, zmp)) <= 1e-9
    # every step within reach
    feet = dict(FEET)
    for s in tl.steps:
        assert step_violations(feet[s.foot.other], s.footstep, LIMITS) == []
        feet[s.foot] = s.footstep


def test_timing_adaptation_captures_what_the_nominal_timing_cannot():
    velocity = (0.45, 0.0, 0.0)
    fixed = CaptureStepPlanner(PARAMS, SHAPE, LIMITS, swing_durations=[PARAMS.single_support])
    adaptive = CaptureStepPlanner(PARAMS, SHAPE, LIMITS)
    slow, fast = fixed.recovery(0.0, COM, velocity, FEET), adaptive.recovery(0.0, COM, velocity, FEET)
    assert not slow.captured
    assert fast.captured
    assert fast.step.touchdown - fast.step.liftoff < PARAMS.single_support


@pytest.mark.parametrize("dv", [(0.45, 0.0, 0.0), (0.6, 0.0, 0.0), (-0.4, 0.0, 0.0)])
def test_lipm_recovers_from_pushes_standing_cannot(dv):
    stand = plan_stand(FEET, COM, PARAMS, SHAPE)
    alone = lipm_run(stand, 0.5, dv, stepping=False)
    assert not alone[0]
    ok, c, cd, _, plans = lipm_run(stand, 0.5, dv, stepping=True)
    assert ok, f"not recovered: CoM {c}, velocity {cd}"
    assert plans and np.sign(plans[0].offset[0]) == np.sign(dv[0])


@pytest.mark.parametrize("push_time, dv", [(1.3, (0.5, 0.0, 0.0)), (1.6, (0.0, 0.35, 0.0)), (2.2, (0.0, -0.35, 0.0))])
def test_lipm_walk_survives_pushes_with_online_step_adjustment(push_time, dv):
    plan = plan_from_velocity(VelocityCommand(0.2), LEFT, RIGHT, 6, PARAMS.step_duration, LIMITS, SHAPE)
    tl = plan_walk(plan, COM, PARAMS, SHAPE)
    assert lipm_run(tl, None, dv, stepping=False, duration=10.0)[0]  # the unpushed walk is fine
    assert not lipm_run(tl, push_time, dv, stepping=False, duration=10.0)[0]
    ok, c, _, _, plans = lipm_run(tl, push_time, dv, stepping=True, duration=10.0)
    assert ok and plans
    # the adjusted walk still goes forward, about as far as planned
    end = FootstepPlan.midpose(plan.final)
    assert abs(c[0] - end[0]) < 0.35


def test_lipm_walk_pushed_toward_its_stance_foot_is_saved_by_a_crossover_step():
    """Walking, pushed toward the stance foot just before the other foot lifts: no step on that
    foot's own side captures the DCM (the LIPM falls), a crossover step does. A crossing step is
    planned only when the own-side step leaves more than ``cross_residual`` uncaptured."""
    plan = plan_from_velocity(VelocityCommand(0.2), LEFT, RIGHT, 6, PARAMS.step_duration, LIMITS, SHAPE)
    tl = plan_walk(plan, COM, PARAMS, SHAPE)
    right = tl.steps[1]
    assert right.foot is Foot.RIGHT
    push_time, dv = right.liftoff - 0.05, (0.0, 0.3, 0.0)  # toward the left foot, its stance
    crossing = CaptureStepPlanner(PARAMS, SHAPE, LIMITS.scaled(max_cross=0.17, max_forward=0.4), cross_residual=0.03)
    assert not lipm_run(tl, push_time, dv, stepping=True, duration=10.0)[0]
    ok, _, _, _, plans = lipm_run(tl, push_time, dv, stepping=True, duration=10.0, planner=crossing)
    assert ok
    stance = tl.steps[0].footstep  # the left foot's foothold
    across = [p for p in plans if p.step.foot is Foot.RIGHT and stance.to_local(p.step.footstep.position)[1] > 0]
    assert across, "the right foot lands on the left foot's far side"
    first = across[0]
    assert stance.to_local(first.step.footstep.position)[0] >= SHAPE.length + LIMITS.clearance - 1e-9
    swing = first.timeline.swings[first.timeline.steps.index(first.step)]
    assert (swing.window, swing.lateral_window) == (CROSSING_WINDOWS[0], CROSSING_WINDOWS[1]), "ahead first"
    # the same push, a planner that tolerates 0.1 m uncaptured: no crossing step
    tolerant = CaptureStepPlanner(PARAMS, SHAPE, crossing.limits, cross_residual=0.1)
    t = push_time + 1e-3
    ref = tl.sample(t)
    pushed = ref.com_velocity + np.asarray(dv)
    for planner, crosses in ((crossing, True), (tolerant, False)):
        new = planner.adjust(tl, t, ref.com, pushed)
        assert new is not None and bool(stance.to_local(new.step.footstep.position)[1] > 0) is crosses
    with pytest.raises(InputError, match="cross_residual"):
        CaptureStepPlanner(PARAMS, SHAPE, LIMITS, cross_residual=-0.1)
    with pytest.raises(InputError, match="cross_speed"):
        CaptureStepPlanner(PARAMS, SHAPE, LIMITS, cross_speed=0.0)


def test_a_swing_in_flight_crosses_only_once_ahead_of_the_stance_sole_and_within_reach():
    """Re-planned in flight, a swing goes straight to its new foothold: across the stance foot only
    once it is wholly ahead of the stance sole, and no farther than ``cross_speed`` times the time
    left from where the foot is."""
    plan = plan_from_velocity(VelocityCommand(0.3), LEFT, RIGHT, 6, PARAMS.step_duration, LIMITS, SHAPE)
    tl = plan_walk(plan, COM, PARAMS, SHAPE)
    step = tl.steps[1]
    limits = LIMITS.scaled(max_cross=0.17, max_forward=0.45)
    stance = tl.footholds_at(step.liftoff)[Foot.LEFT]
    times = np.arange(step.liftoff + 0.02, step.touchdown - 0.06, 0.01)
    ahead = [stance.to_local(tl.swings[1].state(t).position)[0] >= SHAPE.length + limits.clearance for t in times]
    assert not ahead[0] and ahead[-1]
    for t, is_ahead in zip(times, ahead):
        ref = tl.sample(t)
        pushed = ref.com_velocity + np.array([0.0, 0.4, 0.0])
        for speed in (math.inf, 0.5):
            planner = CaptureStepPlanner(PARAMS, SHAPE, limits, cross_residual=0.03, cross_speed=speed)
            new = planner.adjust(tl, t, ref.com, pushed)
            if new is None:
                continue
            landing = stance.to_local(new.step.footstep.position)
            if landing[1] > 0:  # across
                assert is_ahead, f"crossed at {t:.2f} s before the foot was ahead"
                here = stance.to_local(tl.swings[1].state(t).position)
                assert np.all(np.abs(landing[0:2] - here[0:2]) <= speed * (new.step.touchdown - t) + 1e-9)
    crossed_late = [
        t
        for t, a in zip(times, ahead)
        if a
        and stance.to_local(
            CaptureStepPlanner(PARAMS, SHAPE, limits, cross_residual=0.03)
            .adjust(tl, t, tl.sample(t).com, tl.sample(t).com_velocity + np.array([0.0, 0.4, 0.0]))
            .step.footstep.position
        )[1]
        > 0
    ]
    assert crossed_late, "once ahead, the swing may cross"


def test_adjust_keeps_the_swing_continuous_and_leaves_a_tracked_plan_alone():
    plan = plan_from_velocity(VelocityCommand(0.2), LEFT, RIGHT, 4, PARAMS.step_duration, LIMITS, SHAPE)
    tl = plan_walk(plan, COM, PARAMS, SHAPE)
    planner = CaptureStepPlanner(PARAMS, SHAPE, LIMITS)
    step = tl.steps[0]
    t = step.liftoff + 0.3
    ref = tl.sample(t)
    assert planner.adjust(tl, t, ref.com, ref.com_velocity) is None  # on the plan: nothing to do
    pushed = ref.com_velocity + [0.25, 0.0, 0.0]
    new = planner.adjust(tl, t, ref.com, pushed)
    assert new is not None and new.captured
    np.testing.assert_allclose(
        new.timeline.evaluate(t)["dcm"][0][0:2], dcm_of(ref.com, pushed, tl.omega)[0:2], atol=1e-9
    )
    assert new.offset[0] > 0.0  # pushed forward: step further
    a, b = tl.foot_reference(step.foot, t), new.timeline.foot_reference(step.foot, t + 1e-9)
    np.testing.assert_allclose(b.pose, a.pose, atol=1e-8)
    np.testing.assert_allclose(b.velocity, a.velocity, atol=1e-6)
    np.testing.assert_allclose(b.acceleration, a.acceleration, atol=1e-4)
    land = new.timeline.foot_reference(step.foot, new.step.touchdown - 1e-9)
    np.testing.assert_allclose(land.pose, new.step.footstep.pose, atol=1e-7)
    # later steps moved with it
    for s_old, s_new in zip(tl.steps[1:], new.timeline.steps[1:]):
        np.testing.assert_allclose(s_new.footstep.position[0:2] - s_old.footstep.position[0:2], new.offset, atol=1e-12)


def test_planner_rejects_bad_input():
    with pytest.raises(InputError):
        CaptureStepPlanner(PARAMS, SHAPE, LIMITS, swing_durations=[0.0])
    with pytest.raises(InputError):
        CaptureStepPlanner(PARAMS, SHAPE, LIMITS, transfer=0.0)
    planner = CaptureStepPlanner(PARAMS, SHAPE, LIMITS)
    with pytest.raises(InputError):
        planner.recovery(0.0, [0, 0], np.zeros(3), FEET)
    with pytest.raises(InputError):
        planner.recovery(0.0, COM, np.zeros(3), {Foot.LEFT: LEFT})
