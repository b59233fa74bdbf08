"""Cold-compile and cache-hit times of the balance controller's kernel, with its size.

For each robot (the balance demo's controller: CoM, base orientation and posture tasks, two 6D sole
contacts, the default torque, joint position and velocity limits) and for random synthetic trees
of 20-200 bodies (CoM and posture tasks, two point contacts on the last two links, default limits),
in a fresh kernel cache: the time to trace the step function, to compile it cold (C generation,
compiler, load) and to build the same controller again from the warm cache (trace, hash, load), the
operation count, the generated C size and the library size. One JSON line per case, then a table::

    python -m benchmarks.compile                    # talos, g1, g1_with_hands, trees 20 50 100 200
    python -m benchmarks.compile --robots talos --trees 20,50

Compile times are wall times on a shared machine: compare cases from the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import casadi as ca
import numpy as np

import wbc
from wbc import robots, tasks
from wbc.robots import synthetic


def _robot_controller(name: str) -> wbc.WholeBodyController:
    spec = robots.load(name)
    model = spec.model
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=0.7) for f in spec.feet]
    base = model.joints[1].link
    task_list = [
        tasks.CoMTask(weight=10.0, kp=100.0),
        tasks.OrientationTask(base, weight=1.0, kp=100.0),
        tasks.PostureTask(model, weight=1e-2, kp=30.0),
    ]
    return wbc.WholeBodyController(model, task_list, contacts)


def _tree_controller(bodies: int) -> wbc.WholeBodyController:
    model = synthetic.random_tree(bodies, np.random.default_rng(bodies), floating_base=True)
    links = [j.link for j in model.joints[1:]]
    contacts = [wbc.PointContact(links[-1], mu=0.7), wbc.PointContact(links[-2], mu=0.7)]
    task_list = [tasks.CoMTask(weight=10.0, kp=100.0), tasks.PostureTask(model, weight=1e-2, kp=30.0)]
    return wbc.WholeBodyController(model, task_list, contacts)


def measure(label: str, make) -> dict:
    """Cold compile then cache hit of ``make()``'s controller in a fresh cache directory."""
    previous = os.environ.get("WBC_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="wbc-compile-bench-") as directory:
        os.environ["WBC_CACHE_DIR"] = directory
        try:
            ctrl = make()
            t0 = time.perf_counter()
            kernel = ctrl.compile()
            cold = time.perf_counter() - t0
            library = kernel.library
            again = make()
            t1 = time.perf_counter()
            again.compile()
            warm = time.perf_counter() - t1
        finally:
            if previous is None:
                os.environ.pop("WBC_CACHE_DIR", None)
            else:
                os.environ["WBC_CACHE_DIR"] = previous
        generator = ca.CodeGenerator("size.c", {"with_header": False})
        generator.add(kernel.function if kernel.backend == "sx-vm" else ctrl_function(ctrl))
        return {
            "case": label,
            "nv": ctrl.model.nv,
            "ops": kernel.n_instructions,
            "cold_compile_s": round(cold, 2),
            "compiler_s": round(kernel.compile_seconds, 2),
            "cache_hit_s": round(warm, 3),
            "c_source_kB": round(len(generator.dump()) / 1e3, 1),
            "library_kB": round(library.stat().st_size / 1e3, 1) if library is not None else None,
        }


def ctrl_function(ctrl: wbc.WholeBodyController) -> ca.Function:
    from wbc.control.builder import trace_step

    function, _ = trace_step(ctrl.model, ctrl.contributors, ctrl.contacts, ctrl.input_matrix, ctrl._tolerance)
    return function


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robots", default="talos,g1,g1_with_hands", help="catalog robots, comma-separated")
    parser.add_argument("--trees", default="20,50,100,200", help="synthetic tree sizes (bodies), comma-separated")
    parser.add_argument("--json", action="store_true", help="print JSON lines only")
    args = parser.parse_args(argv)
    records = []
    for name in filter(None, args.robots.split(",")):
        records.append(measure(name, lambda name=name: _robot_controller(name)))
        print(json.dumps(records[-1]), flush=True)
    for bodies in filter(None, args.trees.split(",")):
        n = int(bodies)
        records.append(measure(f"tree{n}", lambda n=n: _tree_controller(n)))
        print(json.dumps(records[-1]), flush=True)
    if not args.json:
        print(
            f"{'case':16s} {'nv':>4s} {'ops':>8s} {'cold s':>7s} {'cc s':>6s} {'hit s':>6s} {'C kB':>8s} {'.so kB':>8s}"
        )
        for r in records:
            print(
                f"{r['case']:16s} {r['nv']:4d} {r['ops']:8d} {r['cold_compile_s']:7.2f} {r['compiler_s']:6.2f} "
                f"{r['cache_hit_s']:6.3f} {r['c_source_kB']:8.1f} {r['library_kB']!s:>8s}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
