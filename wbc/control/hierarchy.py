"""A strict task hierarchy: the step's QP solved level after level (lexicographically).

Tasks carry a priority level (``task.set_priority(k)``, 0 the highest). With cost rows
``A_k u ≈ b_k`` at levels ``k = 0, 1, ...`` the step solves, in order,

    y_k* = A_k u_k*,   u_k* = argmin ½‖A_k u − b_k‖² + ½ Σᵢ rᵢuᵢ²
                       s.t. A_eq u = b_eq, G u ≤ h, lb ≤ u ≤ ub, A_j u = y_j* (j < k),

so a lower level never changes what a higher level obtains (its task accelerations ``y_j*``), and
every inequality and bound stays hard at every level. The objective of a level depends on ``u``
only through ``A_k u`` and is strictly convex there, so ``{A_k u = y_k*}`` is exactly the set of the
level's optimal inputs: fixing it as an equality is the lexicographic order. The regularization
``½ Σᵢ rᵢuᵢ²`` makes every level's solution unique. At the last level it is the weighted
controller's, ``rᵢ = ε ‖A[:, i]‖² + 1e-12`` over all cost rows, so that with a single level the
problem *is* the weighted controller's. Above it, ``rᵢ = ε (‖A_{≤k}[:, i]‖² + ‖B̂[:, i]‖²) + 1e-12``:
the rows of the level and the levels above only (nothing below a level changes it), plus a scale of
every input set by the dynamics alone (the joint accelerations it produces), without which the
inputs no row so far touches would be held by the 1e-12 floor only (QPs conditioned at 1e14, whose
solutions drift by 1e-5). The price is a regularization bias of the upper levels' task values of
order ``ε ‖B̂[:, i]‖² / ‖A_{≤k}[:, i]‖²`` (Talos standing, CoM alone at level 0: 0.1 mm of CoM height
at kp = 20, against none with the weighted controller).

How the structure is used (nothing is factorized twice):

1. the contacts' equalities are eliminated once, ``u = N x + u₀``: through the Cholesky factor of
   the Delassus matrix when the equalities are the contacts' own rows (``N = [I; −Λ⁻¹E]``), else
   through an SVD of ``A_eq``; the variables ``x`` are scaled once to a unit-diagonal Hessian;
2. the levels' equalities ``A_j u = y_j*`` are never written down: level ``k`` searches
   ``x = x_{k−1}* + Z_k z``, ``Z_k`` an orthonormal basis of the null space of the levels above
   (``Z₀ = I``; ``Z_{k+1} = Z_k V``, ``V`` spanning the null space of ``A_k Z_k``, from one SVD of
   that small matrix), so every level is smaller than the one above and needs no equality;
3. each level first takes its minimizer without inequalities (one Cholesky solve) and keeps it when
   every inequality and bound holds there (one product ``C u ≤ d``, the weighted controller's
   shortcut test); only otherwise is the level's QP (in ``z``) handed to the solver. Lower levels are
   always feasible: ``z = 0`` is the level above's solution (so a row ``z`` cannot move is dropped and
   every slack at ``z = 0`` is floored at the shortcut's tolerance: round-off, e.g. a binding row and
   its opposite, never makes a lower level look infeasible).

When the first level's QP has no solution the constraints themselves are infeasible: the step then
falls back as the weighted controller does (:mod:`wbc.control.fallback`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy.linalg.lapack import dpotrf as _dpotrf
from scipy.linalg.lapack import dpotrs as _dpotrs

from .qp import QPProblem

if TYPE_CHECKING:
    from .builder import Layout, Selection
    from .fallback import FallbackPolicy
    from .solvers import QPSolver

__all__ = ["LexicographicSolver", "null_space_rank_tolerance"]

#: A direction of a level's projected task matrix counts as constrained when its singular value is
#: above this fraction of the level's own (scaled) task matrix norm.
null_space_rank_tolerance = 1e-9


def _spd_solve(H: np.ndarray, rhs: np.ndarray) -> np.ndarray | None:
    L, info = _dpotrf(H, lower=1, clean=0)
    if info:
        return None
    x, info = _dpotrs(L, rhs, lower=1)
    return None if info else x


class _Reduced:
    """One step's problem with the equalities eliminated and the variables scaled: ``u = T ξ + u₀``;
    ``Ã = A T``, ``b̃ = b − A u₀`` are the cost rows in ``ξ``."""

    def __init__(self, T, u0, A, b, tau_block: bool) -> None:
        self.T, self.u0, self.A, self.b = T, u0, A, b
        self.tau_block = tau_block  # the leading variables of u are ξ / D themselves (bounds stay bounds)

    def regularization_rows(self, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(R, ρ)`` with ``½‖R ξ − ρ‖² = ½ Σᵢ rᵢuᵢ²`` up to a constant."""
        sr = np.sqrt(r)
        return sr[:, None] * self.T, -sr * self.u0


