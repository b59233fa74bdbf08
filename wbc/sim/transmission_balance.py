"""Balance of a humanoid with geared rotors and rod-driven ankles, controlled with its exact model
and with the approximations today's controllers make.

The robot is the G1-like humanoid of :func:`wbc.robots.clustered.g1_parallel_ankle` with
``joint_rotors=True`` (:class:`Plant`); MuJoCo simulates it as built (rotors and rods are bodies,
gears and rod ends are equality constraints). :func:`run` balances it through a
:class:`wbc.sim.balance.Scenario` with one of three :class:`Controller` s, the same tasks over three
models of itself (:data:`MODELS`):

* ``exact``: the clustered model (:class:`wbc.ClusterModel`); the QP's inputs are the motor
  efforts, ``q̈ = a₀ + B̂u`` exact (C-ABA, clustered IIM);
* ``armature``: the independent tree with each rotor's reflected inertia as a diagonal armature,
  the ankle as two serial joints;
* ``ignored``: the independent tree, rotors and loops ignored (a URDF-only controller).

The approximations' joint torques become motor efforts through the exact linkage at the measured
state (:meth:`Plant.motor_efforts`). With ``shadows`` the exact run also evaluates the two
approximations on its own states, which isolates their torque error. ``demos/transmission_balance.py`` is
the command line.

MuJoCo is the optional ``sim`` extra; ``import wbc`` never imports this module.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import casadi as ca
import numpy as np

import wbc
from wbc.algorithms.clusters import ApproximateModel
from wbc.spatial.lie import log3

from . import catalog
from .balance import (
    DT,
    MAX_SLIP_M,
    MIN_BASE_RATIO,
    SCENARIO_DEFAULTS,
    Push,
    Scenario,
    apply_due_pushes,
    step_survived,
)
from .mujoco import MujocoSim

__all__ = ["MODELS", "Controller", "Plant", "push_sweep", "run", "scenario", "summarize", "survives"]

#: The three controllers: the exact clustered model, the armature approximation, the tree alone.
MODELS = ("exact", "armature", "ignored")


class Plant:
    """The robot as built (clustered model), its approximations, and the maps between them."""

    def __init__(self) -> None:
        self.robot = catalog.robots().clustered.g1_parallel_ankle(joint_rotors=True)
        self.cm = self.robot.model
        self.approx = ApproximateModel.build(self.cm)
        self.y0 = self.robot.q0
        cm = self.cm
        y = ca.SX.sym("y", cm.tree.nq)
        blocks = []
        for k, c in enumerate(cm.infos):
            if c.motors:
                blocks.append(ca.DM.eye(c.nv) if c.trivial else cm.motor_block(k, y))
        # Gᵀ E on the actuated independent coordinates (n_act, n_motors): block diagonal
        self._motor_map = ca.Function("motor_map", [y], [ca.diagcat(*blocks)])
        first = cm.nv - cm.n_actuated
        assert all(c.idx_v >= first for c in cm.infos if c.motors)

    def reduce(self, y: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The independent tree's state ``(q, v)`` from the robot's ``(y, v)``."""
        q = self.cm.independent_configuration(y)[self.approx.q_order]
        return q, v[self.approx.order]

    def motor_efforts(self, y: np.ndarray, tau_tree: np.ndarray) -> np.ndarray:
        """Motor efforts (n_motors,) producing the independent tree's joint torques ``tau_tree``."""
        tau = np.zeros(self.cm.nv)
        tau[self.approx.order[6:]] = tau_tree  # the tree's actuated joints, in the clustered layout
        A = np.array(self._motor_map(y), dtype=float)
        return np.linalg.solve(A, tau[6:])


