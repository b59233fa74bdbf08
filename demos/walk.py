"""Walking under wbc's whole-body controller, torque-controlled in MuJoCo at 1 kHz.

A footstep plan from a velocity command (``--command VX VY WZ``: m/s, m/s, rad/s) and a DCM
reference on the linear inverted pendulum (:mod:`wbc.locomotion`: Englsberger's DCM planning),
tracked by a DCM stabilizer (the measured DCM moves the commanded ZMP within the support polygon)
feeding the CoM task of :class:`wbc.WholeBodyController`; swing feet follow frame tasks. The loop
itself is :class:`wbc.sim.walking.Walker` (reusable from a script); this file is its command line
and plots.

Contact switching (force ramps before lift-off, touchdown with a force rise where the foot landed)
is described in :mod:`wbc.sim.walking`.

With ``--terrain stairs|stairs-down|slope|rough|stones`` the robot walks straight over that scene
(:mod:`wbc.locomotion.terrain`, built in MuJoCo by :mod:`wbc.sim.terrain`; ``--distance`` m):
footholds on the surfaces, swings clearing the edges, the CoM height following the lower foot;
``terrain.png`` shows the footprints over the terrain from above and from the side, and
``summary.json`` the height gained. ``--preset fast`` walks with the faster gaits
(:data:`wbc.sim.walking.FAST_GAITS`). ``--lateral-push FY`` pushes the standing robot sideways
(N over 0.1 s, toward its right) twice in the same run, without and with crossover steps, and writes
``lateral_push.json`` (each run's ``fell_at_s``), ``lateral_push.png`` (from above) and
``lateral_push_time.png`` (the lateral CoM, DCM and soles against time).

With ``--push FX FY`` (N, over 0.1 s at ``--push-time``) the capture-step planner re-solves the next
step's location and timing online (:class:`wbc.locomotion.CaptureStepPlanner`); standing, a push
that takes the capture point out of the feet triggers a recovery step (:func:`wbc.sim.walking.stand_and_push`,
used by ``humanoid_balance.py --push-sweep --stepping``).

Headless by default: writes to ``--out`` (default ``out/walk_<robot>``) ``tracking.png`` (CoM, DCM
and ZMP against their references), ``top.png`` (footprints and paths seen from above),
``forces.png`` (normal forces per foot), ``torques.png`` (joint torques against limits),
``step_time.png`` (control-step time, standing vs walking), ``log.npz`` and ``summary.json``
(distance, speed, turn, fell, max foot slip, failed steps, step-time ratio); ``--replay`` writes
``replay.html``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from wbc import locomotion as loco
from wbc.figures import plot_torques_against_limits, save_figure

try:
    from wbc.sim.walking import (
        DT,
        FAST_GAITS,
        GAITS,
        LATERAL_TOLERANCE,
        PRESETS,
        FootPhase,
        Walker,
        lateral_push_with_and_without_crossover,
        summarize,
    )
except ImportError as exc:  # pragma: no cover - needs the 'sim' extra
    raise SystemExit(f"{exc}\nthe walking demo needs MuJoCo: pip install 'wbc[sim]'") from None


# ================================================================================== plots
def plot(walker: Walker, run: dict, out: Path, pushes: Sequence = ()) -> list[Path]:
    """Write the five PNG plots (``pushes`` as given to :meth:`Walker.run` are drawn from above);
    returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Polygon

    t, paths = run["t"], []
    swing = {f: run["normal_cmd"][:, k] <= 0 for k, f in enumerate(loco.Foot)}

    def shade(ax):
        for k, f in enumerate(loco.Foot):
            mask = swing[f]
            edges = np.flatnonzero(np.diff(np.r_[0, mask.astype(int), 0]))
            for a, b in zip(edges[::2], edges[1::2]):
                ax.axvspan(t[a], t[b - 1], color=("tab:blue", "tab:orange")[k], alpha=0.08, lw=0)

    fig, axes = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    for k, (ax, name) in enumerate(zip(axes, "xy")):
        ax.plot(t, run["com_ref"][:, k], "--", color="tab:blue", lw=1, label="CoM ref")
        ax.plot(t, run["com"][:, k], color="tab:blue", lw=1.2, label="CoM")
        ax.plot(t, run["dcm_ref"][:, k], "--", color="tab:red", lw=1, label="DCM ref")
        ax.plot(t, run["dcm"][:, k], color="tab:red", lw=1.0, label="DCM")
        ax.plot(t, run["zmp_ref"][:, k], "--", color="tab:green", lw=1, label="ZMP ref")
        ax.plot(t, run["zmp_cmd"][:, k], color="tab:green", lw=0.8, alpha=0.8, label="ZMP commanded")
        ax.set_ylabel(f"{name} (m)")
        shade(ax)
    axes[0].legend(loc="upper left", fontsize=8, ncol=3)
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(f"{walker.spec.name}: CoM / DCM / ZMP tracking (shaded: swing of the left / right foot)")
    paths.append(save_figure(fig, out / "tracking.png"))

    xy = np.vstack([run["com"][:, 0:2], run["zmp_ref"][:, 0:2], [fs.position[0:2] for fs in walker.feet0.values()]])
    low, high = xy.min(axis=0) - 0.2, xy.max(axis=0) + 0.2  # m: room for the soles around their centres
    span = high - low
    width = 10.0  # in; the height follows the data at equal scales, plus the title and the legend below
    fig, ax = plt.subplots(figsize=(width, min(12.0, 0.85 * width * span[1] / span[0] + 1.9)))
    shape = walker.shape
    for fs in walker.feet0.values():
        ax.add_patch(Polygon(shape.corners(fs)[:, 0:2], closed=True, fill=False, ec="k", lw=1.2))
    if walker.plan is not None:  # the nominal plan (before any online adjustment)
        for fs in walker.plan.steps:
            ax.add_patch(Polygon(shape.corners(fs)[:, 0:2], closed=True, fill=False, ec="0.5", ls="--", lw=0.8))
    colors = {"left": "tab:blue", "right": "tab:orange"}
    for _, foot, landed, _, _ in run["touchdowns"]:
        fl = loco.Footstep(loco.Foot(foot), np.array([landed[0], landed[1], 0.0]), landed[2])
        ax.add_patch(
            Polygon(shape.corners(fl)[:, 0:2], closed=True, fc=colors[foot], alpha=0.25, ec=colors[foot], lw=1.0)
        )
    ax.plot(run["zmp_cmd"][:, 0], run["zmp_cmd"][:, 1], color="tab:green", lw=0.6, alpha=0.7, label="ZMP commanded")
    ax.plot(run["zmp_ref"][:, 0], run["zmp_ref"][:, 1], "--", color="tab:green", lw=0.8, label="ZMP ref")
    ax.plot(run["dcm"][:, 0], run["dcm"][:, 1], color="tab:red", lw=1.0, label="DCM")
    ax.plot(run["com"][:, 0], run["com"][:, 1], color="tab:blue", lw=1.5, label="CoM")
    ax.plot([], [], color="0.5", ls="--", label="nominal footholds")
    for tp, force, _ in pushes:
        k = min(int(round(tp / DT)), len(t) - 1)
        f = np.asarray(force, float)[0:2]
        arrow = 0.15 * f / max(np.linalg.norm(f), 1e-9)
        ax.annotate(
            f"{np.linalg.norm(f):.0f} N",
            xy=run["com"][k, 0:2] + arrow,
            xytext=run["com"][k, 0:2],
            arrowprops=dict(arrowstyle="->", color="tab:purple", lw=1.5),
            color="tab:purple",
            fontsize=8,
        )
    ax.set_xlim(low[0], high[0])
    ax.set_ylim(low[1], high[1])
    ax.set_aspect("equal")  # a metre is a metre both ways
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    # below the x label (4 font sizes under the axes, whatever the figure's height): hides nothing
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), borderaxespad=4.0, ncol=5, fontsize=8, frameon=False)
    ax.set_title(f"{walker.spec.name}: footprints (filled: where the feet landed) and paths from above")
    paths.append(save_figure(fig, out / "top.png"))

    fig, axes = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    for k, (ax, f) in enumerate(zip(axes, loco.Foot)):
        ax.plot(t, run["normal_sim"][:, k], color="0.5", lw=0.6, label="MuJoCo (measured)")
        ax.plot(t, run["normal_cmd"][:, k], color=("tab:blue", "tab:orange")[k], lw=1.2, label="commanded")
        ax.axhline(walker.weight, color="k", ls=":", lw=1, label="m g")
        ax.set_ylabel(f"{f.value} normal force (N)")
        ax.set_ylim(-50, 2.0 * walker.weight)
    axes[0].legend(loc="upper right", fontsize=8)
    axes[-1].set_xlabel("time (s)")
    fig.suptitle("Normal force per foot: commanded (QP) and measured (MuJoCo)")
    paths.append(save_figure(fig, out / "forces.png"))

    fig, ax = plt.subplots(figsize=(10, 4.5))
    plot_torques_against_limits(ax, t, run["tau"], walker.model)
    paths.append(save_figure(fig, out / "torques.png"))

    if walker.terrain is not None:
        paths.append(plot_terrain(walker, run, out))

    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [2, 1]})
    us, walking = run["step_us"], run["walking"]
    top = np.percentile(us, 99.5) * 1.1
    ax0.plot(t, us, lw=0.3, color="0.4")
    ax0.set_ylim(0, top)
    ax0.set_xlabel("time (s)")
    ax0.set_ylabel("controller step (µs)")
    shade(ax0)
    bins = np.linspace(0, top, 60)
    for mask, label in ((~walking, "standing"), (walking, "walking")):
        if mask.any():
            ax1.hist(us[mask], bins=bins, alpha=0.6, label=f"{label}: median {np.median(us[mask]):.0f} µs")
    ax1.set_xlabel("controller step (µs)")
    ax1.legend(fontsize=8)
    fig.suptitle(f"Control-step time ({len(us)} steps, this machine, this run)")
    paths.append(save_figure(fig, out / "step_time.png"))
    return paths


