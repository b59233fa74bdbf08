"""wbc: an operational-space whole-body controller framework.

Exact rigid-body dynamics written once against CasADi, compiled to C for the control loop,
checked against Pinocchio. See the README for the tour.
"""

from __future__ import annotations

from . import codegen
from .algorithms.clusters.numeric import cluster_aba, cluster_delassus, cluster_input_matrix, cluster_rnea
from .algorithms.constraints import LinkConstraint, PointConstraint, WeldConstraint
from .algorithms.delassus import delassus
from .algorithms.iim import free_acceleration, inertia_weighted_input_matrix
from .algorithms.kinematics import ReferenceFrame
from .codegen import kernels
from .control.contacts import PointContact, SurfaceContact
from .control.controller import Command, StepStatus, WholeBodyController
from .errors import (
    CompileError,
    FrameError,
    InfeasibleProblem,
    InputError,
    ModelError,
    SimulationDiverged,
    WbcError,
    WbcPerformanceWarning,
)
from .model import checks
from .model.clusters import ClosureKind, Cluster, ClusterModel, JointCoupling, LoopClosure, PolynomialCoupling
from .model.configuration import difference, integrate, neutral, normalize, random_configuration
from .model.mjcf import load_mjcf
from .model.model import Frame, FrameKind, Joint, JointType, Model
from .model.transmissions import Rotor, Transmission, build_cluster_model
from .model.urdf import load_urdf
from .numeric import (
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

__version__ = "0.1.0"

__all__ = [
    "checks",
    "codegen",
    "kernels",
    "Model",
    "Joint",
    "Frame",
    "JointType",
    "FrameKind",
    "ReferenceFrame",
    "load_urdf",
    "load_mjcf",
    "ClusterModel",
    "Cluster",
    "ClosureKind",
    "JointCoupling",
    "PolynomialCoupling",
    "LoopClosure",
    "Rotor",
    "Transmission",
    "build_cluster_model",
    "cluster_rnea",
    "cluster_aba",
    "cluster_delassus",
    "cluster_input_matrix",
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
    "WholeBodyController",
    "Command",
    "StepStatus",
    "PointContact",
    "SurfaceContact",
    "PointConstraint",
    "WeldConstraint",
    "LinkConstraint",
    "inertia_weighted_input_matrix",
    "free_acceleration",
    "delassus",
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
    "SimulationDiverged",
    "WbcPerformanceWarning",
]
