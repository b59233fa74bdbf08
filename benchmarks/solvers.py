"""Worst-case step time of each QP backend while Talos collapses (the fallback chain's bound).

Scenario (issue 17, item 6): Talos standing on both soles in MuJoCo at 1 kHz with torque limits of
1 N m on every joint: the QP is infeasible from the first step (the robot cannot hold its weight),
every step goes through the diagnosis and the soft-contact fallback, and the robot collapses. For
each backend the script reports the median and the worst step time, the count of each status and
whether any command was non-finite. Times are wall-clock on this machine: compare backends within
one run.

Usage::

    python -m benchmarks.solvers [--steps 1500] [--solvers daqp,proxqp,quadprog,osqp] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter

import numpy as np

import wbc
from wbc import robots, tasks
from wbc.sim.mujoco import MujocoSim


def collapse(solver: str, steps: int, limit: float = 1.0) -> dict:
    """Run the collapse scenario with ``solver``; returns the JSON record."""
    spec = robots.load("talos")
    model = spec.model
    sim = MujocoSim(model, [(f, spec.sole.length, spec.sole.width) for f in spec.feet])
    sim.reset(spec.q0)
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=0.7) for f in spec.feet]
    com, posture = tasks.CoMTask(weight=10.0, kp=100.0), tasks.PostureTask(model, weight=1e-2, kp=30.0)
    com.set_target_from_configuration(model, spec.q0)
    posture.set_target(spec.q0)
    ctrl = wbc.WholeBodyController(
        model, [com, posture], contacts, solver=solver, torque_limit=np.full(model.n_actuated, limit)
    )
    ctrl.compile()
    times, statuses, non_finite = [], Counter(), 0
    for _ in range(steps):
        q, v = sim.get_state()
        t0 = time.perf_counter()
        cmd = ctrl.step(q, v)
        times.append(time.perf_counter() - t0)
        statuses[cmd.status.value] += 1
        non_finite += not np.all(np.isfinite(cmd.tau))
        sim.set_torques(cmd.tau)
        try:
            sim.step()
        except wbc.SimulationDiverged:
            break
    t = np.array(times) * 1e3
    return {
        "solver": solver,
        "steps": len(times),
        "step_ms_median": round(float(np.median(t)), 3),
        "step_ms_p99": round(float(np.percentile(t, 99)), 3),
        "step_ms_worst": round(float(t.max()), 3),
        "statuses": dict(statuses),
        "non_finite_commands": int(non_finite),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--solvers", default=",".join(s.value for s in wbc.Solver if s is not wbc.Solver.QPSOLVERS))
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    args = parser.parse_args(argv)
    for name in [s for s in args.solvers.split(",") if s]:
        record = collapse(name, args.steps)
        if args.json:
            print(json.dumps(record), flush=True)
        else:
            print(
                f"{name:10s} median {record['step_ms_median']:8.3f} ms  p99 {record['step_ms_p99']:8.3f} ms  "
                f"worst {record['step_ms_worst']:9.3f} ms  {record['statuses']}  "
                f"non-finite {record['non_finite_commands']}",
                file=sys.stdout,
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