def _reduce(layout: Layout, A, b, A_eq, b_eq, r) -> _Reduced | None:
    """Eliminate the equalities (module docstring, step 1) and scale to the unit-diagonal Hessian of
    the whole weighted problem (regularization ``r``); None if the equalities cannot be solved."""
    n = A.shape[1]
    if A_eq.shape[0] == 0:
        N, u0, tau_block = None, np.zeros(n), True
        AN, bN = A, b
    elif layout.eliminable:
        p = layout.n_tau
        X = _spd_solve(np.array(A_eq[:, p:]), np.column_stack((A_eq[:, :p], b_eq)))
        if X is None:
            return None
        XE, Xb = X[:, :p], X[:, p]
        N = np.vstack((np.eye(p), -XE))
        u0 = np.concatenate((np.zeros(p), Xb))
        AN, bN = A[:, :p] - A[:, p:] @ XE, b - A[:, p:] @ Xb
        tau_block = True
    else:
        U, s, Vt = np.linalg.svd(A_eq)
        rank = int(np.sum(s > 1e-12 * max(s[0], 1e-300))) if s.size else 0
        u0 = Vt[:rank].T @ ((U[:, :rank].T @ b_eq) / s[:rank])
        if np.abs(A_eq @ u0 - b_eq).max(initial=0.0) > 1e-9 * max(1.0, np.abs(b_eq).max(initial=0.0)):
            return None  # inconsistent equalities
        N = Vt[rank:].T
        AN, bN = A @ N, b - A @ u0
        tau_block = False
    reg = r if N is None else np.einsum("ij,ij->j", N, r[:, None] * N)  # diag(Nᵀ diag(r) N)
    d = np.sqrt(np.einsum("ij,ij->j", AN, AN) + reg)
    inv = 1.0 / d
    T = np.diag(inv) if N is None else N * inv
    return _Reduced(T, u0, AN * inv, bN, tau_block)


