"""Traced maximal-coordinate forward dynamics, to compile with :mod:`wbc.codegen`.

``maximal_function(model)`` traces :func:`wbc.algorithms.maximal.maximal_dynamics` for a tree
(inputs ``q`` (nq,), ``v``, ``tau`` (nv,)) or a cluster model (``y`` (tree.nq,), ``v``, ``tau``
(nv,), independent); outputs ``qdd`` (nv,) and, with ``reactions``, ``joint_wrenches``
(tree.njoints − 1, 6) and ``closure_wrenches`` (n_closures, 6)::

    k = wbc.codegen.compile_function(wbc.codegen.maximal_functions.maximal_function(model, reactions=True))
    qdd, wrenches, closures = k(q, v, tau)

:func:`compiled_call` is the compiled path of ``wbc.maximal_forward_dynamics``: one kernel per
(model, method, reactions, external forces or not), built on first use (traced, or found on disk
by a fingerprint of the model and the options, :mod:`.index`), its outputs stacked in one vector
(``[q̈, joint wrenches row by row, closure wrenches row by row]``) with a validity output, called
through :func:`~wbc.codegen.calls.fast_call`: the same per-call path and checks as :mod:`wbc.numeric`.
The kernels of a model are held as long as the model is.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import casadi as ca
import numpy as np

from ..algorithms.maximal.dynamics import MaximalMethod, maximal_dynamics
from ..model import checks
from ..model.clusters import LOOP_TOLERANCE, ClusterModel, closed_configuration
from ..model.model import Model
from .calls import fast_call, validity
from .fingerprint import fingerprint
from .index import compile_indexed
from .model_kernels import NonFiniteForces
from .trace import trace

__all__ = ["maximal_function", "closure_count", "compiled_call"]


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


# ------------------------------------------------------------------------------------- compiled call
_registry: dict[int, dict[tuple, Callable[..., np.ndarray]]] = {}
_models: dict[int, weakref.ref] = {}


def _model_fingerprint(model: Model | ClusterModel) -> str | None:
    if isinstance(model, ClusterModel):
        return fingerprint("ClusterModel", model.tree, model.clusters, model.name, model.urdf, model.armature)
    return fingerprint(model)


def compiled_call(
    model: Model | ClusterModel, method: MaximalMethod, reactions: bool, forces: bool
) -> Callable[..., np.ndarray]:
    """``call(q, v, tau[, F])`` -> the stacked result (see the module docstring); ``F`` (6, njoints)
    are the bodies' external wrenches in their joint frames (``wbc.codegen.model_kernels`` makes
    them from ``{frame: wrench}``). Inputs are checked as the eager API checks them.

    Raises:
        ModelError: joints that move no mass, or a cluster model with armature (when tracing).
    """
    key = id(model)
    calls = _registry.get(key)
    if calls is None:

        def forget(_: weakref.ref) -> None:
            _registry.pop(key, None)
            _models.pop(key, None)

        calls = _registry[key] = {}
        _models[key] = weakref.ref(model, forget)
    options = (method, reactions, forces)
    call = calls.get(options)
    if call is None:
        call = calls[options] = _compile(model, method, reactions, forces)
    return call


def _compile(model: Model | ClusterModel, method: MaximalMethod, reactions: bool, forces: bool):
    cm = model if isinstance(model, ClusterModel) else None
    tree: Model = cm.tree if cm is not None else model  # type: ignore[assignment]
    nc = closure_count(model)
    size = model.nv + (6 * (tree.njoints - 1) + 6 * nc if reactions else 0)
    inputs: list = [("q", tree.nq), ("v", model.nv), ("tau", model.nv)]
    if forces:
        inputs.append(("fext", (6, tree.njoints)))

    def residuals(q) -> list:
        if cm is None:
            return []
        return [c.residual(cm.cluster_coordinates(k, q)) for k, c in enumerate(cm.infos) if c.residual is not None]

    def build(q, v, tau, *F):
        fext = {i: F[0][:, i] for i in range(1, tree.njoints)} if F else None
        r = maximal_dynamics(model, q, v, tau, fext, method)
        parts = [r.qdd] + ([ca.vec(r.joint_wrenches.T), ca.vec(r.closure_wrenches.T)] if reactions else [])
        return [ca.vertcat(*parts), validity(tree, (q, v, tau, *F), residuals(q), LOOP_TOLERANCE)]

    def make():
        name = f"wbc_maximal_{method.value}{'_reactions' if reactions else ''}{'_fext' if forces else ''}_{model.name}"
        return trace(name, inputs, build, [("result", size), ("check", 1)]), True, True

    fp = _model_fingerprint(model)
    key = None if fp is None else fingerprint("wbc.maximal", fp, method.value, reactions, forces)
    kernel, _, _ = compile_indexed(
        f"maximal_{method.value}", key, make, lambda record: True if record is True else None
    )

    def validate(q, v, tau, *F):
        q = closed_configuration(cm, q, "q") if cm is not None else checks.configuration(tree, q)
        out = (q, checks.vector(v, model.nv, "v"), checks.vector(tau, model.nv, "tau"))
        if F:
            if not np.all(np.isfinite(F[0])):
                raise NonFiniteForces("fext has non-finite wrenches")
            out += (F[0],)
        return out

    return fast_call(kernel, validate)
