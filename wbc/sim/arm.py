"""Task-space control of a torque-controlled arm in MuJoCo: wbc's QP controller vs classical OSC.

The end effector tracks a :class:`Circle` (vertical, in the y-z plane, orientation held) with the
same gains for two controllers:

* :class:`QP`: :class:`wbc.WholeBodyController` with a 6D frame task and a low-weight posture task
  (the redundancy), torque limits from the URDF;
* :class:`OSC`: the classical operational-space law ``τ = Jᵀ Λ (ẍ* − J̇v) + h + (I − Jᵀ Λ J M⁻¹) τ₀``
  with ``Λ⁻¹ = J M⁻¹ Jᵀ`` from PV-OSIMr, ``M⁻¹Jᵀ`` from the IIM, ``h`` from the RNEA and a
  joint-space PD ``τ₀`` in the dynamically consistent null space, all evaluated by one compiled
  kernel traced from wbc's algorithms.

:func:`simulate` runs either in MuJoCo at 1 kHz (``demos/arm_task_space.py`` is its command line).
MuJoCo is the optional ``sim`` extra; ``import wbc`` never imports this module.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from tqdm import tqdm

import wbc
from wbc.algorithms.constraints import resolve
from wbc.algorithms.delassus import pv_osimr
from wbc.algorithms.dynamics import ArticulatedBodies, nonlinear_effects
from wbc.algorithms.iim import iim
from wbc.algorithms.kinematics import TreeKinematics
from wbc.codegen import compile_function, trace
from wbc.spatial.lie import log3

from . import catalog
from .mujoco import MujocoSim

__all__ = ["EE", "OSC", "QP", "Circle", "osc_kernel", "rms", "simulate"]

#: The Panda's end-effector frame (the demo's default).
EE = "panda_hand_tcp"
#: Control and simulation period, s.
DT = 1e-3
#: Task and posture stiffness (1/s²), critically damped.
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
    return log3(R_ref @ R.T)


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
        tasks = catalog.tasks()
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
    """Track ``circle`` for ``duration`` s from ``q0`` with ``controller`` (:class:`QP` or :class:`OSC`),
    torques clipped to the effort limits; the log: ``t``, ``err_p`` (m), ``err_r`` (rad), ``tau``
    (T, nu), ``us`` (step times, µs). ``replay``: a :class:`wbc.viz.Replay` (about 30 frames per second)."""
    sim = MujocoSim(model)
    sim.reset(q0)
    steps = int(round(duration / DT))
    log: dict[str, list] = {"t": [], "err_p": [], "err_r": [], "tau": [], "us": []}
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
    """Root mean square of ``x``."""
    return float(np.sqrt(np.mean(x * x)))
