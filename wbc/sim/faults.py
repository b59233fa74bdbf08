"""The faults of a real robot, as plain descriptions: what :mod:`wbc.sim.injection` injects.

A :class:`Faults` gathers one description per kind of fault, every one off by default:

=======================  ==========================================================================
:class:`ModelMismatch`   the controller's model differs from the simulated robot: link masses,
                         rotational inertias and centres of mass perturbed (relative amounts, m),
                         or another robot file
:class:`SensorNoise`     white noise and a constant bias on each sensor channel (:class:`Noise`):
                         joint positions and velocities, base position, orientation and twist
:class:`Latency`         the state the controller reads is some control periods old; its command
                         applies some periods after it was computed
:class:`Actuators`       torque bandwidth (a first-order lag), saturation, quantization
:class:`JointFriction`   viscous damping, Coulomb friction and rotor inertia (armature) in the
                         actuated joints, which the controller's model does not have
=======================  ==========================================================================

and what the controller's side does about them, :class:`Compensation` (off by default as well): a
low-pass filter of the measured velocities, a prediction of the state to the time the command
applies, task gains and contact stiffness retuned.

Everything random (the model's perturbation, the sensors' biases and noise) is drawn from
generators seeded by :attr:`Faults.seed`, one independent stream per purpose, so a run is
reproducible and the perturbed model does not depend on which other faults are on. Descriptions
are frozen dataclasses of numbers (picklable, hashable); :meth:`Faults.merge` composes them and
:meth:`Faults.describe` gives them as JSON-able data.

Units: periods are control periods (the scenarios control at every simulator step, 1 ms);
angles rad, positions m, velocities rad/s or m/s (the base's twist in the base frame, as wbc's
``v``), torques N m, bandwidth Hz.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError

__all__ = [
    "Actuators",
    "Compensation",
    "Faults",
    "JointFriction",
    "Latency",
    "ModelMismatch",
    "Noise",
    "Perturbation",
    "SensorNoise",
]


def _non_negative(owner: object, *names: str) -> None:
    for name in names:
        value = getattr(owner, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or math.isnan(value):
            raise InputError(f"{type(owner).__name__}.{name} must be a non-negative number, got {value!r}")


def _of_kind(owner: object, kinds: Mapping[str, type]) -> None:
    """Each field ``name`` of ``owner`` an instance of ``kinds[name]``, else an InputError naming it."""
    for name, kind in kinds.items():
        value = getattr(owner, name)
        if not isinstance(value, kind):
            raise InputError(f"{type(owner).__name__}.{name} must be a {kind.__name__}, got {value!r}")


def _finite(owner: object, *names: str) -> None:
    for name in names:
        if not math.isfinite(getattr(owner, name)):
            raise InputError(f"{type(owner).__name__}.{name} must be finite, got {getattr(owner, name)!r}")


class Perturbation(enum.Enum):
    """How a relative amount ``a`` perturbs each body of the controller's model."""

    SIGNS = "signs"  # each body off by exactly ±a (a random sign per body): every body as wrong as asked
    UNIFORM = "uniform"  # each body off by a factor drawn uniformly from [1 - a, 1 + a]


@dataclasses.dataclass(frozen=True)
class ModelMismatch:
    """The controller's model differs from the simulated robot.

    Attributes:
        mass: relative error of each body's mass (0.1: ±10 %); the centre of mass and the
            rotational inertia about it are kept.
        inertia: relative error of each body's rotational inertia about its centre of mass (the
            3×3 tensor scaled, so it stays physical).
        com_m: displacement of each body's centre of mass, m, in a random direction (exactly this
            length with :attr:`Perturbation.SIGNS`, uniform in [0, com_m] with UNIFORM).
        perturbation: how the relative amounts are drawn per body.
        robot_file: a URDF the controller's model is loaded from instead of the simulated robot's
            (the same joints in the same order; the perturbations above then apply to it).

    Bodies of zero mass (and the ground) are left alone.
    """

    mass: float = 0.0
    inertia: float = 0.0
    com_m: float = 0.0
    perturbation: Perturbation = Perturbation.SIGNS
    robot_file: str | None = None

    def __post_init__(self) -> None:
        _non_negative(self, "mass", "inertia", "com_m")
        _finite(self, "mass", "inertia", "com_m")
        for name in ("mass", "inertia"):
            if getattr(self, name) >= 1.0:
                raise InputError(
                    f"ModelMismatch.{name} must be below 1 (a relative error), got {getattr(self, name)!r}"
                )
        if not isinstance(self.perturbation, Perturbation):
            object.__setattr__(
                self, "perturbation", _enum(Perturbation, self.perturbation, "ModelMismatch.perturbation")
            )
        if self.robot_file is not None:
            object.__setattr__(self, "robot_file", str(Path(self.robot_file)))

    @property
    def active(self) -> bool:
        """Whether the controller's model differs from the simulated one."""
        return bool(self.mass or self.inertia or self.com_m or self.robot_file is not None)


