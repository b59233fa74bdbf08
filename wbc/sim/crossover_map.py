"""Which sideways pushes a standing humanoid survives, with crossover steps and without, over the
push's force and the time it comes (issue 28, item 2).

One cell per (force, push time, crossover on or off): the robot stands
(:func:`wbc.sim.walking.stand_and_push`), is pushed toward its right for ``push_length_s`` at
``push_time_s``, and runs ``after_push_s`` more. Without crossover steps it recovers by the steps
its step limits allow (none: its right foot carries the weight) and its hip strategy; with them, by
a crossover step of its left foot too (the crossover walker of :class:`wbc.sim.walking.Walker`).
A cell is held when the robot has not fallen by the end. Both runs of a (force, time) pair are
measured in the same sweep, on the same code.

Which pushes a crossing saves varies with when the push comes (the state of the legs and the upper
body at the push differs by a few millimetres and newtons, and the crossing, the landing and the
steps after it amplify it): a single push says little, the map over forces and times says how
often. ``python demos/crossover_map.py --robot g1 --out out/crossover_g1`` writes the map.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import sweep
from ..errors import InputError
from ..figures import save_figure

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

__all__ = ["LateralPushes", "DEFAULT_LATERAL_PUSHES", "lateral_push_cell", "crossover_map", "plot_crossover_map"]


@dataclasses.dataclass(frozen=True)
class LateralPushes:
    """The grid of a crossover map.

    Attributes:
        forces_N: push forces toward the robot's right, N.
        push_times_s: when each push starts, s after the robot starts standing.
        push_length_s: how long each push lasts, s.
        after_push_s: how long each run goes on after the push starts, s (a fall after a crossing
            comes within 3 s).
    """

    forces_N: tuple[float, ...]
    push_times_s: tuple[float, ...] = (1.0, 1.15, 1.3, 1.45)
    push_length_s: float = 0.1
    after_push_s: float = 5.0

    def __post_init__(self) -> None:
        for name in ("forces_N", "push_times_s"):
            values = getattr(self, name)
            if not values or any(not (isinstance(v, (int, float)) and v > 0) for v in values):
                raise InputError(f"lateral pushes: {name} must be positive numbers, got {values!r}")
        for name in ("push_length_s", "after_push_s"):
            if not getattr(self, name) > 0:
                raise InputError(f"lateral pushes: {name} must be positive, got {getattr(self, name)!r}")


#: Per robot: pushes just beyond what its hip strategy holds (G1 222 N, Talos 527 N), where only a
#: step can save it.
DEFAULT_LATERAL_PUSHES = {
    "g1": LateralPushes(forces_N=(224.0, 225.0, 226.0, 228.0, 230.0, 232.0, 234.0, 235.0, 238.0, 240.0, 242.0, 245.0)),
    "talos": LateralPushes(forces_N=(540.0, 560.0, 580.0, 600.0)),
}


def lateral_push_cell(cell: sweep.Cell) -> dict[str, Any]:
    """One standing run (see the module docstring): params ``force_N``, ``push_time_s``,
    ``push_length_s``, ``after_push_s``, ``crossover``; returns whether it held, when it fell (s, or
    None), its landings (time s, foot, where ``[x, y, yaw]``), how many control steps needed the
    QP's fallback and, with crossover steps, the nearest the legs' own collision geometry came (m,
    :mod:`wbc.sim.leg_clearance`; None without)."""
    from .walking import LATERAL_TOLERANCE, stand_and_push

    p = cell.params
    push_time, crossover = float(p["push_time_s"]), bool(p["crossover"])
    _, run, summary = stand_and_push(
        cell.robot,
        (0.0, -float(p["force_N"]), 0.0),
        push_time=push_time,
        duration=push_time + float(p["after_push_s"]),
        push_length=float(p["push_length_s"]),
        crossover=crossover,
        recovery_tolerance=LATERAL_TOLERANCE if crossover else 0.0,
    )
    return {
        "held": not run["fell"],
        "fell_at_s": round(float(run["t"][-1]), 3) if run["fell"] else None,
        "landings": [[round(d[0], 3), d[1], [round(float(x), 3) for x in d[2]]] for d in run["touchdowns"]],
        "failed_steps": int(summary["failed_steps"]),
        "legs_min_distance_m": summary["legs_min_distance_m"],
    }


def crossover_map(
    robot: str, pushes: LateralPushes | None = None, **options: Unpack[sweep.SweepOptions]
) -> dict[str, Any]:
    """Run the map (``pushes`` default :data:`DEFAULT_LATERAL_PUSHES` of ``robot``; ``options``: where,
    see :func:`wbc.sweep.run_sweep`); returns JSON-able results (deterministic): one row per cell and
    per push time how many pushes each run held.

    Raises:
        InputError: no default pushes for ``robot`` and none given.
    """
    if pushes is None:
        if robot not in DEFAULT_LATERAL_PUSHES:
            raise InputError(f"crossover map: no default pushes for {robot!r}; give pushes=LateralPushes(...)")
        pushes = DEFAULT_LATERAL_PUSHES[robot]
    cells = sweep.grid(
        robot,
        push_time_s=pushes.push_times_s,
        force_N=pushes.forces_N,
        crossover=[False, True],
        push_length_s=[pushes.push_length_s],
        after_push_s=[pushes.after_push_s],
    )
    result = sweep.run_sweep(lateral_push_cell, cells, **options)
    rows = []
    for r in result.results:
        row: dict[str, Any] = {k: r.cell.params[k] for k in ("push_time_s", "force_N", "crossover")}
        if r.ok:
            row.update(r.value)
        else:
            row.update(status="failed", error=(r.error or "").strip().splitlines()[-1:])
        rows.append(row)
    held = {
        name: {
            str(t): sum(1 for row in rows if row["crossover"] is on and row["push_time_s"] == t and row.get("held"))
            for t in pushes.push_times_s
        }
        for name, on in (("without_crossover", False), ("with_crossover", True))
    }
    return {
        "robot": robot,
        "settings": dataclasses.asdict(pushes),
        "cells": rows,
        "held": held,
        "pushes_per_time": len(pushes.forces_N),
    }


def plot_crossover_map(results: dict[str, Any], path: Path | str) -> Path:
    """The map as two grids, without crossover steps above and with them below: push time (rows)
    against force (columns), each cell held (green) or fallen (red, with the fall's time after the
    push)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    s = results["settings"]
    forces, times = list(s["forces_N"]), list(s["push_times_s"])
    size = (max(7.0, 0.6 * len(forces) + 2.0), 2.2 + 0.8 * len(times))
    fig, axes = plt.subplots(2, 1, figsize=size, sharex=True)
    for ax, (name, on) in zip(axes, (("without crossover", False), ("with crossover", True)), strict=True):
        grid = np.full((len(times), len(forces)), np.nan)
        for row in results["cells"]:
            if row["crossover"] is not on or "held" not in row:
                continue
            i, j = times.index(row["push_time_s"]), forces.index(row["force_N"])
            grid[i, j] = 1.0 if row["held"] else 0.0
            if not row["held"]:
                after = row["fell_at_s"] - row["push_time_s"]
                ax.text(j, i, f"{after:.1f}", ha="center", va="center", fontsize=7, color="white")
        ax.imshow(grid, cmap=matplotlib.colors.ListedColormap(["tab:red", "tab:green"]), vmin=0, vmax=1, aspect="auto")
        held = int(np.nansum(grid))
        ax.set_title(f"{name}: held {held} of {np.count_nonzero(~np.isnan(grid))}", fontsize=10)
        ax.set_yticks(range(len(times)), [f"{t:g}" for t in times])
        ax.set_ylabel("push at (s)")
    axes[1].set_xticks(range(len(forces)), [f"{f:g}" for f in forces], fontsize=8)
    axes[1].set_xlabel(f"push toward the right (N, for {s['push_length_s']:g} s)")
    title = f"{results['robot']} standing, pushed sideways: held (green) or fell (red: s after the push)"
    fig.suptitle(title, fontsize=10)
    return save_figure(fig, Path(path))
