"""Benchmark of one wbc control step on Talos standing, set up exactly as the anchors.

The anchors (``../shared/anchors/``: TSID and placo) run Talos (``talos_reduced``, free-flyer,
``half_sitting``) on two 6D foot contacts with a CoM task (weight 1, kp 20) and a joint posture task
(weight 1e-3, kp 10), μ = 0.3, torque limits from the URDF, integrating q̈ kinematically at 1 ms
(``v_mean = v + dt/2 q̈``, ``q ← q ⊕ dt v_mean``). This script does the same with
:class:`wbc.WholeBodyController` and prints one JSON line::

    {"robot": "talos", "steps": ..., "step_us_median": ..., "step_us_min": ..., "kernel_us_median": ...,
     "qp_us_median": ..., "failures": ..., "com_z_change_mm": ..., "sum_normal_force_N": ..., "mg_N": ...}

``step_us`` is the wall time of ``controller.step(q, v)`` (input checks, kernel, QP, command);
``qp_us`` is the QP's assembly and solution. Compare it with the anchors run right after on the same
machine (``make anchors`` then their two scripts): absolute times mean little on a shared machine.
``--anchors`` runs them here, side by side, and adds their lines and the ratios; ``--rounds N``
alternates wbc, TSID and placo N times and reports the median of the per-round ratios (robust to
the machine's drifts). ``python_us`` is the step's wall time less the compiled code's own timers
(``kernel_us`` and ``qp_us`` come from C clocks on the one-call path): the Python overhead per step.

``--lean M`` is the binding scenario: the CoM target ``M`` m to the left (0.2: the centre-of-pressure
bounds saturate), the robot put back in ``half_sitting`` at rest every ``--reset`` steps;
``binding_steps`` counts the steps whose minimizer under the equalities broke an inequality (a QP
was solved). The anchors run the same scenario with their own controllers (``anchor_lean.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import wbc
from wbc import robots, tasks
from wbc.control.shortcut import INFEASIBLE

#: The two force models of a rectangular sole, by their command-line names.
CONTACT_MODELS = {"wrench": wbc.SurfaceContact, "corners": wbc.SurfaceCornersContact}

#: The anchors' scripts: ``shared/anchors`` next to the repository (or next to the worktrees' folder).
ANCHORS = next(
    (p / "shared" / "anchors" for p in Path(__file__).resolve().parents if (p / "shared" / "anchors").is_dir()),
    Path(__file__).resolve().parents[2] / "shared" / "anchors",
)


def build(
    solver: str, contact_model: str, limits: bool = False, levels: int = 0
) -> tuple[wbc.WholeBodyController, robots.RobotSpec, tasks.CoMTask, tasks.PostureTask]:
    """The anchors' standing controller on Talos.

    Args:
        limits: also keep every joint inside its position and velocity limits (the controller's
            default limits); else torque limits only, as the anchors.
        levels: 0: the anchors' tasks (CoM and posture, weighted). 1, 2 or 3: CoM, pelvis orientation
            (weight 1, kp 20) and posture in 1 weighted level, in 2 levels (CoM | orientation and
            posture) or in 3 (CoM | orientation | posture): the same problem, strictly ordered.
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
    ctrl.compile()
    com.set_target(wbc.center_of_mass(model, spec.q0))
    # with joint limits, the posture target is kept off the position bounds (the grippers rest at their
    # URDF limit in half_sitting: a target there makes the bound bind at every step)
    position_limits = [x for x in ctrl.limits if isinstance(x, wbc.JointPositionLimit)]
    posture.set_target(position_limits[0].inside(spec.q0) if position_limits else spec.q0)
    return ctrl, spec, com, posture


