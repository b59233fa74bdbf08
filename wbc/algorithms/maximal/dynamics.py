"""Forward dynamics in maximal coordinates, with the joint reaction wrenches, on CasADi matrices.

:func:`maximal_dynamics` builds the KKT system of :mod:`.system` for a :class:`~wbc.Model` (a tree)
or a :class:`~wbc.ClusterModel` (its spanning tree plus the loop closures and couplings of its
clusters), solves it by the recursion (``MaximalMethod.RECURSIVE``: :mod:`.local`, loops eliminated where
they close; ``MaximalMethod.SCHUR``: :mod:`.recursive`, loops by one Schur complement) or the naive dense
solve (:mod:`.dense`, ``MaximalMethod.DENSE``), and reads off

* ``qdd``: the generalized accelerations in the model's own coordinates (a tree's ``v`` layout; a
  cluster model's independent coordinates), the same as :func:`wbc.aba` / :func:`wbc.cluster_aba`;
* ``joint_wrenches`` (njoints − 1, 6): row ``i − 1`` is the wrench ``fᵢ`` that joint ``i``'s parent
  body exerts on body ``i`` through the joint, expressed in joint ``i``'s frame about its origin,
  ``[force; moment]`` (N, N m): Pinocchio's ``data.f[i]`` after RNEA at the resulting acceleration.
  ``Sᵢᵀ fᵢ`` is the joint's generalized force (``τᵢ``, plus a coupling's share for a geared joint);
  ``(I − Sᵢ Dᵢᵀ) fᵢ = −Tᵢ μᵢ`` is the constraint (reaction) part;
* ``closure_wrenches`` (n_closures, 6): for each :class:`~wbc.LoopClosure` in declaration order, the
  wrench the closure exerts on frame ``b``'s body, in frame ``b`` about its origin; frame ``a``'s body
  receives the opposite wrench at the same point.

Glossary: see :mod:`.system` (``T``, ``D``, ``μ``, ``ν``) and :mod:`.recursive`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import NamedTuple

import casadi as ca
import numpy as np

from ...errors import ModelError
from ...model.clusters import ClusterModel
from ...model.model import Model
from ...spatial.algebra import Matrix
from ..clusters.kinematics import ClusterKinematics
from ..kinematics import TreeKinematics
from .dense import dense_solve
from .local import local_solve
from .recursive import recursive_solve
from .system import MaximalSystem, loop_rows

__all__ = ["MaximalMethod", "MaximalResult", "maximal_dynamics", "maximal_system"]


class MaximalMethod(enum.Enum):
    """How the maximal-coordinate KKT system is solved."""

    #: The lecture notes' recursion, leaves to root (O(n)), each loop eliminated at the common ancestor
    #: of its bodies (:mod:`.local`): linear in bodies and local loops.
    RECURSIVE = "recursive"
    #: The same tree recursion, all loop rows by one Schur complement at the end (:mod:`.recursive`):
    #: ``O(n + k·n + k³)`` for ``k`` loop rows.
    SCHUR = "schur"
    #: The whole KKT matrix in one general linear solve (O(N³)): the baseline.
    DENSE = "dense"


class MaximalResult(NamedTuple):
    """What :func:`maximal_dynamics` returns (CasADi matrices).

    Attributes:
        qdd: generalized accelerations (nv, 1).
        joint_wrenches: (tree.njoints − 1, 6), see the module docstring.
        closure_wrenches: (n_closures, 6).
    """

    qdd: Matrix
    joint_wrenches: Matrix
    closure_wrenches: Matrix


def _tree(model: Model | ClusterModel) -> Model:
    return model.tree if isinstance(model, ClusterModel) else model


def maximal_system(model: Model | ClusterModel, q, v, tau, fext: Mapping[int, Matrix] | None = None) -> MaximalSystem:
    """The KKT system of ``model`` at ``(q, v)`` with generalized forces ``tau`` (nv, 1).

    For a cluster model ``q`` is the spanning configuration ``y`` and ``v``, ``tau`` are independent;
    ``fext`` maps tree joints to wrenches on their bodies (joint frame).

    Raises:
        ModelError: a cluster model with joint armature (no body carries it in maximal coordinates).
    """
    if isinstance(model, ClusterModel):
        if model.armature is not None:
            raise ModelError(
                f"model {model.name!r}: maximal-coordinate dynamics has no body for joint armature "
                "(cm.armature); model the rotors as bodies with couplings (wbc.Transmission) instead"
            )
        ckin = ClusterKinematics(model, q, v)
        kin = ckin.tree
        tree = model.tree
        tau_span = ca.SX(tree.nv, 1) if isinstance(kin.q, ca.SX) else ca.DM(tree.nv, 1)
        tau_span[np.asarray(model.independent_v_indices).tolist(), 0] = tau
        return MaximalSystem(tree, kin, tau_span, fext, loop_rows(model, kin))
    return MaximalSystem(model, TreeKinematics(model, q, v), tau, fext)


def maximal_dynamics(
    model: Model | ClusterModel,
    q,
    v,
    tau,
    fext: Mapping[int, Matrix] | None = None,
    method: MaximalMethod = MaximalMethod.RECURSIVE,
) -> MaximalResult:
    """Forward dynamics in maximal coordinates and the reactions (see the module docstring).

    Args:
        model: a tree or a cluster model.
        q: configuration (nq, 1) (a cluster model's spanning ``y``, tree.nq).
        v, tau: velocity and generalized forces (nv, 1).
        fext: ``{tree joint: wrench (6, 1)}`` on bodies, in their joint frames, or None.
        method: :class:`MaximalMethod`.
    """
    system = maximal_system(model, q, v, tau, fext)
    solve = {MaximalMethod.RECURSIVE: local_solve, MaximalMethod.SCHUR: recursive_solve}.get(method, dense_solve)
    a, mu, nu = solve(system)
    tree = system.model
    n = tree.njoints
    ydd = ca.vertcat(*[system.joint_acceleration(i, a) for i in range(1, n)]) if n > 1 else ca.DM.zeros(0, 1)
    coupling_tau: dict[int, Matrix] = {}
    closures = []
    offset = 0
    for blk in system.loops:
        nu_blk = nu[offset : offset + blk.size]
        offset += blk.size
        if blk.frame_b is not None:
            closures.append(-ca.mtimes(blk.frame_b[1].T, nu_blk).T)
        for j, col in (blk.joint_columns or {}).items():
            t = -ca.mtimes(col.T, nu_blk)
            coupling_tau[j] = coupling_tau[j] + t if j in coupling_tau else t
    wrenches = ca.vertcat(*[system.joint_wrench(i, mu[i], coupling_tau.get(i)).T for i in range(1, n)])
    closure_wrenches = ca.vertcat(*closures) if closures else ca.DM.zeros(0, 6)
    qdd = ydd[np.asarray(model.independent_v_indices).tolist(), 0] if isinstance(model, ClusterModel) else ydd
    return MaximalResult(qdd, wrenches if n > 1 else ca.DM.zeros(0, 6), closure_wrenches)
