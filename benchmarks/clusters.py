"""Benchmark: the cluster paper's speed comparisons (Tables II-IV, Figs. 11 and 13) with wbc, and
compiled C-ABA against Pinocchio 4's ``constraintDynamics``.

Every algorithm is traced once (CasADi SX, common-subexpression elimination) and compiled
(``wbc.codegen``, gcc -O1, cached); ``ops`` is the traced function's ``n_instructions()``; times
are the compiled kernels called as a user would (``kernel(y, v, tau)``), all methods of one
comparison timed side by side in interleaved rounds (``benchmarks.harness``), a method's figure
being the median over rounds of its per-block mean (µs).

Experiments (``--only``, comma-separated):

``tables``  Tables II-IV: per robot (12-link geared chain "GT", 12-link parallel-belt chain "PBT",
            Mini-Cheetah-like, MIT-Humanoid-like, Tello-like, JVRC-1 with rotors; and the G1-like
            humanoid with parallel ankles), the percent time of the approximate and projected
            inverse dynamics relative to C-RNEA (II), of the approximate, projection and Lagrange
            forward dynamics relative to C-ABA (III) and of the approximate and projected inverse
            OSIM relative to C-EFPA (IV, 3D points: the robot's ``contacts``), beside the paper's.
``fig11``   Fig. 11: forward dynamics of GT and PBT chains of 2-24 links: C-ABA, projection,
            Lagrange, approximate; log-log slopes of time and ops over the larger half.
``fig13``   Fig. 13: inverse OSIM of PBT chains of 2-24 links (a 3D point on the last link):
            C-EFPA vs projection; slopes.
``pinocchio`` compiled C-ABA against Pinocchio on the same bodies, same run: the G1-like robot
            with parallel ankles (its rods' loop closures as ``RigidConstraintModel`` s,
            ``constraintDynamics``, exact: the rotor-free variant, which Pinocchio can model) and
            the MIT-Humanoid-like robot (gears and belts are no Pinocchio constraint models: its
            anchors are ``constraintDynamics`` on the spanning tree without the couplings and the
            exact route through mimic joints, ``crba`` + ``nonLinearEffects`` + Cholesky, on the
            geared-only Mini-Cheetah-like robot where mimic joints are exact). Results are
            checked equal before timing.

Output: ``--json`` one JSON object per line (``experiment``, ``case``, ``method``, ``ops``,
``wbc_us``, ``percent`` / ``ratio``...; ``"kind": "summary"`` lines carry slopes and paper
figures); tables otherwise; ``--out DIR`` writes ``bench_clusters.json`` and PNGs (fig11, fig13,
tables). ``--quick`` is a smoke test. Usage::

    python -m benchmarks.clusters                 # full run (~10 min the first time: compiling)
    python -m benchmarks.clusters --quick --json
"""

from __future__ import annotations

import argparse
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
from wbc.codegen import cluster_functions as ck
from wbc.codegen.kernel import Kernel
from wbc.robots import RobotSpec
from wbc.robots import clustered as robots

EXPERIMENTS = ("tables", "fig11", "fig13", "pinocchio")