@dataclasses.dataclass(frozen=True)
class Noise:
    """One sensor channel's error: ``bias`` (a constant per channel and run, ±bias with a random
    sign) plus zero-mean Gaussian white noise of standard deviation ``std`` drawn every period."""

    std: float = 0.0
    bias: float = 0.0

    def __post_init__(self) -> None:
        _non_negative(self, "std", "bias")
        _finite(self, "std", "bias")

    @property
    def active(self) -> bool:
        return bool(self.std or self.bias)


@dataclasses.dataclass(frozen=True)
class SensorNoise:
    """Noise per sensor (:class:`Noise` each): joint encoders (rad or m) and their velocities
    (rad/s or m/s); the base's position (world, m), orientation (a rotation vector in the base
    frame, rad), linear velocity (base frame, m/s) and angular velocity (base frame, rad/s).

    With ``differentiate`` the joint velocities are not measured but the backward difference of
    the measured joint positions over one period (an encoder without a velocity sensor: its noise
    ``σ`` becomes ``√2 σ / Δt`` on the velocity), ``joint_velocity``'s noise added on top.
    """

    joint_position: Noise = Noise()
    joint_velocity: Noise = Noise()
    base_position: Noise = Noise()
    base_orientation: Noise = Noise()
    base_linear_velocity: Noise = Noise()
    base_angular_velocity: Noise = Noise()
    differentiate: bool = False

    def __post_init__(self) -> None:
        _of_kind(self, {**dict.fromkeys(_CHANNELS, Noise), "differentiate": bool})

    @property
    def active(self) -> bool:
        return self.differentiate or any(getattr(self, name).active for name in _CHANNELS)


_CHANNELS = (
    "joint_position",
    "joint_velocity",
    "base_position",
    "base_orientation",
    "base_linear_velocity",
    "base_angular_velocity",
)


