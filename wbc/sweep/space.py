"""Parameter spaces of a sweep: a grid (every combination) or random samples, as cells.

A :class:`Cell` is everything one run needs, and nothing else: the robot (a catalog name or a model
file), the parameters (plain numbers and strings) and the seed. Cells are plain data, so they
pickle to any worker and hash to the same key on every machine (:meth:`Cell.key`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InputError

__all__ = ["Cell", "grid", "random_samples"]

Scalar = float | int | str | bool


def _plain(name: str, value: Any) -> Scalar:
    """``value`` as a plain JSON scalar (numpy numbers become Python numbers); finite numbers only."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(float(value)):
            raise InputError(f"sweep parameter {name!r}: {value!r} is not a finite number")
        return float(value)
    if isinstance(value, str):
        return value
    raise InputError(f"sweep parameter {name!r}: {value!r} is not a number or a string (cells must be plain data)")


@dataclasses.dataclass(frozen=True)
class Cell:
    """One run of a sweep.

    Attributes:
        index: position in the sweep (rows are reported in this order).
        robot: catalog name or model file path (the cell function interprets it).
        params: parameter name -> value (numbers, strings, booleans).
        seed: the run's random seed.
    """

    index: int
    robot: str
    params: Mapping[str, Scalar]
    seed: int = 0

    def key(self, function: str, tag: str = "") -> str:
        """SHA-256 (hex) of what determines the cell's result: the function's qualified name, ``tag``
        (a version the caller bumps when the scenario's code changes), robot, parameters, seed;
        not the index, so a grown grid reuses the cells it already has."""
        text = json.dumps(
            {"function": function, "tag": tag, "robot": self.robot, "params": dict(self.params), "seed": self.seed},
            sort_keys=True,
        )
        return hashlib.sha256(text.encode()).hexdigest()


def grid(robot: str, seed: int = 0, **axes: Sequence[Any]) -> list[Cell]:
    """Every combination of the values of ``axes`` (name -> values), the last axis varying fastest.

    Example: ``grid("talos", direction_deg=range(0, 360, 45), duration_s=[0.1, 0.2])`` is 16 cells.

    Raises:
        InputError: no axis, an empty axis, or a value that is not a finite number or a string.
    """
    if not axes:
        raise InputError("grid: give at least one axis (name=values)")
    names = list(axes)
    values = []
    for name in names:
        vals = [_plain(name, v) for v in axes[name]]
        if not vals:
            raise InputError(f"grid: axis {name!r} has no values")
        values.append(vals)
    return [Cell(i, robot, dict(zip(names, combo)), int(seed)) for i, combo in enumerate(itertools.product(*values))]


def random_samples(robot: str, n: int, seed: int = 0, **ranges: tuple[float, float]) -> list[Cell]:
    """``n`` cells with each parameter drawn uniformly from its ``(low, high)`` range, and each cell its
    own seed, all from one generator seeded ``seed`` (the same cells on every machine).

    Raises:
        InputError: ``n`` < 1, no range, or a range that is not two finite numbers low <= high.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InputError(f"random_samples: n must be a positive integer, got {n!r}")
    if not ranges:
        raise InputError("random_samples: give at least one parameter range (name=(low, high))")
    bounds = {}
    for name, r in ranges.items():
        try:
            low, high = (float(x) for x in r)
        except (TypeError, ValueError):
            raise InputError(f"random_samples: {name!r} must be a (low, high) pair, got {r!r}") from None
        if not (math.isfinite(low) and math.isfinite(high) and low <= high):
            raise InputError(f"random_samples: {name!r} range ({low}, {high}) is not finite with low <= high")
        bounds[name] = (low, high)
    rng = np.random.default_rng(seed)
    cells = []
    for i in range(int(n)):
        params = {name: float(rng.uniform(low, high)) for name, (low, high) in bounds.items()}
        cells.append(Cell(i, robot, params, int(rng.integers(0, 2**31 - 1))))
    return cells
