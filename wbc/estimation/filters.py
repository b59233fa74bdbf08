"""A first-order low-pass filter of measured velocities, discretised exactly for a sampled input.

``ẏ = (x − y) / T`` with ``T = 1 / (2π f_c)``, the input held over each period ``Δt``:
``y ← y + (1 − e^{−Δt/T}) (x − y)``. Its delay at low frequencies is ``T`` (the group delay), which
a :class:`~wbc.estimation.StatePredictor` can add to the latency it compensates.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InputError

__all__ = ["VelocityFilter"]


class VelocityFilter:
    """Low-pass filter (cut-off ``cutoff_hz``, Hz) of the entries ``indices`` of a velocity vector
    sampled every ``period_s`` s; the other entries pass unchanged.

    Raises:
        InputError: a cut-off or period that is not positive and finite.
    """

    def __init__(self, cutoff_hz: float, period_s: float, indices: np.ndarray | None = None) -> None:
        if not (math.isfinite(cutoff_hz) and cutoff_hz > 0):
            raise InputError(f"VelocityFilter: cutoff_hz must be positive and finite, got {cutoff_hz!r}")
        if not (math.isfinite(period_s) and period_s > 0):
            raise InputError(f"VelocityFilter: period_s must be positive and finite, got {period_s!r}")
        self.cutoff_hz, self.period_s = float(cutoff_hz), float(period_s)
        self.time_constant_s = 1.0 / (2.0 * math.pi * self.cutoff_hz)
        self.gain = 1.0 - math.exp(-self.period_s / self.time_constant_s)
        self.indices = None if indices is None else np.asarray(indices, dtype=int)
        self._y: np.ndarray | None = None

    def reset(self) -> None:
        """Forget the past: the next sample passes unfiltered and starts the filter."""
        self._y = None

    def __call__(self, v: np.ndarray) -> np.ndarray:
        """The filtered velocity (same shape as ``v``)."""
        v = np.asarray(v, dtype=float)
        x = v if self.indices is None else v[self.indices]
        self._y = x.copy() if self._y is None else self._y + self.gain * (x - self._y)
        if self.indices is None:
            return self._y.copy()
        out = v.copy()
        out[self.indices] = self._y
        return out
