"""Push-recovery maps: the largest push a humanoid survives, by direction and duration standing, and
by gait phase walking, computed as a sweep (:mod:`wbc.sweep`) on any engine.

Standing map. One cell per (push direction, push duration): the robot stands under the walking
controller (:func:`wbc.sim.walking.stand_and_push`: stiff DCM feedback, the hip strategy; with
``recover`` it may also take recovery steps), is pushed on the pelvis at ``push_time_s`` with a
horizontal force in the world direction ``direction_deg`` (0° = +x, the way the robot faces; 90° =
+y, its left) for ``duration_s``, and the cell bisects the force over ``[0, max_impulse_Ns /
duration_s]`` in ``iterations`` simulations (the top of the range is assumed fatal, not tried): the
largest force survived and the smallest that was not (the threshold lies between; the resolution
is the range over 2^iterations).

Walking map. One cell per gait phase: the robot walks forward (the catalog's ``forward`` preset
velocity); the gait cycle starts at the lift-off of step ``cycle_step`` and lasts two steps; a push
(:class:`WalkingPushes`: direction, duration) starts at ``phase`` of that cycle, and the cell
bisects its force the same way.

Survived: the robot did not fall (pelvis above 70 % of its initial height and a finite simulation
through the end), its lowest pelvis height was at least :data:`MIN_PELVIS_RATIO` of the initial one,
and, standing without recovery steps, the feet slipped less than :data:`MAX_SLIP_M`.

Simulations are deterministic: a cell's result depends only on the robot and its parameters, so
every engine and every number of workers gives the same map (:meth:`PushMap.results`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import sweep
from ..errors import InputError
from ..figures import save_figure
from ..sweep import Cell, SweepResult

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

__all__ = [
    "MIN_PELVIS_RATIO",
    "MAX_SLIP_M",
    "WalkingPushes",
    "PushMapSettings",
    "PushMap",
    "largest_survived",
    "standing_cell",
    "walking_cell",
    "walking_cells",
    "push_map",
    "plot_standing",
    "plot_walking",
]

#: A push is survived when the pelvis never dropped below this share of its initial height ...
MIN_PELVIS_RATIO = 0.9
#: ... and (standing without recovery steps) no foot slipped this far, m.
MAX_SLIP_M = 0.01


def _check_positive_integers(settings: Any, names: Sequence[str]) -> None:
    for name in names:
        value = getattr(settings, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"{type(settings).__name__}.{name} must be a positive integer, got {value!r}")


@dataclasses.dataclass(frozen=True)
class WalkingPushes:
    """Pushes on a robot walking forward, one per push direction and gait phase (forces N, times s,
    angles degrees): the walking push map's grid and :mod:`wbc.sim.walking_push`'s.

    Attributes:
        directions_deg: push directions (world: 0 forward, 90 left, -90 right).
        duration_s: push duration.
        max_impulse_Ns: the bisection's upper force is this impulse over the duration.
        iterations: bisection steps (simulations per cell).
        phases: push start, as fractions [0, 1) of the gait cycle.
        walk_steps: steps planned.
        cycle_step: the cycle starts at this step's lift-off (0: the first step) and lasts two steps.
        after_push_s: simulated time after the push starts.
        adjust: online step adjustment while walking (capture steps re-planned from the measured DCM).
    """

    directions_deg: tuple[float, ...] = (90.0,)
    duration_s: float = 0.1
    max_impulse_Ns: float = 100.0
    iterations: int = 4
    phases: tuple[float, ...] = tuple(k / 8 for k in range(8))
    walk_steps: int = 6
    cycle_step: int = 1
    after_push_s: float = 2.0
    adjust: bool = False

    def __post_init__(self) -> None:
        _check_positive_integers(self, ("iterations", "walk_steps"))
        if not self.directions_deg:
            raise InputError("WalkingPushes.directions_deg: give at least one push direction")
        if not self.phases or any(not 0.0 <= p < 1.0 for p in self.phases):
            raise InputError(f"WalkingPushes.phases must lie in [0, 1), got {self.phases}")
        if not (self.duration_s > 0 and math.isfinite(self.duration_s) and self.max_impulse_Ns > 0):
            raise InputError("WalkingPushes: the push duration and the maximal impulse must be positive")
        if self.cycle_step < 0 or self.cycle_step + 2 > self.walk_steps:
            raise InputError(
                f"WalkingPushes: the cycle (steps {self.cycle_step}, {self.cycle_step + 1}) must lie within "
                f"the {self.walk_steps} planned steps"
            )


@dataclasses.dataclass(frozen=True)
class PushMapSettings:
    """The grid and the simulations of a push map (forces N, times s, angles degrees).

    Attributes:
        directions_deg: standing push directions (world, 0 = +x, 90 = +y).
        durations_s: standing push durations.
        max_impulse_Ns: the standing bisection's upper force is this impulse over the push's duration.
        iterations: standing bisection steps (simulations per cell).
        push_time_s: when the standing push starts.
        standing_s: simulated time of a standing trial (the push included).
        recover: standing, the robot may take recovery steps.
        walking: the walking map's pushes, in one direction (by default 90°: sideways to the left).
    """

    directions_deg: tuple[float, ...] = tuple(float(a) for a in range(0, 360, 30))
    durations_s: tuple[float, ...] = (0.1, 0.3)
    max_impulse_Ns: float = 100.0
    iterations: int = 5
    push_time_s: float = 1.0
    standing_s: float = 2.5
    recover: bool = False
    walking: WalkingPushes = WalkingPushes()

    @classmethod
    def quick(cls) -> PushMapSettings:
        """A small grid (4 directions, one duration, 4 phases, 3 bisection steps): a test-sized map."""
        return cls(
            directions_deg=(0.0, 90.0, 180.0, 270.0),
            durations_s=(0.1,),
            max_impulse_Ns=60.0,
            iterations=3,
            standing_s=2.0,
            walking=WalkingPushes(
                max_impulse_Ns=60.0,
                iterations=3,
                phases=(0.0, 0.25, 0.5, 0.75),
                walk_steps=4,
                cycle_step=0,
                after_push_s=1.5,
            ),
        )

    def __post_init__(self) -> None:
        _check_positive_integers(self, ("iterations",))
        if not self.durations_s or any(not (d > 0 and math.isfinite(d)) for d in self.durations_s):
            raise InputError(f"PushMapSettings.durations_s must be positive durations, got {self.durations_s}")
        if not self.max_impulse_Ns > 0:
            raise InputError(f"PushMapSettings.max_impulse_Ns must be positive, got {self.max_impulse_Ns}")
        if not isinstance(self.walking, WalkingPushes) or len(self.walking.directions_deg) != 1:
            raise InputError(f"PushMapSettings.walking must be WalkingPushes in one direction, got {self.walking!r}")


def _push(direction_deg: float, force: float) -> np.ndarray:
    a = math.radians(direction_deg)
    return force * np.array([math.cos(a), math.sin(a), 0.0])


def largest_survived(survives: Callable[[float], bool], hi: float, iterations: int) -> dict[str, Any]:
    """Bisection of the largest force survived over ``[0, hi]`` (``hi`` assumed fatal, never tried):
    ``{largest_survived_N, smallest_failed_N (None: no trial failed), trials: [[force, survived], ...]}``."""
    lo, top = 0.0, hi
    trials = []
    failed: float | None = None
    for _ in range(iterations):
        mid = 0.5 * (lo + top)
        ok = survives(mid)
        trials.append([round(mid, 6), bool(ok)])
        if ok:
            lo = mid
        else:
            top = failed = mid
    return {
        "largest_survived_N": round(lo, 6),
        "smallest_failed_N": None if failed is None else round(failed, 6),
        "trials": trials,
    }


def standing_cell(cell: Cell) -> dict[str, Any]:
    """The standing push cell (see the module docstring): params ``direction_deg``, ``duration_s``,
    ``max_impulse_Ns``, ``iterations``, ``push_time_s``, ``standing_s``, ``recover``."""
    from .walking import stand_and_push

    p = cell.params
    direction, duration = float(p["direction_deg"]), float(p["duration_s"])
    recover = bool(p["recover"])

    def survives(force: float) -> bool:
        _, _, s = stand_and_push(
            cell.robot, _push(direction, force), float(p["push_time_s"]), float(p["standing_s"]), duration, recover
        )
        ok = not s["fell"] and s["min_pelvis_height_ratio"] >= MIN_PELVIS_RATIO
        return bool(ok and (recover or s["max_foot_slip_m"] < MAX_SLIP_M))

    out = largest_survived(survives, float(p["max_impulse_Ns"]) / duration, int(p["iterations"]))
    out["largest_survived_Ns"] = round(out["largest_survived_N"] * duration, 6)
    return out


def _walker_and_cycle(robot: str, steps: int, cycle_step: int, adjust: bool = False):
    """A fresh walker with its forward walk planned, and its cycle: ``(walker, command, start, length,
    swings)``; ``swings`` the (foot, lift-off, touchdown) of the cycle's two steps as cycle fractions.
    ``adjust``: the walker re-plans its next step from the measured DCM (capture steps)."""
    from .walking import PRESETS, Walker

    walker = Walker(robot, adjust=adjust)
    command = PRESETS["forward"][robot][0] if robot in PRESETS["forward"] else (0.2, 0.0, 0.0)
    timeline = walker.walk(command, steps)
    a, b, c = timeline.steps[cycle_step], timeline.steps[cycle_step + 1], None
    if cycle_step + 2 < len(timeline.steps):
        c = timeline.steps[cycle_step + 2]
    start = a.liftoff
    length = (c.liftoff - start) if c is not None else 2.0 * (b.liftoff - a.liftoff)
    swings = [
        (s.foot.value, round((s.liftoff - start) / length, 6), round((s.touchdown - start) / length, 6)) for s in (a, b)
    ]
    return walker, command, start, length, swings


def walking_cell(cell: Cell) -> dict[str, Any]:
    """The walking push cell (see the module docstring): params ``phase``, ``direction_deg``,
    ``duration_s``, ``max_impulse_Ns``, ``iterations``, ``walk_steps``, ``cycle_step``, ``after_push_s``
    and optionally ``adjust`` (online step adjustment, default False)."""
    p = cell.params
    direction, duration = float(p["direction_deg"]), float(p["duration_s"])
    steps, cycle_step = int(p["walk_steps"]), int(p["cycle_step"])
    adjust = bool(p.get("adjust", False))
    _, command, start, length, swings = _walker_and_cycle(cell.robot, steps, cycle_step, adjust)
    push_time = start + float(p["phase"]) * length

    def survives(force: float) -> bool:
        walker, *_ = _walker_and_cycle(cell.robot, steps, cycle_step, adjust)
        run = walker.run(push_time + float(p["after_push_s"]), pushes=[(push_time, _push(direction, force), duration)])
        z = run["base_z"]
        ok = not run["fell"] and len(z) > 0 and float(np.min(z)) >= MIN_PELVIS_RATIO * run["base_z0"]
        return bool(ok)

    out = largest_survived(survives, float(p["max_impulse_Ns"]) / duration, int(p["iterations"]))
    out.update(
        largest_survived_Ns=round(out["largest_survived_N"] * duration, 6),
        push_time_s=round(push_time, 6),
        cycle_s=round(length, 6),
        swings=swings,
        command=list(command),
    )
    return out


def standing_cells(robot: str, settings: PushMapSettings) -> list[Cell]:
    s = settings
    return sweep.grid(
        robot,
        duration_s=s.durations_s,
        direction_deg=s.directions_deg,
        max_impulse_Ns=[s.max_impulse_Ns],
        iterations=[s.iterations],
        push_time_s=[s.push_time_s],
        standing_s=[s.standing_s],
        recover=[s.recover],
    )


def walking_cells(robot: str, pushes: WalkingPushes) -> list[Cell]:
    """The cells of :func:`walking_cell`, one per push direction and gait phase (directions outer);
    the other fields of ``pushes`` are every cell's parameters of the same names."""
    axes: dict[str, Sequence[Any]] = {f.name: [getattr(pushes, f.name)] for f in dataclasses.fields(pushes)}
    del axes["directions_deg"], axes["phases"]
    return sweep.grid(robot, 0, direction_deg=pushes.directions_deg, phase=pushes.phases, **axes)