#: The paper's Tables II-IV (percent time relative to C-RNEA, C-ABA, C-EFPA).
PAPER = {
    "inverse": {
        "approximate": {
            "GT": -40.3,
            "PBT": -36.2,
            "mini_cheetah": -41.0,
            "mit_humanoid": -42.0,
            "tello": -59.6,
            "jvrc1": -37.7,
        },
        "projected": {
            "GT": 38.0,
            "PBT": 37.8,
            "mini_cheetah": 36.7,
            "mit_humanoid": 35.9,
            "tello": 22.4,
            "jvrc1": 36.6,
        },
    },
    "forward": {
        "approximate": {
            "GT": -34.1,
            "PBT": -34.6,
            "mini_cheetah": -35.3,
            "mit_humanoid": -38.6,
            "tello": -49.4,
            "jvrc1": -38.4,
        },
        "projected": {
            "GT": 86.8,
            "PBT": 73.5,
            "mini_cheetah": 21.0,
            "mit_humanoid": 32.5,
            "tello": 22.2,
            "jvrc1": 87.3,
        },
        "lagrange": {
            "GT": 133.1,
            "PBT": 119.8,
            "mini_cheetah": 76.3,
            "mit_humanoid": 106.2,
            "tello": 82.7,
            "jvrc1": 212.8,
        },
    },
    "osim": {
        "approximate": {
            "GT": -35.7,
            "PBT": -52.1,
            "mini_cheetah": -28.6,
            "mit_humanoid": -37.4,
            "tello": -51.4,
            "jvrc1": -22.54,
        },
        "projected": {
            "GT": 51.8,
            "PBT": 6.3,
            "mini_cheetah": 19.0,
            "mit_humanoid": 23.2,
            "tello": 7.80,
            "jvrc1": 107.4,
        },
    },
}
REFERENCE = {"inverse": "cluster", "forward": "cluster", "osim": "cluster"}
METHODS = {
    "inverse": ("cluster", "approximate", "projected"),
    "forward": ("cluster", "approximate", "projected", "lagrange"),
    "osim": ("cluster", "approximate", "projected"),
}
NAMES = {"inverse": "C-RNEA", "forward": "C-ABA", "osim": "C-EFPA"}


def _table_robots(quick: bool) -> list[tuple[str, Callable[[], RobotSpec]]]:
    out = [
        ("GT", lambda: robots.geared_chain(12)),
        ("PBT", lambda: robots.belt_chain(12)),
        ("mini_cheetah", robots.mini_cheetah),
        ("mit_humanoid", robots.mit_humanoid),
        ("tello", robots.tello),
        ("jvrc1", robots.jvrc1),
        ("g1_parallel_ankle", robots.g1_parallel_ankle),
    ]
    return out[:3] if quick else out


def _pinocchio_records(case: str, k: Kernel, times: dict, err, emit: Emit) -> list[Record]:
    """The records (emitted) of one C-ABA against Pinocchio comparison: ``times`` method -> (µs,
    spread), ``"c-aba"`` wbc's, the others Pinocchio's (with their ratio to it)."""
    records = []
    for m, (us, spread) in times.items():
        rec = {
            "experiment": "pinocchio",
            "case": case,
            "method": m,
            "ops": k.n_instructions if m == "c-aba" else None,
            "wbc_us": round(us, 3) if m == "c-aba" else None,
            "pinocchio_us": None if m == "c-aba" else round(us, 3),
            "spread": round(spread, 3),
            "max_error": err,
        }
        if m != "c-aba":
            rec["ratio"] = round(times["c-aba"][0] / us, 3)
        emit(rec)
        records.append(rec)
    return records


