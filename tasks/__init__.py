"""Task objects for :class:`wbc.WholeBodyController`, one concept per module.

Each task has a dimension, a weight (scalar or per axis), gains ``kp``/``kd`` (scalar or per axis,
critically damped by default) and a target with velocity and acceleration feed-forward that can be
set every step; the controller turns it into weighted rows of its QP inside the compiled kernel.
"""

from __future__ import annotations

from .com import CoMTask
from .frame import FrameTask, OrientationTask, PositionTask
from .momentum import MomentumTask
from .posture import PostureTask

__all__ = ["CoMTask", "FrameTask", "PositionTask", "OrientationTask", "PostureTask", "MomentumTask"]
