"""Standing balance in MuJoCo under the whole-body controller: scenarios, pushes, scans and soaks.

A :class:`Balance` is one run's simulator and controller: a legged robot (a catalog name such as
``"talos"``, ``"g1"``, ``"go2"``, or any :class:`~wbc.sim.catalog.LeggedRobot`) standing at 1 kHz
on its soles (6D contact wrenches, CoP limits) or point feet (3D forces), under CoM, base
orientation and posture tasks, torque limits from the URDF. A :class:`Scenario` is its timeline:
a smooth lateral sway of the CoM reference and :class:`Push` es on the base.

Robustness, as library functions (the balance demos are command lines over them):

* :func:`push_trial`: one push (any horizontal direction, force, duration) on the standing robot,
  or with ``stepping`` on the walking controller free to take recovery steps; a
  :class:`PushOutcome` (up, survived, slip, base height);
* :func:`push_scan` over forces, :func:`push_sweep` (bisection: the largest push survived);
* :func:`soak`: random pushes for a while, falls and foot displacement counted.

For sweeps on many workers, :func:`push_trial` is a pure function of ``(robot, PushTrial)``: the
simulation and the controller are deterministic, the arguments and the :class:`PushOutcome` are
picklable (frozen dataclasses of numbers and strings), and the compiled kernels come from the
shared on-disk cache. :func:`soak` is a pure function of ``(robot, SoakSettings)`` (its ``seed``).

MuJoCo is the optional ``sim`` extra; ``import wbc`` never imports this module.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
from tqdm import tqdm

from wbc import (
    InputMatrixMethod,
    PointContact,
    Solver,
    StepStatus,
    SurfaceContact,
    WholeBodyController,
    center_of_mass,
    errors,
)
from wbc.command_line import docstring_parser, non_negative, positive
from wbc.control.contacts.base import DEFAULT_CONTACT_KP
from wbc.model import checks
from wbc.model.checks import option
from wbc.model.clusters import ClusterModel
from wbc.model.model import Model
from wbc.realtime import realtime_mode, sleep_until

from . import catalog
from .catalog import FootKind, LeggedRobot
from .faults import Faults
from .injection import inject
from .mujoco import ContactSphere, MujocoSim

__all__ = [
    "step_survived",
    "CONTACT_KP",
    "DT",
    "MAX_SLIP_M",
    "MIN_BASE_RATIO",
    "MU",
    "SCENARIO_DEFAULTS",
    "Balance",
    "Push",
    "PushOutcome",
    "PushTrial",
    "Scenario",
    "SoakSettings",
    "push_scan",
    "push_sweep",
    "push_trial",
    "soak",
    "standard_scenario",
    "scenario_parser",
    "scenario_from_arguments",
    "save_run",
]

#: Control and simulation period, s.
DT = 1e-3
#: Friction coefficient of the controller's contacts (MuJoCo's floor has 1).
MU = 0.7
#: Stiffness of the soles' pose feedback (1/s², damping 2 √kp): the stiffest of 10-10000 that
#: measured best in push scans (Talos and G1); the library default is 1000. Point feet keep the default.
CONTACT_KP = 3000.0
#: A push is survived when the robot is up, its base at least this share of its initial height ...
MIN_BASE_RATIO = 0.9
#: ... and its feet slipped less than this (m).
MAX_SLIP_M = 0.01
#: A soak's fall is attributed to the pushes of this many seconds before it.
FALL_WINDOW = 1.5
#: Replay frames: one every this many control steps (about 30 per second).
REPLAY_EVERY = 33


# ============================================================================ scenarios
@dataclasses.dataclass(frozen=True)
class Push:
    """A push on the base: world ``direction`` (3,), unit, ``force_N`` over ``duration_s`` from ``time_s``."""

    name: str
    direction: tuple[float, float, float]
    force_N: float
    duration_s: float
    time_s: float

    @property
    def force(self) -> np.ndarray:
        """The push force (3,), N."""
        return self.force_N * np.asarray(self.direction, float)

    def __post_init__(self) -> None:
        for what in ("force_N", "time_s"):
            if checks.finite_number(getattr(self, what), f"push {self.name!r}: {what}") < 0:
                raise errors.InputError(f"push {self.name!r}: {what} must be ≥ 0, got {getattr(self, what)!r}")
        checks.positive(self.duration_s, f"push {self.name!r}: duration_s")

    def active(self, t: float) -> bool:
        """Whether the push acts at time ``t`` (s)."""
        return self.time_s <= t < self.time_s + self.duration_s


@dataclasses.dataclass(frozen=True)
class Scenario:
    """The timeline of a run (s): a lateral sway of the CoM reference (amplitude m, frequency Hz,
    C² ramps of ``sway_ramp`` s) from ``sway_start`` to ``sway_end``, and ``pushes``."""

    duration: float = 9.0
    sway_start: float = 1.0
    sway_end: float = 5.0
    sway_amplitude: float = 0.03
    sway_frequency: float = 0.5
    pushes: tuple[Push, ...] = ()
    sway_ramp: float = 1.0

    def __post_init__(self) -> None:
        checks.positive(self.duration, "a scenario's duration (s)")

    @classmethod
    def standing(cls, duration: float, pushes: Sequence[Push] = ()) -> Scenario:
        """No sway: stand for ``duration`` s under ``pushes``."""
        return cls(duration=duration, sway_start=0.0, sway_end=0.0, pushes=tuple(pushes))

    def com_offset(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Lateral offset of the CoM reference (position, velocity, acceleration; (3,) each) at ``t``.

        ``a e(s) sin(ω s)`` with an envelope ``e`` rising and falling smoothly (C²) over
        ``sway_ramp`` seconds, so references never jump.
        """
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
    de = 30 * x * x * (1 - x) ** 2 / ramp * sign
    dde = 60 * x * (1 - x) * (1 - 2 * x) / ramp**2
    return e, de, dde


