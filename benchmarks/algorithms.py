"""Benchmark: the PV-OSIMr and IIM papers' algorithm comparisons, reproduced with wbc.

Operation counts are ``casadi.Function.n_instructions()`` of the traced SX function (what the
PV-OSIMr paper counts; deterministic, machine-independent). With common-subexpression elimination
(CSE, the default of ``wbc.codegen.trace``) unless a field says ``ops_no_cse``. Compiled times are
the kernels of ``wbc.codegen.compile_function`` (cached on disk) called as a user would,
``kernel(q, ...)``, timed side by side with Pinocchio where Pinocchio computes the same quantity.

Experiments (``--only`` selects them, comma-separated):

``fig3``   PV-OSIMr paper Fig. 3. A stem of L revolute links (fixed base) carrying b branches of 7
           links on either side (``robots.synthetic.stem_with_branches_urdf``; with b = 1 the right
           branch hangs from the stem's base, a chain with a weld at each end), a 6D weld on each of
           the 2b branch tips; ops of PV-OSIMr, PV-OSIM, EFPA and LTL versus L. A method stops for
           larger L once one of its traces exceeds its time budget (LTL, O(n³), mainly).
``fig4a``  Fig. 4(a). A fixed serial chain of k² links with 6D welds on links k, 2k, ..., k²
           (n = d = k², m = 6k): PV-OSIMr ~ k², EFPA ~ k³, PV-OSIM ~ k⁴ in the paper; log-log
           slopes fitted over the largest k reached.
``fig4b``  Fig. 4(b). A chain of n links with a 6D weld on every link: PV-OSIMr and EFPA
           quadratic, PV-OSIM cubic in the paper.
``robots`` Figs. 5 and 6 analogues: Talos (2 × 6D feet; 8 × 3D sole corners; feet + both grippers
           6D, the paper's caveat case) and G1 with hands (6D feet + 3D fingertips; fingertips
           only; left-hand fingertips only): ops of all five Delassus methods, the ratio
           PV-OSIM / PV-OSIMr beside the paper's Atlas figures, and compiled times against
           Pinocchio's ``computeDelassusMatrix`` (whose result is checked, after rotating its
           LOCAL blocks to wbc's world-aligned axes, to equal wbc's before anything is timed).
``iim_pendulum``  IIM paper Sec. 6.1: a planar n-link pendulum (fixed base, all axes y),
           (a) only the last joint actuated, (b) fully actuated; ops with and without CSE of
           B̂ = M⁻¹B by IIM, eUFM (m + 1 forward-dynamics runs) and dense (CRBA + LDLᵀ), of
           ``iim+a0`` (one kernel giving a₀ = −M⁻¹h and B̂, i.e. everything q̈ = a₀ + B̂u needs, as the
           paper times it) and of a plain ABA; compiled times for a subset of n, with Pinocchio's
           ``computeMinverse`` (symmetrized, times B) and ``aba``.
``iim_humanoid``  IIM paper Sec. 6.2 analogue: Talos with 32 torques and 8 × 3D sole-corner forces
           (B̂ is 38 × 56): ops and compiled times of the same methods, against Pinocchio's
           ``computeMinverse`` @ B with B = [Sᵀ, Jᵀ] precomputed (``pinocchio_us``) and with the
           contact Jacobians computed in the call (``pinocchio_with_jacobians_us``).

Why ops without CSE matter for eUFM: its m + 1 forward-dynamics runs all start from the same
configuration, so with CSE CasADi merges their shared articulated-inertia pass (IA, U, D⁻¹) and
only the bias-force and acceleration sweeps remain per input; ``ops_no_cse`` counts the m + 1
complete runs, which is the algorithm as the paper describes and times it.

Timing (the machine is shared and noisy, DESIGN.md §6): all sides of one case (every wbc method
and the Pinocchio call) are timed in interleaved rounds, the order rotating from round to round,
each round one block of calls per side sized to about ``--block-ms``; a side's figure is the
median over rounds of its per-block mean (µs); ``ratio = wbc_us / pinocchio_us``. Only ratios
carry over to other machines.

Output: ``--json`` prints one JSON object per line, each with at least ``experiment``, ``case``,
``method``, ``ops``, ``wbc_us`` and ``pinocchio_us`` (null when not compiled / no Pinocchio
equivalent), plus ``x`` (the swept variable), ``ops_no_cse``, ``ratio``, ``trace_s`` ...; lines
with ``"kind": "summary"`` carry the fitted slopes, orderings and paper comparisons. Without
``--json``: one table per experiment on stdout, progress on stderr. ``--out DIR`` also writes
``DIR/bench_algorithms.json`` and one PNG per experiment. ``--quick``: a reduced sweep for a smoke
test (under a minute once the kernels are cached).

Usage::

    python -m benchmarks.algorithms                       # full run, tables (20-30 min)
    python -m benchmarks.algorithms --quick --json        # smoke test
    python -m benchmarks.algorithms --only fig4a,fig4b --out /tmp/bench_alg
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import casadi as ca
import numpy as np

import wbc
from benchmarks import experiments
from benchmarks import pinocchio_adapter as oracle
from benchmarks.experiments import Emit, Log
from benchmarks.harness import Record, interleaved_medians
from wbc import robots
from wbc.algorithms.constraints import Constraint, ResolvedConstraint, resolve
from wbc.algorithms.delassus import delassus_matrix
from wbc.algorithms.dynamics import ArticulatedBodies, aba
from wbc.algorithms.iim import iim, input_matrix
from wbc.algorithms.kinematics import TreeKinematics
from wbc.codegen import Kernel, compile_function, trace
from wbc.robots.synthetic import chain_urdf, stem_with_branches_urdf

__all__ = ["main", "Settings", "EXPERIMENTS"]

EXPERIMENTS: tuple[str, ...] = ("fig3", "fig4a", "fig4b", "robots", "iim_pendulum", "iim_humanoid")
DELASSUS_METHODS: tuple[str, ...] = ("pv-osimr", "pv-osim", "efpa", "ltl", "dense")
RECURSIVE: tuple[str, ...] = ("pv-osimr", "pv-osim", "efpa")
BHAT_METHODS: tuple[str, ...] = ("iim", "eufm", "dense", "iim+a0", "aba")
LABELS: dict[str, str] = {
    "pv-osimr": "PV-OSIMr",
    "pv-osim": "PV-OSIM",
    "efpa": "EFPA",
    "ltl": "LTL-OSIM",
    "dense": "dense",
    "iim": "IIM B̂",
    "eufm": "eUFM B̂",
    "iim+a0": "IIM B̂ + a₀",
    "aba": "ABA",
}
COLORS: dict[str, str] = {
    "pv-osimr": "tab:red",
    "pv-osim": "tab:blue",
    "efpa": "tab:green",
    "ltl": "tab:purple",
    "dense": "tab:gray",
    "iim": "tab:red",
    "eufm": "tab:blue",
    "iim+a0": "tab:orange",
    "aba": "black",
    "pinocchio": "tab:brown",
}
PAPER_SLOPES: dict[str, dict[str, float]] = {
    "fig4a": {"pv-osimr": 2.0, "efpa": 3.0, "pv-osim": 4.0},
    "fig4b": {"pv-osimr": 2.0, "efpa": 2.0, "pv-osim": 3.0},
}
AGREEMENT_TOL = 1e-8  # relative to the magnitude of Pinocchio's result


# ----------------------------------------------------------------------------- settings
@dataclasses.dataclass(frozen=True)
class Settings:
    """What to sweep and how long to time; :meth:`full` and :meth:`quick` are the presets."""

    fig3_branches: tuple[int, ...]
    fig3_stems: tuple[int, ...]
    fig4a_k: tuple[int, ...]
    fig4b_n: tuple[int, ...]
    fit_points: int
    robot_cases: tuple[str, ...]
    pendulum_n: tuple[int, ...]
    pendulum_timed_n: tuple[int, ...]
    humanoid_methods: tuple[str, ...]
    trace_budget_s: dict[str, float]
    ltl_max_nv: int
    rounds: int
    block_ms: float

    @classmethod
    def full(cls) -> Settings:
        return cls(
            fig3_branches=(1, 2, 4, 7, 10),
            fig3_stems=(1, 5, 10, 20, 35, 50, 75, 100),
            fig4a_k=tuple(range(2, 17)),
            fig4b_n=(2, 3, 4, 6, 8, 10, 12, 16, 20, 25, 30, 36, 43, 50),
            fit_points=4,
            robot_cases=tuple(ROBOT_CASES),
            pendulum_n=tuple(range(1, 51)),
            pendulum_timed_n=(5, 10, 20, 30, 50),
            humanoid_methods=BHAT_METHODS,
            trace_budget_s={"ltl": 8.0, "pv-osimr": 120.0, "pv-osim": 120.0, "efpa": 120.0},
            ltl_max_nv=160,
            rounds=15,
            block_ms=10.0,
        )

    @classmethod
    def quick(cls) -> Settings:
        return cls(
            fig3_branches=(1, 2, 4),
            fig3_stems=(1, 5, 10),
            fig4a_k=(2, 3, 4, 5),
            fig4b_n=(2, 4, 6, 8, 10),
            fit_points=3,
            robot_cases=("talos 2x6d feet", "talos 8x3d corners"),
            pendulum_n=tuple(range(1, 11)),
            pendulum_timed_n=(5, 10),
            humanoid_methods=("iim", "dense", "iim+a0", "aba"),
            trace_budget_s={"ltl": 3.0, "pv-osimr": 20.0, "pv-osim": 20.0, "efpa": 20.0},
            ltl_max_nv=60,
            rounds=5,
            block_ms=3.0,
        )


# ----------------------------------------------------------------------------- tracing
@dataclasses.dataclass
class Traced:
    """A traced function, its op counts (with / without CSE) and the tracing wall time."""

    function: ca.Function
    ops: int
    ops_no_cse: int | None
    seconds: float


def c_name(text: str) -> str:
    """A short, valid CasADi function name (letters, digits, single underscores).

    ``wbc.codegen.sanitize`` can produce a double underscore when it truncates a long name (see
    the report of this benchmark), which CasADi rejects; these names stay short enough that
    sanitize leaves them as they are.
    """
    clean = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9]+", "_", text)).strip("_")[:44].strip("_")
    return clean if clean[:1].isalpha() else "f_" + clean


def traced(name: str, inputs: Sequence[tuple[str, int]], build: Callable[..., list], no_cse: bool = False) -> Traced:
    """Trace ``build`` with :func:`wbc.codegen.trace` (CSE on); with ``no_cse`` also count the same
    expression graph without CSE (one tracing, two ``casadi.Function`` objects)."""
    captured: dict[str, Any] = {}

    def capture(*syms):
        outs = build(*syms)
        captured["syms"], captured["outs"] = syms, outs
        return outs

    t0 = time.perf_counter()
    fn = trace(c_name(name), inputs, capture)
    seconds = time.perf_counter() - t0
    ops_no_cse = None
    if no_cse:
        outs = [ca.densify(ca.SX(o)) for o in captured["outs"]]
        plain = ca.Function(fn.name() + "_nocse", list(captured["syms"]), outs, {"cse": False})
        ops_no_cse = int(plain.n_instructions())
    return Traced(fn, int(fn.n_instructions()), ops_no_cse, seconds)


def trace_delassus(model: wbc.Model, constraints: Sequence[ResolvedConstraint], method: str, tag: str) -> Traced:
    """``q -> Λ⁻¹`` by ``method`` (what ``wbc.codegen.algorithm_functions.delassus_function`` builds)."""
    return traced(
        f"dl_{method}_{tag}",
        [("q", model.nq)],
        lambda q: [delassus_matrix(model, TreeKinematics(model, q), constraints, method)],
    )


def trace_bhat(model: wbc.Model, constraints: Sequence[ResolvedConstraint], method: str, tag: str) -> Traced:
    """The IIM-experiment functions, counted with and without CSE.

    ``iim`` / ``eufm`` / ``dense``: ``q -> B̂`` (what ``wbc.codegen.algorithm_functions.input_matrix_function`` builds);
    ``iim+a0``: ``(q, v) -> (a₀, B̂)`` sharing one articulated-body pass (as
    ``wbc.codegen.algorithm_functions.free_acceleration_and_input_matrix_function``); ``aba``: ``(q, v, τ) -> q̈``.
    """
    nq, nv = model.nq, model.nv
    if method == "aba":
        return traced(
            f"ab_{tag}", [("q", nq), ("v", nv), ("tau", nv)], lambda q, v, tau: [aba(model, q, v, tau)], no_cse=True
        )
    if method == "iim+a0":

        def build(q, v):
            kin = TreeKinematics(model, q, v)
            bodies = ArticulatedBodies.compute(model, kin)
            a0 = aba(model, q, v, ca.SX.zeros(nv, 1), kin=kin, bodies=bodies)
            return [a0, iim(model, kin, constraints, bodies)]

        return traced(f"ia_{tag}", [("q", nq), ("v", nv)], build, no_cse=True)
    return traced(
        f"bh_{method}_{tag}",
        [("q", nq)],
        lambda q: [input_matrix(model, TreeKinematics(model, q), constraints, method)],
        no_cse=True,
    )


# ----------------------------------------------------------------------------- timing
def compile_traced(item: Traced, log: Log) -> Kernel:
    t0 = time.perf_counter()
    kernel = compile_function(item.function)
    if kernel.compile_seconds > 0:
        log(f"    compiled {item.function.name()} ({item.ops} ops) in {time.perf_counter() - t0:.1f} s")
    return kernel


def check_close(what: str, ours: np.ndarray, theirs: np.ndarray) -> float:
    """Raise unless ``ours`` equals ``theirs`` to :data:`AGREEMENT_TOL` (relative); returns the error."""
    err = float(np.max(np.abs(ours - theirs))) if ours.size else 0.0
    scale = max(1.0, float(np.max(np.abs(theirs))) if theirs.size else 0.0)
    if not err <= AGREEMENT_TOL * scale:
        raise RuntimeError(
            f"{what}: wbc and Pinocchio differ by {err:.3g} (scale {scale:.3g}); not timing different quantities"
        )
    return err


# ----------------------------------------------------------------------------- helpers
def record(
    experiment: str,
    case: str,
    method: str,
    *,
    ops: int | None = None,
    wbc_us: float | None = None,
    pinocchio_us: float | None = None,
    **extra: Any,
) -> Record:
    """A JSON record with the common fields first; ``ratio`` when both times exist."""
    rec: Record = {
        "experiment": experiment,
        "case": case,
        "method": method,
        "ops": ops,
        "wbc_us": _round(wbc_us),
        "pinocchio_us": _round(pinocchio_us),
    }
    if wbc_us is not None and pinocchio_us is not None:
        rec["ratio"] = round(wbc_us / pinocchio_us, 3)
    rec.update(extra)
    return rec


def traced_record(experiment: str, case: str, method: str, item: Traced, **extra: Any) -> Record:
    """:func:`record` of a traced ``item``: its ops and tracing time, then ``extra``."""
    return record(experiment, case, method, ops=item.ops, trace_s=round(item.seconds, 2), **extra)


def keep(out: list[Record], emit: Emit, records: Sequence[Record]) -> None:
    """Append ``records`` to ``out`` and emit them."""
    for rec in records:
        out.append(rec)
        emit(rec)


def summary(experiment: str, case: str, method: str | None, text: str, **extra: Any) -> Record:
    return {
        "experiment": experiment,
        "kind": "summary",
        "case": case,
        "method": method,
        "ops": None,
        "wbc_us": None,
        "pinocchio_us": None,
        "text": text,
        **extra,
    }


def _round(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(float(x), digits)


def loglog_slope(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of log y against log x."""
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


