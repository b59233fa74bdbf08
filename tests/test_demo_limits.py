"""The limits scenario (wbc.sim.limit_scenario, the library of demos/limits.py; Talos in MuJoCo, joint
ranges disabled): short runs with and without the new pieces, and random infeasible posture targets
on the standing robot.

Oracles: MuJoCo integrates the robot and measures the distances (``mj_geomDistance`` on the same
capsules); Pinocchio's RNEA checks the equations of motion (with the contact forces) of the steps.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import eom_residual, robot_case

pytest.importorskip("mujoco")

limits_demo = pytest.importorskip("wbc.sim.limit_scenario")


def _eom_checker(case, every: int = 25):
    """An ``on_step`` hook recording the worst RNEA residual (relative) of every ``every``-th step."""
    state = {"k": 0, "worst": 0.0}

    def check(ctrl, q, v, cmd):
        state["k"] += 1
        if state["k"] % every:
            return
        state["worst"] = max(state["worst"], eom_residual(case, q, v, cmd, ctrl.contacts))

    return check, state


@pytest.mark.slow
def test_demo_runs_with_and_without_the_new_pieces():
    """2.5 s each: with the pieces the knee and the elbow stop inside their limits, the hand keeps the
    2 cm margin to the torso, the CoM (level 0) is held, every step is solved; without them the joints
    pass their limits and the hand goes into the torso."""
    case = robot_case("talos")
    check, state = _eom_checker(case)
    runs = {"with": limits_demo.run(True, duration=2.5, on_step=check), "without": limits_demo.run(False, 2.5)}
    summary = limits_demo.summarize(runs, case.model)
    with_, without = summary["with"], summary["without"]
    assert not with_["fell"] and with_["non_optimal_steps"] == 0
    assert with_["worst_joint_violation_rad"] <= 1e-3
    assert with_["knee_violation_rad"] <= 0 and with_["elbow_violation_rad"] <= 0
    assert with_["min_distance_m"] >= 0.02 - 1e-4
    assert with_["max_velocity_ratio"] <= 1.0
    assert with_["max_com_error_m"] < 1e-3
    assert state["worst"] < 1e-9, f"RNEA residual {state['worst']:.2e}"
    assert without["knee_violation_rad"] > 0.1 and without["elbow_violation_rad"] > 0.1
    assert without["min_distance_m"] < 0.0


@pytest.mark.slow
def test_talos_never_passes_its_limits_under_random_infeasible_targets():
    """Standing Talos, random posture targets up to 1 rad beyond the limits of the arms, torso, head
    and one knee (CoM at level 0, posture at level 1): no joint passes its limit by more than 1e-3 rad,
    no velocity exceeds its limit, every step is solved."""
    case = robot_case("talos")
    model = case.model
    rng = np.random.default_rng(3)
    names = [model.joints[i].name for i in model.actuated if not model.joints[i].name.startswith("leg_")]
    for _ in range(2):
        targets = {}
        for name in [*names, "leg_left_4_joint"]:
            j = model.joints[model.joint_id(name)]
            beyond = rng.uniform(0, 1.0) * min(1.0, j.upper[0] - j.lower[0])
            targets[name] = j.upper[0] + beyond if rng.uniform() < 0.5 else j.lower[0] - beyond
        r = limits_demo.run(True, duration=1.5, ramp_start=0.1, ramp=0.8, targets=targets)
        assert not r["fell"] and r["ok"].all()
        assert limits_demo.worst_violation(model, r["q"]) <= 1e-3
        assert np.max(r["velocity_ratio"]) <= 1.0
