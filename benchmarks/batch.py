"""Benchmark: batched kernels (many states per call, in threads) against Pinocchio's parallel functions.

What is measured, per robot (catalog ``talos`` by default), batch of ``--states`` random valid
states, at 1 thread and at every processor this process may use:

* ``aba``  forward dynamics over the batch: wbc's :class:`~wbc.codegen.BatchKernel` of the ABA
  kernel against Pinocchio's ``abaInParallel(threads, ModelPool, q, v, tau, out)``;
* ``rnea`` inverse dynamics: the RNEA kernel against ``rneaInParallel``;
* ``controller`` the whole control kernel of the anchors' standing controller (Talos, two 6D feet,
  CoM and posture tasks: :func:`benchmarks.controller.build`), every output (task and contact rows,
  B̂, a₀, bounds) for each state, its parameters shared. Pinocchio has no such function: no anchor;
  what matters there is ``scaling``.

Both sides get the same states, as arrays laid out as each wants them (wbc ``(N, nq)``, Pinocchio
``(nq, N)`` Fortran-ordered), and their results are checked to agree before anything is timed.
``casadi_map_states_per_s`` is the other route to a batch: CasADi's ``Function.map(N, "thread",
T)`` over the same compiled function, evaluated through the buffer API (which holds the GIL).

Timing: the harness's interleaved rounds (:mod:`benchmarks.harness`): per round one block of
``--calls`` batch calls per side, the order rotating; a side's figure is the median over rounds of
its block mean. ``wbc_states_per_s = N / median call time``. ``ratio`` is wbc's throughput over
Pinocchio's (above 1: wbc faster), ``scaling`` a side's throughput at this thread count over its
own at the fewest threads measured (1 by default; ideal: the thread count). On a machine whose
processors are busy with other work the wall-clock scaling cannot show what the threads would do
on free processors; ``cpu_efficiency`` can: the states per processor second (``time.process_time``,
every thread of the process) at this thread count over that at the fewest threads. 1 means the
threads add no work (no serialization, no contention, no false sharing): the wall-clock scaling is
then the thread count wherever that many processors are free. (Pinocchio's OpenMP threads spin
while they wait, which counts as processor time.) ``ratio_spread`` as in the other benchmarks (the
per-round ratios' interquartile range over their median). The machines are shared: only ratios
taken in the same run mean anything, and the scaling reflects the processors actually free.

Usage::

    python -m benchmarks.batch                 # aligned table
    python -m benchmarks.batch --json          # one JSON object per line
    python -m benchmarks.batch --states 4000 --threads 1 2 4
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import wbc
from benchmarks import pinocchio_adapter as oracle
from benchmarks.harness import Record, interleaved_blocks, relative_spread
from wbc import robots
from wbc.codegen import BatchKernel, Kernel, available_threads, compile_function

__all__ = ["main", "run_benchmark", "QUANTITIES"]

QUANTITIES: tuple[str, ...] = ("aba", "rnea", "controller")
DEFAULT_STATES = 1000
DEFAULT_ROUNDS = 10
DEFAULT_CALLS = 5
AGREEMENT_TOL = 1e-8  # relative to the magnitude of Pinocchio's result


def random_states(model: wbc.Model, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """``n`` random valid states: q (n, nq), v, tau, a (n, nv)."""
    q = np.array([wbc.random_configuration(model, rng) for _ in range(n)])
    return {
        "q": q,
        "v": rng.normal(size=(n, model.nv)),
        "tau": 10.0 * rng.normal(size=(n, model.nv)),
        "a": rng.normal(size=(n, model.nv)),
    }


def _map_call(kernel: Kernel, args: Sequence[np.ndarray], threads: int) -> tuple[Callable[[], object], np.ndarray]:
    """CasADi's ``Function.map(N, "thread", threads)`` of the kernel's compiled function through the
    buffer API (vector inputs and one vector output): the call and its output array (N, n_out)."""
    n = args[0].shape[0]
    mapped = kernel.function.map(n, "thread", threads)
    buffer, evaluate = mapped.buffer()
    inputs = [np.ascontiguousarray(a) for a in args]
    out = np.zeros((n, kernel.function.nnz_out(0)))
    for i, a in enumerate(inputs):
        buffer.set_arg(i, memoryview(a))
    buffer.set_res(0, memoryview(out))

    def call(keep=(mapped, buffer, inputs, out)) -> object:  # the buffer keeps neither function nor arrays alive
        return evaluate()

    return call, out


def _agree(what: str, ours: np.ndarray, theirs: np.ndarray) -> None:
    err = float(np.max(np.abs(ours - theirs))) if ours.size else 0.0
    scale = max(1.0, float(np.max(np.abs(theirs))) if theirs.size else 0.0)
    if not err <= AGREEMENT_TOL * scale:
        raise RuntimeError(f"{what}: wbc and Pinocchio differ by {err:.3g} (scale {scale:.3g}); not timing")


def dynamics_sides(
    spec: robots.RobotSpec, quantity: str, states: dict[str, np.ndarray], threads: int
) -> dict[str, Callable[[], object]]:
    """The calls timed for ``aba`` or ``rnea``: ``wbc``, ``pinocchio``, ``casadi_map`` (checked to agree)."""
    import pinocchio as pin

    model = spec.model
    if quantity == "aba":
        kernel = compile_function(wbc.codegen.algorithm_functions.aba_function(model))
        args = (states["q"], states["v"], states["tau"])
        parallel = pin.abaInParallel
    else:
        kernel = compile_function(wbc.codegen.algorithm_functions.rnea_function(model))
        args = (states["q"], states["v"], states["a"])
        parallel = pin.rneaInParallel
    batch = BatchKernel(kernel, threads=threads)
    n = args[0].shape[0]
    out = np.empty((n, model.nv))
    pm = oracle.catalog_model(spec)
    pool = pin.ModelPool(pm, threads)
    columns = [np.asfortranarray(a.T) for a in args]
    result = np.zeros((model.nv, n), order="F")

    def wbc_call() -> object:
        return batch(*args, out=[out])

    def pinocchio_call() -> object:
        return parallel(threads, pool, *columns, result)

    map_call, map_out = _map_call(kernel, args, threads)
    wbc_call()
    pinocchio_call()
    map_call()
    _agree(f"{spec.name} {quantity}", out, result.T)
    if not np.array_equal(map_out, out):
        raise RuntimeError(f"{spec.name} {quantity}: CasADi's map and the batch driver differ")
    return {"wbc": wbc_call, "pinocchio": pinocchio_call, "casadi_map": map_call}


def controller_sides(states: dict[str, np.ndarray], threads: int) -> dict[str, Callable[[], object]]:
    """The control kernel of the anchors' standing controller over the batch (parameters shared)."""
    from benchmarks.controller import build

    ctrl, spec, _, _ = build("daqp", "wrench")
    ctrl.step(spec.q0, np.zeros(spec.model.nv))  # targets and contact placements set
    kernel = ctrl.kernel
    assert kernel is not None
    batch = BatchKernel(kernel, threads=threads)
    parameters = [np.array(p) for p in kernel.inputs[2:]]
    q, v = states["q"], 0.1 * states["v"]
    outputs = batch(q, v, *parameters)  # reused by every timed call

    def wbc_call() -> object:
        return batch(q, v, *parameters, out=outputs)

    wbc_call()
    return {"wbc": wbc_call}


