"""Humanoid balancing in MuJoCo under wbc's whole-body controller (the project's main job).

A humanoid (Talos by default, ``--robot g1`` for Unitree G1) stands on two rectangular feet in a
1 kHz MuJoCo simulation with :class:`wbc.WholeBodyController` in the loop (state read from the
simulator, torques written back every millisecond). Scenario:

1. settle (1 s);
2. CoM sway: a lateral sinusoid of the CoM reference with smooth 1 s ramps (4 s);
3. a lateral push on the pelvis, then a forward push (force and duration configurable);
4. quiet standing until the end.

Tasks: CoM (tracking the sway), pelvis orientation, joint posture; contacts: both soles (6D wrench,
friction and CoP limits), torque limits from the URDF.

Headless by default: writes to ``--out`` the plots ``com.png`` (CoM reference vs actual),
``feet.png`` (normal forces and centres of pressure in the soles), ``torques.png`` (joint torques
against their limits), ``step_time.png`` (control-step time histogram), the log ``log.npz`` and
``summary.json``, and prints the summary. ``--viewer`` opens MuJoCo's viewer where a display
exists; ``--video out.mp4`` renders offscreen where an OpenGL backend exists; ``--push-sweep``
finds, by bisection, the largest lateral push (N over 0.1 s) the robot survives standing, and with
``--stepping`` also with recovery steps (the walking loop of ``demos/walk.py``,
:class:`wbc.sim.walking.Walker`: a step toward the capture point once it leaves the feet, a closing
step, standing again).

Robustness (see :func:`push_scan` and :func:`soak`): ``--push-scan`` runs a grid of lateral pushes
(default 0-600 N by 25 N) and reports, per force, up or fell, foot slip and pelvis height, then the
first failure (fell, pelvis < 90 % or slip ≥ 1 cm) and the first fall, as the anchors' table does;
``--soak SECONDS`` pushes the robot at random (every 0.5-1 s, 50-300 N for 0.1 s, any horizontal
direction; reset after a fall) and reports falls, foot displacement, non-optimal steps by status
and NaN count.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import wbc
from wbc import robots, tasks
from wbc.figures import plot_torques_against_limits, save_figure
from wbc.viz import Replay
from wbc.viz import contact_arrows as replay_arrows

try:
    from wbc.sim.mujoco import MujocoSim
except ImportError as exc:  # pragma: no cover - needs the 'sim' extra
    raise SystemExit(f"{exc}\nthe balance demo needs MuJoCo: pip install 'wbc[sim]' (make demo installs it)") from None

DT = 1e-3


@dataclasses.dataclass
class Push:
    """A push on the pelvis: world ``direction`` (unit), ``force_N`` over ``duration_s`` from ``time_s``."""

    name: str
    direction: tuple
    force_N: float
    duration_s: float
    time_s: float


@dataclasses.dataclass
class Scenario:
    """Timeline of the run (s) and the sway of the CoM reference."""

    duration: float = 9.0
    sway_start: float = 1.0
    sway_end: float = 5.0
    sway_amplitude: float = 0.03
    sway_frequency: float = 0.5
    pushes: tuple = ()

    sway_ramp: float = 1.0

    def com_offset(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Lateral offset of the CoM reference (position, velocity, acceleration) at time ``t``.

        ``a e(s) sin(ω s)`` with an envelope ``e`` rising and falling smoothly (C²) over
        ``sway_ramp`` seconds, so references never jump.
        """
        zero = (np.zeros(3), np.zeros(3), np.zeros(3))
        if not self.sway_start <= t < self.sway_end:
            return zero
        s, T = t - self.sway_start, self.sway_end - self.sway_start
        r = min(self.sway_ramp, T / 2)
        e, de, dde = _envelope(s, T, r)
        w, a = 2 * np.pi * self.sway_frequency, self.sway_amplitude
        sn, cs = np.sin(w * s), np.cos(w * s)
        y = a * e * sn
        dy = a * (de * sn + e * w * cs)
        ddy = a * (dde * sn + 2 * de * w * cs - e * w * w * sn)
        return np.array([0.0, y, 0.0]), np.array([0.0, dy, 0.0]), np.array([0.0, ddy, 0.0])


