"""Maximal-coordinate dynamics evaluated without compiling: numpy in, numpy out, inputs checked,
evaluated on CasADi numbers (a fraction of a second on a humanoid). The reference the compiled
``wbc.maximal_forward_dynamics`` (:mod:`wbc.maximal`) is tested against, and its path for the
dense baseline, which is never compiled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import casadi as ca
import numpy as np

from ...errors import InputError
from ...model import checks
from ...model.clusters import ClusterModel, closed_configuration
from ...model.model import Model
from ...spatial.algebra import Matrix
from ..workspace import body_forces
from .dynamics import MaximalMethod, maximal_dynamics

__all__ = ["MaximalDynamics", "maximal_forward_dynamics", "split_result", "SINGULAR"]

#: The message of a singular KKT system (what a non-finite result means).
SINGULAR = (
    "the maximal-coordinate KKT system is singular at this state (a loop's constraints are redundant or the "
    "mechanism is at a singular configuration)"
)


class MaximalDynamics(NamedTuple):
    """Accelerations and reactions (numpy).

    Attributes:
        qdd: generalized accelerations (nv,), the model's own coordinates (a cluster model's
            independent ones).
        joint_wrenches: (njoints − 1, 6), row ``i − 1`` for (spanning-tree) joint ``i``: the wrench
            the parent body exerts on body ``i`` through the joint, in joint ``i``'s frame about its
            origin, ``[force; moment]`` (N, N m). ``Sᵢᵀ fᵢ`` is the joint's generalized force; the
            rest is the constraint reaction.
        closure_wrenches: (n_closures, 6): per loop closure (declaration order), the wrench on frame
            ``b``'s body, in frame ``b`` about its origin; frame ``a``'s body gets the opposite one.
    """

    qdd: np.ndarray
    joint_wrenches: np.ndarray
    closure_wrenches: np.ndarray


def _mat(x) -> np.ndarray:
    return np.array(ca.DM(x), dtype=float)


def configuration(model: Model | ClusterModel, q) -> np.ndarray:
    """``q`` checked: a valid configuration of a tree that moves mass at every joint, or a spanning
    configuration closing a cluster model's loops."""
    if isinstance(model, ClusterModel):
        return closed_configuration(model, q, "q")
    checks.invertible_dynamics(model, "maximal_forward_dynamics")
    return checks.configuration(model, q)


def _external(tree: Model, fext: Mapping[str, Matrix] | None) -> dict[int, Matrix] | None:
    def wrench(name: str, w) -> ca.DM:
        return ca.DM(checks.vector(w, 6, f"fext[{name!r}]").reshape(6, 1))

    return body_forces(tree, fext, tree.frame_id, wrench)


def maximal_forward_dynamics(
    model: Model | ClusterModel,
    q,
    v,
    tau,
    fext: Mapping[str, Matrix] | None = None,
    reactions: bool = False,
    method: MaximalMethod = MaximalMethod.RECURSIVE,
) -> np.ndarray | MaximalDynamics:
    """:func:`wbc.maximal_forward_dynamics` (same arguments, results and errors) evaluated on CasADi
    numbers, without compiling: the reference the compiled path is tested against, and its path
    for ``MaximalMethod.DENSE``."""
    if not isinstance(model, (Model, ClusterModel)):
        raise InputError(f"model must be a wbc.Model or a wbc.ClusterModel, got {type(model).__name__}")
    method = checks.option(MaximalMethod, method, "method")
    q = configuration(model, q)
    v = checks.vector(v, model.nv, "v")
    tau = checks.vector(tau, model.nv, "tau")
    tree = model.tree if isinstance(model, ClusterModel) else model
    forces = _external(tree, fext)
    result = maximal_dynamics(model, ca.DM(q), ca.DM(v), ca.DM(tau), forces, method)
    parts = [_mat(result.qdd).reshape(-1)]
    if reactions:
        parts += [_mat(result.joint_wrenches).reshape(-1), _mat(result.closure_wrenches).reshape(-1)]
    return split_result(model, np.concatenate(parts), reactions)


def split_result(model: Model | ClusterModel, flat: np.ndarray, reactions: bool) -> np.ndarray | MaximalDynamics:
    """``q̈`` (nv,), or the :class:`MaximalDynamics` read from ``[q̈, joint wrenches row by row,
    closure wrenches row by row]``; an :class:`~wbc.errors.InputError` when it is not finite."""
    if not np.all(np.isfinite(flat)):
        raise InputError(f"model {model.name!r}: {SINGULAR}")
    nv = model.nv
    if not reactions:
        return flat[:nv]
    tree = model.tree if isinstance(model, ClusterModel) else model
    nw = 6 * (tree.njoints - 1)
    return MaximalDynamics(flat[:nv], flat[nv : nv + nw].reshape(-1, 6), flat[nv + nw :].reshape(-1, 6))