def processor_seconds(call: Callable[[], object], calls: int, rounds: int) -> float:
    """Median over ``rounds`` of the processor time (all of this process's threads) per call, s."""
    samples = []
    for _ in range(rounds):
        t0 = time.process_time()
        for _ in range(calls):
            call()
        samples.append((time.process_time() - t0) / calls)
    return statistics.median(samples)


def measure(
    robot: str, quantity: str, threads: int, n: int, sides: dict[str, Callable[[], object]], rounds: int, calls: int
) -> tuple[Record, dict[str, float]]:
    """Time ``sides`` (batch calls of ``n`` states); the record (without ``scaling``) and the rates
    (wall-clock states/s by side, and ``cpu:<side>`` states per processor second)."""
    blocks = interleaved_blocks(sides, rounds, calls, warmup=1)
    rate = {name: n / (statistics.median(b) * 1e-6) for name, b in blocks.items()}
    for name in ("wbc", "pinocchio"):
        if name in sides:
            rate[f"cpu:{name}"] = n / processor_seconds(sides[name], calls, max(3, rounds // 3))
    pinocchio = rate.get("pinocchio")
    record: Record = {
        "robot": robot,
        "quantity": quantity,
        "threads": threads,
        "states": n,
        "wbc_states_per_s": round(rate["wbc"]),
        "pinocchio_states_per_s": None if pinocchio is None else round(pinocchio),
        "ratio": None if pinocchio is None else round(rate["wbc"] / pinocchio, 3),
        "casadi_map_states_per_s": round(rate["casadi_map"]) if "casadi_map" in rate else None,
        "ratio_spread": (
            round(relative_spread([p / w for w, p in zip(blocks["wbc"], blocks["pinocchio"])]), 3)
            if pinocchio is not None
            else round(relative_spread(blocks["wbc"]), 3)
        ),
        "rounds": rounds,
        "calls": calls,
    }
    return record, rate


def run_benchmark(
    robot_names: Sequence[str],
    quantities: Sequence[str],
    thread_counts: Sequence[int],
    n: int,
    rounds: int,
    calls: int,
    emit: Callable[[Record], None] | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> list[Record]:
    """Every (robot, quantity, thread count); each record is passed to ``emit`` as soon as it exists."""
    emit = emit or (lambda _: None)
    records: list[Record] = []
    for name in robot_names:
        spec = robots.load(name)
        states = random_states(spec.model, n, np.random.default_rng(20240531))
        for quantity in quantities:
            if quantity == "controller" and name != "talos":
                log(f"{name}: no controller scenario (the anchors' is Talos); skipped")
                continue
            base: dict[str, float] = {}
            for threads in sorted(thread_counts):
                log(f"{name} {quantity}: {threads} thread(s), {n} states per call")
                if quantity == "controller":
                    sides = controller_sides(states, threads)
                else:
                    sides = dynamics_sides(spec, quantity, states, threads)
                record, rate = measure(name, quantity, threads, n, sides, rounds, calls)
                base = base or rate
                record["scaling"] = round(rate["wbc"] / base["wbc"], 3)
                record["cpu_efficiency"] = round(rate["cpu:wbc"] / base["cpu:wbc"], 3)
                if "pinocchio" in rate:
                    record["pinocchio_scaling"] = round(rate["pinocchio"] / base["pinocchio"], 3)
                    record["pinocchio_cpu_efficiency"] = round(rate["cpu:pinocchio"] / base["cpu:pinocchio"], 3)
                records.append(record)
                emit(record)
    return records


def format_table(records: Sequence[Record]) -> str:
    """The records as an aligned table."""
    header = ("robot", "quantity", "threads", "wbc states/s", "Pinocchio states/s", "ratio", "noise", "scaling")
    header += ("CPU efficiency", "Pinocchio scaling", "Pinocchio CPU eff.", "CasADi map states/s")
    rows = [
        (
            r["robot"],
            r["quantity"],
            str(r["threads"]),
            f"{r['wbc_states_per_s']:,}",
            "-" if r["pinocchio_states_per_s"] is None else f"{r['pinocchio_states_per_s']:,}",
            "-" if r["ratio"] is None else f"{r['ratio']:.2f}",
            f"{r['ratio_spread']:.0%}",
            f"{r['scaling']:.2f}",
            f"{r['cpu_efficiency']:.2f}",
            f"{r['pinocchio_scaling']:.2f}" if "pinocchio_scaling" in r else "-",
            f"{r['pinocchio_cpu_efficiency']:.2f}" if "pinocchio_cpu_efficiency" in r else "-",
            "-" if r["casadi_map_states_per_s"] is None else f"{r['casadi_map_states_per_s']:,}",
        )
        for r in records
    ]
    widths = [max(len(h), *(len(row[k]) for row in rows)) if rows else len(h) for k, h in enumerate(header)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if k < 2 else c.rjust(w) for k, (c, w) in enumerate(zip(cells, widths)))

    lines = [line(header), "  ".join("-" * w for w in widths), *(line(row) for row in rows)]
    if records:
        r0 = records[0]
        lines.append(
            f"\nratio = wbc states/s / Pinocchio states/s at equal threads (above 1: wbc faster); scaling = "
            f"throughput / throughput at 1 thread; {r0['states']} states per call, medians over "
            f"{r0['rounds']} interleaved rounds of {r0['calls']} calls; noise = spread of the per-round ratios."
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robots", nargs="+", default=["talos"], help="catalog robots (default talos)")
    parser.add_argument("--quantities", nargs="+", default=list(QUANTITIES), choices=QUANTITIES)
    parser.add_argument(
        "--threads", nargs="+", type=int, default=None, help="thread counts (default 1 and all processors)"
    )
    parser.add_argument("--states", type=int, default=DEFAULT_STATES, help="states per batch call")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    parser.add_argument("--calls", type=int, default=DEFAULT_CALLS, help="batch calls per block")
    parser.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")
    args = parser.parse_args(argv)
    threads = args.threads or sorted({1, available_threads()})
    if any(t < 1 for t in threads) or args.states < 1:
        parser.error("--threads and --states must be positive")

    def emit(record: dict[str, Any]) -> None:
        if args.json:
            print(json.dumps(record), flush=True)

    records = run_benchmark(
        args.robots,
        args.quantities,
        threads,
        args.states,
        args.rounds,
        args.calls,
        emit=emit,
        log=lambda s: print(s, file=sys.stderr, flush=True),
    )
    if not args.json:
        print(format_table(records))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