def _envelope(s: float, total: float, ramp: float) -> tuple[float, float, float]:
    """A C² window: 0 → 1 over ``ramp`` s (quintic smoothstep), 1, then back to 0 at ``total``."""
    if s < ramp:
        x, sign = s / ramp, 1.0
    elif s > total - ramp:
        x, sign = (total - s) / ramp, -1.0
    else:
        return 1.0, 0.0, 0.0
    e = x**3 * (10 - 15 * x + 6 * x * x)
    de = 30 * x * x * (1 - x) ** 2 / ramp * sign
    dde = 60 * x * (1 - x) * (1 - 2 * x) / ramp**2
    return e, de, dde


#: Stiffness of the feet's pose feedback (1/s², damping 2 √kp): the stiffest of 10-10000 that
#: measured best in ``--push-scan`` (Talos and G1); the library default is 1000.
CONTACT_KP = 3000.0

# Per-robot defaults: sway amplitude (m) and push magnitudes (N); pushes last 0.1 s.
DEFAULTS = {"talos": {"sway": 0.03, "push": 150.0}, "g1": {"sway": 0.02, "push": 40.0}}


class Balance:
    """The simulator, the controller and the per-step bookkeeping of one run."""

    def __init__(
        self,
        robot: str,
        scenario: Scenario,
        solver: wbc.Solver | str = wbc.Solver.DAQP,
        input_matrix: wbc.InputMatrixMethod = wbc.InputMatrixMethod.IIM,
    ) -> None:
        self.spec = robots.load(robot)
        self.model = self.spec.model
        self.scenario = scenario
        spec, model = self.spec, self.model
        self.base = model.joints[1].link
        self.sim = MujocoSim(model, [(f, spec.sole.length, spec.sole.width) for f in spec.feet])
        self.sim.reset(spec.q0)
        contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=0.7, kp=CONTACT_KP) for f in spec.feet]
        self.com = tasks.CoMTask(weight=10.0, kp=100.0)
        self.orientation = tasks.OrientationTask(self.base, weight=1.0, kp=100.0)
        self.posture = tasks.PostureTask(model, weight=1e-2, kp=30.0)
        self.controller = wbc.WholeBodyController(
            model, [self.com, self.orientation, self.posture], contacts, solver=solver, input_matrix=input_matrix
        )
        self.controller.compile()
        self.com0 = wbc.center_of_mass(model, spec.q0)
        self.orientation.set_target(wbc.frame_placement(model, spec.q0, self.base)[0:3, 0:3])
        self.posture.set_target(self.controller.within_limits(spec.q0))
        self.com.set_target(self.com0)

    def run(self, progress: bool = True, viewer=None, frames: list | None = None, renderer=None, replay=None) -> dict:
        """Simulate the scenario; returns the log (arrays over time); records into ``replay`` (a
        :class:`wbc.viz.Replay`) about 30 times per second."""
        sc, sim, spec = self.scenario, self.sim, self.spec
        steps = int(round(sc.duration / DT))
        feet0 = {f: sim.frame_placement(f)[0:3, 3].copy() for f in spec.feet}
        base_z0 = sim.get_state()[0][2]
        log = {k: [] for k in ("t", "com", "com_ref", "base_z", "tau", "normal", "cop", "slip", "step_us", "status")}
        pushes = sorted(sc.pushes, key=lambda p: p.time_s)
        bar = _Progress(steps) if progress else None
        fell = False
        for i in range(steps):
            t = i * DT
            q, v = sim.get_state()
            offset, vel, acc = sc.com_offset(t)
            self.com.set_target(self.com0 + offset, vel, acc)
            clock = time.perf_counter()
            cmd = self.controller.step(q, v)
            log["step_us"].append((time.perf_counter() - clock) * 1e6)
            sim.set_torques(cmd.tau)
            while pushes and pushes[0].time_s <= t:
                p = pushes.pop(0)
                sim.apply_push(self.base, p.force_N * np.asarray(p.direction, float), p.duration_s)
            try:
                sim.step()
            except wbc.SimulationDiverged:
                fell = True
                break
            self._record(log, t, q, cmd, offset, feet0)
            if q[2] < 0.5 * base_z0:
                fell = True
                break
            if replay is not None and i % 33 == 0:
                active = [p for p in sc.pushes if p.time_s <= t < p.time_s + p.duration_s]
                arrows = replay_arrows(self.model, q, self.controller.contacts, cmd.forces)
                replay.add(t, q, arrows, {p.name: (q[0:3], p.force_N * np.asarray(p.direction)) for p in active})
            if viewer is not None and i % 16 == 0:
                viewer.sync()
            if renderer is not None and i % 33 == 0:
                renderer.update_scene(sim.mjdata)
                frames.append(renderer.render())
            if bar is not None:
                bar.update(i + 1)
        if bar is not None:
            bar.close()
        out = {k: np.asarray(v) for k, v in log.items()}
        out["fell"] = fell
        out["base_z0"] = base_z0
        return out

    def _record(self, log: dict, t: float, q: np.ndarray, cmd: wbc.Command, offset: np.ndarray, feet0: dict) -> None:
        spec, model = self.spec, self.model
        log["t"].append(t)
        log["com"].append(wbc.center_of_mass(model, q) if len(log["t"]) % 10 == 1 else log["com"][-1])
        log["com_ref"].append(self.com0 + offset)
        log["base_z"].append(q[2])
        log["tau"].append(cmd.tau)
        normal, cop = [], []
        for c in self.controller.contacts:
            w = cmd.forces[c.name]
            fz = max(w[2], 1e-9)
            normal.append(w[2])
            cop.append([-w[4] / fz, w[3] / fz])
        log["normal"].append(normal)
        log["cop"].append(cop)
        log["slip"].append(
            [np.linalg.norm((self.sim.frame_placement(f)[0:3, 3] - feet0[f])[0:2]) for f in spec.feet]
            if len(log["t"]) % 10 == 1
            else log["slip"][-1]
        )
        log["status"].append(cmd.status is wbc.StepStatus.OPTIMAL)


