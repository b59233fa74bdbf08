"""The rigid-body algorithms, written once against CasADi's matrix API (numbers or symbols):
kinematics, RNEA / CRBA / ABA, the IIM (``B̂ = M⁻¹B``) and the Delassus matrix (PV-OSIMr and
its baselines) for link constraints; for clustered models (loops, transmissions) C-RNEA, C-ABA,
C-EFPA and the clustered IIM in :mod:`.clusters`."""

from __future__ import annotations

from . import clusters
from .clusters import ClusterKinematics
from .constraints import LinkConstraint, PointConstraint, WeldConstraint
from .kinematics import ReferenceFrame, TreeKinematics

__all__ = [
    "ReferenceFrame",
    "TreeKinematics",
    "PointConstraint",
    "WeldConstraint",
    "LinkConstraint",
    "clusters",
    "ClusterKinematics",
]
