"""The reduced QP in the inputs ``u = (τ, f)`` and the solvers behind it.

Building the problem is separate from solving it, so a user can inspect it::

    minimize    ½ ‖A u − b‖² + ½ Σᵢ rᵢ uᵢ²   (the stacked weighted task rows; r a small regularization)
    subject to  A_eq u = b_eq                (active contacts do not accelerate)
                G u ≤ h                      (friction cones, CoP, normal-force limits)
                lb ≤ u ≤ ub                  (torque limits on τ; f unbounded here)

so ``H = AᵀA + diag(r)`` and ``g = −Aᵀb`` (:attr:`QPProblem.H`, :attr:`QPProblem.g`).

Every solver goes through the same exact reductions (:meth:`QPSolver.solve`): the equalities are
solved for the trailing variables when their block is square and invertible (the contact forces,
whose block is the Delassus matrix: :func:`eliminate_equalities`) and the variables are scaled to
a unit-diagonal Hessian (:func:`jacobi_scaled`). Before that, the minimizer under the equalities
alone is tried: a convex QP whose equality-constrained minimizer satisfies every inequality has it
as its solution (the usual case when standing: no friction, CoP or torque limit active; one KKT
solve, :func:`equality_constrained_least_squares`). Otherwise the backend solves:
``"daqp"`` (dual active set, exact; the default, by measurement: README, controller section),
``"proxqp"`` (ProxSuite dense, warm-started), ``"quadprog"`` (Goldfarb-Idnani), ``"osqp"`` (ADMM, via
qpsolvers; slow and ~1e-5 accurate on these ill-conditioned problems), or any qpsolvers backend
as ``"qpsolvers:<name>"``.
"""

from __future__ import annotations

import dataclasses
import warnings
from functools import cached_property

import numpy as np
from scipy.linalg.lapack import dpotrf as _dpotrf
from scipy.linalg.lapack import dpotrs as _dpotrs

from ..errors import InputError

__all__ = [
    "QPProblem",
    "QPSolution",
    "QPSolver",
    "make_solver",
    "eliminate_equalities",
    "jacobi_scaled",
    "equality_constrained_least_squares",
    "least_squares_by_elimination",
    "feasible",
    "SOLVERS",
    "DEFAULT_SOLVER",
]

SOLVERS = ("proxqp", "daqp", "quadprog", "osqp")
DEFAULT_SOLVER = "daqp"
_INF = 1e20


@dataclasses.dataclass
class QPProblem:
    """One control step's QP (dense numpy arrays) and the meaning of its parts.

    Attributes:
        A, b: cost rows (k, n), (k,): minimize ``½ ‖A u − b‖² + ½ Σ rᵢ uᵢ²``.
        r: diagonal regularization (n,) (> 0).
        A_eq, b_eq: equalities (m_eq, n), (m_eq,).
        G, h: inequalities (m_in, n), (m_in,).
        lb, ub: bounds (n,) (±inf where unbounded).
        variables: name -> slice of ``u`` (``"tau"`` and each active contact's name).
        eq_groups: name of the contact each equality row belongs to (m_eq,).
        in_groups: group of each inequality row, e.g. ``"friction:left_sole_link"`` (m_in,).
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

    def objective(self, u: np.ndarray) -> float:
        res = self.A @ u - self.b
        return float(0.5 * res @ res + 0.5 * self.r @ (u * u))

    def violation(self, u: np.ndarray) -> float:
        """Largest constraint violation of ``u`` (0 when feasible)."""
        worst = max(0.0, float(np.max(self.lb - u, initial=0.0)), float(np.max(u - self.ub, initial=0.0)))
        if self.A_eq.shape[0]:
            worst = max(worst, float(np.max(np.abs(self.A_eq @ u - self.b_eq))))
        if self.G.shape[0]:
            worst = max(worst, float(np.max(self.G @ u - self.h)))
        return worst

    def without(self, *groups: str) -> QPProblem:
        """A copy without the constraints of ``groups``: ``"torque_limits"`` (bounds), ``"contacts"``
        (equalities), or an inequality kind (``"friction"``, ``"cop"``, ``"normal_force"``)."""
        keep = [i for i, gname in enumerate(self.in_groups) if gname.split(":")[0] not in groups]
        lb, ub = self.lb, self.ub
        if "torque_limits" in groups:
            lb, ub = np.full_like(lb, -np.inf), np.full_like(ub, np.inf)
        A_eq, b_eq, eq_groups = self.A_eq, self.b_eq, self.eq_groups
        if "contacts" in groups:
            A_eq, b_eq, eq_groups = A_eq[:0], b_eq[:0], []
        return dataclasses.replace(
            self,
            A_eq=A_eq,
            b_eq=b_eq,
            G=self.G[keep],
            h=self.h[keep],
            lb=lb,
            ub=ub,
            eq_groups=eq_groups,
            in_groups=[self.in_groups[i] for i in keep],
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


@dataclasses.dataclass
class QPSolution:
    """A solver's answer: ``x`` (n,) when ``found``; ``unconstrained`` when no constraint was active."""

    x: np.ndarray | None
    found: bool
    solver: str
    unconstrained: bool = False


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
    for sign, bound in ((1.0, problem.ub[k:]), (-1.0, -problem.lb[k:])):
        finite = np.isfinite(bound)
        if finite.any():
            G.append(sign * F[finite])
            h.append(bound[finite] - sign * f0[finite])
            groups += ["normal_force"] * int(finite.sum())
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
    """``G x ≤ h`` and ``lb ≤ x ≤ ub`` within ``tol``."""
    if (x < lb - tol).any() or (x > ub + tol).any():
        return False
    return not (G.shape[0] and (G @ x > h + tol).any())