class _Progress:
    """A tqdm progress bar on stderr, silent when stderr is not a terminal."""

    def __init__(self, total: int) -> None:
        self.bar = tqdm(total=total, unit="step", disable=not sys.stderr.isatty())

    def update(self, n: int) -> None:
        self.bar.update(n - self.bar.n)

    def close(self) -> None:
        self.bar.close()


def summarize(robot: str, run: dict, scenario: Scenario) -> dict:
    com_err = np.linalg.norm(run["com"] - run["com_ref"], axis=1) if len(run["com"]) else np.array([np.inf])
    return {
        "robot": robot,
        "fell": bool(run["fell"]),
        "min_pelvis_height_ratio": round(float(np.min(run["base_z"]) / run["base_z0"]), 4)
        if len(run["base_z"])
        else 0.0,
        "max_com_error_m": round(float(np.max(com_err)), 5),
        "max_foot_slip_m": round(float(np.max(run["slip"])), 6) if len(run["slip"]) else float("inf"),
        "step_us_median": round(float(np.median(run["step_us"])), 1) if len(run["step_us"]) else None,
        "steps": int(len(run["t"])),
        "non_optimal_steps": int(np.sum(~run["status"])) if len(run["status"]) else 0,
        "pushes": [
            {"direction": p.name, "force_N": p.force_N, "duration_s": p.duration_s, "time_s": p.time_s}
            for p in scenario.pushes
        ],
    }


