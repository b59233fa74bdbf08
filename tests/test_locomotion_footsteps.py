"""Footstep plans from velocity commands and from lists, and the support-polygon geometry."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.spatial import ConvexHull

from tests.helpers import FOOT_SHAPE as SHAPE
from wbc.errors import InputError
from wbc.locomotion import (
    Foot,
    FootShape,
    Footstep,
    FootstepPlan,
    StepLimits,
    VelocityCommand,
    integrate_twist,
    plan_from_footsteps,
    plan_from_velocity,
    polygon,
    step_violations,
    support_polygon,
)

LIMITS = StepLimits(width=0.2, min_width=0.17, max_width=0.4, max_forward=0.3, max_turn=0.5, clearance=0.0)
LEFT = Footstep(Foot.LEFT, [0.1, 1.1, 0.0], 0.3)
RIGHT = Footstep(Foot.RIGHT, [0.1 + 0.2 * math.sin(0.3), 1.1 - 0.2 * math.cos(0.3), 0.0], 0.3)
T = 0.9


def final_midpose(plan: FootstepPlan) -> np.ndarray:
    return FootstepPlan.midpose(plan.final)


@pytest.mark.parametrize(
    "command",
    [
        VelocityCommand(0.2),
        VelocityCommand(-0.1),
        VelocityCommand(0.0, 0.1),
        VelocityCommand(0.0, -0.1),
        VelocityCommand(0.0, 0.0, 0.25),
        VelocityCommand(0.0, 0.0, -0.25),
        VelocityCommand(0.15, 0.0, 0.2),
        VelocityCommand(0.1, -0.05, -0.1),
    ],
)
@pytest.mark.parametrize("n", [1, 4, 7])
def test_velocity_plan_realizes_the_commanded_displacement_and_heading(command, n):
    plan = plan_from_velocity(command, LEFT, RIGHT, n, T, LIMITS, SHAPE)
    assert plan.command == command  # within the limits: not scaled
    assert len(plan.steps) == n + 1
    x0, y0, th0 = FootstepPlan.midpose(plan.initial)
    x, y, th = final_midpose(plan)
    duration = n * T
    # independent closed forms of the body displacement (world frame)
    vx, vy, w = command.vx, command.vy, command.yaw_rate
    if w == 0.0:
        dx_b, dy_b = vx * duration, vy * duration
    else:  # a circular arc: rotate the body velocity by the mean heading of the chord
        a = w * duration
        chord = 2.0 * math.sin(a / 2) / w
        c, s = math.cos(a / 2), math.sin(a / 2)
        dx_b, dy_b = chord * (c * vx - s * vy), chord * (s * vx + c * vy)
    dx = math.cos(th0) * dx_b - math.sin(th0) * dy_b
    dy = math.sin(th0) * dx_b + math.cos(th0) * dy_b
    np.testing.assert_allclose([x - x0, y - y0], [dx, dy], atol=1e-12)
    assert math.isclose(th - th0, w * duration, abs_tol=1e-12)
    np.testing.assert_allclose(integrate_twist([x0, y0, th0], command, duration), [x, y, th], atol=1e-12)
    # ends standing: parallel feet at the nominal width
    final = plan.final
    assert math.isclose(final[Foot.LEFT].yaw, final[Foot.RIGHT].yaw, abs_tol=1e-12)
    rel = final[Foot.RIGHT].to_local(final[Foot.LEFT].position)
    np.testing.assert_allclose(rel, [0.0, LIMITS.width, 0.0], atol=1e-12)


@pytest.mark.parametrize(
    "command, first",
    [
        (VelocityCommand(0.2), Foot.LEFT),
        (VelocityCommand(0.0, 0.1), Foot.LEFT),
        (VelocityCommand(0.0, -0.1), Foot.RIGHT),
        (VelocityCommand(0.0, 0.0, -0.2), Foot.RIGHT),
        (VelocityCommand(0.1, 0.05, -0.2), Foot.LEFT),
    ],
)
def test_velocity_plan_alternates_feet_within_the_limits(command, first):
    plan = plan_from_velocity(command, LEFT, RIGHT, 6, T, LIMITS, SHAPE)
    feet = [s.foot for s in plan.steps]
    assert feet[0] is first
    assert all(a is not b for a, b in itertools.pairwise(feet))
    current = dict(plan.initial)
    for step in plan.steps:
        assert step_violations(current[step.foot.other], step, LIMITS, SHAPE) == []
        current[step.foot] = step


def test_sideways_steps_never_narrow_the_stance():
    plan = plan_from_velocity(VelocityCommand(0.0, 0.1), LEFT, RIGHT, 6, T, LIMITS, SHAPE)
    assert plan.command.vy == 0.1
    current = dict(plan.initial)
    widths = []
    for step in plan.steps:
        widths.append(step.foot.side * current[step.foot.other].to_local(step.position)[1])
        current[step.foot] = step
    assert min(widths) >= LIMITS.width - 1e-12
    assert max(widths) == pytest.approx(LIMITS.width + 2 * 0.1 * T)


def test_too_fast_a_command_is_scaled_to_the_limits():
    command = VelocityCommand(1.0, 0.0, 0.0)
    plan = plan_from_velocity(command, LEFT, RIGHT, 5, T, LIMITS, SHAPE)
    assert plan.command.vx == pytest.approx(LIMITS.max_forward / T, rel=1e-6)
    assert plan.command.vx <= LIMITS.max_forward / T + 1e-8  # the limits' tolerance is 1e-9 m
    turn = plan_from_velocity(VelocityCommand(0.0, 0.0, 2.0), LEFT, RIGHT, 5, T, LIMITS, SHAPE)
    assert turn.command.yaw_rate == pytest.approx(LIMITS.max_turn / (2 * T), rel=1e-6)  # the lead step turns 2ωT


def test_turning_in_place_keeps_the_soles_apart():
    limits = LIMITS.scaled(clearance=0.02)
    plan = plan_from_velocity(VelocityCommand(0.0, 0.0, 0.4), LEFT, RIGHT, 8, T, limits, SHAPE)
    current = dict(plan.initial)
    for step in plan.steps:
        assert not [v for v in step_violations(current[step.foot.other], step, limits, SHAPE) if v[0] == "clearance"]
        current[step.foot] = step


def test_footstep_list_is_checked_against_the_limits():
    ok = [Footstep(Foot.LEFT, LEFT.to_world((0.25, 0.0))), Footstep(Foot.RIGHT, RIGHT.to_world((0.5, 0.0)))]
    plan = plan_from_footsteps(LEFT, RIGHT, [Footstep(s.foot, s.position, 0.3) for s in ok], LIMITS, SHAPE)
    assert len(plan.steps) == 2
    too_far = [Footstep(Foot.LEFT, LEFT.to_world((0.5, 0.0)), 0.3)]
    with pytest.raises(InputError, match=r"step 0 .*max_forward"):
        plan_from_footsteps(LEFT, RIGHT, too_far, LIMITS, SHAPE)
    crossing = [Footstep(Foot.LEFT, RIGHT.to_world((0.0, -0.1)), 0.3)]
    with pytest.raises(InputError, match="min_width"):
        plan_from_footsteps(LEFT, RIGHT, crossing, LIMITS, SHAPE)
    twisted = [ok[0], Footstep(Foot.RIGHT, RIGHT.to_world((0.5, 0.0)), 1.3)]
    with pytest.raises(InputError, match=r"step 1 .*max_turn"):
        plan_from_footsteps(LEFT, RIGHT, twisted, LIMITS, SHAPE)
    high = [Footstep(Foot.LEFT, LEFT.position + [0.1, 0, 0.3], 0.3)]
    with pytest.raises(InputError, match="max_height"):
        plan_from_footsteps(LEFT, RIGHT, high, LIMITS, SHAPE)


def test_bad_inputs_are_refused():
    with pytest.raises(InputError):
        Footstep(Foot.LEFT, [0.0, math.nan, 0.0])
    with pytest.raises(InputError):
        Footstep("left", [0.0, 0.0, 0.0])
    with pytest.raises(InputError):
        VelocityCommand(math.inf)
    with pytest.raises(InputError):
        StepLimits(width=0.1, min_width=0.2)
    with pytest.raises(InputError):
        FootShape(0.0, 0.1)
    with pytest.raises(InputError):
        plan_from_velocity(VelocityCommand(0.1), LEFT, RIGHT, 0, T)
    with pytest.raises(InputError):
        plan_from_velocity(VelocityCommand(0.1), RIGHT, LEFT, 2, T)
    with pytest.raises(InputError):
        plan_from_velocity(VelocityCommand(0.1), LEFT, RIGHT, 2, -1.0)


# ----------------------------------------------------------------------------------- polygons
def test_convex_hull_matches_scipy():
    rng = np.random.default_rng(3)
    for _ in range(20):
        P = rng.normal(size=(rng.integers(3, 30), 2))
        hull = polygon.convex_hull(P)
        ref = P[ConvexHull(P).vertices]  # counter-clockwise
        assert len(hull) == len(ref)
        k = int(np.argmin(np.linalg.norm(ref - hull[0], axis=1)))
        np.testing.assert_allclose(np.roll(ref, -k, axis=0), hull, atol=1e-12)


def test_signed_distance_projection_and_shrink():
    rng = np.random.default_rng(4)
    square = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    assert polygon.signed_distance([0.5, 0.5], square) == pytest.approx(-0.5)
    assert polygon.signed_distance([2.0, 0.5], square) == pytest.approx(1.0)
    assert polygon.signed_distance([2.0, 2.0], square) == pytest.approx(math.sqrt(2))
    np.testing.assert_allclose(polygon.project([2.0, 2.0], square), [1.0, 1.0])
    np.testing.assert_allclose(polygon.project([0.3, 0.4], square), [0.3, 0.4])
    small = polygon.shrink(square, 0.1)
    np.testing.assert_allclose(np.sort(small, axis=0), np.sort(square * 0.8 + 0.1, axis=0), atol=1e-12)
    # projection: the closest point among a dense sampling of the boundary and the inside
    P = polygon.convex_hull(rng.normal(size=(12, 2)))
    edges = [P[i] + s * (P[(i + 1) % len(P)] - P[i]) for i in range(len(P)) for s in np.linspace(0, 1, 2001)]
    edges = np.array(edges)
    for _ in range(20):
        x = rng.normal(size=2) * 3
        proj = polygon.project(x, P)
        d = polygon.signed_distance(x, P)
        if d > 0:
            assert np.linalg.norm(x - proj) == pytest.approx(np.min(np.linalg.norm(edges - x, axis=1)), abs=2e-3)
            assert np.linalg.norm(x - proj) == pytest.approx(d, abs=1e-12)
        else:
            np.testing.assert_allclose(proj, x)
            assert -d == pytest.approx(np.min(np.linalg.norm(edges - x, axis=1)), abs=2e-3)


def test_support_polygon_of_two_feet():
    hull = support_polygon([LEFT, RIGHT], SHAPE)
    corners = np.vstack([SHAPE.corners(LEFT), SHAPE.corners(RIGHT)])
    assert len(hull) == 4  # two parallel rectangles side by side
    for c in corners:
        assert polygon.contains(hull, c)
    mid = 0.5 * (LEFT.position + RIGHT.position)
    assert polygon.signed_distance(mid, hull) == pytest.approx(-SHAPE.length / 2)
    with pytest.raises(InputError):
        support_polygon([], SHAPE)


def test_step_count_is_bounded_with_a_clear_error():
    """``n_steps`` beyond :data:`MAX_STEPS` is refused at once naming the bound (issue 24: before,
    ``Walker.walk(..., n_steps=10**7)`` planned without end)."""
    from wbc.locomotion import MAX_STEPS

    command = VelocityCommand(0.1, 0.0, 0.0)
    for bad in (10**7, MAX_STEPS + 1, 0, True, 2.0):
        with pytest.raises(InputError, match=rf"n_steps must be an integer from 1 to {MAX_STEPS}"):
            plan_from_velocity(command, LEFT, RIGHT, bad, T, LIMITS, SHAPE)
    assert len(plan_from_velocity(command, LEFT, RIGHT, 50, T, LIMITS, SHAPE).steps) == 51
