"""The naive baseline: the maximal-coordinate KKT system assembled as one matrix and solved at once.

Unknowns in the notes' order, ``[a₁ … a_N, μ₁ … μ_N, ν]`` (6 per body, ``mᵢ`` per joint, ``k`` loop
rows): ``N_x = 6 N + Σ mᵢ + k``. The solve knows nothing of the tree: on numbers LAPACK's LU with
partial pivoting (``casadi.solve(A, r, "lapacklu")``), traced CasADi's general symbolic solve
(``casadi.solve``: a structural permutation to a nonzero diagonal, then QR without pivoting, whose
operations are what gets compiled); either costs about ``N_x³`` (measured by
``python -m benchmarks.maximal``). :func:`kkt_matrix` also
serves the sparsity and fill-in analysis (:mod:`.structure`).
"""

from __future__ import annotations

import casadi as ca

from ...spatial.algebra import Matrix, act_force, act_inv_motion
from .system import MaximalSystem

__all__ = ["kkt_offsets", "kkt_matrix", "dense_solve"]


def kkt_offsets(system: MaximalSystem) -> tuple[list[int], list[int], list[int], int]:
    """``(body, joint, loop, size)``: where each body's 6 columns, each joint's ``mᵢ`` rows and each
    loop block's rows start in the KKT matrix, and its size ``N_x``."""
    n = system.model.njoints
    body = [0] + [6 * (i - 1) for i in range(1, n)]
    start = 6 * (n - 1)
    joint = [0] * n
    for i in range(1, n):
        joint[i] = start
        start += system.m[i]
    loop = []
    for blk in system.loops:
        loop.append(start)
        start += blk.size
    return body, joint, loop, start


def kkt_matrix(system: MaximalSystem):
    """``(A, r)``: the KKT matrix (N_x, N_x) and right-hand side (N_x, 1) (SX when tracing, else DM)."""
    model, kin = system.model, system.kin
    symbolic = isinstance(kin.q, ca.SX)
    body, joint, loop, N = kkt_offsets(system)
    A = ca.SX(N, N) if symbolic else ca.DM(N, N)
    r = ca.SX(N, 1) if symbolic else ca.DM(N, 1)
    for i in range(1, model.njoints):
        b = body[i]
        A[b : b + 6, b : b + 6] = ca.DM(model.inertias[i])
        r[b : b + 6, 0] = system.d[i]
        T, m = system.T[i], system.m[i]
        if m == 0:
            continue
        j = joint[i]
        A[j : j + m, b : b + 6] = ca.DM(T.T)
        A[b : b + 6, j : j + m] = ca.DM(T)
        rhs = system.c[i]
        p = model.joints[i].parent
        X = kin.liMi[i]
        if p == 0:
            rhs = rhs + ca.mtimes(T.T, act_inv_motion(X, system.a0))
        else:
            coupling = -act_force(X, T)  # (6, m): C_λⁱᵀ = −Xᵢ* Tᵢ
            A[body[p] : body[p] + 6, j : j + m] = coupling
            A[j : j + m, body[p] : body[p] + 6] = coupling.T
        r[j : j + m, 0] = rhs
    for blk, o in zip(system.loops, loop):
        for i, coef in blk.terms:
            A[o : o + blk.size, body[i] : body[i] + 6] = coef
            A[body[i] : body[i] + 6, o : o + blk.size] = coef.T
        r[o : o + blk.size, 0] = blk.rhs
    return A, r


def dense_solve(system: MaximalSystem) -> tuple[list, list, Matrix]:
    """The KKT system by one general linear solve.

    Returns:
        ``(a, mu, nu)`` as :func:`~wbc.algorithms.maximal.recursive.recursive_solve`.
    """
    A, r = kkt_matrix(system)
    # numbers: LAPACK's dense LU with partial pivoting; symbols: CasADi's symbolic solve (structural
    # permutation, QR without pivoting). Both treat the matrix as one block: cubic in its size.
    x = ca.solve(A, r) if isinstance(A, ca.SX) else ca.solve(A, r, "lapacklu")
    body, joint, loop, N = kkt_offsets(system)
    n = system.model.njoints
    a = [system.a0] + [x[body[i] : body[i] + 6] for i in range(1, n)]
    mu = [None] + [x[joint[i] : joint[i] + system.m[i]] for i in range(1, n)]
    nu = x[loop[0] : N] if system.loops else None
    return a, mu, nu
