"""Task-space control of a torque-controlled Panda arm in MuJoCo: QP controller vs classical OSC.

The end effector (``panda_hand_tcp``) tracks a vertical circle (radius 10 cm, 0.5 Hz) while
holding its initial orientation, with the same gains for two controllers on the same trajectory:

* **QP**: :class:`wbc.WholeBodyController` with a 6D :class:`tasks.FrameTask` and a low-weight
  :class:`tasks.PostureTask` (the redundancy), torque limits from the URDF;
* **OSC**: the classical operational-space law ``τ = Jᵀ Λ (ẍ* − J̇v) + h + (I − Jᵀ Λ J M⁻¹) τ₀`` with
  ``Λ⁻¹ = J M⁻¹ Jᵀ`` from PV-OSIMr, ``M⁻¹Jᵀ`` from the IIM, ``h`` from the RNEA and a joint-space
  PD ``τ₀`` in the dynamically consistent null space, all evaluated by one compiled kernel
  traced from wbc's algorithms (no Pinocchio at run time).

The controllers and the loop are library code (:mod:`wbc.sim.arm`); this script is their command
line. Writes ``tracking.png`` (position and orientation errors of both), ``torques.png`` (joint torques
of both against their limits) and ``summary.json`` to ``--out``, and prints the RMS errors.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import wbc
from wbc import robots
from wbc.command_line import docstring_parser, needs_sim, positive

with needs_sim("the arm demo"):
    from wbc.sim.arm import EE, OSC, QP, Circle, rms, simulate


def plot(runs: dict, model: wbc.Model, out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for name, run in runs.items():
        axes[0].plot(run["t"], run["err_p"] * 1e3, lw=1.2, label=f"{name} (RMS {rms(run['err_p']) * 1e3:.2f} mm)")
        axes[1].plot(
            run["t"], np.degrees(run["err_r"]), lw=1.2, label=f"{name} (RMS {np.degrees(rms(run['err_r'])):.3f}°)"
        )
    axes[0].set_ylabel("position error (mm)")
    axes[1].set_ylabel("orientation error (deg)")
    axes[1].set_xlabel("time (s)")
    for ax in axes:
        ax.legend()
    fig.suptitle("Panda end-effector circle, same gains: QP controller vs classical OSC")
    fig.tight_layout()
    fig.savefig(out / "tracking.png", dpi=110)
    plt.close(fig)

    limit = model.effort_limit
    fig, axes = plt.subplots(len(runs), 1, figsize=(9, 6), sharex=True, sharey=True)
    for ax, (name, run) in zip(np.atleast_1d(axes), runs.items()):
        for k, joint in enumerate(model.actuated_joint_names):
            ax.plot(run["t"], run["tau"][:, k] / limit[k], lw=1.0, label=joint.replace("panda_", ""))
        ax.axhline(1.0, color="tab:red", lw=1)
        ax.axhline(-1.0, color="tab:red", lw=1)
        ax.set_ylabel(f"{name}: τ / τ_max")
    np.atleast_1d(axes)[0].legend(ncol=5, fontsize=7, loc="upper right")
    np.atleast_1d(axes)[-1].set_xlabel("time (s)")
    fig.suptitle("Joint torques against their limits")
    fig.tight_layout()
    fig.savefig(out / "torques.png", dpi=110)
    plt.close(fig)
    return ["tracking.png", "torques.png"]


def main(argv: list[str] | None = None) -> int:
    parser = docstring_parser(__doc__)
    parser.add_argument("--out", type=Path, default=Path("out") / "arm_task_space")
    parser.add_argument("--duration", type=positive, default=4.0, help="simulated time, s")
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--replay", action="store_true", help="write replay.html of the QP run (needs wbc[viz])")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    spec = robots.load("panda")
    model, q0 = spec.model, spec.q0
    T0 = wbc.frame_placement(model, q0, EE)
    circle = Circle(T0[0:3, 3], T0[0:3, 0:3])
    replay = None
    if args.replay:
        from wbc.viz import Replay

        replay = Replay(model, spec.urdf, title="wbc: Panda end-effector circle (QP controller)")
    runs = {
        "QP": simulate(QP(model, q0), model, q0, circle, args.duration, replay),
        "OSC": simulate(OSC(model, q0), model, q0, circle, args.duration),
    }
    summary = {
        name: {
            "rms_position_error_m": round(rms(r["err_p"]), 7),
            "rms_orientation_error_rad": round(rms(r["err_r"]), 7),
            "max_position_error_m": round(float(r["err_p"].max()), 7),
            "step_us_median": round(float(np.median(r["us"])), 1),
        }
        for name, r in runs.items()
    }
    if not args.no_plots:
        summary["plots"] = plot(runs, model, args.out)
    if replay is not None:
        summary["replay"] = replay.write(args.out / "replay.html").name
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    for name in runs:
        s = summary[name]
        print(
            f"{name:4s} RMS position error {s['rms_position_error_m'] * 1e3:7.3f} mm, "
            f"RMS orientation error {np.degrees(s['rms_orientation_error_rad']):7.4f} deg, "
            f"step median {s['step_us_median']:.0f} µs"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
