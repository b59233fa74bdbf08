"""The command line the experiment benchmarks share (``benchmarks.algorithms``, ``.clusters``,
``.maximal``): ``--json``/``--out``/``--quick``/``--only``, records emitted as they come, the
experiments run in order, the tables printed and the JSON and PNGs written; and the small pieces
their experiments repeat (compiling with a log line, a figure saved as a PNG).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.harness import Record, choice_list

__all__ = [
    "Emit",
    "Log",
    "log",
    "json_emitter",
    "experiment_parser",
    "run_experiments",
    "report",
    "compile_logged",
    "write_json",
    "pyplot",
    "save_figure",
    "summaries",
    "section",
    "cell",
    "parse_timed",
]

Log = Callable[[str], None]
Emit = Callable[[Record], None]


def log(message: str) -> None:
    """A progress line on stderr (stdout carries the tables or the JSON lines)."""
    print(message, file=sys.stderr, flush=True)


def json_emitter(enabled: bool) -> Emit:
    """An :data:`Emit` printing each record as one JSON line when ``enabled``, else doing nothing."""

    def emit(rec: Record) -> None:
        if enabled:
            print(json.dumps(rec, ensure_ascii=False), flush=True)

    return emit


def experiment_parser(
    description: str, experiments: Sequence[str], json_name: str, quick_help: str
) -> argparse.ArgumentParser:
    """A parser with ``--json``, ``--out DIR`` (``DIR/json_name`` and PNGs), ``--quick`` (a smoke
    test: ``quick_help``) and ``--only`` (comma-separated names of ``experiments``, all by default;
    an unknown name is refused, naming the known ones)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--json", action="store_true", help="one JSON object per line instead of tables")
    parser.add_argument("--out", type=Path, default=None, help=f"write DIR/{json_name} and PNGs")
    parser.add_argument("--quick", action="store_true", help=f"smoke test: {quick_help}")
    parser.add_argument(
        "--only",
        type=lambda text: choice_list(text, list(experiments), "experiment"),
        default=list(experiments),
        help=f"comma-separated experiments (default: all of {','.join(experiments)})",
    )
    return parser


def parse_timed(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parser``'s arguments with the timing settings ``--quick`` selects: ``rounds`` (5 or 15) and
    ``block_ms`` (5 or 20 ms per timed block)."""
    args = parser.parse_args(argv)
    args.rounds = 5 if args.quick else 15
    args.block_ms = 5.0 if args.quick else 20.0
    return args


def run_experiments(
    runners: Mapping[str, Callable[[Any, Emit, Log], list[Record]]], names: Sequence[str], settings: Any, emit: Emit
) -> list[Record]:
    """Run the experiments ``names`` in order; every record goes to ``emit`` as soon as it exists."""
    records: list[Record] = []
    for name in names:
        t0 = time.perf_counter()
        log(f"{name}: running")
        records += runners[name](settings, emit, log)
        log(f"{name}: done in {time.perf_counter() - t0:.0f} s")
    return records


def report(
    args: argparse.Namespace,
    records: Sequence[Record],
    meta: Record,
    format_tables: Callable[[Sequence[Record]], str],
    write_outputs: Callable[[Sequence[Record], Path, Record], list[Path]],
) -> int:
    """The end of a run: ``meta`` (with ``wall_s``) as the last JSON line with ``--json``, else the
    tables and the wall time; the files of ``--out``. Returns the exit status (0)."""
    if args.json:
        json_emitter(True)(meta)
    else:
        print(format_tables(records))
        print(f"\nwall time {meta['wall_s']:.0f} s")
    if args.out is not None:
        log("wrote " + ", ".join(str(p) for p in write_outputs(records, args.out, meta)))
    return 0


def compile_logged(function: Any, log: Log) -> Any:
    """``wbc.codegen.compile_function(function)``, logging the compile time when it was not cached."""
    from wbc.codegen import compile_function

    t0 = time.perf_counter()
    k = compile_function(function)
    if k.compile_seconds:
        log(f"    compiled {function.name()} ({k.n_instructions} ops) in {time.perf_counter() - t0:.1f} s")
    return k


def write_json(path: Path, meta: Record, records: Sequence[Record]) -> Path:
    """``{"meta": meta, "records": records}`` into ``path`` (its folder created); returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"meta": meta, "records": list(records)}, indent=1, ensure_ascii=False) + "\n")
    return path


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the file-only Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: Path, dpi: int = 110, **layout: Any) -> Path:
    """Lay out ``fig`` (``tight_layout(**layout)``), write it as ``path`` and close it; returns ``path``."""
    fig.tight_layout(**layout)
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    return path


def summaries(records: Sequence[Record], experiment: str) -> list[Record]:
    """The summary records (``"kind": "summary"``) of ``experiment``."""
    return [r for r in records if r["experiment"] == experiment and r.get("kind") == "summary"]


def cell(x: Any, small: str, large: str, none: str = "-") -> str:
    """A table cell: ``none`` for ``None``, a float formatted with ``small`` below 10⁴ in magnitude and
    ``large`` above, anything else as ``str``."""
    if x is None:
        return none
    if isinstance(x, float):
        return format(x, small if abs(x) < 1e4 else large)
    return str(x)


def section(title: str, rows: Sequence[Record], line: Callable[[Record], str]) -> list[str]:
    """A table's lines: ``title``, then ``line(r)`` for each of ``rows``; none without rows."""
    return [title, *map(line, rows)] if rows else []
