"""The public eager API: numpy in, numpy out.

Each function checks its arguments (:mod:`wbc.checks`), evaluates the algorithm on numbers
(CasADi ``DM``) and returns numpy arrays. This is the readable, debuggable path, meant for
scripts, tests and one-off queries (milliseconds per call); a control loop uses compiled kernels
instead (:mod:`wbc.codegen`).

External forces ``fext`` are given as ``{frame name: wrench (6,)}``, each wrench ``[f; n]``
(N, N m) acting on the frame's body, expressed in the frame (LOCAL) about its origin.
"""

from __future__ import annotations

from collections.abc import Mapping

import casadi as ca
import numpy as np

from .algorithms import dynamics as dyn
from .algorithms.kinematics import ReferenceFrame, TreeKinematics
from .errors import InputError
from .model import checks
from .model.model import Model
from .spatial.algebra import act_force

__all__ = [
    "rnea",
    "nonlinear_effects",
    "crba",
    "aba",
    "frame_placement",
    "frame_jacobian",
    "frame_velocity",
    "frame_drift",
    "center_of_mass",
    "com_jacobian",
    "com_drift",
    "centroidal_map",
    "centroidal_drift",
]

ExternalForces = Mapping[str, object] | None


def _dm(x: np.ndarray) -> ca.DM:
    return ca.DM(np.asarray(x, dtype=float).reshape(-1, 1))


def _vec(x) -> np.ndarray:
    return np.array(ca.DM(x), dtype=float).reshape(-1)


def _mat(x) -> np.ndarray:
    return np.array(ca.DM(x), dtype=float)


def _reference(reference: ReferenceFrame) -> ReferenceFrame:
    if not isinstance(reference, ReferenceFrame):
        raise InputError(
            f"reference must be a wbc.ReferenceFrame (LOCAL, WORLD or LOCAL_WORLD_ALIGNED), got {reference!r}"
        )
    return reference


def _external_forces(model: Model, fext: ExternalForces) -> dict[int, ca.DM] | None:
    if not fext:
        return None
    if not isinstance(fext, Mapping):
        raise InputError("fext must be a mapping {frame name: wrench (6,)}")
    out: dict[int, ca.DM] = {}
    for name, wrench in fext.items():
        f = model.frames[checks.frame_index(model, name)]
        w = checks.vector(wrench, 6, f"fext[{name!r}]")
        body_force = act_force(f.placement, _dm(w))
        out[f.joint] = out[f.joint] + body_force if f.joint in out else body_force
    out.pop(0, None)  # a force on the ground does nothing
    return out


_POSITION_ONLY = object()


def _state(model: Model, q, v=_POSITION_ONLY):
    q = checks.configuration(model, q)
    if v is _POSITION_ONLY:
        return TreeKinematics(model, _dm(q)), q, None
    v = checks.velocity(model, v)
    return TreeKinematics(model, _dm(q), _dm(v)), q, v


def rnea(model: Model, q, v, a, fext: ExternalForces = None) -> np.ndarray:
    """Inverse dynamics: ``τ = M(q) a + h(q, v) − Σ Jᵀ fext`` (nv,)."""
    kin, q, v = _state(model, q, v)
    a = checks.vector(a, model.nv, "a")
    return _vec(dyn.rnea(model, kin.q, kin.v, _dm(a), _external_forces(model, fext), kin=kin))


def nonlinear_effects(model: Model, q, v) -> np.ndarray:
    """``h(q, v)`` (nv,): Coriolis, centrifugal and gravity terms."""
    kin, q, v = _state(model, q, v)
    return _vec(dyn.nonlinear_effects(model, kin.q, kin.v, kin=kin))


def crba(model: Model, q) -> np.ndarray:
    """The joint-space inertia matrix ``M(q)`` (nv, nv)."""
    kin, q, _ = _state(model, q)
    return _mat(dyn.crba(model, kin.q, kin=kin))


def aba(model: Model, q, v, tau, fext: ExternalForces = None) -> np.ndarray:
    """Forward dynamics: ``q̈`` (nv,) with ``M q̈ + h = τ + Σ Jᵀ fext``; ``tau`` is (nv,)."""
    kin, q, v = _state(model, q, v)
    tau = checks.vector(tau, model.nv, "tau")
    return _vec(dyn.aba(model, kin.q, kin.v, _dm(tau), _external_forces(model, fext), kin=kin))


def frame_placement(model: Model, q, frame: str) -> np.ndarray:
    """The homogeneous transform (4, 4) of ``frame`` in the world."""
    kin, q, _ = _state(model, q)
    M = kin.frame_placement(checks.frame_index(model, frame))
    T = np.eye(4)
    T[0:3, 0:3] = _mat(M.R)
    T[0:3, 3] = _vec(M.p)
    return T


def frame_jacobian(model: Model, q, frame: str, reference: ReferenceFrame = ReferenceFrame.LOCAL) -> np.ndarray:
    """The Jacobian (6, nv) of ``frame`` in ``reference`` (rows [linear; angular])."""
    kin, q, _ = _state(model, q)
    return _mat(kin.frame_jacobian(checks.frame_index(model, frame), _reference(reference)))


def frame_velocity(model: Model, q, v, frame: str, reference: ReferenceFrame = ReferenceFrame.LOCAL) -> np.ndarray:
    """The spatial velocity (6,) of ``frame`` in ``reference``."""
    kin, q, v = _state(model, q, v)
    return _vec(kin.frame_velocity(checks.frame_index(model, frame), _reference(reference)))


def frame_drift(model: Model, q, v, frame: str, reference: ReferenceFrame = ReferenceFrame.LOCAL) -> np.ndarray:
    """The classical acceleration drift ``J̇ v`` (6,) of ``frame`` in ``reference``."""
    kin, q, v = _state(model, q, v)
    return _vec(kin.frame_drift(checks.frame_index(model, frame), _reference(reference)))


def center_of_mass(model: Model, q) -> np.ndarray:
    """Position (3,) of the centre of mass in the world, m."""
    kin, q, _ = _state(model, q)
    return _vec(kin.center_of_mass())


def com_jacobian(model: Model, q) -> np.ndarray:
    """Jacobian (3, nv) of the centre of mass, world axes."""
    kin, q, _ = _state(model, q)
    return _mat(kin.com_jacobian())


def com_drift(model: Model, q, v) -> np.ndarray:
    """CoM acceleration (3,) at zero joint acceleration, world axes, m/s²."""
    kin, q, v = _state(model, q, v)
    return _vec(kin.com_drift())


def centroidal_map(model: Model, q) -> np.ndarray:
    """Centroidal momentum matrix (6, nv): [linear; angular] momentum about the CoM, world axes."""
    kin, q, _ = _state(model, q)
    return _mat(kin.centroidal_map())


def centroidal_drift(model: Model, q, v) -> np.ndarray:
    """``Ȧ_g v`` (6,): centroidal momentum rate at zero joint acceleration (no gravity)."""
    kin, q, v = _state(model, q, v)
    return _vec(kin.centroidal_drift())