def _state(cm: wbc.ClusterModel, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = cm.random_configuration(rng, scale=0.5)
    return y, rng.normal(size=cm.nv), rng.normal(size=cm.nv)


def _timed_methods(kind: str, robot: RobotSpec, methods: Sequence[str], settings, log: Log):
    """``(ops, times)`` of the compiled ``kind`` kernels of ``methods`` on ``robot`` at one random
    state, timed side by side (a method without a model, e.g. no approximate one, is left out)."""
    cm = robot.model
    contacts = [wbc.PointConstraint(f, o) for f, o in robot.contacts]
    y, v, t = _state(cm)
    sides, ops = {}, {}
    for m in methods:
        try:
            k = experiments.compile_logged(_kernels_for(kind, cm, contacts, m), log)
        except wbc.ModelError as e:  # no approximate model (e.g. a body hanging from a rod)
            log(f"    {m}: {e}")
            continue
        ops[m] = k.n_instructions
        sides[m] = bind(k, y) if kind == "osim" else bind(k, y, v, t)
    return ops, time_sides(sides, settings.rounds, settings.block_ms)


def _timing(method: str, ops: dict[str, int], times: dict[str, tuple[float, float]]) -> Record:
    """The fields of a record that say how ``method`` did: its ops, median µs and spread."""
    us, spread = times[method]
    return {"method": method, "ops": ops[method], "wbc_us": round(us, 3), "spread": round(spread, 3)}


def _kernels_for(kind: str, cm: wbc.ClusterModel, contacts, method: str):
    if kind == "inverse":
        return ck.c_rnea_function(cm, method)
    if kind == "forward":
        return ck.c_aba_function(cm, method)
    return ck.c_efpa_function(cm, contacts, method)


# ------------------------------------------------------------------------------------- tables
def run_tables(settings: argparse.Namespace, emit: Emit, log: Log) -> list[Record]:
    records = []
    for label, build in _table_robots(settings.quick):
        robot = build()
        cm = robot.model
        log(f"tables: {label} (nv {cm.nv}, spanning {cm.tree.nv})")
        for kind, methods in METHODS.items():
            ops, times = _timed_methods(kind, robot, methods, settings, log)
            ref = times["cluster"][0]
            for m in times:
                pct = 100.0 * (times[m][0] / ref - 1.0)
                rec = {
                    "experiment": "tables",
                    "case": label,
                    "table": kind,
                    **_timing(m, ops, times),
                    "percent": round(pct, 1),
                    "ops_percent": round(100.0 * (ops[m] / ops["cluster"] - 1.0), 1),
                    "paper_percent": PAPER[kind].get(m, {}).get(label) if m != "cluster" else 0.0,
                    "nv": cm.nv,
                    "spanning_nv": cm.tree.nv,
                }
                emit(rec)
                records.append(rec)
    return records


# ------------------------------------------------------------------------------------- scaling
def _sweep(kind: str, chains: Sequence[str], methods: Sequence[str], settings, emit: Emit, log: Log) -> list[Record]:
    records = []
    experiment = "fig11" if kind == "forward" else "fig13"
    for chain in chains:
        for n in settings.sizes:
            if chain == "PBT" and n % 2:
                continue
            robot = robots.geared_chain(n) if chain == "GT" else robots.belt_chain(n)
            ops, times = _timed_methods(kind, robot, methods, settings, log)
            for m in methods:
                rec = {"experiment": experiment, "case": chain, "x": n, **_timing(m, ops, times)}
                emit(rec)
                records.append(rec)
            log(f"{experiment}: {chain} n={n}: " + ", ".join(f"{m} {times[m][0]:.2f} µs" for m in methods))
    for chain in chains:
        for m in methods:
            pts = sorted((r["x"], r["wbc_us"], r["ops"]) for r in records if r["case"] == chain and r["method"] == m)
            big = pts[len(pts) // 2 :] if len(pts) >= 4 else pts
            if len(big) < 2:
                continue
            x = [p[0] for p in big]
            rec = {
                "experiment": experiment,
                "kind": "summary",
                "case": chain,
                "method": m,
                "slope_time": round(loglog_slope(x, [p[1] for p in big]), 2),
                "slope_ops": round(loglog_slope(x, [p[2] for p in big]), 2),
                "fit_range": [x[0], x[-1]],
            }
            emit(rec)
            records.append(rec)
    return records


def run_fig11(settings, emit: Emit, log: Log) -> list[Record]:
    return _sweep("forward", ("GT", "PBT"), ("cluster", "projected", "lagrange", "approximate"), settings, emit, log)


def run_fig13(settings, emit: Emit, log: Log) -> list[Record]:
    return _sweep("osim", ("PBT",), ("cluster", "projected"), settings, emit, log)


# ------------------------------------------------------------------------------------- Pinocchio
def _check(what: str, ours, theirs, tol: float = 1e-8) -> float:
    ours, theirs = np.asarray(ours, float), np.asarray(theirs, float)
    err = float(np.max(np.abs(ours - theirs)))
    if err > tol * max(1.0, float(np.max(np.abs(theirs)))):
        raise RuntimeError(f"{what}: wbc and Pinocchio differ by {err:.3g}; not timing different quantities")
    return err


def run_pinocchio(settings, emit: Emit, log: Log) -> list[Record]:
    records = []
    # G1 with parallel ankles: loop closures as Pinocchio constraint models (rotor-free, exact)
    for geared in (False, True):
        robot = robots.g1_parallel_ankle(geared=geared)
        cm = robot.model
        y, v, t = _state(cm)
        k = experiments.compile_logged(ck.c_aba_function(cm), log)
        sides = {"c-aba": bind(k, y, v, t)}
        if not geared:
            pm = oracle.cluster_model(cm)
            yd = cm.spanning_velocity(y, v)
            tau = np.zeros(pm.nv)
            tau[cm.independent_v_indices] = t
            call = oracle.constraint_dynamics_call(pm, oracle.loop_constraint_models(pm, cm), y, yd, tau)
            err = _check("G1 C-ABA vs constraintDynamics", k(y, v, t)[0], call()[cm.independent_v_indices])
            sides["constraintDynamics"] = call
            pd = pm.createData()
            sides["pin.aba (spanning tree, loops open)"] = lambda pm=pm, pd=pd, y=y, yd=yd, tau=tau: pin.aba(
                pm, pd, y, yd, tau
            )
        else:
            err = None
        times = time_sides(sides, settings.rounds, settings.block_ms)
        case = f"g1_parallel_ankle{'' if geared else '_rotor_free'}"
        records += _pinocchio_records(case, k, times, err, emit)
    # MIT Humanoid: constraintDynamics on the spanning tree (couplings not expressible) and C-ABA
    robot = robots.mit_humanoid()
    cm = robot.model
    y, v, t = _state(cm)
    k = experiments.compile_logged(ck.c_aba_function(cm), log)
    pm = oracle.cluster_model(cm)
    yd = cm.spanning_velocity(y, v)
    tau = np.zeros(pm.nv)
    tau[cm.independent_v_indices] = t
    err = _check(
        "MIT C-ABA vs KKT", k(y, v, t)[0], oracle.kkt_forward_dynamics(pm, cm, y, yd, tau)[cm.independent_v_indices]
    )
    feet = [
        pin.RigidConstraintModel(
            pin.ContactType.CONTACT_6D,
            pm,
            pm.frames[pm.getFrameId(f)].parentJoint,
            pm.frames[pm.getFrameId(f)].placement,
            pin.LOCAL,
        )
        for f in robot.feet
    ]
    cd_feet = oracle.constraint_dynamics_call(pm, feet, y, yd, tau)
    cd_none = oracle.constraint_dynamics_call(pm, [], y, yd, tau)
    pm_data = pm.createData()
    sides = {
        "c-aba": bind(k, y, v, t),
        "constraintDynamics (spanning tree, no couplings)": cd_none,
        "constraintDynamics (spanning tree, 2 feet 6D)": cd_feet,
        "pin.aba (spanning tree, no couplings)": lambda pd=pm_data: pin.aba(pm, pd, y, yd, tau),
    }
    times = time_sides(sides, settings.rounds, settings.block_ms)
    records += _pinocchio_records("mit_humanoid", k, times, err, emit)
    # Mini Cheetah: the exact route through Pinocchio's mimic joints (CRBA + bias + Cholesky)
    robot = robots.mini_cheetah()
    cm = robot.model
    y, v, t = _state(cm)
    k = experiments.compile_logged(ck.c_aba_function(cm), log)
    pm = _mimic_model(cm)
    order = [cm.joint_names.index(pm.names[i]) for i in range(1, pm.njoints) if pm.names[i] in cm.joint_names]
    vorder = [0, 1, 2, 3, 4, 5] + [6 + o - 1 for o in order[1:]]
    qorder = [0, 1, 2, 3, 4, 5, 6] + [7 + o - 1 for o in order[1:]]
    q = cm.independent_configuration(y)[qorder]
    vm, tm = v[vorder], t[vorder]
    pd = pm.createData()

    def mimic_fd():
        M = pin.crba(pm, pd, q)
        h = pin.nonLinearEffects(pm, pd, q, vm)
        c, low = _cho(M)
        return _cho_solve((c, low), tm - h)

    err = _check("Mini Cheetah C-ABA vs mimic", k(y, v, t)[0][vorder], mimic_fd())
    times = time_sides(
        {"c-aba": bind(k, y, v, t), "mimic crba+nle+cholesky": mimic_fd}, settings.rounds, settings.block_ms
    )
    records += _pinocchio_records("mini_cheetah", k, times, err, emit)
    return records


def _cho(M):
    from scipy.linalg import cho_factor

    return cho_factor(M, lower=False)


def _cho_solve(f, b):
    from scipy.linalg import cho_solve

    return cho_solve(f, b)


def _mimic_model(cm: wbc.ClusterModel) -> pin.Model:
    import xml.etree.ElementTree as ET

    root = ET.fromstring(cm.urdf)
    joints = {j.get("name"): j for j in root.findall("joint")}
    for cl in cm.clusters:
        for coupling in cl.constraints:
            ((src, ratio),) = coupling.sources
            ET.SubElement(joints[coupling.joint], "mimic", {"joint": src, "multiplier": repr(ratio)})
    text = ET.tostring(root, encoding="unicode")
    return pin.buildModelFromXML(text, pin.JointModelFreeFlyer(), mimic=True)


RUNNERS = {"tables": run_tables, "fig11": run_fig11, "fig13": run_fig13, "pinocchio": run_pinocchio}


# ------------------------------------------------------------------------------------- output
def _fmt(x: Any) -> str:
    return experiments.cell(x, "+.1f", ".3g", none="—")


def format_tables(records: Sequence[Record]) -> str:
    out = []
    tab = [r for r in records if r["experiment"] == "tables"]
    for kind, title in (("inverse", "Table II"), ("forward", "Table III"), ("osim", "Table IV")):
        rows = [r for r in tab if r["table"] == kind]
        if not rows:
            continue
        cases = list(dict.fromkeys(r["case"] for r in rows))
        out.append(f"\n{title}: percent time relative to {NAMES[kind]} (wbc measured / ops / paper)")
        out.append("method".ljust(14) + "".join(c[:18].rjust(22) for c in cases))
        for m in METHODS[kind][1:]:
            line = m.ljust(14)
            for c in cases:
                r = next((x for x in rows if x["case"] == c and x["method"] == m), None)
                cell = "—" if r is None else f"{_fmt(r['percent'])}/{_fmt(r['ops_percent'])}/{_fmt(r['paper_percent'])}"
                line += cell.rjust(22)
            out.append(line)
        line = f"{NAMES[kind]} µs".ljust(14)
        for c in cases:
            r = next(x for x in rows if x["case"] == c and x["method"] == "cluster")
            line += f"{r['wbc_us']:.2f} ({r['ops']} ops)".rjust(22)
        out.append(line)
    for exp in ("fig11", "fig13"):
        sums = experiments.summaries(records, exp)
        if sums:
            out.append(
                f"\n{exp}: log-log slopes over n = {sums[0]['fit_range'][0]}..{sums[0]['fit_range'][1]} (time, ops)"
            )
            for r in sums:
                out.append(
                    f"  {r['case']:4s} {r['method']:12s} time {r['slope_time']:5.2f}   ops {r['slope_ops']:5.2f}"
                )
    pins = [r for r in records if r["experiment"] == "pinocchio"]
    if pins:
        out.append("\nCompiled C-ABA against Pinocchio (same run): ratio = C-ABA µs / Pinocchio µs")
        for r in pins:
            us = r["wbc_us"] if r["wbc_us"] is not None else r["pinocchio_us"]
            ratio = f"ratio {r['ratio']:.2f}" if "ratio" in r else ""
            out.append(f"  {r['case']:28s} {r['method']:50s} {us:9.2f} µs  {ratio}")
    return "\n".join(out)


def write_outputs(records: Sequence[Record], out: Path, meta: Record) -> list[Path]:
    written = [experiments.write_json(out / "bench_clusters.json", meta, records)]
    plt = experiments.pyplot()
    for exp, chains, ylabel in (
        ("fig11", ("GT", "PBT"), "forward dynamics, µs"),
        ("fig13", ("PBT",), "inverse OSIM, µs"),
    ):
        pts = [r for r in records if r["experiment"] == exp and "x" in r]
        if not pts:
            continue
        fig, axes = plt.subplots(1, len(chains), figsize=(5.5 * len(chains), 4), squeeze=False)
        for ax, chain in zip(axes[0], chains):
            for m in dict.fromkeys(r["method"] for r in pts):
                xs = [(r["x"], r["wbc_us"]) for r in pts if r["case"] == chain and r["method"] == m]
                if xs:
                    xs.sort()
                    ax.plot([a for a, _ in xs], [b for _, b in xs], "o-", label=m)
            ax.set_title(f"{chain} chain")
            ax.set_xlabel("links")
            ax.set_ylabel(ylabel)
            ax.legend()
            ax.grid(alpha=0.3)
        written.append(experiments.save_figure(fig, out / f"{exp}.png", dpi=120))
    tab = [r for r in records if r["experiment"] == "tables" and r["method"] != "cluster"]
    if tab:
        fig, axes = plt.subplots(1, 3, figsize=(16, 4))
        for ax, kind in zip(axes, ("inverse", "forward", "osim")):
            rows = [r for r in tab if r["table"] == kind]
            cases = list(dict.fromkeys(r["case"] for r in rows))
            methods = list(dict.fromkeys(r["method"] for r in rows))
            w = 0.8 / max(1, 2 * len(methods))
            for i, m in enumerate(methods):
                xs = np.arange(len(cases))
                ours = [
                    next((r["percent"] for r in rows if r["case"] == c and r["method"] == m), np.nan) for c in cases
                ]
                paper = [
                    next((r["paper_percent"] for r in rows if r["case"] == c and r["method"] == m), None) for c in cases
                ]
                ax.bar(xs + (2 * i) * w, ours, w, label=f"{m} (wbc)")
                ax.bar(
                    xs + (2 * i + 1) * w,
                    [np.nan if p is None else p for p in paper],
                    w,
                    label=f"{m} (paper)",
                    alpha=0.5,
                )
            ax.set_xticks(np.arange(len(cases)) + 0.4 - w / 2)
            ax.set_xticklabels(cases, rotation=30, fontsize=8)
            ax.set_title(f"% time vs {NAMES[kind]}")
            ax.axhline(0, color="k", lw=0.5)
            ax.legend(fontsize=7)
        written.append(experiments.save_figure(fig, out / "tables.png", dpi=120))
    return written


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    description = "The cluster paper's speed comparisons with wbc (see the docstring)."
    parser = experiments.experiment_parser(
        description, EXPERIMENTS, "bench_clusters.json", "few robots, sizes and rounds"
    )
    args = experiments.parse_timed(parser, argv)
    args.sizes = (2, 4, 8) if args.quick else (2, 4, 6, 8, 10, 12, 16, 20, 24)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    t0 = time.perf_counter()
    records = experiments.run_experiments(RUNNERS, args.only, args, experiments.json_emitter(args.json))
    meta = {"experiment": "run", "kind": "meta", "wall_s": round(time.perf_counter() - t0, 1), "quick": args.quick}
    return experiments.report(args, records, meta, format_tables, write_outputs)


if __name__ == "__main__":
    raise SystemExit(main())