def welds(frames: Sequence[str]) -> list[Constraint]:
    return [wbc.WeldConstraint(f) for f in frames]


def corner_points(spec: robots.RobotSpec) -> list[Constraint]:
    """Four 3D points per foot at the sole corners."""
    return [wbc.PointConstraint(f, tuple(float(x) for x in c)) for f in spec.feet for c in spec.sole.corners()]


def constraint_dim(constraints: Sequence[Constraint]) -> int:
    return sum(c.dim for c in constraints)


# ----------------------------------------------------------------------------- fig. 3
def stem_constraints(branches: int) -> list[Constraint]:
    return welds([f"tip_{side}{k}" for side in "lr" for k in range(1, branches + 1)])


def run_fig3(settings: Settings, emit: Emit, log: Log) -> list[Record]:
    """Stem with branches: ops of PV-OSIMr, PV-OSIM, EFPA, LTL versus stem length."""
    out: list[Record] = []
    methods = ("pv-osimr", "pv-osim", "efpa", "ltl")
    for b in settings.fig3_branches:
        active = list(methods)
        for L in settings.fig3_stems:
            model = wbc.load_urdf(stem_with_branches_urdf(L, b), False)
            constraints = resolve(model, stem_constraints(b))
            case = f"stem L={L} b={b}"
            for method in list(active):
                if method == "ltl" and model.nv > settings.ltl_max_nv:
                    active.remove(method)
                    log(f"  fig3 b={b}: LTL stopped before L={L} (nv={model.nv} > {settings.ltl_max_nv})")
                    continue
                item = trace_delassus(model, constraints, method, f"stem{L}b{b}")
                rec = traced_record(
                    "fig3", case, method, item, nv=model.nv, x=L, branches=b, m=constraint_dim(constraints)
                )
                keep(out, emit, [rec])
                if item.seconds > settings.trace_budget_s.get(method, math.inf):
                    active.remove(method)
                    log(f"  fig3 b={b}: {method} stopped after L={L} (trace {item.seconds:.1f} s)")
            log(f"  fig3 {case}: " + ", ".join(f"{r['method']} {r['ops']}" for r in out if r["case"] == case))
    keep(out, emit, fig3_summaries(out))
    return out


