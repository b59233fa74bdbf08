"""wbc.sim.transmission_balance (demos/transmission_balance.py): the G1-like humanoid with rod-driven ankles
and geared rotors, controlled with its exact cluster model in MuJoCo; the motor-effort conversion of
the approximations."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")

demo = pytest.importorskip("wbc.sim.transmission_balance")
balance = pytest.importorskip("wbc.sim.balance")
DEMOS = Path(__file__).resolve().parents[1] / "demos"


def test_motor_efforts_realize_the_tree_torques():
    """The approximations' joint torques become motor efforts through the exact linkage map."""
    plant = demo.Plant()
    cm = plant.cm
    rng = np.random.default_rng(0)
    y = cm.random_configuration(rng, scale=0.5)
    tau_tree = rng.normal(size=plant.approx.model.n_actuated)
    tau_m = plant.motor_efforts(y, tau_tree)
    tau = cm.motor_map(y) @ tau_m  # independent generalized forces of the motor efforts
    expected = np.zeros(cm.nv)
    expected[plant.approx.order[6:]] = tau_tree
    assert np.allclose(tau, expected, atol=1e-10, rtol=0)


@pytest.mark.slow
def test_short_run_with_a_push_stays_up_with_the_exact_model():
    """0.6 s at 1 kHz with G1's 40 N lateral push: up, feet in place, loops closed to < 1e-5 m."""
    plant = demo.Plant()
    push = balance.Push("lateral", (0.0, 1.0, 0.0), 40.0, 0.1, 0.2)
    sc = balance.Scenario(duration=0.6, sway_start=0.0, sway_end=0.0, pushes=(push,))
    run = demo.run("exact", plant, sc)
    s = demo.summarize("exact", run, None)
    assert not s["fell"] and s["steps"] == 600
    assert s["min_pelvis_height_ratio"] > 0.95
    assert s["max_foot_slip_m"] < 0.005
    assert s["max_loop_error_m"] < 1e-5
    assert s["non_optimal_steps"] == 0
    assert np.all(np.isfinite(run["tau"]))


def test_help():
    out = subprocess.run(
        [sys.executable, str(DEMOS / "transmission_balance.py"), "--help"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "usage" in out.stdout
