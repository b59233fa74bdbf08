"""Joint limits, a strict task hierarchy and self-collision avoidance: Talos in MuJoCo.

Talos stands on both feet in a 1 kHz MuJoCo simulation (MuJoCo's joint ranges disabled: only the
controller keeps the joints inside their limits) while its posture task is asked, over a smooth
1.5 s ramp, for the impossible: the left knee straighter than straight, the left elbow bent
backwards (both beyond their URDF limits), and the right arm folded so that the right hand passes
through the torso. Two runs:

* **with** the new pieces: joint position and velocity limits (on by default), self-collision
  avoidance between the right forearm / hand and the torso / pelvis (capsules bounding their
  collision meshes), and a strict hierarchy: the CoM (balance) at level 0, the posture at level 1;
* **without** them: torque limits only, CoM and posture weighted in one level.

The scenario is library code (:mod:`wbc.sim.limit_scenario`); this script is its command line.
Writes to ``--out`` the plots ``joints.png`` (the two joints against their limits), ``distance.png``
(minimum distance between the watched primitives, measured by MuJoCo's ``mj_geomDistance`` on the
same capsules), ``task_errors.png`` (task errors by priority level), plus ``summary.json``, and
prints the summary (worst limit violation, minimum distance, non-optimal steps).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

import wbc
from wbc import robots
from wbc.command_line import docstring_parser, needs_sim, positive
from wbc.figures import save_figure

with needs_sim("this demo"):
    from wbc.sim.limit_scenario import ELBOW, KNEE, TARGETS, run, summarize


def plot(runs: dict[str, dict], model: wbc.Model, out: Path) -> list[Path]:
    """Write the three PNG plots; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {"with": dict(color="tab:blue"), "without": dict(color="tab:red", linestyle="--")}
    paths = []
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, name, key in ((axes[0], KNEE, "knee"), (axes[1], ELBOW, "elbow")):
        j = model.joints[model.joint_id(name)]
        for label, r in runs.items():
            ax.plot(r["t"], r[key], label=f"{label} new pieces", **styles[label])
        target = TARGETS[name]
        ax.axhline(target, color="gray", linestyle=":", label="posture target")
        for bound in (j.lower[0], j.upper[0]):
            ax.axhline(bound, color="black", linewidth=1.0)
        ax.axhspan(j.upper[0], max(j.upper[0], target) + 0.2, color="black", alpha=0.08)
        ax.axhspan(min(j.lower[0], target) - 0.2, j.lower[0], color="black", alpha=0.08)
        ax.set_ylim(min(j.lower[0], target) - 0.1, max(j.upper[0], target) + 0.1)
        ax.set_title(f"{name} (URDF limits black, outside shaded)")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("position (rad)")
        ax.legend(fontsize=8)
    paths.append(save_figure(fig, out / "joints.png"))
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, r in runs.items():
        ax.plot(r["t"], r["distance"], label=f"{label} new pieces", **styles[label])
    ax.axhline(0.02, color="gray", linestyle=":", label="margin (2 cm)")
    ax.axhline(0.0, color="black", linewidth=1.0)
    ax.set_title(
        "right forearm and hand to torso and pelvis: minimum distance\n(MuJoCo mj_geomDistance on the same capsules)"
    )
    ax.set_xlabel("time (s)")
    ax.set_ylabel("distance (m)")
    ax.legend(fontsize=8)
    paths.append(save_figure(fig, out / "distance.png"))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for label, r in runs.items():
        axes[0].semilogy(r["t"], np.maximum(r["com_error"], 1e-9), label=f"{label} new pieces", **styles[label])
        axes[1].plot(r["t"], r["posture_error"], label=f"{label} new pieces", **styles[label])
    axes[0].set_title("level 0: CoM error ‖e‖ (m)")
    axes[1].set_title("level 1: posture error ‖e‖ (rad) (one weighted level without)")
    for ax in axes:
        ax.set_xlabel("time (s)")
        ax.legend(fontsize=8)
    paths.append(save_figure(fig, out / "task_errors.png"))
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = docstring_parser(__doc__)
    parser.add_argument("--out", default="out/limits", help="output directory")
    parser.add_argument("--duration", type=positive, default=4.0, help="simulated seconds per run")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model = robots.load("talos").model
    runs = {}
    for label in ("with", "without"):
        print(f"run {label} the new pieces ...", file=sys.stderr)
        runs[label] = run(label == "with", args.duration)
    summary = summarize(runs, model)
    summary["plots"] = [str(p) for p in plot(runs, model, out)]
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
