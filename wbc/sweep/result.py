"""What a sweep returns: one :class:`CellResult` per cell, in a :class:`SweepResult` table.

Results and timings are kept apart: :meth:`SweepResult.rows` and :meth:`SweepResult.values` hold
what the cells computed (the same on any engine, any number of workers, resumed or not), while
:attr:`SweepResult.stats` holds how the sweep ran (engine, workers, wall time, cells run and
reused) and :attr:`CellResult.seconds` how long each cell took.
"""

from __future__ import annotations

import csv
import dataclasses
import enum
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .space import Cell

__all__ = ["CellStatus", "CellResult", "SweepResult", "SweepStats"]


class CellStatus(enum.Enum):
    """How a cell ended."""

    OK = "ok"
    FAILED = "failed"  # the cell function raised, or its worker died (the error says which)


@dataclasses.dataclass(frozen=True)
class CellResult:
    """One cell's outcome.

    Attributes:
        cell: the cell.
        status: :class:`CellStatus`.
        value: what the cell function returned (a JSON-able dict), empty when it failed.
        error: the exception (type, message, traceback) or how the worker died; "" when OK.
        seconds: the cell's wall time in its worker, s (timing: not part of the result).
    """

    cell: Cell
    status: CellStatus
    value: Mapping[str, Any]
    error: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status is CellStatus.OK

    def record(self) -> dict[str, Any]:
        """A JSON-able dict of everything (the store's format)."""
        c = self.cell
        return {
            "index": c.index,
            "robot": c.robot,
            "params": dict(c.params),
            "seed": c.seed,
            "status": self.status.value,
            "value": dict(self.value),
            "error": self.error,
            "seconds": self.seconds,
        }

    @staticmethod
    def from_record(record: Mapping[str, Any]) -> CellResult:
        cell = Cell(int(record["index"]), str(record["robot"]), dict(record["params"]), int(record["seed"]))
        return CellResult(
            cell,
            CellStatus(record["status"]),
            dict(record["value"]),
            str(record["error"]),
            float(record["seconds"]),
        )


@dataclasses.dataclass(frozen=True)
class SweepStats:
    """How a sweep ran (never part of its results).

    Attributes:
        engine: the engine's name (``local``, ``dask``, ``ray``).
        workers: worker processes (as asked; a cluster given by address may have others).
        seconds: wall time of the whole sweep, s.
        computed: cells run by this sweep.
        reused: cells taken from the store (a resumed sweep).
        failed: cells that failed (run now or recorded failed before).
    """

    engine: str
    workers: int
    seconds: float
    computed: int
    reused: int
    failed: int

    @property
    def cells_per_second(self) -> float:
        """Cells computed per wall-clock second (reused cells excluded)."""
        return self.computed / self.seconds if self.seconds > 0 else math.inf


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = value


@dataclasses.dataclass(frozen=True)
class SweepResult:
    """The cells' results (in cell order) and how the sweep ran.

    Attributes:
        results: one :class:`CellResult` per cell, ordered by ``cell.index``.
        stats: :class:`SweepStats`.
    """

    results: Sequence[CellResult]
    stats: SweepStats

    @property
    def failed(self) -> list[CellResult]:
        return [r for r in self.results if not r.ok]

    def values(self) -> list[dict[str, Any]]:
        """Per cell, the JSON-able result without timings: robot, params, seed, status, value, error's
        first line. Equal across engines and resumptions (what the tests compare)."""
        return [
            {
                "robot": r.cell.robot,
                "params": dict(r.cell.params),
                "seed": r.cell.seed,
                "status": r.status.value,
                "value": dict(r.value),
                "error": r.error.strip().splitlines()[-1] if r.error else "",
            }
            for r in self.results
        ]

    def rows(self) -> list[dict[str, Any]]:
        """The table: one flat dict per cell (``index``, ``robot``, ``seed``, the parameters, ``status``,
        the value's entries (nested dicts as ``a.b``), ``error``, ``seconds``)."""
        rows = []
        for r in self.results:
            row: dict[str, Any] = {"index": r.cell.index, "robot": r.cell.robot, "seed": r.cell.seed}
            row.update(r.cell.params)
            row["status"] = r.status.value
            _flatten("", dict(r.value), row)
            row["error"] = r.error.strip().splitlines()[-1] if r.error else ""
            row["seconds"] = round(r.seconds, 4)
            rows.append(row)
        return rows

    def to_csv(self, path: Path | str) -> Path:
        """Write :meth:`rows` as CSV (the union of the columns, in first-seen order); returns the path."""
        rows = self.rows()
        columns: dict[str, None] = {}
        for row in rows:
            columns.update(dict.fromkeys(row))
        path = Path(path)
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(columns))
            writer.writeheader()
            for row in rows:
                writer.writerow({k: json.dumps(v) if isinstance(v, (list, tuple)) else v for k, v in row.items()})
        return path