def _ops_table(records: Sequence[Record], key: str = "x") -> dict[Any, dict[str, int]]:
    table: dict[Any, dict[str, int]] = {}
    for r in records:
        if r.get("kind") != "summary" and r["ops"] is not None:
            table.setdefault(r[key], {})[r["method"]] = r["ops"]
    return table


def _ordering(ops: dict[str, int]) -> str:
    """``A = B < C < D`` by op count."""
    items = sorted(ops.items(), key=lambda kv: kv[1])
    text = LABELS[items[0][0]]
    for (_, v0), (m1, v1) in itertools.pairwise(items):
        text += (" = " if v0 == v1 else " < ") + LABELS[m1]
    return text


def fig3_summaries(records: Sequence[Record]) -> list[Record]:
    """Per branch count: the ordering at the shortest and longest stem, PV-OSIM / PV-OSIMr and
    where EFPA and LTL cross PV-OSIM."""
    out = []
    for b in sorted({r["branches"] for r in records if "branches" in r}):
        table = _ops_table([r for r in records if r.get("branches") == b])
        stems = sorted(table)
        first, last = stems[0], stems[-1]
        both = [L for L in stems if "pv-osim" in table[L] and "pv-osimr" in table[L]]
        ratio_last = table[last]["pv-osim"] / table[last]["pv-osimr"]
        equal = all(table[L]["pv-osim"] == table[L]["pv-osimr"] for L in both)
        efpa_wins = [L for L in stems if table[L].get("efpa", math.inf) < table[L].get("pv-osim", 0)]
        efpa_beats_r = [L for L in stems if table[L].get("efpa", math.inf) < table[L].get("pv-osimr", 0)]
        ltl_stems = [L for L in stems if "ltl" in table[L]]
        text = (
            f"b={b}: L={first}: {_ordering(table[first])}; L={last}: {_ordering(table[last])}. "
            f"PV-OSIM/PV-OSIMr at L={last}: {ratio_last:.2f}"
            + (" (equal at every L)" if equal else "")
            + ". "
            + (f"EFPA < PV-OSIM at L in {efpa_wins}" if efpa_wins else "EFPA never below PV-OSIM")
            + "; "
            + (f"EFPA < PV-OSIMr at L in {efpa_beats_r}" if efpa_beats_r else "EFPA never below PV-OSIMr")
            + ". "
            + (f"LTL traced up to L={max(ltl_stems)}." if ltl_stems else "LTL not traced.")
        )
        out.append(
            summary(
                "fig3",
                f"b={b}",
                None,
                text,
                branches=b,
                ratio_pv_osim_over_pv_osimr=round(ratio_last, 3),
                pv_osim_equals_pv_osimr=equal,
                efpa_below_pv_osim_at=efpa_wins,
            )
        )
    return out


# ----------------------------------------------------------------------------- fig. 4
def run_chain_scaling(experiment: str, sizes: Sequence[int], settings: Settings, emit: Emit, log: Log) -> list[Record]:
    """Fig. 4(a) (``x`` = k: chain of k² links, welds every k links) or 4(b) (``x`` = n: a weld on every link)."""
    out: list[Record] = []
    for x in sizes:
        links = x * x if experiment == "fig4a" else x
        step = x if experiment == "fig4a" else 1
        model = wbc.load_urdf(chain_urdf(links), False)
        constraints = resolve(model, welds([f"link{i}" for i in range(step, links + 1, step)]))
        case = f"chain n={links} " + (f"k={x} welds every {x}" if experiment == "fig4a" else "welds on all")
        for method in RECURSIVE:
            item = trace_delassus(model, constraints, method, f"{experiment}_{x}")
            rec = traced_record(experiment, case, method, item, nv=model.nv, x=x, m=constraint_dim(constraints))
            keep(out, emit, [rec])
        log(f"  {experiment} x={x}: " + ", ".join(f"{r['method']} {r['ops']}" for r in out if r["x"] == x))
    keep(out, emit, slope_summaries(experiment, out, settings.fit_points))
    return out


