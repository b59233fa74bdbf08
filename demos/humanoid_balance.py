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
finds, by bisection, the largest lateral push (N over 0.1 s) the robot survives.
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
        contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=0.7) for f in spec.feet]
        self.com = tasks.CoMTask(weight=10.0, kp=100.0)
        self.orientation = tasks.OrientationTask(self.base, weight=1.0, kp=100.0)
        self.posture = tasks.PostureTask(model, weight=1e-2, kp=30.0)
        self.controller = wbc.WholeBodyController(
            model, [self.com, self.orientation, self.posture], contacts, solver=solver, input_matrix=input_matrix
        )
        self.controller.compile()
        self.com0 = wbc.center_of_mass(model, spec.q0)
        self.orientation.set_target(wbc.frame_placement(model, spec.q0, self.base)[0:3, 0:3])
        self.posture.set_target(spec.q0)
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
    paths.append(_save(fig, out / "com.png"))

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
    paths.append(_save(fig, out / "feet.png"))

    fig, ax = plt.subplots(figsize=(9, 4.5))
    limit = balance.model.effort_limit
    ratio = np.abs(run["tau"]) / np.where(np.isfinite(limit) & (limit > 0), limit, np.inf)
    worst = np.argsort(ratio.max(axis=0))[::-1]
    for rank, k in enumerate(worst):
        if rank < 6:
            ax.plot(t, ratio[:, k], lw=1.2, label=balance.model.actuated_joint_names[k])
        else:
            ax.plot(t, ratio[:, k], lw=0.5, color="0.7")
    ax.axhline(1.0, color="tab:red", lw=1.5, label="limit")
    mark(ax)
    ax.set_ylim(0, 1.1)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("|τ| / τ_max")
    ax.legend(loc="upper right", fontsize=8, ncol=2)
    ax.set_title("Joint torques against their limits (six most loaded joints named)")
    paths.append(_save(fig, out / "torques.png"))

    fig, ax = plt.subplots(figsize=(7, 4))
    us = run["step_us"]
    ax.hist(us, bins=np.linspace(0, np.percentile(us, 99.5) * 1.1, 60), color="tab:blue")
    ax.axvline(np.median(us), color="k", ls="--", label=f"median {np.median(us):.0f} µs")
    ax.set_xlabel("controller step (µs)")
    ax.set_ylabel("steps")
    ax.legend()
    ax.set_title(f"Control-step time ({len(us)} steps, this machine, this run)")
    paths.append(_save(fig, out / "step_time.png"))
    return paths


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def scenario_for(robot: str, args) -> Scenario:
    d = DEFAULTS[robot]
    lateral = args.push_lateral if args.push_lateral is not None else d["push"]
    forward = args.push_forward if args.push_forward is not None else d["push"]
    pushes = (
        Push("lateral", (0.0, 1.0, 0.0), lateral, args.push_duration, 5.5),
        Push("forward", (1.0, 0.0, 0.0), forward, args.push_duration, 7.0),
    )
    return Scenario(duration=args.duration, sway_amplitude=d["sway"], pushes=tuple(p for p in pushes if p.force_N > 0))


def push_sweep(robot: str, lo: float = 0.0, hi: float = 2000.0, iterations: int = 9) -> float:
    """Largest lateral push (N over 0.1 s) survived, by bisection over short runs (settle, push, stand)."""

    def survives(force: float) -> bool:
        sc = Scenario(duration=3.0, sway_start=0.0, sway_end=0.0, pushes=(Push("lateral", (0, 1, 0), force, 0.1, 1.0),))
        run = Balance(robot, sc).run(progress=False)
        s = summarize(robot, run, sc)
        return not s["fell"] and s["min_pelvis_height_ratio"] >= 0.9 and s["max_foot_slip_m"] < 0.01

    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if survives(mid):
            lo = mid
        else:
            hi = mid
        print(f"  push sweep: survives {lo:.0f} N, fails {hi:.0f} N", file=sys.stderr)
    return lo


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
    parser.add_argument("--viewer", action="store_true", help="open MuJoCo's viewer (needs a display)")
    parser.add_argument("--video", type=Path, default=None, help="render an mp4 offscreen (needs OpenGL and ffmpeg)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--replay", action="store_true", help="write replay.html (a 3D replay; needs wbc[viz])")
    args = parser.parse_args(argv)

    if args.push_sweep:
        force = push_sweep(args.robot)
        print(json.dumps({"robot": args.robot, "largest_lateral_push_N": round(force, 1), "push_duration_s": 0.1}))
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
