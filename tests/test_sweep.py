"""Sweeps (:mod:`wbc.sweep`): the same results on every engine, failures recorded, resumable.

The cells are small real computations (:mod:`tests.sweep_cells`: forward dynamics through a kernel
compiled once per worker); the engines are really started: local worker processes and a Dask
``LocalCluster`` of two worker processes (Ray where it is installed).
"""

from __future__ import annotations

import json

import pytest

from tests import sweep_cells
from wbc import sweep
from wbc.errors import InputError, MissingDependency

CELLS = sweep.grid("panda", speed=[0.0, 0.5, 1.0, 2.0], seed=7)


@pytest.fixture(autouse=True)
def private_kernel_cache(kernel_dir, monkeypatch):
    """Workers inherit the environment: they compile into the test's own kernel cache."""
    monkeypatch.setenv("WBC_CACHE_DIR", str(kernel_dir))


def reference():
    """Each cell run in this process, one after the other."""
    return [sweep.run_cell(sweep_cells.dynamics_cell, c) for c in CELLS]


def test_local_processes_and_dask_local_cluster_give_identical_results(tmp_path):
    local = sweep.run_sweep(sweep_cells.dynamics_cell, CELLS, engine="local", workers=2, progress=False)
    dask = sweep.run_sweep(sweep_cells.dynamics_cell, CELLS, engine="dask", workers=2, progress=False)
    assert local.stats.engine == "local" and dask.stats.engine == "dask"
    assert local.stats.computed == dask.stats.computed == len(CELLS)
    assert not local.failed and not dask.failed
    assert json.dumps(local.values()) == json.dumps(dask.values())
    want = [r.value for r in reference()]
    assert [r.value for r in local.results] == want
    assert [r.cell for r in dask.results] == CELLS  # in cell order, whatever order they completed in


def test_failing_cell_is_recorded_and_the_sweep_goes_on(tmp_path):
    cells = sweep.grid("none", x=[-1, 0, 1, -2, 3])
    result = sweep.run_sweep(sweep_cells.failing_cell, cells, workers=2, progress=False, store=tmp_path)
    assert [r.status for r in result.results] == [
        sweep.CellStatus.FAILED,
        sweep.CellStatus.OK,
        sweep.CellStatus.OK,
        sweep.CellStatus.FAILED,
        sweep.CellStatus.OK,
    ]
    assert "ValueError: negative x: -1" in result.results[0].error
    assert [r.value.get("double") for r in result.results] == [None, 0, 2, None, 6]
    assert result.stats.failed == 2
    rows = result.rows()
    assert rows[3]["status"] == "failed" and rows[3]["error"] == "ValueError: negative x: -2"
    csv = result.to_csv(tmp_path / "table.csv").read_text().splitlines()
    assert len(csv) == 1 + len(cells) and csv[0].startswith("index,robot,seed,x,status")
    again = sweep.run_sweep(sweep_cells.failing_cell, cells, workers=2, progress=False, store=tmp_path)
    assert again.stats.computed == 0 and again.stats.failed == 2  # failures are results too
    retried = sweep.run_sweep(
        sweep_cells.failing_cell, cells, workers=1, progress=False, store=tmp_path, retry_failed=True
    )
    assert retried.stats.computed == 2 and retried.stats.reused == 3


def test_a_dying_worker_fails_only_its_cell(tmp_path):
    """The cell whose worker dies is reported failed, and not stored: a worker's death is not the
    cell's result (a script without its __main__ guard kills them all), so the next sweep runs it."""
    cells = sweep.grid("none", x=[1, 13, 2, 3])
    result = sweep.run_sweep(sweep_cells.dying_cell, cells, workers=2, progress=False, store=tmp_path)
    assert [r.ok for r in result.results] == [True, False, True, True]
    assert "worker died" in result.results[1].error
    assert [r.value.get("double") for r in result.results] == [2, None, 4, 6]
    again = sweep.run_sweep(sweep_cells.dying_cell, cells, workers=1, progress=False, store=tmp_path)
    assert again.stats.reused == 3 and again.stats.computed == 1


