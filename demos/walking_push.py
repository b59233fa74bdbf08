"""The largest push a walking humanoid survives against the gait phase at which it lands, forward and
sideways, compared with published figures (:mod:`wbc.sim.walking_push`).

    python demos/walking_push.py --robot g1 --workers 2 --out out/walking_push_g1
    python demos/walking_push.py --robot talos --quick

Writes ``DIR/walking_push.json`` (per direction and phase the largest force survived and its
bracket, the impulse, the velocity change it gives the robot; the weakest phase; the published
figures) and ``DIR/push_vs_phase.png``. Cells are bisections over MuJoCo walks (the ``sim`` extra);
``--store DIR`` resumes an interrupted sweep.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from wbc.command_line import docstring_parser
from wbc.sim.walking_push import DEFAULT_PUSHES, plot_push_vs_phase, walking_push_sweep


def main(argv: list[str] | None = None) -> int:
    parser = docstring_parser(__doc__)
    parser.add_argument("--robot", default="g1", choices=("talos", "g1"))
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--engine", default="local")
    parser.add_argument("--quick", action="store_true", help="4 phases, 4 bisection steps")
    parser.add_argument("--phases", type=int, default=8, help="phases over the gait cycle")
    parser.add_argument("--no-adjust", action="store_true", help="walk without online step adjustment")
    parser.add_argument("--store", type=Path, default=None, help="keep finished cells here (resumable)")
    parser.add_argument("--out", type=Path, default=None, help="default out/walking_push_<robot>")
    args = parser.parse_args(argv)
    phases = 4 if args.quick else args.phases
    pushes = dataclasses.replace(
        DEFAULT_PUSHES,
        phases=tuple(k / phases for k in range(phases)),
        iterations=4 if args.quick else 5,
        adjust=not args.no_adjust,
    )
    out = args.out or Path("out") / f"walking_push_{args.robot}"
    out.mkdir(parents=True, exist_ok=True)
    results = walking_push_sweep(args.robot, pushes, engine=args.engine, workers=args.workers, store=args.store)
    (out / "walking_push.json").write_text(json.dumps(results, indent=2) + "\n")
    plot_push_vs_phase(results, out / "push_vs_phase.png")
    print(json.dumps({"weakest": results["weakest"], "published": results["published"]}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
