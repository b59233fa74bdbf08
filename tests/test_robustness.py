"""The controller-side compensation (wbc.estimation, Compensation) and the robustness study
(wbc.sim.robustness).

* The velocity filter's step response is the first-order ``1 − e^{−kΔt/T}``.
* The predictor integrates the commands in flight exactly (piecewise-constant accelerations, oldest
  first) and never returns a non-finite state.
* A compensation's gain and contact retuning reach the controller.
* The fault families build the faults their names say; the combination at 1 is
  ``Faults.realistic``; the early-stopped push trial gives push_trial's verdict; a tiny study runs
  through the sweep engine, tabulates and plots.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import wbc
from tests.helpers import ChainJoint, chain_urdf

pytest.importorskip("wbc.sim.mujoco")

from wbc.estimation import StatePredictor, VelocityFilter
from wbc.sim import balance
from wbc.sim import robustness as rb
from wbc.sim.faults import Compensation, Faults, Latency

_SLIDER = chain_urdf(
    "slider",
    [
        ChainJoint("slide", "prismatic", "cart", 1.0, 0.0, (0.01, 0.01, 0.01), "1 0 0", 2.0),
        ChainJoint("hinge", "revolute", "pole", 0.5, 0.3, (0.01, 0.01, 0.001), "0 1 0", 3.0),
    ],
)


# ------------------------------------------------------------------------------------ estimation
def test_the_velocity_filters_step_response_is_first_order():
    f = VelocityFilter(50.0, 1e-3, indices=np.array([1, 2]))
    assert f(np.zeros(3)).tolist() == [0.0, 0.0, 0.0]  # the first sample starts the filter
    T = 1 / (2 * math.pi * 50.0)
    for k in range(1, 20):
        y = f(np.array([7.0, 1.0, -2.0]))
        assert y[0] == 7.0  # not filtered
        np.testing.assert_allclose(y[1:], np.array([1.0, -2.0]) * (1 - math.exp(-k * 1e-3 / T)), rtol=1e-12)
    with pytest.raises(wbc.InputError, match="cutoff_hz"):
        VelocityFilter(0.0, 1e-3)


def test_the_predictor_integrates_the_commands_in_flight_exactly():
    model = wbc.load_urdf(_SLIDER, floating_base=False)
    dt, n = 1e-3, 3
    p = StatePredictor(model, n * dt, dt)
    q, v = np.array([0.1, -0.2]), np.array([0.5, 1.0])
    np.testing.assert_array_equal(p(q, v)[0], q + n * dt * v)  # nothing in flight yet
    accelerations = [np.array([1.0, -2.0]), np.array([3.0, 0.5]), np.array([-1.0, 4.0]), np.array([2.0, 2.0])]
    for a in accelerations:
        p.commanded(a)
    # the last n commands, oldest first, each held one period: exact for these scalar joints
    qe, ve = q.copy(), v.copy()
    for a in accelerations[-n:]:
        qe, ve = qe + dt * ve + 0.5 * dt * dt * a, ve + dt * a
    qp, vp = p(q, v)
    np.testing.assert_allclose(qp, qe, rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(vp, ve, rtol=1e-14)
    p.commanded(np.array([np.nan, 1.0]))  # a non-finite command counts as zero
    p.commanded(np.array([1e308, 1e308]))
    p.commanded(np.array([1e308, 1e308]))
    np.testing.assert_array_equal(p(q, v)[0], q)  # an overflowing prediction: none
    assert StatePredictor(model, 0.0, dt)(q, v)[0] is q


def test_a_compensation_retunes_the_task_gains_and_the_contacts():
    plain = balance.Balance("talos", balance.Scenario.standing(0.01))
    comp = Compensation(gain_scale=0.25, contact_kp=1000.0)
    tuned = balance.Balance("talos", balance.Scenario.standing(0.01), faults=Faults(compensation=comp))
    for a, b in zip(plain.controller.tasks, tuned.controller.tasks):
        np.testing.assert_allclose(b.kp, 0.25 * a.kp)
        np.testing.assert_allclose(b.kd, 0.5 * a.kd)
    for c in tuned.controller.contacts:
        state = tuned.controller.contact_state(c.name)
        assert (state.kp, state.kd) == (1000.0, 2 * math.sqrt(1000.0))


# ------------------------------------------------------------------------------------ the study
def test_fault_families_build_the_faults_they_name():
    assert rb.faults_of("combination", 1.0, seed=4) == Faults.realistic(seed=4)
    assert rb.faults_of(rb.FaultKind.STATE_DELAY, 3).latency == Latency(state_periods=3)
    assert rb.faults_of("mass", 0.2).model.mass == 0.2
    assert rb.faults_of("differentiated_encoder", 1e-4).sensors.differentiate
    assert rb.faults_of("imu_bias", 0.02).sensors.base_orientation.bias == 0.02
    assert rb.faults_of("bandwidth", 100.0).actuators.time_constant_s == pytest.approx(1 / (200 * math.pi))
    assert not rb.faults_of("nominal", 0.0).active
    combo2 = rb.faults_of("combination", 2.0)
    assert combo2.latency.total_periods == 4 and combo2.model.mass == pytest.approx(0.2)
    for kind in rb.MAGNITUDES:  # every study magnitude is a valid description
        for m in rb.MAGNITUDES[kind]:
            assert rb.faults_of(kind, m).active
    with pytest.raises(wbc.InputError, match="whole number"):
        rb.faults_of("command_delay", 1.5)
    with pytest.raises(wbc.InputError, match="unknown fault kind"):
        rb.faults_of("gremlins", 1.0)
    cells = rb.study_cells("talos", rb.RobustnessSettings())
    assert len({json.dumps(dict(c.params), sort_keys=True) for c in cells}) == len(cells)
    assert {c.seed for c in cells} == {0}
    trials = [(c.params["trial"], c.params["fault"]) for c in cells]
    assert trials[0] == ("soak", "combination") and trials[-1] == ("soak", "nominal")


@pytest.mark.slow
def test_the_early_stopped_push_trial_gives_push_trials_verdict():
    for force in (300.0, 700.0):  # survived, fallen (nominal Talos, lateral: about 550 N)
        full = balance.push_trial("talos", balance.PushTrial(force, 90.0, length_s=2.5))
        early = rb.push_survived("talos", force, 90.0, 2.5, Faults())
        assert early["survived"] == full.survived
        assert (early["stopped_at_s"] is None) == full.survived


@pytest.mark.slow
def test_a_tiny_study_runs_tabulates_and_plots(tmp_path):
    settings = rb.RobustnessSettings(
        faults={rb.FaultKind.COMMAND_DELAY: (2,)}, iterations=2, length_s=1.5, walk=False, soak_s=0.0, remedies=()
    )
    study = rb.robustness_study("talos", settings, workers=2, progress=False)
    assert not study.result.failed
    table = study.table()
    assert set(table["nominal"]) >= {"lateral_N", "forward_N", "stands"}
    row = table["faults"]["command_delay"]["rows"][0]
    assert row["magnitude"] == 2 and "lateral_ratio" in row
    for plot in (rb.plot_survival, rb.plot_walking, rb.plot_remedies):
        assert plot(study, tmp_path / f"{plot.__name__}.png").stat().st_size > 10_000