@dataclasses.dataclass(frozen=True)
class PushMap:
    """A computed push map: the two sweeps' results.

    Attributes:
        robot: the robot.
        settings: the grid and simulations.
        standing: the standing sweep (one cell per duration and direction).
        walking: the walking sweep (one cell per phase).
    """

    robot: str
    settings: PushMapSettings
    standing: SweepResult
    walking: SweepResult

    def results(self) -> dict[str, Any]:
        """The map as JSON-able data, results only (no engine, workers or timings): equal for runs on
        different engines. Failed cells appear with ``"status": "failed"`` and their error."""
        standing = []
        for r in self.standing.results:
            row = {"direction_deg": r.cell.params["direction_deg"], "duration_s": r.cell.params["duration_s"]}
            standing.append(_row(row, r))
        walking = []
        for r in self.walking.results:
            walking.append(_row({"phase": r.cell.params["phase"]}, r))
        return {
            "robot": self.robot,
            "settings": dataclasses.asdict(self.settings),
            "standing": standing,
            "walking": walking,
            "weakest": self.weakest(),
        }

    def weakest(self) -> dict[str, Any]:
        """Per standing duration, the direction with the smallest survived push; walking, the phase."""
        out: dict[str, Any] = {"standing": {}, "walking": None}
        for d in self.settings.durations_s:
            cells = [r for r in self.standing.results if r.ok and r.cell.params["duration_s"] == d]
            if cells:
                w = min(cells, key=lambda r: (r.value["largest_survived_N"], r.cell.params["direction_deg"]))
                out["standing"][str(d)] = {
                    "direction_deg": w.cell.params["direction_deg"],
                    "largest_survived_N": w.value["largest_survived_N"],
                }
        cells = [r for r in self.walking.results if r.ok]
        if cells:
            w = min(cells, key=lambda r: (r.value["largest_survived_N"], r.cell.params["phase"]))
            out["walking"] = {"phase": w.cell.params["phase"], "largest_survived_N": w.value["largest_survived_N"]}
        return out

    def timings(self) -> dict[str, Any]:
        """How the sweeps ran: engine, workers, wall time, cells computed and reused, cells per second."""
        return {
            name: {
                **dataclasses.asdict(result.stats),
                "cells_per_second": round(result.stats.cells_per_second, 4) if result.stats.computed else None,
                "cell_seconds_median": (
                    round(float(np.median([r.seconds for r in result.results if r.seconds > 0])), 3)
                    if any(r.seconds > 0 for r in result.results)
                    else None
                ),
            }
            for name, result in (("standing", self.standing), ("walking", self.walking))
        }


