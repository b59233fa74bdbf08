"""Algorithms for clustered models (kinematic loops and actuator transmissions, the cluster paper):
C-RNEA, C-ABA, C-EFPA, the clustered IIM and the approximate, projected and Lagrange baselines.
Numpy in, numpy out: ``wbc.cluster_rnea``, ... (compiled, :mod:`wbc.numeric`) and
:mod:`wbc.eager` (uncompiled)."""

from __future__ import annotations

from .baselines import (
    ApproximateModel,
    approximate_aba,
    approximate_efpa,
    approximate_iim,
    approximate_rnea,
    lagrange_aba,
    projected_aba,
    projected_efpa,
    projected_mass_matrix,
    projected_rnea,
)
from .dynamics import ClusterArticulatedBodies, ClusterStructure, aba, nonlinear_effects, rnea
from .kinematics import ClusterKinematics
from .operational import constraint_jacobian, efpa, iim

__all__ = [
    "ClusterKinematics",
    "ClusterStructure",
    "ClusterArticulatedBodies",
    "rnea",
    "aba",
    "nonlinear_effects",
    "efpa",
    "iim",
    "constraint_jacobian",
    "ApproximateModel",
    "approximate_rnea",
    "approximate_aba",
    "approximate_efpa",
    "approximate_iim",
    "projected_rnea",
    "projected_aba",
    "projected_mass_matrix",
    "projected_efpa",
    "lagrange_aba",
]
