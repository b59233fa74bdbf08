"""Walking torque-controlled in MuJoCo (wbc.sim.walking, demos/walk.py): the robot stays up and ends where the plan
ends; the commanded foot forces are continuous through lift-off and touchdown (the contact
schedule's ramps); every control step of the walk satisfies the full dynamics (Pinocchio's RNEA:
``M q̈ + h = Sᵀτ + Σ Jᵀ f``) and the enforced contacts accelerate as their pose feedback asks.

The planner's own properties (LIPM dynamics of the DCM reference, ZMP in the support polygon,
swing end points) are tested in tests/test_locomotion_*.py.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pinocchio as pin
import pytest

import wbc
from tests.helpers import robot_case, run_demo
from wbc import locomotion as loco

pytest.importorskip("mujoco")

walk = pytest.importorskip("wbc.sim.walking")
balance = pytest.importorskip("wbc.sim.balance")


class StepChecks:
    """Per control step: the EoM residual and the contact-acceleration residual, against Pinocchio."""

    def __init__(self, walker) -> None:
        self.case = robot_case(walker.robot)
        self.ctrl = walker.controller
        self.eom = 0.0  # largest |M q̈ + h − Sᵀτ − Σ Jᵀ f| (N m, N)
        self.contact = 0.0  # largest |contact acceleration − its pose feedback| of enforced contacts
        self.steps = 0
        self.statuses = set()

    def __call__(self, q, v, cmd) -> None:
        case, ctrl = self.case, self.ctrl
        model, pm = case.model, case.pin_model
        data = pm.createData()
        generalized = np.zeros(model.nv)
        generalized[model.actuated_v_indices] = cmd.tau
        pin.computeJointJacobians(pm, data, q)
        pin.forwardKinematics(pm, data, q, v, cmd.qdd)
        pin.updateFramePlacements(pm, data)
        for c in ctrl.contacts:
            fid = case.pin_frame(c.frame)
            J = pin.getFrameJacobian(pm, data, fid, pin.LOCAL)
            generalized += J.T @ (c.force_basis() @ cmd.forces[c.name])
            state = ctrl.contact_state(c.name)
            if state.active:
                placed = pin.SE3(state.placement[0:3, 0:3], state.placement[0:3, 3])
                error = pin.log6(placed.actInv(data.oMf[fid])).vector
                twist = pin.getFrameVelocity(pm, data, fid, pin.LOCAL).vector
                acc = pin.getFrameAcceleration(pm, data, fid, pin.LOCAL).vector
                self.contact = max(self.contact, float(np.abs(acc + state.kp * error + state.kd * twist).max()))
            else:
                assert np.abs(cmd.forces[c.name]).max() == 0.0, "a released contact carries no force"
        residual = pin.rnea(pm, data, q, v, cmd.qdd) - generalized
        self.eom = max(self.eom, float(np.abs(residual).max()))
        self.steps += 1
        self.statuses.add(cmd.status)


def walk_and_check(robot: str, command, n_steps: int):
    walker = walk.Walker(robot)
    timeline = walker.walk(command, n_steps)
    duration = timeline.steps[-1].touchdown + walker.params.final_double_support + 0.3
    checks = StepChecks(walker)
    run = walker.run(duration, progress=False, on_step=checks)
    return SimpleNamespace(
        walker=walker, timeline=timeline, run=run, summary=walk.summarize(walker, run, command), checks=checks
    )


@pytest.fixture(scope="module")
def talos_forward():
    return walk_and_check("talos", (0.2, 0.0, 0.0), 4)


def test_short_walk_stays_up_and_ends_at_the_commanded_displacement(talos_forward):
    timeline, summary = talos_forward.timeline, talos_forward.summary
    assert not summary["fell"] and summary["min_pelvis_height_ratio"] > 0.95
    assert summary["footsteps"] == len(timeline.steps) >= 4
    assert summary["failed_steps"] == 0, "every control step solved as posed"
    planned = np.array(summary["planned_displacement_m"])
    assert planned[0] > 0.8
    assert abs(summary["forward_m"] - planned[0]) < 0.02, "CoM ends over the final feet (2 cm)"
    assert abs(summary["lateral_m"] - planned[1]) < 0.02
    assert abs(summary["turn_deg"]) < 2.0
    assert summary["max_foot_slip_m"] < 0.005
    assert summary["max_footstep_error_m"] < 0.01, "the feet land where planned (1 cm)"


def test_forces_are_continuous_through_liftoff_and_touchdown(talos_forward):
    """The commanded normal force of a foot never jumps.

    Before lift-off it stays under the release ramp (the straight line from its force when the
    ramp starts to zero when the contact is released, 1 N slack); after touchdown under the rise
    ramp (zero to ``RISE_LOAD`` m g over ``rise``); at any time (after the first 50 ms of settling
    on the floor) it changes by at most 1.5 % of the weight per ms (measured 1.2 %: the other
    foot's landing impact, the swing task taking over a released foot).
    """
    walker, run = talos_forward.walker, talos_forward.run
    weight, dt = walker.weight, walk.DT
    normal, phase = run["normal_cmd"], run["phase"]
    releasing, swing = (list(walk.FootPhase).index(p) for p in (walk.FootPhase.RELEASING, walk.FootPhase.SWING))
    rise_per_step = walk.RISE_LOAD * weight / walker.rise * dt
    rise_steps = int(round(walker.rise / dt))
    for k in range(2):
        jumps = np.abs(np.diff(normal[:, k]))
        start = int(round(0.05 / dt))
        assert jumps[start:].max() < 0.015 * weight, f"foot {k}: largest change {jumps[start:].max():.1f} N in 1 ms"
        ramps = np.flatnonzero(np.diff((phase[:, k] == releasing).astype(int)) == 1) + 1  # first releasing step
        assert len(ramps) >= 2
        for s0 in ramps:
            end = s0 + np.argmax(phase[s0:, k] == swing)  # the first step released
            f0 = normal[s0 - 1, k]
            line = f0 * (1.0 - np.arange(1, end - s0 + 1) / (end - s0 + 1))
            over = normal[s0:end, k] - line
            assert over.max() <= 1.0, f"foot {k}: above its release ramp by {over.max():.1f} N"
            assert normal[end - 1, k] <= f0 / (end - s0) + 1.0, "released with (almost) no force"
            assert normal[end, k] == 0.0
        in_swing = (phase[:, k] == swing).astype(int)
        touchdowns = np.flatnonzero(np.diff(in_swing) == -1) + 1  # the first enforced step
        assert len(touchdowns) >= 2
        for i in touchdowns:
            bound = rise_per_step * np.arange(1, rise_steps)
            over = normal[i : i + rise_steps - 1, k] - bound
            assert over.max() <= 1e-6, f"foot {k}: above its rise ramp by {over.max():.2e} N after touchdown"


def test_every_walking_step_satisfies_the_full_dynamics(talos_forward):
    """Pinocchio's RNEA at each of the walk's control steps; enforced contacts follow their feedback."""
    run, checks = talos_forward.run, talos_forward.checks
    assert checks.steps == len(run["t"]) > 5000
    assert checks.statuses == {wbc.StepStatus.OPTIMAL}
    assert checks.eom < 1e-5, f"M qdd + h - S^T tau - J^T f up to {checks.eom:.2e}"  # |M qdd| ~ 1e3
    assert checks.contact < 1e-6, f"contact acceleration vs feedback up to {checks.contact:.2e}"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("robot", "command", "check"),
    [
        ("g1", (0.3, 0.0, 0.0), "forward"),
        ("talos", (0.0, 0.06, 0.0), "lateral"),
        ("g1", (0.0, 0.0, 0.3), "turn"),
    ],
)
def test_walks_sideways_turns_and_g1_forward(robot, command, check):
    result = walk_and_check(robot, command, 4)
    walker, summary, checks = result.walker, result.summary, result.checks
    assert not summary["fell"] and summary["failed_steps"] == 0
    assert checks.eom < 1e-5 and checks.contact < 1e-6
    planned = np.array(summary["planned_displacement_m"])
    assert abs(summary["forward_m"] - planned[0]) < 0.03
    assert abs(summary["lateral_m"] - planned[1]) < 0.03
    if check == "turn":
        final = walker.plan.final
        heading = 0.5 * (final[loco.Foot.LEFT].yaw + final[loco.Foot.RIGHT].yaw)
        assert heading > 0.3
        assert abs(math.radians(summary["turn_deg"]) - heading) < math.radians(5)


@pytest.mark.slow
def test_a_push_that_topples_the_standing_robot_is_recovered_by_stepping():
    """A 400 N forward push (0.1 s) on Talos standing: without steps it falls; with recovery steps
    (the capture point left the feet: a step toward it, a closing step) it stays up and stands again."""
    force = (400.0, 0.0, 0.0)
    _, _, standing = walk.stand_and_push("talos", force, duration=4.5, recover=False)
    assert standing["fell"]
    _, run, stepping = walk.stand_and_push("talos", force, duration=4.5)
    assert stepping["recovery_steps"] and stepping["footsteps"] >= 1
    assert not stepping["fell"] and stepping["min_pelvis_height_ratio"] > 0.9
    assert stepping["failed_steps"] == 0
    assert np.linalg.norm(run["dcm"][-1, 0:2] - run["com"][-1, 0:2]) < 0.01, "at rest again"


@pytest.mark.slow
def test_balance_push_sweep_with_stepping_runs_the_walking_controller():
    """``humanoid_balance.py --push-sweep --stepping``: one bisection step at 300 N forward survives."""
    force = balance.push_sweep("talos", 0.0, 600.0, iterations=1, stepping=True, direction_deg=0.0)
    assert force == 300.0


@pytest.mark.slow
def test_command_line_writes_the_summary_and_plots(tmp_path):
    """``demos/walk.py --steps 1 --out DIR``: summary.json with the issue's fields, five PNGs, the log."""
    summary, _ = run_demo("walk.py", ["--robot", "talos", "--command", "0.1", "0", "0", "--steps", "1"], tmp_path, 900)
    for key in ("distance_m", "average_speed_m_s", "fell", "max_foot_slip_m", "failed_steps", "turn_deg"):
        assert key in summary
    assert not summary["fell"] and summary["footsteps"] == 2
    for name in ("tracking", "top", "forces", "torques", "step_time"):
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    assert (tmp_path / "log.npz").exists()


def test_a_diverged_simulation_is_a_fall_with_a_consistent_log():
    """A pelvis push MuJoCo cannot integrate (10¹² N at 0.3 s) while G1 stands before its first step:
    the run stops at the diverged step, every per-step log has one row per logged step (the step
    time was once logged before the simulator step, one row longer: ``summarize`` then raised an
    IndexError), and the summary says it fell because the simulation diverged."""
    walker = walk.Walker("g1")
    walker.walk((0.2, 0.0, 0.0), 4)
    run = walker.run(1.0, pushes=[(0.3, np.array([1e12, 0.0, 0.0]), 0.05)], progress=False)
    assert run["fell"] and "diverged" in run["diverged"]
    assert {len(run[k]) for k in walk._Log.KEYS} == {300}, "one row per step up to the diverged one"
    summary = walk.summarize(walker, run)
    assert summary["fell"] and summary["diverged"]
    assert summary["duration_s"] == 0.3 and summary["height_gained_m"] == 0.0
    run["step_us"] = np.append(run["step_us"], 1.0)
    with pytest.raises(wbc.InputError, match="different lengths"):
        walk.summarize(walker, run)


def test_height_gained_counts_loaded_stance_soles_only():
    """``height_gained_m`` is the highest height a stance sole carrying weight reached: a sole flung
    up as the robot falls, its contact still enforced but unloaded, does not count (G1 falling on
    rough ground once reported 0.43 m gained on ±2 cm of terrain)."""
    stance, swing = list(walk.FootPhase).index(walk.FootPhase.STANCE), list(walk.FootPhase).index(walk.FootPhase.SWING)
    weight = 300.0
    soles = np.zeros((4, 2, 3))
    soles[1, 0, 2] = 0.1  # the left sole up 10 cm, loaded: gained
    soles[2, 1, 2] = 0.2  # the right sole up 20 cm, swinging: not standing
    soles[3, 1, 2] = 0.4  # the right sole up 40 cm, in stance but unloaded: not standing
    run = {
        "soles": soles,
        "phase": np.array([[stance, stance], [stance, stance], [stance, swing], [stance, stance]]),
        "normal_sim": np.array([[150.0, 150.0], [300.0, 0.0], [300.0, 0.0], [300.0, 0.0]]),
    }
    assert walk._height_gained(run, weight) == pytest.approx(0.1)
    run["normal_sim"][3, 1] = 0.1 * weight
    assert walk._height_gained(run, weight) == pytest.approx(0.4)


@pytest.mark.parametrize(
    ("robot", "message"),
    [
        ("panda", r"robot 'panda' cannot walk: it has a fixed base"),
        ("go2", r"robot 'go2' cannot walk: the walking controller needs soles, not point feet"),
        ("romeo", r"robot 'romeo' cannot walk: no gait settings \(wbc.sim.walking.GAITS has talos, g1\)"),
    ],
)
def test_robots_that_cannot_walk_raise_clear_errors(robot, message):
    """A robot without a floating base, soles or gait settings: a ModelError naming it and what is
    missing (was a raw KeyError)."""
    with pytest.raises(wbc.ModelError, match=message):
        walk.Walker(robot)
