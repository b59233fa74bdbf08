"""Traced maximal-coordinate forward dynamics, to compile with :mod:`wbc.codegen`.

``maximal_function(model)`` traces :func:`wbc.algorithms.maximal.maximal_dynamics` for a tree
(inputs ``q`` (nq,), ``v``, ``tau`` (nv,)) or a cluster model (``y`` (tree.nq,), ``v``, ``tau``
(nv,), independent); outputs ``qdd`` (nv,) and, with ``reactions``, ``joint_wrenches``
(tree.njoints − 1, 6) and ``closure_wrenches`` (n_closures, 6)::

    k = wbc.codegen.compile_function(wbc.codegen.maximal_kernels.maximal_function(model, reactions=True))
    qdd, wrenches, closures = k(q, v, tau)
"""

from __future__ import annotations

import casadi as ca

from ..algorithms.maximal.dynamics import MaximalMethod, maximal_dynamics
from ..model import checks
from ..model.clusters import ClusterModel
from ..model.model import Model
from .trace import trace

__all__ = ["maximal_function", "closure_count"]


def closure_count(model: Model | ClusterModel) -> int:
    """Number of loop closures (rows of ``closure_wrenches``)."""
    if not isinstance(model, ClusterModel):
        return 0
    from ..model.clusters import LoopClosure

    return sum(isinstance(c, LoopClosure) for cl in model.clusters for c in cl.constraints)


def maximal_function(
    model: Model | ClusterModel, method: MaximalMethod = MaximalMethod.RECURSIVE, reactions: bool = False
) -> ca.Function:
    """``(q, v, tau) -> qdd`` (``+ (joint_wrenches, closure_wrenches)`` with ``reactions``).

    Raises:
        InputError: an unknown method.
        ModelError: joints that move no mass, or a cluster model with armature.
    """
    method = checks.option(MaximalMethod, method, "method")
    if isinstance(model, ClusterModel):
        tree, first, nq, tag = model.tree, "y", model.tree.nq, model.name
    else:
        checks.invertible_dynamics(model, "maximal_function")
        tree, first, nq, tag = model, "q", model.nq, model.name
    nc = closure_count(model)

    def build(q, v, tau):
        r = maximal_dynamics(model, q, v, tau, None, method)
        return [r.qdd, r.joint_wrenches, r.closure_wrenches] if reactions else [r.qdd]

    outputs: list = [("qdd", model.nv)]
    if reactions:
        outputs += [("joint_wrenches", (tree.njoints - 1, 6)), ("closure_wrenches", (nc, 6))]
    name = f"maximal_{method.value}{'_reactions' if reactions else ''}_{tag}_{nq}_{model.nv}"
    return trace(name, [(first, nq), ("v", model.nv), ("tau", model.nv)], build, outputs)
