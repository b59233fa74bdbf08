"""The balance scenarios as library code (wbc.sim.balance): pushes in any direction, a push trial
as a pure, picklable function (a sweep's cell), and clear errors for robots that cannot stand."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import wbc

pytest.importorskip("mujoco")

from wbc.sim import balance


def test_push_directions_are_horizontal_units():
    assert balance.PushTrial(1.0, direction_deg=90.0).direction == (0.0, 1.0, 0.0)
    assert balance.PushTrial(1.0, direction_deg=0.0).direction == (1.0, 0.0, 0.0)
    d = np.array(balance.PushTrial(1.0, direction_deg=135.0).direction)
    np.testing.assert_allclose(d, [-np.sqrt(0.5), np.sqrt(0.5), 0.0], atol=1e-15)


def test_standard_scenario_defaults_and_unknown_robot():
    sc = balance.standard_scenario("talos", lateral=0.0)
    assert [p.name for p in sc.pushes] == ["forward"] and sc.pushes[0].force_N == 150.0
    with pytest.raises(wbc.InputError, match="no scenario defaults for robot 'panda'"):
        balance.standard_scenario("panda")


def test_a_push_trial_is_a_pure_picklable_function():
    """The same cell twice gives the same outcome; arguments and outcome survive pickling (a
    sweep runs cells in other processes)."""
    trial = balance.PushTrial(4.0, direction_deg=45.0, time_s=0.2, length_s=0.6)
    first = balance.push_trial("solo12", trial)
    assert pickle.loads(pickle.dumps(trial)) == trial
    assert pickle.loads(pickle.dumps(first)) == first
    assert first == balance.push_trial("solo12", trial)
    assert first.robot == "solo12" and first.up and first.survived and first.non_optimal_steps == 0
    assert first.row()["force_N"] == 4.0 and "recovery_steps" not in first.row()


def test_robots_that_cannot_stand_raise_clear_errors():
    with pytest.raises(wbc.ModelError, match=r"robot 'panda' cannot balance: it has a fixed base"):
        balance.Balance("panda", balance.Scenario())
    with pytest.raises(wbc.ModelError, match="no robot 'nobody' in the catalog"):
        balance.Balance("nobody", balance.Scenario())


def test_a_diverged_balance_run_is_a_fall_with_one_row_per_step():
    """A push MuJoCo cannot integrate (10¹² N at 0.1 s on solo12's base): the run stops there, fell,
    and every per-step log has one row per completed step (the step time was once logged before the
    simulator step: one row longer than the others)."""
    push = balance.Push("huge", (1.0, 0.0, 0.0), 1e12, 0.05, 0.1)
    run = balance.Balance("solo12", balance.Scenario(duration=0.5, sway_start=1.0, pushes=(push,))).run(progress=False)
    assert run["fell"]
    lengths = {k: len(v) for k, v in run.items() if isinstance(v, np.ndarray) and v.ndim >= 1}
    assert len(set(lengths.values())) == 1, lengths
    assert 0 < lengths["step_us"] < 500


def test_scenarios_and_pushes_are_checked_and_the_command_line_refuses_bad_durations(capsys):
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(wbc.InputError, match=r"a scenario's duration \(s\) must be a finite number > 0"):
            balance.Scenario(duration=bad)
    with pytest.raises(wbc.InputError, match=r"push 'lateral': duration_s must be a finite number > 0"):
        balance.Push("lateral", (0.0, 1.0, 0.0), 100.0, 0.0, 1.0)
    with pytest.raises(wbc.InputError, match=r"push 'lateral': force_N must be ≥ 0"):
        balance.Push("lateral", (0.0, 1.0, 0.0), -100.0, 0.1, 1.0)
    parser = balance.scenario_parser("A demo.", ["talos"], "talos", "balance")
    for argv, match in ((["--duration", "-1"], "must be a positive number"), (["--push-lateral", "inf"], "finite")):
        with pytest.raises(SystemExit):
            parser.parse_args(argv)
        assert match in capsys.readouterr().err
    assert parser.parse_args(["--duration", "2", "--push-lateral", "0"]).duration == 2.0


def test_the_summary_lists_only_the_pushes_the_run_reached():
    """A 50 ms run of the standard scenario (pushes at 5.5 and 7 s) reports no push."""
    scenario = balance.standard_scenario("talos", duration=0.05)
    assert len(scenario.pushes) == 2
    bal = balance.Balance("talos", scenario)
    summary = bal.summarize(bal.run(progress=False))
    assert summary["steps"] == 50 and summary["pushes"] == []
