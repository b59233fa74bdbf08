"""Whole-body control of the G1-like humanoid with rod-driven ankles and geared rotors: costs.

Two measurements, each side by side in one run (the machines are shared: ratios only):

1. **The contacts' motion rows** of :class:`wbc.control.cluster_step_context.ClusterStepContext`, two
   exact ways: from the clustered IIM's own forward pass (``ContactRows.IIM_FORWARD``: the contact
   bodies' accelerations per unit input, ``K_e 𝖺``) or with the Delassus block by C-EFPA and the
   torque block from ``B̂``'s contact columns (``ContactRows.C_EFPA``). Traced, compiled, timed:
   the function ``(y, v) -> (a₀, B̂, A, d)`` for both sole models (6D wrench, four corner points).
2. **One control step** (CoM, pelvis orientation, posture; two 6D sole contacts; motor torque
   limits) on the clustered model, on the same robot's independent tree with the rotors as
   armature, and on the plain tree (rotors and loops ignored), at the same standing state.

Prints JSON lines (``--json``) or a table.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

import wbc
from wbc import tasks
from wbc.algorithms.clusters import ApproximateModel
from wbc.algorithms.iim import InputMatrixMethod
from wbc.codegen import compile_function
from wbc.codegen.trace import trace
from wbc.control.cluster_step_context import ClusterStepContext, ContactRows
from wbc.robots import clustered

from .harness import calls_per_block, interleaved_blocks, median, relative_spread

SOLES = {"wrench": wbc.SurfaceContact, "corners": wbc.SurfaceCornersContact}


def contact_rows_function(cm, contacts, method: ContactRows):
    """``(y, v) -> (a0, Bhat, A, d)`` of the clustered context with ``method``."""

    def build(y, v):
        ctx = ClusterStepContext(cm, y, v, contacts, InputMatrixMethod.IIM, method)
        A, d = ctx._contact_rows
        return [ctx.a0, ctx.Bhat, A, d]

    name = f"contact_rows_{method.name.lower()}_{cm.name}_{len(contacts)}_{sum(c.dim for c in contacts)}"
    return trace(name, [("y", cm.tree.nq), ("v", cm.nv)], build, ["a0", "Bhat", "A", "d"])


def contact_rows(robot, rounds: int) -> list[dict]:
    cm = robot.model
    out = []
    rng = np.random.default_rng(0)
    v = rng.normal(scale=0.2, size=cm.nv)
    for sole, kind in SOLES.items():
        contacts = [kind(f, robot.sole.length, robot.sole.width) for f in robot.feet]
        kernels, results = {}, {}
        for method in ContactRows:
            f = contact_rows_function(cm, contacts, method)
            k = compile_function(f)
            kernels[method.value] = (k, f.n_instructions())
            results[method.value] = [np.array(x) for x in k(robot.q0, v)]
        agree = max(
            float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))
            for a, b in zip(results["iim-forward"], results["c-efpa"])
        )
        sides = {name: (lambda k=k: k.run()) for name, (k, _) in kernels.items()}
        for k, _ in kernels.values():
            np.copyto(k.inputs[0], robot.q0)
            np.copyto(k.inputs[1], v)
        calls = {n: calls_per_block(c, 20.0) for n, c in sides.items()}
        samples = interleaved_blocks(sides, rounds, calls, warmup=10)
        ratios = [a / b for a, b in zip(samples["iim-forward"], samples["c-efpa"])]
        out.append(
            {
                "what": "contact_rows",
                "robot": cm.name,
                "soles": sole,
                "rows": sum(c.equality_dim for c in contacts),
                "ops_iim_forward": kernels["iim-forward"][1],
                "ops_c_efpa": kernels["c-efpa"][1],
                "us_iim_forward": round(median(samples["iim-forward"]), 2),
                "us_c_efpa": round(median(samples["c-efpa"]), 2),
                "ratio_iim_forward_over_c_efpa": round(median(ratios), 3),
                "ratio_spread": round(relative_spread(ratios), 3),
                "max_relative_difference": agree,
            }
        )
    return out


def _controller(model, robot, tree_q):
    contacts = [wbc.SurfaceContact(f, robot.sole.length, robot.sole.width, mu=0.7) for f in robot.feet]
    tree = model.tree if isinstance(model, wbc.ClusterModel) else model
    com = tasks.CoMTask(weight=10.0, kp=100.0)
    ori = tasks.OrientationTask(tree.joints[1].link, weight=1.0, kp=100.0)
    posture = tasks.PostureTask(model, weight=1e-2, kp=30.0)
    ctl = wbc.WholeBodyController(model, [com, ori, posture], contacts)
    ctl.compile()
    com.set_target(wbc.center_of_mass(tree, tree_q) + np.array([0.0, 0.01, 0.0]))
    ori.set_target_from_configuration(tree, tree_q)
    posture.set_target(tree_q)
    return ctl


def control_step(robot, rounds: int) -> dict:
    cm = robot.model
    am = ApproximateModel.build(cm)
    y = robot.q0
    q = cm.independent_configuration(y)[am.q_order]
    rng = np.random.default_rng(1)
    v = rng.normal(scale=0.05, size=cm.nv)
    w = v[am.order]
    models = {
        "exact": (cm, y, v),
        "armature": (wbc.ClusterModel(am.model, armature=np.asarray(am.armature)), q, w),
        "tree": (am.model, q, w),
    }
    sides, kernel_sides = {}, {}
    for name, (model, state, vel) in models.items():
        ctl = _controller(model, robot, state)
        ctl.step(state, vel)
        sides[name] = lambda ctl=ctl, state=state, vel=vel: ctl.step(state, vel)
        kernel_sides[name] = ctl.kernel
    calls = {n: calls_per_block(c, 30.0) for n, c in sides.items()}
    samples = interleaved_blocks(sides, rounds, calls, warmup=20)
    ratio_tree = [a / b for a, b in zip(samples["exact"], samples["tree"])]
    ratio_arm = [a / b for a, b in zip(samples["exact"], samples["armature"])]
    return {
        "what": "control_step",
        "robot": cm.name,
        "nv": cm.nv,
        "spanning_nv": cm.tree.nv,
        "motors": cm.n_motors,
        "us": {n: round(median(s), 1) for n, s in samples.items()},
        "ratio_exact_over_tree": round(median(ratio_tree), 3),
        "ratio_exact_over_armature": round(median(ratio_arm), 3),
        "ratio_spread": round(relative_spread(ratio_tree), 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="JSON lines only")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)
    robot = clustered.g1_parallel_ankle(joint_rotors=True)
    records = contact_rows(robot, args.rounds) + [control_step(robot, args.rounds)]
    for r in records:
        print(json.dumps(r))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
