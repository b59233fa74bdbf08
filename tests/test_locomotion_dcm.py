"""The DCM / CoM reference of gait timelines: LIPM dynamics, rest at both ends, ZMP in the support polygon.

Oracles: finite differences of the closed forms (the LIPM equations must hold pointwise), and an
independent numerical solution of the same boundary-value problem (the DCM integrated backwards
from the final rest, the CoM forwards, with an adaptive Runge-Kutta solver).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from wbc.errors import InputError
from wbc.locomotion import (
    DCMTrajectory,
    Foot,
    FootShape,
    Footstep,
    GaitParameters,
    PhaseKind,
    PiecewiseLinearZMP,
    StepLimits,
    VelocityCommand,
    plan_from_footsteps,
    plan_from_velocity,
    plan_stand,
    plan_walk,
    polygon,
)

SHAPE = FootShape(0.2, 0.13)  # Talos' sole
LIMITS = StepLimits(width=0.17, min_width=0.15, max_width=0.4, max_forward=0.3, max_turn=0.45, clearance=0.0)
LEFT = Footstep(Foot.LEFT, [-0.0088, 0.085, 0.0])
RIGHT = Footstep(Foot.RIGHT, [-0.0088, -0.085, 0.0])
COM = np.array([-0.003, 0.0012, 0.8767])

COMMANDS = {
    "forward": VelocityCommand(0.2, 0.0, 0.0),
    "backward": VelocityCommand(-0.1, 0.0, 0.0),
    "left": VelocityCommand(0.0, 0.08, 0.0),
    "right": VelocityCommand(0.0, -0.08, 0.0),
    "turn_in_place": VelocityCommand(0.0, 0.0, 0.2),
    "arc": VelocityCommand(0.15, 0.03, -0.15),
}
PARAMS = {
    "centre": GaitParameters(single_support=0.8, double_support=0.2),
    "heel_toe_inward": GaitParameters(
        single_support=0.6, double_support=0.15, initial_double_support=0.8, zmp_heel_toe=(-0.03, 0.05), zmp_inward=0.02
    ),
}


def walk(command: str, params: str = "centre", n: int = 5):
    p = PARAMS[params]
    plan = plan_from_velocity(COMMANDS[command], LEFT, RIGHT, n, p.step_duration, LIMITS, SHAPE)
    return plan, plan_walk(plan, COM, p, SHAPE, t0=0.3)


def knot_distance(tl, t: np.ndarray) -> np.ndarray:
    return np.min(np.abs(t[:, None] - tl.zmp_plan.times[None, :]), axis=1)


@pytest.mark.parametrize("params", sorted(PARAMS))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_reference_satisfies_the_lipm_dynamics(command, params):
    """ξ̇ = ω(ξ − v), ċ = ω(ξ − c), c̈ = ω²(c − v) against central differences of ξ, c and ċ."""
    _, tl = walk(command, params)
    w, h = tl.omega, 1e-4
    t = np.arange(tl.t0 + 2 * h, tl.t_end + 1.0, 2.3e-3)
    t = t[knot_distance(tl, t) > 3 * h]  # second derivatives jump at the knots (the ZMP's slope does)
    ev, ep, em = tl.evaluate(t), tl.evaluate(t + h), tl.evaluate(t - h)
    fd = {k: (ep[k] - em[k]) / (2 * h) for k in ("dcm", "com", "com_velocity")}
    vrp = ev["zmp"] + np.array([0.0, 0.0, 9.81 / w**2])
    np.testing.assert_allclose(fd["dcm"], w * (ev["dcm"] - vrp), atol=1e-7)
    np.testing.assert_allclose(fd["com"], ev["com_velocity"], atol=1e-7)
    np.testing.assert_allclose(fd["com_velocity"], ev["com_acceleration"], atol=1e-6)
    np.testing.assert_allclose(ev["com_velocity"], w * (ev["dcm"] - ev["com"]), atol=1e-12)
    np.testing.assert_allclose(ev["com_acceleration"], w * w * (ev["com"] - vrp), atol=1e-12)
    np.testing.assert_allclose(ev["dcm_velocity"], w * (ev["dcm"] - vrp), atol=1e-12)
    # the ZMP's velocity is its derivative
    np.testing.assert_allclose((ep["zmp"] - em["zmp"]) / (2 * h), ev["zmp_velocity"], atol=1e-9)


@pytest.mark.parametrize("command", ["forward", "arc"])
def test_reference_matches_an_independent_numerical_solution(command):
    """The closed forms against RK45: the DCM integrated backwards from the final rest, the CoM forwards."""
    _, tl = walk(command)
    w = tl.omega
    dz = np.array([0.0, 0.0, 9.81 / w**2])
    t_end = tl.t_end

    def vrp(t):
        return tl.zmp_plan(t)[0][0] + dz

    back = solve_ivp(
        lambda t, x: w * (x - vrp(t)),
        (t_end, tl.t0),
        tl.zmp_plan.points[-1] + dz,
        rtol=1e-11,
        atol=1e-13,
        max_step=0.01,
        dense_output=True,
    )
    fwd = solve_ivp(
        lambda t, c: w * (back.sol(t) - c),
        (tl.t0, t_end),
        COM,
        rtol=1e-11,
        atol=1e-13,
        max_step=0.01,
        dense_output=True,
    )
    t = np.linspace(tl.t0, t_end, 777)
    ev = tl.evaluate(t)
    np.testing.assert_allclose(back.sol(t).T, ev["dcm"], atol=1e-8)
    np.testing.assert_allclose(fwd.sol(t).T, ev["com"], atol=1e-8)


@pytest.mark.parametrize("params", sorted(PARAMS))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_starts_and_ends_at_rest(command, params):
    plan, tl = walk(command, params)
    ev = tl.evaluate(np.array([tl.t0, tl.t_end, tl.t_end + 6.0]))
    np.testing.assert_allclose(ev["dcm"][0], COM, atol=1e-12)  # ξ = c: at rest
    np.testing.assert_allclose(ev["com_velocity"][0], 0.0, atol=1e-12)
    np.testing.assert_allclose(ev["com_acceleration"][0], 0.0, atol=1e-12)  # ZMP under the CoM
    final = plan.final
    mid = 0.5 * (final[Foot.LEFT].position + final[Foot.RIGHT].position)
    np.testing.assert_allclose(ev["zmp"][1], mid, atol=1e-12)
    np.testing.assert_allclose(ev["dcm"][1][0:2], mid[0:2], atol=1e-12)
    np.testing.assert_allclose(ev["com"][2][0:2], mid[0:2], atol=2e-5)  # converging as e^{-ω t}
    np.testing.assert_allclose(ev["com"][:, 2], COM[2], atol=1e-12)  # flat ground: constant height
    np.testing.assert_allclose(ev["com_velocity"][2], 0.0, atol=1e-4)


def support_polygon_at(tl, t: float) -> np.ndarray:
    return tl.support_polygon(t)


@pytest.mark.parametrize("params", sorted(PARAMS))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_zmp_stays_inside_the_support_polygon_at_every_sample(command, params):
    """Every millisecond, the planned ZMP is inside the soles in contact (convex hull in double support)."""
    _, tl = walk(command, params)
    t = np.arange(tl.t0, tl.t_end + 0.5, 1e-3)
    zmp = tl.evaluate(t)["zmp"]
    worst = -np.inf
    for k in range(len(t)):
        worst = max(worst, polygon.signed_distance(zmp[k], tl.support_polygon(t[k])))
    assert worst <= 1e-9, f"ZMP leaves the support polygon by {worst} m"
    # and it is continuous: no jump larger than its top speed allows
    assert np.max(np.linalg.norm(np.diff(zmp, axis=0), axis=1)) < 1e-3 * 2.0


def test_single_support_zmp_is_on_the_stance_foot():
    _, tl = walk("forward")
    for ph in tl.phases:
        if ph.kind is PhaseKind.SINGLE_SUPPORT:
            mid = 0.5 * (ph.t_start + ph.t_end)
            zmp = tl.evaluate(mid)["zmp"][0]
            stance = tl.footholds_at(mid)[ph.stance[0]]
            assert SHAPE.contains(stance, zmp)
            assert not SHAPE.contains(tl.footholds_at(mid)[ph.swing], zmp)


def test_explicit_footsteps_with_heights():
    """A staircase: the VRP rises with the footholds, the CoM height follows, the LIPM still holds."""
    steps, z = [], 0.0
    x = -0.0088
    for k in range(4):
        x += 0.2
        z += 0.05
        foot = Foot.LEFT if k % 2 == 0 else Foot.RIGHT
        steps.append(Footstep(foot, [x, foot.side * 0.085, z], 0.0))
    steps.append(Footstep(Foot.LEFT, [x, 0.085, z]))
    plan = plan_from_footsteps(LEFT, RIGHT, steps, LIMITS, SHAPE)
    p = PARAMS["centre"]
    tl = plan_walk(plan, COM, p, SHAPE)
    ev = tl.evaluate(np.array([tl.t_end + 8.0]))
    np.testing.assert_allclose(ev["com"][0][2], COM[2] + z, atol=1e-5)
    w, h = tl.omega, 1e-4
    t = np.arange(tl.t0 + 2 * h, tl.t_end, 3.1e-3)
    t = t[knot_distance(tl, t) > 3 * h]
    ev, ep, em = tl.evaluate(t), tl.evaluate(t + h), tl.evaluate(t - h)
    np.testing.assert_allclose((ep["com_velocity"] - em["com_velocity"]) / (2 * h), ev["com_acceleration"], atol=1e-6)
    np.testing.assert_allclose(ev["com_acceleration"], w * w * (ev["com"] - ev["vrp"]), atol=1e-12)


def test_standing_timeline_moves_the_com_over_the_middle_of_the_feet():
    com = COM + np.array([0.02, 0.03, 0.0])
    tl = plan_stand({Foot.LEFT: LEFT, Foot.RIGHT: RIGHT}, com, PARAMS["centre"], SHAPE)
    ev = tl.evaluate(np.array([0.0, 8.0]))
    np.testing.assert_allclose(ev["com_velocity"][0], 0.0, atol=1e-12)
    np.testing.assert_allclose(ev["com"][1][0:2], [-0.0088, 0.0], atol=1e-5)
    assert all(ph.kind is PhaseKind.DOUBLE_SUPPORT for ph in tl.phases)


def test_too_short_initial_double_support_is_refused():
    """Starting from rest with the CoM far off the middle needs a ZMP outside the feet: a clear error."""
    com = COM + np.array([0.0, 0.06, 0.0])  # over the left foot, the first stance foot is the right one
    p = GaitParameters(initial_double_support=0.3)
    plan = plan_from_velocity(VelocityCommand(0.1), LEFT, RIGHT, 2, p.step_duration, LIMITS, SHAPE)
    with pytest.raises(InputError, match="initial_double_support"):
        plan_walk(plan, com, p, SHAPE)
    plan_walk(plan, com, GaitParameters(initial_double_support=0.8), SHAPE)  # long enough


def test_dcm_trajectory_single_knot_and_bad_input():
    zmp = PiecewiseLinearZMP([0.0], [[0.1, 0.2, 0.0]])
    d = DCMTrajectory(zmp, 3.0, [0.1, 0.2, 9.81 / 9.0])
    ev = d.evaluate([0.0, 1.0])
    np.testing.assert_allclose(ev["com_velocity"], 0.0, atol=1e-15)
    with pytest.raises(InputError):
        PiecewiseLinearZMP([0.0, 0.0], np.zeros((2, 3)))
    with pytest.raises(InputError):
        PiecewiseLinearZMP([0.0, 1.0], np.zeros((3, 3)))
    with pytest.raises(InputError):
        DCMTrajectory(zmp, -1.0, np.zeros(3))
    with pytest.raises(InputError):
        DCMTrajectory(zmp, 3.0, [0.0, math.nan, 1.0])
