"""Plots of a sweep's table (matplotlib, the ``plots`` extra)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .result import SweepResult

__all__ = ["plot_grid"]


def plot_grid(result: SweepResult, x: str, y: str, value: str, path: Path | str, title: str = "") -> Path:
    """A heat map of the value entry ``value`` (a number) over the parameters ``x`` and ``y`` of a
    grid sweep (cells with the same ``x`` and ``y`` and another parameter: the last one shown);
    failed cells are crossed out. Returns the PNG's path.

    Raises:
        KeyError: ``x`` or ``y`` is not a parameter of the cells.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = sorted({r.cell.params[x] for r in result.results})
    ys = sorted({r.cell.params[y] for r in result.results})
    grid = np.full((len(ys), len(xs)), np.nan)
    failed = []
    for r in result.results:
        i, j = ys.index(r.cell.params[y]), xs.index(r.cell.params[x])
        if r.ok and isinstance(r.value.get(value), (int, float)):
            grid[i, j] = float(r.value[value])
        elif not r.ok:
            failed.append((j, i))
    fig, ax = plt.subplots(figsize=(1.2 + 0.6 * len(xs), 1.2 + 0.45 * len(ys)), constrained_layout=True)
    image = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis")
    fig.colorbar(image, ax=ax, label=value)
    for j, i in failed:
        ax.plot(j, i, "x", color="red", markersize=10)
    ax.set_xticks(range(len(xs)), [str(v) for v in xs], rotation=45)
    ax.set_yticks(range(len(ys)), [str(v) for v in ys])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(title or f"{value} ({result.stats.computed + result.stats.reused} cells, red x: failed)")
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
