"""The reduced QP in the inputs ``u = (τ, f)`` and its exact reductions.

Building the problem is separate from solving it, so a user can inspect it::

    minimize    ½ ‖A u − b‖² + ½ Σᵢ rᵢ uᵢ²   (the stacked weighted cost rows; r a small regularization)
    subject to  A_eq u = b_eq                (e.g. active contacts do not accelerate)
                G u ≤ h                      (e.g. friction cones, CoP, normal-force limits)
                lb ≤ u ≤ ub                  (e.g. torque limits on τ)

so ``H = AᵀA + diag(r)`` and ``g = −Aᵀb`` (:attr:`QPProblem.H`, :attr:`QPProblem.g`). Every row and
bound keeps the :class:`~wbc.control.pieces.Group` of the piece it came from.

Exact reductions used by every solver (:mod:`wbc.control.solvers`): the minimizer under the
equalities alone (:func:`equality_constrained_least_squares`, or :func:`least_squares_by_elimination`
through the Delassus matrix), which is the QP's solution when it satisfies every inequality; the
elimination of the equalities through a symmetric positive-definite block
(:func:`eliminate_equalities`); Jacobi scaling to a unit-diagonal Hessian (:func:`jacobi_scaled`).
"""

from __future__ import annotations

import dataclasses
import enum
from functools import cached_property

import numpy as np
from scipy.linalg.lapack import dpotrf as _dpotrf
from scipy.linalg.lapack import dpotrs as _dpotrs

from .pieces import Group

__all__ = [
    "QPProblem",
    "eliminate_equalities",
    "Elimination",
    "jacobi_scaled",
    "equality_constrained_least_squares",
    "least_squares_by_elimination",
    "feasible",
]


@dataclasses.dataclass
class QPProblem:
    """One control step's QP (dense numpy arrays) and the meaning of its parts.

    Attributes:
        A, b: cost rows (k, n), (k,): minimize ``½ ‖A u − b‖² + ½ Σ rᵢ uᵢ²``.
        r: diagonal regularization (n,) (> 0).
        A_eq, b_eq: equalities (m_eq, n), (m_eq,).
        G, h: inequalities (m_in, n), (m_in,) (``h`` may hold ``+inf``: a row that never binds).
        lb, ub: bounds (n,) (±inf where unbounded).
        variables: name -> slice of ``u`` (``"tau"`` and each active contact's name).
        eq_groups: the group of each equality row (m_eq,).
        in_groups: the group of each inequality row (m_in,).
        bound_groups: the group of each variable's bounds, or None (n,).
    """

    A: np.ndarray
    b: np.ndarray
    r: np.ndarray
    A_eq: np.ndarray
    b_eq: np.ndarray
    G: np.ndarray
    h: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    variables: dict
    eq_groups: list
    in_groups: list
    bound_groups: list = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.bound_groups:
            self.bound_groups = [None] * self.n

    @property
    def n(self) -> int:
        return self.r.shape[0]

    @cached_property
    def H(self) -> np.ndarray:
        """``AᵀA + diag(r)`` (n, n)."""
        H = self.A.T @ self.A
        H.flat[:: self.n + 1] += self.r
        return H

    @cached_property
    def g(self) -> np.ndarray:
        """``−Aᵀb`` (n,)."""
        return -(self.A.T @ self.b)

    def is_finite(self) -> bool:
        """True when every matrix and vector is finite (``h`` and the bounds may hold infinities)."""
        finite = all(np.isfinite(x).all() for x in (self.A, self.b, self.r, self.A_eq, self.b_eq, self.G))
        return bool(
            finite and not np.isnan(self.h).any() and not np.isnan(self.lb).any() and not np.isnan(self.ub).any()
        )

    def objective(self, u: np.ndarray) -> float:
        res = self.A @ u - self.b
        return float(0.5 * res @ res + 0.5 * self.r @ (u * u))

    def violation(self, u: np.ndarray) -> float:
        """Largest constraint violation of ``u`` (0 when feasible; inf for a non-finite ``u``)."""
        if not np.all(np.isfinite(u)):
            return np.inf
        worst = max(0.0, float(np.max(self.lb - u, initial=0.0)), float(np.max(u - self.ub, initial=0.0)))
        if self.A_eq.shape[0]:
            worst = max(worst, float(np.max(np.abs(self.A_eq @ u - self.b_eq))))
        if self.G.shape[0]:
            worst = max(worst, float(np.max(self.G @ u - self.h)))
        return worst

    @property
    def kinds(self) -> list[enum.Enum]:
        """The kinds of constraint groups present (inequalities, then bounds), in order of appearance."""
        out: list[enum.Enum] = []
        for g in [*self.in_groups, *self.bound_groups]:
            if g is not None and g.kind not in out:
                out.append(g.kind)
        return out

    def without(self, *drop: Group | enum.Enum) -> QPProblem:
        """A copy without the inequalities and bounds of the given groups or kinds (an equality kind
        or group drops those equalities)."""

        def dropped(g: Group | None) -> bool:
            return g is not None and (g in drop or g.kind in drop)

        keep = [i for i, g in enumerate(self.in_groups) if not dropped(g)]
        free = np.array([dropped(g) for g in self.bound_groups], dtype=bool)
        lb, ub = self.lb.copy(), self.ub.copy()
        lb[free], ub[free] = -np.inf, np.inf
        bound_groups = [None if f else g for f, g in zip(free, self.bound_groups)]
        keep_eq = [i for i, g in enumerate(self.eq_groups) if not dropped(g)]
        return dataclasses.replace(
            self,
            A_eq=self.A_eq[keep_eq],
            b_eq=self.b_eq[keep_eq],
            G=self.G[keep],
            h=self.h[keep],
            lb=lb,
            ub=ub,
            eq_groups=[self.eq_groups[i] for i in keep_eq],
            in_groups=[self.in_groups[i] for i in keep],
            bound_groups=bound_groups,
        )

    def soften_equalities(self, weight: float) -> QPProblem:
        """A copy whose equalities become the cost rows ``√weight (A_eq u − b_eq)``."""
        w = np.sqrt(weight)
        return dataclasses.replace(
            self,
            A=np.vstack([self.A, w * self.A_eq]),
            b=np.concatenate([self.b, w * self.b_eq]),
            A_eq=self.A_eq[:0],
            b_eq=self.b_eq[:0],
            eq_groups=[],
        )


