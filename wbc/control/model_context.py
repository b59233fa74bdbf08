"""Which step context a model gets: :class:`~wbc.control.step_context.StepContext` for a kinematic tree,
:class:`~wbc.control.cluster_step_context.ClusterStepContext` for a :class:`~wbc.ClusterModel`."""

from __future__ import annotations

from ..model.clusters import ClusterModel
from .cluster_step_context import ClusterStepContext
from .step_context import StepContext

__all__ = ["context_type"]


def context_type(model) -> type[StepContext]:
    """The :class:`StepContext` class for ``model``: the clustered one for a ``ClusterModel``."""
    return ClusterStepContext if isinstance(model, ClusterModel) else StepContext
