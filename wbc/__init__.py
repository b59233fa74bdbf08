"""wbc: an operational-space whole-body controller framework.

Exact rigid-body dynamics written once against CasADi, compiled to C for the control loop,
checked against Pinocchio. See the README for the tour and ``docs/`` for the architecture.

The numeric API (numpy in, numpy out, compiled on first use) is re-exported here from
:mod:`wbc.numeric`; :mod:`wbc.eager` has the same functions evaluated without compiling (one-off
queries), :mod:`wbc.symbolic` the same on CasADi symbols.
"""

from __future__ import annotations

from . import codegen, eager, numeric, symbolic
from .algorithms.constraints import LinkConstraint, PointConstraint, WeldConstraint
from .algorithms.delassus import DelassusMethod
from .algorithms.iim import InputMatrixMethod
from .algorithms.kinematics import ReferenceFrame
from .algorithms.workspace import Workspace
from .control import (
    Capsule,
    CollisionPair,
    Command,
    Contact,
    Failure,
    Group,
    JointPositionLimit,
    JointVelocityLimit,
    Kind,
    PointContact,
    SelfCollisionLimit,
    Solver,
    Sphere,
    StepStatus,
    SurfaceContact,
    SurfaceCornersContact,
    TorqueLimit,
    WholeBodyController,
)
from .errors import (
    CompileError,
    FrameError,
    InputError,
    MissingDependency,
    ModelError,
    ModelWarning,
    SimulationDiverged,
    WbcError,
    WbcPerformanceWarning,
)
from .maximal import MaximalDynamics, MaximalMethod, maximal_forward_dynamics
from .model import checks
from .model.clusters import ClosureKind, Cluster, ClusterModel, JointCoupling, LoopClosure, PolynomialCoupling
from .model.configuration import difference, integrate, neutral, normalize, random_configuration
from .model.mjcf import load_mjcf
from .model.model import Frame, FrameKind, Joint, JointType, Model
from .model.reduce import lock_joints
from .model.transmissions import Rotor, Transmission, build_cluster_model
from .model.urdf import load_urdf
from .numeric import (
    aba,
    center_of_mass,
    centroidal_drift,
    centroidal_map,
    centroidal_momentum,
    cluster_aba,
    cluster_delassus,
    cluster_input_matrix,
    cluster_jacobian,
    cluster_rnea,
    com_drift,
    com_jacobian,
    com_velocity,
    crba,
    delassus,
    frame_drift,
    frame_jacobian,
    frame_placement,
    frame_velocity,
    free_acceleration,
    inertia_weighted_input_matrix,
    nonlinear_effects,
    rnea,
)

__version__ = "0.1.0"

__all__ = [
    # modules
    "checks",
    "codegen",
    "eager",
    "numeric",
    "symbolic",
    # model
    "Model",
    "Joint",
    "Frame",
    "JointType",
    "FrameKind",
    "load_urdf",
    "lock_joints",
    "neutral",
    "random_configuration",
    "integrate",
    "difference",
    "normalize",
    # clustered models (transmissions, loops)
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
    "cluster_jacobian",
    # maximal-coordinate dynamics (trees and cluster models; reactions)
    "maximal_forward_dynamics",
    "MaximalMethod",
    "MaximalDynamics",
    # numeric API (wbc.numeric, compiled; uncompiled in wbc.eager, on CasADi symbols in wbc.symbolic)
    "ReferenceFrame",
    "Workspace",
    "rnea",
    "nonlinear_effects",
    "crba",
    "aba",
    "free_acceleration",
    "frame_placement",
    "frame_jacobian",
    "frame_velocity",
    "frame_drift",
    "center_of_mass",
    "com_velocity",
    "com_jacobian",
    "com_drift",
    "centroidal_map",
    "centroidal_drift",
    "centroidal_momentum",
    "inertia_weighted_input_matrix",
    "delassus",
    "PointConstraint",
    "WeldConstraint",
    "LinkConstraint",
    "InputMatrixMethod",
    "DelassusMethod",
    # control
    "WholeBodyController",
    "Command",
    "StepStatus",
    "Failure",
    "Contact",
    "PointContact",
    "SurfaceContact",
    "SurfaceCornersContact",
    "TorqueLimit",
    "JointPositionLimit",
    "JointVelocityLimit",
    "SelfCollisionLimit",
    "CollisionPair",
    "Sphere",
    "Capsule",
    "Solver",
    "Kind",
    "Group",
    # errors
    "WbcError",
    "ModelError",
    "ModelWarning",
    "FrameError",
    "InputError",
    "CompileError",
    "MissingDependency",
    "SimulationDiverged",
    "WbcPerformanceWarning",
]