#: Per-robot scenario defaults: sway amplitude (m) and push magnitude (N over 0.1 s).
SCENARIO_DEFAULTS = {
    "talos": {"sway": 0.03, "push": 150.0},
    "g1": {"sway": 0.02, "push": 40.0},
    "go2": {"sway": 0.02, "push": 40.0},
    "solo12": {"sway": 0.015, "push": 6.0},
    "anymal_c": {"sway": 0.03, "push": 150.0},
}


#: Sway amplitude (m) and push (share of the weight, over 0.1 s) of robots without defaults.
OTHER_SWAY = 0.02
OTHER_PUSH = 0.1


def standard_scenario(
    robot: str | LeggedRobot,
    duration: float = 9.0,
    lateral: float | None = None,
    forward: float | None = None,
    push_duration: float = 0.1,
) -> Scenario:
    """The balance demos' scenario: settle 1 s, sway 4 s, a lateral push (+y) at 5.5 s and a forward
    push (+x) at 7 s (N over ``push_duration`` s; default :data:`SCENARIO_DEFAULTS`, 0 leaves a push
    out), standing until ``duration``. A robot outside the defaults (one from an MJCF) sways by
    :data:`OTHER_SWAY` m and is pushed by :data:`OTHER_PUSH` times its weight."""
    if isinstance(robot, str):
        try:
            d = SCENARIO_DEFAULTS[robot]
        except KeyError:
            raise errors.InputError(
                f"no scenario defaults for robot {robot!r}; known: {', '.join(SCENARIO_DEFAULTS)}"
            ) from None
    else:
        model = robot.model.tree if isinstance(robot.model, ClusterModel) else robot.model
        weight = model.total_mass * float(np.linalg.norm(model.gravity))
        d = {"sway": OTHER_SWAY, "push": round(OTHER_PUSH * weight, 1)}
    pushes = (
        Push("lateral", (0.0, 1.0, 0.0), d["push"] if lateral is None else lateral, push_duration, 5.5),
        Push("forward", (1.0, 0.0, 0.0), d["push"] if forward is None else forward, push_duration, 7.0),
    )
    return Scenario(duration=duration, sway_amplitude=d["sway"], pushes=tuple(p for p in pushes if p.force_N > 0))


