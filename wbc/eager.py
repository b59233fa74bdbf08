"""The eager numeric API: numpy in, numpy out, evaluated on numbers without compiling anything.

The same functions, names and signatures as the compiled :mod:`wbc.numeric` (re-exported as
``wbc.aba``, ``wbc.crba``, ...): each function checks its arguments (:mod:`wbc.model.checks`:
sizes, finiteness, unit quaternions, frame names, closed loops), evaluates the algorithm on
numbers (CasADi ``DM``) through a :class:`~wbc.algorithms.workspace.Workspace` and returns numpy
arrays. Milliseconds per call on a humanoid (Talos: ``aba`` about 40 ms), nothing compiled,
nothing cached: for reading, debugging, one-off queries on many models, and as the reference the
compiled path is tested against. :mod:`wbc.symbolic` has the same functions on CasADi symbols.

Frames are names or indices into ``model.frames``. External forces ``fext`` are given as
``{frame name: wrench (6,)}``, each wrench ``[f; n]`` (N, N m) acting on the frame's body,
expressed in the frame (LOCAL) about its origin.

Clustered models (:class:`~wbc.ClusterModel`): positions are spanning-tree configurations ``y``
(``cm.tree.nq``, loops closed: build them with ``cm.spanning_configuration(q)``); velocities,
accelerations and generalized forces are independent (``cm.nv``).
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
from .model import checks, configuration
from .model.clusters import ClusterModel, closed_configuration
from .model.model import Model

#: The same names as :mod:`wbc.numeric` (its functions, evaluated without compiling).
__all__ = [*_numeric.__all__]

ExternalForces = Mapping[str, object] | None

_LOCAL = ReferenceFrame.LOCAL


def _dm(x: np.ndarray) -> ca.DM:
    return ca.DM(np.asarray(x, dtype=float).reshape(-1, 1))


def _vec(x) -> np.ndarray:
    return np.array(ca.DM(x), dtype=float).reshape(-1)


def _mat(x) -> np.ndarray:
    return np.array(ca.DM(x), dtype=float)


def _workspace(model: Model, q, v=None, needs_v: bool = False) -> Workspace:
    if not isinstance(model, Model):
        raise InputError(f"model must be a wbc.Model, got {type(model).__name__}")
    q = checks.configuration(model, q)
    if needs_v:
        v = _dm(checks.velocity(model, v))
    return Workspace(model, _dm(q), v)


def _forces(model: Model, fext: ExternalForces) -> dict | None:
    fext = checks.external_forces(fext)
    if fext is None:
        return None
    return {name: _dm(checks.vector(w, 6, f"fext[{name!r}]")) for name, w in fext.items()}


def rnea(model: Model, q, v, a, fext: ExternalForces = None) -> np.ndarray:
    """Inverse dynamics: ``τ = M(q) a + h(q, v) − Σ Jᵀ fext`` (nv,)."""
    ws = _workspace(model, q, v, needs_v=True)
    return _vec(ws.rnea(_dm(checks.vector(a, model.nv, "a")), _forces(model, fext)))


def nonlinear_effects(model: Model, q, v) -> np.ndarray:
    """``h(q, v)`` (nv,): Coriolis, centrifugal and gravity terms."""
    return _vec(_workspace(model, q, v, needs_v=True).nonlinear_effects())


def crba(model: Model, q) -> np.ndarray:
    """The joint-space inertia matrix ``M(q)`` (nv, nv)."""
    return _mat(_workspace(model, q).crba())


def aba(model: Model, q, v, tau, fext: ExternalForces = None) -> np.ndarray:
    """Forward dynamics: ``q̈`` (nv,) with ``M q̈ + h = τ + Σ Jᵀ fext``; ``tau`` is (nv,)."""
    ws = _workspace(model, q, v, needs_v=True)
    return _vec(ws.aba(_dm(checks.vector(tau, model.nv, "tau")), _forces(model, fext)))


def free_acceleration(model: Model, q, v) -> np.ndarray:
    """``a₀ = −M⁻¹ h(q, v)`` (nv,): the acceleration with zero inputs (the drift of ``q̈ = a₀ + B̂ u``)."""
    return _vec(_workspace(model, q, v, needs_v=True).free_acceleration())


def frame_placement(model: Model, q, frame: str | int) -> np.ndarray:
    """The homogeneous transform (4, 4) of ``frame`` in the world."""
    M = _workspace(model, q).frame_placement(checks.frame_index(model, frame))
    T = np.eye(4)
    T[0:3, 0:3] = _mat(M.R)
    T[0:3, 3] = _vec(M.p)
    return T


def frame_jacobian(model: Model, q, frame: str | int, reference: ReferenceFrame = _LOCAL) -> np.ndarray:
    """The Jacobian (6, nv) of ``frame`` in ``reference`` (rows [linear; angular])."""
    return _mat(_workspace(model, q).frame_jacobian(checks.frame_index(model, frame), reference))


def frame_velocity(model: Model, q, v, frame: str | int, reference: ReferenceFrame = _LOCAL) -> np.ndarray:
    """The spatial velocity (6,) of ``frame`` in ``reference``."""
    return _vec(_workspace(model, q, v, needs_v=True).frame_velocity(checks.frame_index(model, frame), reference))


def frame_drift(model: Model, q, v, frame: str | int, reference: ReferenceFrame = _LOCAL) -> np.ndarray:
    """The classical acceleration drift ``J̇ v`` (6,) of ``frame`` in ``reference``."""
    return _vec(_workspace(model, q, v, needs_v=True).frame_drift(checks.frame_index(model, frame), reference))


def center_of_mass(model: Model, q) -> np.ndarray:
    """Position (3,) of the centre of mass in the world, m."""
    return _vec(_workspace(model, q).center_of_mass())


def com_velocity(model: Model, q, v) -> np.ndarray:
    """Velocity (3,) of the centre of mass, world axes, m/s."""
    return _vec(_workspace(model, q, v, needs_v=True).com_velocity())


def com_jacobian(model: Model, q) -> np.ndarray:
    """Jacobian (3, nv) of the centre of mass, world axes."""
    return _mat(_workspace(model, q).com_jacobian())


def com_drift(model: Model, q, v) -> np.ndarray:
    """CoM acceleration (3,) at zero joint acceleration, world axes, m/s²."""
    return _vec(_workspace(model, q, v, needs_v=True).com_drift())


def centroidal_map(model: Model, q) -> np.ndarray:
    """Centroidal momentum matrix (6, nv): [linear; angular] momentum about the CoM, world axes."""
    return _mat(_workspace(model, q).centroidal_map())


def centroidal_drift(model: Model, q, v) -> np.ndarray:
    """``Ȧ_g v`` (6,): centroidal momentum rate at zero joint acceleration (no gravity)."""
    return _vec(_workspace(model, q, v, needs_v=True).centroidal_drift())


def centroidal_momentum(model: Model, q, v) -> np.ndarray:
    """Centroidal momentum (6,) about the CoM, world axes: [kg m/s; kg m²/s]."""
    return _vec(_workspace(model, q, v, needs_v=True).centroidal_momentum())


def integrate(model: Model, q, v, dt: float = 1.0) -> np.ndarray:
    """``q ⊕ v dt`` (nq,) (:func:`wbc.model.configuration.integrate`: numpy)."""
    return configuration.integrate(model, q, v, dt)


def inertia_weighted_input_matrix(
    model: Model, q, constraints: Sequence[Constraint] = (), method: InputMatrixMethod = InputMatrixMethod.IIM
) -> np.ndarray:
    """``B̂ = M⁻¹ [Sᵀ, Kᵀ]`` (nv, n_actuated + m) at configuration ``q``: arguments and errors as
    :func:`wbc.inertia_weighted_input_matrix`."""
    method = checks.option(InputMatrixMethod, method, "method")
    return _mat(_workspace(model, q).input_matrix(constraints, method))


def delassus(
    model: Model, q, constraints: Sequence[Constraint], method: DelassusMethod = DelassusMethod.PV_OSIMR
) -> np.ndarray:
    """The Delassus matrix ``K M⁻¹ Kᵀ`` (m, m) of ``constraints`` at ``q``, rows in the order given:
    arguments and errors as :func:`wbc.delassus`."""
    method = checks.option(DelassusMethod, method, "method")
    return _mat(_workspace(model, q).delassus(constraints, method))


# ----------------------------------------------------------------------------- clustered models
def _y(cm: ClusterModel, y) -> np.ndarray:
    return closed_configuration(cm, y)


def _out(x) -> np.ndarray:
    a = np.array(ca.DM(x), dtype=float)
    return a.reshape(-1) if a.shape[1] == 1 else a


def cluster_rnea(cm: ClusterModel, y, v, a) -> np.ndarray:
    """C-RNEA: independent generalized forces (nv,) for accelerations ``a`` (nv,)."""
    y = _y(cm, y)
    v, a = checks.vector(v, cm.nv, "v"), checks.vector(a, cm.nv, "a")
    return _out(cluster_dynamics.rnea(cm, ca.DM(y), ca.DM(v), ca.DM(a)))


def cluster_aba(cm: ClusterModel, y, v, tau) -> np.ndarray:
    """C-ABA: independent accelerations (nv,) for independent generalized forces ``tau`` (nv,)."""
    y = _y(cm, y)
    v, tau = checks.vector(v, cm.nv, "v"), checks.vector(tau, cm.nv, "tau")
    return _out(cluster_dynamics.aba(cm, ca.DM(y), ca.DM(v), ca.DM(tau)))


def cluster_delassus(cm: ClusterModel, y, constraints: Sequence[Constraint]) -> np.ndarray:
    """C-EFPA: the Delassus matrix ``J M⁻¹ Jᵀ`` (m, m) of link constraints on spanning-tree bodies."""
    y = _y(cm, y)
    resolved = resolve(cm.tree, constraints)
    if not resolved:
        raise InputError("the Delassus matrix needs at least one constraint")
    return _out(cluster_operational.efpa(cm, ClusterKinematics(cm, ca.DM(y)), resolved))


def cluster_input_matrix(cm: ClusterModel, y, constraints: Sequence[Constraint] = ()) -> np.ndarray:
    """Clustered IIM: ``B̂ = M⁻¹ [Sᵀ, Jᵀ]`` (nv, n_actuated + m)."""
    y = _y(cm, y)
    return _out(cluster_operational.iim(cm, ClusterKinematics(cm, ca.DM(y)), resolve(cm.tree, constraints)))


def cluster_jacobian(cm: ClusterModel, y, constraints: Sequence[Constraint]) -> np.ndarray:
    """Stacked constraint Jacobians (m, nv) in independent coordinates."""
    y = _y(cm, y)
    kin = ClusterKinematics(cm, ca.DM(y))
    return _out(cluster_operational.constraint_jacobian(cm, kin, resolve(cm.tree, constraints)))
