"""Humanoid balancing in MuJoCo under wbc's whole-body controller (the project's main job).

A humanoid (Talos by default, ``--robot g1`` for Unitree G1, or any floating-base MJCF file with
``--mjcf PATH --feet NAME...``: its own file in MuJoCo, at its own time step, its actuators' limits as
torque limits, e.g. dm_control's ``suite/humanoid.xml --feet left_foot right_foot``) stands on two
rectangular feet in a 1 kHz MuJoCo simulation with :class:`wbc.WholeBodyController` in the loop (state read from the
simulator, torques written back every millisecond). Scenario:

1. settle (1 s);
2. CoM sway: a lateral sinusoid of the CoM reference with smooth 1 s ramps (4 s);
3. a lateral push on the pelvis, then a forward push (force and duration configurable);
4. quiet standing until the end.

Tasks: CoM (tracking the sway), pelvis orientation, joint posture; contacts: both soles (6D wrench,
friction and CoP limits), torque limits from the URDF.

Headless by default: writes to ``--out`` the plots ``com.png`` (CoM reference vs actual),
``feet.png`` (normal forces and centres of pressure in the soles), ``torques.png`` (joint torques
against their limits), ``step_time.png`` (control-step time histogram), the log ``log.npz`` and
``summary.json``, and prints the summary. ``--viewer`` opens MuJoCo's viewer where a display
exists; ``--video out.mp4`` renders offscreen where an OpenGL backend exists; ``--push-sweep``
finds, by bisection, the largest lateral push (N over 0.1 s) the robot survives standing, and with
``--stepping`` also with recovery steps (the walking loop of ``demos/walk.py``,
:class:`wbc.sim.walking.Walker`: a step toward the capture point once it leaves the feet, a closing
step, standing again).

The scenario, the pushes, the scans and the soak are library code (:mod:`wbc.sim.balance`); this
script is their command line. Robustness: ``--push-scan`` runs a grid of lateral pushes (default
0-600 N by 25 N) and reports, per force, up or fell, foot slip and pelvis height, then the first
failure (fell, pelvis < 90 % or slip ≥ 1 cm) and the first fall, as the anchors' table does;
``--soak SECONDS`` pushes the robot at random (every 0.5-1 s, 50-300 N for 0.1 s, any horizontal
direction; reset after a fall) and reports falls, foot displacement, non-optimal steps by status
and NaN count.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from wbc.command_line import needs_sim
from wbc.figures import mark_spans
from wbc.viz import Replay

with needs_sim("the balance demo"):
    from wbc.sim.balance import (
        DIRECTIONS,
        Balance,
        SoakSettings,
        push_scan,
        push_sweep,
        save_run,
        scenario_from_arguments,
        scenario_parser,
        soak,
    )
    from wbc.sim.mjcf_robot import add_arguments, from_arguments

#: The humanoids this demo runs.
ROBOTS = ("g1", "talos")


def feet_figure(run: dict, balance: Balance):
    """The feet's normal forces and centres of pressure in the soles (commanded), pushes marked."""
    import matplotlib.pyplot as plt

    t, spans = run["t"], balance.push_spans()
    fig, axes = plt.subplots(3, 1, figsize=(9, 7), sharex=True)
    names = [c.name for c in balance.controller.contacts]
    for k, name in enumerate(names):
        axes[0].plot(t, run["normal"][:, k], lw=1.2, label=name)
    axes[0].axhline(balance.tree.total_mass * 9.81, color="k", ls=":", lw=1, label="m g")
    axes[0].set_ylabel("normal force (N)")
    axes[0].legend(loc="upper right", fontsize=8)
    sole = balance.spec.sole
    for j, (ax, axis, half) in enumerate(zip(axes[1:], "xy", (sole.length / 2, sole.width / 2))):
        for k, name in enumerate(names):
            ax.plot(t, run["cop"][:, k, j], lw=1.0, label=name)
        ax.axhline(half, color="k", ls=":", lw=1)
        ax.axhline(-half, color="k", ls=":", lw=1)
        ax.set_ylabel(f"CoP {axis} in sole (m)")
    for ax in axes:
        mark_spans(ax, spans)
    axes[-1].set_xlabel("time (s)")
    fig.suptitle("Foot normal forces and centres of pressure (commanded; dotted: sole edges)")
    return fig


def add_robustness_arguments(parser: argparse.ArgumentParser) -> None:
    """``--push-scan`` and ``--soak`` (and their settings)."""
    parser.add_argument("--push-scan", action="store_true", help="lateral pushes over a grid of forces (0-600 N)")
    parser.add_argument(
        "--scan-forces",
        type=float,
        nargs=3,
        default=(0.0, 600.0, 25.0),
        metavar=("FIRST", "LAST", "STEP"),
        help="the push-scan grid, N (default 0 600 25)",
    )
    parser.add_argument("--soak", type=float, default=None, metavar="SECONDS", help="random pushes for SECONDS")
    parser.add_argument(
        "--soak-force", type=float, nargs=2, default=(50.0, 300.0), metavar=("MIN", "MAX"), help="soak push force, N"
    )
    parser.add_argument("--seed", type=int, default=0, help="soak random seed")


def robustness_main(args) -> int:
    """Run ``--push-scan`` and/or ``--soak`` and print one JSON line each."""
    log = None if args.quiet else (lambda row: print(json.dumps(row), file=sys.stderr, flush=True))
    if args.push_scan:
        first, last, step = args.scan_forces
        forces = np.arange(first, last + step / 2, step)
        print(json.dumps(push_scan(args.robot, forces, log)), flush=True)
    if args.soak is not None:
        settings = SoakSettings(seconds=args.soak, force=tuple(args.soak_force), seed=args.seed)
        print(json.dumps(soak(args.robot, settings, progress=not args.quiet)), flush=True)
    return 0


