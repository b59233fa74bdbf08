"""The numeric API, compiled: numpy in, numpy out, at the speed of a C call (re-exported as ``wbc.*``).

Each function runs one compiled kernel per (model, function, options) — options are a frame and
its reference frame, or a set of constraints and a method — built on first use: traced from the
same expressions as :mod:`wbc.eager`, compiled to C (a fraction of a second for a frame function,
about a second for a humanoid's ABA) and kept in the kernel cache on disk, indexed so that another
process loads it without tracing (milliseconds). The kernels live as long as the model
(:mod:`wbc.codegen.model_kernels`).

A call copies the arguments into the kernel's buffers, checks inside the kernel that they are
finite, that quaternions are unit (and, on a :class:`~wbc.ClusterModel`, that ``y`` closes the
loops), and returns a new array: within about Pinocchio's Python call time
(``python -m benchmarks.numeric``). The dynamics (:func:`rnea`, :func:`nonlinear_effects`,
:func:`crba`, :func:`aba`, :func:`free_acceleration`) also write into a caller's array ``out=``
(float64, the result's shape, Fortran-contiguous: ``np.zeros((nv, nv), order="F")``) and return
it: no allocation per call in a loop. Without ``out=`` every call returns a new array. Bad
arguments raise the errors :mod:`wbc.eager` raises, naming the argument. Frames are names or
indices into ``model.frames`` (an index skips nothing: both reach the same kernel). Calls from
several threads on one model take turns.

:mod:`wbc.eager` has the same functions evaluated on numbers without compiling (for one-off
queries on many models, and as the reference these kernels are tested against), and
:mod:`wbc.symbolic` the same on CasADi symbols.

External forces ``fext`` are given as ``{frame: wrench (6,)}``, each wrench ``[f; n]`` (N, N m)
acting on the frame's body, expressed in the frame (LOCAL) about its origin. Clustered models:
positions are spanning-tree configurations ``y`` (``cm.tree.nq``, loops closed: build them with
``cm.spanning_configuration(q)``); velocities, accelerations and generalized forces are
independent (``cm.nv``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .algorithms.constraints import Constraint
from .algorithms.delassus import DelassusMethod
from .algorithms.iim import InputMatrixMethod
from .algorithms.kinematics import ReferenceFrame
from .codegen.calls import check_out
from .codegen.model_kernels import _registry, kernels_of
from .model import checks
from .model.clusters import ClusterModel
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
    "com_velocity",
    "com_jacobian",
    "com_drift",
    "centroidal_map",
    "centroidal_drift",
    "centroidal_momentum",
    "integrate",
    "inertia_weighted_input_matrix",
    "delassus",
    "cluster_rnea",
    "cluster_aba",
    "cluster_delassus",
    "cluster_input_matrix",
    "cluster_jacobian",
]

ExternalForces = Mapping[str, object] | None

_LOCAL = ReferenceFrame.LOCAL


def rnea(model: Model, q, v, a, fext: ExternalForces = None, *, out: np.ndarray | None = None) -> np.ndarray:
    """Inverse dynamics: ``τ = M(q) a + h(q, v) − Σ Jᵀ fext`` (nv,), written into ``out`` if given.

    ``fext``: ``{frame name or index: wrench (6,)}``, each ``[f; n]`` (N, N m) on the frame's body,
    in the frame (LOCAL) about its origin."""
    kernels = _registry.get(id(model)) or kernels_of(model)
    if fext is None or (type(fext) is dict and not fext):
        return kernels.rnea(q, v, a) if out is None else kernels.rnea(q, v, a, out)
    return _with_forces(kernels, "rnea", q, v, a, fext, out)


def nonlinear_effects(model: Model, q, v, *, out: np.ndarray | None = None) -> np.ndarray:
    """``h(q, v)`` (nv,): Coriolis, centrifugal and gravity terms, written into ``out`` if given."""
    kernels = _registry.get(id(model)) or kernels_of(model)
    return kernels.nonlinear_effects(q, v) if out is None else kernels.nonlinear_effects(q, v, out)


def crba(model: Model, q, *, out: np.ndarray | None = None) -> np.ndarray:
    """The joint-space inertia matrix ``M(q)`` (nv, nv), written into ``out`` if given."""
    kernels = _registry.get(id(model)) or kernels_of(model)
    return kernels.crba(q) if out is None else kernels.crba(q, out)


def aba(model: Model, q, v, tau, fext: ExternalForces = None, *, out: np.ndarray | None = None) -> np.ndarray:
    """Forward dynamics: ``q̈`` (nv,) with ``M q̈ + h = τ + Σ Jᵀ fext``; ``tau`` is (nv,); written into
    ``out`` if given. ``fext`` as :func:`rnea`'s."""
    kernels = _registry.get(id(model)) or kernels_of(model)
    if fext is None or (type(fext) is dict and not fext):
        return kernels.aba(q, v, tau) if out is None else kernels.aba(q, v, tau, out)
    return _with_forces(kernels, "aba", q, v, tau, fext, out)


