"""Algorithms for clustered models (kinematic loops and actuator transmissions, the cluster paper):
C-RNEA, C-ABA, C-EFPA, the clustered IIM and the approximate, projected and Lagrange baselines."""

from __future__ import annotations

from . import baselines, dynamics, kinematics, numeric, operational
from .baselines import *  # each module's __all__
from .dynamics import *
from .kinematics import *
from .numeric import *
from .operational import *

__all__ = [*dynamics.__all__, *kinematics.__all__, *operational.__all__, *baselines.__all__, *numeric.__all__]