def plot_terrain(walker: Walker, run: dict, out: Path) -> Path:
    """``terrain.png``: the footprints over the terrain from above (shaded by height) and from the side
    (the terrain under each foot's lane, where the soles went and landed, the CoM)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Polygon

    terrain, shape = walker.terrain, walker.shape
    soles, com = run["soles"], run["com"]
    x_lo, x_hi = min(-0.3, float(soles[:, :, 0].min()) - 0.3), float(soles[:, :, 0].max()) + 0.4
    span = x_hi - x_lo
    fig, (top, side) = plt.subplots(
        2, 1, figsize=(min(16.0, 3.0 + 4.5 * span), 8), gridspec_kw={"height_ratios": [1, 1.2]}
    )
    xs = np.linspace(x_lo, x_hi, 600)
    ys = np.linspace(-0.45, 0.45, 160)
    X, Y = np.meshgrid(xs, ys)
    H = terrain.height(np.column_stack([X.ravel(), Y.ravel()])).reshape(X.shape)
    H = np.where(np.isfinite(H), H, np.nan)
    image = top.pcolormesh(X, Y, H, cmap="terrain", shading="auto")
    fig.colorbar(image, ax=top, label="terrain height (m)", pad=0.01)
    colors = {"left": "tab:blue", "right": "tab:orange"}
    for _, foot, landed, _, _ in run["touchdowns"]:
        fl = loco.Footstep(loco.Foot(foot), np.array([landed[0], landed[1], 0.0]), landed[2])
        top.add_patch(Polygon(shape.corners(fl)[:, 0:2], closed=True, fc=colors[foot], alpha=0.45, ec="k", lw=0.8))
    if walker.plan is not None:
        for fs in walker.plan.steps:
            top.add_patch(Polygon(shape.corners(fs)[:, 0:2], closed=True, fill=False, ec="k", ls="--", lw=0.6))
    top.plot(com[:, 0], com[:, 1], color="k", lw=1.0, label="CoM")
    top.set_aspect("equal")
    top.set_xlim(x_lo, x_hi)
    top.set_ylim(-0.45, 0.45)
    top.set_ylabel("y (m)")
    top.legend(loc="upper left", fontsize=8)
    top.set_title("from above: footprints where the feet landed (filled) and were planned (dashed)")
    for k, foot in enumerate(loco.Foot):
        lane = float(np.median(soles[:, k, 1]))
        profile = terrain.height(np.column_stack([xs, np.full_like(xs, lane)]))
        side.plot(xs, np.where(np.isfinite(profile), profile, np.nan), color=colors[foot.value], lw=2.0, alpha=0.5)
        side.fill_between(xs, np.where(np.isfinite(profile), profile, terrain.floor or 0.0), -1.0, color="0.85")
        side.plot(soles[:, k, 0], soles[:, k, 2], color=colors[foot.value], lw=0.8, label=f"{foot.value} sole")
    for _, foot, landed, _, _ in run["touchdowns"]:
        k = list(loco.Foot).index(loco.Foot(foot))
        i = int(np.argmin(np.abs(soles[:, k, 0] - landed[0]) + np.abs(soles[:, k, 1] - landed[1])))
        side.plot(landed[0], soles[i, k, 2], "v", color=colors[foot], ms=6)
    side.plot(com[:, 0], com[:, 2], color="k", lw=1.0, label="CoM")
    z_lo = float(np.nanmin(np.r_[soles[:, :, 2].ravel(), -0.05])) - 0.1
    side.set_ylim(z_lo, float(com[:, 2].max()) + 0.1)
    side.set_xlim(x_lo, x_hi)
    side.set_aspect("equal")
    side.set_xlabel("x (m)")
    side.set_ylabel("z (m)")
    side.legend(loc="upper left", fontsize=8)
    side.set_title("from the side: terrain under each foot's lane, sole paths, landings (▼), CoM")
    kind = terrain.kind.value if terrain.kind is not None else "terrain"
    fig.suptitle(
        f"{walker.spec.name} on {kind}: {len(run['touchdowns'])} footsteps, {'fell' if run['fell'] else 'no fall'}"
    )
    return save_figure(fig, out / "terrain.png")


#: The push of :func:`lateral_push` (:func:`wbc.sim.walking.stand_and_push`'s defaults): at this time, s ...
LATERAL_PUSH_TIME = 1.0
#: ... for this long, s.
LATERAL_PUSH_LENGTH = 0.1


def lateral_push(robot: str, force: float, out: Path, plots: bool = True) -> int:
    """Push the standing robot toward its right with ``force`` N over 0.1 s, without then with
    crossover steps (same push, same settings otherwise); write ``lateral_push.json`` (+ the two PNGs)."""
    runs = lateral_push_with_and_without_crossover(robot, force)
    result = {
        "robot": robot,
        "push": {"force_N": [0.0, -force, 0.0], "duration_s": LATERAL_PUSH_LENGTH, "time_s": LATERAL_PUSH_TIME},
        "crossover_recovery_tolerance_m": LATERAL_TOLERANCE,
        **{
            name: {**summary, "fell_at_s": float(run["t"][-1]) if summary["fell"] else None}
            for name, (_, run, summary) in runs.items()
        },
    }
    (out / "lateral_push.json").write_text(json.dumps(result, indent=2) + "\n")
    print(
        json.dumps(
            {
                k: {"fell": v["fell"], "fell_at_s": v["fell_at_s"], "recovery_steps": v["recovery_steps"]}
                for k, v in result.items()
                if isinstance(v, dict) and "fell" in v
            },
            indent=2,
        )
    )
    if plots:
        plot_lateral_push(runs, out / "lateral_push.png", force)
        plot_lateral_push_in_time(runs, out / "lateral_push_time.png", force)
    return 0 if not result["with_crossover"]["fell"] else 1


def _legs(summary: dict) -> str:
    """How near the legs came on their own collision meshes (walkers that watch them), for a title."""
    d = summary.get("legs_min_distance_m")
    if d is None:
        return ""
    return (
        f"\nlegs' meshes at least {100 * d:.1f} cm apart"
        if d >= 0
        else f"\nlegs' meshes {-100 * d:.1f} cm into each other"
    )


def plot_lateral_push(runs: dict, path: Path, force: float) -> Path:
    """The two runs of :func:`lateral_push` from above: footprints, CoM and DCM paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Polygon

    fig, axes = plt.subplots(1, 2, figsize=(11, 5.2), sharex=True, sharey=True)
    colors = {"left": "tab:blue", "right": "tab:orange"}
    for ax, (name, (walker, run, summary)) in zip(axes, runs.items()):
        shape = walker.shape
        for fs in walker.feet0.values():
            ax.add_patch(Polygon(shape.corners(fs)[:, 0:2], closed=True, fill=False, ec="k", lw=1.2))
        for _, foot, landed, _, _ in run["touchdowns"]:
            fl = loco.Footstep(loco.Foot(foot), np.array([landed[0], landed[1], 0.0]), landed[2])
            ax.add_patch(Polygon(shape.corners(fl)[:, 0:2], closed=True, fc=colors[foot], alpha=0.35, ec=colors[foot]))
        ax.plot(run["com"][:, 0], run["com"][:, 1], color="k", lw=1.2, label="CoM")
        ax.plot(run["dcm"][:, 0], run["dcm"][:, 1], color="tab:red", lw=0.8, label="DCM")
        outcome = "fell" if summary["fell"] else "stood"
        steps = ", ".join(r["foot"] for r in summary["recovery_steps"]) or "none"
        ax.set_title(f"{name.replace('_', ' ')}: {outcome} (recovery steps: {steps}){_legs(summary)}", fontsize=10)
        ax.set_aspect("equal")
        ax.set_xlim(-0.4, 0.7)
        ax.set_ylim(-0.85, 0.35)
        ax.set_xlabel("x (m)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("y (m)")
    axes[0].legend(loc="upper right", fontsize=8)
    walker = next(iter(runs.values()))[0]
    fig.suptitle(
        f"{walker.spec.name} standing, pushed {force:.0f} N to its right for 0.1 s: without and with crossover steps"
    )
    return save_figure(fig, path)


def plot_lateral_push_in_time(runs: dict, path: Path, force: float) -> Path:
    """The two runs of :func:`lateral_push` against time: the lateral CoM and DCM, each sole's lateral
    position (thick while its contact is enforced) with its outer edges, the push and the fall."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stance = list(FootPhase).index(FootPhase.STANCE)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), sharex=True, sharey=True)
    colors = {loco.Foot.LEFT: "tab:blue", loco.Foot.RIGHT: "tab:orange"}
    for ax, (name, (walker, run, summary)) in zip(axes, runs.items()):
        t, half = run["t"], walker.shape.width / 2
        for k, foot in enumerate(loco.Foot):
            y = run["soles"][:, k, 1]
            down = run["phase"][:, k] == stance
            ax.plot(t, y, color=colors[foot], lw=0.8, alpha=0.6)
            ax.plot(
                t, np.where(down, y, np.nan), color=colors[foot], lw=2.5, label=f"{foot.value} sole (in contact: thick)"
            )
            ax.fill_between(t, y - half, y + half, where=down, color=colors[foot], alpha=0.15, lw=0)
        ax.plot(t, run["com"][:, 1], color="k", lw=1.2, label="CoM")
        ax.plot(t, run["dcm"][:, 1], color="tab:red", lw=1.0, label="DCM")
        ax.axvspan(LATERAL_PUSH_TIME, LATERAL_PUSH_TIME + LATERAL_PUSH_LENGTH, color="tab:purple", alpha=0.2, lw=0)
        if summary["fell"]:
            ax.axvline(t[-1], color="k", ls=":", lw=1)
            ax.annotate("fell", (t[-1], 0.25), ha="right", fontsize=9)
        steps = ", ".join(f"{r['foot']} at {r['t']:.2f} s" for r in summary["recovery_steps"]) or "none"
        outcome = f"fell at {t[-1]:.2f} s" if summary["fell"] else "stood"
        ax.set_title(f"{name.replace('_', ' ')}: {outcome}\nrecovery steps: {steps}{_legs(summary)}", fontsize=9)
        ax.set_xlabel("time (s)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("lateral position y (m)")
    axes[0].set_ylim(-0.85, 0.3)
    axes[0].legend(loc="lower left", fontsize=7)
    walker = next(iter(runs.values()))[0]
    fig.suptitle(
        f"{walker.spec.name} standing, pushed {force:.0f} N to its right for 0.1 s (shaded purple): "
        "without and with crossover steps"
    )
    return save_figure(fig, path)


# ================================================================================== command line
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--robot", default="talos", choices=sorted(GAITS))
    parser.add_argument(
        "--command", nargs=3, type=float, default=None, metavar=("VX", "VY", "WZ"), help="m/s, m/s, rad/s"
    )
    parser.add_argument("--preset", choices=sorted(PRESETS), default="forward", help="command and steps if not given")
    parser.add_argument("--steps", type=int, default=None, help="number of footsteps")
    parser.add_argument("--push", type=float, nargs=2, default=None, metavar=("FX", "FY"), help="N, over 0.1 s")
    parser.add_argument("--push-time", type=float, default=None, help="s (default: halfway through the walk)")
    parser.add_argument(
        "--adjust", action="store_true", help="online step adjustment from the measured DCM (default with --push)"
    )
    parser.add_argument("--k-dcm", type=float, default=None, help="DCM feedback gain, 1/s (default the gait's)")
    parser.add_argument(
        "--terrain", choices=[k.value for k in loco.TerrainKind], default=None, help="walk over a scene"
    )
    parser.add_argument("--distance", type=float, default=None, help="m over the terrain (default per robot)")
    parser.add_argument(
        "--lateral-push", type=float, default=None, metavar="FY", help="N: standing, without then with crossover steps"
    )
    parser.add_argument("--out", type=Path, default=None, help="output directory (default out/walk_<robot>)")
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--replay", action="store_true", help="write replay.html (needs wbc[viz])")
    args = parser.parse_args(argv)

    out = args.out or Path("out") / f"walk_{args.robot}"
    out.mkdir(parents=True, exist_ok=True)
    if args.lateral_push is not None:
        return lateral_push(args.robot, args.lateral_push, out, not args.no_plots)
    command, n_steps = PRESETS[args.preset][args.robot]
    command = tuple(args.command) if args.command is not None else command
    n_steps = args.steps if args.steps is not None else n_steps
    gait = FAST_GAITS[args.robot] if args.preset == "fast" else None
    walker = Walker(
        args.robot, k_dcm=args.k_dcm, adjust=args.adjust or args.push is not None, gait=gait, terrain=args.terrain
    )
    if args.terrain is not None:
        command = None
        timeline = walker.walk_terrain(args.distance)
    else:
        timeline = walker.walk(command, n_steps)
    duration = timeline.steps[-1].touchdown + walker.params.final_double_support + 1.0 if timeline.steps else 3.0
    pushes = []
    if args.push is not None:
        t_push = args.push_time if args.push_time is not None else 0.5 * duration
        pushes.append((t_push, np.array([args.push[0], args.push[1], 0.0]), 0.1))
    replay = None
    if args.replay:
        from wbc.viz import Replay

        replay = Replay(walker.model, walker.spec.urdf, title=f"wbc: {args.robot} walking")
    run = walker.run(duration, pushes, progress=not args.quiet, replay=replay)
    if replay is not None:
        replay.write(out / "replay.html")
    summary = summarize(walker, run, command)
    summary["terrain"] = args.terrain or "flat"
    summary["pushes"] = [{"time_s": tp, "force_N": np.asarray(f).tolist(), "duration_s": d} for tp, f, d in pushes]
    np.savez_compressed(out / "log.npz", **{k: v for k, v in run.items() if isinstance(v, np.ndarray)})
    if not args.no_plots and len(run["t"]):
        summary["plots"] = [p.name for p in plot(walker, run, out, pushes)]
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    if run["diverged"] is not None:
        print(f"fell: {run['diverged']}", file=sys.stderr)
    return 0 if not summary["fell"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
