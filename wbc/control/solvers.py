"""QP backends behind one interface, and how a user chooses one.

Every backend goes through the same exact reductions (:meth:`QPSolver.solve`): first the minimizer
under the equalities alone, kept when every inequality and bound holds there (then it is the QP's
solution); otherwise the equalities are eliminated where they can be
(:func:`~wbc.control.qp.eliminate_equalities`), the variables scaled to a unit-diagonal Hessian
(:func:`~wbc.control.qp.jacobi_scaled`), and the backend solves (worst step of Talos' infeasible
collapse, ``python -m benchmarks.solvers``, one run:
daqp 47 ms, quadprog 66 ms, proxqp 0.69 s, osqp 1.1 s; every call bounded by iteration limits):

* :attr:`Solver.DAQP` (default, a core dependency): dual active set, exact to round-off, the fastest
  here and deterministic; the backend to use for control;
* :attr:`Solver.PROXQP` (extra ``proxqp``): ProxSuite dense, warm-started; fast on feasible steps
  but slower when a step is infeasible (diagnosis), and warm starting makes its answer depend on
  its history within its tolerance (``ProxQPSolver(warm_start=False)`` to avoid it); it does not
  converge within its iteration bounds on many steps once every joint's position and velocity
  limits add their rows (the fallback then applies);
* :attr:`Solver.QUADPROG` (extra ``quadprog``): Goldfarb-Idnani dual method, exact, about twice
  daqp's time;
* :attr:`Solver.OSQP` (extra ``osqp``): ADMM through qpsolvers, ~1e-5 accurate and an order of
  magnitude slower on these ill-conditioned problems: for comparisons, not for control;
* any qpsolvers backend: :attr:`Solver.QPSOLVERS` with ``backend="<name>"`` (or the string
  ``"qpsolvers:<name>"``; extra ``qpsolvers``).

:func:`make_solver` resolves a choice (a :class:`Solver`, its value, ``"qpsolvers:<name>"`` or a
:class:`QPSolver` object) once, into a solver object; a backend whose package is missing raises
:class:`~wbc.errors.MissingDependency` naming the extra to install.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import warnings
from types import ModuleType
from typing import Any

import numpy as np

from ..errors import InputError, MissingDependency
from .qp import QPProblem, eliminate_equalities, equality_constrained_least_squares, feasible, jacobi_scaled

__all__ = ["Solver", "QPSolver", "QPSolution", "make_solver", "DEFAULT_SOLVER"]

_INF = 1e20


class Solver(enum.Enum):
    """The built-in QP backends."""

    DAQP = "daqp"
    PROXQP = "proxqp"
    QUADPROG = "quadprog"
    OSQP = "osqp"
    QPSOLVERS = "qpsolvers"  #: any qpsolvers backend, named by ``make_solver(..., backend=...)``


DEFAULT_SOLVER = Solver.DAQP


def _require(module: str, extra: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependency` naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependency(
            f"this QP backend needs the Python package {module.split('.')[0]!r}: pip install 'wbc[{extra}]'"
        ) from None


@dataclasses.dataclass
class QPSolution:
    """A solver's answer: ``x`` (n,) when ``found``; ``unconstrained`` when no constraint was active."""

    x: np.ndarray | None
    found: bool
    solver: str
    unconstrained: bool = False


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
    #: how far (problem units: m/s², rad/s², N, N m) the shortcut's solution may exceed an inequality:
    #: a bound met with equality (a joint resting at its position limit) leaves round-off of ~1e-9.
    #: It is traced into the kernel's ``d`` and floors a hierarchy level's slacks: set it on the solver
    #: instance before the controller compiles (e.g. 1e-9 to compare against an exact QP).
    unconstrained_tolerance = 1e-6

    def solve(self, problem: QPProblem, shortcut: bool | None = None) -> QPSolution:
        """Solve ``problem``; ``shortcut`` overrides ``try_unconstrained`` for this call."""
        if self.try_unconstrained if shortcut is None else shortcut:
            x = self.minimizer(problem.A, problem.b, problem.r, problem.A_eq, problem.b_eq)
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

    @staticmethod
    def minimizer(A, b, r, A_eq, b_eq) -> np.ndarray | None:
        """The minimizer of ``½‖A u − b‖² + ½ Σ rᵢuᵢ²`` under ``A_eq u = b_eq`` alone (inequalities
        ignored), the first reduction of :meth:`solve`
        (:func:`~wbc.control.qp.equality_constrained_least_squares`); None if singular."""
        return equality_constrained_least_squares(A, b, r, A_eq, b_eq)

    def solve_as_posed(self, problem: QPProblem) -> QPSolution:
        """The backend on ``problem`` as given: no shortcut, no elimination of the equalities, no
        scaling (for problems already reduced and scaled, such as a hierarchy level's)."""
        return self._solve(problem)

    def least_distance(
        self, M: np.ndarray, h: np.ndarray, y0: np.ndarray, active: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The least-distance problem ``min ½‖y‖² − y0ᵀy`` s.t. ``M y ≤ h``, warm-started.

        Args:
            M: (r, p) rows; h: (r,) right-hand sides (``+inf``: a row that never binds).
            y0: (p,) the unconstrained minimizer.
            active: (r,) bool, the rows believed active at the solution (a warm start; a hint only).

        Returns:
            ``(y, active)``: the minimizer (p,) and its active rows (r,) bool (none known: all False),
            or None when the backend finds no solution. This base implementation solves it as a
            :class:`~wbc.control.qp.QPProblem` (no warm start); backends override it when they can
            start from a working set (daqp).
        """
        p, r = y0.size, M.shape[0]
        problem = QPProblem(
            np.eye(p), y0, np.zeros(p), np.zeros((0, p)), np.zeros(0), M, h,
            np.full(p, -np.inf), np.full(p, np.inf), {}, [], [None] * r,
        )  # fmt: skip
        solution = self.solve(problem, shortcut=False)
        if not solution.found or solution.x is None:
            return None
        return solution.x, np.zeros(r, dtype=bool)

    def _solve(self, problem: QPProblem) -> QPSolution:
        raise NotImplementedError

    def reset(self) -> None:
        """Forget warm-start information."""


def _finite_or_big(x: np.ndarray) -> np.ndarray:
    return np.clip(x, -_INF, _INF)


class ProxQPSolver(QPSolver):
    """ProxSuite's dense ProxQP.

    Args:
        eps_abs: absolute accuracy, in the Jacobi-scaled variables (a unit-diagonal Hessian); tighter
            values make ProxQP crawl on the ill-conditioned steps that joint-limit rows bring.
        max_iter, max_iter_in: bounds on ProxQP's outer and inner iterations (at most their product
            inner iterations per solve): with its infeasibility
            detection on, they bound the worst case of a solve (``python -m benchmarks.solvers``
            measures it on Talos' infeasible collapse, where unbounded settings took minutes per QP).
        warm_start: start each solve from the previous solution when the sizes repeat (faster);
            the result then depends on the solver's history within ``eps_abs``. ``False`` makes it
            a function of the problem only (deterministic, like daqp).
    """

    name = "proxqp"

    def __init__(
        self, eps_abs: float = 1e-7, max_iter: int = 100, max_iter_in: int = 50, warm_start: bool = True
    ) -> None:
        self._proxqp = _require("proxsuite", "proxqp").proxqp
        self.eps_abs = eps_abs
        self.max_iter = max_iter
        self.max_iter_in = max_iter_in
        self.warm_start = warm_start
        self._qp: Any = None
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
            _finite_or_big(problem.h),
            _finite_or_big(problem.lb),
            _finite_or_big(problem.ub),
        )
        if not self.warm_start or self._dims != (n, m_eq, m_in):
            qp = proxqp.dense.QP(n, m_eq, m_in, True)
            qp.settings.eps_abs = self.eps_abs
            qp.settings.eps_rel = 0.0
            qp.settings.max_iter = self.max_iter
            qp.settings.max_iter_in = self.max_iter_in
            qp.settings.verbose = False
            # Infeasibility detection on, at 1e-6: ProxSuite's default 1e-4 declares some feasible
            # (ill-conditioned) steps infeasible; 1e-12 turns detection off and a solve then runs to its
            # iteration limits (seen: minutes per QP with unbounded limits).
            qp.settings.eps_primal_inf = 1e-6
            qp.settings.eps_dual_inf = 1e-6
            qp.init(*args)
            qp.solve()  # a first solve before any warm start (ProxSuite 0.8 may crash otherwise)
            if self.warm_start:
                qp.settings.initial_guess = proxqp.InitialGuess.WARM_START_WITH_PREVIOUS_RESULT
            self._qp, self._dims = qp, (n, m_eq, m_in)
        else:
            self._qp.update(*args)
            self._qp.solve()
        found = self._qp.results.info.status == proxqp.QPSolverOutput.PROXQP_SOLVED
        x = self._qp.results.x.copy() if found else None
        if not found or not self.warm_start:
            self.reset()
        return QPSolution(x, found, self.name)


class DaqpSolver(QPSolver):
    """DAQP, a dual active-set solver (exact to round-off); bounds are given as simple bounds."""

    name = "daqp"

    def __init__(self) -> None:
        from ctypes import c_int

        self._daqp = _require("daqp", "daqp")
        self._c_int = c_int
        self._eye = np.eye(0)
        self._lower = np.zeros(0)
        self._sense = np.zeros(0, dtype=c_int)

    def least_distance(
        self, M: np.ndarray, h: np.ndarray, y0: np.ndarray, active: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`QPSolver.least_distance` by daqp, its working set started from ``active`` (daqp's
        own form: an identity Hessian is its least-distance problem)."""
        p, r = y0.size, M.shape[0]
        if self._eye.shape[0] != p:
            self._eye = np.eye(p)
        if self._lower.size < r:
            self._lower = np.full(r, -_INF)
            self._sense = np.zeros(r, dtype=self._c_int)
        sense = self._sense[:r]
        sense[:] = False if active is None else active
        y, _, exitflag, info = self._daqp.solve(self._eye, -y0, M, np.minimum(h, _INF), self._lower[:r], sense)
        if exitflag <= 0:
            return None
        return y, np.asarray(info["lam"]) != 0.0

    def _solve(self, problem: QPProblem) -> QPSolution:
        n = problem.n
        m_eq, m_in = problem.A_eq.shape[0], problem.G.shape[0]
        A = np.vstack([problem.G, problem.A_eq]) if m_eq else problem.G
        upper = np.concatenate([_finite_or_big(problem.ub), _finite_or_big(problem.h), problem.b_eq])
        lower = np.concatenate([_finite_or_big(problem.lb), np.full(m_in, -_INF), problem.b_eq])
        sense = np.zeros(n + m_in + m_eq, dtype=self._c_int)
        sense[n + m_in :] = 5  # equality
        x, _, exitflag, _ = self._daqp.solve(problem.H, problem.g, A, upper, lower, sense)
        found = bool(exitflag > 0)
        return QPSolution(np.asarray(x) if found else None, found, self.name)


class QuadprogSolver(QPSolver):
    """quadprog (Goldfarb-Idnani dual method); needs a positive-definite ``H``."""

    name = "quadprog"

    def __init__(self) -> None:
        self._quadprog = _require("quadprog", "quadprog")

    def _solve(self, problem: QPProblem) -> QPSolution:
        n = problem.n
        binding = np.isfinite(problem.h)  # rows with h = +inf never bind
        rows, rhs = [problem.A_eq, -problem.G[binding]], [problem.b_eq, -problem.h[binding]]
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
        qpsolvers = _require("qpsolvers", "qpsolvers")
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
            _finite_or_big(problem.h) if problem.G.size else None,
            problem.A_eq if problem.A_eq.size else None,
            problem.b_eq if problem.A_eq.size else None,
            problem.lb,
            problem.ub,
        )
        last = self._last if self._last is not None and self._last.shape == (problem.n,) else None
        with warnings.catch_warnings():  # dense-to-sparse conversion notices of sparse backends
            warnings.simplefilter("ignore")
            sol = self._qpsolvers.solve_problem(qp, solver=self.name, initvals=last, **self.options)
        found = bool(sol.found) and sol.x is not None and bool(np.all(np.isfinite(sol.x)))
        self._last = sol.x if found else None
        return QPSolution(np.asarray(sol.x) if found else None, found, self.name)