def plot(run: dict, balance: Balance, out: Path) -> list[Path]:
    """Write the four PNG plots; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = run["t"]
    paths = []
    pushes = balance.scenario.pushes

    def mark(ax):
        for p in pushes:
            ax.axvspan(p.time_s, p.time_s + p.duration_s, color="tab:red", alpha=0.25, lw=0)

    fig, axes = plt.subplots(3, 1, figsize=(9, 7), sharex=True)
    for k, (ax, name) in enumerate(zip(axes, "xyz")):
        ax.plot(t, run["com_ref"][:, k], "--", color="k", lw=1, label="reference")
        ax.plot(t, run["com"][:, k], color="tab:blue", lw=1.2, label="actual")
        ax.set_ylabel(f"CoM {name} (m)")
        mark(ax)
    axes[0].legend(loc="upper right")
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(f"{balance.spec.name}: CoM tracking (red: pushes)")
    paths.append(save_figure(fig, out / "com.png"))

    fig, axes = plt.subplots(3, 1, figsize=(9, 7), sharex=True)
    names = [c.name for c in balance.controller.contacts]
    for k, name in enumerate(names):
        axes[0].plot(t, run["normal"][:, k], lw=1.2, label=name)
    axes[0].axhline(balance.model.total_mass * 9.81, color="k", ls=":", lw=1, label="m g")
    axes[0].set_ylabel("normal force (N)")
    axes[0].legend(loc="upper right", fontsize=8)
    sole = balance.spec.sole
    for j, (ax, axis, half) in enumerate(zip(axes[1:], "xy", (sole.length / 2, sole.width / 2))):
        for k, name in enumerate(names):
            ax.plot(t, run["cop"][:, k, j], lw=1.0, label=name)
        ax.axhline(half, color="k", ls=":", lw=1)
        ax.axhline(-half, color="k", ls=":", lw=1)
        ax.set_ylabel(f"CoP {axis} in sole (m)")
    for ax in axes:
        mark(ax)
    axes[-1].set_xlabel("time (s)")
    fig.suptitle("Foot normal forces and centres of pressure (commanded; dotted: sole edges)")
    paths.append(save_figure(fig, out / "feet.png"))

    fig, ax = plt.subplots(figsize=(9, 4.5))
    plot_torques_against_limits(ax, t, run["tau"], balance.model)
    mark(ax)
    paths.append(save_figure(fig, out / "torques.png"))

    fig, ax = plt.subplots(figsize=(7, 4))
    us = run["step_us"]
    ax.hist(us, bins=np.linspace(0, np.percentile(us, 99.5) * 1.1, 60), color="tab:blue")
    ax.axvline(np.median(us), color="k", ls="--", label=f"median {np.median(us):.0f} µs")
    ax.set_xlabel("controller step (µs)")
    ax.set_ylabel("steps")
    ax.legend()
    ax.set_title(f"Control-step time ({len(us)} steps, this machine, this run)")
    paths.append(save_figure(fig, out / "step_time.png"))
    return paths


def scenario_for(robot: str, args) -> Scenario:
    d = DEFAULTS[robot]
    lateral = args.push_lateral if args.push_lateral is not None else d["push"]
    forward = args.push_forward if args.push_forward is not None else d["push"]
    pushes = (
        Push("lateral", (0.0, 1.0, 0.0), lateral, args.push_duration, 5.5),
        Push("forward", (1.0, 0.0, 0.0), forward, args.push_duration, 7.0),
    )
    return Scenario(duration=args.duration, sway_amplitude=d["sway"], pushes=tuple(p for p in pushes if p.force_N > 0))


#: Push directions of the sweeps (world, unit).
DIRECTIONS = {"lateral": (0.0, 1.0, 0.0), "forward": (1.0, 0.0, 0.0)}


def push_sweep(
    robot: str,
    lo: float = 0.0,
    hi: float = 2000.0,
    iterations: int = 9,
    stepping: bool = False,
    direction: str = "lateral",
) -> float:
    """Largest push (N over 0.1 s; ``direction`` lateral +y or forward +x) survived, by bisection over
    short runs (settle, push, stand).

    With ``stepping``, the robot may step: the walking loop of ``demos/walk.py``
    (:class:`wbc.sim.walking.Walker`) standing, which takes a recovery step when the capture point
    leaves its feet (:func:`stepping_trial`).
    """
    axis = DIRECTIONS[direction]

    def survives(force: float) -> bool:
        if stepping:
            return stepping_trial(robot, force, direction=direction)["survived"]
        sc = Scenario(duration=3.0, sway_start=0.0, sway_end=0.0, pushes=(Push(direction, axis, force, 0.1, 1.0),))
        run = Balance(robot, sc).run(progress=False)
        s = summarize(robot, run, sc)
        return not s["fell"] and s["min_pelvis_height_ratio"] >= 0.9 and s["max_foot_slip_m"] < 0.01

    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if survives(mid):
            lo = mid
        else:
            hi = mid
        kind = "stepping" if stepping else "standing"
        print(f"  push sweep ({direction}, {kind}): survives {lo:.0f} N, fails {hi:.0f} N", file=sys.stderr)
    return lo


#: A stepping trial lasts long enough for a recovery step, a closing step and coming to rest.
STEPPING_TRIAL_S = 4.5


def stepping_trial(
    robot: str, force: float, duration: float = 0.1, direction: str = "lateral", recover: bool = True
) -> dict:
    """A push of ``force`` N over ``duration`` s at t = 1 s (``direction`` lateral +y or forward +x) on
    the robot standing under the walking controller, free to take recovery steps (unless ``recover``
    is False); ``{force_N, up, survived, slip_m, pelvis_ratio, recovery_steps, failed_steps}`` with
    the criterion of :func:`push_trial` (slip of the feet while they stand)."""
    from wbc.sim import walking

    push = force * np.asarray(DIRECTIONS[direction])
    _, _, s = walking.stand_and_push(robot, push, 1.0, STEPPING_TRIAL_S, duration, recover=recover)
    return {**_verdict(force, s), "recovery_steps": len(s["recovery_steps"]), "failed_steps": s["failed_steps"]}


# ============================================================================ robustness: scan and soak
#: The push criterion of ``--push-sweep`` and the anchors' table: up, pelvis ≥ 90 %, slip < 1 cm.
MIN_PELVIS_RATIO, MAX_SLIP_M = 0.9, 0.01
#: A soak's fall is attributed to the pushes of this many seconds before it.
FALL_WINDOW = 1.5


def _verdict(force: float, s: dict) -> dict:
    """A push trial's verdict from its run's summary: ``{force_N, up, survived, slip_m, pelvis_ratio}``
    (survived: up, pelvis ≥ :data:`MIN_PELVIS_RATIO` of its height, slip < :data:`MAX_SLIP_M`)."""
    ok = not s["fell"] and s["min_pelvis_height_ratio"] >= MIN_PELVIS_RATIO and s["max_foot_slip_m"] < MAX_SLIP_M
    return {
        "force_N": float(force),
        "up": not s["fell"],
        "survived": bool(ok),
        "slip_m": s["max_foot_slip_m"],
        "pelvis_ratio": s["min_pelvis_height_ratio"],
    }


def push_trial(robot: str, force: float, duration: float = 0.1) -> dict:
    """One lateral push (+y, world) of ``force`` N over ``duration`` s at t = 1 s, 3 s in all (the
    ``--push-sweep`` scenario): ``{force_N, up, survived, slip_m, pelvis_ratio, non_optimal_steps}``."""
    sc = Scenario(
        duration=3.0, sway_start=0.0, sway_end=0.0, pushes=(Push("lateral", (0, 1, 0), force, duration, 1.0),)
    )
    s = summarize(robot, Balance(robot, sc).run(progress=False), sc)
    return {
        **_verdict(force, s),
        "non_optimal_steps": s["non_optimal_steps"],
    }


def push_scan(robot: str, forces, log=None) -> dict:
    """:func:`push_trial` at each of ``forces`` (N): the rows, the first failure (with its slip) and
    the first fall (None where every force passed)."""
    rows = []
    for f in forces:
        rows.append(push_trial(robot, f))
        if log is not None:
            log(json.dumps(rows[-1]))
    failure = next((r for r in rows if not r["survived"]), None)
    fall = next((r for r in rows if not r["up"]), None)
    return {
        "robot": robot,
        "push_duration_s": 0.1,
        "first_failure_N": None if failure is None else failure["force_N"],
        "first_failure_slip_m": None if failure is None else failure["slip_m"],
        "first_fall_N": None if fall is None else fall["force_N"],
        "rows": rows,
    }


@dataclasses.dataclass
class SoakSettings:
    """Random pushes: one every ``interval`` s (uniform), ``force`` N (uniform), ``duration`` s each,
    horizontal, in a uniformly random direction; ``seed`` the generator's."""

    seconds: float = 60.0
    interval: tuple = (0.5, 1.0)
    force: tuple = (50.0, 300.0)
    duration: float = 0.1
    settle: float = 1.0
    seed: int = 0