def jacobi_scaled(problem: QPProblem) -> tuple[QPProblem, np.ndarray]:
    """The problem in the variables ``z = D u`` with ``D = √diag(H)`` (a unit-diagonal Hessian),
    and ``D⁻¹`` (n,) to map a solution back (``u = D⁻¹ z``).

    Joint torques (N m), forces (N) and very light joints give Hessians whose diagonal spans many
    orders of magnitude; solvers with absolute tolerances fail on them, not on the scaled problem.
    """
    d = np.sqrt(np.einsum("ij,ij->j", problem.A, problem.A) + problem.r)
    inv = 1.0 / d
    scaled = dataclasses.replace(
        problem,
        A=problem.A * inv,
        r=problem.r * inv * inv,
        A_eq=problem.A_eq * inv,
        G=problem.G * inv,
        lb=problem.lb * d,
        ub=problem.ub * d,
    )
    return scaled, inv


class Elimination:
    """``u = (x, F x + f0)``: the equalities solved for the trailing variables (see :func:`eliminate_equalities`)."""

    def __init__(self, F: np.ndarray, f0: np.ndarray) -> None:
        self.F, self.f0 = F, f0

    def recover(self, x: np.ndarray) -> np.ndarray:
        return np.concatenate([x, self.F @ x + self.f0])


def eliminate_equalities(problem: QPProblem) -> tuple[QPProblem, Elimination | None]:
    """The problem without its equalities, when they can be solved for the trailing variables.

    With ``A_eq = [B₁, B₂]`` and ``B₂`` symmetric positive definite (for the controller: the
    Delassus matrix of the active contacts, when each contact's force variables are the rows of
    its motion constraint), ``u₂ = F u₁ + f₀`` with
    ``F = −B₂⁻¹B₁``, ``f₀ = B₂⁻¹b_eq``: exact, and the QP loses ``m_eq`` variables and all its
    equalities. The cost rows become ``A₁ + A₂F``, the regularization of ``u₂`` becomes rows
    ``√r₂ (F u₁ + f₀)``, and bounds on ``u₂`` become inequalities. Returns ``(problem, None)``
    unchanged when there are no equalities or ``B₂`` is not symmetric positive definite.
    """
    m, n = problem.A_eq.shape
    if m == 0 or m >= n:
        return problem, None
    k = n - m
    B2 = problem.A_eq[:, k:]
    scale = np.abs(B2).max()
    if np.abs(B2 - B2.T).max() > 1e-12 * scale:
        return problem, None
    try:
        L = np.linalg.cholesky(B2)
    except np.linalg.LinAlgError:
        return problem, None
    if np.diag(L).min() ** 2 < 1e-12 * scale:  # numerically singular
        return problem, None
    X = np.linalg.solve(B2, np.column_stack([problem.A_eq[:, :k], problem.b_eq]))
    F, f0 = -X[:, :k], X[:, k]
    A2 = problem.A[:, k:]
    sr2 = np.sqrt(problem.r[k:])
    A = np.vstack([problem.A[:, :k] + A2 @ F, sr2[:, None] * F])
    b = np.concatenate([problem.b - A2 @ f0, -sr2 * f0])
    G2 = problem.G[:, k:]
    G, h = [problem.G[:, :k] + G2 @ F], [problem.h - G2 @ f0]
    groups = list(problem.in_groups)
    eliminated_groups = problem.bound_groups[k:]
    for sign, bound in ((1.0, problem.ub[k:]), (-1.0, -problem.lb[k:])):
        finite = np.isfinite(bound)
        if finite.any():
            G.append(sign * F[finite])
            h.append(bound[finite] - sign * f0[finite])
            groups += [eliminated_groups[i] for i in np.flatnonzero(finite)]
    reduced = QPProblem(
        A,
        b,
        problem.r[:k],
        problem.A_eq[:0, :k],
        problem.b_eq[:0],
        G[0] if len(G) == 1 else np.vstack(G),
        h[0] if len(h) == 1 else np.concatenate(h),
        problem.lb[:k],
        problem.ub[:k],
        problem.variables,
        [],
        groups,
        problem.bound_groups[:k],
    )
    return reduced, Elimination(F, f0)


