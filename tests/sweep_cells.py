"""Cell functions for the sweep tests (a module the engines' worker processes import).

``dynamics_cell`` is a small, deterministic, real cell: the robot by catalog name, a state drawn
from the cell's seed (scaled by its ``speed`` parameter), forward dynamics through a compiled kernel
built once per worker process (from the on-disk kernel cache). ``failing_cell`` raises for some
cells; ``dying_cell`` kills its worker process for some.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np

import wbc
from wbc import robots
from wbc.codegen import algorithm_functions as traced
from wbc.sweep import Cell


@functools.cache
def aba_kernel(robot: str) -> wbc.codegen.Kernel:
    """The robot's ABA kernel, compiled (or loaded from the kernel cache) once per process."""
    return wbc.codegen.compile_function(traced.aba_function(robots.load(robot).model))


def dynamics_cell(cell: Cell) -> dict:
    """``{"qdd_norm", "qdd_0", "pid_free"}``: the free acceleration's norm and first entry at a random
    state (seeded by the cell) with velocities scaled by ``speed``."""
    model = robots.load(cell.robot).model
    rng = np.random.default_rng([cell.seed, int(1000 * float(cell.params["speed"]))])
    q = wbc.random_configuration(model, rng)
    v = float(cell.params["speed"]) * rng.normal(size=model.nv)
    (qdd,) = aba_kernel(cell.robot)(q, v, np.zeros(model.nv))
    marker = cell.params.get("marker_dir")
    if marker:  # one file per evaluation: the tests count how often each cell ran
        Path(str(marker), f"{cell.index}-{os.getpid()}-{os.urandom(4).hex()}").touch()
    return {"qdd_norm": float(np.linalg.norm(qdd)), "qdd_0": qdd[0]}


def failing_cell(cell: Cell) -> dict:
    """Raises ValueError for the cells whose ``x`` is negative."""
    if cell.params["x"] < 0:
        raise ValueError(f"negative x: {cell.params['x']}")
    return {"double": 2 * cell.params["x"]}


def dying_cell(cell: Cell) -> dict:
    """Ends its worker process abruptly (no exception, no cleanup) when ``x`` is 13."""
    if cell.params["x"] == 13:
        os._exit(3)
    return {"double": 2 * cell.params["x"]}
