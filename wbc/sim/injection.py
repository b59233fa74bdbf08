"""Fault injection between a :class:`~wbc.sim.mujoco.MujocoSim` and a controller.

:func:`inject` takes a :class:`~wbc.sim.faults.Faults`, the simulator a scenario built and the
simulated model, and returns an :class:`Injection` (None when no fault is on, so a scenario without
faults runs exactly as it always did):

* :attr:`Injection.controller_model`: the model to build the controller (and its tasks) from
  (:func:`wbc.sim.mismatch.controller_model`; the simulated model itself without a mismatch);
* :attr:`Injection.sim`: a :class:`FaultySim` standing in for the simulator: ``set_torques`` takes
  the controller's command, ``step`` applies what the motors make of it (:class:`Actuation`: command
  delay, quantization, first-order lag, saturation); everything else is the simulator's own
  (``get_state`` is the true state, for logs and fall detection); the joint friction, damping and
  armature are set in the simulator's MuJoCo model (``dof_damping``, ``dof_frictionloss``,
  ``dof_armature`` of the actuated joints) when the injection is made;
* :meth:`Injection.controller` wraps the compiled controller: its ``step(q, v)`` is given the true
  state and hands the controller what the sensors report (:class:`Sensors`: the state of
  ``state_periods`` periods ago, plus bias and white noise);
* :meth:`Injection.center_of_mass` is the controller's estimate of the CoM and its velocity (its
  model at the measured state), for a gait's stabilizer.

One control period is one simulator step (the scenarios' 1 ms). The sensors sample once per period:
the first measurement in a period is kept for the rest of it. Before the first period the robot is
taken to have been at rest in its initial state under its first command (the delay lines are filled
with them), and a reset of the simulator empties them again.
"""

from __future__ import annotations

import collections
import math
from typing import Any, cast

import numpy as np

from ..control.controller import Command, WholeBodyController
from ..errors import InputError
from ..estimation import StatePredictor, VelocityFilter
from ..model import checks
from ..model.configuration import difference, integrate
from ..model.model import JointType, Model
from ..spatial.lie import exp3_quaternion, quaternion_multiply
from .faults import Actuators, Faults, SensorNoise
from .mismatch import controller_model
from .mujoco import MujocoSim

__all__ = ["Actuation", "FaultyController", "FaultySim", "Injection", "Sensors", "inject"]

#: Independent random streams of one seed, by purpose (``SeedSequence.spawn`` order).
_STREAMS = ("model", "bias", "noise")


def _streams(seed: int) -> dict[str, np.random.Generator]:
    children = np.random.SeedSequence(seed).spawn(len(_STREAMS))
    return {name: np.random.default_rng(s) for name, s in zip(_STREAMS, children)}