def equality_constrained_least_squares(A, b, r, A_eq, b_eq) -> np.ndarray | None:
    """The minimizer of ``½‖A u − b‖² + ½ Σ rᵢuᵢ²`` subject to ``A_eq u = b_eq`` (inequalities ignored).

    One solve of the KKT system in Jacobi-scaled variables; None if it is singular.
    """
    n, m = A.shape[1], A_eq.shape[0]
    d = np.sqrt(np.einsum("ij,ij->j", A, A) + r)
    As = A / d
    K = np.zeros((n + m, n + m))
    K[:n, :n] = As.T @ As
    K.flat[: n * (n + m) : n + m + 1] += r / (d * d)
    rhs = np.empty(n + m)
    rhs[:n] = As.T @ b
    if m:
        Aeq_s = A_eq / d
        K[:n, n:] = Aeq_s.T
        K[n:, :n] = Aeq_s
        rhs[n:] = b_eq
    try:
        z = np.linalg.solve(K, rhs)
    except np.linalg.LinAlgError:
        return None
    x = z[:n] / d
    return x if np.isfinite(x).all() else None


def least_squares_by_elimination(A_x, A_f, b, E_x, Lam, b_eq, regularization: float):
    """The equality-constrained least squares of :func:`equality_constrained_least_squares` when the
    equalities read ``E_x x + Λ f = b_eq`` with ``Λ`` symmetric positive definite (the Delassus
    matrix): ``f = Λ⁻¹(b_eq − E_x x)`` is substituted, leaving a Cholesky solve in ``x`` alone.

    The cost is ``½‖A_x x + A_f f − b‖² + ½ Σ rᵢuᵢ²`` with ``rᵢ = regularization · ‖A[:, i]‖² + 1e-12``,
    the controller's regularization. About 4x fewer flops than the KKT system; no explicit
    scaling is needed, Cholesky being insensitive to the diagonal scaling of an SPD matrix.

    Returns:
        ``(x, f)``, or None when a factorization fails.
    """
    p = A_x.shape[1]
    L, info = _dpotrf(Lam, lower=1, clean=0)
    if info:
        return None
    X, info = _dpotrs(L, np.column_stack((E_x, b_eq)), lower=1)  # [Λ⁻¹E_x, Λ⁻¹b_eq]
    if info:
        return None
    R = np.column_stack((A_x, b))
    R -= A_f @ X  # [A_x − A_f Λ⁻¹E_x, b − A_f Λ⁻¹b_eq]
    rf = regularization * np.einsum("ij,ij->j", A_f, A_f) + 1e-12
    HR = R[:, :p].T @ R  # [H | Aᵀb] of the substituted rows
    HR += X[:, :p].T @ (rf[:, None] * X)  # the forces' regularization, ½ Σ r_f f² with f = X_b − X_x x
    H = np.array(HR[:, :p])
    H.flat[:: p + 1] += regularization * np.einsum("ij,ij->j", A_x, A_x) + 1e-12
    C, info = _dpotrf(H, lower=1, clean=0, overwrite_a=1)
    if info:
        return None
    x, info = _dpotrs(C, HR[:, p], lower=1)
    if info:
        return None
    return x, X[:, p] - X[:, :p] @ x


def feasible(x: np.ndarray, G: np.ndarray, h: np.ndarray, lb: np.ndarray, ub: np.ndarray, tol: float) -> bool:
    """``x`` is finite, ``G x ≤ h`` and ``lb ≤ x ≤ ub`` within ``tol``."""
    if not np.isfinite(x).all() or (x < lb - tol).any() or (x > ub + tol).any():
        return False
    return not (G.shape[0] and (G @ x > h + tol).any())
