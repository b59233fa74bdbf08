"""Quadruped balancing in MuJoCo on four point feet under wbc's whole-body controller.

A quadruped (Go2 by default; ``--robot solo12`` or ``anymal_c``) stands on four point feet
(``wbc.PointContact``: 3D forces, friction pyramids; spheres in MuJoCo) in a 1 kHz simulation with
:class:`wbc.WholeBodyController` in the loop. The scenario has the humanoid demo's shape:

1. settle (1 s);
2. CoM sway: a lateral sinusoid of the CoM reference with smooth 1 s ramps (4 s);
3. a lateral push on the base, then a forward push;
4. quiet standing until the end.

Tasks: CoM, base orientation, joint posture; contacts: the four feet (μ = 0.7), torque limits from
the URDF. Writes to ``--out`` the plots ``com.png``, ``feet.png`` (normal forces, friction use
|f_t|/(μ f_n)), ``torques.png``, ``step_time.png``, the log ``log.npz`` and ``summary.json``;
``--replay`` also writes ``replay.html``, a 3D replay that opens offline in a browser.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import wbc
from wbc import robots, tasks
from wbc.figures import plot_torques_against_limits

try:
    from wbc.sim.mujoco import ContactSphere, MujocoSim
except ImportError as exc:  # pragma: no cover - needs the 'sim' extra
    raise SystemExit(f"{exc}\nthe balance demo needs MuJoCo: pip install 'wbc[sim]'") from None

DT = 1e-3
MU = 0.7
#: Replay frames per second (every 33 control steps).
REPLAY_EVERY = 33


@dataclasses.dataclass
class Push:
    """A push on the base: world ``direction`` (unit), ``force_N`` over ``duration_s`` from ``time_s``."""

    name: str
    direction: tuple
    force_N: float
    duration_s: float
    time_s: float

    def force(self, t: float) -> np.ndarray | None:
        """The push force (3,) at time ``t``, or None outside it."""
        if self.time_s <= t < self.time_s + self.duration_s:
            return self.force_N * np.asarray(self.direction, float)
        return None


@dataclasses.dataclass
class Scenario:
    """Timeline (s) and the lateral sway of the CoM reference (amplitude m, frequency Hz)."""

    duration: float = 9.0
    sway_start: float = 1.0
    sway_end: float = 5.0
    sway_amplitude: float = 0.02
    sway_frequency: float = 0.5
    sway_ramp: float = 1.0
    pushes: tuple = ()

    def com_offset(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Lateral offset of the CoM reference: position, velocity, acceleration (C² envelope)."""
        zero = (np.zeros(3), np.zeros(3), np.zeros(3))
        if not self.sway_start <= t < self.sway_end:
            return zero
        s, T = t - self.sway_start, self.sway_end - self.sway_start
        e, de, dde = _envelope(s, T, min(self.sway_ramp, T / 2))
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
    return e, 30 * x * x * (1 - x) ** 2 / ramp * sign, 60 * x * (1 - x) * (1 - 2 * x) / ramp**2


#: Per-robot defaults: sway amplitude (m) and push magnitude (N, over 0.1 s).
DEFAULTS = {
    "go2": {"sway": 0.02, "push": 40.0},
    "solo12": {"sway": 0.015, "push": 6.0},
    "anymal_c": {"sway": 0.03, "push": 150.0},
}


