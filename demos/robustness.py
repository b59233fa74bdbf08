"""How much of a humanoid's balance and walking margin survives a real robot's faults.

For each fault family of :mod:`wbc.sim.robustness` (model errors, sensor noise and bias, latency,
torque bandwidth, saturation, quantization, joint friction, and the realistic combination) at a few
magnitudes, and for each remedy (velocity filter, latency-aware prediction, softer contacts or
gains) on a few of them: the largest lateral and forward 100 ms push survived standing, a walk's
failed control steps, and a random-push soak under the combination; every cell on the sweep engine
(local processes, Dask, Ray), resumable::

    python demos/robustness.py --robot talos --workers 2 --walk-at severest --out out/robustness/talos
    python demos/robustness.py --robot g1 --quick --out out/robustness/g1
    python demos/robustness.py --robot talos --faults combination state_delay --no-remedies --out out/r

Writes ``DIR/robustness.json`` (nominal figures, each fault's figures with their ratio to the
nominal ones, each remedy's against no remedy, the soaks), ``DIR/survival.png`` (largest push
survived against each fault's magnitude), ``DIR/walking.png`` (failed steps and DCM error),
``DIR/remedies.png``, ``DIR/cells.csv`` and ``DIR/timings.json``. Completed cells are kept in
``DIR/cells`` (``--store``): run the command again after an interruption and only the missing
cells are computed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from wbc.command_line import docstring_parser
from wbc.sim import robustness as rb
from wbc.sweep.command_line import add_sweep_arguments, sweep_options


def _pair(text: str) -> tuple[rb.FaultKind, float]:
    """``KIND:MAGNITUDE`` (``combination:1``) as a (family, magnitude) pair."""
    kind, _, magnitude = text.partition(":")
    try:
        return rb.FaultKind(kind), float(magnitude or 0.0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not KIND:MAGNITUDE with a known kind") from None


def main(argv: list[str] | None = None) -> int:
    parser = docstring_parser(__doc__)
    add_sweep_arguments(parser)
    parser.add_argument(
        "--faults",
        nargs="+",
        default=None,
        choices=[k.value for k in rb.MAGNITUDES],
        help="the fault families (default all, at their rb.MAGNITUDES)",
    )
    parser.add_argument("--quick", action="store_true", help="two families, short bisections, no walk, no soak")
    parser.add_argument("--no-walk", action="store_true", help="no walking cells")
    parser.add_argument(
        "--walk-at",
        default="all",
        choices=["all", "severest", "mildest"],
        help="the magnitudes that walk: all, or each family's severest or mildest (and every combination)",
    )
    parser.add_argument(
        "--remedy-faults",
        nargs="+",
        type=_pair,
        default=None,
        metavar="KIND:MAGNITUDE",
        help="where the remedies are judged by pushes (default: rb.RobustnessSettings's)",
    )
    parser.add_argument(
        "--remedy-walks", nargs="+", type=_pair, default=None, metavar="KIND:MAGNITUDE", help="... and by walks"
    )
    parser.add_argument("--no-remedies", action="store_true", help="no remedy cells")
    parser.add_argument("--soak-seconds", type=float, default=None, help="simulated soak length (default 600, 0: none)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    options = sweep_options(parser, args)
    settings = rb.RobustnessSettings.quick() if args.quick else rb.RobustnessSettings()
    changes: dict = {"seed": args.seed}
    if args.faults is not None:
        changes["faults"] = {rb.FaultKind(k): rb.MAGNITUDES[rb.FaultKind(k)] for k in args.faults}
    if args.no_walk:
        changes["walk"] = False
    if args.walk_at != "all":
        families = changes.get("faults", settings.faults)
        pick = slice(-1, None) if args.walk_at == "severest" else slice(0, 1)
        changes["walk_faults"] = {
            k: tuple(m) if k is rb.FaultKind.COMBINATION else tuple(m)[pick] for k, m in families.items()
        }
    if args.remedy_faults is not None:
        changes["remedy_faults"] = tuple(args.remedy_faults)
    if args.remedy_walks is not None:
        changes["remedy_walks"] = tuple(args.remedy_walks)
    if args.no_remedies:
        changes["remedies"] = ()
    if args.soak_seconds is not None:
        changes["soak_s"] = args.soak_seconds
    settings = dataclasses.replace(settings, **changes)
    study = rb.robustness_study(args.robot, settings, **options)
    table = study.table()
    (args.out / "robustness.json").write_text(json.dumps(table, indent=1) + "\n")
    stats = study.result.stats
    (args.out / "timings.json").write_text(json.dumps(dataclasses.asdict(stats), indent=1) + "\n")
    study.result.to_csv(args.out / "cells.csv")
    rb.plot_survival(study, args.out / "survival.png")
    if settings.walk:
        rb.plot_walking(study, args.out / "walking.png")
    if settings.remedies:
        rb.plot_remedies(study, args.out / "remedies.png")
    print(json.dumps({"nominal": table["nominal"], "soak": table["soak"]}, indent=1))
    if table["failed_cells"]:
        print(f"{len(table['failed_cells'])} cells failed (see {args.out / 'robustness.json'})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