class Controller:
    """One of the three controllers (same tasks, contacts, gains), stepping on the robot's state."""

    def __init__(self, kind: str, plant: Plant) -> None:
        self.kind, self.plant = kind, plant
        cm, approx = plant.cm, plant.approx
        if kind == "exact":
            model = cm
        elif kind == "armature":
            model = wbc.ClusterModel(approx.model, armature=_tree_armature(approx))
        else:
            model = approx.model
        self.model = model
        self.tree = model.tree if isinstance(model, wbc.ClusterModel) else model
        robot = plant.robot
        tasks = catalog.tasks()
        contacts = [wbc.SurfaceContact(f, robot.sole.length, robot.sole.width, mu=0.7) for f in robot.feet]
        self.com = tasks.CoMTask(weight=10.0, kp=100.0)
        base = self.tree.joints[1].link
        self.orientation = tasks.OrientationTask(base, weight=1.0, kp=100.0)
        self.posture = tasks.PostureTask(model, weight=1e-2, kp=30.0)
        self.controller = wbc.WholeBodyController(model, [self.com, self.orientation, self.posture], contacts)
        self.controller.compile()
        q0 = self.configuration(plant.y0, np.zeros(cm.nv))[0]
        self.com0 = wbc.center_of_mass(self.tree, q0)
        self.com.set_target(self.com0)
        self.orientation.set_target_from_configuration(self.tree, q0)
        self.posture.set_target(q0)
        self.step_us: list[float] = []

    def configuration(self, y, v):
        if self.kind == "exact":
            return y, v
        return self.plant.reduce(y, v)

    def step(self, y, v, offset=None, vel=None, acc=None) -> tuple[np.ndarray, wbc.Command]:
        """Motor efforts (n_motors,) and the controller's command at the robot's state ``(y, v)``."""
        if offset is not None:
            self.com.set_target(self.com0 + offset, vel, acc)
        q, w = self.configuration(y, v)
        clock = time.perf_counter()
        cmd = self.controller.step(q, w)
        self.step_us.append((time.perf_counter() - clock) * 1e6)
        tau = cmd.tau if self.kind == "exact" else self.plant.motor_efforts(y, cmd.tau)
        return tau, cmd


def _tree_armature(approx: ApproximateModel) -> np.ndarray:
    """The approximation's armature (model.nv,) in its own velocity order."""
    return np.asarray(approx.armature, dtype=float)


# ----------------------------------------------------------------------------------------- runs
def run(kind: str, plant: Plant, scenario: Scenario, shadows: bool = False, progress: bool = False) -> dict:
    """Simulate ``scenario`` with controller ``kind``; with ``shadows`` (the exact run) also evaluate
    the two approximations on every state."""
    robot, cm = plant.robot, plant.cm
    sim = MujocoSim(cm, [(f, robot.sole.length, robot.sole.width) for f in robot.feet])
    sim.reset(plant.y0)
    ctl = Controller(kind, plant)
    others = [Controller(k, plant) for k in MODELS if k != kind] if shadows else []
    com0 = sim.center_of_mass()
    base = cm.tree.joints[1].link
    feet0 = {f: sim.frame_placement(f).copy() for f in robot.feet}
    base_z0 = sim.get_state()[0][2]
    keys = ("t", "com", "com_ref", "slip", "foot_rotation", "tau", "base_z", "loop", "coupling", "status")
    log: dict = {k: [] for k in keys} | {f"tau_{o.kind}": [] for o in others}
    pushes = sorted(scenario.pushes, key=lambda p: p.time_s)
    fell = False
    steps = int(round(scenario.duration / DT))
    for i in range(steps):
        t = i * DT
        y, v = sim.get_state()
        offset, vel, acc = scenario.com_offset(t)
        tau, cmd = ctl.step(y, v, offset, vel, acc)
        for o in others:
            log[f"tau_{o.kind}"].append(o.step(y, v, offset, vel, acc)[0])
        sim.set_torques(tau)
        apply_due_pushes(sim, base, pushes, t)
        if not step_survived(sim):
            fell = True
            break
        log["t"].append(t)
        log["com"].append(sim.center_of_mass())
        log["com_ref"].append(com0 + offset)
        slip, rot = [], []
        for f in robot.feet:
            T = sim.frame_placement(f)
            slip.append(np.linalg.norm((T[0:3, 3] - feet0[f][0:3, 3])[0:2]))
            rot.append(np.linalg.norm(log3(feet0[f][0:3, 0:3].T @ T[0:3, 0:3])))
        log["slip"].append(slip)
        log["foot_rotation"].append(rot)
        log["tau"].append(tau)
        log["base_z"].append(y[2])
        log["loop"].append(sim.loop_error())
        log["coupling"].append(sim.coupling_error())
        log["status"].append(cmd.status is wbc.StepStatus.OPTIMAL)
        if y[2] < 0.5 * base_z0:
            fell = True
            break
        if progress and i % 500 == 0:
            print(f"  {kind}: t = {t:.1f} s", file=sys.stderr)
    out: dict = {k: np.asarray(v) for k, v in log.items()}
    out["fell"], out["base_z0"] = fell, base_z0
    out["step_us"] = np.asarray(ctl.step_us)
    for o in others:
        out[f"step_us_{o.kind}"] = np.asarray(o.step_us)
    return out


