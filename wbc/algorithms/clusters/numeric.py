"""The eager numpy API of clustered models: numpy in, numpy out, inputs checked.

Positions are spanning-tree configurations ``y`` (``cm.tree.nq``, loops closed: build them with
``cm.spanning_configuration(q)``); velocities, accelerations and generalized forces are
independent (``cm.nv``). For a control loop, compile the kernels of
:mod:`wbc.codegen.cluster_kernels` instead (these evaluate the same expressions on numbers).
"""

from __future__ import annotations

from collections.abc import Sequence

import casadi as ca
import numpy as np

from ...errors import InputError
from ...model import checks
from ...model.clusters import ClusterModel
from ..constraints import Constraint, resolve
from . import dynamics, operational
from .kinematics import ClusterKinematics

__all__ = ["cluster_rnea", "cluster_aba", "cluster_delassus", "cluster_input_matrix", "cluster_jacobian"]

#: How far a configuration may be from closing its loops before it is refused.
LOOP_TOLERANCE = 1e-8


def _y(cm: ClusterModel, y) -> np.ndarray:
    y = checks.configuration(cm.tree, y, "y")
    r = cm.loop_residual(y)
    if r.size and np.max(np.abs(r)) > LOOP_TOLERANCE:
        raise InputError(
            f"y does not close the loops of {cm.name!r} (residual {np.max(np.abs(r)):.3g}); "
            "use cm.spanning_configuration(q)"
        )
    return y


def _out(x) -> np.ndarray:
    a = np.array(ca.DM(x), dtype=float)
    return a.reshape(-1) if a.shape[1] == 1 else a


def cluster_rnea(cm: ClusterModel, y, v, a) -> np.ndarray:
    """C-RNEA: independent generalized forces (nv,) for accelerations ``a`` (nv,)."""
    y = _y(cm, y)
    v, a = checks.vector(v, cm.nv, "v"), checks.vector(a, cm.nv, "a")
    return _out(dynamics.rnea(cm, ca.DM(y), ca.DM(v), ca.DM(a)))


def cluster_aba(cm: ClusterModel, y, v, tau) -> np.ndarray:
    """C-ABA: independent accelerations (nv,) for independent generalized forces ``tau`` (nv,)."""
    y = _y(cm, y)
    v, tau = checks.vector(v, cm.nv, "v"), checks.vector(tau, cm.nv, "tau")
    return _out(dynamics.aba(cm, ca.DM(y), ca.DM(v), ca.DM(tau)))


def cluster_delassus(cm: ClusterModel, y, constraints: Sequence[Constraint]) -> np.ndarray:
    """C-EFPA: the Delassus matrix ``J M⁻¹ Jᵀ`` (m, m) of link constraints on spanning-tree bodies."""
    y = _y(cm, y)
    resolved = resolve(cm.tree, constraints)
    if not resolved:
        raise InputError("the Delassus matrix needs at least one constraint")
    return _out(operational.efpa(cm, ClusterKinematics(cm, ca.DM(y)), resolved))


def cluster_input_matrix(cm: ClusterModel, y, constraints: Sequence[Constraint] = ()) -> np.ndarray:
    """Clustered IIM: ``B̂ = M⁻¹ [Sᵀ, Jᵀ]`` (nv, n_actuated + m)."""
    y = _y(cm, y)
    return _out(operational.iim(cm, ClusterKinematics(cm, ca.DM(y)), resolve(cm.tree, constraints)))


def cluster_jacobian(cm: ClusterModel, y, constraints: Sequence[Constraint]) -> np.ndarray:
    """Stacked constraint Jacobians (m, nv) in independent coordinates."""
    y = _y(cm, y)
    return _out(operational.constraint_jacobian(cm, ClusterKinematics(cm, ca.DM(y)), resolve(cm.tree, constraints)))