def _with_forces(kernels, what: str, q, v, x, fext, out: np.ndarray | None) -> np.ndarray:
    """``what`` with external forces: one kernel per set of frames, the wrenches its inputs."""
    if type(fext) is dict:
        key = (what, *fext)
        try:
            call = kernels.forces[key]
        except (KeyError, TypeError):
            call = kernels.force_function(what, fext)
    else:
        call = kernels.force_function(what, fext)  # checks that it is a mapping
    if out is None:
        return call(q, v, x, *fext.values())
    check_out(out, (kernels.model.nv,))
    np.copyto(out, call(q, v, x, *fext.values()))
    return out


def free_acceleration(model: Model, q, v, *, out: np.ndarray | None = None) -> np.ndarray:
    """``a₀ = −M⁻¹ h(q, v)`` (nv,): the acceleration with zero inputs (the drift of ``q̈ = a₀ + B̂ u``),
    written into ``out`` if given."""
    kernels = _registry.get(id(model)) or kernels_of(model)
    return kernels.free_acceleration(q, v) if out is None else kernels.free_acceleration(q, v, out)


def frame_placement(model: Model, q, frame: str | int) -> np.ndarray:
    """The homogeneous transform (4, 4) of ``frame`` in the world."""
    return _frame_call(model, "placement", frame, None)(q)


def frame_jacobian(model: Model, q, frame: str | int, reference: ReferenceFrame = _LOCAL) -> np.ndarray:
    """The Jacobian (6, nv) of ``frame`` in ``reference`` (rows [linear; angular])."""
    return _frame_call(model, "jacobian", frame, reference)(q)


def frame_velocity(model: Model, q, v, frame: str | int, reference: ReferenceFrame = _LOCAL) -> np.ndarray:
    """The spatial velocity (6,) of ``frame`` in ``reference``."""
    return _frame_call(model, "velocity", frame, reference)(q, v)


def frame_drift(model: Model, q, v, frame: str | int, reference: ReferenceFrame = _LOCAL) -> np.ndarray:
    """The classical acceleration drift ``J̇ v`` (6,) of ``frame`` in ``reference``."""
    return _frame_call(model, "drift", frame, reference)(q, v)


def _frame_call(model: Model, what: str, frame: str | int, reference: ReferenceFrame | None):
    """The compiled kernel of ``what`` for ``frame`` in ``reference`` (None: the world placement),
    looked up by the reference's identity (hashing enum members is slower), built on first use
    (which checks the frame)."""
    kernels = _registry.get(id(model)) or kernels_of(model)
    try:
        return kernels.frames[what, frame, id(reference)]
    except (KeyError, TypeError):
        return kernels.frame_function(what, frame, reference)


def center_of_mass(model: Model, q) -> np.ndarray:
    """Position (3,) of the centre of mass in the world, m."""
    return (_registry.get(id(model)) or kernels_of(model)).center_of_mass(q)


def com_velocity(model: Model, q, v) -> np.ndarray:
    """Velocity (3,) of the centre of mass, world axes, m/s."""
    return (_registry.get(id(model)) or kernels_of(model)).com_velocity(q, v)


