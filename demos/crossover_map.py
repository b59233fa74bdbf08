"""Which sideways pushes a standing humanoid survives with crossover steps and without, over the
push's force and the time it comes (:mod:`wbc.sim.crossover_map`).

    python demos/crossover_map.py --robot g1 --out out/crossover_g1
    python demos/crossover_map.py --robot talos --times 1.0 --out out/crossover_talos

Writes ``DIR/crossover_map.json`` (one row per run: force, push time, crossover or not, held, when
it fell, its landings; per push time how many pushes each way held) and ``DIR/crossover_map.png``
(without crossover steps above, with them below). Each cell is a MuJoCo run (the ``sim`` extra);
``--engine dask`` or ``ray`` runs the cells there, and the finished cells are kept in ``DIR/cells``
(a second run resumes).
"""

from __future__ import annotations

import dataclasses
import json

from wbc.command_line import docstring_parser
from wbc.errors import InputError
from wbc.sim.crossover_map import DEFAULT_LATERAL_PUSHES, crossover_map, plot_crossover_map
from wbc.sweep.command_line import add_sweep_arguments, sweep_options


def main(argv: list[str] | None = None) -> int:
    parser = docstring_parser(__doc__)
    add_sweep_arguments(parser, robots=("g1", "talos"))
    parser.add_argument("--forces", type=float, nargs="+", default=None, metavar="N", help="default: the robot's")
    parser.add_argument("--times", type=float, nargs="+", default=None, metavar="S", help="push times, s")
    parser.add_argument("--after", type=float, default=None, metavar="S", help="run on after each push, s")
    args = parser.parse_args(argv)
    pushes = DEFAULT_LATERAL_PUSHES[args.robot]
    changes = {"forces_N": args.forces, "push_times_s": args.times, "after_push_s": args.after}
    given = {k: tuple(v) if isinstance(v, list) else v for k, v in changes.items() if v is not None}
    try:
        pushes = dataclasses.replace(pushes, **given)
    except InputError as exc:
        parser.error(str(exc))
    options = sweep_options(parser, args)
    results = crossover_map(args.robot, pushes, **options)
    (args.out / "crossover_map.json").write_text(json.dumps(results, indent=2) + "\n")
    plot_crossover_map(results, args.out / "crossover_map.png")
    print(json.dumps({"robot": args.robot, "held": results["held"], "pushes_per_time": results["pushes_per_time"]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
