"""The walking push sweep (wbc.sim.walking_push): its grid, one real cell bisecting a push on a
walking G1 (slow), and the plot of results against the published iCub figure."""

from __future__ import annotations

import dataclasses
import json

import pytest

from wbc.errors import InputError
from wbc.sim.push_map import walking_cells

pytest.importorskip("mujoco")
wp = pytest.importorskip("wbc.sim.walking_push")


def test_grid_is_directions_by_phases_with_step_adjustment():
    pushes = dataclasses.replace(wp.DEFAULT_PUSHES, phases=(0.0, 0.5))
    cells = walking_cells("g1", pushes)
    assert len(cells) == 4
    assert {(c.params["direction_deg"], c.params["phase"]) for c in cells} == {
        (0.0, 0.0),
        (0.0, 0.5),
        (90.0, 0.0),
        (90.0, 0.5),
    }
    assert all(c.params["adjust"] and c.params["duration_s"] == 0.05 for c in cells)
    with pytest.raises(InputError):
        dataclasses.replace(wp.DEFAULT_PUSHES, phases=(1.0,))


def test_published_icub_figure_as_a_velocity_change():
    (icub,) = wp.PUBLISHED
    assert icub["force_N"] * icub["duration_s"] / icub["mass_kg"] == pytest.approx(0.227, abs=1e-3)


def test_plot_of_synthetic_results(tmp_path):
    cells = [
        {
            "direction_deg": d,
            "phase": p,
            "largest_survived_N": 100.0 + 50 * p,
            "smallest_failed_N": 150.0 + 50 * p,
            "largest_survived_Ns": 5.0,
            "swings": [["left", 0.0, 0.36], ["right", 0.5, 0.86]],
        }
        for d in (0.0, 90.0)
        for p in (0.0, 0.5)
    ]
    results = {
        "robot": "g1",
        "mass_kg": 33.3,
        "settings": {"directions_deg": [0.0, 90.0], "duration_s": 0.05},
        "cells": cells,
        "published": [{**wp.PUBLISHED[0]}],
    }
    json.dumps(results)
    path = wp.plot_push_vs_phase(results, tmp_path / "push_vs_phase.png")
    assert path.stat().st_size > 10_000


@pytest.mark.slow
def test_one_walking_cell_bisects_a_forward_push_on_g1():
    pushes = dataclasses.replace(
        wp.DEFAULT_PUSHES, directions_deg=(0.0,), phases=(0.25,), iterations=2, walk_steps=4, cycle_step=0
    )
    results = wp.walking_push_sweep("g1", pushes, progress=False)
    (cell,) = results["cells"]
    assert cell["largest_survived_N"] >= 0.0 and cell["velocity_change_m_s"] >= 0.0
    assert set(results["weakest"]) == {"0.0"}