def run(
    steps: int = 2000,
    solver: str = wbc.Solver.DAQP.value,
    contact_model: str = "wrench",
    limits: bool = False,
    levels: int = 0,
    lean: float = 0.0,
    reset: int = 0,
) -> dict:
    """Stand for ``steps`` ms, timing every step; returns the JSON record.

    Args:
        lean: the binding scenario (:data:`LEAN`): the CoM target this far to the left of the initial
            CoM, m (0: standing, the anchors' scenario).
        reset: with ``lean``, back to ``half_sitting`` at rest every ``reset`` steps (0: never).
    """
    ctrl, spec, com_task, _ = build(solver, contact_model, limits, levels)
    model, dt = spec.model, 1e-3
    q, v = spec.q0.copy(), np.zeros(model.nv)
    com0 = wbc.center_of_mass(model, q)
    if lean:
        com_task.set_target(com0 + np.array([0.0, lean, 0.0]))
    t_step, t_kernel, t_qp = np.zeros(steps), np.zeros(steps), np.zeros(steps)
    failures = binding = 0
    cmd = None
    clock = time.perf_counter
    for i in range(steps):
        if reset and i % reset == 0:
            q, v = spec.q0.copy(), np.zeros(model.nv)
        t0 = clock()
        cmd = ctrl.step(q, v)
        t_step[i] = clock() - t0
        t_kernel[i] = cmd.timings["kernel"]
        t_qp[i] = cmd.timings["qp"]
        failures += cmd.status is not wbc.StepStatus.OPTIMAL
        fast = ctrl._plan.shortcut  # after the timing: did the minimizer under the equalities break a row?
        binding += fast is not None and fast(ctrl.regularization) == INFEASIBLE
        v_mean = v + 0.5 * dt * cmd.qdd
        v = v + dt * cmd.qdd
        q = wbc.integrate(model, q, v_mean, dt)
    com = wbc.center_of_mass(model, q)
    normal = sum(c.normal_force(cmd.forces[c.name]) for c in ctrl.contacts)
    return {
        "robot": "talos",
        "steps": steps,
        "solver": ctrl.solver.name,
        "contact_model": contact_model,
        "joint_limits": limits,
        "levels": levels or 1,
        "scenario": {"lean_m": lean, "reset_steps": reset} if lean else "standing",
        "qp": {
            "variables": int(cmd.u.size),
            "equalities": int(sum(c.equality_dim for c in ctrl.contacts)),
            "inequalities": int(sum(c.inequalities()[0].shape[0] for c in ctrl.contacts)),
        },
        "kernel_ops": ctrl.kernel.n_instructions,
        "step_us_median": round(float(np.median(t_step)) * 1e6, 1),
        "step_us_min": round(float(t_step.min()) * 1e6, 1),
        "kernel_us_median": round(float(np.median(t_kernel)), 1),
        "qp_us_median": round(float(np.median(t_qp)), 1),
        "python_us_median": round(float(np.median(t_step * 1e6 - t_kernel - t_qp)), 2),
        "failures": int(failures),
        "binding_steps": int(binding),
        "com_z_change_mm": round(float(com[2] - com0[2]) * 1e3, 3),
        "sum_normal_force_N": round(float(normal), 2),
        "mg_N": round(model.total_mass * 9.81, 2),
    }


