"""The demos: short headless runs and their command lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import wbc

pytest.importorskip("mujoco")

from wbc import robots
from wbc.sim import arm, balance

DEMOS = Path(__file__).resolve().parents[1] / "demos"


def test_short_balance_run_with_a_push_stays_up():
    """Talos in MuJoCo, a few hundred 1 ms steps with a lateral push: up, feet in place, finite."""
    push = balance.Push("lateral", (0.0, 1.0, 0.0), 60.0, 0.05, 0.1)
    sc = balance.Scenario(duration=0.4, sway_start=0.0, sway_end=0.0, pushes=(push,))
    bal = balance.Balance("talos", sc)
    run = bal.run(progress=False)
    summary = bal.summarize(run)
    assert not summary["fell"]
    assert summary["min_pelvis_height_ratio"] > 0.9
    assert summary["max_foot_slip_m"] < 0.01
    assert summary["non_optimal_steps"] == 0
    assert summary["steps"] == 400
    assert np.all(np.isfinite(run["tau"]))


def test_sway_reference_is_smooth():
    """The CoM sway's velocity and acceleration are the derivatives of its position (no jumps)."""
    sc = balance.Scenario()
    ts = np.arange(sc.sway_start - 0.1, sc.sway_end + 0.1, 1e-4)
    pos = np.array([sc.com_offset(t)[0][1] for t in ts])
    vel = np.array([sc.com_offset(t)[1][1] for t in ts])
    acc = np.array([sc.com_offset(t)[2][1] for t in ts])
    assert np.abs(np.gradient(pos, ts) - vel)[2:-2].max() < 1e-6
    assert np.abs(np.gradient(vel, ts) - acc)[2:-2].max() < 1e-3


def test_arm_short_run_tracks_the_circle():
    """Both arm controllers keep the end effector within a millimetre of the moving reference."""
    spec = robots.load("panda")
    model, q0 = spec.model, spec.q0
    T0 = wbc.frame_placement(model, q0, arm.EE)
    circle = arm.Circle(T0[0:3, 3], T0[0:3, 0:3])
    for controller in (arm.QP(model, q0), arm.OSC(model, q0)):
        run = arm.simulate(controller, model, q0, circle, 0.6)
        assert arm.rms(run["err_p"]) < 1e-3
        assert run["err_r"].max() < 1e-3


@pytest.mark.parametrize(
    "script", ["humanoid_balance.py", "arm_task_space.py", "compare_torques.py", "walk.py", "walking_push.py"]
)
def test_demo_help(script):
    out = subprocess.run([sys.executable, str(DEMOS / script), "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "usage" in out.stdout


@pytest.mark.parametrize("module", ["dynamics", "algorithms", "controller"])
def test_benchmark_help(module):
    """The benchmarks run as modules from the repository root (no sys.path patching)."""
    root = DEMOS.parent
    out = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{module}", "--help"], capture_output=True, text=True, timeout=120, cwd=root
    )
    assert out.returncode == 0, out.stderr
    assert "usage" in out.stdout
