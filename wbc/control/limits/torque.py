"""Actuator effort limits: ``−τ_max ≤ τ ≤ τ_max``, bounds on the actuator block of ``u`` (the
motors of a clustered model)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...errors import InputError
from ...model.model import Model
from ..contributor import Contributor, Runtime
from ..model_context import context_type
from ..pieces import TAU, Bounds, Group, Kind

if TYPE_CHECKING:
    from ..step_context import StepContext

__all__ = ["TorqueLimit"]


class TorqueLimit(Contributor):
    """Symmetric actuator effort limits.

    Args:
        limit: (n_actuated,) N m (or N), ``≥ 0``, ``inf`` where unbounded; default the model's effort
            limits from its URDF (unbounded where the URDF gives none). For a clustered model: one
            per motor (n_motors,), default the motor joints' effort limits. Kernel parameters, so
            :meth:`set_limit` never recompiles.
        name: a readable name (default ``"torque_limit"``).
    """

    def __init__(self, limit=None, name: str = "torque_limit") -> None:
        self.name = name
        self._requested = None if limit is None else np.array(limit, dtype=float, copy=True)
        self._limit: np.ndarray | None = None

    def check(self, model: Model) -> None:
        inputs = context_type(model)
        if self._requested is None:
            self._limit = inputs.input_limit(model)
            return
        self._limit = None
        self.set_limit(self._requested, inputs.input_count(model))

    def set_limit(self, limit, n_actuated: int | None = None) -> None:
        """Set the limits (n_actuated,), N m / N, ``≥ 0`` (``inf`` allowed)."""
        n = n_actuated if n_actuated is not None else (self._limit.size if self._limit is not None else None)
        if n is None:
            self._requested = np.array(limit, dtype=float, copy=True)
            return
        try:
            arr = np.asarray(limit, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise InputError(f"{self.name}: limits must be {n} numbers, got {limit!r}") from None
        if arr.shape != (n,) or np.any(np.isnan(arr)) or np.any(arr < 0):
            raise InputError(f"{self.name}: limits must be {n} numbers >= 0 (inf allowed), got {arr}")
        if self._limit is None or self._limit.shape != arr.shape:
            self._limit = arr.copy()
        else:
            self._limit[:] = arr  # in place: a compiled kernel reads this array

    @property
    def limit(self) -> np.ndarray:
        """The limits in use (n_actuated,), a copy (available once checked against a model)."""
        if self._limit is None:
            raise InputError(f"{self.name}: the limits are known once the limit is given to a controller")
        return self._limit.copy()

    @property
    def parameter_size(self) -> int:
        return 0 if self._limit is None else self._limit.size

    def parameters(self, runtime: Runtime) -> np.ndarray:
        if self._limit is None:
            raise InputError(f"{self.name}: give the limit to a controller before reading its parameters")
        return self._limit

    def pieces(self, ctx: StepContext, p) -> list[Bounds]:
        return [Bounds(-p, p, Group(Kind.TORQUE_LIMIT, self.name), variables=TAU)]
