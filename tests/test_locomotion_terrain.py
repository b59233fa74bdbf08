"""Terrain (wbc.locomotion.terrain): heights against MuJoCo's own ray casts on the same scene, footholds
on one surface each, swings clearing edges (and the unshaped swing that would not), tilted swing
references against finite differences, crossover steps in the step limits and the capture-step planner."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wbc.errors import InputError
from wbc.locomotion import (
    CaptureStepPlanner,
    Foot,
    FootShape,
    Footstep,
    GaitParameters,
    StepLimits,
    TerrainKind,
    TerrainSize,
    make_terrain,
    plan_from_state,
    plan_on_terrain,
    plan_walk,
    step_violations,
    support_polygon,
)
from wbc.locomotion.footsteps import tilt_rotation
from wbc.locomotion.polygon import signed_distance as polygon_signed_distance
from wbc.locomotion.swing import SwingState, SwingTrajectory
from wbc.locomotion.terrain import footstep_of_pose
from wbc.locomotion.timeline import CROSSING_WINDOWS, UNCROSSING_WINDOWS, TimedStep

SHAPE = FootShape(0.2, 0.13)
SIZE = TerrainSize(riser=0.15, tread=0.3, stone=(0.26, 0.2), stone_pitch=0.34, lane=0.17)
LIMITS = StepLimits(width=0.17, min_width=0.15, max_width=0.35, max_forward=0.36, max_height=0.16)
PARAMS = GaitParameters(single_support=0.8, double_support=0.3, initial_double_support=1.2, final_double_support=1.2)
START = (Footstep(Foot.LEFT, (0.0, 0.085, 0.0)), Footstep(Foot.RIGHT, (0.0, -0.085, 0.0)))
KINDS = [k for k in TerrainKind if k is not TerrainKind.FLAT]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
def test_heights_agree_with_mujoco_ray_casts(kind):
    """The planner's heights and MuJoCo's (a ray down onto the scene wbc.sim.terrain builds): equal to
    1e-12 on patches, 1e-8 on the height field (the same triangles; MuJoCo keeps its samples in float32)."""
    mujoco = pytest.importorskip("mujoco")
    from wbc.sim.terrain import add_terrain

    terrain = make_terrain(kind, SIZE)
    spec = mujoco.MjSpec()
    add_terrain(spec, terrain)
    m = spec.compile()
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(200):
        x, y = rng.uniform(-0.5, 3.5), rng.uniform(-0.5, 0.5)
        geom = np.array([-1], dtype=np.int32)
        dist = mujoco.mj_ray(m, d, np.array([x, y, 2.0]), np.array([0.0, 0.0, -1.0]), None, 1, -1, geom)
        worst = max(worst, abs((2.0 - dist) - terrain.height([[x, y]])[0]))
    assert worst < (1e-8 if kind is TerrainKind.ROUGH else 1e-12), worst  # MuJoCo stores height fields in float32


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.value)
def test_plans_put_each_sole_on_one_surface_within_the_limits(kind):
    terrain = make_terrain(kind, SIZE)
    plan = plan_on_terrain(terrain, *START, 2.6, 0.25, LIMITS, SHAPE, max_climb=0.16)
    feet = dict(plan.initial)
    for k, fs in enumerate(plan.steps):
        assert step_violations(feet[fs.foot.other], fs, LIMITS, SHAPE) == [], f"step {k}"
        again = terrain.foothold(fs.foot, fs.position[0:2], fs.yaw, SHAPE, margin=0.01)
        assert again is not None, f"step {k} straddles an edge or a gap"
        assert abs(again.position[2] - fs.position[2]) < 1e-12
        assert abs(fs.position[2] - feet[fs.foot].position[2]) <= 0.16 + 1e-9, "one riser at a time"
        # the sole's corners rest on the surface: on the terrain (rough: at or above it)
        corners = np.array([fs.to_world((sx * 0.1, sy * 0.065)) for sx in (-1, 1) for sy in (-1, 1)])
        gap = corners[:, 2] - terrain.height(corners[:, 0:2])
        assert gap.min() > -1e-9 and (kind is TerrainKind.ROUGH or gap.max() < 1e-9)
        feet[fs.foot] = fs
    mid = 0.5 * (feet[Foot.LEFT].position + feet[Foot.RIGHT].position)
    assert mid[0] > 2.3
    if kind is TerrainKind.STAIRS:
        assert mid[2] == pytest.approx(4 * 0.15)
    if kind is TerrainKind.STAIRS_DOWN:
        assert mid[2] == pytest.approx(-4 * 0.15)


@pytest.mark.parametrize("kind", [TerrainKind.STAIRS, TerrainKind.STAIRS_DOWN, TerrainKind.STONES])
def test_swings_clear_the_terrain_and_an_unshaped_swing_would_not(kind):
    terrain = make_terrain(kind, SIZE)
    plan = plan_on_terrain(terrain, *START, 2.6, 0.25, LIMITS, SHAPE, max_climb=0.16)
    timeline = plan_walk(plan, (0.0, 0.0, 0.87), PARAMS, SHAPE, terrain=terrain)
    feet = dict(plan.initial)
    shaped = 0
    for step, swing in zip(timeline.steps, timeline.swings):
        start = feet[step.foot]
        assert terrain.clearance(swing, start, SHAPE) >= 0.0
        plain = SwingTrajectory(SwingState.at_rest(start), step.footstep, swing.t_start, swing.t_end, 0.05)
        if terrain.clearance(plain, start, SHAPE) < 0.0:
            shaped += 1
            assert swing.window != (0.0, 0.0) or swing.apex_height > plain.apex_height
        feet[step.foot] = step.footstep
    if kind is not TerrainKind.STONES:
        assert shaped >= 4, "each riser needs a shaped swing"


def test_a_swing_that_cannot_clear_raises_naming_the_step():
    """A target inside the first stair (planned at the floor's height over the tread)."""
    terrain = make_terrain(TerrainKind.STAIRS, SIZE)
    start = Footstep(Foot.LEFT, (0.0, 0.085, 0.0))
    target = Footstep(Foot.LEFT, (0.5, 0.085, 0.0))
    with pytest.raises(InputError, match="no swing of the left foot"):
        terrain.swing(SwingState.at_rest(start), target, 0.0, 0.8, 0.05, 0.0, SHAPE)


def test_tilted_swing_reference_matches_finite_differences():
    """Onto a 10° slope with a turn: the reference's twist and its derivative are those of the pose."""
    n = np.array([-math.sin(math.radians(10)), 0.0, math.cos(math.radians(10))])
    start = Footstep(Foot.LEFT, (0.0, 0.1, 0.0), 0.1)
    target = Footstep(Foot.LEFT, (0.3, 0.12, 0.05), 0.3, n)
    swing = SwingTrajectory(SwingState.at_rest(start), target, 0.0, 0.8, 0.05, window=(0.2, 0.1), flat_top=True)
    h = 1e-6
    for t in (0.1, 0.25, 0.4, 0.55, 0.7):
        pose, vel, acc = swing.reference(t)
        a, _, _ = swing.reference(t - h)
        b, vb, _ = swing.reference(t + h)
        _, va, _ = swing.reference(t - h)
        dR = (b[0:3, 0:3] - a[0:3, 0:3]) / (2 * h) @ pose[0:3, 0:3].T
        omega = np.array([dR[2, 1], dR[0, 2], dR[1, 0]])
        assert np.allclose((b[0:3, 3] - a[0:3, 3]) / (2 * h), vel[0:3], atol=1e-6)
        assert np.allclose(omega, vel[3:6], atol=1e-6)
        assert np.allclose((vb - va) / (2 * h), acc, atol=1e-4)  # O(h jerk) at the apex
    end, _, _ = swing.reference(0.8)
    assert np.allclose(end, target.pose, atol=1e-12)
    assert np.allclose(tilt_rotation(n)[:, 2], n)
    assert np.allclose(footstep_of_pose(Foot.LEFT, target.pose).pose, target.pose, atol=1e-12)


def test_crossover_steps_in_the_limits():
    stance = Footstep(Foot.RIGHT, (0.0, -0.085, 0.0))
    crossing = Footstep(Foot.LEFT, (0.3, -0.2, 0.0))  # ahead of the right sole, on its right
    beside = Footstep(Foot.LEFT, (0.0, -0.2, 0.0))  # through it
    assert [v[0] for v in step_violations(stance, crossing, LIMITS, SHAPE)] == ["min_width"]
    cross = LIMITS.scaled(max_cross=0.17)
    assert step_violations(stance, crossing, cross, SHAPE) == []
    assert "min_width" in [v[0] for v in step_violations(stance, beside, cross, SHAPE)]
    assert "min_width" in [v[0] for v in step_violations(stance, Footstep(Foot.LEFT, (0.3, -0.3, 0.0)), cross, SHAPE)]


def test_a_capture_point_beyond_the_loaded_foot_is_captured_only_by_crossing():
    """Pushed to the right (the DCM beyond the right foot): the left foot must cross; the right foot
    cannot unload in time. Without crossover the best plan does not capture the DCM."""
    left, right = START
    com, velocity = np.array([0.0, -0.03, 0.87]), np.array([0.0, -0.4, 0.0])  # DCM at y = -0.149
    limits = LIMITS.scaled(max_forward=0.25, max_backward=0.1)
    plain = CaptureStepPlanner(PARAMS, SHAPE, limits)
    crossing = CaptureStepPlanner(PARAMS, SHAPE, limits.scaled(max_cross=0.17, max_forward=0.4))
    feet = {Foot.LEFT: left, Foot.RIGHT: right}
    without = plain.recovery(1.0, com, velocity, feet)
    with_ = crossing.recovery(1.0, com, velocity, feet)
    assert not without.captured
    assert with_.captured and with_.step.foot is Foot.LEFT
    landing = with_.step.footstep.position
    assert landing[1] < right.position[1] - 0.02 and landing[0] >= SHAPE.length + LIMITS.clearance - 1e-9
    swing = with_.timeline.swings[0]
    assert swing.window != swing.lateral_window, "ahead first, then across"
    mid = swing.state(0.5 * (swing.t_start + swing.t_end)).position
    assert mid[1] > right.position[1] + SHAPE.width / 2, "still on its side halfway"


def test_a_crossover_step_is_ahead_of_the_stance_sole_before_it_crosses_and_is_not_rushed():
    """The crossing swing moves across only once it is wholly ahead of the stance sole (starting
    across beside it, Talos's leg was held by the legs' collision limit and landed 0.2 s late);
    its swing is at least ``min_cross_swing`` long."""
    left, right = START
    com, velocity = np.array([0.0, -0.03, 0.87]), np.array([0.0, -0.4, 0.0])
    limits = LIMITS.scaled(max_forward=0.4, max_backward=0.1, max_cross=0.17)
    fast = CaptureStepPlanner(PARAMS, SHAPE, limits).recovery(1.0, com, velocity, {Foot.LEFT: left, Foot.RIGHT: right})
    slow = CaptureStepPlanner(PARAMS, SHAPE, limits, min_cross_swing=0.5).recovery(
        1.0, com, velocity, {Foot.LEFT: left, Foot.RIGHT: right}
    )
    assert fast.step.touchdown - fast.step.liftoff < 0.5, "unconstrained, the shortest swing captures best"
    for plan in (fast, slow):
        assert plan.step.footstep.position[1] < right.position[1], "a crossing step"
    assert slow.step.touchdown - slow.step.liftoff >= 0.5 - 1e-9
    swing = slow.timeline.swings[0]
    y0 = swing.state(swing.t_start).position[1]
    for t in np.linspace(swing.t_start, swing.t_end, 401):
        p = swing.state(t).position
        if abs(p[1] - y0) > 1e-4:
            assert right.to_local(p)[0] >= SHAPE.length + LIMITS.clearance - 1e-6, f"across before ahead at {t:.3f} s"
    with pytest.raises(InputError, match="min_cross_swing"):
        CaptureStepPlanner(PARAMS, SHAPE, limits, min_cross_swing=-0.1)


def test_a_standing_crossover_step_can_land_turned_toe_in_and_stand_crossed():
    """``cross_yaw``: the crossing foot lands turned toward the stance foot's side by that much (its
    swing turning it on the way); ``close_crossing=False``: no closing step after it, the plan comes
    to rest on the crossed feet. The default keeps the foot straight and the closing step, and an
    own-side recovery step is not turned."""
    left, right = START
    com, velocity = np.array([0.0, -0.03, 0.87]), np.array([0.0, -0.4, 0.0])
    limits = LIMITS.scaled(max_forward=0.4, max_backward=0.1, max_cross=0.17)
    feet = {Foot.LEFT: left, Foot.RIGHT: right}
    default = CaptureStepPlanner(PARAMS, SHAPE, limits).recovery(1.0, com, velocity, feet)
    turned = CaptureStepPlanner(PARAMS, SHAPE, limits, cross_yaw=1.2, close_crossing=False).recovery(
        1.0, com, velocity, feet
    )
    for plan in (default, turned):
        assert plan.step.foot is Foot.LEFT and plan.step.footstep.position[1] < right.position[1], "a crossing step"
    assert default.step.footstep.yaw == pytest.approx(0.0) and len(default.timeline.steps) == 2
    assert turned.step.footstep.yaw == pytest.approx(right.yaw - 1.2), "toe in: turned toward the right"
    assert len(turned.timeline.steps) == 1, "no closing step"
    swing = turned.timeline.swings[0]
    yaws = [swing.state(t).yaw for t in (swing.t_start, swing.t_end)]
    assert yaws == pytest.approx([0.0, -1.2], abs=1e-6), "the swing turns the foot"
    end = turned.timeline.sample(turned.timeline.t_end + 0.5)
    middle = 0.5 * (turned.step.footstep.position + right.position)
    assert end.dcm[0:2] == pytest.approx(middle[0:2], abs=1e-6), "at rest between the crossed feet"
    # pushed forward, the recovery step is not a crossing one: not turned
    ahead = CaptureStepPlanner(PARAMS, SHAPE, limits, cross_yaw=1.2, close_crossing=False).recovery(
        1.0, np.array([0.03, 0.0, 0.87]), np.array([0.5, 0.0, 0.0]), feet
    )
    assert ahead.step.footstep.position[0] > 0.05 and ahead.step.footstep.yaw == pytest.approx(0.0)
    for bad in (-0.1, math.pi, math.nan):
        with pytest.raises(InputError, match="cross_yaw"):
            CaptureStepPlanner(PARAMS, SHAPE, limits, cross_yaw=bad)


def test_a_plan_from_a_moving_state_starts_from_its_dcm_and_comes_to_rest_between_the_feet():
    """:func:`plan_from_state` (the uncrossing step's plan): the plan's DCM at its start is the measured
    one (a moving CoM), and it comes to rest over the middle of the feet; a DCM the feet cannot bring
    back in time is met as far as they can (the start knot on the support polygon's edge). With a
    step, the plan takes it first."""
    left, right = START
    omega = math.sqrt(9.81 / 0.87)
    for velocity, exact in (((0.05, -0.1, 0.0), True), ((0.0, -1.5, 0.0), False)):
        com, vel = np.array([0.02, -0.03, 0.87]), np.array(velocity)
        tl = plan_from_state({Foot.LEFT: left, Foot.RIGHT: right}, com, vel, PARAMS, SHAPE, 2.0, omega)
        dcm = com + vel / omega
        start = tl.sample(2.0)
        assert start.com == pytest.approx(com) and tl.t0 == 2.0 and not tl.steps
        if exact:
            assert start.dcm[0:2] == pytest.approx(dcm[0:2], abs=1e-9)
        else:
            assert np.linalg.norm(start.dcm[0:2] - dcm[0:2]) > 0.05, "beyond what the feet can give"
            polygon = support_polygon([left, right], SHAPE)
            knot = tl.extra_knots[0][1]
            assert polygon_signed_distance(knot[0:2], polygon) == pytest.approx(0.0, abs=1e-9), "on the edge"
        assert tl.sample(tl.t_end + 0.5).dcm[0:2] == pytest.approx([0.0, 0.0], abs=1e-9)
    com, vel = np.array([0.02, -0.03, 0.87]), np.array([0.05, -0.1, 0.0])
    step = TimedStep(Footstep(Foot.LEFT, (0.3, 0.085, 0.0)), 2.4, 2.4 + PARAMS.single_support)
    tl = plan_from_state({Foot.LEFT: left, Foot.RIGHT: right}, com, vel, PARAMS, SHAPE, 2.0, omega, [step])
    assert tl.steps == (step,) and tl.extra_knots[0][0] == pytest.approx(2.2), "halfway to the lift-off"
    assert tl.sample(2.0).dcm[0:2] == pytest.approx((com + vel / omega)[0:2], abs=1e-9)
    assert tl.sample(tl.t_end + 0.5).dcm[0:2] == pytest.approx([0.15, 0.0], abs=1e-9)
    with pytest.raises(InputError, match="omega"):
        plan_from_state({Foot.LEFT: left, Foot.RIGHT: right}, com, vel, PARAMS, SHAPE, 2.0, 0.0)
    with pytest.raises(InputError, match=r"lifts off at 1\.9 s"):
        late = TimedStep(Footstep(Foot.LEFT, (0.3, 0.085, 0.0)), 1.9, 2.5)
        plan_from_state({Foot.LEFT: left, Foot.RIGHT: right}, com, vel, PARAMS, SHAPE, 2.0, omega, [late])


def _inside_sole(stance, position, shape, margin=0.0):
    x, y, _ = stance.to_local(position)
    return abs(x) < shape.length / 2 + margin and abs(y) < shape.width / 2 + margin


def test_the_step_after_a_crossover_step_goes_around_the_crossed_foot():
    """After the left foot crosses in front of the right one, the right foot's closing step goes
    from behind the crossed foot to its far side: it moves across first, while still behind it, then
    forward (a straight swing cuts through the crossed foot's sole: 9 % of its samples inside it)."""
    left, right = START
    com, velocity = np.array([0.0, -0.03, 0.87]), np.array([0.0, -0.4, 0.0])
    limits = LIMITS.scaled(max_forward=0.4, max_backward=0.1, max_cross=0.17)
    plan = CaptureStepPlanner(PARAMS, SHAPE, limits).recovery(1.0, com, velocity, {Foot.LEFT: left, Foot.RIGHT: right})
    crossing, closing = plan.timeline.steps[0:2]
    assert crossing.foot is Foot.LEFT and crossing.footstep.position[1] < right.position[1], "a crossing step"
    assert closing.foot is Foot.RIGHT
    crossed = crossing.footstep
    start = crossed.to_local(right.position)
    target = crossed.to_local(closing.footstep.position)
    assert start[1] > 0 > target[1] and start[0] < -SHAPE.length, "from behind, on the crossed foot's far side"
    swing = plan.timeline.swings[1]
    assert (swing.window, swing.lateral_window) == (UNCROSSING_WINDOWS[0], UNCROSSING_WINDOWS[1])
    samples = [swing.state(t).position for t in np.linspace(swing.t_start, swing.t_end, 201)]
    assert not any(_inside_sole(crossed, p, SHAPE, margin=0.02) for p in samples)
    straight = SwingTrajectory.between(right, closing.footstep, swing.t_start, swing.t_end)
    through = [
        _inside_sole(crossed, straight.state(t).position, SHAPE) for t in np.linspace(swing.t_start, swing.t_end, 201)
    ]
    assert sum(through) >= 10, "the straight swing goes through the crossed foot"
    # the crossing step itself still goes ahead first, then across
    first = plan.timeline.swings[0]
    assert (first.window, first.lateral_window) == (CROSSING_WINDOWS[0], CROSSING_WINDOWS[1])


def test_with_crossover_steps_a_step_is_needed_only_past_the_cross_trigger():
    """Talos pushed 520 N sideways holds it by its hip strategy, its DCM 6.4 mm outside the feet; a
    crossing step taken there fell. With crossover steps allowed, a step is needed only once the DCM
    is ``cross_trigger`` outside; without them the trigger is not used."""
    left, right = START
    poly = support_polygon([left, right], SHAPE)
    edge = right.position[1] - SHAPE.width / 2
    near, far = [0.0, edge - 0.005], [0.0, edge - 0.015]
    crossing = LIMITS.scaled(max_cross=0.17, max_forward=0.4)
    planner = CaptureStepPlanner(PARAMS, SHAPE, crossing, cross_trigger=0.01)
    assert not planner.needs_step(near, poly) and planner.needs_step(far, poly)
    assert CaptureStepPlanner(PARAMS, SHAPE, crossing).needs_step(near, poly)
    assert CaptureStepPlanner(PARAMS, SHAPE, LIMITS, cross_trigger=0.01).needs_step(near, poly)
    with pytest.raises(InputError, match="cross_trigger"):
        CaptureStepPlanner(PARAMS, SHAPE, crossing, cross_trigger=-0.01)
