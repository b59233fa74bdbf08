"""TSID anchor (1.7.1, eiquadprog): Talos on two 6D feet, one control step per ms, every step timed.

Run from the repository root with the side environment of ``setup.sh``::

    ~/.cache/wbc-anchors/tsid/bin/python -m benchmarks.anchors.tsid_talos --scenario standing --steps 2000

Tasks as :mod:`benchmarks.anchors.scenario`: two ``Contact6d`` (the sole's 4 corners 0.107 m below the
ankle joint), CoM, joint posture. A step is the references, ``computeProblemData``, the solve, the
accelerations and torques decoded, and the state integrated. Prints one JSON line: the step's
percentiles, the problem-data and solve medians, failures and the standing check (CoM height change,
Σ f_z against m g).
"""

from __future__ import annotations

import time

import numpy as np
import pinocchio as pin
from tsid import tsid_pywrap as tsid

from benchmarks.anchors import scenario as sc
from benchmarks.anchors.robot_files import ROBOTS, TALOS_SRDF, TALOS_URDF


def build(com_priority: int = 1):
    """The controller; ``com_priority`` 0 makes the CoM task a hard constraint (the priorities scenario)."""
    robot = tsid.RobotWrapper(TALOS_URDF, [ROBOTS], pin.JointModelFreeFlyer(), False)
    model = robot.model()
    pin.loadReferenceConfigurations(model, TALOS_SRDF, False)
    q = model.referenceConfigurations["half_sitting"].copy()
    v = np.zeros(model.nv)
    form = tsid.InverseDynamicsFormulationAccForce("tsid", robot, False)
    form.computeProblemData(0.0, q, v)
    data = form.data()  # robot.data() would be a fresh, never-computed Data
    corners = np.full((3, 4), -0.107)
    corners[0, :] = [-0.1, -0.1, 0.1, 0.1]
    corners[1, :] = [-0.065, 0.065, -0.065, 0.065]
    contacts = []
    for name in ("leg_left_6_joint", "leg_right_6_joint"):
        c = tsid.Contact6d("contact_" + name, robot, name, corners, np.array([0.0, 0.0, 1.0]), sc.MU, 0.0, 1000.0)
        c.setKp(sc.CONTACT_KP * np.ones(6))
        c.setKd(2 * np.sqrt(sc.CONTACT_KP) * np.ones(6))
        c.setReference(robot.position(data, model.getJointId(name)))
        form.addRigidContact(c, 1e-5)
        contacts.append(c)
    com = tsid.TaskComEquality("task-com", robot)
    com.setKp(sc.COM_KP * np.ones(3))
    com.setKd(2 * np.sqrt(sc.COM_KP) * np.ones(3))
    form.addMotionTask(com, sc.COM_WEIGHT, com_priority, 0.0)
    posture = tsid.TaskJointPosture("task-posture", robot)
    posture.setKp(sc.POSTURE_KP * np.ones(model.nv - 6))
    posture.setKd(2 * np.sqrt(sc.POSTURE_KP) * np.ones(model.nv - 6))
    form.addMotionTask(posture, sc.POSTURE_WEIGHT, 1, 0.0)
    solver = tsid.SolverHQuadProgFast("qp solver")
    solver.resize(form.nVar, form.nEq, form.nIn)
    keep_alive = (robot, contacts)  # TSID holds C++ references to these: they must outlive the loop
    return model, form, com, posture, solver, q, v, keep_alive


def run(args) -> dict:
    model, form, com, posture, solver, q0, v0, _keep_alive = build(0 if args.scenario == "priorities" else 1)
    com0 = pin.centerOfMass(model, model.createData(), q0).copy()
    target = com0 + (np.array([0.0, args.lean, 0.0]) if args.scenario == "lean" else 0.0)
    com_ref = tsid.TrajectoryEuclidianConstant("traj_com", target).computeNext()
    posture_ref = tsid.TrajectoryEuclidianConstant("traj_joint", q0[7:]).computeNext()
    reset = args.reset if args.scenario == "lean" else 0
    dt, clock = sc.DT, time.perf_counter
    t_step, t_data, t_solve = (np.zeros(args.steps) for _ in range(3))
    failures = 0
    q, v = q0.copy(), v0.copy()
    sol = None
    for i in range(args.steps):
        if reset and i % reset == 0:
            q, v = q0.copy(), np.zeros(model.nv)
        t0 = clock()
        com.setReference(com_ref)
        posture.setReference(posture_ref)
        t1 = clock()
        hqp = form.computeProblemData(i * dt, q, v)
        t2 = clock()
        sol = solver.solve(hqp)
        t3 = clock()
        dv = form.getAccelerations(sol)
        form.getActuatorForces(sol)
        v_mean = v + 0.5 * dt * dv
        v = v + dt * dv
        q = pin.integrate(model, q, dt * v_mean)
        t_step[i], t_data[i], t_solve[i] = clock() - t0, t2 - t1, t3 - t2
        failures += sol.status != 0
    com_z = pin.centerOfMass(model, model.createData(), q)[2]
    return {
        "anchor": "tsid-1.7.1",
        "robot": "talos_reduced",
        "scenario": args.scenario,
        "steps": args.steps,
        "qp": {"variables": form.nVar, "equalities": form.nEq, "inequalities": form.nIn},
        **sc.percentiles(t_step * 1e6),
        "problem_data_us_median": round(float(np.median(t_data)) * 1e6, 1),
        "solve_us_median": round(float(np.median(t_solve)) * 1e6, 1),
        "failures": int(failures),
        "com_z_change_mm": round(float(com_z - com0[2]) * 1e3, 3),
        "sum_normal_force_N": round(float(sol.x[model.nv :][2::3].sum()), 2),
        "mg_N": round(pin.computeTotalMass(model) * 9.81, 2),
    }


if __name__ == "__main__":
    sc.emit(run(sc.arguments()))
