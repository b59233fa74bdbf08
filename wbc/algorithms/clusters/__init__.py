"""Algorithms for clustered models (kinematic loops and actuator transmissions, the cluster paper):
C-RNEA, C-ABA, C-EFPA, the clustered IIM and the approximate, projected and Lagrange baselines.
Numpy in, numpy out: ``wbc.cluster_rnea``, ... (compiled, :mod:`wbc.numeric`) and
:mod:`wbc.eager` (uncompiled)."""

from __future__ import annotations

from . import baselines, dynamics, kinematics, operational
from .baselines import *  # each module's __all__
from .dynamics import *
from .kinematics import *
from .operational import *

__all__ = [*dynamics.__all__, *kinematics.__all__, *operational.__all__, *baselines.__all__]
