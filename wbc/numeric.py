"""The numeric API: numpy in, numpy out.

Each function checks its arguments (:mod:`wbc.model.checks`: sizes, finiteness, unit quaternions,
frame names), evaluates the algorithm on numbers (CasADi ``DM``) through a
:class:`~wbc.algorithms.workspace.Workspace` and returns numpy arrays. This is the readable,
debuggable path, meant for scripts, tests and one-off queries (milliseconds per call); a control
loop uses compiled kernels instead (:mod:`wbc.codegen`). :mod:`wbc.symbolic` has the same functions
with the same signatures on CasADi symbols.

External forces ``fext`` are given as ``{frame name: wrench (6,)}``, each wrench ``[f; n]``
(N, N m) acting on the frame's body, expressed in the frame (LOCAL) about its origin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import casadi as ca
import numpy as np

from .algorithms.constraints import Constraint
from .algorithms.delassus import DelassusMethod
from .algorithms.iim import InputMatrixMethod
from .algorithms.kinematics import ReferenceFrame
from .algorithms.workspace import Workspace
from .errors import InputError
from .model import checks
from .model.model import Model

__all__ = [
    "rnea",
    "nonlinear_effects",
    "crba",
    "aba",
    "free_acceleration",
    "frame_placement",
    "frame_jacobian",
    "frame_velocity",
    "frame_drift",
    "center_of_mass",
    "com_jacobian",
    "com_drift",
    "centroidal_map",
    "centroidal_drift",
    "centroidal_momentum",
    "inertia_weighted_input_matrix",
    "delassus",
]

ExternalForces = Mapping[str, object] | None


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
    if not fext:
        return None
    if not isinstance(fext, Mapping):
        raise InputError("fext must be a mapping {frame name: wrench (6,)}")
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


def frame_placement(model: Model, q, frame: str) -> np.ndarray:
    """The homogeneous transform (4, 4) of ``frame`` in the world."""
    M = _workspace(model, q).frame_placement(checks.frame_index(model, frame))
    T = np.eye(4)
    T[0:3, 0:3] = _mat(M.R)
    T[0:3, 3] = _vec(M.p)
    return T


def frame_jacobian(model: Model, q, frame: str, reference: ReferenceFrame = ReferenceFrame.LOCAL) -> np.ndarray:
    """The Jacobian (6, nv) of ``frame`` in ``reference`` (rows [linear; angular])."""
    return _mat(_workspace(model, q).frame_jacobian(checks.frame_index(model, frame), reference))


def frame_velocity(model: Model, q, v, frame: str, reference: ReferenceFrame = ReferenceFrame.LOCAL) -> np.ndarray:
    """The spatial velocity (6,) of ``frame`` in ``reference``."""
    return _vec(_workspace(model, q, v, needs_v=True).frame_velocity(checks.frame_index(model, frame), reference))


def frame_drift(model: Model, q, v, frame: str, reference: ReferenceFrame = ReferenceFrame.LOCAL) -> np.ndarray:
    """The classical acceleration drift ``J̇ v`` (6,) of ``frame`` in ``reference``."""
    return _vec(_workspace(model, q, v, needs_v=True).frame_drift(checks.frame_index(model, frame), reference))


def center_of_mass(model: Model, q) -> np.ndarray:
    """Position (3,) of the centre of mass in the world, m."""
    return _vec(_workspace(model, q).center_of_mass())


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


def inertia_weighted_input_matrix(
    model: Model, q, constraints: Sequence[Constraint] = (), method: InputMatrixMethod = InputMatrixMethod.IIM
) -> np.ndarray:
    """``B̂ = M⁻¹ [Sᵀ, Kᵀ]`` (nv, n_actuated + m) at configuration ``q``.

    Args:
        constraints: :class:`~wbc.algorithms.constraints.PointConstraint`, ``WeldConstraint`` or
            ``LinkConstraint`` objects; their rows follow the actuated columns.
        method: an :class:`~wbc.algorithms.iim.InputMatrixMethod` (default the IIM; its value, e.g.
            ``"dense"``, also works).
    """
    method = checks.option(InputMatrixMethod, method, "method")
    return _mat(_workspace(model, q).input_matrix(constraints, method))


def delassus(
    model: Model, q, constraints: Sequence[Constraint], method: DelassusMethod = DelassusMethod.PV_OSIMR
) -> np.ndarray:
    """The Delassus matrix ``K M⁻¹ Kᵀ`` (m, m) of ``constraints`` at ``q``, rows in the order given.

    Args:
        method: a :class:`~wbc.algorithms.delassus.DelassusMethod` (default PV-OSIMr; its value, e.g.
            ``"efpa"``, also works).

    Raises:
        InputError: no constraints, an unknown method or a bad configuration.
        FrameError: a constraint on an unknown frame.
    """
    method = checks.option(DelassusMethod, method, "method")
    return _mat(_workspace(model, q).delassus(constraints, method))
