"""Benchmark: the public numeric API (``wbc.aba``, ``wbc.crba``, ...) against its eager path and
Pinocchio's Python calls, side by side in one process.

Per robot (``talos``, ``panda``; ``--robots``) and per function of :mod:`wbc.numeric`, with the
arguments a user passes (numpy arrays, frame names, constraint lists):

* ``eager_us``: the same function in :mod:`wbc.eager` (evaluated on numbers, uncompiled: the
  numeric API before issue 23), median of a few calls;
* ``wbc_us``: the compiled function, ``pinocchio_us``: the equivalent Pinocchio Python call (or
  calls: ``forwardKinematics`` + ``updateFramePlacement`` for a placement), timed in interleaved
  blocks (:mod:`benchmarks.harness`), ``ratio = wbc_us / pinocchio_us``, ``noise`` its spread;
* ``cold_s``: the first call of the function, alone, in a new process with an empty kernel cache
  (it traces and answers from CasADi's virtual machine while the kernel compiles in the
  background); ``ready_s``: from that call until the compiled kernel is swapped in;
  ``cold_seq_s``: the first call when every function is called in turn in one new process with an
  empty cache (the background compiles of the earlier ones compete for the processors);
  ``hit_ms``: the first call in another new process on that cache (fingerprint, index, load:
  nothing traced). ``setup_ms`` (function ``(process)``) is what the first function of a process
  pays once on top: the digest of wbc's sources (remembered in the cache), the compiler's identity
  and the model's fingerprint.

Both sides' results are compared before timing (``max_error``: relative, against Pinocchio). Not
every Pinocchio call computes exactly what wbc's does: ``crba`` fills only the upper triangle,
``inertia_weighted_input_matrix`` is ``computeMinverse`` (symmetrized) times ``[Sᵀ, Jᵀ]`` with the
contact Jacobians computed in the call, ``delassus`` is ``computeDelassusMatrix`` (LOCAL rows; wbc's
are world-aligned). The clustered functions are timed on the G1 with parallel ankles (rotor-free);
Pinocchio's anchor there is ``constraintDynamics`` with the loop closures, for ``cluster_aba`` only.

Usage::

    python -m benchmarks.numeric                 # aligned table
    python -m benchmarks.numeric --json          # one JSON object per line
    python -m benchmarks.numeric --no-cold       # skip the two new processes (cold, cache hit)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

import wbc
from benchmarks.harness import Record, calls_per_block, interleaved_blocks, relative_spread
from wbc import robots
from wbc.robots import RobotSpec, clustered

RF = wbc.ReferenceFrame
ROBOTS = ("talos", "panda")
CLUSTER_ROBOT = "g1_parallel_ankle"
#: The functions timed: every public numeric function (:data:`wbc.numeric.__all__`), ``rnea`` also
#: with external forces (label ``rnea (fext)``).
CLUSTER_FUNCTIONS = tuple(f for f in wbc.numeric.__all__ if f.startswith("cluster_"))
TREE_FUNCTIONS = (
    "rnea",
    "rnea (fext)",
    *(f for f in wbc.numeric.__all__ if f not in CLUSTER_FUNCTIONS and f != "rnea"),
)


class Case(NamedTuple):
    """One function on one robot: the compiled call, the eager call, Pinocchio's (or None) and how
    to bring Pinocchio's result to wbc's form."""

    function: str
    model: Any
    wbc: Callable[[], Any]
    eager: Callable[[], Any]
    pinocchio: Callable[[], Any] | None = None
    convert: Callable[[Any], np.ndarray] = np.asarray


def _state(nv: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=nv), rng.normal(size=nv)


def _setting(name: str, seed: int | None):
    """Model, configuration (``q0``, or random with ``seed``), velocity, torque, frame, constraints,
    external forces of a catalog robot."""
    spec = robots.load(name)
    model = spec.model
    v, tau = _state(model.nv, seed or 0)
    q = np.array(spec.q0) if seed is None else wbc.random_configuration(model, np.random.default_rng(seed))
    if spec.feet:
        frame = spec.feet[0]
        constraints = [wbc.PointConstraint(f, tuple(c)) for f in spec.feet for c in spec.sole.corners()]
    else:
        frame = spec.hands[0]
        constraints = [wbc.PointConstraint(frame)]
    return spec, model, q, v, tau, frame, constraints, {frame: np.array([0.0, 0.0, 400.0, 0, 0, 0])}


def tree_cases(name: str, with_pinocchio: bool = True, seed: int | None = None) -> list[Case]:
    """The cases of catalog robot ``name`` (``with_pinocchio=False``: no Pinocchio side, no import)
    at its standing posture, or at a random configuration drawn with ``seed``."""
    spec, model, q, v, tau, frame, constraints, fext = _setting(name, seed)
    z = np.zeros(model.nv)
    n, e = wbc.numeric, wbc.eager
    arguments = {
        "rnea": (q, v, tau),
        "rnea (fext)": (q, v, tau, fext),
        "nonlinear_effects": (q, v),
        "crba": (q,),
        "aba": (q, v, tau),
        "free_acceleration": (q, v),
        "frame_placement": (q, frame),
        "frame_jacobian": (q, frame, RF.LOCAL_WORLD_ALIGNED),
        "frame_velocity": (q, v, frame, RF.LOCAL),
        "frame_drift": (q, v, frame, RF.LOCAL_WORLD_ALIGNED),
        "center_of_mass": (q,),
        "com_velocity": (q, v),
        "com_jacobian": (q,),
        "com_drift": (q, v),
        "centroidal_map": (q,),
        "centroidal_momentum": (q, v),
        "centroidal_drift": (q, v),
        "integrate": (q, v, 1e-3),
        "inertia_weighted_input_matrix": (q, constraints),
        "delassus": (q, constraints),
    }
    pins = _pinocchio_calls(spec, q, v, tau, z, frame, constraints, fext) if with_pinocchio else {}
    cases = []
    for label in TREE_FUNCTIONS:
        function, args = label.split()[0], arguments[label]
        ours, eager = getattr(n, function), getattr(e, function)
        pin_call, convert = pins.get(label, (None, np.asarray))
        cases.append(
            Case(
                label,
                model,
                lambda f=ours, a=args: f(model, *a),
                lambda f=eager, a=args: f(model, *a),
                pin_call,
                convert,
            )
        )
    return cases


def _pinocchio_calls(spec, q, v, tau, z, frame, constraints, fext) -> dict[str, tuple[Callable, Callable]]:
    import pinocchio as pin

    from benchmarks import pinocchio_adapter as oracle

    pm = oracle.catalog_model(spec)
    pd = pm.createData()
    fid = oracle.frame_id(pm, frame)
    forces = oracle.external_forces(pm, fext)
    delassus, rotate = oracle.delassus_call(pm, constraints, q)
    minv_b = oracle.minv_b_calls(oracle.catalog_model(spec), spec.model, constraints, q)["minv+jac@B"]
    same = np.asarray

    def placement():
        pin.forwardKinematics(pm, pd, q)
        return pin.updateFramePlacement(pm, pd, fid).homogeneous

    def velocity():
        pin.forwardKinematics(pm, pd, q, v)
        return pin.getFrameVelocity(pm, pd, fid, pin.LOCAL).vector

    def drift():
        pin.forwardKinematics(pm, pd, q, v, z)
        return pin.getFrameClassicalAcceleration(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED).vector

    def com_velocity():
        pin.centerOfMass(pm, pd, q, v)
        return pd.vcom[0]

    def com_drift():
        pin.centerOfMass(pm, pd, q, v, z)
        return pd.acom[0]

    return {
        "rnea": (lambda: pin.rnea(pm, pd, q, v, tau), same),
        "rnea (fext)": (lambda: pin.rnea(pm, pd, q, v, tau, forces), same),
        "nonlinear_effects": (lambda: pin.nonLinearEffects(pm, pd, q, v), same),
        "crba": (lambda: pin.crba(pm, pd, q), oracle.symmetrized),
        "aba": (lambda: pin.aba(pm, pd, q, v, tau), same),
        "free_acceleration": (lambda: pin.aba(pm, pd, q, v, z), same),
        "frame_placement": (placement, same),
        "frame_jacobian": (lambda: pin.computeFrameJacobian(pm, pd, q, fid, pin.LOCAL_WORLD_ALIGNED), same),
        "frame_velocity": (velocity, same),
        "frame_drift": (drift, same),
        "center_of_mass": (lambda: pin.centerOfMass(pm, pd, q), same),
        "com_velocity": (com_velocity, same),
        "com_jacobian": (lambda: pin.jacobianCenterOfMass(pm, pd, q), same),
        "com_drift": (com_drift, same),
        "centroidal_map": (lambda: pin.computeCentroidalMap(pm, pd, q), same),
        "centroidal_momentum": (lambda: pin.computeCentroidalMomentum(pm, pd, q, v).vector, same),
        "centroidal_drift": (lambda: pin.computeCentroidalMomentumTimeVariation(pm, pd, q, v, z).vector, same),
        "integrate": (lambda: pin.integrate(pm, q, v * 1e-3), same),
        "inertia_weighted_input_matrix": (minv_b, same),
        "delassus": (delassus, rotate),
    }


def cluster_cases(with_pinocchio: bool = True, seed: int = 0, robot: RobotSpec | None = None) -> list[Case]:
    """The clustered functions on ``robot`` (default the G1 with parallel ankles, rotor-free:
    Pinocchio's loop closures are then exact), at a random configuration drawn with ``seed``;
    constraints: a point at each of the robot's contacts."""
    robot = robot or clustered.g1_parallel_ankle(geared=False)
    cm = robot.model
    rng = np.random.default_rng(seed)
    y = cm.random_configuration(rng, scale=0.5)
    v, t = rng.normal(size=cm.nv), rng.normal(size=cm.nv)
    feet = [wbc.PointConstraint(f, o) for f, o in robot.contacts]
    n, e = wbc.numeric, wbc.eager
    arguments = {
        "cluster_rnea": (y, v, t),
        "cluster_aba": (y, v, t),
        "cluster_delassus": (y, feet),
        "cluster_input_matrix": (y, feet),
        "cluster_jacobian": (y, feet),
    }
    pin_aba = None
    convert: Callable[[Any], np.ndarray] = np.asarray
    if with_pinocchio:
        from benchmarks import pinocchio_adapter as oracle

        pm = oracle.cluster_model(cm)
        tau = np.zeros(pm.nv)
        tau[cm.independent_v_indices] = t
        pin_aba = oracle.constraint_dynamics_call(
            pm, oracle.loop_constraint_models(pm, cm), y, cm.spanning_velocity(y, v), tau
        )
        if isinstance(pin_aba, tuple):
            pin_aba = pin_aba[0]

        def convert(x):
            return np.asarray(x)[cm.independent_v_indices]

    return [
        Case(
            f,
            cm,
            lambda f=f, a=a: getattr(n, f)(cm, *a),
            lambda f=f, a=a: getattr(e, f)(cm, *a),
            pin_aba if f == "cluster_aba" else None,
            convert if f == "cluster_aba" else np.asarray,
        )
        for f, a in arguments.items()
    ]


def cases_of(name: str, with_pinocchio: bool = True) -> list[Case]:
    return cluster_cases(with_pinocchio) if name == CLUSTER_ROBOT else tree_cases(name, with_pinocchio)


# ------------------------------------------------------------------------------------------ timing
def _relative(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def time_cases(name: str, rounds: int, block_ms: float, log: Callable[[str], None]) -> list[Record]:
    """Eager, compiled and Pinocchio per call for robot ``name`` (compiles what the cache lacks)."""
    from wbc.codegen import background

    records = []
    for case in cases_of(name):
        ours = case.wbc()  # compiled (or loaded) here
        background.wait()  # the compiled kernel in place: timed, not CasADi's virtual machine
        ours = case.wbc()
        eager = case.eager()
        errors = {"vs_eager": _relative(ours, eager)}
        sides = {"wbc": case.wbc}
        if case.pinocchio is not None:
            errors["vs_pinocchio"] = _relative(ours, case.convert(case.pinocchio()))
            sides["pinocchio"] = case.pinocchio
        eager_us = statistics.median(_seconds(case.eager) for _ in range(5)) * 1e6
        calls = {k: calls_per_block(c, block_ms) for k, c in sides.items()}
        blocks = interleaved_blocks(sides, rounds, calls, warmup=calls["wbc"])
        rec: Record = {
            "robot": name,
            "function": case.function,
            "eager_us": eager_us,
            "wbc_us": statistics.median(blocks["wbc"]),
            "speedup": eager_us / statistics.median(blocks["wbc"]),
            "max_error": errors,
        }
        if "pinocchio" in blocks:
            ratios = [a / b for a, b in zip(blocks["wbc"], blocks["pinocchio"])]
            rec |= {
                "pinocchio_us": statistics.median(blocks["pinocchio"]),
                "ratio": statistics.median(ratios),
                "noise": relative_spread(ratios),
            }
        log(f"{name} {case.function}: {rec['wbc_us']:.2f} us (eager {eager_us:.0f} us)")
        records.append(rec)
    return records


def _seconds(call: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def first_calls(name: str, only: str | None = None) -> Record:
    """Seconds of each function's first call in this process (run in a new one by
    :func:`new_process`), or, with ``only``, of that function's first call (setup included) and of
    the wait for its compiled kernel."""
    from wbc.codegen import background
    from wbc.codegen.fingerprint import source_digest
    from wbc.codegen.model_kernels import kernels_of

    cases = cases_of(name, with_pinocchio=False)
    if only is not None:
        case = next(c for c in cases if c.function == only)
        first = _seconds(case.wbc)
        return {"first_s": {only: first}, "ready_s": {only: _seconds(background.wait)}}
    t0 = time.perf_counter()
    source_digest()
    kernels_of(cases[0].model)._model_fingerprint()
    setup = time.perf_counter() - t0
    first = {c.function: _seconds(c.wbc) for c in cases}
    return {"setup_s": setup, "first_s": first, "wait_s": _seconds(background.wait)}


def new_process(name: str, cache: Path, only: str | None = None) -> Record:
    """:func:`first_calls` of robot ``name`` in a new Python process on kernel cache ``cache``."""
    env = dict(os.environ, WBC_CACHE_DIR=str(cache))
    which = [] if only is None else ["--only", only]
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.numeric", "--first-calls", name, *which],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def cold_and_hit(name: str, functions: Sequence[str], log: Callable[[str], None]) -> tuple[dict, dict, dict]:
    """Each function's first call alone in a new process on an empty cache, every function's first
    call in turn in one new process on an empty cache, and in another on the cache that filled."""
    alone: dict[str, dict] = {}
    for function in functions:
        with tempfile.TemporaryDirectory(prefix="wbc-bench-numeric-") as tmp:
            log(f"{name} {function}: first call alone in a new process, empty cache")
            run = new_process(name, Path(tmp), function)
            alone[function] = {"cold_s": run["first_s"][function], "ready_s": run["ready_s"][function]}
    with tempfile.TemporaryDirectory(prefix="wbc-bench-numeric-") as tmp:
        log(f"{name}: every function's first call in one new process, empty cache {tmp}")
        sequence = new_process(name, Path(tmp))
        log(f"{name}: first calls in a new process on that cache")
        hit = new_process(name, Path(tmp))
    return alone, sequence, hit


def run(settings: argparse.Namespace, emit: Callable[[Record], None], log: Callable[[str], None]) -> list[Record]:
    records = []
    for name in settings.robots:
        timed = time_cases(name, settings.rounds, settings.block_ms, log)
        if settings.cold:
            alone, sequence, hit = cold_and_hit(name, [r["function"] for r in timed], log)
            for rec in timed:
                rec |= alone[rec["function"]]
                rec["cold_seq_s"] = sequence["first_s"][rec["function"]]
                rec["hit_ms"] = hit["first_s"][rec["function"]] * 1e3
            process = {
                "robot": name,
                "function": "(process)",
                "setup_ms": hit["setup_s"] * 1e3,
                "compile_all_s": sequence["wait_s"],
            }
            emit(process)
            records.append(process)
        for rec in timed:
            emit(rec)
        records.extend(timed)
    return records


# ------------------------------------------------------------------------------------------ output
def _fmt(x: Any, digits: int = 2) -> str:
    if x is None:
        return "-"
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def format_table(records: Sequence[Record]) -> str:
    head = ["robot", "function", "eager µs", "wbc µs", "pinocchio µs", "ratio", "noise", "cold s", "ready s"]
    head += ["cold seq s", "hit ms"]
    rows = [head]
    for r in records:
        if r["function"] == "(process)":
            setup = ["", "", "", "", "", "", "", _fmt(r["compile_all_s"], 1), _fmt(r["setup_ms"], 1)]
            rows.append([r["robot"], "(process setup; all compiled)", *setup])
            continue
        rows.append(
            [
                r["robot"],
                r["function"],
                _fmt(r["eager_us"], 0),
                _fmt(r["wbc_us"]),
                _fmt(r.get("pinocchio_us")),
                _fmt(r.get("ratio")),
                _fmt(r.get("noise")),
                _fmt(r.get("cold_s")),
                _fmt(r.get("ready_s"), 1),
                _fmt(r.get("cold_seq_s")),
                _fmt(r.get("hit_ms"), 1),
            ]
        )
    widths = [max(len(row[k]) for row in rows) for k in range(len(head))]
    return "\n".join(
        "  ".join(c.ljust(w) if k < 2 else c.rjust(w) for k, (c, w) in enumerate(zip(row, widths))) for row in rows
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.numeric",
        description="The compiled numeric API (wbc.*) against wbc.eager and Pinocchio, side by side.",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")
    parser.add_argument(
        "--robots", nargs="+", default=[*ROBOTS, CLUSTER_ROBOT], help="catalog robots (and g1_parallel_ankle)"
    )
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds per function")
    parser.add_argument("--block-ms", type=float, default=20.0, help="about how long one block of calls lasts")
    parser.add_argument("--no-cold", dest="cold", action="store_false", help="skip the new processes (cold, hit)")
    parser.add_argument("--first-calls", metavar="ROBOT", help=argparse.SUPPRESS)
    parser.add_argument("--only", metavar="FUNCTION", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.first_calls:
        print(json.dumps(first_calls(args.first_calls, args.only)))
        return 0

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    def emit(record: Record) -> None:
        if args.json:
            print(json.dumps(record, ensure_ascii=False), flush=True)

    records = run(args, emit, log)
    if not args.json:
        print(format_table(records))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