def com_jacobian(model: Model, q) -> np.ndarray:
    """Jacobian (3, nv) of the centre of mass, world axes."""
    return (_registry.get(id(model)) or kernels_of(model)).com_jacobian(q)


def com_drift(model: Model, q, v) -> np.ndarray:
    """CoM acceleration (3,) at zero joint acceleration, world axes, m/s²."""
    return (_registry.get(id(model)) or kernels_of(model)).com_drift(q, v)


def centroidal_map(model: Model, q) -> np.ndarray:
    """Centroidal momentum matrix (6, nv): [linear; angular] momentum about the CoM, world axes."""
    return (_registry.get(id(model)) or kernels_of(model)).centroidal_map(q)


def centroidal_drift(model: Model, q, v) -> np.ndarray:
    """``Ȧ_g v`` (6,): centroidal momentum rate at zero joint acceleration (no gravity)."""
    return (_registry.get(id(model)) or kernels_of(model)).centroidal_drift(q, v)


def centroidal_momentum(model: Model, q, v) -> np.ndarray:
    """Centroidal momentum (6,) about the CoM, world axes: [kg m/s; kg m²/s]."""
    return (_registry.get(id(model)) or kernels_of(model)).centroidal_momentum(q, v)


def integrate(model: Model, q, v, dt: float = 1.0) -> np.ndarray:
    """``q ⊕ v dt`` (nq,): the configuration reached from ``q`` moving at constant ``v`` for ``dt`` s
    (a free-flyer along the SE(3) exponential of its body twist, its quaternion on the input's side
    of the double cover; a ball joint's quaternion ``quat ⊗ exp(ω dt)``, renormalised: Pinocchio's
    ``integrate``). ``dt`` must be a finite number."""
    kernels = _registry.get(id(model)) or kernels_of(model)
    if dt != 1.0:
        checks.finite_number(dt, "dt")
        try:
            v = np.multiply(v, dt)
        except (TypeError, ValueError):  # not numbers: refused by name
            checks.vector(v, model.nv, "v")
            raise
    return kernels.integrate(q, v)


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
    return _constrained_call(model, "input_matrix", constraints, method)(q)


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
    return _constrained_call(model, "delassus", constraints, method)(q)


def cluster_rnea(cm: ClusterModel, y, v, a) -> np.ndarray:
    """C-RNEA: independent generalized forces (nv,) for accelerations ``a`` (nv,)."""
    return (_registry.get(id(cm)) or kernels_of(cm)).cluster_rnea(y, v, a)


def cluster_aba(cm: ClusterModel, y, v, tau) -> np.ndarray:
    """C-ABA: independent accelerations (nv,) for independent generalized forces ``tau`` (nv,)."""
    return (_registry.get(id(cm)) or kernels_of(cm)).cluster_aba(y, v, tau)


def cluster_delassus(cm: ClusterModel, y, constraints: Sequence[Constraint]) -> np.ndarray:
    """C-EFPA: the Delassus matrix ``J M⁻¹ Jᵀ`` (m, m) of link constraints on spanning-tree bodies."""
    return _constrained_call(cm, "cluster_delassus", constraints)(y)


def cluster_input_matrix(cm: ClusterModel, y, constraints: Sequence[Constraint] = ()) -> np.ndarray:
    """Clustered IIM: ``B̂ = M⁻¹ [Sᵀ, Jᵀ]`` (nv, n_actuated + m)."""
    return _constrained_call(cm, "cluster_input_matrix", constraints)(y)


def cluster_jacobian(cm: ClusterModel, y, constraints: Sequence[Constraint]) -> np.ndarray:
    """Stacked constraint Jacobians (m, nv) in independent coordinates."""
    return _constrained_call(cm, "cluster_jacobian", constraints)(y)


def _constrained_call(model: Model | ClusterModel, what: str, constraints, method=None):
    """The compiled kernel of ``what`` for ``constraints`` by ``method`` (None on a cluster model),
    built on first use (which checks the constraints and the method)."""
    kernels = _registry.get(id(model)) or kernels_of(model)
    try:
        return kernels.constrained[what, method, tuple(constraints)]
    except (KeyError, TypeError):
        return kernels.constrained_function(what, constraints, method)
