"""Benchmark of the wbc control step where robots spend their time, side by side with its anchors.

Scenarios (every step timed; each record gives the step's p50, p99, p99.9, max and first step, µs):

* standing (default): Talos (``talos_reduced``, free-flyer, ``half_sitting``) on two 6D feet, a CoM
  task (weight 1, kp 20), a joint posture task (weight 1e-3, kp 10), μ = 0.3, torque limits from the
  URDF, ``q̈`` integrated kinematically at 1 ms (``v_mean = v + dt/2 q̈``, ``q ← q ⊕ dt v_mean``),
  exactly as the anchors (:mod:`benchmarks.anchors`: TSID and placo in side environments, ``make anchors``);
* ``--lean M``: the CoM target ``M`` m to the left (0.2: the centre-of-pressure bounds bind), back to
  ``half_sitting`` at rest every ``--reset`` steps; ``binding_steps`` counts the steps whose
  minimizer under the equalities broke an inequality (a QP was solved);
* ``--levels 1,2,3``: CoM, pelvis orientation and posture in 1, 2 or 3 priority levels (``--robot
  panda``: the hand pose above the posture); with ``--anchors``, the anchors' two-level problem (the
  CoM a hard constraint: scenario ``priorities``) beside wbc's 2 levels;
* ``--walk talos,g1``: the Walker's loop (:class:`wbc.sim.walking.Walker`, MuJoCo) walking, against the
  same Walker standing, alternately: the step's percentiles per phase (double support, single
  support) with their kernel and QP medians (``Command.timings``), and ratios to standing;
* ``--tail``: the tail over ``--steps`` (default 20 000) steps, first step included, of the standing
  benchmark (a controller built and compiled just before) and of the balance demo's loop
  (:class:`wbc.sim.balance.Balance`), each without and with :func:`wbc.realtime_mode` (garbage
  collector frozen, memory locked; then the controller is warmed up at the loop's state,
  :meth:`~wbc.WholeBodyController.warm_up`), alternately over ``--rounds``; the summary gives each
  variant's medians over the rounds and ``p999_to_p50``. ``preempted`` counts the steps during which the
  OS switched the process out (involuntary context switches, read between steps): on a shared machine
  those steps' times are someone else's, and the ``*_own`` percentiles leave them out; ``gc_steps``
  counts the steps during which Python's garbage collector ran, and the ``*_quiet`` percentiles leave
  out both; ``fault_steps`` counts the steps with a page fault (minor faults, the balance loop's: those
  of its simulator step and logging too). The anchor, ``floor``: the machine's own tail in the same
  run, fixed work (a pure-Python loop calibrated to the standing step's median) timed as the steps are
  (what any code of that length sees here: interrupts, the other cores' load on the shared caches).

* ``--fresh N``: the standing benchmark (``--steps``, default 300) in N fresh processes, one after
  the other: each process's first step (right after ``compile()``, nothing run before in the
  process) against its p50; the medians and the maximum over the processes.

``--anchors`` runs the anchors after wbc (``--rounds N``: alternately, N times; the ratios are the
medians of the per-round ratios, robust to the machine's drifts). Only ratios measured in the same
run mean anything on a shared machine. ``python_us`` is the step's wall time less the compiled code's
own timers (``kernel_us`` and ``qp_us`` come from C clocks on the one-call path).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import resource
import subprocess
import sys
import time
from itertools import product

import numpy as np

import wbc
from benchmarks.anchors.run import ANCHORS, REPOSITORY, run_anchor
from benchmarks.anchors.scenario import percentiles
from wbc import robots, tasks
from wbc.control.shortcut import INFEASIBLE

#: The two force models of a rectangular sole, by their command-line names.
CONTACT_MODELS = {"wrench": wbc.SurfaceContact, "corners": wbc.SurfaceCornersContact}


def build(
    solver: str, contact_model: str, limits: bool = False, levels: int = 0, lean: float = 0.0
) -> tuple[wbc.WholeBodyController, robots.RobotSpec, tasks.CoMTask, tasks.PostureTask]:
    """The anchors' standing controller on Talos, its targets set, then compiled (last: a robot's loop
    sets up, compiles, then reads its sensors and steps; numeric work after ``compile()`` would evict
    the kernel from the caches and the first step would measure that).

    Args:
        limits: also keep every joint inside its position and velocity limits (the controller's
            default limits); else torque limits only, as the anchors.
        levels: 0: the anchors' tasks (CoM and posture, weighted). 1, 2 or 3: CoM, pelvis orientation
            (weight 1, kp 20) and posture in 1 weighted level, in 2 levels (CoM | orientation and
            posture) or in 3 (CoM | orientation | posture): the same problem, strictly ordered.
        lean: the CoM target this far to the left of the initial CoM, m.
    """
    spec = robots.load("talos")
    model = spec.model
    contacts = [CONTACT_MODELS[contact_model](f, spec.sole.length, spec.sole.width, mu=0.3) for f in spec.feet]
    com = tasks.CoMTask(weight=1.0, kp=20.0)
    posture = tasks.PostureTask(model, weight=1e-3, kp=10.0)
    task_list: list[wbc.control.Task] = [com, posture]
    if levels:
        base = model.joints[1].link
        orientation = tasks.OrientationTask(base, weight=1.0, kp=20.0)
        orientation.set_target(wbc.frame_placement(model, spec.q0, base)[0:3, 0:3])
        orientation.set_priority({1: 0, 2: 1, 3: 1}[levels])
        posture.set_priority({1: 0, 2: 1, 3: 2}[levels])
        task_list = [com, orientation, posture]
    ctrl = wbc.WholeBodyController(
        model, task_list, contacts, solver=solver, limits=None if limits else [wbc.TorqueLimit()]
    )
    com.set_target(wbc.center_of_mass(model, spec.q0) + np.array([0.0, lean, 0.0]))
    # with joint limits, the posture target is kept off the position bounds (the grippers rest at their
    # URDF limit in half_sitting: a target there makes the bound bind at every step)
    position_limits = [x for x in ctrl.limits if isinstance(x, wbc.JointPositionLimit)]
    posture.set_target(position_limits[0].inside(spec.q0) if position_limits else spec.q0)
    wbc.integrate(model, spec.q0, np.zeros(model.nv), 1e-3)  # the loop's integrate compiled (once per machine)
    wbc.codegen.background.wait()
    ctrl.compile()
    return ctrl, spec, com, posture


class _Collections:
    """Counts the garbage collector's runs while installed (``with _Collections() as gcs: gcs.count``)."""

    def __init__(self) -> None:
        self.count = 0

    def _on(self, phase: str, info: dict) -> None:
        self.count += phase == "start"

    def __enter__(self) -> _Collections:
        gc.callbacks.append(self._on)
        return self

    def __exit__(self, *exc) -> None:
        gc.callbacks.remove(self._on)