def scenario_parser(doc: str, robots: Sequence[str], default_robot: str, out_prefix: str) -> argparse.ArgumentParser:
    """The balance demos' command line: described by the demo's docstring ``doc`` (first paragraph,
    the rest as epilog), with ``--robot`` (one of ``robots``), ``--out`` (default
    ``out/<out_prefix>_<robot>``), ``--duration`` and the two pushes' forces and duration
    (:func:`scenario_from_arguments` builds the scenario from them)."""
    parser = docstring_parser(doc)
    parser.add_argument("--robot", default=default_robot, choices=list(robots))
    parser.add_argument("--out", type=Path, default=None, help=f"output directory (default out/{out_prefix}_<robot>)")
    parser.add_argument("--duration", type=positive, default=9.0, help="simulated time, s")
    parser.add_argument(
        "--push-lateral", type=non_negative, default=None, help="lateral push force (+y), N (default per robot)"
    )
    parser.add_argument(
        "--push-forward", type=non_negative, default=None, help="forward push force (+x), N (default per robot)"
    )
    parser.add_argument("--push-duration", type=positive, default=0.1, help="push duration, s")
    return parser


def scenario_from_arguments(robot: str | LeggedRobot, args: argparse.Namespace) -> Scenario:
    """:func:`standard_scenario` with the options of :func:`add_scenario_arguments`."""
    return standard_scenario(robot, args.duration, args.push_lateral, args.push_forward, args.push_duration)