def slope_summaries(experiment: str, records: Sequence[Record], fit_points: int) -> list[Record]:
    """Log-log slopes over the largest ``fit_points`` sizes (and over all), against the paper's."""
    table = _ops_table(records)
    xs = sorted(table)
    fit_x = xs[-fit_points:]
    out = []
    for method in RECURSIVE:
        slope = loglog_slope(fit_x, [table[x][method] for x in fit_x])
        slope_all = loglog_slope(xs, [table[x][method] for x in xs])
        paper = PAPER_SLOPES[experiment][method]
        var = "k" if experiment == "fig4a" else "n"
        text = (
            f"{LABELS[method]}: slope {slope:.2f} over {var} = {fit_x[0]}..{fit_x[-1]} "
            f"({slope_all:.2f} over all {var}); paper ~{paper:g}"
        )
        out.append(
            summary(
                experiment,
                f"fit {var}={fit_x[0]}..{fit_x[-1]}",
                method,
                text,
                slope=round(slope, 3),
                slope_all=round(slope_all, 3),
                paper_slope=paper,
                fit_x=fit_x,
            )
        )
    last = table[xs[-1]]
    ratios = ", ".join(f"{LABELS[m]}/PV-OSIMr {last[m] / last['pv-osimr']:.2f}" for m in ("pv-osim", "efpa"))
    out.append(
        summary(
            experiment,
            f"ratios {xs[-1]}",
            None,
            f"at {var} = {xs[-1]}: {ratios}",
            ratio_pv_osim=round(last["pv-osim"] / last["pv-osimr"], 3),
            ratio_efpa=round(last["efpa"] / last["pv-osimr"], 3),
        )
    )
    return out


# ----------------------------------------------------------------------------- robots (figs. 5, 6)
@dataclasses.dataclass(frozen=True)
class RobotCase:
    robot: str
    constraints: Callable[[robots.RobotSpec], list[Constraint]]
    paper: str
    paper_ratio: float | None  # PV-OSIM / PV-OSIMr ops in the paper's analogous Atlas case


ROBOT_CASES: dict[str, RobotCase] = {
    "talos 2x6d feet": RobotCase(
        "talos", lambda s: welds(s.feet), "Atlas 6D per foot (Fig. 5a): PV-OSIM = PV-OSIMr", 1.0
    ),
    "talos 8x3d corners": RobotCase("talos", corner_points, "Atlas 4x3D per foot (Fig. 5b): PV-OSIM +19.9 %", 1.199),
    "talos 2x6d feet + 2x6d grippers": RobotCase(
        "talos", lambda s: welds(s.feet + s.hands), "Atlas 6D feet + 6D hands (IV-E caveat): PV-OSIM 1.5 % fewer", 0.985
    ),
    "g1h 2x6d feet + 6x3d fingertips": RobotCase(
        "g1_with_hands",
        lambda s: welds(s.feet) + [wbc.PointConstraint(f) for f in s.fingertips],
        "Atlas 6D feet + 2 Shadow hands 5x3D (Fig. 6d); PV-OSIMr up to 34 % fewer than PV-OSIM over Fig. 6",
        1 / 0.66,
    ),
    "g1h 6x3d fingertips": RobotCase(
        "g1_with_hands",
        lambda s: [wbc.PointConstraint(f) for f in s.fingertips],
        "Atlas + 2 Shadow hands 5x3D (Fig. 6c)",
        None,
    ),
    "g1h 3x3d left fingertips": RobotCase(
        "g1_with_hands",
        lambda s: [wbc.PointConstraint(f) for f in s.fingertips[:3]],
        "Atlas + 1 Shadow hand 5x3D (Fig. 6b)",
        None,
    ),
}


def run_robots(settings: Settings, emit: Emit, log: Log) -> list[Record]:
    """All five Delassus methods on the robot cases: ops, compiled times, Pinocchio side by side."""
    out: list[Record] = []
    specs: dict[str, robots.RobotSpec] = {}
    for case in settings.robot_cases:
        rc = ROBOT_CASES[case]
        spec = specs.setdefault(rc.robot, robots.load(rc.robot))
        constraints = rc.constraints(spec)
        resolved = resolve(spec.model, constraints)
        tag = c_name(case)
        items = {}
        for method in DELASSUS_METHODS:
            items[method] = trace_delassus(spec.model, resolved, method, tag)
            log(f"  robots {case}: {method} {items[method].ops} ops (traced in {items[method].seconds:.1f} s)")
        times = time_delassus_case(spec, constraints, items, settings, log)
        for method, item in items.items():
            rec = traced_record(
                "robots",
                case,
                method,
                item,
                wbc_us=times.get(method),
                pinocchio_us=times.get("pinocchio"),
                robot=spec.name,
                nv=spec.model.nv,
                m=constraint_dim(constraints),
                pinocchio_call="computeDelassusMatrix",
            )
            keep(out, emit, [rec])
        ratio = items["pv-osim"].ops / items["pv-osimr"].ops
        paper = f"paper: {rc.paper}" + (f" (PV-OSIM/PV-OSIMr ≈ {rc.paper_ratio:.3f})" if rc.paper_ratio else "")
        rec = summary(
            "robots",
            case,
            "pv-osim/pv-osimr",
            f"{case}: PV-OSIM/PV-OSIMr ops = {ratio:.3f} ({(ratio - 1) * 100:+.1f} %); {paper}",
            ratio_ops=round(ratio, 4),
            paper_ratio=rc.paper_ratio,
            paper=rc.paper,
        )
        out.append(rec)
        emit(rec)
    return out


def time_delassus_case(
    spec: robots.RobotSpec, constraints: Sequence[Constraint], items: dict[str, Traced], settings: Settings, log: Log
) -> dict[str, float]:
    """Compile every method, check each against Pinocchio (rotated to world axes), time them all."""
    pm = oracle.catalog_model(spec)
    q = wbc.random_configuration(spec.model, np.random.default_rng(7))
    pin_call, rotate = oracle.delassus_call(pm, constraints, q)
    reference = rotate(np.array(pin_call()))
    sides: dict[str, Callable[[], object]] = {}
    for method, item in items.items():
        kernel = compile_traced(item, log)
        check_close(f"{spec.name} Delassus {method}", np.array(kernel(q)[0]), reference)
        sides[method] = _bind(kernel, q)
    sides["pinocchio"] = pin_call
    return interleaved_medians(sides, settings.rounds, settings.block_ms)


def _bind(kernel: Kernel, *args: np.ndarray) -> Callable[[], object]:
    return lambda: kernel(*args)


# ----------------------------------------------------------------------------- IIM
def pendulum_model(n: int) -> tuple[wbc.Model, str]:
    """A planar n-link pendulum (fixed base, every axis y) and its URDF text."""
    urdf = chain_urdf(n, axes="y", name="pendulum")
    return wbc.load_urdf(urdf, False), urdf


def run_iim_pendulum(settings: Settings, emit: Emit, log: Log) -> list[Record]:
    """n-link pendulum, (a) last joint actuated and (b) fully actuated: ops for every n, times for a subset."""
    out: list[Record] = []
    for n in settings.pendulum_n:
        model, urdf = pendulum_model(n)
        variants = {"single": model.with_actuation([f"joint{n}"]), "full": model}
        aba_item = trace_bhat(model, [], "aba", f"pend{n}")
        for variant, vmodel in variants.items():
            items = {
                m: aba_item if m == "aba" else trace_bhat(vmodel, [], m, f"pend{n}_{variant}") for m in BHAT_METHODS
            }
            times: dict[str, float] = {}
            if n in settings.pendulum_timed_n:
                times = time_bhat_case(vmodel, None, urdf, [], items, settings, log)
            for method, item in items.items():
                pin_us = times.get("pinocchio_aba" if method == "aba" else "pinocchio")
                rec = traced_record(
                    "iim_pendulum",
                    f"pendulum n={n} {variant}",
                    method,
                    item,
                    wbc_us=times.get(method),
                    pinocchio_us=pin_us,
                    ops_no_cse=item.ops_no_cse,
                    x=n,
                    variant=variant,
                    inputs=vmodel.n_actuated,
                    pinocchio_call=("aba" if method == "aba" else "computeMinverse@B") if times else None,
                )
                keep(out, emit, [rec])
        log(
            f"  iim_pendulum n={n}: "
            + ", ".join(f"{r['variant'][0]}:{r['method']} {r['ops']}/{r['ops_no_cse']}" for r in out if r.get("x") == n)
        )
    for rec in pendulum_summaries(out):
        out.append(rec)
        emit(rec)
    return out


