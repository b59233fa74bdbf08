"""The robot model: the immutable kinematic tree, its joints, the URDF loader, reduced models
(lock_joints) and configuration operations (neutral, random, difference, normalize; integrate is
compiled in :mod:`wbc.numeric`, in numpy in :mod:`wbc.model.configuration`)."""

from __future__ import annotations

from .clusters import ClosureKind, Cluster, ClusterModel, JointCoupling, LoopClosure, PolynomialCoupling
from .configuration import difference, neutral, normalize, random_configuration
from .mjcf import load_mjcf
from .model import Frame, FrameKind, Joint, JointType, Mimic, Model
from .reduce import lock_joints
from .transmissions import Rotor, Transmission, build_cluster_model
from .urdf import load_urdf

__all__ = [
    "Model",
    "Joint",
    "Frame",
    "JointType",
    "FrameKind",
    "Mimic",
    "load_urdf",
    "lock_joints",
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
    "neutral",
    "random_configuration",
    "difference",
    "normalize",
]
