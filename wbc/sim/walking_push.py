"""The largest push a walking humanoid survives against the gait phase at which it lands, forward and
sideways, compared with published figures for torque-controlled humanoids.

One cell per (push direction, gait phase) of :func:`wbc.sim.push_map.walking_cell` (the grid a
:class:`wbc.sim.push_map.WalkingPushes`, by default :data:`DEFAULT_PUSHES`): the robot walks
forward (the catalog's ``forward`` preset) with online step adjustment (capture steps re-planned
from the measured DCM, :class:`wbc.locomotion.CaptureStepPlanner`); a pelvis push of
``duration_s`` starts at ``phase`` of the gait cycle (two steps from the lift-off of step
``cycle_step``) and the cell bisects its force. The figures are forces and impulses, and the
velocity change the impulse gives the whole robot (``impulse / mass``), which compares robots of
different masses.

Published reference (:data:`PUBLISHED`): a 33 kg iCub walking at 0.28 m/s withstood 150 N for 0.05 s
(as quoted in issue 28; a velocity change of 0.23 m/s). G1 weighs the same 33 kg.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import sweep
from ..figures import save_figure
from .push_map import WalkingPushes, walking_cell, walking_cells

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

__all__ = ["PUBLISHED", "DEFAULT_PUSHES", "walking_push_sweep", "plot_push_vs_phase"]

#: Published walking pushes survived: (robot, mass kg, walking speed m/s, force N, duration s).
PUBLISHED: tuple[dict[str, Any], ...] = (
    {"robot": "iCub", "mass_kg": 33.0, "speed_m_s": 0.28, "force_N": 150.0, "duration_s": 0.05},
)


#: The sweep's default pushes: forward and sideways, 0.05 s (the published iCub figure's), with online
#: step adjustment.
DEFAULT_PUSHES = WalkingPushes(
    directions_deg=(0.0, 90.0), duration_s=0.05, max_impulse_Ns=40.0, iterations=5, adjust=True
)


def walking_push_sweep(
    robot: str, pushes: WalkingPushes = DEFAULT_PUSHES, **options: Unpack[sweep.SweepOptions]
) -> dict[str, Any]:
    """Run the sweep (``options``: where, see :func:`wbc.sweep.run_sweep`); returns JSON-able results
    (deterministic: no timings): per direction, the largest push survived (N, N s, m/s of velocity
    change) at each phase, the weakest phase, and :data:`PUBLISHED`."""
    from .catalog import legged_robot

    mass = float(legged_robot(robot).model.total_mass)
    result = sweep.run_sweep(walking_cell, walking_cells(robot, pushes), **options)
    rows = []
    for r in result.results:
        row: dict[str, Any] = {"direction_deg": r.cell.params["direction_deg"], "phase": r.cell.params["phase"]}
        if r.ok:
            row.update(r.value)
            row["velocity_change_m_s"] = round(row["largest_survived_Ns"] / mass, 4)
        else:
            row.update(status="failed", error=(r.error or "").strip().splitlines()[-1:])
        rows.append(row)
    weakest = {}
    for d in pushes.directions_deg:
        ok = [row for row in rows if row["direction_deg"] == d and "largest_survived_N" in row]
        if ok:
            w = min(ok, key=lambda row: row["largest_survived_N"])
            weakest[str(d)] = {k: w[k] for k in ("phase", "largest_survived_N", "largest_survived_Ns")}
    return {
        "robot": robot,
        "mass_kg": round(mass, 3),
        "settings": dataclasses.asdict(pushes),
        "cells": rows,
        "weakest": weakest,
        "published": [
            {
                **p,
                "impulse_Ns": p["force_N"] * p["duration_s"],
                "velocity_change_m_s": round(p["force_N"] * p["duration_s"] / p["mass_kg"], 4),
            }
            for p in PUBLISHED
        ],
    }


def plot_push_vs_phase(results: dict[str, Any], path: Path | str) -> Path:
    """The largest push survived (N, left axis; velocity change m/s, right axis) against the gait
    phase, one line per direction, the swing phases shaded, the published figures as lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.8))
    rows = [r for r in results["cells"] if "largest_survived_N" in r]
    colors = ["tab:blue", "tab:orange", "tab:green", "tab:red"]
    shaded = False
    for k, d in enumerate(results["settings"]["directions_deg"]):
        ok = sorted((r for r in rows if r["direction_deg"] == d), key=lambda r: r["phase"])
        if not ok:
            continue
        if not shaded:
            for foot, a, b in ok[0]["swings"]:
                ax.axvspan(100 * a, 100 * b, color="0.5", alpha=0.12 if foot == "left" else 0.22, lw=0)
                ax.text(
                    100 * (a + b) / 2,
                    0.02,
                    f"{foot} swing",
                    transform=ax.get_xaxis_transform(),
                    ha="center",
                    fontsize=8,
                )
            shaded = True
        phase = [100 * r["phase"] for r in ok]
        lo = np.array([r["largest_survived_N"] for r in ok])
        hi = np.array(
            [r["smallest_failed_N"] if r["smallest_failed_N"] is not None else r["largest_survived_N"] for r in ok]
        )
        label = {0.0: "forward", 90.0: "sideways (left)", -90.0: "sideways (right)", 180.0: "backward"}.get(
            float(d), f"{d:.0f}°"
        )
        ax.fill_between(phase, lo, hi, color=colors[k % 4], alpha=0.15)
        ax.plot(phase, lo, "o-", color=colors[k % 4], label=f"{label}: largest survived")
    duration = results["settings"]["duration_s"]
    for p in results["published"]:
        if abs(p["duration_s"] - duration) < 1e-9:
            ax.axhline(p["force_N"], color="k", ls="--", lw=1)
            ax.text(
                1,
                p["force_N"],
                f" {p['robot']} ({p['mass_kg']:.0f} kg, {p['speed_m_s']} m/s): {p['force_N']:.0f} N",
                va="bottom",
                fontsize=8,
            )
    mass = results["mass_kg"]
    right = ax.twinx()
    ax.set_ylim(0, max(ax.get_ylim()[1], 1.0))
    right.set_ylim(0, ax.get_ylim()[1] * duration / mass)
    right.set_ylabel("velocity change of the whole robot (m/s)")
    ax.set_xlim(0, 100)
    ax.set_xlabel("push start, % of the gait cycle")
    ax.set_ylabel(f"largest push survived ({duration * 1e3:.0f} ms), N")
    ax.set_title(f"{results['robot']} ({mass:.0f} kg) walking: pelvis push vs gait phase")
    ax.legend(fontsize=8, loc="upper right")
    ax.grid(alpha=0.3)
    return save_figure(fig, Path(path))