class QPSolver:
    """Interface of the solvers: ``solve(problem) -> QPSolution``; ``reset()`` drops warm starts.

    :meth:`solve` first solves the equality-constrained least squares and returns it when every
    inequality and bound holds there (``try_unconstrained``): then it is the QP's solution. Otherwise
    it eliminates the equalities where it can (``eliminate``), scales the variables and calls the
    backend (``_solve``); the solution it returns is in the original problem's variables and units.
    """

    name = "?"
    eliminate = True
    try_unconstrained = True
    #: how far (problem units: N, N m) the shortcut's solution may exceed an inequality
    unconstrained_tolerance = 1e-9

    def solve(self, problem: QPProblem, shortcut: bool | None = None) -> QPSolution:
        """Solve ``problem``; ``shortcut`` overrides ``try_unconstrained`` for this call."""
        if self.try_unconstrained if shortcut is None else shortcut:
            x = equality_constrained_least_squares(problem.A, problem.b, problem.r, problem.A_eq, problem.b_eq)
            if x is not None and feasible(
                x, problem.G, problem.h, problem.lb, problem.ub, self.unconstrained_tolerance
            ):
                return QPSolution(x, True, self.name, unconstrained=True)
        reduced, elimination = eliminate_equalities(problem) if self.eliminate else (problem, None)
        scaled, inv = jacobi_scaled(reduced)
        sol = self._solve(scaled)
        if sol.found and sol.x is not None:
            x = sol.x * inv
            sol.x = elimination.recover(x) if elimination is not None else x
        return sol

    def _solve(self, problem: QPProblem) -> QPSolution:
        raise NotImplementedError

    def reset(self) -> None:
        """Forget warm-start information."""


def _finite_or_big(x: np.ndarray) -> np.ndarray:
    return np.clip(x, -_INF, _INF)


class ProxQPSolver(QPSolver):
    """ProxSuite's dense ProxQP, warm-started from the previous solution when the sizes repeat."""

    name = "proxqp"

    def __init__(self, eps_abs: float = 1e-9, max_iter: int = 20000) -> None:
        from proxsuite import proxqp

        self._proxqp = proxqp
        self.eps_abs = eps_abs
        self.max_iter = max_iter
        self._qp = None
        self._dims: tuple[int, int, int] | None = None

    def reset(self) -> None:
        self._qp, self._dims = None, None

    def _solve(self, problem: QPProblem) -> QPSolution:
        proxqp = self._proxqp
        n, m_eq, m_in = problem.n, problem.A_eq.shape[0], problem.G.shape[0]
        args = (
            problem.H,
            problem.g,
            problem.A_eq,
            problem.b_eq,
            problem.G,
            np.full(m_in, -_INF),
            problem.h,
            _finite_or_big(problem.lb),
            _finite_or_big(problem.ub),
        )
        if self._dims != (n, m_eq, m_in):
            qp = proxqp.dense.QP(n, m_eq, m_in, True)
            qp.settings.eps_abs = self.eps_abs
            qp.settings.eps_rel = 0.0
            qp.settings.max_iter = self.max_iter
            qp.settings.verbose = False
            # The default infeasibility thresholds (1e-4) misfire on these ill-conditioned QPs.
            qp.settings.eps_primal_inf = 1e-12
            qp.settings.eps_dual_inf = 1e-12
            qp.init(*args)
            qp.solve()  # a first solve before any warm start (ProxSuite 0.8 may crash otherwise)
            qp.settings.initial_guess = proxqp.InitialGuess.WARM_START_WITH_PREVIOUS_RESULT
            self._qp, self._dims = qp, (n, m_eq, m_in)
        else:
            self._qp.update(*args)
            self._qp.solve()
        found = self._qp.results.info.status == proxqp.QPSolverOutput.PROXQP_SOLVED
        if not found:
            self.reset()
        return QPSolution(self._qp.results.x.copy() if found else None, found, self.name)


