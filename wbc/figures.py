"""Matplotlib figures the demos share: joint torques against their limits, and saving a figure.

Needs the ``plots`` extra (matplotlib); ``import wbc`` never imports this module.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .model.model import Model

__all__ = ["plot_torques_against_limits", "save_figure"]


def plot_torques_against_limits(ax, t: np.ndarray, tau: np.ndarray, model: Model, named: int = 6) -> None:
    """Draw ``|τ| / τ_max`` per actuated joint over time on ``ax``, the ``named`` most loaded joints
    in colour and labelled, the others grey, and the limit (1) in red.

    Args:
        t: (T,) times, s.
        tau: (T, nu) joint torques in ``model.actuated`` order, N m.
        model: gives the effort limits (joints without a finite positive limit are drawn as 0) and names.
    """
    limit = model.effort_limit
    ratio = np.abs(tau) / np.where(np.isfinite(limit) & (limit > 0), limit, np.inf)
    for rank, k in enumerate(np.argsort(ratio.max(axis=0))[::-1]):
        if rank < named:
            ax.plot(t, ratio[:, k], lw=1.1, label=model.actuated_joint_names[k])
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
