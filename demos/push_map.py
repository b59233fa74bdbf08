"""Push-recovery maps of a humanoid, computed as a sweep on a distributed engine.

Standing: the largest pelvis push survived over its direction (0-360°, world, 0° forward) and its
duration, as polar plots; walking: the largest lateral push survived over the gait phase. Each
map cell bisects the push force over short MuJoCo simulations (:mod:`wbc.sim.push_map`); the cells
run on local worker processes, a Dask cluster or Ray (:mod:`wbc.sweep`)::

    python demos/push_map.py --robot talos --engine local --workers 2 --out out/push_map
    python demos/push_map.py --engine dask --workers 2 --quick --out out/push_map_dask
    python demos/push_map.py --engine dask --scheduler tcp://10.0.0.5:8786 --out out/push_map

Writes ``DIR/push_map.json`` (the results only: equal across engines and worker counts),
``DIR/timings.json`` (engine, workers, wall time, cells per second), ``DIR/standing.png``,
``DIR/walking.png`` and the per-cell tables ``DIR/standing.csv``, ``DIR/walking.csv``. Completed
cells are kept in ``DIR/cells`` (``--store``): run the same command again after an interruption
and only the missing cells are computed. ``--quick`` is a small grid (4 directions, one duration,
4 phases, 3 bisection steps).
"""

from __future__ import annotations

import json
import sys

from wbc.command_line import docstring_parser
from wbc.sim import push_map as pmap
from wbc.sweep.command_line import add_sweep_arguments, sweep_options


def main(argv: list[str] | None = None) -> int:
    parser = docstring_parser(__doc__)
    add_sweep_arguments(parser)
    parser.add_argument("--quick", action="store_true", help="a small grid")
    parser.add_argument("--recover", action="store_true", help="standing, allow recovery steps")
    args = parser.parse_args(argv)
    options = sweep_options(parser, args)
    settings = pmap.PushMapSettings.quick() if args.quick else pmap.PushMapSettings()
    if args.recover:
        settings = pmap.PushMapSettings(**{**settings.__dict__, "recover": True})
    result = pmap.push_map(args.robot, settings, **options)
    (args.out / "push_map.json").write_text(json.dumps(result.results(), indent=1) + "\n")
    (args.out / "timings.json").write_text(json.dumps(result.timings(), indent=1) + "\n")
    result.standing.to_csv(args.out / "standing.csv")
    result.walking.to_csv(args.out / "walking.csv")
    pmap.plot_standing(result, args.out / "standing.png")
    pmap.plot_walking(result, args.out / "walking.png")
    weakest = result.weakest()
    print(json.dumps({"weakest": weakest, "timings": result.timings()}, indent=1))
    failed = len(result.standing.failed) + len(result.walking.failed)
    if failed:
        print(f"{failed} cells failed (their errors are in {args.out / 'push_map.json'})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
