"""The quadruped balancing demo (issue 15, item 3): a short run on four point feet in MuJoCo, and its
command line (with ``--replay``)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("mujoco")

from tests.helpers import run_demo
from tests.test_demos import DEMOS
from wbc.sim import balance


@pytest.mark.parametrize("robot", ["solo12", pytest.param("go2", marks=pytest.mark.slow)])
def test_short_run_with_a_push_stays_up(robot):
    """Half a second with a lateral push on the base: up, feet in place, every step OPTIMAL, the
    commanded forces inside the friction cones and carrying the weight on average."""
    d = balance.SCENARIO_DEFAULTS[robot]
    push = balance.Push("lateral", (0.0, 1.0, 0.0), d["push"], 0.1, 0.2)
    sc = balance.Scenario(duration=0.5, sway_start=0.0, sway_end=0.0, pushes=(push,))
    bal = balance.Balance(robot, sc)
    run = bal.run(progress=False)
    s = bal.summarize(run)
    assert not s["fell"] and s["min_base_height_ratio"] > 0.95
    assert s["max_foot_slip_m"] < 0.005
    assert s["non_optimal_steps"] == 0 and s["steps"] == 500
    assert s["min_normal_force_N"] > 0 and s["max_friction_use"] <= 1.0 + 1e-6
    weight = bal.model.total_mass * 9.81
    assert np.mean(run["force"][:, :, 2].sum(axis=1)) == pytest.approx(weight, rel=0.05)


def test_command_line_writes_summary_plots_and_replay(tmp_path):
    pytest.importorskip("meshcat")
    out = tmp_path / "solo"
    summary, done = run_demo("quadruped_balance.py", ["--robot", "solo12", "--duration", "0.3", "--replay"], out, 600)
    assert not summary["fell"] and summary["replay"] == "replay.html"
    assert sorted(summary["plots"]) == ["com.png", "feet.png", "step_time.png", "torques.png"]
    assert all((out / name).stat().st_size > 1000 for name in summary["plots"] + ["replay.html", "log.npz"])
    assert "\r" not in done.stderr, "a progress bar was drawn although stderr is not a terminal"


@pytest.mark.parametrize("script", ["quadruped_balance.py", "humanoid_balance.py", "arm_task_space.py"])
def test_replay_option_is_documented(script):
    out = subprocess.run([sys.executable, str(DEMOS / script), "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "--replay" in out.stdout, out.stderr
