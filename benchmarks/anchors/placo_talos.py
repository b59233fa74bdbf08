"""placo anchor (0.10.2, DynamicsSolver): Talos on two planar soles, one step per ms, every step timed.

Run from the repository root with the side environment of ``setup.sh``::

    ~/.cache/wbc-anchors/placo/bin/python -m benchmarks.anchors.placo_talos --scenario standing --steps 2000

Tasks as :mod:`benchmarks.anchors.scenario`: the soles (0.2 × 0.13 m) held by hard frame tasks with
planar contacts, CoM (soft, or hard in the priorities scenario), joint posture (soft); torque cost 0
(placo's default 1e-3 lets Talos sag with these weights); placo integrates. A step is
``update_kinematics`` and ``solve(True)``. Prints one JSON line like the TSID anchor's.
"""

from __future__ import annotations

import os
import time

import numpy as np

from benchmarks.anchors import scenario as sc
from benchmarks.anchors.robot_files import SHARE, TALOS_SRDF, TALOS_URDF

os.environ.setdefault("ROS_PACKAGE_PATH", SHARE)  # placo resolves package:// mesh paths through it

import pinocchio as pin
import placo


def build(com_hard: bool = False):
    """The controller; ``com_hard`` makes the CoM task a hard constraint (the priorities scenario)."""
    robot = placo.RobotWrapper(TALOS_URDF, placo.Flags.ignore_collisions)
    model = pin.buildModelFromUrdf(TALOS_URDF, pin.JointModelFreeFlyer())
    pin.loadReferenceConfigurations(model, TALOS_SRDF, False)
    q0 = model.referenceConfigurations["half_sitting"].copy()
    robot.state.q = q0.copy()
    robot.state.qd = np.zeros(model.nv)
    robot.state.qdd = np.zeros(model.nv)
    robot.update_kinematics()
    solver = placo.DynamicsSolver(robot)
    solver.dt = sc.DT
    solver.mask_fbase(False)
    solver.torque_cost = 0.0
    contacts = []
    for frame in ("left_sole_link", "right_sole_link"):
        task = solver.add_frame_task(frame, robot.get_T_world_frame(frame))
        task.configure(frame, "hard", 1.0, 1.0)
        for sub in (task.position(), task.orientation()):
            sub.kp, sub.kd = sc.CONTACT_KP, 2 * np.sqrt(sc.CONTACT_KP)
        contact = solver.add_planar_contact(task)
        contact.length, contact.width, contact.mu = sc.SOLE_LENGTH, sc.SOLE_WIDTH, sc.MU
        contacts.append(contact)
    com = solver.add_com_task(robot.com_world())
    com.configure("com", "hard" if com_hard else "soft", sc.COM_WEIGHT)
    com.kp, com.kd = sc.COM_KP, 2 * np.sqrt(sc.COM_KP)
    posture = solver.add_joints_task()
    posture.set_joints({n: robot.get_joint(n) for n in robot.joint_names()})
    posture.configure("posture", "soft", sc.POSTURE_WEIGHT)
    posture.kp, posture.kd = sc.POSTURE_KP, 2 * np.sqrt(sc.POSTURE_KP)
    return robot, solver, contacts, com, q0, model


def run(args) -> dict:
    robot, solver, contacts, com, q0, model = build(args.scenario == "priorities")
    data = model.createData()
    com0 = pin.centerOfMass(model, data, q0).copy()
    if args.scenario == "lean":
        com.target_world = com0 + np.array([0.0, args.lean, 0.0])
    reset = args.reset if args.scenario == "lean" else 0
    clock = time.perf_counter
    t_step = np.zeros(args.steps)
    failures = 0
    for i in range(args.steps):
        if reset and i % reset == 0:
            robot.state.q = q0.copy()
            robot.state.qd = np.zeros(model.nv)
            robot.state.qdd = np.zeros(model.nv)
        t0 = clock()
        robot.update_kinematics()
        result = solver.solve(True)
        t_step[i] = clock() - t0
        failures += not result.success
    com_z = pin.centerOfMass(model, data, robot.state.q)[2]
    return {
        "anchor": "placo-0.10.2",
        "robot": "talos_reduced",
        "scenario": args.scenario,
        "steps": args.steps,
        "qp": {"variables": solver.problem.n_variables, "inequalities": solver.problem.n_inequalities},
        **sc.percentiles(t_step * 1e6),
        "failures": int(failures),
        "com_z_change_mm": round(float(com_z - com0[2]) * 1e3, 3),
        "sum_normal_force_N": round(float(sum(c.wrench[2] for c in contacts)), 2),
        "mg_N": round(robot.total_mass() * 9.81, 2),
    }


if __name__ == "__main__":
    sc.emit(run(sc.arguments()))