def soak(robot: str, settings: SoakSettings, progress: bool = True) -> dict:
    """Push the standing robot at random for ``settings.seconds`` simulated s, resetting it after a fall.

    A fall is the pelvis below half its initial height, or a diverged simulation. Feet are sampled
    every 10 steps; a push's foot displacement is how far (horizontally) a sole moved from just
    before that push to just before the next one (or a fall).

    Returns:
        falls (with the pushes of the 1.5 s before each: time, N, direction in degrees), pushes, the total foot
        displacement summed over pushes, the largest accumulated displacement of a sole from where it
        stood after the last reset, the pushes that moved a foot by more than 1 cm, the non-optimal
        steps by status, the steps whose torques were not finite (NaN count) and the exceptions.
    """
    sc = Scenario(duration=settings.seconds, sway_start=0.0, sway_end=0.0)
    bal = Balance(robot, sc)
    sim, ctrl, spec = bal.sim, bal.controller, bal.spec
    rng = np.random.default_rng(settings.seed)
    steps = int(round(settings.seconds / DT))
    z0 = sim.get_state()[0][2]

    def feet() -> np.ndarray:
        return np.array([sim.frame_placement(f)[0:2, 3] for f in spec.feet])

    def reset() -> tuple[np.ndarray, float]:
        sim.reset(spec.q0)
        for c in ctrl.contacts:  # where the feet stand now
            ctrl.activate_contact(c.name)
        return feet(), settings.settle

    out: dict = {"robot": robot, "seconds": settings.seconds, "seed": settings.seed, "pushes": 0, "falls": []}
    statuses: dict[str, int] = {}
    nan_steps, exceptions = 0, []
    home, next_push = reset()
    before, last_push = home.copy(), None
    displacement_total, over_1cm, drift_max = 0.0, 0, 0.0
    bar = _Progress(steps) if progress else None
    t_local = 0.0

    recent: list[tuple[float, float, float]] = []  # pushes of the last FALL_WINDOW s: (t, N, direction deg)

    def fallen(i: int) -> None:
        nonlocal home, next_push, t_local, before, last_push
        t = i * DT  # a fall takes time: name the pushes of the last 1.5 s, not only the last one
        pushes = [[round(pt, 3), round(f, 1), round(a)] for pt, f, a in recent if t - pt <= FALL_WINDOW]
        out["falls"].append({"t": round(t, 3), "pushes_before_t_N_deg": pushes})
        recent.clear()
        home, next_push = reset()
        t_local, before, last_push = 0.0, home.copy(), None

    for i in range(steps):
        if bar is not None:
            bar.update(i + 1)
        q, v = sim.get_state()
        if q[2] < 0.5 * z0:
            fallen(i)
            continue
        try:
            cmd = ctrl.step(q, v)
        except wbc.WbcError as exc:  # reported, never hidden
            exceptions.append(f"t={i * DT:.3f}: {exc}")
            fallen(i)
            continue
        if cmd.status is not wbc.StepStatus.OPTIMAL:
            statuses[cmd.status.value] = statuses.get(cmd.status.value, 0) + 1
        if not np.all(np.isfinite(cmd.tau)):
            nan_steps += 1
        sim.set_torques(np.nan_to_num(cmd.tau))
        if t_local >= next_push:
            now = feet()
            if last_push is not None:
                moved = float(np.linalg.norm(now - before, axis=1).max())
                displacement_total += moved
                over_1cm += moved > 0.01
            before = now
            angle = rng.uniform(0, 2 * np.pi)
            force = rng.uniform(*settings.force)
            sim.apply_push(bal.base, force * np.array([np.cos(angle), np.sin(angle), 0.0]), settings.duration)
            last_push = (i * DT, force, float(np.degrees(angle)))
            recent[:] = [p for p in recent if i * DT - p[0] <= FALL_WINDOW] + [last_push]
            out["pushes"] += 1
            next_push = t_local + rng.uniform(*settings.interval)
        try:
            sim.step()
        except wbc.SimulationDiverged:
            fallen(i)
            continue
        t_local += DT
        if i % 10 == 0:
            drift_max = max(drift_max, float(np.linalg.norm(feet() - home, axis=1).max()))
    if bar is not None:
        bar.close()
    out.update(
        n_falls=len(out["falls"]),
        foot_displacement_total_m=round(displacement_total, 4),
        foot_drift_max_m=round(drift_max, 4),
        pushes_moving_a_foot_over_1cm=int(over_1cm),
        non_optimal_steps=statuses,
        nan_steps=nan_steps,
        exceptions=exceptions,
        steps=steps,
    )
    return out


