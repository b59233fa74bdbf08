"""wbc: an operational-space whole-body controller framework.

Exact rigid-body dynamics written once against CasADi, compiled to C for the control loop,
checked against Pinocchio. See the README for the tour and ``docs/`` for the architecture.

The numeric API (numpy in, numpy out, compiled on first use) is re-exported here from
:mod:`wbc.numeric`; :mod:`wbc.eager` has the same functions evaluated without compiling (one-off
queries), :mod:`wbc.symbolic` the same on CasADi symbols.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from . import codegen, control, eager, errors, model, numeric, symbolic
from .algorithms.constraints import LinkConstraint, PointConstraint, WeldConstraint
from .algorithms.delassus import DelassusMethod
from .algorithms.iim import InputMatrixMethod
from .algorithms.kinematics import ReferenceFrame
from .algorithms.workspace import Workspace
from .control import *  # the names of wbc.control.__all__
from .control.limits import *  # (in wbc.control.__all__ too; named for the type checkers)
from .errors import *  # the names of wbc.errors.__all__
from .maximal import MaximalDynamics, MaximalMethod, maximal_forward_dynamics
from .model import *  # the names of wbc.model.__all__
from .model import checks
from .numeric import *  # the names of wbc.numeric.__all__ (uncompiled in wbc.eager, symbolic in wbc.symbolic)
from .realtime import RealtimeStatus, realtime_mode

__version__ = "0.1.0"

# Each package lists its public names once, in its own __all__; wbc re-exports them whole.
__all__ = [
    "checks",
    "codegen",
    "eager",
    "numeric",
    "symbolic",
    "maximal_forward_dynamics",
    "MaximalMethod",
    "MaximalDynamics",
    "ReferenceFrame",
    "Workspace",
    "PointConstraint",
    "WeldConstraint",
    "LinkConstraint",
    "InputMatrixMethod",
    "DelassusMethod",
    "RealtimeStatus",
    "realtime_mode",
]
__all__ += model.__all__
__all__ += numeric.__all__
__all__ += [name for name in control.__all__ if name not in control.limits.__all__]
__all__ += control.limits.__all__
__all__ += errors.__all__

#: Sub-packages imported on first use, so ``import wbc; wbc.robots.load("talos")`` works while
#: ``import wbc`` stays light (``wbc.sim`` does not import MuJoCo by itself either).
_ON_FIRST_USE = frozenset(
    {"algorithms", "estimation", "locomotion", "robots", "sim", "spatial", "sweep", "tasks", "viz"}
)

if not TYPE_CHECKING:  # (type checkers see only the names imported above: a misspelt one stays an error)

    def __getattr__(name: str):
        if name in _ON_FIRST_USE:
            return importlib.import_module(f".{name}", __name__)
        raise AttributeError(f"module 'wbc' has no attribute {name!r}")