def make_solver(choice: Solver | str | QPSolver = DEFAULT_SOLVER, **options) -> QPSolver:
    """A solver object from a choice: a :class:`Solver` (or its value, e.g. ``"proxqp"``),
    :attr:`Solver.QPSOLVERS` with ``backend="<name>"`` (also written ``"qpsolvers:<name>"``), or a
    :class:`QPSolver` (returned as is).

    ``Solver.OSQP`` defaults to tight tolerances (``eps_abs = eps_rel = 1e-8``) so that its answer
    matches the exact solvers; pass options to change them.

    Raises:
        InputError: an unknown choice, or qpsolvers without a backend.
        MissingDependency: the backend's package is not installed (the message names the extra).
    """
    if isinstance(choice, QPSolver):
        if options:
            raise InputError("options are for a solver chosen by name; configure a QPSolver object directly")
        return choice
    if isinstance(choice, str) and choice.startswith(f"{Solver.QPSOLVERS.value}:"):  # the string form, resolved
        options = {"backend": choice.split(":", 1)[1], **options}
        choice = Solver.QPSOLVERS
    try:
        solver = Solver(choice)
    except ValueError:
        names = ", ".join(repr(s.value) for s in Solver)
        raise InputError(
            f"unknown solver {choice!r}; choose a wbc.Solver ({names}), 'qpsolvers:<name>' or a QPSolver object"
        ) from None
    if solver is Solver.QPSOLVERS:
        backend = options.pop("backend", None)
        if not isinstance(backend, str) or not backend:
            raise InputError("Solver.QPSOLVERS needs backend='<name>' (a qpsolvers backend, e.g. 'osqp')")
        return QpsolversSolver(backend, **options)
    if solver is Solver.PROXQP:
        return ProxQPSolver(**options)
    if solver is Solver.DAQP:
        return DaqpSolver(**options)
    if solver is Solver.QUADPROG:
        return QuadprogSolver(**options)
    opts = {
        "eps_abs": 1e-8,
        "eps_rel": 1e-8,
        "eps_prim_inf": 1e-6,
        "eps_dual_inf": 1e-6,
        "polishing": False,
        "max_iter": 4000,  # bounded: OSQP is slow on these problems (see benchmarks.solvers)
        "verbose": False,
    }
    opts.update(options)
    _require("osqp", "osqp")
    return QpsolversSolver("osqp", **opts)
