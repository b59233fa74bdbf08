"""Walking where robots walk, torque-controlled in MuJoCo (wbc.sim.walking with a terrain, crossover
steps, the faster gaits): the robot stays up, every control step solved, the feet land on the
surfaces the planner chose, the height gained is the stairs' (summary.json's ``height_gained_m``).

The default run climbs one stair with Talos; the other scenes, G1, crossover steps and the speed
runs are ``slow`` (each tens of simulated seconds)."""

from __future__ import annotations

import numpy as np
import pytest

from wbc import locomotion as loco

pytest.importorskip("mujoco")
walk = pytest.importorskip("wbc.sim.walking")


def walk_terrain(robot: str, kind: str, distance: float):
    walker = walk.Walker(robot, terrain=kind)
    timeline = walker.walk_terrain(distance)
    run = walker.run(timeline.steps[-1].touchdown + 1.0, progress=False)
    return walker, timeline, run, walk.summarize(walker, run)


def check_walk(walker, timeline, run, summary, height: float) -> None:
    assert not summary["fell"] and summary["failed_steps"] == 0
    assert summary["footsteps"] == len(timeline.steps)
    assert summary["min_pelvis_height_ratio"] > 0.8
    assert summary["max_foot_slip_m"] < 0.01
    assert summary["height_gained_m"] == pytest.approx(max(height, 0.0), abs=0.01)
    terrain = walker.terrain
    for t, foot, landed, planned, _ in run["touchdowns"]:
        assert np.hypot(landed[0] - planned[0], landed[1] - planned[1]) < 0.02, "lands where planned (2 cm)"
        k = list(loco.Foot).index(loco.Foot(foot))
        i = int(round(t / walk.DT))
        sole = run["soles"][min(i + 200, len(run["t"]) - 1), k]  # 0.2 s after touchdown
        assert abs(sole[2] - terrain.height([sole[0:2]])[0]) < 0.01, "standing on the surface under it"


def test_talos_climbs_a_stair_step_to():
    """Two risers up (15 cm each): the leading foot up a tread, the trailing foot beside it."""
    result = walk_terrain("talos", "stairs", 0.75)
    timeline = result[1]
    heights = [round(float(s.footstep.position[2]), 3) for s in timeline.steps]
    assert max(heights) == pytest.approx(0.3)
    check_walk(*result, height=max(heights))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("robot", "kind", "distance"),
    [
        ("talos", "stairs-down", 0.8),
        ("talos", "slope", 1.4),
        ("talos", "stones", 1.4),
        ("talos", "rough", 1.4),
        ("g1", "stairs", 0.7),
        ("g1", "stairs-down", 0.7),
        ("g1", "slope", 1.2),
        ("g1", "stones", 1.2),
        ("g1", "rough", 1.2),
    ],
)
def test_walks_every_terrain(robot, kind, distance):
    result = walk_terrain(robot, kind, distance)
    timeline = result[1]
    start = min(f.position[2] for f in timeline.feet0.values())
    check_walk(*result, height=max(s.footstep.position[2] for s in timeline.steps) - start)


