"""Ready-made traced functions for the classical algorithms, to compile with :mod:`wbc.codegen`.

Each ``*_function(model)`` traces one algorithm for one model into a ``casadi.Function`` whose
inputs are plain vectors (``q`` (nq,), ``v`` (nv,), ...) and whose outputs are declared with their
shapes (a vector ``qdd`` (nv,), a matrix ``M`` (nv, nv) even when nv = 1). Compile it with
:func:`wbc.codegen.compile_function`::

    aba = wbc.codegen.compile_function(wbc.codegen.algorithm_functions.aba_function(model))
    qdd, = aba(q, v, tau)          # numpy in, numpy out (the kernel's buffers: copy to keep)

ABA, RNEA, CRBA and the nonlinear effects are traced *hot* (compiled at ``-O2`` by default:
:data:`~wbc.codegen.HOT_FLAGS`); the others at ``-Og``. The state is not validated here (kernels
are the fast path); validate with :mod:`wbc.checks` where inputs come from users.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import casadi as ca

from ..algorithms import dynamics as dyn
from ..algorithms.constraints import Constraint, resolve
from ..algorithms.delassus import DelassusMethod, delassus_matrix
from ..algorithms.iim import InputMatrixMethod, input_matrix
from ..algorithms.kinematics import ReferenceFrame, TreeKinematics
from ..errors import InputError
from ..model import checks
from ..model.model import Model
from .trace import trace

__all__ = [
    "aba_function",
    "rnea_function",
    "crba_function",
    "nonlinear_effects_function",
    "frame_jacobians_function",
    "delassus_function",
    "input_matrix_function",
    "free_acceleration_and_input_matrix_function",
]


def _name(model: Model, what: str) -> str:
    return f"{what}_{model.name}_{model.nq}_{model.nv}"


def aba_function(model: Model) -> ca.Function:
    """``(q, v, tau) -> qdd``: forward dynamics, ``tau`` (nv,) generalized forces.

    Raises:
        ModelError: the model has joints that move no mass (:func:`wbc.checks.massless_joints`).
    """
    checks.invertible_dynamics(model, "aba_function")
    return trace(
        _name(model, "aba"),
        [("q", model.nq), ("v", model.nv), ("tau", model.nv)],
        lambda q, v, tau: [dyn.aba(model, q, v, tau)],
        [("qdd", model.nv)],
        hot=True,
    )


def rnea_function(model: Model) -> ca.Function:
    """``(q, v, a) -> tau``: inverse dynamics."""
    return trace(
        _name(model, "rnea"),
        [("q", model.nq), ("v", model.nv), ("a", model.nv)],
        lambda q, v, a: [dyn.rnea(model, q, v, a)],
        [("tau", model.nv)],
        hot=True,
    )


def crba_function(model: Model) -> ca.Function:
    """``q -> M``: joint-space inertia matrix (nv, nv)."""
    return trace(
        _name(model, "crba"), [("q", model.nq)], lambda q: [dyn.crba(model, q)], [("M", (model.nv, model.nv))], hot=True
    )


def nonlinear_effects_function(model: Model) -> ca.Function:
    """``(q, v) -> h``: nonlinear effects."""
    return trace(
        _name(model, "nle"),
        [("q", model.nq), ("v", model.nv)],
        lambda q, v: [dyn.nonlinear_effects(model, q, v)],
        [("h", model.nv)],
        hot=True,
    )


def frame_jacobians_function(model: Model, frames: Sequence[str], reference: ReferenceFrame) -> ca.Function:
    """``q -> (J_1, ..., J_k)``: the Jacobians (6, nv) of ``frames`` in ``reference``."""
    if not isinstance(reference, ReferenceFrame):
        raise InputError(f"reference must be a wbc.ReferenceFrame, got {reference!r}")
    ids = [model.frame_id(f) for f in frames]

    def build(q):
        kin = TreeKinematics(model, q)
        return [kin.frame_jacobian(i, reference) for i in ids]

    return trace(
        _name(model, f"jac{len(ids)}_{reference.value}"),
        [("q", model.nq)],
        build,
        [(f"J_{k}", (6, model.nv)) for k in range(len(ids))],
    )


class _ConstraintKernel(NamedTuple):
    """A kernel of constraint rows: its method enum, what computes it, its name (in kernel names),
    its output's name and the public builder's name (in errors)."""

    methods: type[enum.Enum]
    compute: Callable[..., Any]
    name: str
    output: str
    caller: str


_DELASSUS = _ConstraintKernel(DelassusMethod, delassus_matrix, "delassus", "delassus", "delassus_function")
_INPUT_MATRIX = _ConstraintKernel(InputMatrixMethod, input_matrix, "bhat", "Bhat", "input_matrix_function")


def _constraint_function(
    model: Model,
    constraints: Sequence[Constraint],
    given: DelassusMethod | InputMatrixMethod | str,
    kernel: _ConstraintKernel,
    shape: Callable[[int], tuple[int, int]],
    cse: bool,
) -> ca.Function:
    """``q -> kernel.compute(model, kinematics, resolved, method)``, a matrix of ``shape(m)`` for the
    m constraint rows, once the ``given`` method is checked and the dynamics found invertible."""
    method = checks.option(kernel.methods, given, "method")
    checks.invertible_dynamics(model, kernel.caller)
    resolved = resolve(model, constraints)
    m = sum(c.dim for c in resolved)
    return trace(
        _name(model, f"{kernel.name}_{method.name.lower()}_{len(resolved)}c{m}"),
        [("q", model.nq)],
        lambda q: [kernel.compute(model, TreeKinematics(model, q), resolved, method)],
        [(kernel.output, shape(m))],
        cse=cse,
    )


def delassus_function(
    model: Model,
    constraints: Sequence[Constraint],
    method: DelassusMethod = DelassusMethod.PV_OSIMR,
    cse: bool = True,
) -> ca.Function:
    """``q -> Λ⁻¹``: the Delassus matrix (m, m) of ``constraints`` by ``method``.

    Raises:
        ModelError: the model has joints that move no mass.
    """
    return _constraint_function(model, constraints, method, _DELASSUS, lambda m: (m, m), cse)


def input_matrix_function(
    model: Model,
    constraints: Sequence[Constraint] = (),
    method: InputMatrixMethod = InputMatrixMethod.IIM,
    cse: bool = True,
) -> ca.Function:
    """``q -> B̂``: the inertia-weighted input matrix (nv, n_actuated + m) by ``method``.

    Raises:
        ModelError: the model has joints that move no mass.
    """
    shape = lambda m: (model.nv, model.n_actuated + m)  # noqa: E731
    return _constraint_function(model, constraints, method, _INPUT_MATRIX, shape, cse)


def free_acceleration_and_input_matrix_function(model: Model, constraints: Sequence[Constraint] = ()) -> ca.Function:
    """``(q, v) -> (a0, B̂)``: one IIM pass sharing its articulated-body inertias with the ABA
    that yields the free acceleration ``a₀ = −M⁻¹ h``.

    Raises:
        ModelError: the model has joints that move no mass.
    """
    from ..algorithms.iim import iim

    checks.invertible_dynamics(model, "free_acceleration_and_input_matrix_function")
    resolved = resolve(model, constraints)

    def build(q, v):
        kin = TreeKinematics(model, q, v)
        bodies = dyn.ArticulatedBodies.compute(model, kin)
        a0 = dyn.aba(model, q, v, ca.SX.zeros(model.nv, 1), kin=kin, bodies=bodies)
        return [a0, iim(model, kin, resolved, bodies)]

    m = sum(c.dim for c in resolved)
    return trace(
        _name(model, f"a0_bhat_{len(resolved)}c{m}"),
        [("q", model.nq), ("v", model.nv)],
        build,
        [("a0", model.nv), ("Bhat", (model.nv, model.n_actuated + m))],
    )
