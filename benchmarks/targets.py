"""Benchmark: ``set_target`` of every task type, against one control step of the same controller.

The tasks are Talos's (``CoMTask``, ``FrameTask`` and ``PositionTask`` on the left sole,
``OrientationTask`` on the base, ``PostureTask``, ``MomentumTask``), all in one controller standing on
both feet. Each ``set_target`` is called the way a control loop calls it, with numpy arrays of the
right shape (and velocity, acceleration where the task takes them); the anchor is the controller's
``step`` at the standing state, timed in the same interleaved rounds (:mod:`benchmarks.harness`).
``ratio`` is ``set_target`` over the step.

Usage::

    python -m benchmarks.targets [--json] [--rounds 15]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Sequence

import numpy as np

import wbc
from benchmarks.harness import Record, calls_per_block, interleaved_blocks
from wbc import robots, tasks


def setup() -> tuple[dict[str, Callable[[], object]], Callable[[], object]]:
    """``({task type: set_target call}, step call)`` on Talos standing."""
    spec = robots.load("talos")
    model, q = spec.model, np.array(spec.q0)
    v = np.zeros(model.nv)
    foot, base = spec.feet[0], spec.base
    com = tasks.CoMTask(weight=10.0, kp=100.0)
    frame = tasks.FrameTask(spec.feet[1], weight=1e-3, kp=10.0)
    position = tasks.PositionTask(foot, weight=1e-3, kp=10.0)
    orientation = tasks.OrientationTask(base, weight=1.0, kp=100.0)
    posture = tasks.PostureTask(model, weight=1e-2, kp=30.0)
    momentum = tasks.MomentumTask(weight=1e-3)
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=0.7) for f in spec.feet]
    all_tasks = [com, frame, position, orientation, posture, momentum]
    for t in all_tasks:
        t.set_target_from_configuration(model, q)
    controller = wbc.WholeBodyController(model, all_tasks, contacts)
    c = wbc.center_of_mass(model, q)
    T = wbc.frame_placement(model, q, spec.feet[1])
    p = wbc.frame_placement(model, q, foot)[0:3, 3].copy()
    R = wbc.frame_placement(model, q, base)[0:3, 0:3].copy()
    z3, z6 = np.zeros(3), np.zeros(6)
    calls = {
        "CoMTask": lambda: com.set_target(c, z3, z3),
        "FrameTask": lambda: frame.set_target(T, z6, z6),
        "PositionTask": lambda: position.set_target(p, z3, z3),
        "OrientationTask": lambda: orientation.set_target(R, z3, z3),
        "PostureTask": lambda: posture.set_target(q),
        "MomentumTask": lambda: momentum.set_target(z3, z3),
    }
    controller.step(q, v)
    return calls, lambda: controller.step(q, v)


def run(rounds: int, block_ms: float) -> list[Record]:
    calls, step = setup()
    records = []
    for name, call in calls.items():
        sides = {"set_target": call, "step": step}
        blocks = interleaved_blocks(sides, rounds, {k: calls_per_block(c, block_ms) for k, c in sides.items()})
        us = statistics.median(blocks["set_target"])
        records.append(
            {
                "task": name,
                "set_target_us": us,
                "step_us": statistics.median(blocks["step"]),
                "ratio": statistics.median(a / b for a, b in zip(blocks["set_target"], blocks["step"])),
            }
        )
    return records


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.targets", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--block-ms", type=float, default=20.0)
    args = parser.parse_args(argv)
    records = run(args.rounds, args.block_ms)
    for r in records:
        if args.json:
            print(json.dumps(r), flush=True)
        else:
            us, step = r["set_target_us"], r["step_us"]
            print(f"{r['task']:16s} set_target {us:6.2f} µs   step {step:6.1f} µs   ratio {r['ratio']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