def add_robustness_arguments(parser: argparse.ArgumentParser) -> None:
    """``--push-scan`` and ``--soak`` (and their settings)."""
    parser.add_argument("--push-scan", action="store_true", help="lateral pushes over a grid of forces (0-600 N)")
    parser.add_argument(
        "--scan-forces",
        type=float,
        nargs=3,
        default=(0.0, 600.0, 25.0),
        metavar=("FIRST", "LAST", "STEP"),
        help="the push-scan grid, N (default 0 600 25)",
    )
    parser.add_argument("--soak", type=float, default=None, metavar="SECONDS", help="random pushes for SECONDS")
    parser.add_argument(
        "--soak-force", type=float, nargs=2, default=(50.0, 300.0), metavar=("MIN", "MAX"), help="soak push force, N"
    )
    parser.add_argument("--seed", type=int, default=0, help="soak random seed")


def robustness_main(args) -> int:
    """Run ``--push-scan`` and/or ``--soak`` and print one JSON line each."""
    log = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    if args.push_scan:
        first, last, step = args.scan_forces
        forces = np.arange(first, last + step / 2, step)
        print(json.dumps(push_scan(args.robot, forces, log)), flush=True)
    if args.soak is not None:
        settings = SoakSettings(seconds=args.soak, force=tuple(args.soak_force), seed=args.seed)
        print(json.dumps(soak(args.robot, settings, progress=not args.quiet)), flush=True)
    return 0


