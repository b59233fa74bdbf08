"""The reduced QP in the inputs ``u = (τ, f)`` and the solvers behind it.

Building the problem is separate from solving it, so a user can inspect it::

    minimize    ½ uᵀ H u + gᵀ u          (H = AᵀA + εI, g = −Aᵀb: the stacked weighted task rows)
    subject to  A_eq u = b_eq             (active contacts do not accelerate)
                G u ≤ h                   (friction cones, CoP, normal-force limits)
                lb ≤ u ≤ ub               (torque limits on τ; f unbounded here)

Solvers (:func:`make_solver`): ``"proxqp"`` (ProxSuite dense, warm-started from the previous
step), ``"daqp"`` (dual active set, exact), ``"quadprog"`` (Goldfarb-Idnani), ``"osqp"`` (ADMM, via
qpsolvers) and any other qpsolvers backend as ``"qpsolvers:<name>"``. The default is chosen by
measurement (README, controller section).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Optional

import numpy as np

from .errors import InputError

__all__ = ["QPProblem", "QPSolution", "QPSolver", "make_solver", "SOLVERS", "DEFAULT_SOLVER"]

SOLVERS = ("proxqp", "daqp", "quadprog", "osqp")
DEFAULT_SOLVER = "daqp"
_INF = 1e20


@dataclasses.dataclass
class QPProblem:
    """One control step's QP (dense numpy arrays) and the meaning of its parts.

    Attributes:
        H, g: cost (n, n), (n,).
        A_eq, b_eq: equalities (m_eq, n), (m_eq,).
        G, h: inequalities (m_in, n), (m_in,).
        lb, ub: bounds (n,) (±inf where unbounded).
        variables: name -> slice of ``u`` (``"tau"`` and each active contact's name).
        eq_groups: name of the contact each equality row belongs to (m_eq,).
        in_groups: group of each inequality row, e.g. ``"friction:left_sole_link"`` (m_in,).
    """

    H: np.ndarray
    g: np.ndarray
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
        return self.g.shape[0]

    def objective(self, u: np.ndarray) -> float:
        return float(0.5 * u @ self.H @ u + self.g @ u)

    def violation(self, u: np.ndarray) -> float:
        """Largest constraint violation of ``u`` (0 when feasible)."""
        parts = [0.0]
        if self.A_eq.size:
            parts.append(np.abs(self.A_eq @ u - self.b_eq).max())
        if self.G.size:
            parts.append((self.G @ u - self.h).max())
        parts.append((self.lb - u).max(initial=0.0))
        parts.append((u - self.ub).max(initial=0.0))
        return float(max(parts))

    def without(self, *groups: str) -> "QPProblem":
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
            self, A_eq=A_eq, b_eq=b_eq, G=self.G[keep], h=self.h[keep], lb=lb, ub=ub,
            eq_groups=eq_groups, in_groups=[self.in_groups[i] for i in keep],
        )

    def soften_equalities(self, weight: float) -> "QPProblem":
        """A copy whose equalities become the cost term ``weight/2 ‖A_eq u − b_eq‖²``."""
        H = self.H + weight * self.A_eq.T @ self.A_eq
        g = self.g - weight * self.A_eq.T @ self.b_eq
        return dataclasses.replace(self, H=H, g=g, A_eq=self.A_eq[:0], b_eq=self.b_eq[:0], eq_groups=[])


@dataclasses.dataclass
class QPSolution:
    """A solver's answer: ``x`` (n,) when ``found``."""

    x: Optional[np.ndarray]
    found: bool
    solver: str


def jacobi_scaled(problem: QPProblem) -> tuple[QPProblem, np.ndarray]:
    """The problem in the variables ``z = D u`` with ``D = √diag(H)``, so that the scaled Hessian
    has a unit diagonal, and ``D⁻¹`` (n,) to map the solution back (``u = D⁻¹ z``).

    Joint torques (N m), forces (N) and very light joints give Hessians whose diagonal spans many
    orders of magnitude; solvers with absolute tolerances fail on them, not on the scaled problem.
    """
    d = np.sqrt(np.maximum(np.diag(problem.H), 1e-300))
    inv = 1.0 / d
    scaled = dataclasses.replace(
        problem,
        H=problem.H * inv[:, None] * inv[None, :],
        g=problem.g * inv,
        A_eq=problem.A_eq * inv[None, :],
        G=problem.G * inv[None, :],
        lb=problem.lb * d,
        ub=problem.ub * d,
    )
    return scaled, inv


class QPSolver:
    """Interface of the solvers: ``solve(problem) -> QPSolution``; ``reset()`` drops warm starts.

    Every solver works on the Jacobi-scaled problem (:func:`jacobi_scaled`) and returns the
    solution in the problem's own units.
    """

    name = "?"

    def solve(self, problem: QPProblem) -> QPSolution:
        scaled, inv = jacobi_scaled(problem)
        sol = self._solve(scaled)
        if sol.found and sol.x is not None:
            sol.x = sol.x * inv
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
        self._dims: Optional[tuple[int, int, int]] = None

    def reset(self) -> None:
        self._qp, self._dims = None, None

    def _solve(self, problem: QPProblem) -> QPSolution:
        proxqp = self._proxqp
        n, m_eq, m_in = problem.n, problem.A_eq.shape[0], problem.G.shape[0]
        args = (problem.H, problem.g, problem.A_eq, problem.b_eq, problem.G,
                np.full(m_in, -_INF), problem.h, _finite_or_big(problem.lb), _finite_or_big(problem.ub))
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
            raise InputError(f"qpsolvers has no solver {backend!r}; available: {', '.join(qpsolvers.available_solvers)}")
        self._qpsolvers = qpsolvers
        self.name = backend
        self.options = options
        self._last: Optional[np.ndarray] = None

    def reset(self) -> None:
        self._last = None

    def _solve(self, problem: QPProblem) -> QPSolution:
        qp = self._qpsolvers.Problem(
            problem.H, problem.g, problem.G if problem.G.size else None, problem.h if problem.G.size else None,
            problem.A_eq if problem.A_eq.size else None, problem.b_eq if problem.A_eq.size else None,
            problem.lb, problem.ub,
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

    ``"osqp"`` defaults to tight tolerances (``eps_abs = eps_rel = 1e-8``, polishing) so that its
    answer matches the exact solvers; pass options to change them.
    """
    if name == "proxqp":
        return ProxQPSolver(**options)
    if name == "daqp":
        return DaqpSolver(**options)
    if name == "quadprog":
        return QuadprogSolver(**options)
    if name == "osqp":
        opts = {"eps_abs": 1e-8, "eps_rel": 1e-8, "eps_prim_inf": 1e-12, "eps_dual_inf": 1e-12,
                "polishing": True, "max_iter": 200000, "verbose": False}
        opts.update(options)
        return QpsolversSolver("osqp", **opts)
    if name.startswith("qpsolvers:"):
        return QpsolversSolver(name.split(":", 1)[1], **options)
    raise InputError(f"unknown solver {name!r}; choose one of {', '.join(SOLVERS)} or 'qpsolvers:<name>'")