def sweep_main(args) -> int:
    """``--push-sweep`` (and ``--stepping``): the largest push survived, by bisection."""
    d = args.push_direction

    def sweep(stepping: bool) -> float:
        kind = "stepping" if stepping else "standing"

        def log(lo: float, hi: float) -> None:
            print(f"  push sweep ({d}, {kind}): survives {lo:.0f} N, fails {hi:.0f} N", file=sys.stderr)

        return push_sweep(args.robot, log=log, direction_deg=DIRECTIONS[d], stepping=stepping)

    result = {"robot": args.robot, f"largest_{d}_push_N": round(sweep(False), 1), "push_duration_s": 0.1}
    if args.stepping:
        result[f"largest_{d}_push_with_stepping_N"] = round(sweep(True), 1)
    print(json.dumps(result))
    return 0


def _open_viewer(balance: Balance):
    if sys.platform.startswith("linux") and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        print("--viewer: no display here (DISPLAY is not set); running headless", file=sys.stderr)
        return None
    try:
        import mujoco.viewer

        return mujoco.viewer.launch_passive(balance.sim.mjmodel, balance.sim.mjdata)
    except Exception as exc:
        print(f"--viewer: cannot open MuJoCo's viewer ({exc}); running headless", file=sys.stderr)
        return None


def _open_renderer(balance: Balance):
    try:
        import mujoco

        return mujoco.Renderer(balance.sim.mjmodel, 480, 640)
    except Exception as exc:
        print(
            f"--video: offscreen rendering unavailable ({exc}); set MUJOCO_GL=egl or osmesa where an "
            "OpenGL backend exists. No video written.",
            file=sys.stderr,
        )
        return None


def _write_video(frames: list, path: Path) -> None:
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        print("--video: ffmpeg not found; no video written", file=sys.stderr)
        return
    h, w, _ = frames[0].shape
    cmd = [
        ffmpeg,
        "-y",
        "-loglevel",
        "error",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "rgb24",
        "-s",
        f"{w}x{h}",
        "-r",
        "30",
        "-i",
        "-",
        "-pix_fmt",
        "yuv420p",
        str(path),
    ]
    subprocess.run(cmd, input=b"".join(f.tobytes() for f in frames), check=True)
    print(f"video written to {path}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = scenario_parser(__doc__, ROBOTS, "talos", "balance")
    parser.add_argument("--push-sweep", action="store_true", help="find the largest lateral push survived (bisection)")
    parser.add_argument(
        "--push-direction", choices=sorted(DIRECTIONS), default="lateral", help="with --push-sweep (default lateral)"
    )
    parser.add_argument(
        "--stepping", action="store_true", help="with --push-sweep: also the largest push survived with recovery steps"
    )
    add_robustness_arguments(parser)
    add_arguments(parser)
    parser.add_argument("--viewer", action="store_true", help="open MuJoCo's viewer (needs a display)")
    parser.add_argument("--video", type=Path, default=None, help="render an mp4 offscreen (needs OpenGL and ffmpeg)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--realtime",
        action="store_true",
        help="run the loop in wbc.realtime_mode (garbage collector frozen, memory locked where permitted)",
    )
    parser.add_argument(
        "--priority",
        type=int,
        default=None,
        metavar="P",
        help="with --realtime: the loop's thread under SCHED_FIFO at priority P (1-99; needs CAP_SYS_NICE or rtprio)",
    )
    parser.add_argument(
        "--paced", action="store_true", help="each step on the wall clock's 1 ms tick (sleep between steps)"
    )
    parser.add_argument("--replay", action="store_true", help="write replay.html (a 3D replay; needs wbc[viz])")
    args = parser.parse_args(argv)
    if args.priority is not None and not args.realtime:
        parser.error("--priority is for the real-time mode: add --realtime")
    mjcf = from_arguments(parser, args)
    if mjcf is not None and (args.push_scan or args.soak is not None or args.push_sweep or args.replay):
        parser.error("--mjcf runs the standing scenario (no --push-scan, --soak, --push-sweep or --replay)")
    if mjcf is not None and mjcf.sole is None:
        parser.error("--mjcf: these feet are points; the quadruped demo stands robots on point feet")

    if args.push_scan or args.soak is not None:
        return robustness_main(args)
    if args.push_sweep:
        return sweep_main(args)
    robot = mjcf if mjcf is not None else args.robot
    out = args.out or Path("out") / f"balance_{args.robot if mjcf is None else mjcf.name}"
    out.mkdir(parents=True, exist_ok=True)
    balance = Balance(robot, scenario_from_arguments(robot, args))
    viewer = _open_viewer(balance) if args.viewer else None
    renderer = _open_renderer(balance) if args.video else None
    frames: list = []
    replay = Replay(balance.model, balance.spec.urdf, title=f"wbc: {args.robot} balancing") if args.replay else None

    def on_step(i, t, q, v, cmd) -> None:
        if viewer is not None and i % 16 == 0:
            viewer.sync()
        if renderer is not None and i % 33 == 0:
            renderer.update_scene(balance.sim.mjdata)
            frames.append(renderer.render())

    run = balance.run(
        progress=not args.quiet,
        replay=replay,
        on_step=on_step,
        realtime=args.realtime,
        priority=args.priority,
        paced=args.paced,
    )
    if replay is not None:
        replay.write(out / "replay.html")
    if viewer is not None:
        viewer.close()
    if renderer is not None and frames:
        _write_video(frames, args.video)
    summary = save_run(balance, run, out, None if args.no_plots else feet_figure)
    print(json.dumps(summary, indent=2))
    return 0 if not summary["fell"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
