"""Cold-compile and cache-hit times of the balance controller's kernel, with its size.

For each robot (the balance demo's controller: CoM, base orientation and posture tasks, two 6D sole
contacts, the default torque, joint position and velocity limits) and for random synthetic trees
of 20-200 bodies (CoM and posture tasks, two point contacts on the last two links, default limits),
in a fresh kernel cache: the time to trace the step function, to compile it cold (trace, C
generation, compiler, load) and to build the same controller again from the warm cache
(fingerprint, index, load: no trace), the operation count, the generated C size (the split
writer's files), the number of C files and the library size. One JSON line per case, then a table::

    python -m benchmarks.compile                    # talos, g1, g1_with_hands, trees 20 50 100 200
    python -m benchmarks.compile --robots talos --trees 20,50

``cpu s`` is the processor time of the cold compile (this process and the compilers: what the
machine's load does not change); ``cc s`` the wall time of C writing, compiling and linking; ``hit s``
builds the same controller again in the same process (median of three), ``hit/p`` in a new process.

Compile times are wall times on a shared machine: compare cases from the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import casadi as ca
import numpy as np

import wbc
from wbc import robots, tasks
from wbc.codegen.emit import Unsupported, split_source
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
            c0, t0 = os.times(), time.perf_counter()
            kernel = ctrl.compile()
            cold = time.perf_counter() - t0
            c1 = os.times()
            cpu = sum(getattr(c1, f) - getattr(c0, f) for f in ("user", "system", "children_user", "children_system"))
            library = kernel.library
            hits = []
            for _ in range(3):  # the median of three: one sample is at the mercy of the machine's load
                again = make()
                t1 = time.perf_counter()
                again.compile()
                hits.append(time.perf_counter() - t1)
            warm = sorted(hits)[1]
            warm_process = _hit_in_new_process(label)
        finally:
            if previous is None:
                os.environ.pop("WBC_CACHE_DIR", None)
            else:
                os.environ["WBC_CACHE_DIR"] = previous
        t2 = time.perf_counter()
        function = ctrl_function(ctrl)
        trace_s = time.perf_counter() - t2
        try:
            split = split_source(function)
            source_kB, files = len(split.text()) / 1e3, len(split.files)
        except Unsupported:
            generator = ca.CodeGenerator("size.c", {"with_header": False})
            generator.add(function)
            source_kB, files = len(generator.dump()) / 1e3, 1
        return {
            "case": label,
            "nv": ctrl.model.nv,
            "ops": kernel.n_instructions,
            "trace_s": round(trace_s, 2),
            "cold_compile_s": round(cold, 2),
            "cold_cpu_s": round(cpu, 2),
            "compiler_s": round(kernel.compile_seconds, 2),
            "cache_hit_s": round(warm, 3),
            "cache_hit_new_process_s": round(warm_process, 3),
            "c_source_kB": round(source_kB, 1),
            "c_files": files,
            "library_kB": round(library.stat().st_size / 1e3, 1) if library is not None else None,
            "load": round(os.getloadavg()[0], 2),
        }


_CHILD = """
import sys, time
from benchmarks.compile import _make
ctrl = _make(sys.argv[1])
t0 = time.perf_counter()
ctrl.compile()
print(time.perf_counter() - t0)
"""


def _make(label: str) -> wbc.WholeBodyController:
    return _tree_controller(int(label[4:])) if label.startswith("tree") else _robot_controller(label)


def _hit_in_new_process(label: str) -> float:
    """The time ``compile()`` takes in a new Python process (the cache is warm)."""
    out = subprocess.run([sys.executable, "-c", _CHILD, label], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def ctrl_function(ctrl: wbc.WholeBodyController) -> ca.Function:
    from wbc.control.builder import trace_step

    function, _ = trace_step(
        ctrl.model, ctrl.contributors, ctrl.contacts, ctrl.input_matrix, ctrl.solver.unconstrained_tolerance
    )
    return function


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robots", default="talos,g1,g1_with_hands", help="catalog robots, comma-separated")
    parser.add_argument("--trees", default="20,50,100,200", help="synthetic tree sizes (bodies), comma-separated")
    parser.add_argument("--json", action="store_true", help="print JSON lines only")
    args = parser.parse_args(argv)
    records = []
    for name in filter(None, args.robots.split(",")):
        records.append(measure(name, lambda name=name: _make(name)))
        print(json.dumps(records[-1]), flush=True)
    for bodies in filter(None, args.trees.split(",")):
        n = int(bodies)
        records.append(measure(f"tree{n}", lambda n=n: _make(f"tree{n}")))
        print(json.dumps(records[-1]), flush=True)
    if not args.json:
        print(
            f"{'case':16s} {'nv':>4s} {'ops':>8s} {'trace s':>7s} {'cold s':>7s} {'cpu s':>6s} {'cc s':>6s} "
            f"{'hit s':>6s} {'hit/p':>6s} {'C kB':>8s} {'files':>5s} {'.so kB':>8s} {'load':>5s}"
        )
        for r in records:
            print(
                f"{r['case']:16s} {r['nv']:4d} {r['ops']:8d} {r['trace_s']:7.2f} {r['cold_compile_s']:7.2f} "
                f"{r['cold_cpu_s']:6.2f} {r['compiler_s']:6.2f} {r['cache_hit_s']:6.3f} "
                f"{r['cache_hit_new_process_s']:6.3f} {r['c_source_kB']:8.1f} {r['c_files']:5d} "
                f"{r['library_kB']!s:>8s} {r['load']:5.2f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
