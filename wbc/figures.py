"""Matplotlib figures the demos share: CoM tracking, joint torques against their limits, control-step
times, pushes shaded, and saving a figure.

Needs the ``plots`` extra (matplotlib); ``import wbc`` never imports this module.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from .model.clusters import ClusterModel
from .model.model import Model

__all__ = [
    "com_tracking_figure",
    "mark_spans",
    "plot_torques_against_limits",
    "save_figure",
    "step_time_figure",
    "torques_figure",
]


def plot_torques_against_limits(
    ax, t: np.ndarray, tau: np.ndarray, model: Model | ClusterModel, named: int = 6
) -> None:
    """Draw ``|τ| / τ_max`` per actuated joint over time on ``ax``, the ``named`` most loaded joints
    in colour and labelled, the others grey, and the limit (1) in red.

    Args:
        t: (T,) times, s.
        tau: (T, nu) joint torques in ``model.actuated`` order (a clustered model's motor order), N m.
        model: gives the effort limits (joints without a finite positive limit are drawn as 0) and names.
    """
    if isinstance(model, ClusterModel):
        limit, names = model.motor_effort_limit, model.motor_names
    else:
        limit, names = model.effort_limit, model.actuated_joint_names
    ratio = np.abs(tau) / np.where(np.isfinite(limit) & (limit > 0), limit, np.inf)
    for rank, k in enumerate(np.argsort(ratio.max(axis=0))[::-1]):
        if rank < named:
            ax.plot(t, ratio[:, k], lw=1.1, label=names[k])
        else:
            ax.plot(t, ratio[:, k], lw=0.5, color="0.7")
    ax.axhline(1.0, color="tab:red", lw=1.5, label="limit")
    ax.set_ylim(0, 1.1)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("|τ| / τ_max")
    ax.legend(loc="upper right", fontsize=8, ncol=2)
    ax.set_title(f"Joint torques against their limits ({named} most loaded joints named)")


def save_figure(fig, path: Path, dpi: int = 110) -> Path:
    """Lay ``fig`` out tightly, write it to ``path`` (PNG by its suffix), close it; returns ``path``."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def mark_spans(ax, spans: Iterable[tuple[float, float]]) -> None:
    """Shade the time intervals ``(start, end)`` (s) on ``ax`` in light red (pushes)."""
    for start, end in spans:
        ax.axvspan(start, end, color="tab:red", alpha=0.25, lw=0)


def com_tracking_figure(t: np.ndarray, com: np.ndarray, com_ref: np.ndarray, title: str, spans=()):
    """CoM (T, 3) against its reference (T, 3) over ``t`` (T,) s, one axis a row; ``spans`` shaded."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(9, 7), sharex=True)
    for k, (ax, name) in enumerate(zip(axes, "xyz")):
        ax.plot(t, com_ref[:, k], "--", color="k", lw=1, label="reference")
        ax.plot(t, com[:, k], color="tab:blue", lw=1.2, label="actual")
        ax.set_ylabel(f"CoM {name} (m)")
        mark_spans(ax, spans)
    axes[0].legend(loc="upper right")
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(title)
    return fig


def torques_figure(t: np.ndarray, tau: np.ndarray, model: Model | ClusterModel, spans=()):
    """:func:`plot_torques_against_limits` in a figure of its own; ``spans`` shaded."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    plot_torques_against_limits(ax, t, tau, model)
    mark_spans(ax, spans)
    return fig


def step_time_figure(us: np.ndarray):
    """Histogram of control-step times ``us`` (T,), µs, with the median."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.hist(us, bins=np.linspace(0, np.percentile(us, 99.5) * 1.1, 60).tolist(), color="tab:blue")
    ax.axvline(np.median(us), color="k", ls="--", label=f"median {np.median(us):.0f} µs")
    ax.set_xlabel("controller step (µs)")
    ax.set_ylabel("steps")
    ax.legend()
    ax.set_title(f"Control-step time ({len(us)} steps, this machine, this run)")
    return fig