def _row(row: dict[str, Any], r: sweep.CellResult) -> dict[str, Any]:
    row["status"] = r.status.value
    if r.ok:
        row.update(r.value)
    else:
        row["error"] = r.error.strip().splitlines()[-1] if r.error else ""
    return row


def _substore(options: sweep.SweepOptions, name: str) -> sweep.SweepOptions:
    """``options`` with its store (if any) moved to the subdirectory ``name``."""
    store = options.get("store")
    if isinstance(store, sweep.ResultStore):
        store = store.directory
    return {**options, "store": None if store is None else Path(store) / name}


def push_map(robot: str, settings: PushMapSettings | None = None, **options: Unpack[sweep.SweepOptions]) -> PushMap:
    """Compute the standing and walking push maps of ``robot`` (``talos`` or ``g1``) as two sweeps
    (``options``: where they run, see :func:`wbc.sweep.run_sweep`; a ``store`` makes an interrupted map
    resume, each sweep in its own subdirectory)."""
    settings = settings or PushMapSettings()
    standing = sweep.run_sweep(standing_cell, standing_cells(robot, settings), **_substore(options, "standing"))
    walking = sweep.run_sweep(walking_cell, walking_cells(robot, settings.walking), **_substore(options, "walking"))
    return PushMap(robot, settings, standing, walking)


