"""The balance scenario's torques with IIM vs dense B̂ and with every QP solver, side by side.

A reference run (IIM, default solver) of the humanoid balance scenario records the simulated
states; every variant then replays exactly those states (same references at the same times), so
the torque differences it shows are the numerical differences between the methods, not diverging
trajectories. Variants: the dense ``B̂`` baseline (CRBA + LDLᵀ) with the default solver, and the IIM
with each available QP solver. Writes ``torque_differences.png`` (max |Δτ| per step, log scale),
``step_times.png`` and ``summary.json`` to ``--out``, and prints a table.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

import wbc
from wbc.command_line import docstring_parser, positive
from wbc.sim.balance import SCENARIO_DEFAULTS, Balance, Push, Scenario

REFERENCE = ("iim", wbc.Solver.DAQP.value)


def scenario(robot: str, duration: float) -> Scenario:
    d = SCENARIO_DEFAULTS[robot]
    return Scenario(
        duration=duration,
        sway_start=0.5,
        sway_end=duration - 1.5,
        sway_amplitude=d["sway"],
        pushes=(Push("lateral", (0.0, 1.0, 0.0), d["push"], 0.1, duration - 1.2),),
    )


def record(robot: str, sc: Scenario) -> tuple[list, list]:
    """Closed-loop reference run: the states fed to the controller and its torques."""
    balance = Balance(robot, sc, solver=REFERENCE[1], input_matrix=REFERENCE[0])
    states, taus = [], []

    def keep(i, t, q, v, cmd) -> None:
        states.append((t, q.copy(), v.copy()))
        taus.append(cmd.tau.copy())

    balance.run(progress=False, on_step=keep)
    return states, taus


def replay(robot: str, sc: Scenario, states: list, method: str, solver: str) -> tuple[np.ndarray, np.ndarray]:
    """The torques and step times of one variant on the recorded states."""
    balance = Balance(robot, sc, solver=solver, input_matrix=method)
    taus, us = [], []
    for t, q, v in states:
        offset, vel, acc = sc.com_offset(t)
        balance.com.set_target(balance.com0 + offset, vel, acc)
        clock = time.perf_counter()
        cmd = balance.controller.step(q, v)
        us.append((time.perf_counter() - clock) * 1e6)
        taus.append(cmd.tau.copy())
    return np.asarray(taus), np.asarray(us)


def main(argv: list[str] | None = None) -> int:
    parser = docstring_parser(__doc__)
    parser.add_argument("--robot", default="talos", choices=("g1", "talos"))
    parser.add_argument("--duration", type=positive, default=3.0, help="simulated time, s")
    parser.add_argument(
        "--solvers", default=",".join(s.value for s in wbc.Solver), help="comma-separated QP solvers to compare"
    )
    parser.add_argument("--out", type=Path, default=Path("out") / "compare_torques")
    parser.add_argument("--no-plots", action="store_true")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    sc = scenario(args.robot, args.duration)
    states, ref = record(args.robot, sc)
    ref = np.asarray(ref)
    variants = [("dense", REFERENCE[1])] + [("iim", s) for s in args.solvers.split(",") if s]
    results = {}
    _, ref_us = replay(args.robot, sc, states, *REFERENCE)
    results[f"{REFERENCE[0]} + {REFERENCE[1]}"] = {"diff": np.zeros(len(ref)), "us": ref_us}
    for method, solver in variants:
        if (method, solver) == REFERENCE:
            continue
        taus, us = replay(args.robot, sc, states, method, solver)
        results[f"{method} + {solver}"] = {"diff": np.abs(taus - ref).max(axis=1), "us": us}
    scale = float(np.abs(ref).max())
    summary = {
        name: {
            "max_abs_torque_difference_Nm": float(r["diff"].max()),
            "max_relative_difference": float(r["diff"].max() / scale),
            "step_us_median": round(float(np.median(r["us"])), 1),
        }
        for name, r in results.items()
    }
    if not args.no_plots:
        _plot(results, states, args.out)
        summary["plots"] = ["torque_differences.png", "step_times.png"]
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"reference: {REFERENCE[0]} + {REFERENCE[1]}; torques up to {scale:.1f} N m; {len(states)} steps")
    for name, s in summary.items():
        if isinstance(s, dict):
            print(
                f"  {name:18s} max |Δτ| {s['max_abs_torque_difference_Nm']:.2e} N m "
                f"({s['max_relative_difference']:.1e} relative)   step median {s['step_us_median']:7.1f} µs"
            )
    return 0


def _plot(results: dict, states: list, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = np.array([s[0] for s in states])
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for name, r in results.items():
        if r["diff"].max() > 0:
            ax.semilogy(t, np.maximum(r["diff"], 1e-16), lw=1.0, label=name)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("max |τ − τ_ref| over joints (N m)")
    ax.set_title(f"Torque differences to {REFERENCE[0]} + {REFERENCE[1]} on the same states")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "torque_differences.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 4))
    names = list(results)
    med = [np.median(results[n]["us"]) for n in names]
    q90 = [np.percentile(results[n]["us"], 90) for n in names]
    ax.bar(names, med, color="tab:blue", label="median")
    ax.scatter(names, q90, color="k", marker="_", s=400, label="90th percentile")
    ax.set_ylabel("controller step (µs)")
    ax.set_title("Step time per variant (same machine, same run)")
    ax.legend()
    plt.setp(ax.get_xticklabels(), rotation=20, ha="right")
    fig.tight_layout()
    fig.savefig(out / "step_times.png", dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
