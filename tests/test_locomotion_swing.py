"""Swing-foot trajectories and the feet's references in a gait timeline."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.helpers import FOOT_SHAPE as SHAPE
from wbc.errors import InputError
from wbc.locomotion import (
    ContactState,
    Foot,
    Footstep,
    GaitParameters,
    StepLimits,
    SwingTrajectory,
    VelocityCommand,
    plan_from_velocity,
    plan_walk,
)

LIMITS = StepLimits(width=0.17, min_width=0.15, max_width=0.4, max_forward=0.3, max_turn=0.45, clearance=0.0)
LEFT = Footstep(Foot.LEFT, [-0.0088, 0.085, 0.0])
RIGHT = Footstep(Foot.RIGHT, [-0.0088, -0.085, 0.0])
COM = np.array([-0.003, 0.0012, 0.8767])

SWINGS = [
    (Footstep(Foot.LEFT, [0.0, 0.1, 0.0], 0.0), Footstep(Foot.LEFT, [0.3, 0.12, 0.0], 0.3)),
    (Footstep(Foot.RIGHT, [0.1, -0.1, 0.05], 1.0), Footstep(Foot.RIGHT, [-0.1, -0.3, 0.0], 0.6)),
    (Footstep(Foot.RIGHT, [0.0, 0.0, 0.0], 3.1), Footstep(Foot.RIGHT, [0.0, 0.0, 0.1], -3.1)),  # yaw wraps
]


def finite_difference_check(traj: SwingTrajectory, t0: float, t1: float) -> None:
    h = 1e-5
    for t in np.linspace(t0 + 2 * h, t1 - 2 * h, 41):
        a, b, c = traj.state(t - h), traj.state(t), traj.state(t + h)
        x = lambda s: np.array([*s.position, s.yaw])  # noqa: E731
        np.testing.assert_allclose((x(c) - x(a)) / (2 * h), b.velocity, atol=1e-6)
        np.testing.assert_allclose((c.velocity - a.velocity) / (2 * h), b.acceleration, atol=1e-4)


@pytest.mark.parametrize("case", range(len(SWINGS)))
def test_swing_starts_and_ends_at_the_footholds_at_rest(case):
    start, target = SWINGS[case]
    traj = SwingTrajectory.between(start, target, 1.0, 1.7, lift_height=0.06)
    s0, s1 = traj.state(1.0 + 1e-12), traj.state(1.7 - 1e-12)
    np.testing.assert_allclose(s0.position, start.position, atol=1e-9)
    np.testing.assert_allclose(s1.position, target.position, atol=1e-9)
    assert math.isclose(s0.yaw, start.yaw, abs_tol=1e-9)
    dyaw = s1.yaw - target.yaw
    assert math.isclose(math.atan2(math.sin(dyaw), math.cos(dyaw)), 0.0, abs_tol=1e-9)
    for s in (s0, s1):
        np.testing.assert_allclose(s.velocity, 0.0, atol=1e-8)
        np.testing.assert_allclose(s.acceleration, 0.0, atol=1e-6)  # C²: forces stay continuous
    mid = traj.state(1.35)
    assert math.isclose(mid.position[2], max(start.position[2], target.position[2]) + 0.06, abs_tol=1e-12)
    # the yaw takes the short way round
    yaws = [traj.state(t).yaw for t in np.linspace(1.0, 1.7, 50)]
    assert (
        max(yaws) - min(yaws)
        <= abs(math.atan2(math.sin(target.yaw - start.yaw), math.cos(target.yaw - start.yaw))) + 1e-9
    )
    finite_difference_check(traj, 1.0, 1.7)
    # outside the interval: held at rest
    np.testing.assert_allclose(traj.state(0.5).velocity, 0.0)
    np.testing.assert_allclose(traj.state(2.0).position, target.position)


def test_swing_stays_above_the_ground_and_lands_with_the_touchdown_velocity():
    start, target = SWINGS[0]
    traj = SwingTrajectory.between(start, target, 0.0, 0.6, lift_height=0.05, touchdown_velocity=0.1)
    zs = [traj.state(t).position[2] for t in np.linspace(0.0, 0.6, 301)]
    assert min(zs) >= -1e-12
    end = traj.state(0.6 - 1e-12)
    assert math.isclose(end.velocity[2], -0.1, abs_tol=1e-8)
    np.testing.assert_allclose(end.velocity[[0, 1, 3]], 0.0, atol=1e-8)


def test_replanned_swing_is_continuous_and_lands_on_the_new_target():
    start, target = SWINGS[0]
    traj = SwingTrajectory.between(start, target, 0.0, 0.8, lift_height=0.05)
    new_target = target.moved([0.05, 0.08])
    for t_re, t_end in ((0.2, 0.7), (0.55, 0.9)):  # before and after the apex; shorter and longer
        re = traj.replanned(t_re, new_target, t_end)
        a, b = traj.state(t_re), re.state(t_re + 1e-12)
        np.testing.assert_allclose(b.position, a.position, atol=1e-9)
        np.testing.assert_allclose(b.velocity, a.velocity, atol=1e-8)
        np.testing.assert_allclose(b.acceleration, a.acceleration, atol=1e-6)
        end = re.state(t_end - 1e-12)
        np.testing.assert_allclose(end.position, new_target.position, atol=1e-9)
        np.testing.assert_allclose(end.velocity, 0.0, atol=1e-8)
        finite_difference_check(re, t_re, t_end)
    with pytest.raises(InputError):
        traj.replanned(0.3, Footstep(Foot.RIGHT, [0, 0, 0]), 0.9)


def test_swing_rejects_bad_input():
    start, target = SWINGS[0]
    with pytest.raises(InputError):
        SwingTrajectory.between(start, target, 1.0, 1.0)
    with pytest.raises(InputError):
        SwingTrajectory.between(start, target, 0.0, 1.0, lift_height=-0.1)
    with pytest.raises(InputError):
        SwingTrajectory.between(start, Footstep(Foot.RIGHT, [0, 0, 0]), 0.0, 1.0)


@pytest.mark.parametrize("command", [VelocityCommand(0.2), VelocityCommand(0.0, 0.0, 0.2)])
def test_timeline_feet_follow_the_plan(command):
    """Stance feet hold their footholds; each swing leaves one foothold and lands on the next, at rest."""
    p = GaitParameters(single_support=0.7, double_support=0.25, lift_height=0.04)
    plan = plan_from_velocity(command, LEFT, RIGHT, 4, p.step_duration, LIMITS, SHAPE)
    tl = plan_walk(plan, COM, p, SHAPE)
    assert [s.footstep for s in tl.steps] == list(plan.steps)
    for k, step in enumerate(tl.steps):
        before = plan.footholds_after(k)[step.foot]
        other = plan.footholds_after(k)[step.foot.other]
        eps = 1e-9
        lift, land = (
            tl.foot_reference(step.foot, step.liftoff + eps),
            tl.foot_reference(step.foot, step.touchdown - eps),
        )
        assert lift.state is ContactState.SWING and land.state is ContactState.SWING
        assert lift.liftoff == step.liftoff and lift.touchdown == step.touchdown
        np.testing.assert_allclose(lift.pose, before.pose, atol=1e-7)
        np.testing.assert_allclose(land.pose, step.footstep.pose, atol=1e-7)
        for ref in (lift, land):
            np.testing.assert_allclose(ref.velocity, 0.0, atol=1e-6)
        apex = tl.foot_reference(step.foot, 0.5 * (step.liftoff + step.touchdown))
        assert math.isclose(apex.pose[2, 3], 0.04, abs_tol=1e-12)
        # the other foot is in stance on its foothold throughout
        for t in np.linspace(step.liftoff, step.touchdown, 7):
            ref = tl.foot_reference(step.foot.other, t)
            assert ref.state is ContactState.STANCE
            np.testing.assert_allclose(ref.pose, other.pose)
            np.testing.assert_allclose(ref.velocity, 0.0)
        # at the touchdown instant the foot is in stance on its new foothold
        td = tl.foot_reference(step.foot, step.touchdown)
        assert td.state is ContactState.STANCE
        np.testing.assert_allclose(td.pose, step.footstep.pose)
        # the swing's spatial velocity is the derivative of its pose
        t, h = 0.3 * step.liftoff + 0.7 * step.touchdown, 1e-6
        a, b, c = (tl.foot_reference(step.foot, s) for s in (t - h, t, t + h))
        np.testing.assert_allclose((c.pose[0:3, 3] - a.pose[0:3, 3]) / (2 * h), b.velocity[0:3], atol=1e-6)
        dR = (c.pose[0:3, 0:3] - a.pose[0:3, 0:3]) / (2 * h) @ b.pose[0:3, 0:3].T
        np.testing.assert_allclose([dR[2, 1], dR[0, 2], dR[1, 0]], b.velocity[3:6], atol=1e-6)


def test_timeline_contact_queries():
    p = GaitParameters()
    plan = plan_from_velocity(VelocityCommand(0.2), LEFT, RIGHT, 3, p.step_duration, LIMITS, SHAPE)
    tl = plan_walk(plan, COM, p, SHAPE, t0=2.0)
    first = tl.steps[0]
    assert first.liftoff == pytest.approx(2.0 + p.initial_double_support)
    assert tl.next_liftoff(first.foot, 2.0) == first.liftoff
    assert tl.next_touchdown(first.foot, 2.0) == first.touchdown
    assert tl.contact_state(first.foot, first.liftoff + 0.1) is ContactState.SWING
    assert tl.contact_state(first.foot.other, first.liftoff + 0.1) is ContactState.STANCE
    assert tl.swing_intervals(Foot.LEFT) == [(s.liftoff, s.touchdown) for s in tl.steps if s.foot is Foot.LEFT]
    sample = tl.sample(first.liftoff + 0.1)
    assert sample.load[first.foot.other] == 1.0 and sample.load[first.foot] == 0.0
    assert sample.phase.swing is first.foot
    ds = tl.sample(first.touchdown + 0.5 * p.double_support)
    assert math.isclose(sum(ds.load.values()), 1.0)
    assert 0.0 < ds.load[Foot.LEFT] < 1.0
    # before the start: clamped
    assert tl.sample(0.0).t == 2.0


def test_heading_is_the_smooth_mean_yaw_of_the_feet():
    p = GaitParameters(single_support=0.7, double_support=0.25)
    plan = plan_from_velocity(VelocityCommand(0.1, 0.0, 0.25), LEFT, RIGHT, 6, p.step_duration, LIMITS, SHAPE)
    tl = plan_walk(plan, COM, p, SHAPE)
    ts = np.arange(0.0, tl.t_end, 2e-3)
    samples = [tl.sample(t) for t in ts]
    heading = np.array([s.heading for s in samples])
    rate = np.array([s.heading_rate for s in samples])
    np.testing.assert_allclose(np.gradient(heading, ts)[1:-1], rate[1:-1], atol=2e-3)
    assert np.max(np.abs(np.diff(heading))) <= np.max(np.abs(rate)) * 2e-3 * 1.01  # continuous: no jumps
    final = plan.final
    assert heading[-1] == pytest.approx(0.5 * (final[Foot.LEFT].yaw + final[Foot.RIGHT].yaw), abs=1e-12)
    R = samples[-1].heading_rotation()
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-15)