# ------------------------------------------------------------------------------------------ plots
def _direction(r: sweep.CellResult) -> float:
    return float(r.cell.params["direction_deg"])


def _bracket(results: list[sweep.CellResult]) -> tuple[np.ndarray, np.ndarray]:
    """The bisection brackets (largest survived, smallest failed or, none failing, the survived) of cells."""
    lo = np.array([float(r.value["largest_survived_N"]) for r in results])
    hi = np.array([r.value["smallest_failed_N"] for r in results], dtype=object)
    return lo, np.array([lo[k] if h is None else float(h) for k, h in enumerate(hi)])


def plot_standing(pm: PushMap, path: Path | str) -> Path:
    """Polar plots, one per push duration: the largest push survived (N, radius) over its direction
    (world, 0° = forward), the bisection's bracket shaded, the weakest direction marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    durations = pm.settings.durations_s
    fig, axes = plt.subplots(
        1,
        len(durations),
        subplot_kw={"projection": "polar"},
        figsize=(max(6.0, 4.2 * len(durations)), 4.8),
        squeeze=False,
    )
    weakest = pm.weakest()["standing"]
    for ax, d in zip(axes[0], durations):
        cells = sorted((r for r in pm.standing.results if r.cell.params["duration_s"] == d), key=_direction)
        ok = [r for r in cells if r.ok]
        if ok:
            theta = np.radians([_direction(r) for r in ok + ok[:1]])
            lo, hi = _bracket(ok + ok[:1])
            ax.fill_between(theta, lo, hi, color="tab:blue", alpha=0.2, label="bisection bracket")
            ax.plot(theta, lo, "o-", color="tab:blue", label="largest survived")
        for r in cells:
            if not r.ok:
                ax.plot(math.radians(_direction(r)), 0.0, "x", color="red", markersize=10)
        w = weakest.get(str(d))
        if w is not None:
            ax.plot(math.radians(w["direction_deg"]), w["largest_survived_N"], "*", color="tab:red", markersize=16)
            ax.set_title(f"push {d * 1e3:.0f} ms: weakest {w['direction_deg']:.0f}° ({w['largest_survived_N']:.0f} N)")
        else:
            ax.set_title(f"push {d * 1e3:.0f} ms")
        ax.set_theta_zero_location("N")  # forward up
        ax.set_theta_direction(1)  # counter-clockwise: 90° = left
        ax.set_rlabel_position(225)
    if axes[0][0].get_legend_handles_labels()[0]:
        axes[0][0].legend(loc="lower left", bbox_to_anchor=(-0.25, -0.18), fontsize=8)
    kind = "with recovery steps" if pm.settings.recover else "standing (no steps)"
    fig.suptitle(
        f"{pm.robot}: largest pelvis push survived {kind},\nby direction (0° forward, 90° left), N", fontsize=11
    )
    return save_figure(fig, Path(path))


def plot_walking(pm: PushMap, path: Path | str) -> Path:
    """The largest push survived walking (N) over the gait phase (% of the cycle), the swing phases of
    each foot shaded, the weakest phase marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9.5, 4.2))
    ok = [r for r in pm.walking.results if r.ok]
    colors = {"left": "tab:green", "right": "tab:purple"}
    if ok:
        for foot, a, b in ok[0].value["swings"]:
            ax.axvspan(100 * a, 100 * b, color=colors.get(foot, "grey"), alpha=0.15, label=f"{foot} foot swinging")
        phase = [100 * float(r.cell.params["phase"]) for r in ok]
        lo, hi = _bracket(ok)
        ax.fill_between(phase, lo, hi, color="tab:blue", alpha=0.2, label="bisection bracket")
        ax.plot(phase, lo, "o-", color="tab:blue", label="largest survived")
    for r in pm.walking.results:
        if not r.ok:
            ax.plot(100 * r.cell.params["phase"], 0.0, "x", color="red", markersize=10, label="failed cell")
    w = pm.weakest()["walking"]
    if w is not None:
        ax.plot(100 * w["phase"], w["largest_survived_N"], "*", color="tab:red", markersize=16, label="weakest")
    s = pm.settings.walking
    ax.set_xlim(0, 100)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(f"push start, % of the gait cycle (from lift-off of step {s.cycle_step})")
    ax.set_ylabel("largest push survived, N")
    ax.set_title(
        f"{pm.robot} walking: {s.duration_s * 1e3:.0f} ms pelvis push toward {s.directions_deg[0]:.0f}°"
        + (f"; weakest at {100 * w['phase']:.0f}% ({w['largest_survived_N']:.0f} N)" if w else "")
    )
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    if unique:
        ax.legend(unique.values(), unique.keys(), fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(alpha=0.3)
    return save_figure(fig, Path(path))