def run_anchor(name: str, steps: int, lean: float = 0.0, reset: int = 0) -> dict | None:
    """Run an anchor script in its side environment; None (with a message) if it is not set up.
    With ``lean``, the binding scenario (``benchmarks/anchor_lean.py`` on the anchor's own build)."""
    root = Path(os.environ.get("WBC_ANCHORS", Path.home() / ".cache" / "wbc-anchors"))
    python = root / name / "bin" / "python"
    script = ANCHORS / f"{name}_talos_stand.py"
    if not python.exists() or not script.exists():
        print(f"anchor {name} not set up (run `make anchors`)", file=sys.stderr)
        return None
    command = [str(python), str(script), str(steps)]
    if lean:
        lean_script = Path(__file__).resolve().parent / "anchor_lean.py"
        command = [str(python), str(lean_script), str(steps), name, str(script), str(lean), str(reset)]
    out = subprocess.run(command, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        print(f"anchor {name} failed:\n{out.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON lines only")
    parser.add_argument("--steps", type=int, default=2000, help="control steps (1 ms each)")
    parser.add_argument("--solver", default=wbc.Solver.DAQP.value, help="QP solver (daqp, proxqp, quadprog, osqp)")
    parser.add_argument("--contact-model", default="wrench", choices=["wrench", "corners"])
    parser.add_argument("--anchors", action="store_true", help="also run TSID and placo right after, and report ratios")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="with --anchors: alternate wbc, TSID and placo this many times; ratios are the "
        "medians of the per-round ratios",
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
    parser.add_argument(
        "--lean",
        type=float,
        default=0.0,
        help="the binding scenario: the CoM target this far (m) to the left of the initial CoM (e.g. 0.2: "
        "the centre-of-pressure bounds saturate); the anchors run the same (benchmarks/anchor_lean.py)",
    )
    parser.add_argument(
        "--reset", type=int, default=200, help="with --lean: back to half_sitting at rest every N steps (0: never)"
    )
    args = parser.parse_args(argv)
    if not args.lean:
        args.reset = 0
    if args.levels:
        return _levels_main(args)
    if args.limits:
        return _limits_main(args)
    record = run(args.steps, args.solver, args.contact_model, lean=args.lean, reset=args.reset)
    lines = [record]
    if args.anchors:
        ratios: dict[str, list[float]] = {"tsid": [], "placo": []}
        ours = [record["step_us_median"]]
        for k in range(max(1, args.rounds)):
            if k:
                ours.append(
                    run(args.steps, args.solver, args.contact_model, lean=args.lean, reset=args.reset)["step_us_median"]
                )
            for name in ("tsid", "placo"):
                anchor = run_anchor(name, args.steps, args.lean, args.reset)
                if anchor is None:
                    continue
                if k == 0:
                    lines.append(anchor)
                ratios[name].append(ours[-1] / anchor["step_us_median"])
        for name, values in ratios.items():
            if values:
                record[f"ratio_to_{name}"] = round(float(np.median(values)), 3)
                record[f"ratios_to_{name}_per_round"] = [round(x, 3) for x in values]
        record["step_us_median_per_round"] = ours
    if args.json:
        for line in lines:
            print(json.dumps(line))
        return 0
    for line in lines:
        who = line.get("anchor", f"wbc ({line.get('solver')}, {line.get('contact_model')})")
        standing = (
            f"  CoM z change {line['com_z_change_mm']:+.3f} mm  Σf_z {line['sum_normal_force_N']:.1f} N "
            f"(m g {line['mg_N']:.1f} N)"
            if "com_z_change_mm" in line
            else ""
        )
        print(
            f"{who:28s} step median {line['step_us_median']:8.1f} µs  min {line['step_us_min']:8.1f} µs  "
            f"failures {line['failures']}{standing}"
        )
    for name in ("tsid", "placo"):
        if f"ratio_to_{name}" in record:
            print(f"ratio wbc / {name}: {record[f'ratio_to_{name}']:.2f}")
    return 0


def _print_lines(lines: list[dict]) -> None:
    for line in lines:
        who = line.get("anchor") or (
            f"wbc ({line.get('solver')}, {line.get('contact_model')}, joint limits {line.get('joint_limits')}, "
            f"levels {line.get('levels')})"
        )
        print(f"{who:60s} step median {line['step_us_median']:8.1f} µs  failures {line['failures']}")


def _limits_main(args) -> int:
    """With and without joint limits alternately (and the anchors): step costs and their ratios."""
    per_round: dict[str, list[float]] = {"without": [], "with": [], "tsid": [], "placo": []}
    lines: list[dict] = []
    for k in range(max(1, args.rounds)):
        for limits in (False, True):
            record = run(args.steps, args.solver, args.contact_model, limits=limits, lean=args.lean, reset=args.reset)
            per_round["with" if limits else "without"].append(record["step_us_median"])
            if k == 0:
                lines.append(record)
        if args.anchors:
            for name in ("tsid", "placo"):
                anchor = run_anchor(name, args.steps, args.lean, args.reset)
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
    for name in ("tsid", "placo"):
        if per_round[name] and len(per_round[name]) == len(with_limits):
            summary[f"ratio_with_limits_to_{name}"] = round(float(np.median(with_limits / per_round[name])), 3)
            summary[f"ratio_without_to_{name}"] = round(
                float(np.median(np.array(per_round["without"]) / per_round[name])), 3
            )
    return _finish(args, lines, summary)


def _finish(args, lines: list[dict], summary: dict) -> int:
    """Print the runs' lines and the summary (JSON lines with ``--json``)."""
    lines.append(summary)
    if args.json:
        for line in lines:
            print(json.dumps(line))
        return 0
    _print_lines([x for x in lines if "step_us_median" in x])
    print(json.dumps(summary))
    return 0


def _levels_main(args) -> int:
    """1, 2, 3... priority levels of the same tasks, alternately: step costs as ratios to the first."""
    try:
        levels = [int(x) for x in args.levels.split(",")]
    except ValueError:
        raise SystemExit(f"--levels takes numbers like 1,2,3, got {args.levels!r}") from None
    if any(n not in (1, 2, 3) for n in levels):
        raise SystemExit("--levels: 1, 2 or 3 levels")
    per_round: dict[int, list[float]] = {n: [] for n in levels}
    lines = []
    for k in range(max(1, args.rounds)):
        for n in levels:
            record = run(args.steps, args.solver, args.contact_model, limits=args.limits, levels=n)
            per_round[n].append(record["step_us_median"])
            if k == 0:
                lines.append(record)
    first = np.array(per_round[levels[0]])
    summary = {
        "benchmark": "priority_levels",
        "joint_limits": bool(args.limits),
        "step_us_median_per_round": {str(n): v for n, v in per_round.items()},
        "ratio_to_first": {str(n): round(float(np.median(np.array(v) / first)), 3) for n, v in per_round.items()},
    }
    return _finish(args, lines, summary)


if __name__ == "__main__":
    raise SystemExit(main())
