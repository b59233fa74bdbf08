"""Task-space control of a torque-controlled Panda arm in MuJoCo: QP controller vs classical OSC.

The end effector (``panda_hand_tcp``) tracks a vertical circle (radius 10 cm, 0.5 Hz) while
holding its initial orientation, with the same gains for two controllers on the same trajectory:

* **QP**: :class:`wbc.WholeBodyController` with a 6D :class:`tasks.FrameTask` and a low-weight
  :class:`tasks.PostureTask` (the redundancy), torque limits from the URDF;
* **OSC**: the classical operational-space law ``τ = Jᵀ Λ (ẍ* − J̇v) + h + (I − Jᵀ Λ J M⁻¹) τ₀`` with
  ``Λ⁻¹ = J M⁻¹ Jᵀ`` from PV-OSIMr, ``M⁻¹Jᵀ`` from the IIM, ``h`` from the RNEA and a joint-space
  PD ``τ₀`` in the dynamically consistent null space, all evaluated by one compiled kernel
  traced from wbc's algorithms (no Pinocchio at run time).

Writes ``tracking.png`` (position and orientation errors of both), ``torques.png`` (joint torques
of both against their limits) and ``summary.json`` to ``--out``, and prints the RMS errors.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import wbc
from wbc import robots, tasks
from wbc.algorithms.constraints import resolve
from wbc.algorithms.delassus import pv_osimr
from wbc.algorithms.dynamics import ArticulatedBodies, nonlinear_effects
from wbc.algorithms.iim import iim
from wbc.algorithms.kinematics import TreeKinematics
from wbc.codegen import compile_function, trace

try:
    from wbc.sim.mujoco import MujocoSim
except ImportError as exc:  # pragma: no cover
    raise SystemExit(f"{exc}\nthe arm demo needs MuJoCo: pip install 'wbc[sim]'") from None

EE = "panda_hand_tcp"
DT = 1e-3
KP, KP_POSTURE = 400.0, 10.0


class Circle:
    """A vertical circle in the y-z plane through the start position; orientation held.

    The phase speeds up smoothly (quintic profile) over ``ramp`` seconds, so the reference starts
    at rest like the robot.
    """

    def __init__(
        self, p0: np.ndarray, R0: np.ndarray, radius: float = 0.1, frequency: float = 0.5, ramp: float = 0.5
    ) -> None:
        self.center = p0 - np.array([0.0, radius, 0.0])
        self.R0, self.r, self.w, self.ramp = R0, radius, 2 * np.pi * frequency, ramp

    def _phase(self, t: float) -> tuple[float, float, float]:
        T, w = self.ramp, self.w
        if t >= T:
            return w * (t - 0.5 * T), w, 0.0
        x = t / T
        return (
            w * T * (2.5 * x**4 - 3 * x**5 + x**6),
            w * x**3 * (10 - 15 * x + 6 * x * x),
            w * 30 * x * x * (1 - x) ** 2 / T,
        )

    def __call__(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Position, velocity (6,) and acceleration (6,) references at ``t`` (angular parts zero)."""
        phi, dphi, ddphi = self._phase(t)
        c, s, r = np.cos(phi), np.sin(phi), self.r
        p = self.center + r * np.array([0.0, c, s])
        tangent, radial = np.array([0.0, -s, c]), np.array([0.0, c, s])
        v = np.concatenate([r * dphi * tangent, np.zeros(3)])
        a = np.concatenate([r * ddphi * tangent - r * dphi * dphi * radial, np.zeros(3)])
        return p, v, a


def rotation_error(R_ref: np.ndarray, R: np.ndarray) -> np.ndarray:
    """``log(R_ref Rᵀ)`` (3,), world axes."""
    return wbc.spatial.log3(R_ref @ R.T)


def osc_kernel(model: wbc.Model):
    """One compiled kernel: ``(q, v) -> (p, R, J, J̇v, h, Λ⁻¹, M⁻¹Jᵀ)`` for the end effector."""
    weld = resolve(model, [wbc.WeldConstraint(EE)])

    def build(q, v):
        kin = TreeKinematics(model, q, v)
        bodies = ArticulatedBodies.compute(model, kin)
        oMf = kin.frame_placement(model.frame_id(EE))
        J = weld[0].jacobian(kin)
        Minv_Jt = iim(model, kin, weld, bodies)[:, model.n_actuated :]
        return [
            oMf.p,
            oMf.R,
            J,
            weld[0].drift(kin),
            nonlinear_effects(model, q, v, kin=kin),
            pv_osimr(model, kin, weld, bodies),
            Minv_Jt,
        ]

    fn = trace(
        f"osc_{model.name}",
        [("q", model.nq), ("v", model.nv)],
        build,
        ["p", "R", "J", "Jdot_v", "h", "Linv", "Minv_Jt"],
    )
    return compile_function(fn)


class OSC:
    """Classical operational-space controller (see the module docstring)."""

    def __init__(self, model: wbc.Model, q0: np.ndarray) -> None:
        self.model, self.q0 = model, q0
        self.kernel = osc_kernel(model)
        self.kd = 2 * np.sqrt(KP)

    def __call__(self, q, v, ref) -> tuple[np.ndarray, np.ndarray]:
        p, R, J, Jdot_v, h, Linv, Minv_Jt = (x.copy() for x in self.kernel(q, v))
        p_ref, R_ref, vel_ref, acc_ref = ref
        e = np.concatenate([p_ref - p, rotation_error(R_ref, R)])
        xdd = acc_ref + self.kd * (vel_ref - J @ v) + KP * e
        Lam = np.linalg.inv(Linv)
        tau0 = KP_POSTURE * (self.q0 - q) - 2 * np.sqrt(KP_POSTURE) * v
        tau = J.T @ (Lam @ (xdd - Jdot_v)) + h + tau0 - J.T @ (Lam @ (Minv_Jt.T @ tau0))
        return tau, e


