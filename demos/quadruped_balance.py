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

import argparse
import json
from pathlib import Path

import numpy as np

from wbc.figures import com_tracking_figure, mark_spans, save_figure, step_time_figure, torques_figure

try:
    from wbc.sim.balance import MU, Balance, friction_use, standard_scenario
    from wbc.sim.mjcf_robot import add_arguments, from_arguments
except ImportError as exc:  # pragma: no cover - needs the 'sim' extra
    raise SystemExit(f"{exc}\nthe balance demo needs MuJoCo: pip install 'wbc[sim]'") from None

#: The quadrupeds this demo runs.
ROBOTS = ("anymal_c", "go2", "solo12")


def plot(run: dict, balance: Balance, out: Path) -> list[Path]:
    """Write the four PNG plots; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = run["t"]
    spans = [(p.time_s, p.time_s + p.duration_s) for p in balance.scenario.pushes]
    title = f"{balance.spec.name}: CoM tracking (red: pushes)"
    paths = [save_figure(com_tracking_figure(t, run["com"], run["com_ref"], title, spans), out / "com.png")]

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
    paths.append(save_figure(fig, out / "feet.png"))
    paths.append(save_figure(torques_figure(t, run["tau"], balance.model, spans), out / "torques.png"))
    paths.append(save_figure(step_time_figure(run["step_us"]), out / "step_time.png"))
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--robot", default="go2", choices=ROBOTS)
    parser.add_argument("--out", type=Path, default=None, help="output directory (default out/quadruped_<robot>)")
    parser.add_argument("--duration", type=float, default=9.0, help="simulated time, s")
    parser.add_argument("--push-lateral", type=float, default=None, help="lateral push force, N (default per robot)")
    parser.add_argument("--push-forward", type=float, default=None, help="forward push force, N (default per robot)")
    parser.add_argument("--push-duration", type=float, default=0.1, help="push duration, s")
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
    scenario = standard_scenario(robot, args.duration, args.push_lateral, args.push_forward, args.push_duration)
    balance = Balance(robot, scenario)
    replay = None
    if args.replay:
        from wbc.viz import Replay

        replay = Replay(balance.model, balance.spec.urdf, title=f"wbc: {args.robot} balancing on point feet")
    run = balance.run(progress=not args.quiet, replay=replay)
    summary = balance.summarize(run)
    np.savez_compressed(out / "log.npz", **{k: v for k, v in run.items() if isinstance(v, np.ndarray)})
    if not args.no_plots and len(run["t"]):
        summary["plots"] = [p.name for p in plot(run, balance, out)]
    if replay is not None:
        summary["replay"] = replay.write(out / "replay.html").name
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 0 if not summary["fell"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
