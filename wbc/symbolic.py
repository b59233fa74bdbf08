"""The symbolic API: the functions of :mod:`wbc.numeric`, same names and signatures, on CasADi.

Clustered models: positions ``y`` are spanning-tree configurations (symbols are not checked for
closing the loops).

Arguments are CasADi column vectors (``SX`` symbols to trace a kernel, or ``DM`` numbers; numpy
arrays are taken as constants) and results are CasADi expressions, so the quantities compose into
your own traced functions (:func:`wbc.codegen.trace`, :func:`wbc.codegen.compile_function`)::

    q = ca.SX.sym("q", model.nq)
    J = wbc.symbolic.frame_jacobian(model, q, "panda_hand_tcp", wbc.ReferenceFrame.LOCAL_WORLD_ALIGNED)

Sizes are checked (an :class:`~wbc.errors.InputError` names the argument); values are not (they are
symbols). Several quantities of one state share their work when taken from one
:class:`~wbc.algorithms.workspace.Workspace` (also exported here).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import casadi as ca
import numpy as np

from . import numeric as _numeric
from .algorithms.clusters import dynamics as cluster_dynamics
from .algorithms.clusters import operational as cluster_operational
from .algorithms.clusters.kinematics import ClusterKinematics
from .algorithms.constraints import Constraint, resolve
from .algorithms.delassus import DelassusMethod
from .algorithms.iim import InputMatrixMethod
from .algorithms.kinematics import ReferenceFrame
from .algorithms.workspace import Workspace
from .errors import InputError
from .model import checks
from .model.clusters import ClusterModel
from .model.configuration import integrated
from .model.model import Model

#: The same names as :mod:`wbc.numeric` (a test checks the signatures match), plus the Workspace.
__all__ = ["Workspace", *_numeric.__all__]

ExternalForces = Mapping[str, object] | None

_LOCAL = ReferenceFrame.LOCAL


def _column(x, n: int, name: str):
    """``x`` as a CasADi column (n, 1); numpy and lists become DM constants."""
    if not isinstance(x, (ca.SX, ca.MX, ca.DM)):
        try:
            x = ca.DM(np.asarray(x, dtype=float).reshape(-1, 1))
        except (TypeError, ValueError):
            raise InputError(f"{name} must be a CasADi vector or numbers, got {type(x).__name__}") from None
    if x.shape == (1, n) and n != 1:
        x = x.T
    if x.shape != (n, 1):
        raise InputError(f"{name} must have shape ({n}, 1), got {x.shape}")
    return x


def _workspace(model: Model, q, v=None, needs_v: bool = False) -> Workspace:
    if not isinstance(model, Model):
        raise InputError(f"model must be a wbc.Model, got {type(model).__name__}")
    return Workspace(model, _column(q, model.nq, "q"), _column(v, model.nv, "v") if needs_v else None)


def _forces(fext: ExternalForces) -> dict | None:
    fext = checks.external_forces(fext)
    if fext is None:
        return None
    return {name: _column(w, 6, f"fext[{name!r}]") for name, w in fext.items()}


def rnea(model: Model, q, v, a, fext: ExternalForces = None):
    """Inverse dynamics: ``τ = M(q) a + h(q, v) − Σ Jᵀ fext`` (nv, 1)."""
    return _workspace(model, q, v, True).rnea(_column(a, model.nv, "a"), _forces(fext))


def nonlinear_effects(model: Model, q, v):
    """``h(q, v)`` (nv, 1): Coriolis, centrifugal and gravity terms."""
    return _workspace(model, q, v, True).nonlinear_effects()


def crba(model: Model, q):
    """The joint-space inertia matrix ``M(q)`` (nv, nv)."""
    return _workspace(model, q).crba()


def aba(model: Model, q, v, tau, fext: ExternalForces = None):
    """Forward dynamics: ``q̈`` (nv, 1) with ``M q̈ + h = τ + Σ Jᵀ fext``; ``tau`` is (nv, 1)."""
    return _workspace(model, q, v, True).aba(_column(tau, model.nv, "tau"), _forces(fext))


def free_acceleration(model: Model, q, v):
    """``a₀ = −M⁻¹ h(q, v)`` (nv, 1)."""
    return _workspace(model, q, v, True).free_acceleration()


def frame_placement(model: Model, q, frame: str | int):
    """The homogeneous transform (4, 4) of ``frame`` in the world."""
    M = _workspace(model, q).frame_placement(checks.frame_index(model, frame))
    return ca.vertcat(ca.horzcat(M.R, M.p), ca.DM([[0.0, 0.0, 0.0, 1.0]]))


def frame_jacobian(model: Model, q, frame: str | int, reference: ReferenceFrame = _LOCAL):
    """The Jacobian (6, nv) of ``frame`` in ``reference`` (rows [linear; angular])."""
    return _workspace(model, q).frame_jacobian(checks.frame_index(model, frame), reference)


def frame_velocity(model: Model, q, v, frame: str | int, reference: ReferenceFrame = _LOCAL):
    """The spatial velocity (6, 1) of ``frame`` in ``reference``."""
    return _workspace(model, q, v, True).frame_velocity(checks.frame_index(model, frame), reference)


def frame_drift(model: Model, q, v, frame: str | int, reference: ReferenceFrame = _LOCAL):
    """The classical acceleration drift ``J̇ v`` (6, 1) of ``frame`` in ``reference``."""
    return _workspace(model, q, v, True).frame_drift(checks.frame_index(model, frame), reference)


def center_of_mass(model: Model, q):
    """Position (3, 1) of the centre of mass in the world, m."""
    return _workspace(model, q).center_of_mass()


def com_velocity(model: Model, q, v):
    """Velocity (3, 1) of the centre of mass, world axes, m/s."""
    return _workspace(model, q, v, True).com_velocity()


def com_jacobian(model: Model, q):
    """Jacobian (3, nv) of the centre of mass, world axes."""
    return _workspace(model, q).com_jacobian()


def com_drift(model: Model, q, v):
    """CoM acceleration (3, 1) at zero joint acceleration, world axes, m/s²."""
    return _workspace(model, q, v, True).com_drift()


def centroidal_map(model: Model, q):
    """Centroidal momentum matrix (6, nv): [linear; angular] momentum about the CoM, world axes."""
    return _workspace(model, q).centroidal_map()


def centroidal_drift(model: Model, q, v):
    """``Ȧ_g v`` (6, 1): centroidal momentum rate at zero joint acceleration (no gravity)."""
    return _workspace(model, q, v, True).centroidal_drift()


def centroidal_momentum(model: Model, q, v):
    """Centroidal momentum (6, 1) about the CoM, world axes."""
    return _workspace(model, q, v, True).centroidal_momentum()


def integrate(model: Model, q, v, dt: float = 1.0):
    """``q ⊕ v dt`` (nq, 1) on CasADi symbols (:func:`wbc.model.configuration.integrated`)."""
    if not isinstance(model, Model):
        raise InputError(f"model must be a wbc.Model, got {type(model).__name__}")
    return integrated(model, _column(q, model.nq, "q"), _column(v, model.nv, "v") * dt)


def inertia_weighted_input_matrix(
    model: Model, q, constraints: Sequence[Constraint] = (), method: InputMatrixMethod = InputMatrixMethod.IIM
):
    """``B̂ = M⁻¹ [Sᵀ, Kᵀ]`` (nv, n_actuated + m) by ``method``."""
    method = checks.option(InputMatrixMethod, method, "method")
    return _workspace(model, q).input_matrix(constraints, method)


def delassus(model: Model, q, constraints: Sequence[Constraint], method: DelassusMethod = DelassusMethod.PV_OSIMR):
    """The Delassus matrix ``K M⁻¹ Kᵀ`` (m, m) of ``constraints`` by ``method``."""
    method = checks.option(DelassusMethod, method, "method")
    return _workspace(model, q).delassus(constraints, method)


def _spanning(cm: ClusterModel, y):
    if not isinstance(cm, ClusterModel):
        raise InputError(f"model must be a wbc.ClusterModel, got {type(cm).__name__}")
    return _column(y, cm.tree.nq, "y")


def cluster_rnea(cm: ClusterModel, y, v, a):
    """C-RNEA: independent generalized forces (nv, 1)."""
    return cluster_dynamics.rnea(cm, _spanning(cm, y), _column(v, cm.nv, "v"), _column(a, cm.nv, "a"))


def cluster_aba(cm: ClusterModel, y, v, tau):
    """C-ABA: independent accelerations (nv, 1)."""
    return cluster_dynamics.aba(cm, _spanning(cm, y), _column(v, cm.nv, "v"), _column(tau, cm.nv, "tau"))


def cluster_delassus(cm: ClusterModel, y, constraints: Sequence[Constraint]):
    """C-EFPA: the Delassus matrix (m, m) of link constraints on spanning-tree bodies."""
    resolved = resolve(cm.tree, constraints)
    if not resolved:
        raise InputError("the Delassus matrix needs at least one constraint")
    return cluster_operational.efpa(cm, ClusterKinematics(cm, _spanning(cm, y)), resolved)


def cluster_input_matrix(cm: ClusterModel, y, constraints: Sequence[Constraint] = ()):
    """Clustered IIM: ``B̂ = M⁻¹ [Sᵀ, Jᵀ]`` (nv, n_actuated + m)."""
    return cluster_operational.iim(cm, ClusterKinematics(cm, _spanning(cm, y)), resolve(cm.tree, constraints))


def cluster_jacobian(cm: ClusterModel, y, constraints: Sequence[Constraint]):
    """Stacked constraint Jacobians (m, nv) in independent coordinates."""
    kin = ClusterKinematics(cm, _spanning(cm, y))
    return cluster_operational.constraint_jacobian(cm, kin, resolve(cm.tree, constraints))
