"""Gait generation for bipeds (pure numpy): footstep plans, DCM-based centroidal references, swing
feet, a gait timeline the controller queries at any time, a DCM stabilizer and a capture-step planner.

- :mod:`~wbc.locomotion.footsteps`: :class:`Foot`, :class:`Footstep`, :class:`StepLimits`, plans
  from a :class:`VelocityCommand` or a list of footsteps.
- :mod:`~wbc.locomotion.dcm`: the LIPM / DCM closed forms for piecewise-linear ZMPs
  (Englsberger et al. 2015).
- :mod:`~wbc.locomotion.swing`: swing-foot polynomials.
- :mod:`~wbc.locomotion.timeline`: :class:`GaitTimeline`, :func:`plan_walk`, :func:`plan_stand`,
  :func:`plan_from_state`.
- :mod:`~wbc.locomotion.stabilizer`: :class:`DCMStabilizer`.
- :mod:`~wbc.locomotion.recovery`: :class:`CaptureStepPlanner` (recovery steps, online step adjustment).
- :mod:`~wbc.locomotion.sequencer`: :class:`GaitSequencer` (one control step's re-plans, contact
  switches and stabilizer on a controller, without a simulator).
- :mod:`~wbc.locomotion.terrain`: :class:`Terrain` (patches, height fields), footholds on it, swings
  clearing it, :func:`plan_on_terrain`, the scenes of :func:`make_terrain`.
- :mod:`~wbc.locomotion.polygon`: support-polygon geometry.
"""

from __future__ import annotations

from . import polygon
from .dcm import GRAVITY, DCMTrajectory, PiecewiseLinearZMP, dcm_of, omega_of_height
from .footsteps import (
    MAX_STEPS,
    Foot,
    FootShape,
    Footstep,
    FootstepPlan,
    StepLimits,
    VelocityCommand,
    integrate_twist,
    plan_from_footsteps,
    plan_from_velocity,
    step_violations,
    support_polygon,
)
from .recovery import CaptureStepPlanner, RecoveryPlan
from .sequencer import FootPhase, GaitSequencer, Sensing, SequencerStep, Touchdown
from .stabilizer import DCMStabilizer, StabilizerOutput, dcm_feedback_zmp
from .swing import SwingState, SwingTrajectory
from .terrain import (
    HeightField,
    Patch,
    Terrain,
    TerrainKind,
    TerrainSize,
    make_terrain,
    plan_on_terrain,
)
from .timeline import (
    CoMHeight,
    ContactState,
    FootReference,
    GaitParameters,
    GaitSample,
    GaitTimeline,
    Phase,
    PhaseKind,
    TimedStep,
    plan_from_state,
    plan_stand,
    plan_walk,
)

__all__ = [
    "polygon",
    "GRAVITY",
    "DCMTrajectory",
    "PiecewiseLinearZMP",
    "dcm_of",
    "omega_of_height",
    "Foot",
    "FootShape",
    "Footstep",
    "FootstepPlan",
    "StepLimits",
    "VelocityCommand",
    "integrate_twist",
    "plan_from_footsteps",
    "MAX_STEPS",
    "plan_from_velocity",
    "step_violations",
    "support_polygon",
    "CaptureStepPlanner",
    "RecoveryPlan",
    "FootPhase",
    "GaitSequencer",
    "Sensing",
    "SequencerStep",
    "Touchdown",
    "DCMStabilizer",
    "StabilizerOutput",
    "dcm_feedback_zmp",
    "SwingState",
    "SwingTrajectory",
    "CoMHeight",
    "ContactState",
    "FootReference",
    "GaitParameters",
    "GaitSample",
    "GaitTimeline",
    "Phase",
    "PhaseKind",
    "TimedStep",
    "plan_from_state",
    "plan_stand",
    "plan_walk",
    "HeightField",
    "Patch",
    "Terrain",
    "TerrainKind",
    "TerrainSize",
    "make_terrain",
    "plan_on_terrain",
]