# ============================================================================ one run
class Balance:
    """The simulator, the controller and the per-step bookkeeping of one balancing run.

    Args:
        robot: a catalog name or a :class:`~wbc.sim.catalog.LeggedRobot` (soles or point feet).
        scenario: the timeline.
        solver: the QP solver (an enum, or its name).
        input_matrix: how the controller computes ``B̂`` (an enum, or its name).
        contact_kp: the contacts' pose-feedback stiffness (1/s²); default :data:`CONTACT_KP` for
            soles, the library's default for point feet, at a 1 ms period (scaled by ``(1 ms / Δt)²``
            for a robot whose MJCF sets another time step ``Δt``: the same feedback per step).
        faults: model errors, sensor noise, latency, actuator limits (:mod:`wbc.sim.faults`);
            None or all off: none.

    Raises:
        ModelError: the robot has no feet (see :func:`wbc.sim.catalog.legged_robot`).
    """

    def __init__(
        self,
        robot: str | LeggedRobot,
        scenario: Scenario,
        solver: Solver | str = Solver.DAQP,
        input_matrix: InputMatrixMethod | str = InputMatrixMethod.IIM,
        contact_kp: float | None = None,
        faults: Faults | None = None,
    ) -> None:
        self.spec = spec = catalog.legged_robot(robot, "balance")
        self.model = model = spec.model
        self.tree: Model = model.tree if isinstance(model, ClusterModel) else model
        self.scenario = scenario
        self.feet = catalog.foot_kind(spec)
        self.base = self.tree.joints[1].link
        contacts: list
        sole = spec.sole
        own = getattr(spec, "simulator", None)  # a robot from an MJCF: its own file in MuJoCo
        if sole is not None:
            self.sim = own() if own else MujocoSim(model, [(f, sole.length, sole.width) for f in spec.feet])
        else:
            radius = cast(float, spec.foot_radius)  # legged_robot: a sole or a radius
            self.sim = own() if own else MujocoSim(model, contact_spheres=[ContactSphere(f, radius) for f in spec.feet])
        #: The control period, s: the simulator's time step (1 ms but for an MJCF's own setting).
        self.dt = self.sim.timestep
        # the contact stiffness for a period other than 1 ms keeps kp Δt² (the step's feedback) the same
        stiffness = (CONTACT_KP if sole is not None else DEFAULT_CONTACT_KP) * (DT / self.dt) ** 2
        kp = stiffness if contact_kp is None else contact_kp
        if sole is not None:
            contacts = [SurfaceContact(f, sole.length, sole.width, mu=MU, kp=kp) for f in spec.feet]
        else:
            contacts = [PointContact(f, mu=MU, kp=kp) for f in spec.feet]
        self.sim.reset(spec.q0)
        self.faults = inject(faults, self.sim, model, dict(getattr(spec, "locked", ())))
        if self.faults is not None:  # the controller's model and sensors, the motors (wbc.sim.injection)
            self.sim, model = self.faults.sim, self.faults.controller_model
        tasks = catalog.tasks()
        self.com = tasks.CoMTask(weight=10.0, kp=100.0)
        self.orientation = tasks.OrientationTask(self.base, weight=1.0, kp=100.0)
        self.posture = tasks.PostureTask(model, weight=1e-2, kp=30.0)
        self.controller = WholeBodyController(
            model,
            [self.com, self.orientation, self.posture],
            contacts,
            solver=solver,
            input_matrix=option(InputMatrixMethod, input_matrix, "input_matrix"),
            dt=self.dt,
        )
        self.controller.compile()
        if self.faults is not None:
            self.controller = self.faults.controller(self.controller)
        tree = model.tree if isinstance(model, ClusterModel) else model  # the controller's
        self.com0 = center_of_mass(tree, spec.q0)
        self.orientation.set_target_from_configuration(tree, spec.q0)
        self.posture.set_target(self.controller.within_limits(spec.q0))
        self.com.set_target(self.com0)

    @property
    def base_name(self) -> str:
        """What the summaries call the floating base: ``"pelvis"`` (soles: a humanoid) or ``"base"``."""
        return "pelvis" if self.feet is FootKind.SOLE else "base"

    def run(
        self,
        progress: bool = True,
        replay=None,
        on_step: Callable | None = None,
        realtime: bool = False,
        priority: int | None = None,
        paced: bool = False,
    ) -> dict:
        """Simulate the scenario; returns the log (arrays over time, see :meth:`summarize`).

        The controller is warmed up at the initial state right before the loop
        (:meth:`~wbc.WholeBodyController.warm_up`): the first step costs what a step costs.

        Args:
            progress: a progress bar on stderr (where stderr is a terminal).
            replay: a :class:`wbc.viz.Replay` to record into (about 30 frames per second).
            on_step: called as ``on_step(i, t, q, v, cmd)`` after every control step, before the
                simulator steps (a viewer's sync, a video frame, a check).
            realtime: run the loop in :func:`wbc.realtime_mode` (garbage collector frozen, memory
                locked where permitted, a warning where not).
            priority: with ``realtime``, the loop's thread under ``SCHED_FIFO`` at this priority
                (1-99; None: its scheduling left alone).
            paced: each step starts on the wall clock's tick of the control period (the loop sleeps
                between steps, as a robot's 1 kHz loop), not as soon as the last one ends.

        Returns:
            ``t`` (T,), ``com``/``com_ref`` (T, 3) (the CoM sampled every 10 steps), ``base_z`` (T,),
            ``tau`` (T, nu), ``slip`` (T, feet) (horizontal, m, every 10 steps), ``step_us`` (T,),
            ``status`` (T,) (OPTIMAL or not), the contact forces (soles: ``normal`` (T, 2) and ``cop``
            (T, 2, 2) in the sole; point feet: ``force`` (T, 4, 3)), ``fell`` and ``base_z0``.
        """
        if priority is not None and not realtime:
            raise errors.InputError("Balance.run: a priority is for the real-time mode (realtime=True)")
        sc, sim, spec = self.scenario, self.sim, self.spec
        steps = int(round(sc.duration / self.dt))
        feet0 = {f: sim.frame_placement(f)[0:3, 3].copy() for f in spec.feet}
        base_z0 = sim.get_state()[0][2]
        forces = ("normal", "cop") if self.feet is FootKind.SOLE else ("force",)
        log: dict = {k: [] for k in ("t", "com", "com_ref", "base_z", "tau", *forces, "slip", "step_us", "status")}
        pending = sorted(sc.pushes, key=lambda p: p.time_s)
        bar = tqdm(total=steps, unit="step", desc=spec.name, disable=not progress or not sys.stderr.isatty())
        with realtime_mode(priority=priority) if realtime else contextlib.nullcontext():
            self.controller.warm_up(*sim.get_state())  # last: nothing evicts it before the first step
            fell = self._loop(steps, log, pending, feet0, base_z0, bar, replay, on_step, paced)
        bar.close()
        out: dict = {k: np.asarray(v) for k, v in log.items()}
        out["fell"] = fell
        out["base_z0"] = base_z0
        return out

    def _loop(
        self,
        steps: int,
        log: dict,
        pending: list[Push],
        feet0: dict,
        base_z0: float,
        bar: tqdm,
        replay,
        on_step: Callable | None,
        paced: bool = False,
    ) -> bool:
        """The control loop of :meth:`run` (``steps`` steps at most, ``log`` appended to, the ``pending``
        pushes applied when due; ``paced``: step ``i`` starts ``i`` periods after the first); whether
        the robot fell."""
        sc, sim = self.scenario, self.sim
        fell = False
        start = 0.0
        for i in range(steps):
            t = i * self.dt
            q, v = sim.get_state()
            offset, vel, acc = sc.com_offset(t)
            self.com.set_target(self.com0 + offset, vel, acc)
            if paced:  # the controller's step is what starts on the tick (what precedes it varies by µs)
                if i == 0:
                    start = time.perf_counter()
                else:
                    sleep_until(start + t)
            clock = time.perf_counter()
            cmd = self.controller.step(q, v)
            step_us = (time.perf_counter() - clock) * 1e6
            sim.set_torques(cmd.tau)
            apply_due_pushes(sim, self.base, pending, t)
            if replay is not None and i % REPLAY_EVERY == 0:
                self._record_frame(replay, t, q, cmd)
            if on_step is not None:
                on_step(i, t, q, v, cmd)
            if not step_survived(sim):
                fell = True
                break
            log["step_us"].append(step_us)  # a row per completed step in every array
            self._record(log, t, q, cmd, offset, feet0)
            bar.update(1)
            if q[2] < 0.5 * base_z0:
                fell = True
                break
        return fell

    def push_spans(self) -> list[tuple[float, float]]:
        """The scenario's pushes as (start, end) times, s (to mark them on plots)."""
        return [(p.time_s, p.time_s + p.duration_s) for p in self.scenario.pushes]

    def _record_frame(self, replay, t: float, q: np.ndarray, cmd) -> None:
        from wbc.viz import contact_arrows

        arrows = contact_arrows(self.tree, q, self.controller.contacts, cmd.forces)
        active = {p.name: (q[0:3].copy(), p.force) for p in self.scenario.pushes if p.active(t)}
        replay.add(t, q, arrows, active)

    def _record(self, log: dict, t: float, q: np.ndarray, cmd, offset: np.ndarray, feet0: dict) -> None:
        every_10 = len(log["t"]) % 10 == 0
        log["t"].append(t)
        log["com"].append(center_of_mass(self.tree, q) if every_10 else log["com"][-1])
        log["com_ref"].append(self.com0 + offset)
        log["base_z"].append(q[2])
        log["tau"].append(cmd.tau)
        wrenches = [cmd.forces[c.name] for c in self.controller.contacts]
        if self.feet is FootKind.SOLE:
            log["normal"].append([w[2] for w in wrenches])
            log["cop"].append([[-w[4] / max(w[2], 1e-9), w[3] / max(w[2], 1e-9)] for w in wrenches])
        else:
            log["force"].append(wrenches)
        log["slip"].append(
            [np.linalg.norm((self.sim.frame_placement(f)[0:3, 3] - feet0[f])[0:2]) for f in self.spec.feet]
            if every_10
            else log["slip"][-1]
        )
        log["status"].append(cmd.status is StepStatus.OPTIMAL)

    def summarize(self, run: dict) -> dict:
        """A run's figures: fell, lowest base height (share of the initial), largest CoM error and
        foot slip (m), median step time (µs), steps, non-optimal steps, the pushes; point feet add
        the smallest normal force (N) and the largest friction use ``|f_t| / (μ f_n)``."""
        com_err = np.linalg.norm(run["com"] - run["com_ref"], axis=1) if len(run["com"]) else np.array([np.inf])
        out: dict = {
            "robot": self.spec.name,
            "fell": bool(run["fell"]),
            f"min_{self.base_name}_height_ratio": round(float(np.min(run["base_z"]) / run["base_z0"]), 4)
            if len(run["base_z"])
            else 0.0,
            "max_com_error_m": round(float(np.max(com_err)), 5),
            "max_foot_slip_m": round(float(np.max(run["slip"])), 6) if len(run["slip"]) else float("inf"),
        }
        if self.feet is FootKind.POINT:
            f = run["force"]
            friction = friction_use(f) if len(f) else np.zeros(1)
            out["min_normal_force_N"] = round(float(f[..., 2].min()), 3) if len(f) else None
            out["max_friction_use"] = round(float(friction.max()), 4)
        out |= {
            "step_us_median": round(float(np.median(run["step_us"])), 1) if len(run["step_us"]) else None,
            "steps": int(len(run["t"])),
            "non_optimal_steps": int(np.sum(~run["status"])) if len(run["status"]) else 0,
            "pushes": [  # those the run reached (not those after its end, or after a fall ended it)
                {"direction": p.name, "force_N": p.force_N, "duration_s": p.duration_s, "time_s": p.time_s}
                for p in self.scenario.pushes
                if len(run["t"]) and p.time_s <= run["t"][-1]
            ],
        }
        return out