@dataclasses.dataclass(frozen=True)
class Latency:
    """Delays in control periods: the controller reads the state of ``state_periods`` periods ago
    (estimator, bus), and its torques apply ``command_periods`` periods after it computed them."""

    state_periods: int = 0
    command_periods: int = 0

    def __post_init__(self) -> None:
        for name in ("state_periods", "command_periods"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(f"Latency.{name} must be a non-negative integer (control periods), got {value!r}")

    @property
    def active(self) -> bool:
        return bool(self.state_periods or self.command_periods)

    @property
    def total_periods(self) -> int:
        """State plus command delay, periods: from a measurement to the torque it causes."""
        return self.state_periods + self.command_periods


@dataclasses.dataclass(frozen=True)
class Actuators:
    """What the motors do to a torque command, in this order: quantization to a multiple of
    ``quantum_Nm`` (0: none), a first-order lag of cut-off ``bandwidth_hz`` (inf: none; time
    constant ``1 / (2π bandwidth)``), saturation at ``saturation`` times the model's effort limits
    (inf: none; joints without a finite limit never saturate)."""

    bandwidth_hz: float = math.inf
    saturation: float = math.inf
    quantum_Nm: float = 0.0

    def __post_init__(self) -> None:
        _non_negative(self, "bandwidth_hz", "saturation", "quantum_Nm")
        _finite(self, "quantum_Nm")
        for name in ("bandwidth_hz", "saturation"):
            if getattr(self, name) == 0:
                raise InputError(f"Actuators.{name} must be positive (inf: no such fault), got 0")

    @property
    def active(self) -> bool:
        return bool(self.quantum_Nm) or math.isfinite(self.bandwidth_hz) or math.isfinite(self.saturation)

    @property
    def time_constant_s(self) -> float:
        """The lag's time constant, s (0 without a lag)."""
        return 0.0 if math.isinf(self.bandwidth_hz) else 1.0 / (2.0 * math.pi * self.bandwidth_hz)


@dataclasses.dataclass(frozen=True)
class JointFriction:
    """Friction and rotor inertia in every actuated joint of the simulated robot, unknown to the
    controller: viscous damping ``viscous`` (N m s/rad), Coulomb friction ``coulomb`` (N m, MuJoCo's
    friction loss: static friction included) and armature ``armature`` (kg m², a rotor's reflected
    inertia)."""

    viscous: float = 0.0
    coulomb: float = 0.0
    armature: float = 0.0

    def __post_init__(self) -> None:
        _non_negative(self, "viscous", "coulomb", "armature")
        _finite(self, "viscous", "coulomb", "armature")

    @property
    def active(self) -> bool:
        return bool(self.viscous or self.coulomb or self.armature)


@dataclasses.dataclass(frozen=True)
class Compensation:
    """What the controller's side does about the faults (each off by default; opt-in).

    Attributes:
        velocity_cutoff_hz: a first-order low-pass filter of the measured velocities (joints and
            base twist), Hz (:class:`wbc.estimation.VelocityFilter`; inf: none).
        predict: predict the measured state to the time the command applies
            (:class:`wbc.estimation.StatePredictor`) over the state and command delays, the
            motors' lag time constant and the filter's (all known to the robot's designer).
        gain_scale: the tasks' stiffness multiplied by this, their damping by its square root (the
            damping ratio kept).
        contact_kp: the contacts' pose-feedback stiffness, 1/s² (critically damped; None: the
            scenario's).
    """

    velocity_cutoff_hz: float = math.inf
    predict: bool = False
    gain_scale: float = 1.0
    contact_kp: float | None = None

    def __post_init__(self) -> None:
        _non_negative(self, "velocity_cutoff_hz", "gain_scale")
        if self.velocity_cutoff_hz == 0 or self.gain_scale == 0 or not math.isfinite(self.gain_scale):
            raise InputError("Compensation: velocity_cutoff_hz and gain_scale must be positive (gain_scale finite)")
        _of_kind(self, {"predict": bool})
        if self.contact_kp is not None:
            _non_negative(self, "contact_kp")
            _finite(self, "contact_kp")

    @property
    def active(self) -> bool:
        filtered, retuned = math.isfinite(self.velocity_cutoff_hz), self.gain_scale != 1.0
        return filtered or self.predict or retuned or self.contact_kp is not None


_PARTS = {
    "model": ModelMismatch,
    "sensors": SensorNoise,
    "latency": Latency,
    "actuators": Actuators,
    "friction": JointFriction,
    "compensation": Compensation,
}


@dataclasses.dataclass(frozen=True)
class Faults:
    """Every fault of a run (each off by default), the seed of everything random in them, and the
    :class:`Compensation` the controller's side applies (opt-in).

    Example, the realistic combination of :meth:`realistic`::

        Faults(
            model=ModelMismatch(mass=0.1, inertia=0.1),
            sensors=SensorNoise(joint_position=Noise(std=1e-3)),
            latency=Latency(state_periods=1, command_periods=1),
            actuators=Actuators(bandwidth_hz=300.0),
        )
    """

    model: ModelMismatch = ModelMismatch()
    sensors: SensorNoise = SensorNoise()
    latency: Latency = Latency()
    actuators: Actuators = Actuators()
    friction: JointFriction = JointFriction()
    compensation: Compensation = Compensation()
    seed: int = 0

    def __post_init__(self) -> None:
        _of_kind(self, _PARTS)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise InputError(f"Faults.seed must be a non-negative integer, got {self.seed!r}")

    @property
    def active(self) -> bool:
        """Whether any fault or compensation is on (off: the scenarios run exactly as without faults)."""
        return any(getattr(self, name).active for name in _PARTS)

    @classmethod
    def realistic(cls, seed: int = 0) -> Faults:
        """A plausible humanoid on a real bus: masses and inertias off by ±10 %, 1e-3 rad encoder
        noise, 2 ms total latency (1 period reading the state, 1 applying the command), 300 Hz
        torque bandwidth."""
        return cls(
            model=ModelMismatch(mass=0.1, inertia=0.1),
            sensors=SensorNoise(joint_position=Noise(std=1e-3)),
            latency=Latency(state_periods=1, command_periods=1),
            actuators=Actuators(bandwidth_hz=300.0),
            seed=seed,
        )

    def merge(self, other: Faults) -> Faults:
        """These faults with ``other``'s on top: each field ``other`` sets (differs from its
        default) wins, the others stay; the seed is ``other``'s when it set one."""
        parts: dict[str, Any] = {}
        for name in _PARTS:
            mine, theirs = getattr(self, name), getattr(other, name)
            parts[name] = _merge_part(mine, theirs)
        return Faults(**parts, seed=other.seed if other.seed != 0 else self.seed)

    def describe(self) -> dict[str, Any]:
        """The faults that are on, as JSON-able data (``{}`` when none)."""
        out: dict[str, Any] = {}
        for name in _PARTS:
            part = getattr(self, name)
            if part.active:
                out[name] = _plain(_non_default(part))
        if out:
            out["seed"] = self.seed
        return out


def _non_default(part: Any) -> dict[str, Any]:
    default = type(part)()
    return {
        f.name: getattr(part, f.name)
        for f in dataclasses.fields(part)
        if getattr(part, f.name) != getattr(default, f.name)
    }


def _merge_part(mine: Any, theirs: Any) -> Any:
    changes = _non_default(theirs)
    if isinstance(theirs, SensorNoise):  # channel by channel, field by field
        changes = {
            name: _merge_part(getattr(mine, name), value) if isinstance(value, Noise) else value
            for name, value in changes.items()
        }
    return dataclasses.replace(mine, **changes)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, Noise | SensorNoise):
        return _plain(_non_default(value))
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, float) and math.isinf(value):
        return None
    return value


def _enum(kind: type[enum.Enum], value: Any, what: str) -> Any:
    try:
        return kind(value)
    except ValueError:
        raise InputError(f"{what}: unknown {value!r}; known: {', '.join(str(e.value) for e in kind)}") from None
