"""What a robot's software does to its measured state before the controller reads it: a low-pass
filter of the velocities (:class:`VelocityFilter`) and a prediction of the state to the time the
command will apply (:class:`StatePredictor`). Pure numpy; usable on hardware as in simulation
(:mod:`wbc.sim.injection` applies them when a :class:`wbc.sim.faults.Compensation` asks)."""

from __future__ import annotations

from .filters import VelocityFilter
from .prediction import StatePredictor

__all__ = ["StatePredictor", "VelocityFilter"]
