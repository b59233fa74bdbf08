"""Benchmark: compiled wbc kernels against Pinocchio, side by side in one process.

What is measured, per robot (catalog ``talos`` and ``g1``, free-flyer):

* ``aba``       forward dynamics ``q̈ = ABA(q, v, τ)``;
* ``rnea``      inverse dynamics ``τ = RNEA(q, v, a)``;
* ``crba``      the joint-space inertia matrix ``M(q)`` (both sides return the full symmetric matrix);
* ``jacobians`` the LOCAL Jacobians (6, nv) of four frames: both feet and both hands.

The wbc side is one compiled kernel per quantity (``wbc.codegen.algorithm_functions.*_function`` traced, compiled to C,
loaded from the on-disk cache), timed through the normal user call ``kernel(q, v, tau)``: it copies
the arguments into the kernel's buffers and evaluates. ``wbc_run_us`` is the same kernel through
``kernel.run()`` with the inputs already in its buffers (the floor of the Python call path).
The Pinocchio side is its Python call on a model built from the same URDF with
``pin.buildModelFromUrdf(urdf, pin.JointModelFreeFlyer())``. Where Pinocchio offers more than one
way to compute a quantity (ABA's LOCAL and WORLD conventions; Jacobians via
``computeJointJacobians`` + 4 × ``getFrameJacobian`` or 4 × ``computeFrameJacobian``), every
way is timed and the fastest is the anchor, so the comparison never flatters wbc; its name is in
``pinocchio_call`` and all of them in ``pinocchio_candidates_us``.

How it is timed (the machines are noisy and shared, DESIGN.md §6): one random valid state per
robot, generated once and given to both sides; both sides' outputs are checked to agree before
anything is timed; a warm-up block per side; then ``--rounds`` rounds, each running one block of
``--calls`` calls of every side, the order of the sides rotating from round to round; the garbage
collector is off while timing. A block gives a mean time per call; each side's figure is the median
of its block means over the rounds. ``ratio_spread`` is the interquartile range over the median of
the per-round ratios (wbc block / Pinocchio block of the same round): how far the ratio moved while
the machine's speed drifted (which moves both sides alike and is what the interleaving cancels);
above ~0.1, rerun before trusting a ratio near 1. The table shows it as ``noise``.

How to read it: ``ratio = wbc_us / pinocchio_us`` (below 1: wbc is faster). Only ratios are
meaningful across machines; the µs are what this machine did while this run lasted. ``ops`` is
the kernel's CasADi instruction count (``n_instructions``), the operation count the PV-OSIMr paper
compares algorithms by; ``code_kb`` the size of its shared library and ``flags`` the compiler
flags it was built with (RNEA and CRBA are *hot*: ``-O2``, the others ``-Og``, both with ``-mavx``
where the processor has AVX; see :data:`wbc.codegen.HOT_FLAGS`; the table shows the first). RNEA,
CRBA and ABA are traced on the equivalent model with cheaper joint frames
(:func:`wbc.model.reframe.reframed`). The ``aba_kernel_build`` line reports, for Talos' ABA, the trace time, a
cold compile into a fresh temporary cache directory (``compile_s``, wall time of
``compile_function``), and a second ``compile_function`` on that directory (``cache_hit_s``, wall
time, which still regenerates and hashes the C source, and ``load_s``, the library load alone).

Usage::

    python -m benchmarks.dynamics                  # aligned table
    python -m benchmarks.dynamics --json           # one JSON object per line
    python -m benchmarks.dynamics --out out/bench  # also bench_dynamics.json and .png there
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

import wbc
from benchmarks import pinocchio_adapter as oracle
from benchmarks.harness import Record, choice_list, interleaved_blocks, relative_spread
from wbc import robots
from wbc.codegen import Kernel, compile_function
from wbc.codegen.cache import flags_of

__all__ = ["main", "run_benchmark", "QUANTITIES"]

QUANTITIES: tuple[str, ...] = ("aba", "rnea", "crba", "jacobians")
LABELS: dict[str, str] = {"aba": "ABA", "rnea": "RNEA", "crba": "CRBA", "jacobians": "Jacobians ×4"}
DEFAULT_ROBOTS = ("talos", "g1")
DEFAULT_ROUNDS = 20
DEFAULT_CALLS = 2000
WARMUP_CALLS = 500
AGREEMENT_TOL = 1e-8  # relative to the magnitude of Pinocchio's result


class State(NamedTuple):
    """One random valid state, shared by both sides: ``q`` (nq,), ``v``, ``tau``, ``a`` (nv,)."""

    q: np.ndarray
    v: np.ndarray
    tau: np.ndarray
    a: np.ndarray


class Case(NamedTuple):
    """One quantity on one robot: the calls to time and a check that both sides agree.

    Attributes:
        wbc_call: the user call ``kernel(...)`` with the state bound.
        wbc_run: ``kernel.run`` (inputs preloaded by one ``wbc_call``).
        pinocchio: the Pinocchio ways of computing the quantity, by name.
        wbc_result / pinocchio_result: return the outputs as a list of arrays, for the check.
    """

    robot: str
    quantity: str
    ops: int
    code_kb: float
    flags: str
    wbc_call: Callable[[], object]
    wbc_run: Callable[[], object]
    pinocchio: dict[str, Callable[[], object]]
    wbc_result: Callable[[], list[np.ndarray]]
    pinocchio_result: Callable[[Callable[[], object]], list[np.ndarray]]


# ----------------------------------------------------------------------------- setup
def random_state(model: wbc.Model, rng: np.random.Generator) -> State:
    """A random valid configuration (joint limits respected, unit quaternion) and random v, τ, a."""
    q = wbc.random_configuration(model, rng)
    return State(q, rng.normal(size=model.nv), 10.0 * rng.normal(size=model.nv), rng.normal(size=model.nv))


def jacobian_frames(spec: robots.RobotSpec) -> tuple[str, ...]:
    """The four benchmarked frames: both feet, then both hands."""
    return tuple(spec.feet) + tuple(spec.hands)


def trace_functions(spec: robots.RobotSpec) -> dict[str, tuple[Any, float]]:
    """Trace every quantity's function: ``{quantity: (casadi.Function, trace seconds)}``."""
    tracers: dict[str, Callable[[], Any]] = {
        "aba": lambda: wbc.codegen.algorithm_functions.aba_function(spec.model),
        "rnea": lambda: wbc.codegen.algorithm_functions.rnea_function(spec.model),
        "crba": lambda: wbc.codegen.algorithm_functions.crba_function(spec.model),
        "jacobians": lambda: wbc.codegen.algorithm_functions.frame_jacobians_function(
            spec.model, jacobian_frames(spec), wbc.ReferenceFrame.LOCAL
        ),
    }
    out = {}
    for quantity, tracer in tracers.items():
        t0 = time.perf_counter()
        fn = tracer()
        out[quantity] = (fn, time.perf_counter() - t0)
    return out


