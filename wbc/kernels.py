"""Ready-made traced functions for the classical algorithms, to compile with :mod:`wbc.codegen`.

Each ``*_function(model)`` traces one algorithm for one model into a ``casadi.Function`` whose
inputs are plain vectors (``q`` (nq,), ``v`` (nv,), ...). Compile it with
:func:`wbc.codegen.compile_function`, or use :func:`compile_kernel` for both steps::

    aba = wbc.kernels.compile_kernel(wbc.kernels.aba_function(model))
    qdd, = aba(q, v, tau)          # numpy in, numpy out (the kernel's buffers: copy to keep)

The state is not validated here (kernels are the fast path); validate with :mod:`wbc.checks`
where inputs come from users.
"""

from __future__ import annotations

from typing import Sequence

import casadi as ca

from . import dynamics as dyn
from .codegen import Kernel, compile_function, trace
from .kinematics import ReferenceFrame, TreeKinematics
from .model import Model

__all__ = [
    "aba_function",
    "rnea_function",
    "crba_function",
    "nonlinear_effects_function",
    "frame_jacobians_function",
    "compile_kernel",
]


def _name(model: Model, what: str) -> str:
    return f"{what}_{model.name}_{model.nq}_{model.nv}"


def aba_function(model: Model) -> ca.Function:
    """``(q, v, tau) -> qdd``: forward dynamics, ``tau`` (nv,) generalized forces."""
    return trace(
        _name(model, "aba"),
        [("q", model.nq), ("v", model.nv), ("tau", model.nv)],
        lambda q, v, tau: [dyn.aba(model, q, v, tau)],
        ["qdd"],
    )


def rnea_function(model: Model) -> ca.Function:
    """``(q, v, a) -> tau``: inverse dynamics."""
    return trace(
        _name(model, "rnea"),
        [("q", model.nq), ("v", model.nv), ("a", model.nv)],
        lambda q, v, a: [dyn.rnea(model, q, v, a)],
        ["tau"],
    )


def crba_function(model: Model) -> ca.Function:
    """``q -> M``: joint-space inertia matrix (nv, nv)."""
    return trace(_name(model, "crba"), [("q", model.nq)], lambda q: [dyn.crba(model, q)], ["M"])


def nonlinear_effects_function(model: Model) -> ca.Function:
    """``(q, v) -> h``: nonlinear effects."""
    return trace(
        _name(model, "nle"),
        [("q", model.nq), ("v", model.nv)],
        lambda q, v: [dyn.nonlinear_effects(model, q, v)],
        ["h"],
    )


def frame_jacobians_function(model: Model, frames: Sequence[str], reference: ReferenceFrame) -> ca.Function:
    """``q -> (J_1, ..., J_k)``: the Jacobians (6, nv) of ``frames`` in ``reference``."""
    ids = [model.frame_id(f) for f in frames]

    def build(q):
        kin = TreeKinematics(model, q)
        return [kin.frame_jacobian(i, reference) for i in ids]

    return trace(_name(model, f"jac{len(ids)}_{reference.value}"), [("q", model.nq)], build,
                 [f"J_{k}" for k in range(len(ids))])


def compile_kernel(function: ca.Function, **options) -> Kernel:
    """Compile ``function`` (cached) and wrap it for buffer calls; see :func:`wbc.codegen.compile_function`."""
    return compile_function(function, **options)
