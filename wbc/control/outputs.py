"""The step kernel's outputs by name: :class:`StepOutputs`, views of the kernel's buffers.

The step function traced by :func:`~wbc.control.builder.trace_step` returns, in this order (``n_u``
the QP's variables, ``nv`` the velocity size)::

    A, b        cost rows              (n_traced_cost, n_u), (n_cost,)   (rows of B̂, a posture
                                                      task's, are assembled from Bhat and scale)
    A_eq, b_eq  equality rows          (n_eq, n_u), (n_eq,)
    G           traced inequality rows (n_traced, n_u)   (constant rows stay in the Structure; rows of
                                                      B̂, the joint limits', are read from Bhat)
    h           inequality right-hand sides (n_in,)
    lb, ub      variable bounds        (n_u,), (n_u,)
    a0, Bhat    q̈ = a0 + Bhat u        (nv,), (nv, n_u)
    errors      the cost pieces' reported errors (n_err,)
    d           right-hand sides of the feasibility check ``C u ≤ d`` (n_c,)
    scale       the scales of the cost rows read from Bhat (n_bhat_cost,)

:func:`step_outputs` gives them as a :class:`StepOutputs` of views of a :class:`~wbc.codegen.Kernel`'s
buffers: matrices column-major ``(rows, cols)``, vectors ``(n,)``; overwritten by each kernel run.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..codegen.kernel import Kernel

__all__ = ["StepOutputs", "OUTPUTS", "MATRICES", "step_outputs"]


class StepOutputs(NamedTuple):
    """The step kernel's outputs (``n_u`` QP variables, ``nv`` velocities)."""

    A: np.ndarray
    """(n_traced_cost, n_u) the cost rows whose matrix is traced (rows of B̂ are assembled from Bhat)."""
    b: np.ndarray
    """(n_cost,) every cost row's target."""
    A_eq: np.ndarray
    """(n_eq, n_u) equality rows (the contacts' motion rows)."""
    b_eq: np.ndarray
    """(n_eq,) their right-hand sides."""
    G: np.ndarray
    """(n_traced, n_u) the inequality rows whose matrix is traced (constant rows stay in the Structure)."""
    h: np.ndarray
    """(n_in,) every inequality row's right-hand side."""
    lb: np.ndarray
    """(n_u,) lower bounds (-inf where unbounded)."""
    ub: np.ndarray
    """(n_u,) upper bounds (+inf where unbounded)."""
    a0: np.ndarray
    """(nv,) the free acceleration: q̈ = a0 + Bhat u."""
    Bhat: np.ndarray
    """(nv, n_u) the inertia-weighted input matrix M⁻¹[Sᵀ, J_cᵀ]."""
    errors: np.ndarray
    """(n_err,) the cost pieces' reported errors (the task errors)."""
    d: np.ndarray
    """(n_c,) right-hand sides of the feasibility check C u ≤ d (tolerance included)."""
    scale: np.ndarray
    """(n_bhat_cost,) the scales of the cost rows that are scaled rows of Bhat (AccelerationCost)."""


#: The step function's output names, in order.
OUTPUTS: tuple[str, ...] = StepOutputs._fields

#: The outputs that are matrices (the others are vectors).
MATRICES = frozenset({"A", "A_eq", "G", "Bhat"})


def step_outputs(kernel: Kernel) -> StepOutputs:
    """``kernel``'s outputs as :class:`StepOutputs`: views of its buffers with the shapes above."""
    function = kernel.function
    views = []
    for k, (name, buffer) in enumerate(zip(OUTPUTS, kernel.outputs)):
        shape = function.size_out(k)
        views.append(np.reshape(buffer, shape if name in MATRICES else (shape[0],), order="F"))
    return StepOutputs(*views)
