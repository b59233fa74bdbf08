"""Small dense linear algebra written out in CasADi scalar operations.

``casadi.solve`` on symbolic matrices would pick a generic factorisation at run time; these
routines unroll an LDLᵀ factorisation of a symmetric positive-definite matrix instead, so the
traced kernel contains only the arithmetic actually needed (structural zeros fold away).
Used for the 6x6 free-flyer block of the ABA and for the dense baselines.
"""

from __future__ import annotations

import casadi as ca

from ..spatial.algebra import symmetric

__all__ = ["ldlt", "ldlt_solve", "spd_inverse"]


def _is_zero(x) -> bool:
    return (isinstance(x, (int, float)) and x == 0) or (hasattr(x, "is_zero") and x.is_zero())


def ldlt(A):
    """Factor a symmetric positive-definite ``A`` (n, n) as ``L diag(d) Lᵀ``.

    Returns:
        ``(L, d)``: lists of rows of the unit lower-triangular factor (``L[i][j]`` for ``j < i``)
        and the pivots ``d`` (n,).
    """
    n = A.shape[0]
    L = [[None] * n for _ in range(n)]
    d = [None] * n
    for j in range(n):
        acc = A[j, j]
        for k in range(j):
            if not _is_zero(L[j][k]):
                acc = acc - L[j][k] * L[j][k] * d[k]
        d[j] = acc
        inv = 1 / acc
        for i in range(j + 1, n):
            acc = A[i, j]
            for k in range(j):
                if not _is_zero(L[i][k]) and not _is_zero(L[j][k]):
                    acc = acc - L[i][k] * L[j][k] * d[k]
            L[i][j] = 0 if _is_zero(acc) else acc * inv
    return L, d


def ldlt_solve(factor, B):
    """Solve ``A X = B`` for ``X`` (n, k) given ``factor = ldlt(A)``."""
    L, d = factor
    n = len(d)
    cols = []
    for c in range(B.shape[1]):
        y = [None] * n
        for i in range(n):
            acc = B[i, c]
            for k in range(i):
                if not _is_zero(L[i][k]):
                    acc = acc - L[i][k] * y[k]
            y[i] = acc
        x = [None] * n
        for i in reversed(range(n)):
            acc = y[i] / d[i]
            for k in range(i + 1, n):
                if not _is_zero(L[k][i]):
                    acc = acc - L[k][i] * x[k]
            x[i] = acc
        cols.append(ca.vertcat(*x))
    return ca.horzcat(*cols) if cols else ca.DM.zeros(n, 0)


def spd_inverse(A):
    """``A⁻¹`` (n, n), symmetric, for a symmetric positive-definite ``A``."""
    if A.shape[0] == 1:
        return 1 / A
    n = A.shape[0]
    return symmetric(ldlt_solve(ldlt(A), ca.DM.eye(n)))