class Balance:
    """The simulator, the controller and the per-step bookkeeping of one run."""

    def __init__(self, robot: str, scenario: Scenario) -> None:
        self.spec = spec = robots.load(robot)
        self.model = model = spec.model
        self.scenario = scenario
        self.base = model.joints[1].link
        spheres = [ContactSphere(f, spec.foot_radius) for f in spec.feet]
        self.sim = MujocoSim(model, contact_spheres=spheres)
        self.sim.reset(spec.q0)
        contacts = [wbc.PointContact(f, mu=MU) for f in spec.feet]
        self.com = tasks.CoMTask(weight=10.0, kp=100.0)
        self.orientation = tasks.OrientationTask(self.base, weight=1.0, kp=100.0)
        self.posture = tasks.PostureTask(model, weight=1e-2, kp=30.0)
        self.controller = wbc.WholeBodyController(model, [self.com, self.orientation, self.posture], contacts)
        self.controller.compile()
        self.com0 = wbc.center_of_mass(model, spec.q0)
        self.orientation.set_target_from_configuration(model, spec.q0)
        self.posture.set_target(self.controller.within_limits(spec.q0))
        self.com.set_target(self.com0)

    def run(self, progress: bool = True, replay=None) -> dict:
        """Simulate the scenario; returns the log (arrays over time). ``replay``: a
        :class:`wbc.viz.Replay` to record into (about 30 frames per second)."""
        sc, sim, spec, model = self.scenario, self.sim, self.spec, self.model
        steps = int(round(sc.duration / DT))
        feet0 = {f: sim.frame_placement(f)[0:3, 3].copy() for f in spec.feet}
        base_z0 = sim.get_state()[0][2]
        log = {k: [] for k in ("t", "com", "com_ref", "base_z", "tau", "force", "slip", "step_us", "status")}
        pushes = sorted(sc.pushes, key=lambda p: p.time_s)
        fell = False
        if replay is not None:
            from wbc.viz import contact_arrows
        bar = tqdm(total=steps, unit="step", desc=spec.name, disable=not progress or not sys.stderr.isatty())
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
            if replay is not None and i % REPLAY_EVERY == 0:
                arrows = contact_arrows(model, q, self.controller.contacts, cmd.forces)
                active = {p.name: (q[0:3].copy(), p.force(t)) for p in sc.pushes if p.force(t) is not None}
                replay.add(t, q, contacts=arrows, pushes=active)
            try:
                sim.step()
            except wbc.SimulationDiverged:
                fell = True
                break
            self._record(log, t, q, cmd, offset, feet0)
            bar.update(1)
            if q[2] < 0.5 * base_z0:
                fell = True
                break
        bar.close()
        out = {k: np.asarray(v) for k, v in log.items()}
        out["fell"] = fell
        out["base_z0"] = base_z0
        return out

    def _record(self, log: dict, t: float, q: np.ndarray, cmd: wbc.Command, offset: np.ndarray, feet0: dict) -> None:
        every_10 = len(log["t"]) % 10 == 0
        log["t"].append(t)
        log["com"].append(wbc.center_of_mass(self.model, q) if every_10 else log["com"][-1])
        log["com_ref"].append(self.com0 + offset)
        log["base_z"].append(q[2])
        log["tau"].append(cmd.tau)
        log["force"].append([cmd.forces[c.name] for c in self.controller.contacts])
        log["slip"].append(
            [np.linalg.norm((self.sim.frame_placement(f)[0:3, 3] - feet0[f])[0:2]) for f in self.spec.feet]
            if every_10
            else log["slip"][-1]
        )
        log["status"].append(cmd.status is wbc.StepStatus.OPTIMAL)


