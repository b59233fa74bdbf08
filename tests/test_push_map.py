"""Push maps (:mod:`wbc.sim.push_map`): bisection, the sweeps on real (short) simulations, the JSON
(results only) and the plots."""

from __future__ import annotations

import json

import pytest

from wbc import sweep
from wbc.errors import InputError
from wbc.sim import push_map as pmap

#: A map small enough for the default run: one direction, one phase, one simulation per cell (a
#: 100 N, 0.1 s push, which Talos survives standing and walking), short simulations.
TINY = pmap.PushMapSettings(
    directions_deg=(90.0,),
    durations_s=(0.1,),
    max_impulse_Ns=20.0,
    iterations=1,
    push_time_s=0.5,
    standing_s=1.2,
    walking=pmap.WalkingPushes(
        max_impulse_Ns=20.0, iterations=1, phases=(0.25,), walk_steps=2, cycle_step=0, after_push_s=0.5
    ),
)


@pytest.fixture(autouse=True)
def private_kernel_cache(kernel_dir, monkeypatch):
    monkeypatch.setenv("WBC_CACHE_DIR", str(kernel_dir))


def test_bisection_brackets_the_threshold():
    calls = []

    def survives(force):
        calls.append(force)
        return force < 333.0

    out = pmap.largest_survived(survives, 1000.0, 6)
    assert len(calls) == 6 and calls[0] == 500.0
    assert out["largest_survived_N"] < 333.0 <= out["smallest_failed_N"]
    assert out["smallest_failed_N"] - out["largest_survived_N"] == pytest.approx(1000.0 / 2**6)
    assert out["trials"][0] == [500.0, False]
    never = pmap.largest_survived(lambda f: True, 100.0, 3)
    assert never["smallest_failed_N"] is None and never["largest_survived_N"] == 87.5


def test_tiny_push_map_json_plots_and_resume(tmp_path):
    store = tmp_path / "store"
    pm = pmap.push_map("talos", TINY, workers=1, store=store, progress=False)
    results = pm.results()
    (standing,) = results["standing"]
    (walking,) = results["walking"]
    assert standing["status"] == walking["status"] == "ok"
    assert standing["trials"] == [[100.0, True]] and standing["largest_survived_N"] == 100.0
    assert walking["trials"] == [[100.0, True]]
    assert walking["push_time_s"] == pytest.approx(walking["swings"][0][1] + 0.25 * walking["cycle_s"] + 1.2, abs=0.05)
    assert results["weakest"]["standing"]["0.1"]["direction_deg"] == 90.0
    text = json.dumps(results)
    assert "engine" not in text and "seconds" not in text.replace("after_push_s", "")
    assert pm.timings()["standing"]["engine"] == "local"
    for plot, name in ((pmap.plot_standing, "standing.png"), (pmap.plot_walking, "walking.png")):
        path = plot(pm, tmp_path / name)
        assert path.stat().st_size > 10_000
    again = pmap.push_map("talos", TINY, workers=2, store=store, progress=False)
    assert again.standing.stats.computed == again.walking.stats.computed == 0
    assert json.dumps(again.results()) == text


@pytest.mark.slow
def test_push_cells_on_dask_equal_local_processes():
    cells = pmap.standing_cells("talos", TINY) + pmap.standing_cells(
        "talos", pmap.PushMapSettings(**{**TINY.__dict__, "directions_deg": (0.0, 180.0)})
    )
    cells = [sweep.Cell(i, c.robot, c.params, c.seed) for i, c in enumerate(cells)]
    local = sweep.run_sweep(pmap.standing_cell, cells, workers=2, progress=False)
    dask = sweep.run_sweep(pmap.standing_cell, cells, engine="dask", workers=2, progress=False)
    assert not local.failed
    assert local.values() == dask.values()


def test_bad_settings_are_clear_errors():
    with pytest.raises(InputError, match="iterations must be a positive integer"):
        pmap.PushMapSettings(iterations=0)
    with pytest.raises(InputError, match=r"phases must lie in \[0, 1\)"):
        pmap.WalkingPushes(phases=(1.0,))
    with pytest.raises(InputError, match="durations_s must be positive"):
        pmap.PushMapSettings(durations_s=(0.0,))
    with pytest.raises(InputError, match="must lie within the 2 planned steps"):
        pmap.WalkingPushes(walk_steps=2, cycle_step=1)
    with pytest.raises(InputError, match=r"WalkingPushes\.iterations must be a positive integer"):
        pmap.WalkingPushes(iterations=True)
    with pytest.raises(InputError, match="walking must be WalkingPushes in one direction"):
        pmap.PushMapSettings(walking=pmap.WalkingPushes(directions_deg=(0.0, 90.0)))