def save_run(
    balance: Balance,
    run: dict,
    out: Path,
    feet_figure: Callable[[dict, Balance], object] | None,
    extra: dict | None = None,
) -> dict:
    """Write a run into ``out``: its log (``log.npz``), its plots unless ``feet_figure`` is None or
    the run has no step (``com.png``: CoM reference and actual; ``feet.png``: the figure
    ``feet_figure(run, balance)`` draws; ``torques.png``; ``step_time.png``; pushes marked), and
    ``summary.json``: :meth:`Balance.summarize` with ``extra`` and the plots' names. Returns the
    summary. The plots need the ``plots`` extra (matplotlib)."""
    summary = balance.summarize(run) | (extra or {})
    arrays: dict[str, Any] = {k: v for k, v in run.items() if isinstance(v, np.ndarray)}
    np.savez_compressed(out / "log.npz", **arrays)
    if feet_figure is not None and len(run["t"]):
        from wbc.figures import com_tracking_figure, save_figure, step_time_figure, torques_figure

        t, spans = run["t"], balance.push_spans()
        title = f"{balance.spec.name}: CoM tracking (red: pushes)"
        draw = {  # drawn and closed one after the other
            "com.png": lambda: com_tracking_figure(t, run["com"], run["com_ref"], title, spans),
            "feet.png": lambda: feet_figure(run, balance),
            "torques.png": lambda: torques_figure(t, run["tau"], balance.model, spans),
            "step_time.png": lambda: step_time_figure(run["step_us"]),
        }
        summary["plots"] = [save_figure(make(), out / name).name for name, make in draw.items()]
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def friction_use(forces: np.ndarray) -> np.ndarray:
    """``|f_t| / (μ f_n)`` of point-foot forces (..., 3) (1: on the friction cone)."""
    return np.linalg.norm(forces[..., :2], axis=-1) / (MU * np.maximum(forces[..., 2], 1e-9))


