"""Benchmark: maximal-coordinate dynamics (the lecture notes' recursive KKT solve) against the naive
dense KKT solve, the ABA / C-ABA and Pinocchio, side by side in one process.

Experiments (``--only``, all by default):

* ``scaling``: chains (``wbc.robots.synthetic.chain``) and branching trees (``random_tree``,
  branching 0.5, every joint kind) of 2 to 100 links. Per size: the operation count
  (``n_instructions`` of the traced kernel) and the compiled time of the recursion
  (``maximal``), the ABA (``aba``) and the dense KKT solve (``dense``; traced up to 8 links, timed
  up to 6: beyond, it is too big to compile). ``slope_*``: least-squares slopes of log(cost)
  against log(links) over the upper half of the sizes (the notes predict about 1 for the recursion,
  3 for the dense solve).
* ``robots``: Talos (floating base, 38 velocities): the recursion (``q̈`` only, and with the joint
  reaction wrenches), wbc's ABA, Pinocchio's ``aba`` and ``aba`` + ``rnea`` (Pinocchio's way to
  get the joint wrenches ``data.f``); G1 with parallel ankles (rotor-free: Pinocchio can express it;
  4 point closures, 12 rows): the recursion with its Schur complement, C-ABA, Pinocchio's
  ``constraintDynamics``; the MIT humanoid (rotor couplings): the recursion and C-ABA. Every side's
  result is checked against its anchor before timing.
* ``loops``: ``wbc.robots.clustered.rod_chain(24, k)``, a 24-link chain braced by ``k`` rods,
  ``3k`` loop-closure rows: ops and time of the recursion, C-ABA and ``constraintDynamics``, and
  the fill-in of the KKT factorization (:mod:`wbc.algorithms.maximal.structure`: the recursion's order,
  each loop at the common ancestor of its bodies; loops last, the ``SCHUR`` variant; the natural order);
  the ``SCHUR`` variant's cost beside the recursion's.
* ``fill``: sparsity plots of the KKT matrix and of its factor for a chain, a tree,
  ``rod_chain(12, 3)`` (loops eliminated where they close, and last) and the G1 parallel ankle.

Timing: compiled kernels through ``Kernel.run`` with their inputs bound, Pinocchio's Python calls;
interleaved blocks (:mod:`benchmarks.harness`): a side's figure is the median of its block means,
``spread`` the interquartile range over median. Only ratios inside one run are meaningful.

Usage::

    python -m benchmarks.maximal                   # tables
    python -m benchmarks.maximal --json            # one JSON object per line
    python -m benchmarks.maximal --out out/bench_maximal   # also JSON and PNGs there
    python -m benchmarks.maximal --quick           # smoke test
    python -m benchmarks.maximal --out DIR --replot   # redraw DIR's PNGs from its JSON
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin

import wbc
from benchmarks import experiments
from benchmarks import pinocchio_adapter as oracle
from benchmarks.experiments import Emit, Log
from benchmarks.harness import Record, bind, loglog_slope, time_sides
from wbc.algorithms.maximal.structure import Ordering, fill_in, patterns
from wbc.codegen import algorithm_functions as tk
from wbc.codegen import cluster_functions as ck
from wbc.codegen.maximal_functions import maximal_function
from wbc.robots import clustered as loops_robots
from wbc.robots import synthetic

RECURSIVE, SCHUR, DENSE = wbc.MaximalMethod.RECURSIVE, wbc.MaximalMethod.SCHUR, wbc.MaximalMethod.DENSE


def _check(what: str, ours, theirs, tol: float = 1e-8) -> float:
    ours, theirs = np.asarray(ours, float), np.asarray(theirs, float)
    err = float(np.max(np.abs(ours - theirs)) / max(1.0, float(np.max(np.abs(theirs)))))
    if err > tol:
        raise RuntimeError(f"{what}: relative difference {err:.3g}; not timing different quantities")
    return err


def _tree_state(model: wbc.Model, seed: int = 0):
    rng = np.random.default_rng(seed)
    return wbc.random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)


def _cluster_state(cm: wbc.ClusterModel, seed: int = 0):
    rng = np.random.default_rng(seed)
    return cm.random_configuration(rng, scale=0.5), rng.normal(size=cm.nv), rng.normal(size=cm.nv)


# ------------------------------------------------------------------------------------- scaling
def _family(kind: str, n: int) -> wbc.Model:
    if kind == "chain":
        return synthetic.chain(n)
    kinds = [k for k in synthetic.JOINT_KINDS if k != "fixed"]  # n links, n bodies
    # one seed for every size: the draws are made link after link, so each tree extends the smaller ones
    return synthetic.random_tree(n, np.random.default_rng(0), kinds=kinds, branching=0.5, name=f"tree_{n}")


def run_scaling(settings, emit: Emit, log: Log) -> list[Record]:
    records: list[Record] = []
    for kind in ("chain", "tree"):
        for n in settings.sizes:
            model = _family(kind, n)
            q, v, t = _tree_state(model)
            functions = {"maximal": maximal_function(model), "aba": tk.aba_function(model)}
            if n <= settings.dense_ops_max:
                functions["dense"] = maximal_function(model, DENSE)
            ops = {m: f.n_instructions() for m, f in functions.items()}
            sides = {}
            for m, f in functions.items():
                if m == "dense" and n > settings.dense_time_max:
                    continue
                k = experiments.compile_logged(f, log)
                sides[m] = bind(k, q, v, t)
                sides[m]()
                if m != "aba":
                    _check(f"{kind} {n} {m} vs ABA", k.outputs[0], _run(functions["aba"], q, v, t))
            times = time_sides(sides, settings.rounds, settings.block_ms)
            size = fill_in(model).size
            for m in functions:
                rec = {
                    "experiment": "scaling",
                    "case": kind,
                    "method": m,
                    "x": n,
                    "nv": model.nv,
                    "kkt_size": size,
                    "ops": ops[m],
                    "us": round(times[m][0], 3) if m in times else None,
                    "spread": round(times[m][1], 3) if m in times else None,
                }
                emit(rec)
                records.append(rec)
            log(f"scaling: {kind} n={n}: " + ", ".join(f"{m} {ops[m]} ops" for m in ops))
    return records + scaling_summary(records, emit)


def scaling_summary(records: Sequence[Record], emit: Emit) -> list[Record]:
    """Log-log slopes of ops and time against links: the upper half of the sizes for the recursion
    and the ABA, every size from 3 links for the dense solve (it only reaches 8)."""
    out: list[Record] = []
    for kind in ("chain", "tree"):
        for m in ("maximal", "aba", "dense"):
            pts = sorted(
                (r["x"], r["ops"], r["us"])
                for r in records
                if r["experiment"] == "scaling" and "x" in r and r["case"] == kind and r["method"] == m
            )
            half = pts[len(pts) // 2 :] if len(pts) >= 4 else pts
            upper = [p for p in pts if p[0] >= 3] if m == "dense" else half
            timed = [p for p in upper if p[2] is not None]
            if len(upper) < 2:
                continue
            rec = {
                "experiment": "scaling",
                "kind": "summary",
                "case": kind,
                "method": m,
                "slope_ops": round(loglog_slope([p[0] for p in upper], [p[1] for p in upper]), 2),
                "slope_time": round(loglog_slope([p[0] for p in timed], [p[2] for p in timed]), 2)
                if len(timed) >= 2
                else None,
                "fit_links": [upper[0][0], upper[-1][0]],
                "fit_links_time": [timed[0][0], timed[-1][0]] if len(timed) >= 2 else None,
            }
            emit(rec)
            out.append(rec)
    return out


def _run(function, *args) -> np.ndarray:
    out = function(*[np.asarray(a, float) for a in args])
    out = out[0] if isinstance(out, (list, tuple)) else out
    return np.array(out, float).ravel()


# ------------------------------------------------------------------------------------- robots
def _run_once(sides: dict[str, Callable[[], object]]) -> dict[str, Callable[[], object]]:
    """``sides``, each called once (bound kernels then hold their results in ``outputs``)."""
    for side in sides.values():
        side()
    return sides


def _record(case: str, method: str, times, ops: int | None, anchor: str, **extra) -> Record:
    us, spread = times[method]
    rec = {
        "experiment": "robots",
        "case": case,
        "method": method,
        "ops": ops,
        "us": round(us, 3),
        "spread": round(spread, 3),
        "ratio_to_" + anchor.replace(" ", "_"): round(us / times[anchor][0], 3),
    }
    rec.update(extra)
    return rec


def run_robots(settings, emit: Emit, log: Log) -> list[Record]:
    records: list[Record] = []
    # Talos: the recursion against ABA and Pinocchio
    spec = wbc.robots.load("talos")
    model = spec.model
    pm = oracle.catalog_model(spec)
    pd = pm.createData()
    q, v, t = _tree_state(model)
    k_max = experiments.compile_logged(maximal_function(model), log)
    k_react = experiments.compile_logged(maximal_function(model, reactions=True), log)
    k_aba = experiments.compile_logged(tk.aba_function(model), log)
    sides = {
        "maximal": bind(k_max, q, v, t),
        "maximal+reactions": bind(k_react, q, v, t),
        "aba": bind(k_aba, q, v, t),
        "pin.aba": lambda: pin.aba(pm, pd, q, v, t),
        "pin.aba+rnea (data.f)": lambda: pin.rnea(pm, pd, q, v, pin.aba(pm, pd, q, v, t)),
    }
    _run_once(sides)
    expected = pin.aba(pm, pd, q, v, t)
    err = max(_check("talos maximal", k_max.outputs[0], expected), _check("talos aba", k_aba.outputs[0], expected))
    pin.rnea(pm, pd, q, v, expected)
    _check("talos wrenches", k_react.outputs[1], np.array([pd.f[i].vector for i in range(1, pm.njoints)]))
    times = time_sides(sides, settings.rounds, settings.block_ms)
    ops = {"maximal": k_max.n_instructions, "maximal+reactions": k_react.n_instructions, "aba": k_aba.n_instructions}
    for m in sides:
        rec = _record("talos", m, times, ops.get(m), "aba", nv=model.nv, max_error=err)
        rec["ratio_to_pin.aba"] = round(times[m][0] / times["pin.aba"][0], 3)
        if m in ops:
            rec["ops_ratio_to_aba"] = round(ops[m] / ops["aba"], 3)
        emit(rec)
        records.append(rec)
    # loop robots
    cases = [("g1_parallel_ankle_rotor_free", loops_robots.g1_parallel_ankle(geared=False))]
    if not settings.quick:
        cases.append(("mit_humanoid", loops_robots.mit_humanoid()))
    for label, robot in cases:
        cm = robot.model
        y, v, t = _cluster_state(cm)
        k_max = experiments.compile_logged(maximal_function(cm), log)
        k_react = experiments.compile_logged(maximal_function(cm, reactions=True), log)
        k_caba = experiments.compile_logged(ck.c_aba_function(cm), log)
        sides = _run_once(
            {
                "maximal": bind(k_max, y, v, t),
                "maximal+reactions": bind(k_react, y, v, t),
                "c-aba": bind(k_caba, y, v, t),
            }
        )
        err = _check(f"{label} maximal vs C-ABA", k_max.outputs[0], k_caba.outputs[0])
        if "rotor_free" in label:
            ppm = oracle.cluster_model(cm)
            yd = cm.spanning_velocity(y, v)
            tau = np.zeros(ppm.nv)
            tau[cm.independent_v_indices] = t
            call = oracle.constraint_dynamics_call(ppm, oracle.loop_constraint_models(ppm, cm), y, yd, tau)
            err = max(
                err,
                _check(f"{label} maximal vs constraintDynamics", k_max.outputs[0], call()[cm.independent_v_indices]),
            )
            sides["pin.constraintDynamics"] = call
        times = time_sides(sides, settings.rounds, settings.block_ms)
        ops = {
            "maximal": k_max.n_instructions,
            "maximal+reactions": k_react.n_instructions,
            "c-aba": k_caba.n_instructions,
        }
        fill = fill_in(cm)
        for m in sides:
            rec = _record(label, m, times, ops.get(m), "c-aba", nv=cm.nv, spanning_nv=cm.tree.nv, max_error=err)
            if m in ops:
                rec["ops_ratio_to_c-aba"] = round(ops[m] / ops["c-aba"], 3)
            rec["kkt_size"], rec["loop_rows"] = fill.size, _loop_row_count(cm)
            emit(rec)
            records.append(rec)
    return records


def _loop_row_count(cm: wbc.ClusterModel) -> int:
    return int(sum(len(c.dependent) for c in cm.infos))


# ------------------------------------------------------------------------------------- loops
def run_loops(settings, emit: Emit, log: Log) -> list[Record]:
    records: list[Record] = []
    n = 24
    for k in settings.rods:
        cm = loops_robots.rod_chain(n, k).model
        y, v, t = _cluster_state(cm)
        k_max, k_schur = (
            experiments.compile_logged(maximal_function(cm), log),
            experiments.compile_logged(maximal_function(cm, SCHUR), log),
        )
        k_caba = experiments.compile_logged(ck.c_aba_function(cm), log)
        sides = _run_once(
            {"maximal": bind(k_max, y, v, t), "maximal (schur)": bind(k_schur, y, v, t), "c-aba": bind(k_caba, y, v, t)}
        )
        err = _check(f"rod_chain {k} maximal vs C-ABA", k_max.outputs[0], k_caba.outputs[0])
        err = max(err, _check(f"rod_chain {k} schur vs C-ABA", k_schur.outputs[0], k_caba.outputs[0]))
        ppm = oracle.cluster_model(cm)
        yd = cm.spanning_velocity(y, v)
        tau = np.zeros(ppm.nv)
        tau[cm.independent_v_indices] = t
        models = oracle.loop_constraint_models(ppm, cm)
        call = oracle.constraint_dynamics_call(ppm, models, y, yd, tau)
        err = max(
            err, _check(f"rod_chain {k} vs constraintDynamics", k_max.outputs[0], call()[cm.independent_v_indices])
        )
        sides["pin.constraintDynamics"] = call
        times = time_sides(sides, settings.rounds, settings.block_ms)
        recursive, natural = fill_in(cm, Ordering.RECURSIVE), fill_in(cm, Ordering.NATURAL)
        schur = fill_in(cm, Ordering.SCHUR)
        ops = {
            "maximal": k_max.n_instructions,
            "maximal (schur)": k_schur.n_instructions,
            "c-aba": k_caba.n_instructions,
        }
        for m in sides:
            rec = {
                "experiment": "loops",
                "case": cm.name,
                "method": m,
                "x": 3 * k,
                "rods": k,
                "ops": ops.get(m),
                "us": round(times[m][0], 3),
                "spread": round(times[m][1], 3),
                "kkt_size": recursive.size,
                "nnz_kkt": recursive.nnz_kkt,
                "fill_recursive": recursive.fill,
                "fill_schur": schur.fill,
                "fill_natural": natural.fill,
                "nnz_factor_recursive": recursive.nnz_factor,
                "max_error": err,
            }
            emit(rec)
            records.append(rec)
        log(f"loops: {k} rods: maximal {ops['maximal']} ops, C-ABA {ops['c-aba']} ops, fill {recursive.fill}")
    for m in ("maximal", "maximal (schur)", "c-aba"):
        pts = sorted((r["x"], r["ops"]) for r in records if r["method"] == m)
        if len(pts) < 3:
            continue
        rows, ops = np.array([p[0] for p in pts], float), np.array([p[1] for p in pts], float)
        linear = np.polyfit(rows, ops, 1)
        rec = {
            "experiment": "loops",
            "kind": "summary",
            "case": f"rod_chain_{n}",
            "method": m,
            "ops_at_0_rows": int(ops[0]) if rows[0] == 0 else None,
            "ops_per_row_linear_fit": round(float(linear[0]), 1),
            "ops_ratio_last_to_first": round(float(ops[-1] / ops[0]), 2),
            "rows_range": [int(rows[0]), int(rows[-1])],
        }
        emit(rec)
        records.append(rec)
    return records


# ------------------------------------------------------------------------------------- fill
def fill_cases(quick: bool) -> list[tuple[str, Any, Ordering]]:
    """``(label, model, ordering)`` of the sparsity plots."""
    rods = loops_robots.rod_chain(12, 3).model
    cases: list[tuple[str, Any, Ordering]] = [
        ("chain of 8 links", synthetic.chain(8), Ordering.RECURSIVE),
        ("random tree of 12 links", _family("tree", 12), Ordering.RECURSIVE),
        ("rod_chain(12, 3), 9 loop rows,\nloops at their common ancestors", rods, Ordering.RECURSIVE),
        ("rod_chain(12, 3), loops last (schur)", rods, Ordering.SCHUR),
    ]
    if not quick:
        g1 = loops_robots.g1_parallel_ankle(geared=False).model
        cases.append(("G1 parallel ankle, 12 loop rows", g1, Ordering.RECURSIVE))
    return cases


def run_fill(settings, emit: Emit, log: Log) -> list[Record]:
    records = []
    seen = set()
    for label, model, _ in fill_cases(settings.quick):
        if id(model) in seen:
            continue
        seen.add(id(model))
        for order in Ordering:
            f = fill_in(model, order)
            rec = {
                "experiment": "fill",
                "case": " ".join(label.split()),
                "method": order.value,
                "kkt_size": f.size,
                "nnz_kkt": f.nnz_kkt,
                "nnz_factor": f.nnz_factor,
                "fill": f.fill,
                "loop_fill": f.loop_fill,
            }
            emit(rec)
            records.append(rec)
    return records


EXPERIMENTS = ("scaling", "robots", "loops", "fill")
RUNNERS = {"scaling": run_scaling, "robots": run_robots, "loops": run_loops, "fill": run_fill}


# ------------------------------------------------------------------------------------- output
def _fmt(x: Any) -> str:
    return experiments.cell(x, ".3g", ".0f")


def _robot_line(r: Record) -> str:
    ratios = "  ".join(f"{k}={v}" for k, v in r.items() if k.startswith(("ratio", "ops_ratio")))
    return f"  {r['case']:30s} {r['method']:24s} ops {_fmt(r['ops']):>7s}  {r['us']:9.2f} µs  {ratios}"


def _loop_line(r: Record) -> str:
    return (
        f"  rows {r['x']:3d} {r['method']:24s} ops {_fmt(r['ops']):>7s} {r['us']:9.2f} µs   "
        f"KKT {r['kkt_size']}, fill recursive {r['fill_recursive']}, schur {r.get('fill_schur')}, "
        f"natural {r['fill_natural']}"
    )


def _fill_line(r: Record) -> str:
    return (
        f"  {r['case']:34s} {r['method']:9s} N {r['kkt_size']:4d}  nnz(KKT) {r['nnz_kkt']:6d}  "
        f"nnz(L) {r['nnz_factor']:6d}  fill {r['fill']:5d} (in loop rows {r['loop_fill']})"
    )


def format_tables(records: Sequence[Record]) -> str:
    out = []
    scaling = [r for r in records if r["experiment"] == "scaling" and "x" in r]
    if scaling:
        out.append("scaling: ops / compiled µs against links")
        for kind in ("chain", "tree"):
            for m in ("maximal", "aba", "dense"):
                row = sorted((r["x"], r["ops"], r["us"]) for r in scaling if r["case"] == kind and r["method"] == m)
                if row:
                    cells = "  ".join(f"{x}:{o}/{_fmt(u)}" for x, o, u in row)
                    out.append(f"  {kind:5s} {m:8s} {cells}")
        for r in experiments.summaries(records, "scaling"):
            out.append(
                f"  slope {r['case']:5s} {r['method']:8s} ops {r['slope_ops']:.2f} (links {r['fit_links']}), "
                f"time {_fmt(r['slope_time'])} (links {r['fit_links_time']})"
            )
    robots = [r for r in records if r["experiment"] == "robots"]
    out += experiments.section(
        "\nrobots (compiled wbc kernels, Pinocchio's Python calls; same run)", robots, _robot_line
    )
    loops = [r for r in records if r["experiment"] == "loops" and "x" in r]
    loop_rows = experiments.section("\nloops: rod_chain(24, k), 3k loop-closure rows", loops, _loop_line)
    out += loop_rows
    if loop_rows:
        for r in experiments.summaries(records, "loops"):
            if "ops_per_row_linear_fit" in r:
                out.append(
                    f"  {r['method']}: {r['ops_at_0_rows']} ops without loops, about "
                    f"{r['ops_per_row_linear_fit']} more per loop row (linear fit), "
                    f"x{r['ops_ratio_last_to_first']} over rows {r['rows_range']}"
                )
    fill = [r for r in records if r["experiment"] == "fill"]
    out += experiments.section("\nfill-in of the KKT factorization (dense blocks)", fill, _fill_line)
    return "\n".join(out)


def write_outputs(records: Sequence[Record], out: Path, meta: Record, quick: bool) -> list[Path]:
    written = [experiments.write_json(out / "bench_maximal.json", meta, records)]
    plt = experiments.pyplot()
    scaling = [r for r in records if r["experiment"] == "scaling" and "x" in r]
    if scaling:
        fig, axes = plt.subplots(2, 2, figsize=(11, 8))
        styles = {"maximal": ("o-", "recursive maximal"), "aba": ("s-", "ABA"), "dense": ("^-", "dense KKT")}
        for col, kind in enumerate(("chain", "tree")):
            for row, (key, label) in enumerate((("ops", "operations (n_instructions)"), ("us", "compiled time, µs"))):
                ax = axes[row][col]
                for m, (style, name) in styles.items():
                    pts = sorted((r["x"], r[key]) for r in scaling if r["case"] == kind and r["method"] == m and r[key])
                    if pts:
                        ax.loglog([p[0] for p in pts], [p[1] for p in pts], style, label=name)
                slopes = {
                    r["method"]: r["slope_ops" if key == "ops" else "slope_time"]
                    for r in records
                    if r["experiment"] == "scaling" and r.get("kind") == "summary" and r["case"] == kind
                }
                ax.set_title(
                    f"{kind}s: {label}\nslopes "
                    + ", ".join(f"{styles[m][1]} {_fmt(s)}" for m, s in slopes.items() if s is not None),
                    fontsize=9,
                )
                ax.set_xlabel("links")
                ax.grid(alpha=0.3, which="both")
                ax.legend(fontsize=8)
        written.append(experiments.save_figure(fig, out / "maximal_scaling.png"))
    lp = [r for r in records if r["experiment"] == "loops" and "x" in r]
    if lp:
        fig, axes = plt.subplots(1, 3, figsize=(15, 4))
        for m, style in (
            ("maximal", "o-"),
            ("maximal (schur)", "d--"),
            ("c-aba", "s-"),
            ("pin.constraintDynamics", "^-"),
        ):
            pts = sorted((r["x"], r["ops"], r["us"]) for r in lp if r["method"] == m)
            if pts and pts[0][1] is not None:
                axes[0].plot([p[0] for p in pts], [p[1] for p in pts], style, label=m)
            axes[1].plot([p[0] for p in pts], [p[2] for p in pts], style, label=m)
        pts = sorted({(r["x"], r["fill_recursive"], r.get("fill_schur", 0), r["fill_natural"]) for r in lp})
        axes[2].plot([p[0] for p in pts], [p[1] for p in pts], "o-", label="recursive (loop at its common ancestor)")
        axes[2].plot([p[0] for p in pts], [p[2] for p in pts], "d--", label="leaves to root, loops last (schur)")
        axes[2].plot([p[0] for p in pts], [p[3] for p in pts], "s-", label="natural (bodies, joints, loops)")
        for ax, title in zip(
            axes,
            ("operations", "compiled time, µs (Pinocchio: Python call)", "fill-in of the KKT factor (entries)"),
        ):
            ax.set_xlabel("loop-closure rows (rod_chain(24, k): 3 per rod)")
            ax.set_title(title, fontsize=9)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        written.append(experiments.save_figure(fig, out / "maximal_loops.png"))
    rob = [r for r in records if r["experiment"] == "robots"]
    if rob:
        cases = list(dict.fromkeys(r["case"] for r in rob))
        fig, axes = plt.subplots(1, len(cases), figsize=(5 * len(cases), 4), squeeze=False)
        for ax, c in zip(axes[0], cases):
            rows = [r for r in rob if r["case"] == c]
            ax.barh([r["method"] for r in rows], [r["us"] for r in rows])
            for i, r in enumerate(rows):
                ax.text(
                    r["us"],
                    i,
                    f" {r['us']:.1f} µs" + (f", {r['ops']} ops" if r["ops"] else ""),
                    va="center",
                    fontsize=8,
                )
            ax.set_title(c, fontsize=9)
            ax.set_xlabel("µs per call (same run)")
            ax.set_xlim(0, 1.6 * max(r["us"] for r in rows))
        written.append(experiments.save_figure(fig, out / "maximal_robots.png"))
    if any(r["experiment"] == "fill" for r in records):
        cases = fill_cases(quick)
        fig, axes = plt.subplots(1, len(cases), figsize=(4.2 * len(cases), 4.9), squeeze=False)
        for ax, (label, model, ordering) in zip(axes[0], cases):
            A, L, labels = patterns(model, ordering)
            img = np.zeros(A.shape + (3,))
            img[:] = 1.0
            pivots = np.zeros(A.shape, bool)  # constraint rows' diagonal blocks: zero in A, dense in L
            for _, start, size in labels:
                pivots[start : start + size, start : start + size] = True
            img[L & ~A] = (0.85, 0.1, 0.1)  # fill-in
            img[L & ~A & pivots] = (0.7, 0.7, 0.7)
            img[A] = (0.1, 0.2, 0.6)
            sym = np.swapaxes(img, 0, 1).copy()
            mask = np.triu(np.ones(A.shape, bool), 1)
            img[mask] = sym[mask]
            ax.imshow(img, interpolation="nearest")
            for (kind, _), start, size in labels:
                if kind == "loop":  # a thin frame around each loop block's rows and columns
                    ax.axhspan(start - 0.5, start + size - 0.5, color="orange", alpha=0.15, lw=0)
                    ax.axvspan(start - 0.5, start + size - 0.5, color="orange", alpha=0.15, lw=0)
            f = fill_in(model, ordering)
            ax.set_title(f"{label}\nN={f.size}, nnz(KKT)={f.nnz_kkt}, fill={f.fill}", fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
        fig.suptitle(
            "KKT matrix (blue), fill-in of its LDLᵀ factor (red; grey: the constraint rows' pivot blocks; "
            "orange bands: loop rows), leaves-to-root order",
            fontsize=10,
        )
        written.append(experiments.save_figure(fig, out / "maximal_fill.png", rect=(0, 0, 1, 0.9)))
    return written


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = experiments.experiment_parser(
        "Maximal-coordinate dynamics benchmarks (see the docstring).",
        EXPERIMENTS,
        "bench_maximal.json",
        "few sizes and rounds",
    )
    parser.add_argument("--replot", action="store_true", help="redraw the PNGs of --out from its bench_maximal.json")
    args = experiments.parse_timed(parser, argv)
    args.sizes = (2, 3, 4, 6, 8) if args.quick else (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 100)
    args.dense_ops_max = 4 if args.quick else 8
    args.dense_time_max = 3 if args.quick else 6
    args.rods = (0, 1, 2) if args.quick else (0, 1, 2, 3, 4, 6, 8, 10, 12)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.replot:
        if args.out is None:
            raise SystemExit("--replot needs --out DIR (holding bench_maximal.json)")
        saved = json.loads((args.out / "bench_maximal.json").read_text())
        records = [r for r in saved["records"] if not (r["experiment"] == "scaling" and r.get("kind") == "summary")]
        records += scaling_summary(records, lambda rec: None)
        print(format_tables(records))
        written = write_outputs(records, args.out, saved["meta"], args.quick)
        experiments.log("wrote " + ", ".join(str(p) for p in written))
        return 0
    t0 = time.perf_counter()
    records = experiments.run_experiments(RUNNERS, args.only, args, experiments.json_emitter(args.json))
    meta = {"experiment": "run", "kind": "meta", "wall_s": round(time.perf_counter() - t0, 1), "quick": args.quick}
    return experiments.report(
        args, records, meta, format_tables, lambda rs, out, m: write_outputs(rs, out, m, args.quick)
    )


if __name__ == "__main__":
    raise SystemExit(main())
