"""wbc: an operational-space whole-body controller framework.

Exact rigid-body dynamics written once against CasADi, compiled to C for the control loop,
checked against Pinocchio. See the README for the tour.
"""

from __future__ import annotations

from .api import (
    aba,
    center_of_mass,
    centroidal_drift,
    centroidal_map,
    com_drift,
    com_jacobian,
    crba,
    frame_drift,
    frame_jacobian,
    frame_placement,
    frame_velocity,
    nonlinear_effects,
    rnea,
)
from . import codegen, kernels
from .configuration import difference, integrate, neutral, normalize, random_configuration
from .errors import (
    CompileError,
    FrameError,
    InfeasibleProblem,
    InputError,
    ModelError,
    WbcError,
    WbcPerformanceWarning,
)
from .kinematics import ReferenceFrame
from .model import Frame, FrameKind, Joint, JointType, Model
from .urdf import load_urdf

__version__ = "0.1.0"

__all__ = [
    "codegen",
    "kernels",
    "Model",
    "Joint",
    "Frame",
    "JointType",
    "FrameKind",
    "ReferenceFrame",
    "load_urdf",
    "rnea",
    "nonlinear_effects",
    "crba",
    "aba",
    "frame_placement",
    "frame_jacobian",
    "frame_velocity",
    "frame_drift",
    "center_of_mass",
    "com_jacobian",
    "com_drift",
    "centroidal_map",
    "centroidal_drift",
    "neutral",
    "random_configuration",
    "integrate",
    "difference",
    "normalize",
    "WbcError",
    "ModelError",
    "FrameError",
    "InputError",
    "CompileError",
    "InfeasibleProblem",
    "WbcPerformanceWarning",
]