def step_survived(sim: MujocoSim) -> bool:
    """One simulator step; False when the simulation diverged (the robot is taken to have fallen)."""
    try:
        sim.step()
    except errors.SimulationDiverged:
        return False
    return True


def apply_due_pushes(sim: MujocoSim, body: str, pending: list[Push], t: float) -> None:
    """Start, on ``body``, the pushes of ``pending`` (sorted by time) due at ``t``; removes them."""
    while pending and pending[0].time_s <= t:
        p = pending.pop(0)
        sim.apply_push(body, p.force, p.duration_s)


# ============================================================================ push trials
@dataclasses.dataclass(frozen=True)
class PushTrial:
    """One push on the standing robot: a cell of a push map.

    Attributes:
        force_N: push force, N.
        direction_deg: horizontal direction, degrees from the world's +x toward +y (90: lateral +y).
        duration_s: how long the push lasts, s.
        time_s: when it starts, s (the robot settles before).
        length_s: the trial's length, s (default: 3 s standing, 4.5 s stepping, time to step and rest).
        stepping: the walking controller, free to take recovery steps (humanoids with a gait, see
            :func:`wbc.sim.walking.stand_and_push`); else the standing controller (:class:`Balance`).
    """

    force_N: float
    direction_deg: float = 90.0
    duration_s: float = 0.1
    time_s: float = 1.0
    length_s: float | None = None
    stepping: bool = False

    @property
    def direction(self) -> tuple[float, float, float]:
        """The unit direction (3,) in the world."""
        a = math.radians(self.direction_deg)
        return (round(math.cos(a), 15) + 0.0, round(math.sin(a), 15) + 0.0, 0.0)