class DaqpSolver(QPSolver):
    """DAQP, a dual active-set solver (exact to round-off); bounds are given as simple bounds."""

    name = "daqp"

    def __init__(self) -> None:
        import daqp

        self._daqp = daqp
        from ctypes import c_int

        self._c_int = c_int

    def _solve(self, problem: QPProblem) -> QPSolution:
        n = problem.n
        m_eq, m_in = problem.A_eq.shape[0], problem.G.shape[0]
        A = np.vstack([problem.G, problem.A_eq]) if m_eq else problem.G
        upper = np.concatenate([_finite_or_big(problem.ub), problem.h, problem.b_eq])
        lower = np.concatenate([_finite_or_big(problem.lb), np.full(m_in, -_INF), problem.b_eq])
        sense = np.zeros(n + m_in + m_eq, dtype=self._c_int)
        sense[n + m_in :] = 5  # equality
        x, _, exitflag, _ = self._daqp.solve(problem.H, problem.g, A, upper, lower, sense)
        found = exitflag > 0
        return QPSolution(np.asarray(x) if found else None, found, self.name)


class QuadprogSolver(QPSolver):
    """quadprog (Goldfarb-Idnani dual method); needs a positive-definite ``H``."""

    name = "quadprog"

    def __init__(self) -> None:
        import quadprog

        self._quadprog = quadprog

    def _solve(self, problem: QPProblem) -> QPSolution:
        n = problem.n
        rows, rhs = [problem.A_eq, -problem.G], [problem.b_eq, -problem.h]
        lo, up = np.isfinite(problem.lb), np.isfinite(problem.ub)
        rows += [np.eye(n)[lo], -np.eye(n)[up]]
        rhs += [problem.lb[lo], -problem.ub[up]]
        C = np.vstack(rows)
        try:
            x = self._quadprog.solve_qp(problem.H, -problem.g, C.T, np.concatenate(rhs), problem.A_eq.shape[0])[0]
        except ValueError:
            return QPSolution(None, False, self.name)
        return QPSolution(x, True, self.name)


class QpsolversSolver(QPSolver):
    """Any qpsolvers backend (e.g. ``"osqp"``), with its options; warm-started where it supports it."""

    def __init__(self, backend: str, **options) -> None:
        import qpsolvers

        if backend not in qpsolvers.available_solvers:
            raise InputError(
                f"qpsolvers has no solver {backend!r}; available: {', '.join(qpsolvers.available_solvers)}"
            )
        self._qpsolvers = qpsolvers
        self.name = backend
        self.options = options
        self._last: np.ndarray | None = None

    def reset(self) -> None:
        self._last = None

    def _solve(self, problem: QPProblem) -> QPSolution:
        qp = self._qpsolvers.Problem(
            problem.H,
            problem.g,
            problem.G if problem.G.size else None,
            problem.h if problem.G.size else None,
            problem.A_eq if problem.A_eq.size else None,
            problem.b_eq if problem.A_eq.size else None,
            problem.lb,
            problem.ub,
        )
        last = self._last if self._last is not None and self._last.shape == (problem.n,) else None
        with warnings.catch_warnings():  # dense-to-sparse conversion notices of sparse backends
            warnings.simplefilter("ignore")
            sol = self._qpsolvers.solve_problem(qp, solver=self.name, initvals=last, **self.options)
        found = bool(sol.found) and sol.x is not None and np.all(np.isfinite(sol.x))
        self._last = sol.x if found else None
        return QPSolution(np.asarray(sol.x) if found else None, found, self.name)


def make_solver(name: str = DEFAULT_SOLVER, **options) -> QPSolver:
    """A solver by name: one of :data:`SOLVERS` or ``"qpsolvers:<backend>"``.

    ``"osqp"`` defaults to tight tolerances (``eps_abs = eps_rel = 1e-8``) so that its
    answer matches the exact solvers; pass options to change them.
    """
    if name == "proxqp":
        return ProxQPSolver(**options)
    if name == "daqp":
        return DaqpSolver(**options)
    if name == "quadprog":
        return QuadprogSolver(**options)
    if name == "osqp":
        opts = {
            "eps_abs": 1e-8,
            "eps_rel": 1e-8,
            "eps_prim_inf": 1e-12,
            "eps_dual_inf": 1e-12,
            "polishing": False,
            "max_iter": 200000,
            "verbose": False,
        }
        opts.update(options)
        return QpsolversSolver("osqp", **opts)
    if name.startswith("qpsolvers:"):
        return QpsolversSolver(name.split(":", 1)[1], **options)
    raise InputError(f"unknown solver {name!r}; choose one of {', '.join(SOLVERS)} or 'qpsolvers:<name>'")
