"""Robustness figures: how much of the balance and walking margins survives a real robot's faults.

Each figure is a sweep cell (:mod:`wbc.sweep`: local processes, Dask, Ray; resumable), run under a
fault family at one magnitude (:class:`FaultKind`, :func:`faults_of`) and, for item 3 of the
robustness study, one :class:`Remedy` (a :class:`~wbc.sim.faults.Compensation`):

* :attr:`Trial.PUSH`: the largest push survived standing (:func:`wbc.sim.balance.push_trial`, no
  steps) in one direction (90°: lateral, 0°: forward), by bisection
  (:func:`wbc.sim.push_map.largest_survived`);
* :attr:`Trial.WALK`: a walk (the ``forward`` preset of :mod:`wbc.sim.walking`): fell, failed
  (non-optimal) control steps, DCM and footstep errors;
* :attr:`Trial.SOAK`: random pushes for a while (:func:`wbc.sim.balance.soak`): falls, steps whose
  torques were not finite, non-optimal steps.

Every cell of a study uses the same seed, so every fault is drawn the same way at every magnitude
(the model's perturbation pattern is one pattern scaled) and the nominal cells are the same runs.
:func:`robustness_study` runs the cells, :class:`RobustnessStudy` tabulates them (each figure also
as a ratio to the nominal one) and :func:`plot_survival`, :func:`plot_walking`, :func:`plot_remedies`
draw them.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from .. import sweep
from ..errors import InputError
from ..figures import save_figure
from ..sweep import Cell, SweepResult
from .faults import (
    Actuators,
    Compensation,
    Faults,
    JointFriction,
    Latency,
    ModelMismatch,
    Noise,
    SensorNoise,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

__all__ = [
    "MAGNITUDES",
    "REMEDIES",
    "UNITS",
    "FaultKind",
    "Remedy",
    "RobustnessSettings",
    "RobustnessStudy",
    "Trial",
    "faults_of",
    "plot_remedies",
    "plot_survival",
    "plot_walking",
    "push_survived",
    "robustness_cell",
    "robustness_study",
]


class FaultKind(enum.Enum):
    """A family of faults, one magnitude each (units in :data:`UNITS`)."""

    NOMINAL = "nominal"
    MASS = "mass"  # relative error of every body's mass (±, SIGNS)
    INERTIA = "inertia"  # relative error of every body's rotational inertia
    COM = "com"  # every body's centre of mass displaced, m
    ENCODER_NOISE = "encoder_noise"  # joint position white noise, rad
    VELOCITY_NOISE = "velocity_noise"  # joint velocity white noise, rad/s
    DIFFERENTIATED_ENCODER = "differentiated_encoder"  # encoder noise, rad, velocities differenced from it
    IMU_BIAS = "imu_bias"  # base orientation bias, rad (each axis)
    STATE_DELAY = "state_delay"  # periods
    COMMAND_DELAY = "command_delay"  # periods
    BANDWIDTH = "bandwidth"  # torque bandwidth, Hz
    SATURATION = "saturation"  # torque saturation, share of the effort limits
    QUANTIZATION = "quantization"  # torque quantum, N m
    COULOMB = "coulomb"  # joint Coulomb friction, N m
    VISCOUS = "viscous"  # joint viscous damping, N m s/rad
    COMBINATION = "combination"  # the realistic combination (Faults.realistic) scaled by the magnitude


#: The unit of each family's magnitude (for tables and axes).
UNITS = {
    FaultKind.NOMINAL: "",
    FaultKind.MASS: "relative",
    FaultKind.INERTIA: "relative",
    FaultKind.COM: "m",
    FaultKind.ENCODER_NOISE: "rad",
    FaultKind.VELOCITY_NOISE: "rad/s",
    FaultKind.DIFFERENTIATED_ENCODER: "rad",
    FaultKind.IMU_BIAS: "rad",
    FaultKind.STATE_DELAY: "periods (ms)",
    FaultKind.COMMAND_DELAY: "periods (ms)",
    FaultKind.BANDWIDTH: "Hz",
    FaultKind.SATURATION: "x effort limit",
    FaultKind.QUANTIZATION: "N m",
    FaultKind.COULOMB: "N m",
    FaultKind.VISCOUS: "N m s/rad",
    FaultKind.COMBINATION: "x realistic",
}

#: The magnitudes of each family in a study (from mild to severe).
MAGNITUDES: dict[FaultKind, tuple[float, ...]] = {
    FaultKind.MASS: (0.1, 0.3),
    FaultKind.INERTIA: (0.1, 0.3),
    FaultKind.COM: (0.01, 0.03),
    FaultKind.ENCODER_NOISE: (1e-3, 3e-3),
    FaultKind.VELOCITY_NOISE: (0.1, 0.3),
    FaultKind.DIFFERENTIATED_ENCODER: (1e-4, 1e-3),
    FaultKind.IMU_BIAS: (0.02, 0.05),
    FaultKind.STATE_DELAY: (2, 8, 16),
    FaultKind.COMMAND_DELAY: (2, 8, 16),
    FaultKind.BANDWIDTH: (300.0, 100.0, 30.0),
    FaultKind.SATURATION: (0.5, 0.3),
    FaultKind.QUANTIZATION: (0.1, 1.0),
    FaultKind.COULOMB: (2.0, 5.0),
    FaultKind.VISCOUS: (2.0, 5.0),
    FaultKind.COMBINATION: (1.0, 2.0, 4.0),
}


def _combination(scale: float) -> Faults:
    total = round(2 * scale)
    state = math.ceil(total / 2)
    return Faults(
        model=ModelMismatch(mass=0.1 * scale, inertia=0.1 * scale),
        sensors=SensorNoise(joint_position=Noise(std=1e-3 * scale)),
        latency=Latency(state_periods=state, command_periods=total - state),
        actuators=Actuators(bandwidth_hz=300.0 / scale),
    )


def faults_of(kind: FaultKind | str, magnitude: float, seed: int = 0) -> Faults:
    """The :class:`~wbc.sim.faults.Faults` of family ``kind`` at ``magnitude`` (its :data:`UNITS`),
    drawn with ``seed``.

    Raises:
        InputError: an unknown family, or a magnitude the family's description refuses (negative,
            a fractional delay, a mass error of 100 % or more, ...).
    """
    kind = _option(FaultKind, kind, "fault kind")
    m = float(magnitude)
    if kind is FaultKind.NOMINAL:
        return Faults(seed=seed)
    if kind in (FaultKind.STATE_DELAY, FaultKind.COMMAND_DELAY) and m != int(m):
        raise InputError(f"{kind.value}: a delay is a whole number of periods, got {magnitude!r}")
    build = {
        FaultKind.MASS: lambda: Faults(model=ModelMismatch(mass=m)),
        FaultKind.INERTIA: lambda: Faults(model=ModelMismatch(inertia=m)),
        FaultKind.COM: lambda: Faults(model=ModelMismatch(com_m=m)),
        FaultKind.ENCODER_NOISE: lambda: Faults(sensors=SensorNoise(joint_position=Noise(std=m))),
        FaultKind.VELOCITY_NOISE: lambda: Faults(sensors=SensorNoise(joint_velocity=Noise(std=m))),
        FaultKind.DIFFERENTIATED_ENCODER: lambda: Faults(
            sensors=SensorNoise(joint_position=Noise(std=m), differentiate=True)
        ),
        FaultKind.IMU_BIAS: lambda: Faults(sensors=SensorNoise(base_orientation=Noise(bias=m))),
        FaultKind.STATE_DELAY: lambda: Faults(latency=Latency(state_periods=int(m))),
        FaultKind.COMMAND_DELAY: lambda: Faults(latency=Latency(command_periods=int(m))),
        FaultKind.BANDWIDTH: lambda: Faults(actuators=Actuators(bandwidth_hz=m)),
        FaultKind.SATURATION: lambda: Faults(actuators=Actuators(saturation=m)),
        FaultKind.QUANTIZATION: lambda: Faults(actuators=Actuators(quantum_Nm=m)),
        FaultKind.COULOMB: lambda: Faults(friction=JointFriction(coulomb=m)),
        FaultKind.VISCOUS: lambda: Faults(friction=JointFriction(viscous=m)),
        FaultKind.COMBINATION: lambda: _combination(m),
    }
    return dataclasses.replace(build[kind](), seed=seed)


class Remedy(enum.Enum):
    """What the controller's side may do about the faults (item 3 of the study): a
    :class:`~wbc.sim.faults.Compensation` each (:data:`REMEDIES`)."""

    NONE = "none"
    FILTER = "filter"  # velocities low-pass filtered at 100 Hz
    PREDICT = "predict"  # the state predicted over the known latency
    FILTER_PREDICT = "filter_predict"  # both
    SOFT_CONTACTS = "soft_contacts"  # contact stabilisation 1000/s² instead of 3000/s²
    SOFT_GAINS = "soft_gains"  # task stiffness halved (damping / √2)
    SOFT_CONTACTS_PREDICT = "soft_contacts_predict"  # both


#: The compensation of each remedy.
REMEDIES = {
    Remedy.NONE: Compensation(),
    Remedy.FILTER: Compensation(velocity_cutoff_hz=100.0),
    Remedy.PREDICT: Compensation(predict=True),
    Remedy.FILTER_PREDICT: Compensation(velocity_cutoff_hz=100.0, predict=True),
    Remedy.SOFT_CONTACTS: Compensation(contact_kp=1000.0),
    Remedy.SOFT_GAINS: Compensation(gain_scale=0.5),
    Remedy.SOFT_CONTACTS_PREDICT: Compensation(contact_kp=1000.0, predict=True),
}


class Trial(enum.Enum):
    """What a cell runs (see the module docstring)."""

    PUSH = "push"
    WALK = "walk"
    SOAK = "soak"


E = TypeVar("E", bound=enum.Enum)


def _option(kind: type[E], value: Any, what: str) -> E:
    if isinstance(value, kind):
        return value
    try:
        return kind(value)
    except ValueError:
        raise InputError(f"unknown {what} {value!r}; known: {', '.join(str(e.value) for e in kind)}") from None


# ============================================================================ cells
def robustness_cell(cell: Cell) -> dict[str, Any]:
    """One figure (a sweep cell function). Params: ``trial`` (:class:`Trial`), ``fault``
    (:class:`FaultKind`), ``magnitude``, ``remedy`` (:class:`Remedy`); PUSH: ``direction_deg``,
    ``max_force_N`` (the bisection's top, assumed fatal), ``iterations``, ``length_s``; WALK:
    ``preset``; SOAK: ``seconds``, ``min_force_N``, ``max_force_N``. The cell's seed draws the faults
    (and the soak's pushes)."""
    p = cell.params
    trial = _option(Trial, p["trial"], "trial")
    faults = faults_of(str(p["fault"]), float(p["magnitude"]), cell.seed)
    faults = dataclasses.replace(faults, compensation=REMEDIES[_option(Remedy, p.get("remedy", "none"), "remedy")])
    if trial is Trial.PUSH:
        return _push_cell(cell.robot, p, faults)
    if trial is Trial.WALK:
        return _walk_cell(cell.robot, str(p.get("preset", "forward")), faults)
    return _soak_cell(cell.robot, p, faults, cell.seed)


class _Decided(Exception):
    """A push trial's outcome is known before its end (it cannot survive any more)."""


def push_survived(robot: str, force_N: float, direction_deg: float, length_s: float, faults: Faults) -> dict:
    """Whether the standing robot survives a 100 ms push at 1 s (:func:`wbc.sim.balance.push_trial`'s
    verdict exactly: base at least :data:`~wbc.sim.balance.MIN_BASE_RATIO` of its height, feet
    slipped less than :data:`~wbc.sim.balance.MAX_SLIP_M`), the run stopped as soon as the verdict
    is known (a fall takes a second of chaotic contacts to simulate otherwise): ``{survived,
    non_optimal_steps, slip_m, stopped_at_s}``."""
    from .balance import MAX_SLIP_M, MIN_BASE_RATIO, Balance, Push, PushTrial, Scenario

    trial = PushTrial(force_N, direction_deg, length_s=length_s)
    push = Push("push", trial.direction, force_N, trial.duration_s, trial.time_s)
    bal = Balance(robot, Scenario.standing(length_s, (push,)), faults=faults)
    sim, feet = bal.sim, bal.spec.feet
    z0 = sim.get_state()[0][2]
    feet0 = {f: sim.frame_placement(f)[0:3, 3].copy() for f in feet}

    def decide(i: int, t: float, q, v, cmd) -> None:
        # the states the run's log samples: q at every step, the feet after every 10th step
        if q[2] < MIN_BASE_RATIO * z0:
            raise _Decided(t)
        if i % 10 == 1:
            slip = max(float(np.linalg.norm((sim.frame_placement(f)[0:3, 3] - feet0[f])[0:2])) for f in feet)
            if slip >= MAX_SLIP_M:
                raise _Decided(t)

    try:
        run = bal.run(progress=False, on_step=decide)
    except _Decided as stop:
        return {"survived": False, "non_optimal_steps": None, "slip_m": None, "stopped_at_s": round(stop.args[0], 3)}
    s = bal.summarize(run)
    ratio, slip = s[f"min_{bal.base_name}_height_ratio"], s["max_foot_slip_m"]
    ok = not s["fell"] and ratio >= MIN_BASE_RATIO and slip < MAX_SLIP_M
    return {"survived": ok, "non_optimal_steps": s["non_optimal_steps"], "slip_m": slip, "stopped_at_s": None}


def _push_cell(robot: str, p: Mapping[str, Any], faults: Faults) -> dict[str, Any]:
    from .push_map import largest_survived

    direction, length = float(p["direction_deg"]), float(p["length_s"])
    worst: dict[str, Any] = {"non_optimal_steps_survived": 0}

    def survives(force: float) -> bool:
        out = push_survived(robot, force, direction, length, faults)
        if out["survived"]:
            worst["non_optimal_steps_survived"] = max(worst["non_optimal_steps_survived"], out["non_optimal_steps"])
        return bool(out["survived"])

    result = largest_survived(survives, float(p["max_force_N"]), int(p["iterations"]))
    # no push at all: does the robot stand under these faults?
    standing = push_survived(robot, 0.0, direction, length, faults)
    return {**result, **worst, "stands": standing["survived"], "standing_slip_m": standing["slip_m"]}


def _walk_cell(robot: str, preset: str, faults: Faults) -> dict[str, Any]:
    from .walking import PRESETS, Walker, summarize

    if preset not in PRESETS or robot not in PRESETS[preset]:
        raise InputError(f"no walking preset {preset!r} for robot {robot!r}")
    command, steps = PRESETS[preset][robot]
    walker = Walker(robot, faults=faults)
    timeline = walker.walk(command, steps)
    run = walker.run(timeline.steps[-1].touchdown + 1.5, progress=False)
    s = summarize(walker, run, command)
    keys = (
        "fell",
        "failed_steps",
        "footsteps",
        "forward_m",
        "max_dcm_error_m",
        "max_footstep_error_m",
        "max_foot_slip_m",
        "min_pelvis_height_ratio",
        "duration_s",
    )
    out = {k: s.get(k) for k in keys}
    out["planned_footsteps"] = steps + 1
    return out


def _soak_cell(robot: str, p: Mapping[str, Any], faults: Faults, seed: int) -> dict[str, Any]:
    from .balance import SoakSettings, soak

    settings = SoakSettings(
        seconds=float(p["seconds"]), force=(float(p["min_force_N"]), float(p["max_force_N"])), seed=seed
    )
    s = soak(robot, settings, progress=False, faults=faults)
    s["non_optimal_steps_total"] = int(sum(s["non_optimal_steps"].values()))
    s["n_exceptions"] = len(s["exceptions"])
    return s


# ============================================================================ the study
#: Push directions of a study (degrees from +x).
DIRECTIONS = {"lateral": 90.0, "forward": 0.0}
#: The bisection's top force per robot (N; assumed fatal, never tried).
MAX_FORCE_N = {"talos": 1200.0, "g1": 400.0}
#: Soak push forces per robot (N): up to about 80 % of the weakest nominal push survived.
SOAK_FORCE_N = {"talos": (50.0, 300.0), "g1": (20.0, 100.0)}


@dataclasses.dataclass(frozen=True)
class RobustnessSettings:
    """What a study runs.

    Attributes:
        faults: the families and their magnitudes (default :data:`MAGNITUDES`, all of them).
        iterations: bisection steps of a push cell.
        length_s: a push trial's length, s (the push at 1 s).
        walk: run the walking cells.
        preset: the walking preset.
        soak_s: the soak's simulated length under the realistic combination, s (0: no soak); the
            same soak runs nominal too.
        remedies: the remedies evaluated, each on :attr:`remedy_faults`.
        remedy_faults: the (family, magnitude) pairs the remedies are judged on by the pushes (the
            nominal one first: no remedy may make it worse).
        remedy_walks: the pairs the remedies are judged on by the walk.
        walk_faults: the families and magnitudes that walk (None: all of :attr:`faults`; walks
            take longest).
        seed: every cell's seed.
    """

    faults: Mapping[FaultKind, tuple[float, ...]] = dataclasses.field(default_factory=lambda: dict(MAGNITUDES))
    iterations: int = 6
    length_s: float = 2.5
    walk: bool = True
    preset: str = "forward"
    soak_s: float = 600.0
    remedies: tuple[Remedy, ...] = (
        Remedy.FILTER,
        Remedy.PREDICT,
        Remedy.SOFT_CONTACTS,
        Remedy.SOFT_GAINS,
        Remedy.SOFT_CONTACTS_PREDICT,
    )
    remedy_faults: tuple[tuple[FaultKind, float], ...] = (
        (FaultKind.NOMINAL, 0.0),
        (FaultKind.COMBINATION, 1.0),
        (FaultKind.COMBINATION, 4.0),
        (FaultKind.STATE_DELAY, 16),
        (FaultKind.VELOCITY_NOISE, 0.3),
    )
    remedy_walks: tuple[tuple[FaultKind, float], ...] = ((FaultKind.COMBINATION, 1.0), (FaultKind.COMBINATION, 2.0))
    walk_faults: Mapping[FaultKind, tuple[float, ...]] | None = None
    seed: int = 0

    @classmethod
    def quick(cls) -> RobustnessSettings:
        """A test-sized study: two families at one magnitude, 3 bisection steps, no walk, no soak."""
        return cls(
            faults={FaultKind.STATE_DELAY: (2,), FaultKind.MASS: (0.1,)},
            iterations=3,
            length_s=1.5,
            walk=False,
            soak_s=0.0,
            remedies=(),
        )


def study_cells(robot: str, settings: RobustnessSettings) -> list[Cell]:
    """The cells of a study of ``robot`` (nominal, every fault, remedies, soak)."""
    s = settings
    configs: list[tuple[FaultKind, float, Remedy, bool]] = [(FaultKind.NOMINAL, 0.0, Remedy.NONE, s.walk)]
    walking = s.faults if s.walk_faults is None else s.walk_faults
    walked = {(_option(FaultKind, k, "fault kind"), float(m)) for k, ms in walking.items() for m in ms}
    for kind, magnitudes in s.faults.items():
        kind = _option(FaultKind, kind, "fault kind")
        configs += [(kind, float(m), Remedy.NONE, s.walk and (kind, float(m)) in walked) for m in magnitudes]
    walks = {(_option(FaultKind, k, "fault kind"), float(m)) for k, m in s.remedy_walks}
    for remedy in s.remedies:
        r = _option(Remedy, remedy, "remedy")
        configs += [(k, float(m), r, s.walk and (k, float(m)) in walks) for k, m in s.remedy_faults]
        configs += [(k, m, r, s.walk) for k, m in walks if (k, m) not in {(a, float(b)) for a, b in s.remedy_faults}]
    seen: set = set()
    params: list[dict[str, Any]] = []
    for kind, m, remedy, walk in configs:
        if (kind, m, remedy) in seen:
            continue
        seen.add((kind, m, remedy))
        base = {"fault": kind.value, "magnitude": m, "remedy": remedy.value}
        for direction in DIRECTIONS.values():
            params.append(
                {
                    **base,
                    "trial": Trial.PUSH.value,
                    "direction_deg": direction,
                    "max_force_N": MAX_FORCE_N.get(robot, 1000.0),
                    "iterations": s.iterations,
                    "length_s": s.length_s,
                }
            )
        if walk:
            params.append({**base, "trial": Trial.WALK.value, "preset": s.preset})
    if s.soak_s > 0:
        lo, hi = SOAK_FORCE_N.get(robot, (50.0, 300.0))
        for kind, m in ((FaultKind.NOMINAL, 0.0), (FaultKind.COMBINATION, 1.0)):
            params.append(
                {
                    "fault": kind.value,
                    "magnitude": m,
                    "remedy": Remedy.NONE.value,
                    "trial": Trial.SOAK.value,
                    "seconds": s.soak_s,
                    "min_force_N": lo,
                    "max_force_N": hi,
                }
            )

    # what matters most first (an interrupted study keeps what it finished): the soak under the
    # combination (the longest cell), the pushes, the walks, the remedies' cells, the nominal soak
    def rank(p: dict[str, Any]) -> int:
        if p["trial"] == Trial.SOAK.value:
            return 0 if p["fault"] != FaultKind.NOMINAL.value else 5
        remedy = p["remedy"] != Remedy.NONE.value
        return (3 if remedy else 1) + (p["trial"] == Trial.WALK.value)

    params.sort(key=rank)
    return [Cell(i, robot, p, s.seed) for i, p in enumerate(params)]


@dataclasses.dataclass(frozen=True)
class RobustnessStudy:
    """A computed study of one robot: the sweep's results, tabulated."""

    robot: str
    settings: RobustnessSettings
    result: SweepResult

    def _find(self, trial: Trial, kind: FaultKind, magnitude: float, remedy: Remedy, **extra) -> Any:
        for r in self.result.results:
            p = r.cell.params
            if (
                p["trial"] == trial.value
                and p["fault"] == kind.value
                and float(p["magnitude"]) == float(magnitude)
                and p["remedy"] == remedy.value
                and all(p.get(k) == v for k, v in extra.items())
            ):
                return r.value if r.ok else {"error": (r.error.strip().splitlines() or [""])[-1]}
        return None

    def figures(self, kind: FaultKind, magnitude: float, remedy: Remedy = Remedy.NONE) -> dict[str, Any]:
        """The figures of one configuration: largest push survived per direction (N, and its bracket),
        whether it stands unpushed, the walk's figures."""
        out: dict[str, Any] = {}
        for name, direction in DIRECTIONS.items():
            v = self._find(Trial.PUSH, kind, magnitude, remedy, direction_deg=direction)
            if v is None:
                continue
            if "error" in v:
                out[name] = v
                continue
            out[f"{name}_N"] = v["largest_survived_N"]
            out[f"{name}_failed_N"] = v["smallest_failed_N"]
            out["stands"] = out.get("stands", True) and v["stands"]
            out["non_optimal_steps_survived"] = max(
                out.get("non_optimal_steps_survived", 0), v["non_optimal_steps_survived"]
            )
        walk = self._find(Trial.WALK, kind, magnitude, remedy)
        if walk is not None:
            out["walk"] = walk
        return out

    def table(self) -> dict[str, Any]:
        """Nominal figures, then each family's figures per magnitude with the push ratios to nominal."""
        nominal = self.figures(FaultKind.NOMINAL, 0.0)
        faults: dict[str, Any] = {}
        for kind, magnitudes in self.settings.faults.items():
            kind = _option(FaultKind, kind, "fault kind")
            rows = []
            for m in magnitudes:
                f = self.figures(kind, m)
                rows.append({"magnitude": m, **f, **_ratios(f, nominal)})
            faults[kind.value] = {"unit": UNITS[kind], "rows": rows}
        remedies: dict[str, Any] = {}
        for remedy in self.settings.remedies:
            remedy = _option(Remedy, remedy, "remedy")
            rows = []
            pushed = [(_option(FaultKind, k, "fault kind"), float(m)) for k, m in self.settings.remedy_faults]
            walked = [(_option(FaultKind, k, "fault kind"), float(m)) for k, m in self.settings.remedy_walks]
            for kind, m in pushed + [w for w in walked if w not in pushed]:
                base = self.figures(kind, m)
                f = self.figures(kind, m, remedy)
                rows.append(
                    {
                        "fault": kind.value,
                        "magnitude": m,
                        **f,
                        **{f"{k}_vs_no_remedy": v for k, v in _ratios(f, base).items()},
                    }
                )
            remedies[remedy.value] = {"compensation": _compensation(remedy), "rows": rows}
        soaks = {}
        for kind, m in ((FaultKind.NOMINAL, 0.0), (FaultKind.COMBINATION, 1.0)):
            v = self._find(Trial.SOAK, kind, m, Remedy.NONE)
            if v is not None:
                soaks[kind.value] = {k: v.get(k) for k in _SOAK_KEYS} if "error" not in v else v
        return {
            "robot": self.robot,
            "seed": self.settings.seed,
            "nominal": nominal,
            "faults": faults,
            "remedies": remedies,
            "soak": soaks,
            "combination": faults_of(FaultKind.COMBINATION, 1.0, self.settings.seed).describe(),
            "failed_cells": [
                {"params": dict(r.cell.params), "error": (r.error.strip().splitlines() or [""])[-1]}
                for r in self.result.failed
            ],
        }


_SOAK_KEYS = (
    "seconds",
    "seed",
    "pushes",
    "n_falls",
    "falls",
    "nan_steps",
    "non_optimal_steps",
    "non_optimal_steps_total",
    "n_exceptions",
    "exceptions",
    "foot_drift_max_m",
    "foot_displacement_total_m",
    "pushes_moving_a_foot_over_1cm",
)


def _ratios(f: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for name in DIRECTIONS:
        a, b = f.get(f"{name}_N"), base.get(f"{name}_N")
        if a is not None and b:
            out[f"{name}_ratio"] = round(a / b, 4)
    return out


def _compensation(remedy: Remedy) -> dict[str, Any]:
    return Faults(compensation=REMEDIES[remedy]).describe().get("compensation", {})


def robustness_study(
    robot: str, settings: RobustnessSettings | None = None, **options: Unpack[sweep.SweepOptions]
) -> RobustnessStudy:
    """Run the study of ``robot`` (``talos``, ``g1``) as one sweep (``options``: where it runs, see
    :func:`wbc.sweep.run_sweep`; a ``store`` makes an interrupted study resume)."""
    settings = settings or RobustnessSettings()
    result = sweep.run_sweep(robustness_cell, study_cells(robot, settings), **options)
    return RobustnessStudy(robot, settings, result)


# ============================================================================ plots
def _panels(study: RobustnessStudy) -> tuple[Any, list, list[FaultKind]]:
    """A figure with one panel per fault family of ``study`` (4 columns), the unused panels off."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = [_option(FaultKind, k, "fault kind") for k in study.settings.faults]
    cols = min(4, max(1, len(kinds)))
    rows = math.ceil(len(kinds) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.9 * rows), squeeze=False)
    for ax in list(axes.flat)[len(kinds) :]:
        ax.axis("off")
    return fig, list(axes.flat), kinds


def _levels(study: RobustnessStudy, kind: FaultKind, walking: bool = False) -> list[tuple[str, FaultKind, float]]:
    """The categories of a family's panel, severity growing to the right: no fault, then its
    magnitudes (those that walk, for the walking plot)."""
    mags = list(study.settings.faults[kind])
    if walking and study.settings.walk_faults is not None:
        mags = [m for m in mags if m in study.settings.walk_faults.get(kind, ())]
    return [("none", FaultKind.NOMINAL, 0.0)] + [(f"{m:g}", kind, float(m)) for m in mags]


def _categories(ax, kind: FaultKind, labels: Sequence[str]) -> None:
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlim(-0.5, len(labels) - 0.5)
    ax.set_xlabel(f"{kind.value.replace('_', ' ')} ({UNITS[kind]})", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)


def plot_survival(study: RobustnessStudy, path: Path | str) -> Path:
    """One panel per fault family: the largest push survived (N) lateral and forward, without the
    fault and at each magnitude (severity growing to the right), the bisection bracket (up to the
    smallest push that failed) as error bars; "fails" where the robot does not even stand unpushed
    (feet slipping 1 cm or more, or falling). Same force axis on every panel."""
    fig, axes, kinds = _panels(study)
    colors = {"lateral": "tab:blue", "forward": "tab:orange"}
    top = 0.0
    for ax, kind in zip(axes, kinds):
        levels = _levels(study, kind)
        for name in DIRECTIONS:
            xs, lo, hi = [], [], []
            for k, (_, fk, m) in enumerate(levels):
                f = study.figures(fk, m)
                if f.get(f"{name}_N") is None:
                    continue
                xs.append(k)
                lo.append(f[f"{name}_N"])
                failed = f.get(f"{name}_failed_N")
                hi.append((failed if failed is not None else f[f"{name}_N"]) - f[f"{name}_N"])
                top = max(top, lo[-1] + hi[-1])
                if not f.get("stands", True):
                    ax.text(k, 0, "fails", color="red", ha="center", va="bottom", fontsize=8)
            if xs:
                ax.errorbar(xs, lo, yerr=[[0] * len(hi), hi], fmt="o-", color=colors[name], capsize=3, label=name)
        _categories(ax, kind, [label for label, *_ in levels])
        ax.set_ylabel("largest push survived, N", fontsize=8)
    for ax in axes[: len(kinds)]:
        ax.set_ylim(0, 1.08 * top if top > 0 else 1.0)
    axes[0].legend(fontsize=7, loc="lower left")
    fig.suptitle(
        f"{study.robot}: largest 100 ms pelvis push survived standing (no steps), without the fault and under it",
        fontsize=10,
    )
    return save_figure(fig, Path(path), dpi=100)


def plot_walking(study: RobustnessStudy, path: Path | str) -> Path:
    """One panel per fault family: the walk's failed (non-optimal) control steps (bars, red where it
    fell) and its largest DCM error (line, right axis), without the fault and at each magnitude
    that walked."""
    fig, axes, kinds = _panels(study)
    for ax, kind in zip(axes, kinds):
        levels = _levels(study, kind, walking=True)
        xs, failed, dcm, fell = [], [], [], []
        for k, (_, fk, m) in enumerate(levels):
            w = study.figures(fk, m).get("walk")
            if not w or "error" in w:
                continue
            xs.append(k)
            failed.append(w["failed_steps"])
            dcm.append(100 * w["max_dcm_error_m"])
            fell.append(w["fell"])
        ax.bar(xs, failed, color=["tab:red" if f else "tab:gray" for f in fell], alpha=0.7)
        ax.set_ylabel("failed steps", fontsize=8)
        ax.set_ylim(bottom=0, top=max([*failed, 1]) * 1.2)
        twin = ax.twinx()
        twin.plot(xs, dcm, "o-", color="tab:blue")
        twin.set_ylabel("max DCM error, cm", fontsize=8, color="tab:blue")
        twin.set_ylim(bottom=0, top=max([*dcm, 1.0]) * 1.2)
        twin.tick_params(labelsize=7)
        _categories(ax, kind, [label for label, *_ in levels])
        for k, n, f in zip(xs, failed, fell):
            ax.text(
                k,
                n,
                f"{n}" + (" fell" if f else ""),
                color="red" if f else "black",
                ha="center",
                va="bottom",
                fontsize=8,
            )
    fig.suptitle(
        f"{study.robot} walking ({study.settings.preset} preset): failed control steps (bars; red: fell) and "
        "largest DCM error (blue), without the fault and under it",
        fontsize=10,
    )
    return save_figure(fig, Path(path), dpi=100)


def plot_remedies(study: RobustnessStudy, path: Path | str) -> Path:
    """Grouped bars: for each configuration the remedies are judged on, the largest lateral and
    forward push survived with each remedy (the first bar: none)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    remedies = [Remedy.NONE, *[_option(Remedy, r, "remedy") for r in study.settings.remedies]]
    configs = list(study.settings.remedy_faults)
    fig, axes = plt.subplots(1, len(DIRECTIONS), figsize=(7.5 * len(DIRECTIONS), 4.2), squeeze=False)
    width = 0.8 / len(remedies)
    for ax, name in zip(axes[0], DIRECTIONS):
        for k, remedy in enumerate(remedies):
            values = [study.figures(kind, m, remedy).get(f"{name}_N") or 0.0 for kind, m in configs]
            ax.bar([i + k * width for i in range(len(configs))], values, width, label=remedy.value)
        ax.set_xticks(
            [i + 0.4 - width / 2 for i in range(len(configs))],
            [f"{kind.value.replace('_', ' ')}\n{m:g}" for kind, m in configs],
            fontsize=7,
        )
        ax.set_ylabel(f"largest {name} push survived, N")
        ax.set_ylim(0, 1.3 * max(ax.get_ylim()[1], 1.0))  # room for the legend above the bars
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=7, ncol=3, loc="upper left")
    fig.suptitle(
        f"{study.robot}: the largest push survived standing, under each fault, with each remedy (0: fails unpushed)",
        fontsize=10,
    )
    return save_figure(fig, Path(path), dpi=100)