class QP:
    """The wbc QP controller with a frame task and a posture task."""

    def __init__(self, model: wbc.Model, q0: np.ndarray) -> None:
        self.frame = tasks.FrameTask(EE, weight=1.0, kp=KP)
        self.posture = tasks.PostureTask(model, weight=1e-3, kp=KP_POSTURE)
        self.ctrl = wbc.WholeBodyController(model, [self.frame, self.posture])
        self.ctrl.compile()
        self.posture.set_target(q0)

    def __call__(self, q, v, ref) -> tuple[np.ndarray, np.ndarray]:
        p_ref, R_ref, vel_ref, acc_ref = ref
        T = np.eye(4)
        T[0:3, 0:3], T[0:3, 3] = R_ref, p_ref
        self.frame.set_target(T, vel_ref, acc_ref)
        cmd = self.ctrl.step(q, v)
        return cmd.tau, cmd.task_errors[self.frame.name]


def simulate(controller, model: wbc.Model, q0: np.ndarray, circle: Circle, duration: float, replay=None) -> dict:
    sim = MujocoSim(model)
    sim.reset(q0)
    steps = int(round(duration / DT))
    log = {"t": [], "err_p": [], "err_r": [], "tau": [], "us": []}
    for i in tqdm(range(steps), unit="step", disable=not sys.stderr.isatty(), desc=type(controller).__name__):
        t = i * DT
        q, v = sim.get_state()
        if replay is not None and i % 33 == 0:  # wbc.viz.Replay, ~30 frames per second
            replay.add(t, q)
        p_ref, vel_ref, acc_ref = circle(t)
        clock = time.perf_counter()
        tau, e = controller(q, v, (p_ref, circle.R0, vel_ref, acc_ref))
        log["us"].append((time.perf_counter() - clock) * 1e6)
        sim.set_torques(np.clip(tau, -model.effort_limit, model.effort_limit))
        sim.step()
        log["t"].append(t)
        log["err_p"].append(np.linalg.norm(e[0:3]))
        log["err_r"].append(np.linalg.norm(e[3:6]))
        log["tau"].append(tau)
    return {k: np.asarray(v) for k, v in log.items()}


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x * x)))


def plot(runs: dict, model: wbc.Model, out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for name, run in runs.items():
        axes[0].plot(run["t"], run["err_p"] * 1e3, lw=1.2, label=f"{name} (RMS {rms(run['err_p']) * 1e3:.2f} mm)")
        axes[1].plot(
            run["t"], np.degrees(run["err_r"]), lw=1.2, label=f"{name} (RMS {np.degrees(rms(run['err_r'])):.3f}°)"
        )
    axes[0].set_ylabel("position error (mm)")
    axes[1].set_ylabel("orientation error (deg)")
    axes[1].set_xlabel("time (s)")
    for ax in axes:
        ax.legend()
    fig.suptitle("Panda end-effector circle, same gains: QP controller vs classical OSC")
    fig.tight_layout()
    fig.savefig(out / "tracking.png", dpi=110)
    plt.close(fig)

    limit = model.effort_limit
    fig, axes = plt.subplots(len(runs), 1, figsize=(9, 6), sharex=True, sharey=True)
    for ax, (name, run) in zip(np.atleast_1d(axes), runs.items()):
        for k, joint in enumerate(model.actuated_joint_names):
            ax.plot(run["t"], run["tau"][:, k] / limit[k], lw=1.0, label=joint.replace("panda_", ""))
        ax.axhline(1.0, color="tab:red", lw=1)
        ax.axhline(-1.0, color="tab:red", lw=1)
        ax.set_ylabel(f"{name}: τ / τ_max")
    np.atleast_1d(axes)[0].legend(ncol=5, fontsize=7, loc="upper right")
    np.atleast_1d(axes)[-1].set_xlabel("time (s)")
    fig.suptitle("Joint torques against their limits")
    fig.tight_layout()
    fig.savefig(out / "torques.png", dpi=110)
    plt.close(fig)
    return ["tracking.png", "torques.png"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("out") / "arm_task_space")
    parser.add_argument("--duration", type=float, default=4.0, help="simulated time, s")
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--replay", action="store_true", help="write replay.html of the QP run (needs wbc[viz])")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    spec = robots.load("panda")
    model, q0 = spec.model, spec.q0
    T0 = wbc.frame_placement(model, q0, EE)
    circle = Circle(T0[0:3, 3], T0[0:3, 0:3])
    replay = None
    if args.replay:
        from wbc.viz import Replay

        replay = Replay(model, spec.urdf, title="wbc: Panda end-effector circle (QP controller)")
    runs = {
        "QP": simulate(QP(model, q0), model, q0, circle, args.duration, replay),
        "OSC": simulate(OSC(model, q0), model, q0, circle, args.duration),
    }
    summary = {
        name: {
            "rms_position_error_m": round(rms(r["err_p"]), 7),
            "rms_orientation_error_rad": round(rms(r["err_r"]), 7),
            "max_position_error_m": round(float(r["err_p"].max()), 7),
            "step_us_median": round(float(np.median(r["us"])), 1),
        }
        for name, r in runs.items()
    }
    if not args.no_plots:
        summary["plots"] = plot(runs, model, args.out)
    if replay is not None:
        summary["replay"] = replay.write(args.out / "replay.html").name
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    for name in runs:
        s = summary[name]
        print(
            f"{name:4s} RMS position error {s['rms_position_error_m'] * 1e3:7.3f} mm, "
            f"RMS orientation error {np.degrees(s['rms_orientation_error_rad']):7.4f} deg, "
            f"step median {s['step_us_median']:.0f} µs"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
