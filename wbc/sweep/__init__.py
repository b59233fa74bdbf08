"""Sweeps: one scenario over a grid or random samples of parameters, on a distributed engine.

A sweep is a cell function (``function(cell) -> dict``, module-level) run over
:class:`Cell` s (robot by name or model file, parameters, seed: self-contained, picklable) through a
``concurrent.futures`` executor: local worker processes by default, a Dask ``distributed`` cluster
(a scheduler address, or a ``LocalCluster`` started here) or Ray (the ``dask`` and ``ray``
extras). A failing cell is recorded as failed, never losing the sweep; completed cells are stored
on disk as they complete, so an interrupted sweep resumes where it stopped; results come back as a
table (one row per cell), apart from how the sweep ran (engine, workers, timings)::

    from wbc import sweep

    cells = sweep.grid("talos", force_N=[100, 200, 300], direction_deg=range(0, 360, 45))
    result = sweep.run_sweep(my_cell, cells, engine="dask", workers=2, store="out/sweep-cache")
    result.to_csv("out/sweep.csv")
    print(result.stats.cells_per_second, [r.error for r in result.failed])
"""

from __future__ import annotations

from .engines import Engine, open_executor
from .result import CellResult, CellStatus, SweepResult, SweepStats
from .runner import SweepOptions, function_name, run_cell, run_sweep
from .space import Cell, grid, random_samples
from .store import ResultStore

__all__ = [
    "Cell",
    "CellResult",
    "CellStatus",
    "Engine",
    "ResultStore",
    "SweepOptions",
    "SweepResult",
    "SweepStats",
    "function_name",
    "grid",
    "open_executor",
    "random_samples",
    "run_cell",
    "run_sweep",
]