def pendulum_summaries(records: Sequence[Record]) -> list[Record]:
    """IIM − ABA overhead, eUFM per-input growth and the single-input comparison at the largest n."""
    out = []
    rows = [r for r in records if r.get("kind") != "summary"]
    n_max = max(r["x"] for r in rows)
    for variant in ("single", "full"):
        at = {r["method"]: r for r in rows if r["x"] == n_max and r["variant"] == variant}
        ops = ", ".join(f"{LABELS[m]} {at[m]['ops']}/{at[m]['ops_no_cse']}" for m in BHAT_METHODS)
        text = (
            f"n={n_max} {variant}: ops (CSE / no CSE) {ops}; "
            f"IIM+a0 / ABA = {at['iim+a0']['ops'] / at['aba']['ops']:.2f}, "
            f"eUFM(no CSE) / ABA(no CSE) = {at['eufm']['ops_no_cse'] / at['aba']['ops_no_cse']:.1f}"
        )
        if at["iim"]["wbc_us"] is not None:
            us = ", ".join(f"{LABELS[m]} {at[m]['wbc_us']:.2f}" for m in BHAT_METHODS)
            text += f"; compiled µs {us}, Pinocchio Minv@B {at['iim']['pinocchio_us']:.2f}"
        out.append(summary("iim_pendulum", f"n={n_max} {variant}", None, text, variant=variant))
    # growth of eUFM with the number of inputs (fully actuated: inputs = n), over the upper half of n
    full = {r["x"]: r for r in rows if r["variant"] == "full" and r["method"] == "eufm"}
    iim_full = {r["x"]: r for r in rows if r["variant"] == "full" and r["method"] == "iim+a0"}
    aba_rows = {r["x"]: r for r in rows if r["variant"] == "full" and r["method"] == "aba"}
    xs = sorted(full)[len(full) // 2 :]
    if len(xs) >= 2:
        s_eufm = loglog_slope(xs, [full[x]["ops_no_cse"] for x in xs])
        s_eufm_cse = loglog_slope(xs, [full[x]["ops"] for x in xs])
        s_iim = loglog_slope(xs, [iim_full[x]["ops"] for x in xs])
        s_aba = loglog_slope(xs, [aba_rows[x]["ops"] for x in xs])
        text = (
            f"fully actuated, n = {xs[0]}..{xs[-1]}: log-log slope of ops vs n: eUFM no CSE {s_eufm:.2f}, "
            f"eUFM CSE {s_eufm_cse:.2f}, IIM+a0 {s_iim:.2f}, ABA {s_aba:.2f} "
            "(inputs = n, so eUFM ~ inputs × ABA gives slope 2; B̂ has n² entries)"
        )
        out.append(
            summary(
                "iim_pendulum",
                "growth full",
                None,
                text,
                slope_eufm_no_cse=round(s_eufm, 3),
                slope_eufm=round(s_eufm_cse, 3),
                slope_iim_a0=round(s_iim, 3),
                slope_aba=round(s_aba, 3),
            )
        )
    single = {(r["x"], r["method"]): r["ops"] for r in rows if r["variant"] == "single"}
    wins = [x for (x, m) in sorted(single) if m == "iim" and single[(x, "iim")] < single[(x, "eufm")]]
    out.append(
        summary(
            "iim_pendulum",
            "single input IIM vs eUFM",
            None,
            f"single input: IIM B̂ (CSE) has fewer ops than eUFM B̂ (CSE) at n in {wins or 'none'}",
        )
    )
    return out


def time_bhat_case(
    model: wbc.Model,
    spec: robots.RobotSpec | None,
    urdf: str | None,
    constraints: Sequence[Constraint],
    items: dict[str, Traced],
    settings: Settings,
    log: Log,
) -> dict[str, float]:
    """Compile the IIM-experiment kernels, check them against Pinocchio, time them with Pinocchio's
    ``computeMinverse`` (@ B) and ``aba``; keys: methods, ``pinocchio``, ``pinocchio_with_jacobians``,
    ``pinocchio_aba``."""
    import pinocchio as pin

    pm = oracle.catalog_model(spec) if spec is not None else pin.buildModelFromXML(urdf)
    rng = np.random.default_rng(11)
    q = wbc.random_configuration(model, rng)
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
    pin_calls = oracle.minv_b_calls(pm, model, constraints, q)
    reference = pin_calls["minv@B"]().copy()
    pd_aba = pm.createData()
    pin_aba = lambda: pin.aba(pm, pd_aba, q, v, tau)  # noqa: E731
    aba_reference = np.array(pin_aba())
    sides: dict[str, Callable[[], object]] = {}
    for method, item in items.items():
        kernel = compile_traced(item, log)
        if method == "aba":
            args: tuple[np.ndarray, ...] = (q, v, tau)
            check_close(f"{model.name} ABA", np.array(kernel(*args)[0]).ravel(), aba_reference)
        elif method == "iim+a0":
            args = (q, v)
            outs = kernel(*args)
            check_close(f"{model.name} B̂ {method}", np.array(outs[1]).reshape(reference.shape), reference)
            a0 = np.array(pin.aba(pm, pm.createData(), q, v, np.zeros(model.nv)))
            check_close(f"{model.name} a0", np.array(outs[0]).ravel(), a0)
        else:
            args = (q,)
            check_close(f"{model.name} B̂ {method}", np.array(kernel(*args)[0]).reshape(reference.shape), reference)
        sides[method] = _bind(kernel, *args)
    for name, call in pin_calls.items():
        check_close(f"{model.name} Pinocchio {name}", np.array(call()), reference)
    sides["pinocchio"] = pin_calls["minv@B"]
    if "minv+jac@B" in pin_calls:
        sides["pinocchio_with_jacobians"] = pin_calls["minv+jac@B"]
    sides["pinocchio_aba"] = pin_aba
    return interleaved_medians(sides, settings.rounds, settings.block_ms)


def run_iim_humanoid(settings: Settings, emit: Emit, log: Log) -> list[Record]:
    """Talos, 32 torques + 8 × 3D sole-corner forces: B̂ (38 × 56) by every method, against Pinocchio."""
    spec = robots.load("talos")
    constraints = corner_points(spec)
    resolved = resolve(spec.model, constraints)
    items = {}
    for method in settings.humanoid_methods:
        items[method] = trace_bhat(spec.model, resolved, method, "talos8x3d")
        item = items[method]
        log(f"  iim_humanoid: {method} {item.ops} ops ({item.ops_no_cse} without CSE), traced in {item.seconds:.1f} s")
    times = time_bhat_case(spec.model, spec, None, constraints, items, settings, log)
    out = []
    case = f"talos {spec.model.n_actuated} torques + 8x3d corners"
    for method, item in items.items():
        is_aba = method == "aba"
        rec = traced_record(
            "iim_humanoid",
            case,
            method,
            item,
            wbc_us=times.get(method),
            pinocchio_us=times["pinocchio_aba" if is_aba else "pinocchio"],
            ops_no_cse=item.ops_no_cse,
            inputs=spec.model.n_actuated + constraint_dim(constraints),
            nv=spec.model.nv,
            pinocchio_call="aba" if is_aba else "computeMinverse@B",
            pinocchio_with_jacobians_us=None if is_aba else _round(times.get("pinocchio_with_jacobians")),
        )
        keep(out, emit, [rec])
    iim_ops, aba_ops, iim_us = items["iim"].ops, items["aba"].ops, times["iim"]
    pin_us, pin_jac_us = times["pinocchio"], times["pinocchio_with_jacobians"]
    text = (
        f"{case}: IIM B̂ {iim_ops} ops vs ABA {aba_ops} (×{iim_ops / aba_ops:.2f}); "
        f"IIM+a0 / ABA = {items['iim+a0'].ops / aba_ops:.2f}; compiled IIM B̂ {iim_us:.2f} µs vs Pinocchio "
        f"computeMinverse@B {pin_us:.2f} µs (×{iim_us / pin_us:.2f}), with Jacobians "
        f"{pin_jac_us:.2f} µs (×{iim_us / pin_jac_us:.2f})"
    )
    if "eufm" in items:
        eufm = items["eufm"]
        text += (
            f"; eUFM {eufm.ops}/{eufm.ops_no_cse} ops (CSE/no CSE) = ×{eufm.ops / iim_ops:.2f}/"
            f"×{eufm.ops_no_cse / items['iim'].ops_no_cse:.2f} IIM"
        )
    rec = summary("iim_humanoid", case, None, text)
    out.append(rec)
    emit(rec)
    return out


# ----------------------------------------------------------------------------- tables
def _fmt(x: Any, digits: int = 2) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[k]) for r in cells)) if cells else len(h) for k, h in enumerate(header)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths)), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def _summaries(records: Sequence[Record]) -> list[str]:
    return [f"  {r['text']}" for r in records if r.get("kind") == "summary"]