@pytest.mark.slow
def test_a_lateral_push_toward_the_loaded_foot_is_met_by_a_crossover_step():
    """Pushed toward its right (540 N, 0.1 s), Talos's right foot carries the weight: the recovery
    step is the left foot crossing in front of it to land on its right, the legs' collision capsules
    never closer than the limit's margin (the SelfCollisionLimit held in MuJoCo) until the crossing
    foot lands, and the QP feasible as posed until it lifts off (the legs' barrier while both feet
    stand made it infeasible during the push, unloading both feet). (Whether the robot then stands
    is what the demo's ``--lateral-push`` reports: it does not yet, see the README.)"""
    from wbc.control.limits.collision import pair_distances

    walker = walk.Walker(
        "talos",
        adjust=True,
        k_dcm=walk.STANDING_K_DCM,
        clip_zmp=False,
        crossover=True,
        recovery_tolerance=walk.LATERAL_TOLERANCE,
    )
    qs = []
    run = walker.run(
        2.0,
        pushes=[(1.0, np.array([0.0, -540.0, 0.0]), 0.1)],
        recover=True,
        progress=False,
        on_step=lambda q, v, cmd: qs.append(q.copy()),
    )
    swing = list(walk.FootPhase).index(walk.FootPhase.SWING)
    lift = int(np.argmax(run["phase"][:, 0] == swing))
    assert lift > 0 and run["status"][:lift].all(), "every step solved as posed until the crossing foot lifts off"
    first = run["recoveries"][0]
    assert first["foot"] == "left" and first["landing"][1] < -0.085 - 0.1, "the left foot crossed to the right"
    ahead = first["landing"][0] - walker.feet0[loco.Foot.RIGHT].position[0]
    assert ahead >= walker.shape.length + walker.limits.clearance - 1e-3, "ahead of the right sole"
    landed = [td for td in run["touchdowns"] if td[1] == "left"]
    assert landed, "the crossing foot landed"
    end = int(round(landed[0][0] / walk.DT))
    d = np.array([pair_distances(walker.model, q, walker.leg_pairs) for q in qs[:end:5]])
    assert d.min() > walk.LEG_MARGIN - 2e-3, f"the legs came {d.min():.4f} m apart"


@pytest.mark.slow
@pytest.mark.parametrize("robot", ["talos", "g1"])
def test_fast_gaits_reach_the_issue_speeds(robot):
    """Talos >= 0.4 m/s, G1 >= 0.5 m/s forward over whole gait cycles (cruise speed), no fall."""
    walker = walk.Walker(robot, gait=walk.FAST_GAITS[robot])
    command, _ = walk.PRESETS["fast"][robot]
    timeline = walker.walk(command, 8)
    run = walker.run(timeline.steps[-1].touchdown + 1.0, progress=False)
    summary = walk.summarize(walker, run, command)
    assert not summary["fell"] and summary["failed_steps"] == 0
    assert summary["cruise_speed_m_s"] >= {"talos": 0.4, "g1": 0.5}[robot]


def test_g1_survives_a_lateral_push_by_a_crossover_step_and_falls_without():
    """Issue 28, item 2: G1 standing, pushed 230 N toward its right for 0.1 s (beyond the 222 N its
    hip strategy holds): without crossover steps it falls; with them its left foot crosses in front
    of the right one and lands on the right foot's far side turned a quarter turn toe in
    (:attr:`RobotGait.cross_yaw`, the pelvis turning with it), then the right foot steps beside it,
    turned the same way (:data:`wbc.sim.walking.CROSS_UNCROSS`), and the robot comes to rest facing
    the push, every control step solved as posed. Without any one of the crossover walker's settings
    it falls at this push (README, crossover steps)."""
    runs = walk.lateral_push_with_and_without_crossover("g1", 230.0, duration=4.5)
    _, without, _ = runs["without_crossover"]
    assert without["fell"] and not without["recoveries"], "the hip strategy alone does not hold it"
    walker, run, summary = runs["with_crossover"]
    assert not run["fell"] and summary["failed_steps"] == 0
    assert [r["foot"] for r in run["recoveries"]] == ["left"]
    crossing, closing = run["touchdowns"]
    right = walker.feet0[loco.Foot.RIGHT]
    turned = right.yaw - walk.GAITS["g1"].cross_yaw
    assert crossing[1] == "left" and right.to_local((*crossing[2][0:2], 0.0))[1] < -0.3, "0.3 m past the right foot"
    assert crossing[2][2] == pytest.approx(turned, abs=0.05), "turned toe in"
    left = loco.Footstep(loco.Foot.LEFT, (*crossing[2][0:2], 0.0), crossing[2][2])
    assert closing[1] == "right" and left.to_local((*closing[2][0:2], 0.0))[1] < -0.1, "on the left foot's right"
    assert closing[2][2] == pytest.approx(turned, abs=0.05), "turned as the left foot"
    end = run["com"][-100:, 0:2]
    assert np.linalg.norm(end[-1] - end[0]) < 0.01, "at rest"
    # the legs crossed yet stayed apart on their own collision meshes (MuJoCo: 6.8 cm at the nearest)
    assert summary["legs_min_distance_m"] > 0.02