def test_a_cell_function_defined_interactively_is_refused_for_local_workers(tmp_path):
    """Spawned workers import the cell function from the defining script: from ``python -c`` (or a
    notebook) there is no file to import, so the sweep says so instead of failing every cell."""
    import subprocess
    import sys

    code = (
        "from wbc import sweep\n"
        "def cell(c):\n"
        "    return {'x': c.params['x']}\n"
        "sweep.run_sweep(cell, sweep.grid('none', x=[1, 2]), progress=False)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "this one has no file (python -c, standard input, a notebook)" in done.stderr


class Interrupt(Exception):
    pass


def test_interrupted_sweep_resumes_and_recomputes_nothing_done(tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    cells = sweep.grid("panda", speed=[0.0, 0.25, 0.5, 0.75, 1.0, 1.5], marker_dir=[str(markers)])
    store = tmp_path / "store"
    seen = []

    def stop_after_two(result):
        seen.append(result.cell.index)
        if len(seen) == 2:
            raise Interrupt

    with pytest.raises(Interrupt):
        sweep.run_sweep(
            sweep_cells.dynamics_cell, cells, workers=1, store=store, progress=False, on_result=stop_after_two
        )
    name = sweep.function_name(sweep_cells.dynamics_cell)
    done = {str(c.index) for c in cells if sweep.ResultStore(store).load(c.key(name)) is not None}
    assert len(done) >= 2
    ran_before = [p.name.split("-")[0] for p in markers.iterdir()]
    resumed = sweep.run_sweep(sweep_cells.dynamics_cell, cells, workers=2, store=store, progress=False)
    assert resumed.stats.reused == len(done) and resumed.stats.computed == len(cells) - len(done)
    runs = [p.name.split("-")[0] for p in markers.iterdir()]
    for index in done:  # a cell stored before the interruption never ran again
        assert runs.count(index) == ran_before.count(index) == 1
    assert sorted(set(runs)) == sorted(str(c.index) for c in cells)
    again = sweep.run_sweep(sweep_cells.dynamics_cell, cells, workers=2, store=store, progress=False)
    assert again.stats.computed == 0 and again.values() == resumed.values()
    assert len(list(markers.iterdir())) == len(runs)  # nothing ran


def test_random_samples_are_reproducible_and_keys_ignore_the_index():
    a = sweep.random_samples("talos", 5, seed=3, force_N=(0.0, 500.0), angle=(0.0, 360.0))
    b = sweep.random_samples("talos", 5, seed=3, force_N=(0.0, 500.0), angle=(0.0, 360.0))
    assert a == b and len({c.seed for c in a}) == 5
    assert all(0.0 <= c.params["force_N"] <= 500.0 for c in a)
    moved = sweep.Cell(99, a[0].robot, a[0].params, a[0].seed)
    assert moved.key("f") == a[0].key("f") != a[0].key("g") != a[0].key("f", tag="v2")


def test_bad_sweeps_are_clear_errors(tmp_path):
    with pytest.raises(InputError, match="unknown sweep engine 'spark'"):
        sweep.run_sweep(sweep_cells.failing_cell, [], engine="spark")
    with pytest.raises(InputError, match="module-level function"):
        sweep.run_sweep(lambda cell: {}, sweep.grid("x", x=[1]), progress=False)
    with pytest.raises(InputError, match="unique indices"):
        sweep.run_sweep(sweep_cells.failing_cell, [sweep.Cell(0, "r", {"x": 1})] * 2)
    with pytest.raises(InputError, match="not a finite number"):
        sweep.grid("talos", force=[1.0, float("nan")])
    with pytest.raises(InputError, match="not a number or a string"):
        sweep.grid("talos", force=[[1.0]])
    with pytest.raises(InputError, match="workers must be a positive integer"):
        sweep.run_sweep(sweep_cells.failing_cell, sweep.grid("x", x=[1]), workers=0, progress=False)
    with pytest.raises(InputError, match="takes no address"):
        sweep.run_sweep(sweep_cells.failing_cell, sweep.grid("x", x=[1]), address="tcp://x:1", progress=False)
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match="is not a directory"):
        sweep.ResultStore(tmp_path / "file")


def test_missing_engine_is_named(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("no ray here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(MissingDependency, match=r"pip install 'wbc\[ray\]'"):
        sweep.run_sweep(sweep_cells.failing_cell, sweep.grid("x", x=[1]), engine="ray", progress=False)


def test_ray_gives_the_same_results():
    pytest.importorskip("ray")
    cells = CELLS[:2]
    result = sweep.run_sweep(sweep_cells.dynamics_cell, cells, engine="ray", workers=2, progress=False)
    assert [r.value for r in result.results] == [r.value for r in reference()[:2]]


def test_sweep_command_line_options(tmp_path):
    """The sweep demos' options: defaults turned into the runner's keyword arguments (the output
    folder created, the cell store inside it), and bad combinations refused by the parser."""
    import argparse

    from wbc.sweep.command_line import add_sweep_arguments, sweep_options

    parser = argparse.ArgumentParser()
    add_sweep_arguments(parser)
    out = tmp_path / "out"
    args = parser.parse_args(["--out", str(out)])
    assert args.robot == "talos"
    assert sweep_options(parser, args) == {
        "engine": "local",
        "workers": 2,
        "address": None,
        "store": out / "cells",
        "progress": True,
    }
    assert out.is_dir()
    args = parser.parse_args(["--out", str(out), "--engine", "dask", "--scheduler", "tcp://x:1", "--store", "s"])
    assert sweep_options(parser, args)["address"] == "tcp://x:1"
    for bad in (["--workers", "0"], ["--scheduler", "tcp://x:1"]):
        with pytest.raises(SystemExit):
            sweep_options(parser, parser.parse_args(["--out", str(out), *bad]))
    with pytest.raises(SystemExit):
        parser.parse_args(["--out", str(out), "--robot", "nao"])