def format_sweep(
    records: Sequence[Record], experiment: str, methods: Sequence[str], x_name: str, group: str | None = None
) -> str:
    rows = [r for r in records if r["experiment"] == experiment]
    groups = sorted({r[group] for r in rows if group in r}) if group else [None]
    parts = []
    for g in groups:
        table = _ops_table([r for r in rows if g is None or r.get(group) == g])
        body = [[x] + [table[x].get(m) for m in methods] for x in sorted(table)]
        title = f"{experiment} ops" + (f", {group} = {g}" if g is not None else "")
        parts.append(title + "\n" + _table([x_name] + [LABELS[m] for m in methods], body))
    return "\n\n".join(parts) + "\n" + "\n".join(_summaries(rows))


def format_robots(records: Sequence[Record]) -> str:
    rows = [r for r in records if r["experiment"] == "robots" and r.get("kind") != "summary"]
    body = [[r["case"], LABELS[r["method"]], r["ops"], r["wbc_us"], r["pinocchio_us"], r.get("ratio")] for r in rows]
    return (
        "robots: Delassus ops and compiled µs (Pinocchio computeDelassusMatrix, same run)\n"
        + _table(["case", "method", "ops", "wbc µs", "Pinocchio µs", "wbc/Pin"], body)
        + "\n"
        + "\n".join(_summaries([r for r in records if r["experiment"] == "robots"]))
    )


def format_pendulum(records: Sequence[Record]) -> str:
    rows = [r for r in records if r["experiment"] == "iim_pendulum" and r.get("kind") != "summary"]
    parts = []
    for variant in ("single", "full"):
        vr = [r for r in rows if r["variant"] == variant]
        by_n: dict[int, dict[str, Record]] = {}
        for r in vr:
            by_n.setdefault(r["x"], {})[r["method"]] = r
        header = ["n"] + [f"{LABELS[m]} ops (no CSE)" for m in BHAT_METHODS]
        body = [[n] + [f"{by_n[n][m]['ops']} ({by_n[n][m]['ops_no_cse']})" for m in BHAT_METHODS] for n in sorted(by_n)]
        title = "a) single input" if variant == "single" else "b) fully actuated"
        parts.append(f"iim_pendulum ({title}: ops\n" + _table(header, body))
        timed = [n for n in sorted(by_n) if by_n[n]["iim"]["wbc_us"] is not None]
        if timed:
            header = ["n"] + [f"{LABELS[m]} µs" for m in BHAT_METHODS] + ["Pin Minv@B µs", "Pin aba µs", "IIM/Pin"]
            body = [
                [n]
                + [by_n[n][m]["wbc_us"] for m in BHAT_METHODS]
                + [by_n[n]["iim"]["pinocchio_us"], by_n[n]["aba"]["pinocchio_us"], by_n[n]["iim"].get("ratio")]
                for n in timed
            ]
            parts.append(f"iim_pendulum ({variant}): compiled µs\n" + _table(header, body))
    return "\n\n".join(parts) + "\n" + "\n".join(_summaries([r for r in records if r["experiment"] == "iim_pendulum"]))


def format_humanoid(records: Sequence[Record]) -> str:
    rows = [r for r in records if r["experiment"] == "iim_humanoid" and r.get("kind") != "summary"]
    body = [
        [
            LABELS[r["method"]],
            r["ops"],
            r["ops_no_cse"],
            r["wbc_us"],
            r["pinocchio_us"],
            r.get("ratio"),
            r.get("pinocchio_with_jacobians_us"),
        ]
        for r in rows
    ]
    title = rows[0]["case"] if rows else "iim_humanoid"
    header = ["method", "ops", "ops no CSE", "wbc µs", "Pinocchio µs", "wbc/Pin", "Pin with Jacobians µs"]
    return (
        f"iim_humanoid: {title} (Pinocchio: computeMinverse@B, or aba for the ABA row)\n"
        + _table(header, body)
        + "\n"
        + "\n".join(_summaries([r for r in records if r["experiment"] == "iim_humanoid"]))
    )


def format_tables(records: Sequence[Record]) -> str:
    present = {r["experiment"] for r in records}
    parts = []
    if "fig3" in present:
        parts.append(format_sweep(records, "fig3", ("pv-osimr", "pv-osim", "efpa", "ltl"), "L", group="branches"))
    if "fig4a" in present:
        parts.append(format_sweep(records, "fig4a", RECURSIVE, "k"))
    if "fig4b" in present:
        parts.append(format_sweep(records, "fig4b", RECURSIVE, "n"))
    if "robots" in present:
        parts.append(format_robots(records))
    if "iim_pendulum" in present:
        parts.append(format_pendulum(records))
    if "iim_humanoid" in present:
        parts.append(format_humanoid(records))
    return ("\n\n" + "=" * 100 + "\n").join(parts)