@pytest.mark.slow
def test_the_legs_limit_leaves_the_hip_strategy_alone_while_both_feet_stand():
    """Pushed 520 N toward its right, standing Talos holds it by its hip strategy, also with the
    legs' collision limit of crossover steps in its QP: at the swing's barrier gain while both feet
    stood, it fell at 2.95 s without taking a step (:data:`wbc.sim.walking.STANCE_LEG_GAIN`). No
    recovery step is taken (the DCM stays within :data:`wbc.sim.walking.CROSS_TRIGGER` of the feet)."""
    _, run, _ = walk.stand_and_push(
        "talos", (0.0, -520.0, 0.0), duration=3.5, crossover=True, recovery_tolerance=walk.LATERAL_TOLERANCE
    )
    assert not run["fell"] and not run["recoveries"]
    assert run["status"].all(), "every step solved as posed"


@pytest.mark.slow
def test_the_lateral_push_command_line_runs_g1_both_ways_and_plots_both_against_time(tmp_path):
    """``demos/walk.py --robot g1 --lateral-push 200``: G1 holds 200 N toward its right both ways
    (no step: its hip strategy holds up to 220 N, see the README), ``lateral_push.json`` says when
    each run fell (``fell_at_s``, None here), and the two figures are written: from above and the
    lateral CoM, DCM and soles against time."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    demo = Path(__file__).resolve().parents[1] / "demos" / "walk.py"
    done = subprocess.run(
        [sys.executable, str(demo), "--robot", "g1", "--lateral-push", "200", "--out", str(tmp_path), "--quiet"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "lateral_push.json").read_text())
    assert result["robot"] == "g1" and result["push"]["force_N"] == [0.0, -200.0, 0.0]
    for name in ("without_crossover", "with_crossover"):
        assert not result[name]["fell"] and result[name]["fell_at_s"] is None
        assert result[name]["recovery_steps"] == []
    assert result["without_crossover"]["legs_min_distance_m"] is None, "legs not watched without crossover"
    assert result["with_crossover"]["legs_min_distance_m"] > 0.05, "standing, G1's legs are 14 cm apart"
    for name in ("lateral_push", "lateral_push_time"):
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000


def test_walk_on_terrain_and_bad_durations_are_refused_by_name():
    """walk() plans on flat ground: on stairs it would plan the feet into the risers, so it points to
    walk_terrain(); run() takes a positive duration; a command may hold numpy scalars."""
    walker = walk.Walker("g1", terrain="stairs")
    with pytest.raises(walk.wbc.InputError, match=r"stands on 'stairs': plan with walk_terrain\(\)"):
        walker.walk((0.3, 0.0, 0.0), 4)
    for bad in (float("nan"), 0.0, -1.0):
        with pytest.raises(walk.wbc.InputError, match=r"run: duration \(s\) must be a finite number > 0"):
            walker.run(bad, progress=False)
    for bad, match in (
        ((1.5, [300.0, 0.0], 0.05), r"push 0's force must have shape \(3,\)"),
        ((float("nan"), [0, 0, 0], 0.1), r"push 0's time \(s\) must be a finite number"),
    ):
        with pytest.raises(walk.wbc.InputError, match=match):  # before the run starts, not at 1.5 s
            walker.run(2.0, pushes=[bad], progress=False)
    flat = walk.Walker("g1", terrain="flat")
    flat.walk(np.array([0.2, 0.0, 0.0], dtype=np.float32), 2)
    assert flat.plan.command.vx == pytest.approx(0.2) and type(flat.plan.command.vx) is float
