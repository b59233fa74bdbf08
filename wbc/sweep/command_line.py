"""The command-line options every sweep demo shares: which robot, which engine with how many
workers (or which running cluster), where the completed cells are kept and the outputs written,
and whether to show progress; checked, and turned into the keyword arguments of the sweep runners
(:func:`wbc.sim.push_map.push_map`, :func:`wbc.sim.robustness.robustness_study`)::

    parser = argparse.ArgumentParser()
    add_sweep_arguments(parser)
    args = parser.parse_args()
    result = push_map(args.robot, settings, **sweep_options(parser, args))
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from .engines import Engine
from .runner import SweepOptions

__all__ = ["add_sweep_arguments", "sweep_options"]


def add_sweep_arguments(parser: argparse.ArgumentParser, robots: Sequence[str] = ("talos", "g1")) -> None:
    """Add ``--robot`` (one of ``robots``), ``--engine``, ``--workers``, ``--scheduler``, ``--store``,
    ``--out DIR`` (required) and ``--quiet`` to ``parser``."""
    parser.add_argument("--robot", default=robots[0], choices=list(robots))
    parser.add_argument("--engine", default="local", choices=[e.value for e in Engine])
    parser.add_argument("--workers", type=int, default=2, help="worker processes to start (default 2)")
    parser.add_argument(
        "--scheduler", default=None, metavar="ADDRESS", help="a running cluster (Dask scheduler or Ray address)"
    )
    parser.add_argument("--store", type=Path, default=None, help="completed cells (default DIR/cells)")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def sweep_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> SweepOptions:
    """The sweep runner's ``engine``, ``workers``, ``address``, ``store`` and ``progress`` from the
    options of :func:`add_sweep_arguments`, after checking them (``parser.error`` on a non-positive
    worker count or a scheduler without a distributed engine); creates ``args.out``."""
    if args.workers < 1:
        parser.error("--workers must be positive")
    if args.scheduler is not None and args.engine == "local":
        parser.error("--scheduler needs --engine dask or ray")
    args.out.mkdir(parents=True, exist_ok=True)
    return {
        "engine": args.engine,
        "workers": args.workers,
        "address": args.scheduler,
        "store": args.store or args.out / "cells",
        "progress": not args.quiet,
    }