# ----------------------------------------------------------------------------- plots
def plot_fig3(records: Sequence[Record], path: Path) -> None:
    plt = experiments.pyplot()
    rows = [r for r in records if r["experiment"] == "fig3" and r.get("kind") != "summary"]
    branches = sorted({r["branches"] for r in rows})
    ncols = 3
    nrows = math.ceil((len(branches) + 1) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 4.0 * nrows), squeeze=False)
    flat = axes.ravel()
    for ax, b in zip(flat, branches):
        table = _ops_table([r for r in rows if r["branches"] == b])
        for method in ("pv-osim", "efpa", "ltl", "pv-osimr"):
            xs = [x for x in sorted(table) if method in table[x]]
            style = "--" if method == "pv-osimr" and b == 1 else "-"
            ax.plot(
                xs, [table[x][method] for x in xs], style, marker="o", ms=3, color=COLORS[method], label=LABELS[method]
            )
        top = max(v for ops in table.values() for m, v in ops.items() if m in RECURSIVE)
        if any(ops.get("ltl", 0) > 1.15 * top for ops in table.values()):
            ax.set_ylim(0, 1.15 * top)
            ax.text(
                0.98,
                0.03,
                "LTL-OSIM clipped (see the table)",
                transform=ax.transAxes,
                ha="right",
                va="bottom",
                fontsize=7,
                color=COLORS["ltl"],
            )
        ax.set_title(f"{b} branch{'es' if b > 1 else ''} per side ({2 * b} × 6D welds)")
        ax.set_xlabel("links in the stem L")
        ax.set_ylabel("operations")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    ax = flat[len(branches)]
    shades = plt.cm.viridis(np.linspace(0.0, 0.85, len(branches)))
    for b, shade in zip(branches, shades):
        table = _ops_table([r for r in rows if r["branches"] == b])
        xs = sorted(table)
        for method, label, style, marker, size in (("pv-osim", "PV-OSIM", "-", "o", 3), ("efpa", "EFPA", ":", "x", 4)):
            ratios = [table[x][method] / table[x]["pv-osimr"] for x in xs]
            ax.plot(xs, ratios, style, color=shade, marker=marker, ms=size, label=f"{label} / PV-OSIMr, b={b}")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_title("op-count ratios to PV-OSIMr")
    ax.set_xlabel("links in the stem L")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    for ax in flat[len(branches) + 1 :]:
        ax.axis("off")
    fig.suptitle(
        "PV-OSIMr paper Fig. 3: stem with b branches of 7 links per side, a 6D weld at every tip (ops with CSE)"
    )
    experiments.save_figure(fig, path)


def plot_chain(records: Sequence[Record], experiment: str, path: Path) -> None:
    plt = experiments.pyplot()
    rows = [r for r in records if r["experiment"] == experiment]
    table = _ops_table(rows)
    fits = {r["method"]: r for r in rows if r.get("kind") == "summary" and "slope" in r}
    xs = sorted(table)
    fig, ax = plt.subplots(figsize=(7, 5))
    for method in RECURSIVE:
        ys = [table[x][method] for x in xs]
        fit = fits[method]
        ax.loglog(
            xs,
            ys,
            "o-",
            ms=4,
            color=COLORS[method],
            label=f"{LABELS[method]}: slope {fit['slope']:.2f} (paper ~{fit['paper_slope']:g})",
        )
        fx = np.asarray(fit["fit_x"], float)
        y_end = table[xs[-1]][method]
        ax.loglog(fx, y_end * (fx / fx[-1]) ** fit["slope"], ":", color=COLORS[method], lw=2.5, alpha=0.6)
    var = "k" if experiment == "fig4a" else "n"
    ax.set_xticks(xs, [str(x) for x in xs], minor=False)
    ax.set_xticks([], minor=True)
    ax.set_xlabel(
        var
        + (
            " (chain of k² links, 6D welds on links k, 2k, ..., k²)"
            if experiment == "fig4a"
            else " (chain of n links, a 6D weld on every link)"
        )
    )
    ax.set_ylabel("operations")
    fit_x = next(iter(fits.values()))["fit_x"]
    panel = "a" if experiment == "fig4a" else "b"
    ax.set_title(f"PV-OSIMr paper Fig. 4({panel}); slopes fitted over {var} = {fit_x[0]}..{fit_x[-1]} (dotted)")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    experiments.save_figure(fig, path)


def plot_robots(records: Sequence[Record], path: Path) -> None:
    plt = experiments.pyplot()
    rows = [r for r in records if r["experiment"] == "robots" and r.get("kind") != "summary"]
    ratios = {r["case"]: r for r in records if r["experiment"] == "robots" and r.get("kind") == "summary"}
    cases = list(dict.fromkeys(r["case"] for r in rows))
    fig, (ax_ops, ax_us) = plt.subplots(2, 1, figsize=(max(9.0, 2.3 * len(cases)), 9))
    width = 0.8 / (len(DELASSUS_METHODS) + 1)
    x = np.arange(len(cases))
    for k, method in enumerate(DELASSUS_METHODS):
        by_case = {r["case"]: r for r in rows if r["method"] == method}
        offs = x + (k - len(DELASSUS_METHODS) / 2) * width
        ax_ops.bar(offs, [by_case[c]["ops"] for c in cases], width, color=COLORS[method], label=LABELS[method])
        ax_us.bar(offs, [by_case[c]["wbc_us"] or 0 for c in cases], width, color=COLORS[method], label=LABELS[method])
    pin = {r["case"]: r["pinocchio_us"] for r in rows}
    offs = x + (len(DELASSUS_METHODS) / 2) * width
    ax_us.bar(
        offs, [pin[c] or 0 for c in cases], width, color=COLORS["pinocchio"], label="Pinocchio computeDelassusMatrix"
    )
    recursive_top = max(r["ops"] for r in rows if r["method"] != "dense")
    ceiling = 1.5 * recursive_top
    ax_ops.set_ylim(0, ceiling)
    dense_x = x + (DELASSUS_METHODS.index("dense") - len(DELASSUS_METHODS) / 2) * width
    for xi, dx, c in zip(x, dense_x, cases):
        paper = f"\n(paper ≈ {ratios[c]['paper_ratio']:.3f})" if ratios[c]["paper_ratio"] else ""
        ax_ops.annotate(
            f"PV-OSIM/PV-OSIMr\n{ratios[c]['ratio_ops']:.3f}{paper}",
            (xi - 2 * width, 1.12 * recursive_top),
            ha="center",
            va="bottom",
            fontsize=7,
        )
        dense_ops = next(r["ops"] for r in rows if r["case"] == c and r["method"] == "dense")
        if dense_ops > ceiling:
            ax_ops.annotate(
                f"{dense_ops / 1e3:.0f}k ↑",
                (dx, 0.97 * ceiling),
                ha="center",
                va="top",
                fontsize=7,
                rotation=90,
                color="white",
            )
    us_top = max([(r["wbc_us"] or 0) for r in rows] + [(r["pinocchio_us"] or 0) for r in rows] + [1e-3])
    ax_us.set_ylim(0, 1.12 * us_top)
    for xi, c in zip(x, cases):
        r0 = next(r for r in rows if r["case"] == c and r["method"] == "pv-osimr")
        if r0.get("ratio") is not None:
            top = max((r["wbc_us"] or 0) for r in rows if r["case"] == c)
            ax_us.annotate(
                f"PV-OSIMr / Pinocchio ×{r0['ratio']:.2f}",
                (xi, top),
                xytext=(0, 4),
                textcoords="offset points",
                ha="center",
                fontsize=7,
            )
    ax_ops.set_ylabel("operations (dense bars clipped)")
    ax_ops.set_title("Delassus matrix on real robots (PV-OSIMr paper Figs. 5, 6 analogues)")
    ax_us.set_ylabel("compiled µs per call (median, interleaved)")
    ax_us.set_title("compiled wbc kernels vs Pinocchio, same run")
    for ax in (ax_ops, ax_us):
        ax.set_xticks(x, [c.replace(" + ", "\n+ ") for c in cases], fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7, ncol=3)
    experiments.save_figure(fig, path)


