"""Quadruped balancing in MuJoCo on four point feet under wbc's whole-body controller.

A quadruped (Go2 by default; ``--robot solo12`` or ``anymal_c``; or any floating-base MJCF file with
``--mjcf PATH --feet NAME...``, e.g. gymnasium's ``ant.xml --feet left_ankle_geom right_ankle_geom
third_ankle_geom fourth_ankle_geom``: its own file in MuJoCo, its actuators' limits as torque limits)
stands on four point feet
(``wbc.PointContact``: 3D forces, friction pyramids; spheres in MuJoCo) in a 1 kHz simulation with
:class:`wbc.WholeBodyController` in the loop. The scenario has the humanoid demo's shape:

1. settle (1 s);
2. CoM sway: a lateral sinusoid of the CoM reference with smooth 1 s ramps (4 s);
3. a lateral push on the base, then a forward push;
4. quiet standing until the end.

Tasks: CoM, base orientation, joint posture; contacts: the four feet (μ = 0.7), torque limits from
the URDF. Writes to ``--out`` the plots ``com.png``, ``feet.png`` (normal forces, friction use
|f_t|/(μ f_n)), ``torques.png``, ``step_time.png``, the log ``log.npz`` and ``summary.json``;
``--replay`` also writes ``replay.html``, a 3D replay that opens offline in a browser.

The scenario and the run are library code (:mod:`wbc.sim.balance`, the humanoid demo's too); this
script is their command line.
"""

from __future__ import annotations

import json
from pathlib import Path

from wbc.command_line import needs_sim
from wbc.figures import mark_spans

with needs_sim("the balance demo"):
    from wbc.sim.balance import MU, Balance, friction_use, save_run, scenario_from_arguments, scenario_parser
    from wbc.sim.mjcf_robot import add_arguments, from_arguments

#: The quadrupeds this demo runs.
ROBOTS = ("anymal_c", "go2", "solo12")


def feet_figure(run: dict, balance: Balance):
    """The feet's normal forces and friction use (commanded), pushes marked."""
    import matplotlib.pyplot as plt

    t, spans = run["t"], balance.push_spans()
    fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    f = run["force"]
    for k, name in enumerate(balance.spec.feet):
        axes[0].plot(t, f[:, k, 2], lw=1.2, label=name)
        axes[1].plot(t, friction_use(f[:, k]), lw=1.0, label=name)
    axes[0].axhline(balance.tree.total_mass * 9.81 / 4, color="k", ls=":", lw=1, label="m g / 4")
    axes[0].set_ylabel("normal force (N)")
    axes[0].legend(loc="upper right", fontsize=8, ncol=2)
    axes[1].axhline(1.0, color="tab:red", lw=1.2)
    axes[1].set_ylabel("|f_t| / (μ f_n)")
    axes[1].set_ylim(0, 1.1)
    for ax in axes:
        mark_spans(ax, spans)
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(f"Foot forces (commanded): normal force and friction use (1 = on the cone, μ = {MU})")
    return fig


def main(argv: list[str] | None = None) -> int:
    parser = scenario_parser(__doc__, ROBOTS, "go2", "quadruped")
    parser.add_argument("--replay", action="store_true", help="write replay.html (a 3D replay; needs wbc[viz])")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_arguments(parser)
    args = parser.parse_args(argv)
    mjcf = from_arguments(parser, args)
    if mjcf is not None and (args.replay or mjcf.sole is not None):
        parser.error("--mjcf here stands robots on point feet (spheres, capsules, sites), without --replay")

    robot = mjcf if mjcf is not None else args.robot
    out = args.out or Path("out") / f"quadruped_{args.robot if mjcf is None else mjcf.name}"
    out.mkdir(parents=True, exist_ok=True)
    balance = Balance(robot, scenario_from_arguments(robot, args))
    replay = None
    if args.replay:
        from wbc.viz import Replay

        replay = Replay(balance.model, balance.spec.urdf, title=f"wbc: {args.robot} balancing on point feet")
    run = balance.run(progress=not args.quiet, replay=replay)
    extra = {} if replay is None else {"replay": replay.write(out / "replay.html").name}
    summary = save_run(balance, run, out, None if args.no_plots else feet_figure, extra)
    print(json.dumps(summary, indent=2))
    return 0 if not summary["fell"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
