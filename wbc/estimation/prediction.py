"""A prediction of the robot's state to the time its next command will apply.

With a state that is ``N`` periods old when the controller reads it and a command that applies
``M`` periods after it is computed (plus the motors' lag and a filter's delay), the controller acts
on a state ``H`` seconds older than the one its torques meet. :class:`StatePredictor` integrates
the measured state over ``H`` with the acceleration the controller expects of its last command
(``Command.qdd``, exact for the controller's model): ``v̂ = v + a H``, ``q̂ = q ⊕ (v H + a H²/2)``.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InputError
from ..model.configuration import integrate
from ..model.model import Model

__all__ = ["StatePredictor"]


class StatePredictor:
    """Predicts ``(q, v)`` ``horizon_s`` seconds ahead on ``model`` (see the module docstring).

    Raises:
        InputError: a negative or non-finite horizon.
    """

    def __init__(self, model: Model, horizon_s: float) -> None:
        if not (math.isfinite(horizon_s) and horizon_s >= 0):
            raise InputError(f"StatePredictor: horizon_s must be non-negative and finite, got {horizon_s!r}")
        self.model, self.horizon_s = model, float(horizon_s)
        self._acceleration = np.zeros(model.nv)

    def reset(self) -> None:
        """Forget the last command's acceleration."""
        self._acceleration = np.zeros(self.model.nv)

    def commanded(self, qdd: np.ndarray) -> None:
        """The acceleration (nv,) the controller expects of the command it just computed."""
        qdd = np.asarray(qdd, dtype=float)
        self._acceleration = qdd.copy() if np.all(np.isfinite(qdd)) else np.zeros(self.model.nv)

    def __call__(self, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The state ``(q̂, v̂)`` predicted ``horizon_s`` ahead of ``(q, v)`` (``(q, v)`` itself where
        the prediction would not be finite)."""
        h, a = self.horizon_s, self._acceleration
        if h == 0.0:
            return q, v
        with np.errstate(all="ignore"):
            dq, v_hat = v * h + 0.5 * h * h * a, v + h * a
        if not (np.all(np.isfinite(dq)) and np.all(np.isfinite(v_hat))):
            return q, v  # a diverging state: no prediction rather than a non-finite one
        return integrate(self.model, q, dq), v_hat
