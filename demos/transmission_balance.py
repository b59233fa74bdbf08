"""Exact whole-body control of a humanoid with geared rotors and rod-driven ankles, against the
approximations today's controllers make.

The robot is the G1-like humanoid of :func:`wbc.robots.clustered.g1_parallel_ankle` with
``joint_rotors=True``: every ankle's pitch and roll are driven by two geared cranks on the knee
through two rods (a kinematic loop each), and the hips, knees and waist yaw by geared rotors.
MuJoCo simulates it exactly as built (rotors and rods are bodies, gears and rod ends are equality
constraints, the motors drive the cranks and joints: :mod:`wbc.sim.mujoco`). It balances through
the scenario of ``humanoid_balance.py`` (settle, CoM sway, lateral and forward pushes, standing)
three times, controlled by the same tasks with three models of itself:

* ``exact``: the clustered model (:class:`wbc.ClusterModel`); the QP's inputs are the motor
  efforts, ``q̈ = a₀ + B̂u`` exact (C-ABA, clustered IIM);
* ``armature``: the independent tree (rods and rotors removed) with each rotor's reflected inertia
  as a diagonal armature (MuJoCo's and most controllers' rotor model), the ankle as two serial joints;
* ``ignored``: the independent tree, rotors and loops ignored (a URDF-only controller).

The two approximations command joint torques; like a real robot's driver they are turned into
motor efforts through the exact linkage at the measured state (``τ = Gᵀ E τ_m`` solved for
``τ_m``). Besides each closed-loop run, the two approximations are evaluated on the exact run's
states at every step (same state, same references), which isolates their torque error.

Writes to ``--out``: ``com_error.png``, ``feet.png``, ``motor_torques.png``, ``torque_error.png``,
``fig14.png`` (the cluster paper's Fig. 14 analogue, see :func:`fig14`), ``summary.json``; prints
the summary. ``--push-sweep`` adds the largest lateral push (N over 0.1 s) each survives. The plant,
the controllers and the runs are library code (:mod:`wbc.sim.transmission_balance`); this script is
their command line and the Fig. 14 analogue.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from wbc.algorithms.clusters.torque_accuracy import PAPER_FIG14, sinusoid_torques
from wbc.command_line import docstring_parser, needs_sim, positive
from wbc.figures import save_figure
from wbc.robots import clustered

with needs_sim("the transmission demo"):
    from wbc.sim.balance import Scenario
    from wbc.sim.transmission_balance import MODELS, Plant, push_sweep, run, scenario, summarize


# ----------------------------------------------------------------------------------------- Fig. 14
def fig14(dts=(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1), scales=(0.5, 1.0, 1.5, 2.0, 3.0), duration=2.0) -> dict:
    """The cluster paper's Fig. 14 on the MIT-Humanoid-like robot
    (:func:`wbc.algorithms.clusters.torque_accuracy.sinusoid_torques`): every joint of the left leg
    follows ``q(t) = A sin(2π ω t)`` (A = 0.5 rad, ω = 1.5, the paper's formula), the base fixed in
    place; every ``Δt`` the exact (C-RNEA), approximate (armature) and unconstrained (rotors and
    loops ignored) torques are compared: RMS error per leg joint against ``Δt`` (nominal gear ratios)
    and against a scale of every gear ratio (``Δt`` = 1 ms). The paper's figures are the knee's,
    though its text says ankle (:data:`~wbc.algorithms.clusters.torque_accuracy.PAPER_FIG14`)."""
    out: dict = {"by_dt": {}, "by_gear_scale": {}}
    for scale in sorted(set(scales) | {1.0}):
        robot = clustered.mit_humanoid(gear_scale=scale)
        cm = robot.model
        names = [n for n in cm.joint_names if n.startswith("left_") and "shoulder" not in n and "elbow" not in n]
        for dt in dts if scale == 1.0 else (0.001,):
            result = sinusoid_torques(cm, robot.q0, names, dt=dt, duration=duration)
            entry = {
                kind: {
                    n: {"rms_Nm": round(r, 4), "share_of_peak": round(result.share_of_peak(kind)[n], 4)}
                    for n, r in result.rms_error(kind).items()
                }
                for kind in ("approximate", "unconstrained")
            }
            if scale == 1.0:
                out["by_dt"][f"{dt:g}"] = entry
                if dt == dts[0]:
                    out["profiles"] = {"t": result.t.tolist(), "joints": names}
                    out["profiles"] |= {k: x.tolist() for k, x in result.torques.items()}
            if dt == 0.001:
                out["by_gear_scale"][f"{scale:g}"] = entry
    paper = PAPER_FIG14
    out["paper"] = {
        "joint": f"left_{paper.joint}",
        "approximate": {"rms_Nm": paper.approximate[0], "share_of_peak": paper.approximate[1]},
        "unconstrained": {"rms_Nm": paper.unconstrained[0], "share_of_peak": paper.unconstrained[1]},
    }
    out["nominal_gear_ratio"] = 6.0
    return out


# ----------------------------------------------------------------------------------------- plots
COLORS = {"exact": "tab:blue", "armature": "tab:orange", "ignored": "tab:red"}


def plot(runs: dict, scenario: Scenario, plant: Plant, out: Path, f14: dict | None) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []

    def mark(ax):
        for p in scenario.pushes:
            ax.axvspan(p.time_s, p.time_s + p.duration_s, color="0.5", alpha=0.3, lw=0)

    def finish(fig, axes, ylabels: tuple[str, ...], title: str, name: str) -> None:
        """Label the axes (time below), mark the pushes, add the legends and the title; save as ``name``."""
        for ax, ylabel in zip(axes, ylabels):
            ax.set_ylabel(ylabel)
            mark(ax)
            ax.legend(loc="upper left", fontsize=8)
        axes[-1].set_xlabel("time (s)")
        fig.suptitle(title)
        paths.append(save_figure(fig, out / name))

    fig, axes = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
    for kind, r in runs.items():
        if not len(r["t"]):
            continue
        err = np.linalg.norm(r["com"] - r["com_ref"], axis=1)
        axes[0].plot(r["t"], 1e3 * err, color=COLORS[kind], lw=1.1, label=kind + (" (fell)" if r["fell"] else ""))
        axes[1].plot(r["t"], r["com"][:, 1], color=COLORS[kind], lw=1.1, label=kind)
    first = next(iter(runs.values()))
    axes[1].plot(first["t"], first["com_ref"][:, 1], "k--", lw=0.8, label="reference")
    title = "CoM tracking with the exact cluster model and two approximations (grey: pushes)"
    finish(fig, axes, ("CoM error (mm)", "CoM y (m)"), title, "com_error.png")

    fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for kind, r in runs.items():
        if not len(r["t"]):
            continue
        axes[0].plot(r["t"], 1e3 * r["slip"].max(axis=1), color=COLORS[kind], lw=1.1, label=kind)
        axes[1].plot(r["t"], np.degrees(r["foot_rotation"].max(axis=1)), color=COLORS[kind], lw=1.1, label=kind)
    ylabels = ("foot slip, worse foot (mm)", "foot rotation, worse foot (deg)")
    finish(fig, axes, ylabels, "Foot tracking: sole displacement and rotation from the start", "feet.png")

    names = plant.cm.motor_names
    shown = [n for n in names if n.startswith("left_") and ("ankle" in n or "knee" in n or "hip_roll" in n)]
    fig, axes = plt.subplots(len(shown), 1, figsize=(9, 2.0 * len(shown)), sharex=True)
    for ax, n in zip(np.atleast_1d(axes), shown):
        k = names.index(n)
        for kind, r in runs.items():
            if len(r["t"]):
                ax.plot(r["t"], r["tau"][:, k], color=COLORS[kind], lw=1.0, label=kind)
        ax.set_ylabel(n.replace("_joint", "").replace("left_", "L "), fontsize=8)
        mark(ax)
    np.atleast_1d(axes)[0].legend(loc="upper left", fontsize=8, ncol=3)
    np.atleast_1d(axes)[-1].set_xlabel("time (s)")
    fig.suptitle("Motor efforts (N m at the crank / joint), closed loop")
    paths.append(save_figure(fig, out / "motor_torques.png"))

    exact = runs["exact"]
    fig, axes = plt.subplots(2, 1, figsize=(9, 7))
    for kind in ("armature", "ignored"):
        key = f"tau_{kind}"
        if key not in exact or not len(exact[key]):
            continue
        d = exact[key] - exact["tau"]
        axes[0].semilogy(exact["t"], np.sqrt(np.mean(d**2, axis=1)) + 1e-12, color=COLORS[kind], lw=1.0, label=kind)
        rms = np.sqrt(np.mean(d**2, axis=0))
        x = np.arange(len(names)) + (-0.2 if kind == "armature" else 0.2)
        axes[1].bar(x, rms, width=0.4, color=COLORS[kind], label=kind)
    mark(axes[0])
    axes[0].set_xlabel("time (s)")
    axes[0].set_ylabel("RMS over motors (N m)")
    axes[0].legend(fontsize=8)
    axes[1].set_xticks(np.arange(len(names)))
    axes[1].set_xticklabels([n.replace("_joint", "") for n in names], rotation=90, fontsize=6)
    axes[1].set_ylabel("RMS over time (N m)")
    axes[1].legend(fontsize=8)
    fig.suptitle("Motor-effort error of the approximations against the exact controller (same states)")
    paths.append(save_figure(fig, out / "torque_error.png"))

    if f14 is not None:
        paths.append(plot_fig14(f14, out / "fig14.png"))
    return paths


def plot_fig14(f14: dict, path: Path) -> Path:
    """Torque profiles of the knee and the ankle, RMS error against Δt and against the gear ratio,
    the paper's figures beside them (dotted lines, stars)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(13, 8.5))
    prof = f14["profiles"]
    t = np.asarray(prof["t"])
    joints = [n for n in prof["joints"] if "knee" in n or "ankle" in n]
    for ax, joint in zip(axes[0], joints):
        j = prof["joints"].index(joint)
        for key, style in (("exact", "k-"), ("approximate", "C1--"), ("unconstrained", "C3:")):
            ax.plot(t, np.asarray(prof[key])[:, j], style, lw=1.4, label=key)
        ax.set_xlabel("time (s)")
        ax.set_ylabel(f"{joint} torque (N m)")
        ax.set_title(f"{joint}: q = A sin(2πωt), A = 0.5 rad, ω = 1.5 (the paper's Fig. 14)")
        ax.legend(fontsize=8)
    dts = sorted(f14["by_dt"], key=float)
    scales = sorted(f14["by_gear_scale"], key=float)
    for joint, marker in zip(joints, ("o", "s")):
        for key, color in (("approximate", "C1"), ("unconstrained", "C3")):
            label = f"{joint}, {key}"
            axes[1, 0].semilogx(
                [float(d) for d in dts],
                [f14["by_dt"][d][key][joint]["rms_Nm"] for d in dts],
                marker + "-",
                color=color,
                label=label,
                mfc="none" if "knee" in joint else color,
            )
            axes[1, 1].plot(
                [f14["nominal_gear_ratio"] * float(s) for s in scales],
                [f14["by_gear_scale"][s][key][joint]["rms_Nm"] for s in scales],
                marker + "-",
                color=color,
                label=label,
                mfc="none" if "knee" in joint else color,
            )
    for key, color in (("approximate", "C1"), ("unconstrained", "C3")):
        label = f"paper ({f14['paper']['joint']}; its text says ankle), {key}"
        axes[1, 0].axhline(f14["paper"][key]["rms_Nm"], color=color, ls=":", lw=1.2, label=label)
        axes[1, 1].plot(
            [f14["nominal_gear_ratio"]],
            [f14["paper"][key]["rms_Nm"]],
            "*",
            color=color,
            ms=13,
            label=label,
        )
    axes[1, 0].set_xlabel("Δt (s)")
    axes[1, 0].set_ylabel("RMS torque error vs exact (N m)")
    axes[1, 0].set_title("RMS error vs sampling period Δt (dotted: the paper's)")
    axes[1, 0].legend(fontsize=7, ncol=2)
    axes[1, 1].set_xlabel("gear ratio of every rotor (nominal 6)")
    axes[1, 1].set_ylabel("RMS torque error vs exact (N m), Δt = 1 ms")
    axes[1, 1].set_yscale("log")
    axes[1, 1].set_title("RMS error vs gear ratio (stars: the paper's, nominal ratio)")
    axes[1, 1].legend(fontsize=7, ncol=2)
    return save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    parser = docstring_parser(__doc__)
    parser.add_argument("--out", type=Path, default=Path("out") / "transmissions", help="output directory")
    parser.add_argument("--duration", type=positive, default=9.0, help="simulated time, s")
    parser.add_argument("--push-sweep", action="store_true", help="also find the largest lateral push each survives")
    parser.add_argument("--no-fig14", action="store_true", help="skip the Fig. 14 analogue")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    plant = Plant()
    sc = scenario(args.duration)
    runs = {"exact": run("exact", plant, sc, shadows=True, progress=True)}
    for kind in MODELS[1:]:
        runs[kind] = run(kind, plant, sc, progress=True)
    summary: dict = {"robot": "g1_parallel_ankle(joint_rotors=True)", "motors": list(plant.cm.motor_names)}
    legs = np.array([k for k, n in enumerate(plant.cm.motor_names) if "hip" in n or "knee" in n or "ankle" in n])
    summary["runs"] = {k: summarize(k, r, runs["exact"], legs) for k, r in runs.items()}
    np.savez_compressed(
        args.out / "log.npz",
        **{f"{k}_{name}": v for k, r in runs.items() for name, v in r.items() if isinstance(v, np.ndarray)},
    )
    ex = runs["exact"]
    med = {k: float(np.median(ex["step_us" if k == "exact" else f"step_us_{k}"])) for k in MODELS}
    summary["step_time_same_run_us"] = {k: round(v, 1) for k, v in med.items()}
    summary["step_time_ratio_exact_over_tree"] = round(med["exact"] / med["ignored"], 3)
    summary["step_time_ratio_exact_over_armature"] = round(med["exact"] / med["armature"], 3)
    if args.push_sweep:

        def log(kind: str):
            return lambda lo, hi: print(f"  push sweep {kind}: survives {lo:.0f} N, fails {hi:.0f} N", file=sys.stderr)

        summary["largest_lateral_push_N"] = {k: round(push_sweep(k, plant, log=log(k)), 1) for k in MODELS}
    f14 = None
    if not args.no_fig14:
        f14 = fig14()
        summary["fig14"] = {k: v for k, v in f14.items() if k != "profiles"}
    if not args.no_plots:
        summary["plots"] = [p.name for p in plot(runs, sc, plant, args.out, f14)]
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k not in ("fig14", "motors")}, indent=2))
    return 0 if not summary["runs"]["exact"]["fell"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
