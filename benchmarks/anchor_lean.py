"""The binding scenario ("lean") run by an anchor, in the anchor's own environment (no wbc import).

Run by ``python -m benchmarks.controller --lean ... --anchors`` as
``<anchor venv>/bin/python benchmarks/anchor_lean.py STEPS {tsid|placo} <anchor script> LEAN RESET``
(STEPS first: the anchor scripts read it as their first argument when loaded):
it builds the anchor's standing controller with the anchor's own ``build()`` (from its script in
``shared/anchors``, loaded with ``runpy``), moves its CoM target ``LEAN`` m to the left of the
initial CoM, puts the robot back in ``half_sitting`` at rest every ``RESET`` steps (0: never), and
prints one JSON line like the standing scripts (median step time, failures).
"""

from __future__ import annotations

import json
import runpy
import sys
import time

import numpy as np


def _tsid(script: str, steps: int, lean: float, reset: int) -> dict:
    g = runpy.run_path(script)
    tsid, pin = g["tsid"], g["pin"]
    model, form, com, post, _, post_traj, solver, q0, v0, _keep_alive = g["build"]()
    data = model.createData()
    com0 = pin.centerOfMass(model, data, q0).copy()
    com_traj = tsid.TrajectoryEuclidianConstant("traj_com_lean", com0 + np.array([0.0, lean, 0.0]))
    dt, clock = 1e-3, time.perf_counter
    t_step = np.zeros(steps)
    failures = 0
    q, v = q0.copy(), v0.copy()
    for i in range(steps):
        if reset and i % reset == 0:
            q, v = q0.copy(), np.zeros(model.nv)
        t0 = clock()
        com.setReference(com_traj.computeNext())
        post.setReference(post_traj.computeNext())
        hqp = form.computeProblemData(i * dt, q, v)
        sol = solver.solve(hqp)
        dv = form.getAccelerations(sol)
        form.getActuatorForces(sol)
        v_mean = v + 0.5 * dt * dv
        v = v + dt * dv
        q = pin.integrate(model, q, dt * v_mean)
        t_step[i] = clock() - t0
        failures += sol.status != 0
    return {"anchor": "tsid-1.7.1", "t": t_step, "failures": failures}


def _placo(script: str, steps: int, lean: float, reset: int) -> dict:
    g = runpy.run_path(script)
    pin = g["pin"]
    robot, solver, _contacts, _feet, com, _posture, q0, model = g["build"]()
    com0 = pin.centerOfMass(model, model.createData(), q0).copy()
    com.target_world = com0 + np.array([0.0, lean, 0.0])
    clock = time.perf_counter
    t_step = np.zeros(steps)
    failures = 0
    for i in range(steps):
        if reset and i % reset == 0:
            robot.state.q = q0.copy()
            robot.state.qd = np.zeros(model.nv)
            robot.state.qdd = np.zeros(model.nv)
        t0 = clock()
        robot.update_kinematics()
        result = solver.solve(True)
        t_step[i] = clock() - t0
        failures += not result.success
    return {"anchor": "placo-0.10.2", "t": t_step, "failures": failures}


def main() -> int:
    steps, name, script, lean, reset = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
    out = {"tsid": _tsid, "placo": _placo}[name](script, steps, lean, reset)
    t = out.pop("t")
    out |= {
        "robot": "talos_reduced",
        "scenario": {"lean_m": lean, "reset_steps": reset},
        "steps": steps,
        "step_us_median": round(float(np.median(t)) * 1e6, 1),
        "step_us_min": round(float(t.min()) * 1e6, 1),
        "failures": int(out["failures"]),
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
