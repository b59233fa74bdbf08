"""A prediction of the robot's state to the time its next command will apply.

With a state that is ``N`` periods old when the controller reads it and a command that applies
``M`` periods after it is computed (plus the motors' lag and a filter's delay), the controller acts
on a state ``H ≈ n Δt`` older than the one its torques meet. The commands of those last ``n``
periods are in flight: :class:`StatePredictor` integrates the measured state through them, each
with the acceleration the controller expected of it (``Command.qdd``, exact for the controller's
model), oldest first (a Smith predictor on the rigid-body model):

``v̂ = v + Δt Σ_i a_i``,  ``q̂ = q ⊕ (n Δt v + Δt² Σ_i (n − i − ½) a_i)``  (``i = 0`` the oldest).

Extrapolating with the last command's acceleration alone over the whole horizon instead closes a
loop through the stiffest task (``v̂ ≈ v − H k_d v̂``) that diverges once ``H k_d > 1`` (measured:
Talos with 8 ms of state delay and its 3000/s² contact stabilisation).
"""

from __future__ import annotations

import collections
import math

import numpy as np

from ..errors import InputError
from ..model.configuration import integrate
from ..model.model import Model

__all__ = ["StatePredictor"]


class StatePredictor:
    """Predicts ``(q, v)`` over the commands of the last ``round(horizon_s / period_s)`` periods on
    ``model`` (see the module docstring).

    Raises:
        InputError: a negative or non-finite horizon, a period that is not positive.
    """

    def __init__(self, model: Model, horizon_s: float, period_s: float) -> None:
        if not (math.isfinite(horizon_s) and horizon_s >= 0):
            raise InputError(f"StatePredictor: horizon_s must be non-negative and finite, got {horizon_s!r}")
        if not (math.isfinite(period_s) and period_s > 0):
            raise InputError(f"StatePredictor: period_s must be positive and finite, got {period_s!r}")
        self.model, self.horizon_s, self.period_s = model, float(horizon_s), float(period_s)
        self.periods = round(self.horizon_s / self.period_s)
        self._in_flight: collections.deque = collections.deque(maxlen=max(self.periods, 1))

    def reset(self) -> None:
        """Forget the commands in flight."""
        self._in_flight.clear()

    def commanded(self, qdd: np.ndarray) -> None:
        """The acceleration (nv,) the controller expects of the command it just computed (a
        non-finite one counts as zero)."""
        qdd = np.asarray(qdd, dtype=float)
        self._in_flight.append(qdd.copy() if np.all(np.isfinite(qdd)) else np.zeros(self.model.nv))

    def __call__(self, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The state ``(q̂, v̂)`` predicted over the commands in flight (``(q, v)`` itself where the
        prediction would not be finite)."""
        n, dt = self.periods, self.period_s
        if n == 0:
            return q, v
        a = list(self._in_flight)
        with np.errstate(all="ignore"):
            dv = dt * np.sum(a, axis=0) if a else np.zeros_like(v)
            dq = n * dt * v
            first = n - len(a)  # before the first command: none in flight
            for i, ai in enumerate(a, start=first):
                dq = dq + dt * dt * (n - i - 0.5) * ai
            if not (np.all(np.isfinite(dq)) and np.all(np.isfinite(dv))):
                return q, v
            q_hat = integrate(self.model, q, dq)
        if not np.all(np.isfinite(q_hat)):
            return q, v
        return q_hat, v + dv