#: A stepping trial lasts long enough for a recovery step, a closing step and coming to rest.
STEPPING_TRIAL_S = 4.5
#: The push directions the command lines name (degrees from +x).
DIRECTIONS = {"lateral": 90.0, "forward": 0.0}


@dataclasses.dataclass(frozen=True)
class PushOutcome:
    """What a :class:`PushTrial` did.

    Attributes:
        robot: the robot's name.
        trial: the trial.
        up: the robot did not fall (base above half its height, simulation finite).
        survived: up, base ≥ :data:`MIN_BASE_RATIO` of its height, slip < :data:`MAX_SLIP_M`.
        slip_m: the largest horizontal slip of a standing foot, m.
        base_ratio: the lowest base height, share of the initial.
        non_optimal_steps: control steps whose QP was not solved to optimality.
        recovery_steps: recovery steps taken (stepping trials).
    """

    robot: str
    trial: PushTrial
    up: bool
    survived: bool
    slip_m: float
    base_ratio: float
    non_optimal_steps: int
    recovery_steps: int = 0

    def row(self) -> dict:
        """The scan's row: ``{force_N, up, survived, slip_m, pelvis_ratio, non_optimal_steps}``
        (plus ``recovery_steps`` when stepping)."""
        out = {
            "force_N": float(self.trial.force_N),
            "up": self.up,
            "survived": self.survived,
            "slip_m": self.slip_m,
            "pelvis_ratio": self.base_ratio,
            "non_optimal_steps": self.non_optimal_steps,
        }
        if self.trial.stepping:
            out["recovery_steps"] = self.recovery_steps
        return out


def _survived(fell: bool, base_ratio: float, slip_m: float) -> bool:
    return not fell and base_ratio >= MIN_BASE_RATIO and slip_m < MAX_SLIP_M


def push_trial(robot: str | LeggedRobot, trial: PushTrial, faults: Faults | None = None) -> PushOutcome:
    """Run one :class:`PushTrial` on ``robot`` (a catalog name or a :class:`LeggedRobot`), under
    ``faults`` if given (:mod:`wbc.sim.faults`).

    Deterministic, and a pure function of its arguments (both picklable, as is the result): a sweep
    can run each cell in its own process.
    """
    push = Push("push", trial.direction, trial.force_N, trial.duration_s, trial.time_s)
    if trial.stepping:
        from . import walking

        length = STEPPING_TRIAL_S if trial.length_s is None else trial.length_s
        _, _, s = walking.stand_and_push(robot, push.force, trial.time_s, length, trial.duration_s, faults=faults)
        fell, ratio, slip = s["fell"], s["min_pelvis_height_ratio"], s["max_foot_slip_m"]
        return PushOutcome(
            s["robot"],
            trial,
            not fell,
            _survived(fell, ratio, slip),
            slip,
            ratio,
            s["failed_steps"],
            len(s["recovery_steps"]),
        )
    sc = Scenario.standing(3.0 if trial.length_s is None else trial.length_s, (push,))
    balance = Balance(robot, sc, faults=faults)
    s = balance.summarize(balance.run(progress=False))
    ratio = s[f"min_{balance.base_name}_height_ratio"]
    return PushOutcome(
        s["robot"],
        trial,
        not s["fell"],
        _survived(s["fell"], ratio, s["max_foot_slip_m"]),
        s["max_foot_slip_m"],
        ratio,
        s["non_optimal_steps"],
    )