def summarize(kind: str, r: dict, exact: dict | None, legs: np.ndarray | None = None) -> dict:
    """The run's figures; against ``exact`` (the exact run, with its shadow evaluations) the motor
    efforts' differences, over every motor and over the leg motors ``legs`` (indices)."""
    com_err = np.linalg.norm(r["com"] - r["com_ref"], axis=1) if len(r["com"]) else np.array([np.inf])
    out = {
        "controller": kind,
        "fell": bool(r["fell"]),
        "max_com_error_m": round(float(np.max(com_err)), 5),
        "max_foot_slip_m": round(float(np.max(r["slip"])), 6) if len(r["slip"]) else None,
        "max_foot_rotation_rad": round(float(np.max(r["foot_rotation"])), 6) if len(r["slip"]) else None,
        "min_pelvis_height_ratio": round(float(np.min(r["base_z"]) / r["base_z0"]), 4) if len(r["t"]) else 0.0,
        "max_loop_error_m": float(np.max(r["loop"])) if len(r["loop"]) else None,
        "max_gear_coupling_error_rad": float(np.max(r["coupling"])) if len(r["coupling"]) else None,
        "steps": int(len(r["t"])),
        "non_optimal_steps": int(np.sum(~r["status"])) if len(r["status"]) else 0,
        "step_us_median": round(float(np.median(r["step_us"])), 1) if len(r["step_us"]) else None,
    }
    if exact is not None and kind != "exact":
        shadow = exact[f"tau_{kind}"]
        d = shadow - exact["tau"]
        out["rms_motor_torque_difference_vs_exact_Nm"] = round(float(np.sqrt(np.mean(d**2))), 4)
        out["max_motor_torque_difference_vs_exact_Nm"] = round(float(np.max(np.abs(d))), 4)
        if legs is not None:
            out["rms_leg_motor_torque_difference_vs_exact_Nm"] = round(float(np.sqrt(np.mean(d[:, legs] ** 2))), 4)
        n = min(len(r["tau"]), len(exact["tau"]))
        closed = r["tau"][:n] - exact["tau"][:n]
        out["rms_motor_torque_difference_closed_loop_Nm"] = round(float(np.sqrt(np.mean(closed**2))), 4)
    return out


def survives(kind: str, plant: Plant, force: float) -> bool:
    """Whether controller ``kind`` survives a lateral push of ``force`` N over 0.1 s at t = 1 s (3 s
    standing) by the criterion of :func:`wbc.sim.balance.push_trial`."""
    sc = Scenario.standing(3.0, (Push("lateral", (0.0, 1.0, 0.0), force, 0.1, 1.0),))
    s = summarize(kind, run(kind, plant, sc), None)
    return not s["fell"] and s["min_pelvis_height_ratio"] >= MIN_BASE_RATIO and s["max_foot_slip_m"] < MAX_SLIP_M


def push_sweep(
    kind: str, plant: Plant, lo: float = 0.0, hi: float = 400.0, iterations: int = 7, log: Callable | None = None
) -> float:
    """Largest lateral push (N over 0.1 s) controller ``kind`` survives, by bisection;
    ``log(survives, fails)`` after each trial."""
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if survives(kind, plant, mid) else (lo, mid)
        if log is not None:
            log(lo, hi)
    return lo


def scenario(duration: float) -> Scenario:
    """``humanoid_balance.py``'s G1 scenario: sway 2 cm, 40 N lateral then forward pushes (0.1 s)."""
    d = SCENARIO_DEFAULTS["g1"]
    pushes = (
        Push("lateral", (0.0, 1.0, 0.0), d["push"], 0.1, 5.5),
        Push("forward", (1.0, 0.0, 0.0), d["push"], 0.1, 7.0),
    )
    return Scenario(duration=duration, sway_amplitude=d["sway"], pushes=tuple(p for p in pushes if p.time_s < duration))