def _copies(outputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    return [np.array(o) for o in outputs]


def _pinocchio_calls(quantity: str, pm, pd, state: State, frame_ids: Sequence[int]) -> dict[str, Callable[[], object]]:
    """The Pinocchio ways of computing ``quantity``, each a no-argument call returning its result."""
    import pinocchio as pin

    q, v, tau, a = state.q, state.v, state.tau, state.a
    if quantity == "aba":
        # The default LOCAL convention and the WORLD one: WORLD is ~15-30 % faster here (pin 4.1).
        return {
            "aba": partial(pin.aba, pm, pd, q, v, tau),
            "aba(WORLD)": partial(pin.aba, pm, pd, q, v, tau, pin.Convention.WORLD),
        }
    if quantity == "rnea":
        return {"rnea": partial(pin.rnea, pm, pd, q, v, a)}
    if quantity == "crba":
        # Pinocchio >= 3 fills the whole symmetric matrix, as wbc's kernel does.
        return {
            "crba": partial(pin.crba, pm, pd, q),
            "crba(WORLD)": partial(pin.crba, pm, pd, q, pin.Convention.WORLD),
        }
    if quantity == "jacobians":
        # Two paths, both timed every run; the faster one is the anchor. On this project's machines
        # (pin 4.1) 4 x computeFrameJacobian (each a forward pass over the frame's supporting chain
        # only) is usually, but not always, a few % faster than computeJointJacobians (one pass over
        # all bodies) + 4 x getFrameJacobian: within the noise, hence both.
        def joint_jacobians_then_get() -> list[np.ndarray]:
            pin.computeJointJacobians(pm, pd, q)
            return [pin.getFrameJacobian(pm, pd, f, pin.LOCAL) for f in frame_ids]

        def compute_frame_jacobians() -> list[np.ndarray]:
            return [pin.computeFrameJacobian(pm, pd, q, f, pin.LOCAL) for f in frame_ids]

        return {
            "computeJointJacobians+4×getFrameJacobian": joint_jacobians_then_get,
            "4×computeFrameJacobian": compute_frame_jacobians,
        }
    raise ValueError(f"unknown quantity {quantity!r}; known: {', '.join(QUANTITIES)}")


def _kernel_args(quantity: str, state: State) -> tuple[np.ndarray, ...]:
    return {
        "aba": (state.q, state.v, state.tau),
        "rnea": (state.q, state.v, state.a),
        "crba": (state.q,),
        "jacobians": (state.q,),
    }[quantity]


def build_cases(
    spec: robots.RobotSpec, functions: dict[str, Any], kernels: dict[str, Kernel], state: State
) -> list[Case]:
    """One :class:`Case` per quantity for ``spec``, its traced ``functions`` already compiled into ``kernels``."""
    pm = oracle.catalog_model(spec)
    pd = pm.createData()
    frame_ids = [pm.getFrameId(f) for f in jacobian_frames(spec)]
    cases = []
    for quantity in QUANTITIES:
        kernel = kernels[quantity]
        args = _kernel_args(quantity, state)
        wbc_call = partial(kernel, *args)
        cases.append(
            Case(
                robot=spec.name,
                quantity=quantity,
                ops=kernel.n_instructions,
                code_kb=round(kernel.library.stat().st_size / 1024, 1) if kernel.library is not None else 0.0,
                flags=" ".join(flags_of(functions[quantity])),
                wbc_call=wbc_call,
                wbc_run=kernel.run,
                pinocchio=_pinocchio_calls(quantity, pm, pd, state, frame_ids),
                wbc_result=lambda call=wbc_call: _copies(call()),
                pinocchio_result=lambda call: _copies(np.atleast_1d(r) for r in _as_list(call())),
            )
        )
    return cases


def _as_list(result: object) -> list:
    return list(result) if isinstance(result, list) else [result]


def check_agreement(case: Case) -> None:
    """Raise if wbc and any Pinocchio path disagree: then the timings would compare different things."""
    ours = case.wbc_result()
    for name, call in case.pinocchio.items():
        theirs = case.pinocchio_result(call)
        if len(ours) != len(theirs):
            raise RuntimeError(f"{case.robot} {case.quantity}: wbc gives {len(ours)} outputs, {name} {len(theirs)}")
        for k, (x, y) in enumerate(zip(ours, theirs)):
            x = x.reshape(y.shape)
            err = float(np.max(np.abs(x - y))) if x.size else 0.0
            scale = max(1.0, float(np.max(np.abs(y))) if y.size else 0.0)
            if not err <= AGREEMENT_TOL * scale:
                raise RuntimeError(
                    f"{case.robot} {case.quantity}: wbc output {k} differs from Pinocchio's {name} by {err:.3g} "
                    f"(scale {scale:.3g}); not timing different computations"
                )


def compile_kernels(functions: dict[str, tuple[Any, float]]) -> dict[str, Kernel]:
    """Compile (or load from the default on-disk cache) every traced function."""
    return {quantity: compile_function(fn) for quantity, (fn, _) in functions.items()}


def measure(case: Case, rounds: int, calls: int) -> Record:
    """Time ``case`` and return its JSON record."""
    case.wbc_call()  # preload the kernel's inputs for wbc_run
    sides: dict[str, Callable[[], object]] = {"wbc": case.wbc_call, "wbc_run": case.wbc_run}
    sides.update({f"pin:{n}": c for n, c in case.pinocchio.items()})
    blocks = interleaved_blocks(sides, rounds, calls, warmup=WARMUP_CALLS)
    medians = {n: statistics.median(b) for n, b in blocks.items()}
    candidates = {n[4:]: medians[n] for n in medians if n.startswith("pin:")}
    best = min(candidates, key=candidates.__getitem__)
    wbc_us, pin_us = medians["wbc"], candidates[best]
    return {
        "robot": case.robot,
        "quantity": case.quantity,
        "wbc_us": round(wbc_us, 3),
        "pinocchio_us": round(pin_us, 3),
        "ratio": round(wbc_us / pin_us, 3),
        "ops": case.ops,
        "code_kb": case.code_kb,
        "flags": case.flags,
        "wbc_run_us": round(medians["wbc_run"], 3),
        "pinocchio_call": best,
        "pinocchio_candidates_us": {n: round(t, 3) for n, t in candidates.items()},
        "ratio_spread": round(relative_spread([w / p for w, p in zip(blocks["wbc"], blocks[f"pin:{best}"])]), 3),
        "rounds": rounds,
        "calls": calls,
    }


def measure_kernel_build(robot: str, function: Any, trace_s: float) -> Record:
    """Cold compile into a fresh temporary cache directory, then a cache hit on the same directory."""
    with tempfile.TemporaryDirectory(prefix="wbc-bench-cache-") as tmp:
        t0 = time.perf_counter()
        cold = compile_function(function, directory=Path(tmp))
        compile_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        hit = compile_function(function, directory=Path(tmp))
        cache_hit_s = time.perf_counter() - t1
    return {
        "robot": robot,
        "quantity": "aba_kernel_build",
        "trace_s": round(trace_s, 4),
        "compile_s": round(compile_s, 4),
        "cc_s": round(cold.compile_seconds, 4),
        "cold_load_s": round(cold.load_seconds, 6),
        "cache_hit_s": round(cache_hit_s, 4),
        "load_s": round(hit.load_seconds, 6),
        "recompiled_on_hit": hit.compile_seconds > 0.0,
        "ops": cold.n_instructions,
    }


# ----------------------------------------------------------------------------- driver
def run_benchmark(
    robot_names: Sequence[str],
    rounds: int,
    calls: int,
    build_report: bool = True,
    emit: Callable[[Record], None] | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> list[Record]:
    """Benchmark ``robot_names``; every record is passed to ``emit`` as soon as it exists."""
    emit = emit or (lambda _: None)
    records: list[Record] = []
    build_robot = "talos" if "talos" in robot_names else robot_names[0]
    for name in robot_names:
        log(f"{name}: loading and tracing")
        spec = robots.load(name)
        functions = trace_functions(spec)
        if build_report and name == build_robot:
            log(f"{name}: ABA cold compile into a temporary cache")
            fn, trace_s = functions["aba"]
            records.append(measure_kernel_build(name, fn, trace_s))
            emit(records[-1])
        log(f"{name}: compiling kernels (cached under {wbc.codegen.cache_dir()})")
        kernels = compile_kernels(functions)
        state = random_state(spec.model, np.random.default_rng(20240531))
        traced = {quantity: fn for quantity, (fn, _) in functions.items()}
        for case in build_cases(spec, traced, kernels, state):
            check_agreement(case)
            log(f"{name}: timing {case.quantity}")
            records.append(measure(case, rounds, calls))
            emit(records[-1])
    return records


def format_table(records: Sequence[Record]) -> str:
    """The timing records as an aligned table, then the kernel-build paragraph."""
    header = (
        "robot",
        "quantity",
        "wbc µs",
        "wbc run() µs",
        "Pinocchio µs",
        "ratio",
        "noise",
        "ops",
        "code kB",
        "flags",
        "Pinocchio call",
    )
    rows = [
        (
            r["robot"],
            LABELS.get(r["quantity"], r["quantity"]),
            f"{r['wbc_us']:.2f}",
            f"{r['wbc_run_us']:.2f}",
            f"{r['pinocchio_us']:.2f}",
            f"{r['ratio']:.2f}",
            f"{r['ratio_spread']:.0%}",
            str(r["ops"]),
            f"{r['code_kb']:.0f}",
            r["flags"].split()[0],
            r["pinocchio_call"],
        )
        for r in records
        if "wbc_us" in r
    ]
    widths = [max(len(h), *(len(row[k]) for row in rows)) if rows else len(h) for k, h in enumerate(header)]
    numeric = {2, 3, 4, 5, 6, 7, 8}

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if k in numeric else c.ljust(w) for k, (c, w) in enumerate(zip(cells, widths)))

    lines = [line(header), "  ".join("-" * w for w in widths), *(line(row) for row in rows)]
    if rows:
        r0 = next(r for r in records if "wbc_us" in r)
        lines.append(
            f"\nratio = wbc µs / Pinocchio µs (below 1: wbc faster); medians over {r0['rounds']} interleaved "
            f"rounds of {r0['calls']} calls; wbc through kernel(...), run() with inputs preloaded."
        )
    for b in (r for r in records if r["quantity"] == "aba_kernel_build"):
        lines.append(
            f"\n{b['robot']} ABA kernel ({b['ops']} ops): traced in {b['trace_s']:.2f} s; cold compile into a fresh "
            f"cache {b['compile_s']:.2f} s (of which the C compiler {b['cc_s']:.2f} s, library load "
            f"{b['cold_load_s'] * 1e3:.2f} ms); cache hit {b['cache_hit_s']:.3f} s in all (C regenerated and hashed), "
            f"of which loading the library {b['load_s'] * 1e3:.2f} ms."
        )
    return "\n".join(lines)


def plot(records: Sequence[Record], path: Path) -> None:
    """Grouped bars, one panel per robot: wbc call, wbc run(), Pinocchio µs per quantity, ratio on top."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    timed = [r for r in records if "wbc_us" in r]
    robot_names = list(dict.fromkeys(r["robot"] for r in timed))
    fig, axes = plt.subplots(
        1, max(1, len(robot_names)), figsize=(5.5 * max(1, len(robot_names)), 4.5), sharey=True, squeeze=False
    )
    top = max((max(r["wbc_us"], r["pinocchio_us"]) for r in timed), default=1.0)
    bars = (
        ("wbc_us", "wbc kernel(...)", "tab:blue"),
        ("wbc_run_us", "wbc run() (inputs preloaded)", "lightsteelblue"),
        ("pinocchio_us", "Pinocchio (fastest call)", "tab:orange"),
    )
    width = 0.27
    for ax, robot in zip(axes[0], robot_names):
        rows = [r for r in timed if r["robot"] == robot]
        x = np.arange(len(rows))
        for k, (key, label, color) in enumerate(bars):
            ax.bar(x + (k - 1) * width, [r[key] for r in rows], width, label=label, color=color)
        for xi, r in zip(x, rows):
            ax.annotate(
                f"×{r['ratio']:.2f}",
                (xi, max(r["wbc_us"], r["pinocchio_us"])),
                xytext=(0, 4),
                textcoords="offset points",
                ha="center",
                fontsize=9,
                fontweight="bold",
            )
        ax.set_xticks(x, [LABELS.get(r["quantity"], r["quantity"]) for r in rows])
        ax.set_title(robot)
        ax.set_ylim(0, 1.18 * top)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("µs per call (median of interleaved blocks)")
    axes[0][0].legend(loc="upper right", fontsize=8)
    fig.suptitle("wbc compiled kernels vs Pinocchio, same process (×: wbc / Pinocchio)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_outputs(records: Sequence[Record], out: Path) -> None:
    """``out/bench_dynamics.json`` (all records as a list) and ``out/bench_dynamics.png``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_dynamics.json").write_text(json.dumps(list(records), indent=1, ensure_ascii=False) + "\n")
    plot(records, out / "bench_dynamics.png")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _robot_list(text: str) -> list[str]:
    return choice_list(text, robots.names(robots.RobotKind.TREE), "robot")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Time compiled wbc kernels (ABA, RNEA, CRBA, 4 frame Jacobians) against Pinocchio, "
        "side by side in one process; report medians and the ratio wbc / Pinocchio.",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object per line instead of a table")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="also write DIR/bench_dynamics.json and DIR/bench_dynamics.png (created if needed)",
    )
    parser.add_argument(
        "--robots",
        type=_robot_list,
        default=list(DEFAULT_ROBOTS),
        help=f"comma-separated catalog names (default: {','.join(DEFAULT_ROBOTS)})",
    )
    parser.add_argument(
        "--rounds",
        type=_positive_int,
        default=DEFAULT_ROUNDS,
        help=f"interleaved rounds per quantity (default: {DEFAULT_ROUNDS})",
    )
    parser.add_argument(
        "--calls", type=_positive_int, default=DEFAULT_CALLS, help=f"calls per timed block (default: {DEFAULT_CALLS})"
    )
    parser.add_argument(
        "--no-build-report", action="store_true", help="skip the cold-compile / cache-hit measurement of the ABA kernel"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.json:

        def emit(record: Record) -> None:
            print(json.dumps(record, ensure_ascii=False), flush=True)

        def log(_: str) -> None:
            pass

    else:
        emit = None

        def log(message: str) -> None:
            print(message, file=sys.stderr, flush=True)

    records = run_benchmark(args.robots, args.rounds, args.calls, not args.no_build_report, emit, log)
    if not args.json:
        print(format_table(records))
    if args.out is not None:
        write_outputs(records, args.out)
        if not args.json:
            print(f"\nwrote {args.out / 'bench_dynamics.json'} and {args.out / 'bench_dynamics.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
