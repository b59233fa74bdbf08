"""The crossover map (wbc.sim.crossover_map): its grid and input checks, a small real map on G1 through
the sweep runner and its plot, the command line, and (slow) a row of the README's map: G1 holds most
pushes of 224-245 N by crossing and none without, its legs' own collision meshes apart all along."""

from __future__ import annotations

import dataclasses
import json

import pytest

from wbc.errors import InputError

pytest.importorskip("mujoco")
cm = pytest.importorskip("wbc.sim.crossover_map")


def test_pushes_are_checked_and_unknown_robots_need_their_own():
    with pytest.raises(InputError, match="forces_N"):
        cm.LateralPushes(forces_N=())
    with pytest.raises(InputError, match="push_times_s"):
        cm.LateralPushes(forces_N=(200.0,), push_times_s=(1.0, -1.0))
    with pytest.raises(InputError, match="after_push_s"):
        cm.LateralPushes(forces_N=(200.0,), after_push_s=0.0)
    with pytest.raises(InputError, match="no default pushes for 'h1'"):
        cm.crossover_map("h1")


def test_a_small_map_runs_both_ways_in_one_sweep_and_plots(tmp_path):
    """At 1.3 s, 200 N: G1's hip strategy holds it both ways (no step); 230 N: without crossover steps
    it falls, with them it crosses and holds (it fell 3.1 s after the push before the standing plan
    restarted from the measured state where the crossing lands). One sweep, four cells, the plot."""
    pushes = cm.LateralPushes(forces_N=(200.0, 230.0), push_times_s=(1.3,), after_push_s=3.5)
    results = cm.crossover_map("g1", pushes, workers=2, progress=False)
    json.dumps(results)
    cells = {(c["force_N"], c["crossover"]): c for c in results["cells"]}
    assert len(cells) == 4 and all("held" in c for c in cells.values())
    assert cells[200.0, False]["held"] and cells[200.0, True]["held"]
    assert not cells[200.0, True]["landings"], "the hip strategy holds it: no step"
    assert not cells[230.0, False]["held"] and cells[230.0, False]["fell_at_s"] > 1.3
    assert cells[230.0, True]["held"] and cells[230.0, True]["landings"][0][1] == "left"
    # the crossing kept the legs apart on their own collision meshes (MuJoCo's distance: 6.8 cm
    # measured); without crossover steps the legs are not watched
    assert cells[230.0, True]["legs_min_distance_m"] > 0.02
    assert cells[230.0, False]["legs_min_distance_m"] is None
    assert results["held"] == {"without_crossover": {"1.3": 1}, "with_crossover": {"1.3": 2}}
    path = cm.plot_crossover_map(results, tmp_path / "crossover_map.png")
    assert path.stat().st_size > 10_000


def test_the_command_line_refuses_a_bad_grid_before_creating_anything(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    demo = Path(__file__).resolve().parents[1] / "demos" / "crossover_map.py"
    out = tmp_path / "map"
    command = [sys.executable, str(demo), "--robot", "g1", "--after", "0", "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "after_push_s must be positive" in done.stderr
    assert not out.exists()


@pytest.mark.slow
def test_the_command_line_writes_the_map_and_its_figure(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    demo = Path(__file__).resolve().parents[1] / "demos" / "crossover_map.py"
    args = ["--robot", "g1", "--forces", "200", "--times", "1.0", "--after", "1.0", "--workers", "1"]
    command = [sys.executable, str(demo), *args, "--out", str(tmp_path), "--quiet"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "crossover_map.json").read_text())
    assert results["held"] == {"without_crossover": {"1.0": 1}, "with_crossover": {"1.0": 1}}
    assert (tmp_path / "crossover_map.png").stat().st_size > 10_000


@pytest.mark.slow
def test_g1_holds_most_pushes_beyond_its_hip_strategy_by_crossing_and_none_without():
    """A row of the README's map: of 224-245 N (12 pushes) at 1.3 s, G1 holds at least 9 with
    crossover steps (11 measured; 6 before the standing plan restarted from the measured state where
    a crossing lands) and none without (2.5 min on two workers)."""
    pushes = dataclasses.replace(cm.DEFAULT_LATERAL_PUSHES["g1"], push_times_s=(1.3,))
    results = cm.crossover_map("g1", pushes, workers=2, progress=False)
    assert results["held"]["without_crossover"] == {"1.3": 0}
    assert results["held"]["with_crossover"]["1.3"] >= 9
    crossing = [c for c in results["cells"] if c["crossover"]]
    assert min(c["legs_min_distance_m"] for c in crossing) > 0, "the legs' collision meshes never touch"