# ===================================================================================== sensors
class Sensors:
    """What the robot's sensors report of the true state ``(q, v)``: delayed, biased, noisy.

    Args:
        model: the simulated robot (for the layout of ``q`` and ``v``).
        noise: the noise per channel.
        delay: periods between the state and its report.
        bias_rng, noise_rng: generators of the biases (drawn here, ±bias per channel) and of the
            white noise (drawn at each report).
        period_s: the period, s (joint velocities differentiated from positions divide by it).

    The noise lives in the tangent space: joint positions get ``δ`` added (a continuous or ball
    joint is moved by ``δ`` along its velocity), the base position ``δ`` in world axes, the base
    orientation is rotated by ``exp(δ)`` in the base frame; velocities get ``δ`` added.
    """

    def __init__(
        self,
        model: Model,
        noise: SensorNoise,
        delay: int,
        bias_rng: np.random.Generator,
        noise_rng: np.random.Generator,
        period_s: float = 1e-3,
    ) -> None:
        self.model, self.noise, self.delay, self.period_s = model, noise, int(delay), float(period_s)
        self._rng = noise_rng
        nv = model.nv
        base = model.joints[1] if model.floating_base else None
        self._base_v = base.idx_v if base is not None else None
        self._base_q = base.idx_q if base is not None else None
        joint_v = np.array([k for k in range(nv) if base is None or not base.idx_v <= k < base.idx_v + 6], dtype=int)
        self._joint_v = joint_v
        scalar = [j for j in model.joints[1:] if j.type in (JointType.REVOLUTE, JointType.PRISMATIC)]
        self._scalar_q = np.array([j.idx_q for j in scalar], dtype=int)
        self._scalar_v = np.array([j.idx_v for j in scalar], dtype=int)
        self._curved = [j for j in model.joints[1:] if j.type in (JointType.REVOLUTE_UNBOUNDED, JointType.SPHERICAL)]
        # std and bias per velocity coordinate (nv,): positions and velocities
        self._std_q, self._bias_q = np.zeros(nv), np.zeros(nv)
        self._std_v, self._bias_v = np.zeros(nv), np.zeros(nv)
        channels = [
            (joint_v, noise.joint_position, self._std_q, self._bias_q),
            (joint_v, noise.joint_velocity, self._std_v, self._bias_v),
        ]
        if base is not None:
            s = base.idx_v
            channels += [
                (np.arange(s, s + 3), noise.base_position, self._std_q, self._bias_q),
                (np.arange(s + 3, s + 6), noise.base_orientation, self._std_q, self._bias_q),
                (np.arange(s, s + 3), noise.base_linear_velocity, self._std_v, self._bias_v),
                (np.arange(s + 3, s + 6), noise.base_angular_velocity, self._std_v, self._bias_v),
            ]
        for index, n, std, bias in channels:
            std[index] = n.std
            if n.bias:
                bias[index] = n.bias * bias_rng.choice([-1.0, 1.0], size=len(index))
        self._noisy_q = bool(np.any(self._std_q) or np.any(self._bias_q))
        self._noisy_orientation = noise.base_orientation.active and base is not None
        self._noisy_v = bool(np.any(self._std_v) or np.any(self._bias_v))
        self._line: collections.deque = collections.deque(maxlen=self.delay + 1)
        self._period: int | None = None
        self._last: tuple[np.ndarray, np.ndarray] | None = None
        self._previous_q: np.ndarray | None = None  # the last reported configuration (differentiate)

    @property
    def bias(self) -> tuple[np.ndarray, np.ndarray]:
        """The biases drawn for this run: on positions (nv,) (tangent space) and velocities (nv,)."""
        return self._bias_q.copy(), self._bias_v.copy()

    def reset(self) -> None:
        """Empty the delay line (the biases stay: they belong to the sensors)."""
        self._line.clear()
        self._period, self._last, self._previous_q = None, None, None

    def measure(self, q: np.ndarray, v: np.ndarray, period: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The report ``(q, v)`` of period ``period`` given the true state ``(q, v)`` of that period.

        A second call in the same period returns the first call's report (None: every call is a
        new period)."""
        if period is not None and period == self._period and self._last is not None:
            return self._last
        if not self._line:
            self._line.extend((q.copy(), v.copy()) for _ in range(self.delay))
        self._line.append((np.array(q, dtype=float), np.array(v, dtype=float)))
        qm, vm = self._line[0]
        if self._noisy_q:
            qm = self._perturb_configuration(qm, self._bias_q + self._std_q * self._rng.standard_normal(self.model.nv))
        if self.noise.differentiate:
            if self._previous_q is not None:
                vm = vm.copy()
                vm[self._joint_v] = difference(self.model, self._previous_q, qm)[self._joint_v] / self.period_s
            self._previous_q = qm
        if self._noisy_v:
            vm = vm + self._bias_v + self._std_v * self._rng.standard_normal(self.model.nv)
        self._period, self._last = period, (qm, vm)
        return qm, vm

    def _perturb_configuration(self, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        out = q.copy()
        out[self._scalar_q] += dq[self._scalar_v]
        if self._base_q is not None and self._base_v is not None:
            sq, sv = self._base_q, self._base_v
            out[sq : sq + 3] += dq[sv : sv + 3]
            if self._noisy_orientation:
                quat = quaternion_multiply(q[sq + 3 : sq + 7], exp3_quaternion(dq[sv + 3 : sv + 6]))
                out[sq + 3 : sq + 7] = np.asarray(quat, dtype=float) / np.linalg.norm(quat)
        if self._curved:
            step = np.zeros(self.model.nv)
            for j in self._curved:
                step[j.idx_v : j.idx_v + j.nv] = dq[j.idx_v : j.idx_v + j.nv]
            moved = integrate(self.model, q, step)
            for j in self._curved:
                out[j.idx_q : j.idx_q + j.nq] = moved[j.idx_q : j.idx_q + j.nq]
        return out


# ===================================================================================== actuators
class Actuation:
    """What the motors apply, period after period, of the torque commands they are given.

    Args:
        actuators: quantization, lag, saturation.
        delay: periods between a command and the period it first applies in.
        effort: the effort limits (n_inputs,) the saturation is relative to (non-finite or
            non-positive entries: never saturated).
        period_s: the period, s.

    The lag is exact for a command held over the period (the simulator's zero-order hold):
    ``τ̇ = (u − τ) / T`` from ``τ₀`` gives ``τ(s) = u + (τ₀ − u) e^{−s/T}``; the simulator receives the
    torque's mean over the period, ``u + (τ₀ − u) (T/Δt)(1 − e^{−Δt/T})`` (the impulse it delivers),
    and the period ends at ``u + (τ₀ − u) e^{−Δt/T}``. The saturation clips that mean.
    """

    def __init__(self, actuators: Actuators, delay: int, effort: np.ndarray, period_s: float) -> None:
        self.actuators, self.delay = actuators, int(delay)
        effort = np.asarray(effort, dtype=float)
        finite = np.isfinite(effort) & (effort > 0) & math.isfinite(actuators.saturation)
        self._limit = np.full(effort.shape, np.inf)
        self._limit[finite] = actuators.saturation * effort[finite]
        self._saturates = bool(np.any(finite))
        T = actuators.time_constant_s
        if T > 0:
            decay = math.exp(-period_s / T)
            self._end, self._mean = decay, (T / period_s) * (1.0 - decay)
        else:
            self._end = self._mean = 0.0
        self._line: collections.deque = collections.deque(maxlen=self.delay + 1)
        self._torque: np.ndarray | None = None  # the lag's state: torque at the end of the last period

    def reset(self) -> None:
        """Empty the delay line and the lag (the next command is taken as held since long before)."""
        self._line.clear()
        self._torque = None

    def advance(self, command: np.ndarray) -> np.ndarray:
        """The torque (n_inputs,) applied over the next period, ``command`` being the latest command."""
        if not self._line:
            self._line.extend(command.copy() for _ in range(self.delay))
        self._line.append(np.array(command, dtype=float))
        u = self._line[0]
        q = self.actuators.quantum_Nm
        if q:
            u = np.round(u / q) * q
        if self._mean:
            tau0 = u if self._torque is None else self._torque
            applied = u + (tau0 - u) * self._mean
            self._torque = u + (tau0 - u) * self._end
        else:
            applied = u
        if self._saturates:
            applied = np.clip(applied, -self._limit, self._limit)
        return applied


# ===================================================================================== proxies
class _Proxy:
    """Stands in for the object it wraps (``_inner``): an attribute it does not have is read from,
    and an attribute written is set on, the wrapped object, except its own (names starting with an
    underscore, or in ``_OWN``)."""

    _OWN: frozenset[str] = frozenset()
    _inner: Any

    def __getattr__(self, name: str) -> Any:
        if name == "_inner":  # not set yet (during construction or unpickling)
            raise AttributeError(name)
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_") or name in self._OWN:
            object.__setattr__(self, name, value)
        else:  # the wrapped object's attributes (settings) are set on it
            setattr(self._inner, name, value)


class FaultySim(_Proxy):
    """The simulator as the controller's side sees it (see the module docstring): torques go
    through :class:`Actuation` when given, the period count (:attr:`period`) advances with
    :meth:`step`, a :meth:`reset` empties the delay lines; every other attribute is the wrapped
    :class:`MujocoSim`'s."""

    _OWN = frozenset({"period"})

    def __init__(self, sim: MujocoSim, injection: Injection) -> None:
        self._inner: MujocoSim = sim
        self._injection = injection
        self._n_inputs = sim.n_inputs
        self._command = np.zeros(self._n_inputs)
        self.period = 0

    @property
    def inner(self) -> MujocoSim:
        """The wrapped simulator (the true robot)."""
        return self._inner

    def reset(self, q, v=None) -> None:
        """The simulator's reset (:meth:`MujocoSim.reset`), and the delay lines and lag emptied."""
        self._inner.reset(q, v)
        self._injection._reset()
        self.period = 0

    def set_torques(self, tau) -> None:
        """The controller's command (n_inputs,) N m; what applies is the motors' (:class:`Actuation`)."""
        actuation = self._injection.actuation
        if actuation is None:
            self._inner.set_torques(tau)
        else:
            self._command = checks.vector(tau, self._n_inputs, "tau").copy()

    def step(self, n: int = 1) -> None:
        """Advance ``n`` periods (simulator steps), each with the motors' torque for it."""
        actuation = self._injection.actuation
        if actuation is None:
            self._inner.step(n)
            self.period += int(n)
            return
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise InputError(f"n must be a non-negative integer, got {n!r}")
        for _ in range(int(n)):
            self._inner.set_torques(actuation.advance(self._command))
            self._inner.step(1)
            self.period += 1


class FaultyController(_Proxy):
    """The controller as the simulated robot drives it: :meth:`step` is given the true state and
    passes the controller what the sensors report; every other attribute is the wrapped
    :class:`~wbc.WholeBodyController`'s."""

    def __init__(self, controller: WholeBodyController, injection: Injection) -> None:
        self._inner: WholeBodyController = controller
        self._injection = injection
        comp = injection.faults.compensation
        if comp.gain_scale != 1.0:
            for task in controller.tasks:
                task.set_gains(task.kp * comp.gain_scale, task.kd * math.sqrt(comp.gain_scale))
        if comp.contact_kp is not None:
            for contact in controller.contacts:
                controller.set_contact_gains(contact.name, comp.contact_kp)

    @property
    def inner(self) -> WholeBodyController:
        """The wrapped controller."""
        return self._inner

    def step(self, q, v) -> Command:
        """The controller's step on the sensors' report of the true state ``(q, v)`` (filtered and
        predicted when the compensation says so)."""
        qm, vm = self._injection.estimate(q, v)
        cmd = self._inner.step(qm, vm)
        if self._injection.predictor is not None:
            self._injection.predictor.commanded(cmd.qdd)
        return cmd


# ===================================================================================== injection
class Injection:
    """One run's faults: the controller's model, the simulator and controller stand-ins, the
    sensors and motors (see the module docstring; build it with :func:`inject`).

    Args:
        faults: the faults.
        sim: the simulator the scenario built (a tree model; its MuJoCo model gets the joint
            friction); the injection takes it over: use :attr:`sim` from here on.
        model: the simulated robot's model (not modified).
        locked: the catalog robot's locked joints, for a mismatch's robot file
            (:func:`~wbc.sim.mismatch.controller_model`).

    Raises:
        InputError: a clustered model (not supported), or a mismatch's robot file with other joints.
    """

    def __init__(self, faults: Faults, sim: MujocoSim, model: Model, locked=None) -> None:
        if sim.cluster_model is not None:
            raise InputError("fault injection supports tree models; the simulator holds a clustered model")
        self.faults = faults
        rng = _streams(faults.seed)
        self.model = model
        self.controller_model = controller_model(model, faults.model, rng["model"], locked)
        dt = sim.timestep
        self.sensors = Sensors(model, faults.sensors, faults.latency.state_periods, rng["bias"], rng["noise"], dt)
        comp = faults.compensation
        self.filter = None if math.isinf(comp.velocity_cutoff_hz) else VelocityFilter(comp.velocity_cutoff_hz, dt)
        horizon = faults.latency.total_periods * dt + faults.actuators.time_constant_s
        horizon += 0.0 if self.filter is None else self.filter.time_constant_s
        self.predictor = StatePredictor(self.controller_model, horizon, dt) if comp.predict else None
        acts = faults.actuators
        self.actuation = (
            Actuation(acts, faults.latency.command_periods, model.effort_limit, sim.timestep)
            if acts.active or faults.latency.command_periods
            else None
        )
        self._apply_friction(sim)
        self._faulty = FaultySim(sim, self)
        #: the simulator stand-in (a :class:`FaultySim` with the simulator's interface)
        self.sim = cast(MujocoSim, self._faulty)
        self._estimator: MujocoSim | None = None
        self._estimated: tuple[int, tuple[np.ndarray, np.ndarray]] | None = None

    def _apply_friction(self, sim: MujocoSim) -> None:
        f = self.faults.friction
        if not f.active:
            return
        dofs = np.asarray(self.model.actuated_v_indices)
        sim.mjmodel.dof_damping[dofs] = f.viscous
        sim.mjmodel.dof_frictionloss[dofs] = f.coulomb
        sim.mjmodel.dof_armature[dofs] = f.armature

    def _reset(self) -> None:
        self.sensors.reset()
        for part in (self.filter, self.predictor):
            if part is not None:
                part.reset()
        self._estimated = None
        if self.actuation is not None:
            self.actuation.reset()

    def controller(self, controller: WholeBodyController) -> WholeBodyController:
        """``controller`` (built on :attr:`controller_model`) behind the sensors: a
        :class:`FaultyController` with the controller's interface."""
        return cast(WholeBodyController, FaultyController(controller, self))

    def measure(self, q, v) -> tuple[np.ndarray, np.ndarray]:
        """The sensors' report of the true state ``(q, v)`` of the current period (one per period)."""
        return self.sensors.measure(np.asarray(q, dtype=float), np.asarray(v, dtype=float), self._faulty.period)

    def estimate(self, q, v) -> tuple[np.ndarray, np.ndarray]:
        """What the controller is given of the true state ``(q, v)``: the sensors' report
        (:meth:`measure`), its velocity filtered and the state predicted when the compensation says
        so; filtered and predicted once per period."""
        qm, vm = self.measure(q, v)
        if self.filter is None and self.predictor is None:
            return qm, vm
        period = self._faulty.period
        if self._estimated is not None and self._estimated[0] == period:
            return self._estimated[1]
        if self.filter is not None:
            vm = self.filter(vm)
        if self.predictor is not None:
            qm, vm = self.predictor(qm, vm)
        self._estimated = (period, (qm, vm))
        return qm, vm

    def measured_state(self) -> tuple[np.ndarray, np.ndarray]:
        """The sensors' report of the simulator's current state (as :meth:`measure`)."""
        return self.measure(*self._faulty.inner.get_state())

    def center_of_mass(self) -> tuple[np.ndarray, np.ndarray]:
        """The controller's estimate of the CoM (3,) m and its velocity (3,) m/s, world: its model
        at the measured state (:meth:`measured_state`), through MuJoCo."""
        import mujoco

        if self._estimator is None:
            self._estimator = MujocoSim(self.controller_model, floor=False, position_limits=False)
        est = self._estimator
        est.set_state(*self.measured_state())
        mujoco.mj_subtreeVel(est.mjmodel, est.mjdata)
        return est.mjdata.subtree_com[1].copy(), est.mjdata.subtree_linvel[1].copy()


def inject(faults: Faults | None, sim: MujocoSim, model: Model, locked=None) -> Injection | None:
    """The :class:`Injection` of ``faults`` into a scenario's simulator ``sim`` of ``model``; None
    when ``faults`` is None or has no fault on (the scenario then uses ``sim``, ``model`` and its
    controller unchanged)."""
    if faults is None:
        return None
    if not isinstance(faults, Faults):
        raise InputError(f"faults must be a wbc.sim.faults.Faults, got {type(faults).__name__}")
    if not faults.active:
        return None
    return Injection(faults, sim, model, locked)
