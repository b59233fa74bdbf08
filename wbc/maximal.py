"""``wbc.maximal_forward_dynamics``: maximal-coordinate forward dynamics and the joint reactions,
compiled on first use (numpy in, numpy out).

Each (model, method, reactions, external forces or not) gets one kernel
(:func:`wbc.codegen.maximal_functions.compiled_call`), traced once (or loaded from the disk cache by
fingerprint) and then called in microseconds, like the functions of :mod:`wbc.numeric`. The dense
baseline (``MaximalMethod.DENSE``) is evaluated without compiling (LAPACK on the assembled KKT
matrix: traced, it grows like the cube of its size). :func:`wbc.algorithms.maximal.eager.maximal_forward_dynamics`
evaluates any method without compiling (one-off queries), with the same checks.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .algorithms.maximal import eager
from .algorithms.maximal.dynamics import MaximalMethod
from .algorithms.maximal.eager import MaximalDynamics, split_result
from .codegen.maximal_functions import compiled_call
from .codegen.model_kernels import NonFiniteForces, kernels_of
from .errors import InputError
from .model import checks
from .model.clusters import ClusterModel
from .model.model import Model

__all__ = ["maximal_forward_dynamics", "MaximalDynamics", "MaximalMethod"]


def maximal_forward_dynamics(
    model: Model | ClusterModel,
    q,
    v,
    tau,
    fext: Mapping[str, object] | None = None,
    reactions: bool = False,
    method: MaximalMethod = MaximalMethod.RECURSIVE,
) -> np.ndarray | MaximalDynamics:
    """Forward dynamics in maximal coordinates: every body free, every joint a constraint.

    The same ``q̈`` as :func:`wbc.aba` (a tree) or :func:`wbc.cluster_aba` (a cluster model, whose
    loop closures and couplings become constraints too), and, with ``reactions``, the wrench every
    joint transmits (its structural load) and every loop closure's wrench.

    Args:
        model: a :class:`~wbc.Model` or a :class:`~wbc.ClusterModel`.
        q: configuration (nq,); for a cluster model the spanning configuration ``y`` (tree.nq) with
            its loops closed (``cm.spanning_configuration``).
        v: velocity (nv,) (a cluster model's independent velocity).
        tau: generalized forces (nv,) (zeros on a free-flyer), N m or N.
        fext: ``{frame name: wrench (6,)}``, each ``[f; n]`` acting on the frame's body, expressed in
            the frame about its origin (as :func:`wbc.aba`).
        reactions: also return the joint and closure wrenches.
        method: :class:`~wbc.MaximalMethod` (``RECURSIVE``, the O(n) recursion, loops eliminated where
            they close; ``SCHUR``, one Schur complement for all loops; ``DENSE``, the naive dense KKT
            solve, not compiled) or its value.

    Returns:
        ``q̈`` (nv,), or a :class:`~wbc.MaximalDynamics` ``(qdd, joint_wrenches, closure_wrenches)``
        when ``reactions``: ``joint_wrenches[i - 1]`` (6,) is the wrench joint ``i``'s parent body
        exerts on body ``i`` through the joint, in joint ``i``'s frame about its origin,
        ``[force; moment]`` (N, N m), Pinocchio's ``data.f[i]``; ``closure_wrenches[k]`` the wrench
        the ``k``-th loop closure exerts on its frame ``b``'s body, in frame ``b`` about its origin.

    Raises:
        InputError: a wrong size, a non-finite entry, a non-unit quaternion, an open loop, an
            unknown method, ``fext`` not a mapping, or a singular KKT system.
        FrameError: an unknown frame in ``fext`` (also a ``KeyError``).
        ModelError: joints that move no mass (``M`` singular), or a cluster model with armature.
    """
    if not isinstance(model, (Model, ClusterModel)):
        raise InputError(f"model must be a wbc.Model or a wbc.ClusterModel, got {type(model).__name__}")
    method = checks.option(MaximalMethod, method, "method")
    if method is MaximalMethod.DENSE:
        return eager.maximal_forward_dynamics(model, q, v, tau, fext, reactions, method)
    if isinstance(model, Model):
        checks.invertible_dynamics(model, "maximal_forward_dynamics")
    tree = model.tree if isinstance(model, ClusterModel) else model
    fext = checks.external_forces(fext)
    if fext is None:
        flat = compiled_call(model, method, reactions, False)(q, v, tau)
    else:
        forces = kernels_of(tree)
        F = forces.body_forces(fext)
        try:
            flat = compiled_call(model, method, reactions, True)(q, v, tau, F)
        except NonFiniteForces:
            forces.check_forces(fext)
            raise
    return split_result(model, flat, reactions)