def _open_viewer(balance: Balance):
    if sys.platform.startswith("linux") and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        print("--viewer: no display here (DISPLAY is not set); running headless", file=sys.stderr)
        return None
    try:
        import mujoco.viewer

        return mujoco.viewer.launch_passive(balance.sim.mjmodel, balance.sim.mjdata)
    except Exception as exc:
        print(f"--viewer: cannot open MuJoCo's viewer ({exc}); running headless", file=sys.stderr)
        return None


def _open_renderer(balance: Balance):
    try:
        import mujoco

        return mujoco.Renderer(balance.sim.mjmodel, 480, 640)
    except Exception as exc:
        print(
            f"--video: offscreen rendering unavailable ({exc}); set MUJOCO_GL=egl or osmesa where an "
            "OpenGL backend exists. No video written.",
            file=sys.stderr,
        )
        return None


def _write_video(frames: list, path: Path) -> None:
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        print("--video: ffmpeg not found; no video written", file=sys.stderr)
        return
    h, w, _ = frames[0].shape
    cmd = [
        ffmpeg,
        "-y",
        "-loglevel",
        "error",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "rgb24",
        "-s",
        f"{w}x{h}",
        "-r",
        "30",
        "-i",
        "-",
        "-pix_fmt",
        "yuv420p",
        str(path),
    ]
    subprocess.run(cmd, input=b"".join(f.tobytes() for f in frames), check=True)
    print(f"video written to {path}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--robot", default="talos", choices=sorted(DEFAULTS))
    parser.add_argument("--out", type=Path, default=None, help="output directory (default out/balance_<robot>)")
    parser.add_argument("--duration", type=float, default=9.0, help="simulated time, s")
    parser.add_argument("--push-lateral", type=float, default=None, help="lateral push force, N (default per robot)")
    parser.add_argument("--push-forward", type=float, default=None, help="forward push force, N (default per robot)")
    parser.add_argument("--push-duration", type=float, default=0.1, help="push duration, s")
    parser.add_argument("--push-sweep", action="store_true", help="find the largest lateral push survived (bisection)")
    parser.add_argument(
        "--push-direction", choices=sorted(DIRECTIONS), default="lateral", help="with --push-sweep (default lateral)"
    )
    parser.add_argument(
        "--stepping", action="store_true", help="with --push-sweep: also the largest push survived with recovery steps"
    )
    add_robustness_arguments(parser)
    parser.add_argument("--viewer", action="store_true", help="open MuJoCo's viewer (needs a display)")
    parser.add_argument("--video", type=Path, default=None, help="render an mp4 offscreen (needs OpenGL and ffmpeg)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--replay", action="store_true", help="write replay.html (a 3D replay; needs wbc[viz])")
    args = parser.parse_args(argv)

    if args.push_scan or args.soak is not None:
        return robustness_main(args)
    if args.push_sweep:
        d = args.push_direction
        force = push_sweep(args.robot, direction=d)
        result = {"robot": args.robot, f"largest_{d}_push_N": round(force, 1), "push_duration_s": 0.1}
        if args.stepping:
            stepping = push_sweep(args.robot, stepping=True, direction=d)
            result[f"largest_{d}_push_with_stepping_N"] = round(stepping, 1)
        print(json.dumps(result))
        return 0
    out = args.out or Path("out") / f"balance_{args.robot}"
    out.mkdir(parents=True, exist_ok=True)
    scenario = scenario_for(args.robot, args)
    balance = Balance(args.robot, scenario)
    viewer = _open_viewer(balance) if args.viewer else None
    renderer = _open_renderer(balance) if args.video else None
    frames: list = []
    replay = Replay(balance.model, balance.spec.urdf, title=f"wbc: {args.robot} balancing") if args.replay else None
    run = balance.run(progress=not args.quiet, viewer=viewer, frames=frames, renderer=renderer, replay=replay)
    if replay is not None:
        replay.write(out / "replay.html")
    if viewer is not None:
        viewer.close()
    if renderer is not None and frames:
        _write_video(frames, args.video)
    summary = summarize(args.robot, run, scenario)
    np.savez_compressed(out / "log.npz", **{k: v for k, v in run.items() if isinstance(v, np.ndarray)})
    if not args.no_plots and len(run["t"]):
        summary["plots"] = [p.name for p in plot(run, balance, out)]
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 0 if not summary["fell"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