def summarize(robot: str, run: dict, scenario: Scenario) -> dict:
    com_err = np.linalg.norm(run["com"] - run["com_ref"], axis=1) if len(run["com"]) else np.array([np.inf])
    f = run["force"]
    friction = np.linalg.norm(f[..., :2], axis=-1) / (MU * np.maximum(f[..., 2], 1e-9)) if len(f) else np.zeros(1)
    return {
        "robot": robot,
        "fell": bool(run["fell"]),
        "min_base_height_ratio": round(float(np.min(run["base_z"]) / run["base_z0"]), 4) if len(run["base_z"]) else 0.0,
        "max_com_error_m": round(float(np.max(com_err)), 5),
        "max_foot_slip_m": round(float(np.max(run["slip"])), 6) if len(run["slip"]) else float("inf"),
        "min_normal_force_N": round(float(f[..., 2].min()), 3) if len(f) else None,
        "max_friction_use": round(float(friction.max()), 4),
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

    t, pushes, paths = run["t"], balance.scenario.pushes, []

    def mark(ax):
        for p in pushes:
            ax.axvspan(p.time_s, p.time_s + p.duration_s, color="tab:red", alpha=0.25, lw=0)

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        paths.append(out / name)

    fig, axes = plt.subplots(3, 1, figsize=(9, 7), sharex=True)
    for k, (ax, name) in enumerate(zip(axes, "xyz")):
        ax.plot(t, run["com_ref"][:, k], "--", color="k", lw=1, label="reference")
        ax.plot(t, run["com"][:, k], color="tab:blue", lw=1.2, label="actual")
        ax.set_ylabel(f"CoM {name} (m)")
        mark(ax)
    axes[0].legend(loc="upper right")
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(f"{balance.spec.name}: CoM tracking (red: pushes)")
    save(fig, "com.png")

    fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    f = run["force"]
    for k, name in enumerate(balance.spec.feet):
        axes[0].plot(t, f[:, k, 2], lw=1.2, label=name)
        axes[1].plot(t, np.linalg.norm(f[:, k, :2], axis=1) / (MU * np.maximum(f[:, k, 2], 1e-9)), lw=1.0, label=name)
    axes[0].axhline(balance.model.total_mass * 9.81 / 4, color="k", ls=":", lw=1, label="m g / 4")
    axes[0].set_ylabel("normal force (N)")
    axes[0].legend(loc="upper right", fontsize=8, ncol=2)
    axes[1].axhline(1.0, color="tab:red", lw=1.2)
    axes[1].set_ylabel("|f_t| / (μ f_n)")
    axes[1].set_ylim(0, 1.1)
    for ax in axes:
        mark(ax)
    axes[-1].set_xlabel("time (s)")
    fig.suptitle("Foot forces (commanded): normal force and friction use (1 = on the cone)")
    save(fig, "feet.png")

    fig, ax = plt.subplots(figsize=(9, 4.5))
    plot_torques_against_limits(ax, t, run["tau"], balance.model)
    mark(ax)
    save(fig, "torques.png")

    fig, ax = plt.subplots(figsize=(7, 4))
    us = run["step_us"]
    ax.hist(us, bins=np.linspace(0, np.percentile(us, 99.5) * 1.1, 60), color="tab:blue")
    ax.axvline(np.median(us), color="k", ls="--", label=f"median {np.median(us):.0f} µs")
    ax.set_xlabel("controller step (µs)")
    ax.set_ylabel("steps")
    ax.legend()
    ax.set_title(f"Control-step time ({len(us)} steps, this machine, this run)")
    save(fig, "step_time.png")
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    parser.add_argument("--robot", default="go2", choices=sorted(DEFAULTS))
    parser.add_argument("--out", type=Path, default=None, help="output directory (default out/quadruped_<robot>)")
    parser.add_argument("--duration", type=float, default=9.0, help="simulated time, s")
    parser.add_argument("--push-lateral", type=float, default=None, help="lateral push force, N (default per robot)")
    parser.add_argument("--push-forward", type=float, default=None, help="forward push force, N (default per robot)")
    parser.add_argument("--push-duration", type=float, default=0.1, help="push duration, s")
    parser.add_argument("--replay", action="store_true", help="write replay.html (a 3D replay; needs wbc[viz])")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)

    out = args.out or Path("out") / f"quadruped_{args.robot}"
    out.mkdir(parents=True, exist_ok=True)
    scenario = scenario_for(args.robot, args)
    balance = Balance(args.robot, scenario)
    replay = None
    if args.replay:
        from wbc.viz import Replay

        replay = Replay(balance.model, balance.spec.urdf, title=f"wbc: {args.robot} balancing on point feet")
    run = balance.run(progress=not args.quiet, replay=replay)
    summary = summarize(args.robot, run, scenario)
    np.savez_compressed(out / "log.npz", **{k: v for k, v in run.items() if isinstance(v, np.ndarray)})
    if not args.no_plots and len(run["t"]):
        summary["plots"] = [p.name for p in plot(run, balance, out)]
    if replay is not None:
        summary["replay"] = replay.write(out / "replay.html").name
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 0 if not summary["fell"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
