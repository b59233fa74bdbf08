"""wbc: an operational-space whole-body controller framework.

Exact rigid-body dynamics written once against CasADi, compiled to C for the control loop,
checked against Pinocchio. See the README for the tour and ``docs/`` for the architecture.

The numeric API (numpy in, numpy out) is re-exported here from :mod:`wbc.numeric`; the same
functions on CasADi symbols are in :mod:`wbc.symbolic`.
"""

from __future__ import annotations

from . import codegen, control, errors, model, numeric, symbolic
from .algorithms.clusters.numeric import cluster_aba, cluster_delassus, cluster_input_matrix, cluster_rnea
from .algorithms.constraints import LinkConstraint, PointConstraint, WeldConstraint
from .algorithms.delassus import DelassusMethod
from .algorithms.iim import InputMatrixMethod
from .algorithms.kinematics import ReferenceFrame
from .algorithms.workspace import Workspace
from .codegen import kernels
from .control import *  # the names of wbc.control.__all__
from .control.limits import *  # (in wbc.control.__all__ too; named for the type checkers)
from .errors import *  # the names of wbc.errors.__all__
from .model import *  # the names of wbc.model.__all__
from .model import checks
from .numeric import *  # the names of wbc.numeric.__all__ (the same on CasADi symbols in wbc.symbolic)

__version__ = "0.1.0"

# Each package lists its public names once, in its own __all__; wbc re-exports them whole.
__all__ = [
    "checks",
    "codegen",
    "kernels",
    "numeric",
    "symbolic",
    "cluster_rnea",
    "cluster_aba",
    "cluster_delassus",
    "cluster_input_matrix",
    "ReferenceFrame",
    "Workspace",
    "PointConstraint",
    "WeldConstraint",
    "LinkConstraint",
    "InputMatrixMethod",
    "DelassusMethod",
]
__all__ += model.__all__
__all__ += numeric.__all__
__all__ += [name for name in control.__all__ if name not in control.limits.__all__]
__all__ += control.limits.__all__
__all__ += errors.__all__
