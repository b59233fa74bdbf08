"""The control layer: tasks, contacts and limits contribute typed pieces to one QP in the inputs
``u = (τ, f)``, which the controller builds and solves every step."""

from __future__ import annotations

from .contacts import PointContact, SurfaceContact
from .controller import Command, StepStatus, WholeBodyController

__all__ = ["WholeBodyController", "Command", "StepStatus", "PointContact", "SurfaceContact"]