def _usage() -> tuple[int, int]:
    """Involuntary context switches (the OS took the CPU away) and minor page faults of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_nivcsw, usage.ru_minflt


def run(
    steps: int = 2000,
    solver: str = wbc.Solver.DAQP.value,
    contact_model: str = "wrench",
    limits: bool = False,
    levels: int = 0,
    lean: float = 0.0,
    reset: int = 0,
    robot: str = "talos",
    realtime: bool = False,
    priority: int | None = None,
    paced: bool = False,
) -> dict:
    """Stand for ``steps`` ms, timing every step (the first one right after ``compile()``); the JSON record.

    Args:
        lean: the binding scenario: the CoM target this far to the left of the initial CoM, m (0:
            standing, the anchors' scenario).
        reset: with ``lean``, back to ``half_sitting`` at rest every ``reset`` steps (0: never).
        robot: ``"talos"`` (the anchors' controller) or ``"panda"`` (:func:`build_panda`, with ``levels``).
        realtime: the loop in :func:`wbc.realtime_mode`, the controller warmed up at the initial state
            right before it (entering locks the process's memory: the caches are cold after).
        priority: with ``realtime``, the loop's thread under ``SCHED_FIFO`` at this priority.
        paced: each step starts on its 1 ms tick of the wall clock (the loop sleeps between steps).
    """
    if robot == "panda":
        ctrl, spec = build_panda(solver, levels)
    else:
        ctrl, spec, _, _ = build(solver, contact_model, limits, levels, lean)
    model, dt = spec.model, 1e-3
    q, v = spec.q0.copy(), np.zeros(model.nv)  # nothing between compile() and the first step
    t_step, t_kernel, t_qp = np.zeros(steps), np.zeros(steps), np.zeros(steps)
    preempted = np.zeros(steps, dtype=bool)
    collected = np.zeros(steps, dtype=bool)
    faulted = np.zeros(steps, dtype=bool)
    failures = binding = 0
    cmd = None
    clock = time.perf_counter
    context = wbc.realtime_mode(priority=priority) if realtime else contextlib.nullcontext()
    with context, _Collections() as gcs:
        if realtime:
            ctrl.warm_up(q, v)
        switches, faults = _usage()
        start = clock()
        for i in range(steps):
            if reset and i % reset == 0:
                q, v = spec.q0.copy(), np.zeros(model.nv)
            if paced:
                wbc.realtime.sleep_until(start + i * dt)
            collections = gcs.count
            t0 = clock()
            cmd = ctrl.step(q, v)
            t_step[i] = clock() - t0
            collected[i] = gcs.count != collections
            now, now_faults = _usage()
            preempted[i], faulted[i] = now != switches, now_faults != faults
            t_kernel[i] = cmd.timings["kernel"]
            t_qp[i] = cmd.timings["qp"]
            failures += cmd.status is not wbc.StepStatus.OPTIMAL
            fast = ctrl._plan.shortcut  # after the timing: did the minimizer under the equalities break a row?
            binding += fast is not None and fast(ctrl.regularization) == INFEASIBLE
            v_mean = v + 0.5 * dt * cmd.qdd
            v = v + dt * cmd.qdd
            q = wbc.integrate(model, q, v_mean, dt)
            switches, faults = _usage()
    assert cmd is not None
    com, com0 = wbc.center_of_mass(model, q), wbc.center_of_mass(model, spec.q0)
    normal = sum(c.normal_force(cmd.forces[c.name]) for c in ctrl.contacts)
    t_us = t_step * 1e6
    return {
        "robot": robot,
        "steps": steps,
        "solver": ctrl.solver.name,
        "contact_model": contact_model,
        "joint_limits": limits,
        "levels": levels or 1,
        "scenario": {"lean_m": lean, "reset_steps": reset} if lean else "standing",
        "realtime": realtime,
        "priority": priority if realtime else None,
        "paced": paced,
        "qp": {
            "variables": int(cmd.u.size),
            "equalities": int(sum(c.equality_dim for c in ctrl.contacts)),
            "inequalities": int(sum(c.inequalities()[0].shape[0] for c in ctrl.contacts)),
        },
        "kernel_ops": ctrl.kernel.n_instructions,
        **percentiles(t_us),
        **_own(t_us, preempted, collected),
        "fault_steps": int(faulted.sum()),
        "kernel_us_median": round(float(np.median(t_kernel)), 1),
        "qp_us_median": round(float(np.median(t_qp)), 1),
        "python_us_median": round(float(np.median(t_us - t_kernel - t_qp)), 2),
        "failures": int(failures),
        "binding_steps": int(binding),
        "com_z_change_mm": round(float(com[2] - com0[2]) * 1e3, 3),
        "sum_normal_force_N": round(float(normal), 2),
        "mg_N": round(model.total_mass * 9.81, 2),
    }


def _own(t_us: np.ndarray, preempted: np.ndarray, collected: np.ndarray | None = None) -> dict:
    """The steps the OS preempted, and the percentiles of the others (``*_own``); with ``collected``
    (the steps during which the garbage collector ran), also those of the steps neither preempted nor
    collecting (``*_quiet``)."""
    own = t_us[~preempted] if (~preempted).any() else t_us
    p = percentiles(own)
    record = {
        "preempted": int(preempted.sum()),
        "step_us_p999_own": p["step_us_p999"],
        "step_us_max_own": p["step_us_max"],
    }
    if collected is not None:
        quiet = ~preempted & ~collected
        p = percentiles(t_us[quiet] if quiet.any() else t_us)
        record |= {"gc_steps": int(collected.sum()), "step_us_p999_quiet": p["step_us_p999"]}
        record["step_us_max_quiet"] = p["step_us_max"]
    return record


def build_panda(solver: str, levels: int) -> tuple[wbc.WholeBodyController, robots.RobotSpec]:
    """The Panda (fixed base, default limits): the hand pose (weight 1, kp 50) and the posture
    (weight 1e-3, kp 10), weighted (``levels`` ≤ 1) or the hand above the posture (2)."""
    spec = robots.load("panda")
    model = spec.model
    hand = tasks.FrameTask(spec.hands[0], weight=1.0, kp=50.0)
    posture = tasks.PostureTask(model, weight=1e-3, kp=10.0)
    posture.set_priority(1 if levels >= 2 else 0)
    ctrl = wbc.WholeBodyController(model, [hand, posture], solver=solver)
    hand.set_target(wbc.frame_placement(model, spec.q0, spec.hands[0]))
    position_limits = [x for x in ctrl.limits if isinstance(x, wbc.JointPositionLimit)]
    posture.set_target(position_limits[0].inside(spec.q0) if position_limits else spec.q0)
    wbc.integrate(model, spec.q0, np.zeros(model.nv), 1e-3)  # (see build)
    wbc.codegen.background.wait()
    ctrl.compile()  # last (see build)
    return ctrl, spec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON lines only")
    parser.add_argument("--steps", type=int, default=None, help="control steps (1 ms each; default 2000, --tail 20000)")
    parser.add_argument("--solver", default=wbc.Solver.DAQP.value, help="QP solver (daqp, proxqp, quadprog, osqp)")
    parser.add_argument("--contact-model", default="wrench", choices=["wrench", "corners"])
    parser.add_argument("--anchors", action="store_true", help="also run TSID and placo right after, and report ratios")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="alternate the sides this many times; ratios are the medians of the per-round ratios",
    )
    parser.add_argument(
        "--limits",
        action="store_true",
        help="also run with every joint's position and velocity limits, alternating with the run without "
        "(ratio reported); with --anchors, the ratios to the anchors are those of the run with limits",
    )
    parser.add_argument(
        "--levels",
        default=None,
        help="comma-separated numbers of priority levels (e.g. 1,2,3) of a CoM / orientation / posture "
        "problem, run alternately; reports each one's cost as a ratio to the first",
    )
    parser.add_argument("--robot", default="talos", choices=["talos", "panda"], help="with --levels: the robot")
    parser.add_argument(
        "--lean",
        type=float,
        default=0.0,
        help="the binding scenario: the CoM target this far (m) to the left of the initial CoM (e.g. 0.2: "
        "the centre-of-pressure bounds saturate); the anchors run the same",
    )
    parser.add_argument(
        "--reset", type=int, default=200, help="with --lean: back to half_sitting at rest every N steps (0: never)"
    )
    parser.add_argument("--walk", default=None, help="comma-separated robots (talos, g1): the walking scenario")
    parser.add_argument("--duration", type=float, default=6.0, help="with --walk: seconds of each run")
    parser.add_argument("--tail", action="store_true", help="the tail over --steps steps (default 20 000)")
    parser.add_argument("--fresh", type=int, default=0, help="the first step in this many fresh processes")
    parser.add_argument(
        "--priority", type=int, default=None, help="with --tail: the real-time runs under SCHED_FIFO at this priority"
    )
    parser.add_argument("--paced", action="store_true", help="with --tail: each step on its 1 ms wall-clock tick")
    args = parser.parse_args(argv)
    if args.steps is None:
        args.steps = 20000 if args.tail else 300 if args.fresh else 2000
    if not args.lean:
        args.reset = 0
    if args.walk:
        return _walk_main(args)
    if args.tail:
        return _tail_main(args)
    if args.fresh:
        return _fresh_main(args)
    if args.levels:
        return _levels_main(args)
    if args.limits:
        return _limits_main(args)
    scenario = "lean" if args.lean else "standing"
    lines: list[dict] = []
    ours: list[float] = []
    ratios: dict[str, list[float]] = {name: [] for name in ANCHORS}
    for k in range(max(1, args.rounds)):
        record = run(args.steps, args.solver, args.contact_model, lean=args.lean, reset=args.reset)
        ours.append(record["step_us_median"])
        if k == 0:
            lines.append(record)
        if not args.anchors:
            continue
        for name in ANCHORS:
            anchor = run_anchor(name, scenario, args.steps, args.lean or 0.2, args.reset)
            if anchor is None:
                continue
            if k == 0:
                lines.append(anchor)
            ratios[name].append(ours[-1] / anchor["step_us_median"])
    summary: dict = {"benchmark": scenario, "step_us_median_per_round": ours}
    for name, values in ratios.items():
        if values:
            summary[f"ratio_to_{name}"] = round(float(np.median(values)), 3)
            summary[f"ratios_to_{name}_per_round"] = [round(x, 3) for x in values]
    return _finish(args, lines, summary)


def _print_lines(lines: list[dict]) -> None:
    for line in lines:
        who = line.get("anchor") or (
            f"wbc ({line.get('robot')}, {line.get('solver')}, {line.get('contact_model')}, "
            f"limits {line.get('joint_limits')}, levels {line.get('levels')})"
        )
        standing = (
            f"  CoM z {line['com_z_change_mm']:+.3f} mm  Σf_z {line['sum_normal_force_N']:.1f} N"
            f" (m g {line['mg_N']:.1f})"
            if "com_z_change_mm" in line
            else ""
        )
        print(
            f"{who:58s} p50 {line['step_us_median']:7.1f}  p99 {line['step_us_p99']:7.1f}  "
            f"p99.9 {line['step_us_p999']:7.1f}  max {line['step_us_max']:8.1f}  first {line['first_step_us']:7.1f} µs"
            f"  failures {line['failures']}{standing}"
        )


def _limits_main(args) -> int:
    """With and without joint limits alternately (and the anchors): step costs and their ratios."""
    per_round: dict[str, list[float]] = {"without": [], "with": [], "tsid": [], "placo": []}
    lines: list[dict] = []
    scenario = "lean" if args.lean else "standing"
    for k in range(max(1, args.rounds)):
        for limits in (False, True):
            record = run(args.steps, args.solver, args.contact_model, limits=limits, lean=args.lean, reset=args.reset)
            per_round["with" if limits else "without"].append(record["step_us_median"])
            if k == 0:
                lines.append(record)
        if args.anchors:
            for name in ANCHORS:
                anchor = run_anchor(name, scenario, args.steps, args.lean or 0.2, args.reset)
                if anchor is not None:
                    per_round[name].append(anchor["step_us_median"])
                    if k == 0:
                        lines.append(anchor)
    with_limits = np.array(per_round["with"])
    summary = {
        "benchmark": "joint_limits",
        "step_us_median_with_limits_per_round": per_round["with"],
        "step_us_median_without_per_round": per_round["without"],
        "ratio_with_to_without": round(float(np.median(with_limits / np.array(per_round["without"]))), 3),
    }
    for name in ANCHORS:
        if per_round[name] and len(per_round[name]) == len(with_limits):
            summary[f"ratio_with_limits_to_{name}"] = round(float(np.median(with_limits / per_round[name])), 3)
            summary[f"ratio_without_to_{name}"] = round(
                float(np.median(np.array(per_round["without"]) / per_round[name])), 3
            )
    return _finish(args, lines, summary)


def _finish(args, lines: list[dict], summary: dict) -> int:
    """Print the runs' lines and the summary (JSON lines with ``--json``)."""
    lines.append(summary)
    if not _printed_as_json(args, lines, "step_us_median"):
        print(json.dumps(summary))
    return 0


def _printed_as_json(args, lines: list[dict], key: str) -> bool:
    """Print every line as JSON with ``--json`` (returns True), else the lines holding ``key`` as a table."""
    if args.json:
        for line in lines:
            print(json.dumps(line))
    else:
        _print_lines([x for x in lines if key in x])
    return bool(args.json)


def _levels_main(args) -> int:
    """1, 2, 3... priority levels of the same tasks, alternately: step costs as ratios to the first
    (with ``--anchors``: the anchors' two-level problem, scenario ``priorities``)."""
    try:
        levels = [int(x) for x in args.levels.split(",")]
    except ValueError:
        raise SystemExit(f"--levels takes numbers like 1,2,3, got {args.levels!r}") from None
    if any(n not in (1, 2, 3) for n in levels) or (args.robot == "panda" and max(levels) > 2):
        raise SystemExit("--levels: 1, 2 or 3 levels (the Panda: 1 or 2)")
    per_round: dict[int, list[float]] = {n: [] for n in levels}
    anchors: dict[str, list[float]] = {name: [] for name in ANCHORS}
    lines = []
    for k in range(max(1, args.rounds)):
        for n in levels:
            record = run(args.steps, args.solver, args.contact_model, limits=args.limits, levels=n, robot=args.robot)
            per_round[n].append(record["step_us_median"])
            if k == 0:
                lines.append(record)
        if args.anchors and args.robot == "talos":
            for name in ANCHORS:
                anchor = run_anchor(name, "priorities", args.steps)
                if anchor is not None:
                    anchors[name].append(anchor["step_us_median"])
                    if k == 0:
                        lines.append(anchor)
    first = np.array(per_round[levels[0]])
    summary: dict = {
        "benchmark": "priority_levels",
        "robot": args.robot,
        "joint_limits": bool(args.limits),
        "step_us_median_per_round": {str(n): v for n, v in per_round.items()},
        "ratio_to_first": {str(n): round(float(np.median(np.array(v) / first)), 3) for n, v in per_round.items()},
    }
    if 2 in per_round:
        for name, values in anchors.items():
            if values and len(values) == len(per_round[2]):
                summary[f"ratio_2_levels_to_{name}"] = round(float(np.median(np.array(per_round[2]) / values)), 3)
    return _finish(args, lines, summary)


# ----------------------------------------------------------------------------------- walking
def walk_run(robot: str, duration: float, walking: bool, speed: float = 0.2) -> dict:
    """One run of the Walker's loop (``walking``: forward at ``speed`` m/s, else standing), every
    step's time, kernel and QP time (``Command.timings``) and phase; the record per phase."""
    from wbc.sim.walking import FootPhase, Walker

    walker = Walker(robot)
    if walking:
        walker.walk((speed, 0.0, 0.0), n_steps=max(2, int(duration / walker.params.step_duration) - 1))
    timings: list[tuple[float, float]] = []
    run = walker.run(duration, progress=False, on_step=lambda q, v, cmd: timings.append(
        (cmd.timings["kernel"], cmd.timings["qp"])
    ))  # fmt: skip
    t_us = np.asarray(run["step_us"])
    kernel, qp = np.asarray(timings).T
    swing = list(FootPhase).index(FootPhase.SWING)
    single = (np.asarray(run["phase"]) == swing).any(axis=1)
    phases = {"all": np.ones(t_us.size, dtype=bool)}
    if walking:
        phases |= {"double_support": ~single, "single_support": single}
    record: dict = {"robot": robot, "scenario": "walking" if walking else "standing", "fell": bool(run["fell"])}
    record["steps"] = int(t_us.size)
    record["failures"] = int(np.sum(~np.asarray(run["status"], dtype=bool)))
    for name, mask in phases.items():
        record[name] = {
            "steps": int(mask.sum()),
            **percentiles(t_us[mask]),
            "kernel_us_median": round(float(np.median(kernel[mask])), 1),
            "qp_us_median": round(float(np.median(qp[mask])), 1),
        }
    return record


def _walk_main(args) -> int:
    """Each robot's Walker walking and standing, alternately; the phases' ratios to standing."""
    lines, summary = [], {"benchmark": "walking"}
    for robot in args.walk.split(","):
        ratios: dict[str, list[float]] = {"double_support": [], "single_support": []}
        for k in range(max(1, args.rounds)):
            standing = walk_run(robot, args.duration, walking=False)
            walking = walk_run(robot, args.duration, walking=True)
            if k == 0:
                lines += [standing, walking]
            for phase in ratios:
                ratios[phase].append(walking[phase]["step_us_median"] / standing["all"]["step_us_median"])
        summary[robot] = {f"{phase}_to_standing": round(float(np.median(v)), 3) for phase, v in ratios.items()}
        summary[robot] |= {f"{phase}_per_round": [round(x, 3) for x in v] for phase, v in ratios.items()}
    lines.append(summary)
    for line in lines:
        print(json.dumps(line))
    return 0


# ----------------------------------------------------------------------------------- the tail
def balance_run(steps: int, realtime: bool = False, priority: int | None = None, paced: bool = False) -> dict:
    """The balance demo's loop (Talos, its standard scenario over ``steps`` ms: sway and pushes), every
    step timed, the first one right after the loop's warm-up (:meth:`wbc.sim.balance.Balance.run`);
    ``realtime``: the loop in :func:`wbc.realtime_mode` (``priority``: under ``SCHED_FIFO``);
    ``paced``: each step on its 1 ms tick."""
    from wbc.sim.balance import Balance, standard_scenario

    balance = Balance("talos", standard_scenario("talos", duration=steps * 1e-3))
    preempted: list[bool] = []
    collected: list[bool] = []
    faulted: list[bool] = []
    last: list[int] = []  # switches, collections, faults at the last call (none before the first step)

    def on_step(i, t, q, v, cmd) -> None:  # after the step, before the simulator's: switches, collections
        now = [*_usage(), gcs.count]  # and faults since the last call (the simulator's step and the
        if not last:  # logging included: a superset); the first step: none (reported apart)
            last[:] = now
        preempted.append(now[0] != last[0])
        faulted.append(now[1] != last[1])
        collected.append(now[2] != last[2])
        last[:] = now

    with _Collections() as gcs:
        run = balance.run(progress=False, on_step=on_step, realtime=realtime, priority=priority, paced=paced)
    t_us = np.asarray(run["step_us"])
    mask = np.asarray(preempted[: t_us.size], dtype=bool)
    gc_mask = np.asarray(collected[: t_us.size], dtype=bool)
    return {
        "scenario": "balance_demo",
        "robot": "talos",
        "realtime": realtime,
        "priority": priority if realtime else None,
        "paced": paced,
        "steps": int(t_us.size),
        "fell": bool(run["fell"]),
        **percentiles(t_us),
        **_own(t_us, mask, gc_mask),
        "fault_steps": int(np.sum(faulted[: t_us.size])),
    }


#: The figures of a tail record the summary gives as medians over the rounds.
TAIL_FIGURES = (
    "step_us_median",
    "step_us_p99",
    "step_us_p999",
    "step_us_max",
    "first_step_us",
    "step_us_p999_own",
    "step_us_max_own",
    "p999_to_p50",
    "p999_own_to_p50",
)


def floor_run(steps: int, target_us: float, priority: int | None = None, paced: bool = False) -> dict:
    """The machine's own tail (the anchor of ``--tail``): fixed work, a pure-Python loop calibrated to
    take ``target_us`` µs at the median, timed ``steps`` times as the steps are (preempted runs
    counted; ``priority``: under ``SCHED_FIFO``; ``paced``: each on its 1 ms tick)."""
    clock = time.perf_counter

    def work(n: int) -> None:
        for _ in range(n):
            pass

    n = 64
    while True:  # calibrate: the loop's median over 50 runs near the target
        times = []
        for _ in range(50):
            t0 = clock()
            work(n)
            times.append(clock() - t0)
        took = float(np.median(times)) * 1e6
        if abs(took - target_us) < 0.05 * target_us or n > 1 << 24:
            break
        n = max(1, round(n * target_us / max(took, 1e-3)))
    t_us, preempted = np.zeros(steps), np.zeros(steps, dtype=bool)
    # the loop allocates nothing the collector tracks; frozen anyway
    with wbc.realtime_mode(lock_memory=False, priority=priority):
        start = clock()
        for i in range(steps):
            if paced:
                wbc.realtime.sleep_until(start + i * 1e-3)
            switches = _usage()[0]
            t0 = clock()
            work(n)
            t_us[i] = (clock() - t0) * 1e6
            preempted[i] = _usage()[0] != switches
    return {
        "scenario": "floor",
        "realtime": None,
        "priority": priority,
        "paced": paced,
        "iterations": n,
        **percentiles(t_us),
        **_own(t_us, preempted),
    }


def _tail_main(args) -> int:
    """The tail of the standing benchmark and of the balance demo's loop over ``--steps`` steps, each
    without and with :func:`wbc.realtime_mode`, alternately over ``--rounds``, and the machine's floor."""
    lines = []
    for k in range(max(1, args.rounds)):
        for realtime in (False, True):
            priority = args.priority if realtime else None
            standing = run(
                args.steps, args.solver, args.contact_model, realtime=realtime, priority=priority, paced=args.paced
            )
            records = [standing, balance_run(args.steps, realtime, priority, args.paced)]
            if realtime:
                records.append(floor_run(args.steps, standing["step_us_median"], args.priority, args.paced))
            for record in records:
                record["p999_to_p50"] = round(record["step_us_p999"] / record["step_us_median"], 3)
                record["p999_own_to_p50"] = round(record["step_us_p999_own"] / record["step_us_median"], 3)
                record["round"] = k
                lines.append(record)
    summary: dict = {"benchmark": "tail", "steps": args.steps, "rounds": max(1, args.rounds)}
    for scenario, realtime in product(("standing", "balance_demo", "floor"), (False, True, None)):
        mine = [r for r in lines if r["scenario"] == scenario and r["realtime"] is realtime]
        if mine:
            summary[f"{scenario}{'_realtime' if realtime else ''}"] = {
                key: round(float(np.median([r[key] for r in mine])), 3) for key in TAIL_FIGURES
            }
    lines.append(summary)
    if _printed_as_json(args, lines, "failures"):
        return 0
    keep = ("scenario", "realtime", "preempted", "gc_steps", "fault_steps")
    for line in lines[:-1]:
        print(json.dumps({k: line[k] for k in line if "step_us" in k or "p999" in k or k in keep}))
    print(json.dumps(summary))
    return 0


# ----------------------------------------------------------------------------------- the first step
def _fresh_main(args) -> int:
    """The standing benchmark in ``--fresh`` fresh processes: the first step against the p50."""
    command = [sys.executable, "-m", "benchmarks.controller", "--json", "--steps", str(args.steps)]
    command += ["--solver", args.solver, "--contact-model", args.contact_model]
    records = []
    for _ in range(args.fresh):
        out = subprocess.run(command, capture_output=True, text=True, check=True, cwd=REPOSITORY)
        records.append(json.loads(out.stdout.strip().splitlines()[0]))
    first = np.array([r["first_step_us"] for r in records])
    p50 = np.array([r["step_us_median"] for r in records])
    summary = {
        "benchmark": "first_step",
        "processes": len(records),
        "first_step_us_median": round(float(np.median(first)), 1),
        "first_step_us_max": round(float(first.max()), 1),
        "step_us_median": round(float(np.median(p50)), 1),
        "first_to_p50_median": round(float(np.median(first / p50)), 3),
        "first_to_p50_max": round(float((first / p50).max()), 3),
        "first_step_us_per_process": first.tolist(),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
