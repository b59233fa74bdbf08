"""Algorithms for clustered models (kinematic loops and actuator transmissions, the cluster paper):
C-RNEA, C-ABA, C-EFPA, the clustered IIM and the approximate, projected and Lagrange baselines."""

from __future__ import annotations

from .dynamics import ClusterArticulatedBodies, ClusterStructure, aba, nonlinear_effects, rnea
from .kinematics import ClusterKinematics

__all__ = ["ClusterKinematics", "ClusterStructure", "ClusterArticulatedBodies", "rnea", "aba", "nonlinear_effects"]
