"""Walking under wbc's whole-body controller in MuJoCo at 1 kHz (PROTOTYPE against today's contact API).

A footstep plan from a velocity command (``--command vx vy yaw_rate``), a DCM reference
(:mod:`wbc.locomotion`), a DCM stabilizer, swing-foot frame tasks, and the soles' contacts released
with a force ramp before lift-off and re-activated at touchdown (planned or detected). Optional
push during the walk (``--push N``) with online step adjustment.

This prototype switches contacts through the contact objects (``contact.deactivate(ramp)``,
``contact.activate()``, ``contact.max_normal_force``); it is to be moved onto the controller's
contact-switching API once that lands.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import mujoco
import numpy as np

import wbc
from wbc import locomotion as loco
from wbc import robots, tasks
from wbc.sim.mujoco import MujocoSim

DT = 1e-3

#: Per-robot gait settings (timings s, lengths m).
ROBOTS = {
    "talos": dict(
        gait=dict(single_support=0.8, double_support=0.3, initial_double_support=1.2, final_double_support=1.2),
        lift=0.05,
        limits=dict(width=0.17, min_width=0.15, max_width=0.35, max_forward=0.25, max_backward=0.1, max_turn=0.4),
    ),
    "g1": dict(
        gait=dict(single_support=0.5, double_support=0.2, initial_double_support=1.0, final_double_support=1.0),
        lift=0.05,
        limits=dict(width=0.237, min_width=0.2, max_width=0.4, max_forward=0.25, max_backward=0.1, max_turn=0.4),
    ),
}


class Walker:
    def __init__(
        self, robot: str, command, n_steps: int, k_dcm: float = 2.0, swing_kp: float = 400.0, adjust=False, **over
    ):
        self.spec = robots.load(robot)
        spec, model = self.spec, self.spec.model
        self.model = model
        cfg = ROBOTS[robot]
        gait = dict(cfg["gait"], **{k: v for k, v in over.items() if k in cfg["gait"] and v is not None})
        self.com_weight = over.get("com_weight") or 10.0
        self.swing_weight = over.get("swing_weight") or 10.0
        self.sim = MujocoSim(model, [(f, spec.sole.length, spec.sole.width) for f in spec.feet])
        self.sim.reset(spec.q0)
        self.foot_frame = {loco.Foot.LEFT: spec.feet[0], loco.Foot.RIGHT: spec.feet[1]}
        self.contacts = {
            f: wbc.SurfaceContact(frame, spec.sole.length, spec.sole.width, mu=0.7)
            for f, frame in self.foot_frame.items()
        }
        self.base = model.joints[1].link
        self.com_task = tasks.CoMTask(weight=self.com_weight, kp=[0.0, 0.0, 100.0], kd=[0.0, 0.0, 20.0])
        self.orientation = tasks.OrientationTask(self.base, weight=1.0, kp=100.0)
        self.posture = tasks.PostureTask(model, weight=1e-2, kp=30.0)
        self.foot_tasks = {
            f: tasks.FrameTask(frame, weight=0.0, kp=swing_kp, name=f"swing_{f.value}")
            for f, frame in self.foot_frame.items()
        }
        all_tasks = [self.com_task, self.orientation, self.posture, *self.foot_tasks.values()]
        self.controller = wbc.WholeBodyController(model, all_tasks, list(self.contacts.values()))
        self.controller.compile()
        self.posture.set_target(spec.q0)
        self.mass = model.total_mass
        feet = {f: loco.Footstep.from_pose(f, self.sim.frame_placement(fr)) for f, fr in self.foot_frame.items()}
        for f in feet:
            feet[f] = loco.Footstep(f, feet[f].position * [1, 1, 0], feet[f].yaw)
        self.shape = loco.FootShape(spec.sole.length, spec.sole.width)
        self.params = loco.GaitParameters(lift_height=cfg["lift"], **gait)
        self.limits = loco.StepLimits(**cfg["limits"])
        com0, _ = self._com()
        self.plan = loco.plan_from_velocity(
            loco.VelocityCommand(*command),
            feet[loco.Foot.LEFT],
            feet[loco.Foot.RIGHT],
            n_steps,
            self.params.step_duration,
            self.limits,
            self.shape,
        )
        self.timeline = loco.plan_walk(self.plan, com0, self.params, self.shape)
        self.stabilizer = loco.DCMStabilizer(k_dcm=k_dcm, margin=0.01)
        self.planner = loco.CaptureStepPlanner(self.params, self.shape, self.limits) if adjust else None
        self.k_dcm = k_dcm

    def _com(self):
        self.sim.forward()
        m, d = self.sim.mjmodel, self.sim.mjdata
        mujoco.mj_subtreeVel(m, d)
        return d.subtree_com[1].copy(), d.subtree_linvel[1].copy()

    def run(self, duration: float, push=None, progress=True):
        sim, tl = self.sim, self.timeline
        steps = int(round(duration / DT))
        log = {k: [] for k in ("t", "com", "dcm", "dcm_ref", "zmp_ref", "zmp_cmd", "normal", "tau", "status", "base_z")}
        state = {f: "stance" for f in self.contacts}
        anchor = {f: sim.frame_placement(self.foot_frame[f])[0:2, 3].copy() for f in self.contacts}
        slip = 0.0
        ramp_up = {}
        fell = False
        q0z = sim.get_state()[0][2]
        last_adjust = -1.0
        clock = time.time()
        for i in range(steps):
            t = i * DT
            q, v = sim.get_state()
            com, vel = self._com()
            if self.planner is not None and t - last_adjust >= 0.02:
                last_adjust = t
                new = self.planner.adjust(tl, t, com, vel)
                if new is not None:
                    tl = self.timeline = new.timeline
            ref = tl.sample(t)
            forces = sim.normal_forces()
            # contacts: release with a ramp over the double support before lift-off; re-activate at touchdown
            for f, c in self.contacts.items():
                fr = ref.feet[f]
                if state[f] == "stance" and fr.liftoff is not None:
                    ramp = min(self.params.double_support, fr.liftoff - t)
                    if fr.liftoff - self.params.double_support <= t and c.active and c._ramp is None:
                        c.deactivate(ramp=max(ramp, DT), start_force=max(getattr(c, "last_normal_force", 0.0), 1.0))
                        state[f] = "releasing"
                if state[f] == "releasing" and not c.active:
                    state[f] = "swing"
                    self.foot_tasks[f].set_weight(self.swing_weight)
                if state[f] == "swing":
                    touched = (
                        forces[self.foot_frame[f]] > 0.1 * self.mass * 9.81
                        and fr.touchdown is not None
                        and (t > fr.touchdown - 0.15)
                    )
                    if fr.state is loco.ContactState.STANCE or touched:
                        c.activate()
                        self.foot_tasks[f].set_weight(0.0)
                        state[f] = "stance"
                        ramp_up[f] = t
                        anchor[f] = sim.frame_placement(self.foot_frame[f])[0:2, 3].copy()
                if state[f] == "stance" and f in ramp_up:
                    s = (t - ramp_up[f]) / self.params.double_support
                    if s >= 1.0:
                        c.max_normal_force = math.inf
                        del ramp_up[f]
                    else:
                        c.max_normal_force = max(s, 0.02) * 1.2 * self.mass * 9.81
                if state[f] == "swing":
                    self.foot_tasks[f].set_target(fr.pose, fr.velocity, fr.acceleration)
            if i % 10 == 0:
                for f in self.contacts:
                    if state[f] == "stance" and f not in ramp_up:
                        slip = max(
                            slip, float(np.linalg.norm(sim.frame_placement(self.foot_frame[f])[0:2, 3] - anchor[f]))
                        )
            stance_feet = [
                loco.Footstep.from_pose(f, sim.frame_placement(self.foot_frame[f]))
                for f in self.contacts
                if state[f] != "swing"
            ]
            polygon = loco.support_polygon(stance_feet, self.shape)
            out = self.stabilizer.compute(ref, com, vel, polygon)
            acc = out.com_acceleration
            self.com_task.set_target(ref.com, np.array([ref.com_velocity[0], ref.com_velocity[1], 0.0]), acc)
            self.orientation.set_target(
                ref.heading_rotation(), [0.0, 0.0, ref.heading_rate], [0.0, 0.0, ref.heading_acceleration]
            )
            cmd = self.controller.step(q, v)
            sim.set_torques(cmd.tau)
            if push is not None and abs(t - push[0]) < DT / 2:
                sim.apply_push(self.base, push[1], 0.1)
            try:
                sim.step()
            except wbc.SimulationDiverged:
                fell = True
                break
            log["t"].append(t)
            log["com"].append(com)
            log["dcm"].append(out.dcm)
            log["dcm_ref"].append(ref.dcm)
            log["zmp_ref"].append(ref.zmp)
            log["zmp_cmd"].append(out.zmp)
            log["normal"].append([forces[self.foot_frame[f]] for f in (loco.Foot.LEFT, loco.Foot.RIGHT)])
            log["tau"].append(cmd.tau)
            log["status"].append(cmd.status is wbc.StepStatus.OPTIMAL)
            log["base_z"].append(q[2])
            if q[2] < 0.7 * q0z:
                fell = True
                break
            if progress and i % 500 == 0:
                sys.stderr.write(
                    f"\r t={t:5.2f}s  com={np.round(com, 3)}  dcm err={np.linalg.norm(out.dcm_error) * 1e3:6.1f} mm"
                    f"  sat={out.saturated}  ({time.time() - clock:5.1f} s)"
                )
        if progress:
            sys.stderr.write("\n")
        run = {k: np.asarray(val) for k, val in log.items()}
        run["fell"] = fell
        run["slip"] = slip
        qf = sim.get_state()[0]
        x, y, z, w = qf[3:7]
        run["base_yaw"] = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
        return run


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robot", default="talos", choices=sorted(ROBOTS))
    parser.add_argument("--command", nargs=3, type=float, default=(0.1, 0.0, 0.0), metavar=("VX", "VY", "WZ"))
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--k-dcm", type=float, default=2.0)
    parser.add_argument("--swing-kp", type=float, default=400.0)
    parser.add_argument("--push", type=float, nargs=4, default=None, metavar=("T", "FX", "FY", "FZ"))
    parser.add_argument("--adjust", action="store_true")
    parser.add_argument("--ss", type=float, default=None, help="single support, s")
    parser.add_argument("--ds", type=float, default=None, help="double support, s")
    parser.add_argument("--com-weight", type=float, default=None)
    parser.add_argument("--swing-weight", type=float, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    walker = Walker(
        args.robot,
        args.command,
        args.steps,
        args.k_dcm,
        args.swing_kp,
        args.adjust,
        single_support=args.ss,
        double_support=args.ds,
        com_weight=args.com_weight,
        swing_weight=args.swing_weight,
    )
    duration = walker.timeline.t_end + 1.5
    push = None if args.push is None else (args.push[0], np.array(args.push[1:]))
    run = walker.run(duration, push)
    final = walker.plan.final
    target = loco.FootstepPlan.midpose(final)
    com = run["com"][-1]
    summary = {
        "robot": args.robot,
        "fell": bool(run["fell"]),
        "t_end": float(run["t"][-1]),
        "com_final": np.round(com, 4).tolist(),
        "planned_final_midpoint": np.round(target, 4).tolist(),
        "max_dcm_error_mm": round(
            float(np.max(np.linalg.norm((run["dcm"] - run["dcm_ref"])[:, 0:2], axis=1))) * 1e3, 1
        ),
        "non_optimal_steps": int(np.sum(~run["status"])),
        "base_yaw_final_rad": round(float(run["base_yaw"]), 4),
        "max_foot_slip_m": round(float(run["slip"]), 5),
    }
    print(json.dumps(summary, indent=2))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(args.out / "log.npz", **{k: v for k, v in run.items() if isinstance(v, np.ndarray)})
    return 0 if not run["fell"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
