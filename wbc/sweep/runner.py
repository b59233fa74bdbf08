"""Run a cell function over cells on an engine: failures recorded, completed cells stored, resumable.

:func:`run_sweep` submits every cell not already in the store to an executor
(:func:`~wbc.sweep.engines.open_executor`), records each result as it arrives (in the store, then
in the table), and returns a :class:`~wbc.sweep.SweepResult` in cell order.

* A cell function is ``function(cell) -> dict``: a module-level function (workers import it)
  taking a :class:`~wbc.sweep.Cell` and returning a JSON-able dict (numbers, strings, lists, dicts;
  numpy scalars and arrays are converted). It builds what it needs from the cell (robot by name or
  file, parameters, seed), so any worker can run any cell.
* A cell that raises is recorded :attr:`~wbc.sweep.CellStatus.FAILED` with its traceback; the
  sweep goes on. A cell whose worker process dies (a crash in native code, killed, out of memory)
  is run again alone in a fresh worker; if that worker dies too, it is recorded failed ("worker
  died") and the sweep goes on. Such a result is the worker's, not the cell's (a script without
  its ``__main__`` guard kills every worker): it is not stored, so the next sweep runs the cell.
* With a ``store`` (a directory), each completed cell is written there as it completes; a sweep
  run again with the same store (after an interruption, or grown by more cells) takes those from
  the store and computes only the others (failed ones too, with ``retry_failed``).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import json
import pickle
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from ..errors import InputError
from .engines import Engine, open_executor
from .result import CellResult, CellStatus, SweepResult, SweepStats
from .space import Cell
from .store import ResultStore

__all__ = ["SweepOptions", "run_sweep", "run_cell", "function_name"]

CellFunction = Callable[[Cell], Mapping[str, Any]]


class SweepOptions(TypedDict, total=False):
    """Where and how a sweep runs: the keyword arguments of :func:`run_sweep` that a study passes through
    (``**options: Unpack[SweepOptions]``); an absent key takes :func:`run_sweep`'s default."""

    engine: Engine | str
    workers: int
    address: str | None
    store: ResultStore | Path | str | None
    progress: bool


def function_name(function: Callable) -> str:
    """``module.qualname`` of ``function`` (part of every cell's key)."""
    module = getattr(function, "__module__", None)
    qualname = getattr(function, "__qualname__", None)
    if not module or not qualname:
        raise InputError(f"a sweep's cell function must be a named function, got {function!r}")
    return f"{module}.{qualname}"


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON-able")


def run_cell(function: CellFunction, cell: Cell) -> CellResult:
    """Run one cell in this process: its result, or FAILED with the traceback (never raises for
    an exception of the cell function)."""
    t0 = time.perf_counter()
    try:
        value = function(cell)
        if not isinstance(value, Mapping):
            raise TypeError(f"the cell function returned {type(value).__name__}, not a dict")
        plain = json.loads(json.dumps(dict(value), default=_plain, allow_nan=True))
        return CellResult(cell, CellStatus.OK, plain, "", time.perf_counter() - t0)
    except Exception:
        return CellResult(cell, CellStatus.FAILED, {}, traceback.format_exc(), time.perf_counter() - t0)


class _Progress:
    """A tqdm bar over cells when asked for and tqdm is installed; else nothing."""

    def __init__(self, total: int, initial: int, enabled: bool, label: str) -> None:
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, initial=initial, unit="cell", desc=label)
            except ImportError:
                pass

    def update(self, failed: int) -> None:
        if self.bar is not None:
            self.bar.update(1)
            if failed:
                self.bar.set_postfix(failed=failed)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


@dataclasses.dataclass
class _Recorder:
    """Collects results: the store first (so a result is never lost), then the table and callback."""

    store: ResultStore | None
    keys: dict[int, str]
    on_result: Callable[[CellResult], None] | None
    progress: _Progress
    results: dict[int, CellResult] = dataclasses.field(default_factory=dict)
    failed: int = 0

    def __call__(self, result: CellResult, stored: bool = True) -> None:
        if self.store is not None and stored:
            self.store.save(self.keys[result.cell.index], result)
        self.results[result.cell.index] = result
        self.failed += not result.ok
        self.progress.update(self.failed)
        if self.on_result is not None:
            self.on_result(result)


def _wave(executor: cf.Executor, function: CellFunction, cells: Sequence[Cell], record: _Recorder) -> list[Cell]:
    """Run ``cells`` on ``executor``; returns the cells whose worker died (or that never ran because
    the executor broke)."""
    futures = {executor.submit(run_cell, function, cell): cell for cell in cells}
    lost = []
    try:
        for future in cf.as_completed(futures):
            try:
                result = future.result()
            except Exception:  # the worker, not the cell (run_cell catches the cell's exceptions)
                lost.append(futures[future])
                continue
            record(result)
    except BaseException:  # interrupted: run nothing more (completed cells are in the store)
        for future in futures:
            future.cancel()
        raise
    return sorted(lost, key=lambda c: c.index)