def push_scan(
    robot: str | LeggedRobot, forces: Iterable[float], log: Callable[[dict], None] | None = None, **trial
) -> dict:
    """:func:`push_trial` at each of ``forces`` (N; other :class:`PushTrial` fields as keywords): the
    rows (:meth:`PushOutcome.row`), the first failure (with its slip) and the first fall (None where
    every force passed). ``log`` receives each row as it is done."""
    rows = []
    for f in forces:
        rows.append(push_trial(robot, PushTrial(float(f), **trial)).row())
        if log is not None:
            log(rows[-1])
    failure = next((r for r in rows if not r["survived"]), None)
    fall = next((r for r in rows if not r["up"]), None)
    return {
        "robot": robot if isinstance(robot, str) else robot.name,
        "push_duration_s": trial.get("duration_s", 0.1),
        "first_failure_N": None if failure is None else failure["force_N"],
        "first_failure_slip_m": None if failure is None else failure["slip_m"],
        "first_fall_N": None if fall is None else fall["force_N"],
        "rows": rows,
    }


def push_sweep(
    robot: str | LeggedRobot,
    lo: float = 0.0,
    hi: float = 2000.0,
    iterations: int = 9,
    log: Callable[[float, float], None] | None = None,
    **trial,
) -> float:
    """The largest push survived (N; other :class:`PushTrial` fields as keywords, e.g.
    ``direction_deg``, ``stepping``), by bisection of ``[lo, hi]`` over ``iterations`` trials;
    ``log(survives, fails)`` after each."""
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if push_trial(robot, PushTrial(mid, **trial)).survived:
            lo = mid
        else:
            hi = mid
        if log is not None:
            log(lo, hi)
    return lo


# ============================================================================ soak
@dataclasses.dataclass(frozen=True)
class SoakSettings:
    """Random pushes: one every ``interval`` s (uniform), ``force`` N (uniform), ``duration`` s each,
    horizontal, in a uniformly random direction; ``settle`` s after each reset; ``seed`` the
    generator's."""

    seconds: float = 60.0
    interval: tuple[float, float] = (0.5, 1.0)
    force: tuple[float, float] = (50.0, 300.0)
    duration: float = 0.1
    settle: float = 1.0
    seed: int = 0


def soak(robot: str | LeggedRobot, settings: SoakSettings, progress: bool = True, faults: Faults | None = None) -> dict:
    """Push the standing robot at random for ``settings.seconds`` simulated s, resetting it after a fall
    (under ``faults`` if given, :mod:`wbc.sim.faults`).

    A fall is the base below half its initial height, a diverged simulation or a controller error.
    Feet are sampled every 10 steps; a push's foot displacement is how far (horizontally) a foot
    moved from just before that push to just before the next one (or a fall).

    Returns:
        falls (with the pushes of the :data:`FALL_WINDOW` s before each: time, N, direction in
        degrees), pushes, the total foot displacement summed over pushes, the largest accumulated
        displacement of a foot from where it stood after the last reset, the pushes that moved a
        foot by more than 1 cm, the non-optimal steps by status, the steps whose torques were not
        finite (NaN count) and the exceptions.
    """
    bal = Balance(robot, Scenario.standing(settings.seconds), faults=faults)
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

    out: dict = {"robot": spec.name, "seconds": settings.seconds, "seed": settings.seed, "pushes": 0, "falls": []}
    statuses: dict[str, int] = {}
    nan_steps, exceptions = 0, []
    home, next_push = reset()
    before, last_push = home.copy(), None
    displacement_total, over_1cm, drift_max = 0.0, 0, 0.0
    bar = tqdm(total=steps, unit="step", desc=spec.name, disable=not progress or not sys.stderr.isatty())
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
        bar.update(1)
        q, v = sim.get_state()
        if q[2] < 0.5 * z0:
            fallen(i)
            continue
        try:
            cmd = ctrl.step(q, v)
        except errors.WbcError as exc:  # reported, never hidden
            exceptions.append(f"t={i * DT:.3f}: {exc}")
            fallen(i)
            continue
        if cmd.status is not StepStatus.OPTIMAL:
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
        if not step_survived(sim):
            fallen(i)
            continue
        t_local += DT
        if i % 10 == 0:
            drift_max = max(drift_max, float(np.linalg.norm(feet() - home, axis=1).max()))
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