class LexicographicSolver:
    """Solves a step's QP level after level (see the module docstring).

    Args:
        solver: the backend for the levels whose inequalities bind.
        fallback: the controller's policy, used to accept (check) a backend's solution.
        rank_tolerance: relative singular-value threshold of the null-space updates.
    """

    def __init__(
        self, solver: QPSolver, fallback: FallbackPolicy, rank_tolerance: float = null_space_rank_tolerance
    ) -> None:
        self.solver = solver
        self.fallback = fallback
        self.rank_tolerance = float(rank_tolerance)

    def solve(self, layout: Layout, selection: Selection, regularization: float) -> np.ndarray | None:
        """The lexicographic solution ``u`` (n,) in the layout's active variables, or None when the
        first level's QP has no solution (the constraints are infeasible).

        Args:
            layout: the step's levels and variables.
            selection: the step's QP in the layout's rows and columns (:meth:`Layout.selection`: read
                here, nothing selected again).
            regularization: the controller's ``ε``.
        """
        A, b, A_eq, b_eq, h, lb, ub, G, C, d, Bhat = selection
        squares = np.einsum("ij,ij->j", A, A)
        red = _reduce(layout, A, b, A_eq, b_eq, regularization * squares + 1e-12)
        if red is None:
            return None
        xi = np.zeros(red.A.shape[1])
        Z: np.ndarray | None = None  # None: the identity (level 0)
        constraints = None
        last = len(layout.levels) - 1
        above = np.zeros_like(squares)  # Σ over this level and the levels above of ‖A[:, i]‖²
        floor = np.einsum("ij,ij->j", Bhat, Bhat)  # ‖B̂[:, i]‖²: the accelerations an input produces
        for k, rows in enumerate(layout.levels):
            above += np.einsum("ij,ij->j", A[rows], A[rows])
            r = regularization * (above if k == last else above + floor) + 1e-12  # from the levels ≤ k only
            R, rho = red.regularization_rows(r)
            A_k = red.A[rows]
            M = A_k if Z is None else A_k @ Z
            c = red.b[rows] - A_k @ xi
            RZ = R if Z is None else R @ Z
            rho = rho - R @ xi
            H = M.T @ M + RZ.T @ RZ
            z = _spd_solve(H, M.T @ c + RZ.T @ rho)
            candidate = None if z is None else xi + (z if Z is None else Z @ z)
            if candidate is None or not bool((C @ (red.T @ candidate + red.u0) <= d).all()):  # C u ≤ d
                if constraints is None:
                    constraints = self._constraints(G, red, h, lb, ub)
                z = self._level_qp(M, c, RZ, rho, Z, xi, constraints, red)
                if z is None:
                    if k == 0:
                        return None
                    z = np.zeros(M.shape[1])  # keep the levels above's solution (feasible)
                candidate = xi + (z if Z is None else Z @ z)
            xi = candidate
            if k < last:  # the directions this level leaves free, decided by the levels below
                V0 = self._free_directions(A_k, M)
                Z = V0 if Z is None else Z @ V0
                if Z.shape[1] == 0:
                    break
        return red.T @ xi + red.u0

    def _free_directions(self, A_k: np.ndarray, M: np.ndarray) -> np.ndarray:
        """An orthonormal basis (in the current level's variables) of the null space of ``M``: the
        directions that leave this level's task values unchanged, from one SVD."""
        _, s, Vt = np.linalg.svd(M, full_matrices=True)
        scale = max(float(np.linalg.norm(A_k)), 1e-300)
        rank = int(np.sum(s > self.rank_tolerance * scale))
        return Vt[rank:].T

    @staticmethod
    def _constraints(G: np.ndarray, red: _Reduced, h, lb, ub):
        """The inequalities ``G u ≤ h`` and bounds as rows ``C_ξ ξ ≤ e`` in the scaled reduced
        variables, and the bounds on ξ that stay bounds (at level 0: the actuator block), computed once
        per step."""
        rows, rhs = [G @ red.T], [h - G @ red.u0]
        n_xi = red.T.shape[1]
        xi_lb, xi_ub = np.full(n_xi, -np.inf), np.full(n_xi, np.inf)
        first = n_xi if red.tau_block else 0
        if red.tau_block:  # u[:n_xi] = ξ / D: bounds stay bounds
            scale = 1.0 / np.diag(red.T[:n_xi])
            xi_lb, xi_ub = lb[:n_xi] * scale, ub[:n_xi] * scale
        T_rest, u0_rest = red.T[first:], red.u0[first:]
        for sign, bound in ((1.0, ub[first:]), (-1.0, -lb[first:])):
            finite = np.isfinite(bound)
            if finite.any():
                rows.append(sign * T_rest[finite])
                rhs.append(bound[finite] - sign * u0_rest[finite])
        return np.vstack(rows), np.concatenate(rhs), xi_lb, xi_ub

    def _level_qp(self, M, c, RZ, rho, Z, xi, constraints, red: _Reduced) -> np.ndarray | None:
        """The level's QP in ``z`` (``ξ = ξ* + Z z``), solved by the backend; None if it fails."""
        C, e, xi_lb, xi_ub = constraints
        n_z = M.shape[1]
        if Z is None:
            G, h, lb, ub = C, e - C @ xi, xi_lb - xi, xi_ub - xi
        else:  # the bounds on ξ become rows in z
            G = np.vstack((C @ Z, Z, -Z))
            h = np.concatenate((e - C @ xi, xi_ub - xi, xi - xi_lb))
            # z = 0 (the levels above's solution) is feasible up to round-off: rows z cannot move are left
            # out, and every slack is at least the shortcut's tolerance, so that round-off (a slack of
            # −1e-13, a binding row and its opposite) never makes this level look infeasible
            norms = np.sqrt(np.einsum("ij,ij->i", G, G))
            keep = np.isfinite(h) & (norms > 1e-12 * max(float(norms.max(initial=0.0)), 1e-300))
            G, h = G[keep], np.maximum(h[keep], self.solver.unconstrained_tolerance)
            lb, ub = np.full(n_z, -np.inf), np.full(n_z, np.inf)
        problem = QPProblem(
            np.vstack((M, RZ)),
            np.concatenate((c, rho)),
            np.zeros(n_z),
            np.zeros((0, n_z)),
            np.zeros(0),
            G,
            h,
            lb,
            ub,
            {},
            [],
            [None] * G.shape[0],
        )
        return self._accepted(problem)

    def _accepted(self, problem: QPProblem) -> np.ndarray | None:
        """The backend's solution of a level's QP if finite and feasible to the controller's tolerance.

        The level's variables are already scaled (``Z`` is orthonormal in the Jacobi-scaled ``ξ``), so
        the backend is called directly first; rescaling a level's own columns can make a degenerate
        level (a binding row and its opposite) look infeasible to an active-set solver. The solver's
        full path (with its own scaling) is the second try.
        """
        try:
            sol = self.solver.solve_as_posed(problem)
        except (ValueError, RuntimeError, ArithmeticError):
            self.solver.reset()
            sol = None
        if (
            sol is not None
            and sol.found
            and sol.x is not None
            and np.isfinite(sol.x).all()
            and problem.violation(sol.x) <= self.fallback.feasibility_tolerance
        ):
            return sol.x
        return self.fallback.accepted(problem, self.solver, shortcut=False)