def _alone(
    function: CellFunction, cells: Sequence[Cell], engine: Engine, address: str | None, record: _Recorder
) -> None:
    """Run each of ``cells`` alone, each in a fresh executor after a worker died."""
    stack = contextlib.ExitStack()
    executor: cf.Executor | None = None
    try:
        for cell in cells:
            if executor is None:
                executor = stack.enter_context(open_executor(engine, 1, address))
            try:
                result = executor.submit(run_cell, function, cell).result()
            except Exception as e:
                why = f"{type(e).__name__}: {e}"
                if engine is Engine.LOCAL:  # the commonest cause with spawned workers
                    why += "; a script using the local engine must guard its entry point with if __name__ == '__main__'"
                result = CellResult(cell, CellStatus.FAILED, {}, f"worker died running this cell, twice ({why})")
                stack.close()
                stack, executor = contextlib.ExitStack(), None
                record(result, stored=False)  # the worker's failure, not the cell's: the next sweep runs it
                continue
            record(result)
    finally:
        stack.close()


def run_sweep(
    function: CellFunction,
    cells: Iterable[Cell],
    *,
    engine: Engine | str = Engine.LOCAL,
    workers: int = 1,
    address: str | None = None,
    store: ResultStore | Path | str | None = None,
    tag: str = "",
    retry_failed: bool = False,
    progress: bool = True,
    on_result: Callable[[CellResult], None] | None = None,
) -> SweepResult:
    """Run ``function`` on every cell (see :mod:`wbc.sweep.runner`).

    Args:
        function: the cell function (module-level: the workers import it).
        cells: the cells (:func:`~wbc.sweep.grid`, :func:`~wbc.sweep.random_samples`); unique indices.
        engine, workers, address: where to run (:func:`~wbc.sweep.open_executor`).
        store: a :class:`~wbc.sweep.ResultStore` or its directory: completed cells are recorded there
            and taken from there by a later sweep (resume).
        tag: part of every cell's key: change it when the cell function's code changes meaning, so
            stored results of the old code are not reused.
        retry_failed: run again the cells the store holds as failed.
        progress: a progress bar (tqdm, on stderr).
        on_result: called in this process with each :class:`~wbc.sweep.CellResult` as it completes
            (stored ones included); an exception there stops the sweep (results so far are stored).

    Returns:
        :class:`~wbc.sweep.SweepResult`: the results in cell order, and how the sweep ran.

    Raises:
        InputError: repeated cell indices, a cell function the local engine cannot pickle or its
            workers cannot import (one defined interactively), or bad engine arguments.
        MissingDependency: the engine is not installed (names the extra).
    """
    cells = list(cells)
    if len({c.index for c in cells}) != len(cells):
        raise InputError("run_sweep: cells must have unique indices")
    kind = engine if isinstance(engine, Engine) else Engine(engine) if engine in {e.value for e in Engine} else None
    if kind is None:
        raise InputError(f"unknown sweep engine {engine!r}; known: {', '.join(e.value for e in Engine)}")
    name = function_name(function)
    if kind is Engine.LOCAL:
        main = sys.modules.get("__main__")
        if getattr(function, "__module__", None) == "__main__" and not getattr(main, "__file__", None):
            raise InputError(
                f"the local engine's worker processes import {name} from the script that defines it, and "
                "this one has no file (python -c, standard input, a notebook): define it in a module or a script file"
            )
        try:
            pickle.dumps(function)
        except (pickle.PicklingError, AttributeError, TypeError) as e:
            raise InputError(
                f"the local engine sends {name} to worker processes by reference: it must be a module-level "
                f"function ({e})"
            ) from None
    if store is not None and not isinstance(store, ResultStore):
        store = ResultStore(store)
    t0 = time.perf_counter()
    keys = {c.index: c.key(name, tag) for c in cells}
    bar = _Progress(len(cells), 0, progress, name.rsplit(".", 1)[-1])
    record = _Recorder(store, keys, on_result, bar)
    todo = []
    reused = 0
    try:
        for cell in cells:
            stored = store.load(keys[cell.index]) if store is not None else None
            if stored is not None and (stored.ok or not retry_failed):
                # the store's record, reported under this sweep's cell (its index may differ)
                result = dataclasses.replace(stored, cell=cell)
                record.results[cell.index] = result
                record.failed += not result.ok
                reused += 1
                bar.update(record.failed)
                if on_result is not None:
                    on_result(result)
            else:
                todo.append(cell)
        if todo:
            with open_executor(kind, workers, address) as executor:
                lost = _wave(executor, function, todo, record)
            if lost:
                _alone(function, lost, kind, address, record)
    finally:
        bar.close()
    results = [record.results[c.index] for c in cells]
    stats = SweepStats(
        engine=kind.value,
        workers=workers,
        seconds=time.perf_counter() - t0,
        computed=len(todo),
        reused=reused,
        failed=sum(not r.ok for r in results),
    )
    return SweepResult(results, stats)