def plot_pendulum(records: Sequence[Record], path: Path) -> None:
    plt = experiments.pyplot()
    rows = [r for r in records if r["experiment"] == "iim_pendulum" and r.get("kind") != "summary"]
    fig, axes = plt.subplots(2, 2, figsize=(13, 9), squeeze=False)
    for col, variant in enumerate(("single", "full")):
        vr = [r for r in rows if r["variant"] == variant]
        ax = axes[0][col]
        for method in BHAT_METHODS:
            mr = sorted((r for r in vr if r["method"] == method), key=lambda r: r["x"])
            xs = [r["x"] for r in mr]
            ax.semilogy(xs, [r["ops"] for r in mr], "-", color=COLORS[method], label=f"{LABELS[method]} (CSE)")
            ax.semilogy(
                xs,
                [r["ops_no_cse"] for r in mr],
                "--",
                color=COLORS[method],
                alpha=0.7,
                label=f"{LABELS[method]} (no CSE)",
            )
        what = "(a) last joint actuated" if variant == "single" else "(b) fully actuated"
        ax.set_title(f"{what}: ops")
        ax.set_xlabel("links n")
        ax.set_ylabel("operations")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7, ncol=2)
        ax = axes[1][col]
        timed = [r for r in vr if r["wbc_us"] is not None]
        for method in BHAT_METHODS:
            mr = sorted((r for r in timed if r["method"] == method), key=lambda r: r["x"])
            ax.semilogy(
                [r["x"] for r in mr], [r["wbc_us"] for r in mr], "o-", color=COLORS[method], label=LABELS[method]
            )
        for method, label, style in (("iim", "Pinocchio computeMinverse@B", "s--"), ("aba", "Pinocchio aba", "^--")):
            mr = sorted((r for r in timed if r["method"] == method), key=lambda r: r["x"])
            ax.semilogy(
                [r["x"] for r in mr],
                [r["pinocchio_us"] for r in mr],
                style,
                color=COLORS["pinocchio"] if method == "iim" else "tab:olive",
                label=label,
            )
        ax.set_title(f"({'a' if variant == 'single' else 'b'}) compiled time per call")
        ax.set_xlabel("links n")
        ax.set_ylabel("µs (median, interleaved)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    fig.suptitle("IIM paper Sec. 6.1: planar n-link pendulum, B̂ = M⁻¹B by IIM / eUFM / dense vs plain ABA")
    experiments.save_figure(fig, path)


def plot_humanoid(records: Sequence[Record], path: Path) -> None:
    plt = experiments.pyplot()
    rows = [r for r in records if r["experiment"] == "iim_humanoid" and r.get("kind") != "summary"]
    fig, (ax_ops, ax_us) = plt.subplots(1, 2, figsize=(13, 5))
    names = [LABELS[r["method"]] for r in rows]
    x = np.arange(len(rows))
    ax_ops.bar(x - 0.2, [r["ops"] for r in rows], 0.4, label="with CSE", color="tab:blue")
    ax_ops.bar(x + 0.2, [r["ops_no_cse"] for r in rows], 0.4, label="without CSE", color="lightsteelblue")
    for xi, r in zip(x, rows):
        ax_ops.annotate(
            f"{r['ops']}", (xi - 0.2, r["ops"]), xytext=(0, 3), textcoords="offset points", ha="center", fontsize=7
        )
    ax_ops.set_xticks(x, names, fontsize=8)
    ax_ops.set_ylabel("operations")
    ax_ops.set_title("ops")
    ax_ops.legend()
    ax_ops.grid(axis="y", alpha=0.3)
    labels = names + ["Pin Minv@B", "Pin Minv+Jac@B", "Pin aba"]
    bhat_pin = next(r for r in rows if r["method"] != "aba")
    aba_pin = next((r for r in rows if r["method"] == "aba"), None)
    values = [r["wbc_us"] for r in rows] + [
        bhat_pin["pinocchio_us"],
        bhat_pin["pinocchio_with_jacobians_us"],
        aba_pin["pinocchio_us"] if aba_pin else 0,
    ]
    colors = [COLORS[r["method"]] for r in rows] + [COLORS["pinocchio"]] * 3
    xx = np.arange(len(labels))
    ax_us.bar(xx, values, 0.6, color=colors)
    for xi, val in zip(xx, values):
        ax_us.annotate(f"{val:.1f}", (xi, val), xytext=(0, 3), textcoords="offset points", ha="center", fontsize=7)
    ax_us.set_xticks(xx, labels, fontsize=7, rotation=20)
    ax_us.set_ylabel("compiled µs per call (median, interleaved)")
    ax_us.set_title("time, same run")
    ax_us.grid(axis="y", alpha=0.3)
    fig.suptitle(f"IIM paper Sec. 6.2 analogue: {rows[0]['case']} (B̂ {rows[0]['nv']} × {rows[0]['inputs']})")
    experiments.save_figure(fig, path)


def write_outputs(records: Sequence[Record], out: Path, meta: Record) -> list[Path]:
    """``bench_algorithms.json`` and one PNG per experiment present; returns the files written."""
    written = [experiments.write_json(out / "bench_algorithms.json", meta, records)]
    present = {r["experiment"] for r in records}
    plots: list[tuple[str, Callable[[Path], None]]] = [
        ("fig3", lambda p: plot_fig3(records, p)),
        ("fig4a", lambda p: plot_chain(records, "fig4a", p)),
        ("fig4b", lambda p: plot_chain(records, "fig4b", p)),
        ("robots", lambda p: plot_robots(records, p)),
        ("iim_pendulum", lambda p: plot_pendulum(records, p)),
        ("iim_humanoid", lambda p: plot_humanoid(records, p)),
    ]
    for name, draw in plots:
        if name in present:
            path = out / f"{name}.png"
            draw(path)
            written.append(path)
    return written


# ----------------------------------------------------------------------------- driver
RUNNERS: dict[str, Callable[[Settings, Emit, Log], list[Record]]] = {
    "fig3": run_fig3,
    "fig4a": lambda s, e, l: run_chain_scaling("fig4a", s.fig4a_k, s, e, l),
    "fig4b": lambda s, e, l: run_chain_scaling("fig4b", s.fig4b_n, s, e, l),
    "robots": run_robots,
    "iim_pendulum": run_iim_pendulum,
    "iim_humanoid": run_iim_humanoid,
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = experiments.experiment_parser(
        "Reproduce the PV-OSIMr paper's Delassus comparisons (Figs. 3-6) and the IIM paper's "
        "B̂ = M⁻¹B comparisons (Sec. 6) with wbc: CasADi op counts, compiled times, Pinocchio side by side.",
        EXPERIMENTS,
        "bench_algorithms.json",
        "reduced sweeps and timing",
    )
    parser.add_argument(
        "--replot",
        type=Path,
        default=None,
        metavar="JSON",
        help="no benchmark: print the tables of a bench_algorithms.json written by --out "
        "(and redraw its PNGs with --out)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected experiments (see the module docstring); returns the exit status."""
    args = parse_args(argv)
    settings = Settings.quick() if args.quick else Settings.full()
    if args.replot is not None:
        saved = json.loads(args.replot.read_text())
        records, meta = saved["records"], saved["meta"]
        print(format_tables(records))
        if args.out is not None:
            experiments.log("wrote " + ", ".join(str(p) for p in write_outputs(records, args.out, meta)))
        return 0
    t0 = time.perf_counter()
    records = experiments.run_experiments(RUNNERS, args.only, settings, experiments.json_emitter(args.json))
    meta = {
        "experiment": "run",
        "kind": "meta",
        "case": "run",
        "method": None,
        "ops": None,
        "wbc_us": None,
        "pinocchio_us": None,
        "wall_s": round(time.perf_counter() - t0, 1),
        "quick": args.quick,
        "experiments": list(args.only),
        "settings": {k: v for k, v in dataclasses.asdict(settings).items()},
    }
    return experiments.report(args, records, meta, format_tables, write_outputs)


if __name__ == "__main__":
    raise SystemExit(main())
