"""The controller's common case in one compiled call: the shortcut and its feasibility check.

:func:`~wbc.control.qp.least_squares_by_elimination` and :meth:`~wbc.control.builder.Layout.feasible`
are some twenty numpy/LAPACK calls on a problem of a few dozen variables: their Python overhead is
most of their cost. ``shortcut.c`` (next to this module) does the same arithmetic in one C call:
compiled once per machine through the kernel cache (:func:`~wbc.codegen.cache.cached_source_library`,
``-O2``), called through ctypes with one pointer to a struct of pointers into the kernel's output
buffers and preallocated arrays (no copies, no allocation per step).

When the minimizer fails the check (an inequality binds), :meth:`CompiledShortcut.screened` solves
the QP on a working set of rows (those violated at the minimizer, grown by the rows violated at each
answer until none is): the QP is in the actuator variables alone (the forces eliminated through the
Delassus matrix, reusing the shortcut's factors), and its answer, feasible for every row, is the
full QP's solution (a convex QP's minimizer over a superset of the feasible set that is feasible).

Used when the equalities are eliminable (the active contacts' no-acceleration rows); a layout with
inactive contacts (a lifted foot) runs on copies of its active rows and columns, gathered before
each call. Otherwise, and without a C compiler, the numpy path runs (:meth:`CompiledShortcut.build`
returns None).
"""

from __future__ import annotations

import ctypes
import functools
import warnings
from importlib import resources
from pathlib import Path

import numpy as np

from ..codegen.cache import CacheUnavailable, cached_source_library, find_compiler
from ..errors import CompileError, WbcPerformanceWarning
from .builder import Layout
from .qp import QPProblem
from .solvers import DaqpSolver, QPSolver

__all__ = ["CompiledShortcut", "shortcut_library", "FEASIBLE", "INFEASIBLE", "FAILED"]

#: Return codes of ``wbc_shortcut``.
FEASIBLE, INFEASIBLE, FAILED = 0, 1, 2

#: Compiler flags of the routine (small, loops: -O2 pays, unlike on the large traced kernels).
FLAGS = ("-O2", "-fPIC", "-shared", "-fno-math-errno")

_P = ctypes.c_void_p
_BIG = 1e20  # what daqp takes for an infinite bound

#: The BLAS and LAPACK routines the C code calls, from SciPy's (``scipy.linalg.cython_blas``/``cython_lapack``).
_ROUTINES = ("dgemm", "dgemv", "dpotrf", "dpotrs")


class _Data(ctypes.Structure):
    _fields_ = [
        ("k", ctypes.c_int),
        ("p", ctypes.c_int),
        ("m", ctypes.c_int),
        ("nc", ctypes.c_int),
        ("nt", ctypes.c_int),
        ("reg", ctypes.c_double),
        *[
            (name, _P)
            for name in (
                "A",
                "b",
                "Aeq",
                "beq",
                "C",
                "G",
                "traced",
                "d",
                "u",
                "Cu",
                "L",
                "X",
                "R",
                "H",
                "Hfull",
                "rf",
                "W",
            )
        ],
        *[(name, _P) for name in _ROUTINES],
    ]


@functools.cache
def _routine_addresses() -> tuple[int, ...]:
    """The addresses of :data:`_ROUTINES` in SciPy's BLAS and LAPACK (their Cython C-API capsules)."""
    from scipy.linalg import cython_blas, cython_lapack

    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    out = []
    for name in _ROUTINES:
        capi = cython_blas.__pyx_capi__ if name in cython_blas.__pyx_capi__ else cython_lapack.__pyx_capi__
        capsule = capi[name]
        out.append(get_pointer(capsule, get_name(capsule)))
    return tuple(out)


def _load(path: Path):
    try:
        library = ctypes.CDLL(str(path))
        function = library.wbc_shortcut
    except (OSError, AttributeError) as e:
        raise CompileError(f"{path}: cannot load wbc_shortcut from it: {e}") from None
    function.argtypes = [ctypes.POINTER(_Data)]
    function.restype = ctypes.c_int
    return function


@functools.cache
def shortcut_library():
    """The compiled ``wbc_shortcut`` (a ctypes function), or None (with one warning) when it cannot be
    built: no C compiler, or no writable cache."""
    if find_compiler() is None:
        return None
    source = resources.files("wbc.control").joinpath("shortcut.c").read_text()
    try:
        return cached_source_library("wbc_shortcut", source, _load, flags=FLAGS)
    except (CompileError, CacheUnavailable) as e:
        warnings.warn(f"the compiled shortcut is unavailable ({e}); numpy runs it", WbcPerformanceWarning, stacklevel=2)
        return None


class CompiledShortcut:
    """The shortcut of one :class:`~wbc.control.builder.Layout` on one kernel's output buffers.

    Attributes:
        u: (n,) the minimizer of the last call (overwritten by the next).
        Cu: (n_c,) the products ``C u`` of the last call.
    """

    @classmethod
    def build(cls, layout: Layout, outputs: list[np.ndarray]) -> CompiledShortcut | None:
        """The compiled shortcut of ``layout``, or None when its layout needs the numpy path (equalities
        not eliminable, no force variable or no cost row) or no library is available."""
        if not layout.eliminable or layout.eq_rows.size == 0 or layout.cost_rows.size == 0:
            return None
        function = shortcut_library()
        return None if function is None else cls(function, layout, outputs)

    def __init__(self, function, layout: Layout, outputs: list[np.ndarray]) -> None:
        for a in (*outputs[0:5], outputs[11]):
            if not (a.flags.f_contiguous and a.dtype == np.float64):
                raise CompileError("the kernel's outputs must be column-major float64 buffers")
        self._gathers = _Gathers(layout, outputs)
        A, b, A_eq, b_eq, G, d = self._gathers.targets
        k, n = A.shape
        m = A_eq.shape[0]
        p = n - m
        self._function = function
        self.layout = layout
        self.p, self.m = p, m
        self._C = np.asfortranarray(layout._C)
        nc = self._C.shape[0]
        self._traced = layout._traced_at.astype(np.int64)
        self.u = np.zeros(n)
        self.Cu = np.zeros(nc)
        self._binding = np.zeros(nc, dtype=bool)  # rows at their bound in the last screened answer
        self.L = np.zeros((m, m), order="F")
        self.X = np.zeros((m, p + 1), order="F")
        self.R = np.zeros((k, p + 1), order="F")
        self.H = np.zeros((p, p + 1), order="F")
        self.Hfull = np.zeros((p, p), order="F")
        self.rf = np.zeros(m)
        self.W = np.zeros(max(m * (p + 1), int(layout._traced_at.size)))
        self._outputs = outputs  # keeps the buffers the struct points into alive
        self._A, self._G, self._d = A, G, d  # the layout's rows and columns (views or gathered copies)
        data = _Data(k, p, m, nc, int(self._traced.size), 0.0)
        for name, array in (
            ("A", A),
            ("b", b),
            ("Aeq", A_eq),
            ("beq", b_eq),
            ("C", self._C),
            ("G", G),
            ("traced", self._traced),
            ("d", d),
            ("u", self.u),
            ("Cu", self.Cu),
            ("L", self.L),
            ("X", self.X),
            ("R", self.R),
            ("H", self.H),
            ("Hfull", self.Hfull),
            ("rf", self.rf),
            ("W", self.W),
        ):
            setattr(data, name, array.ctypes.data)
        for name, address in zip(_ROUTINES, _routine_addresses()):
            setattr(data, name, address)
        self._data = data
        self._ref = ctypes.byref(data)

    def __call__(self, regularization: float) -> int:
        """Run on the kernel's current outputs: :data:`FEASIBLE` (``u`` solves the QP),
        :data:`INFEASIBLE` (``u`` is finite, some row of ``C u ≤ d`` fails) or :data:`FAILED`."""
        self._data.reg = regularization
        self._gathers()
        return self._function(self._ref)

    # ----------------------------------------------------------------------------- binding rows
    def screened(self, solver: QPSolver, tolerance: float, max_rounds: int = 10) -> np.ndarray | None:
        """After an :data:`INFEASIBLE` call: the QP's solution ``u`` (n,) found on a growing working set
        of rows (module docstring), or None (the solver failed, or the set stopped growing while a row
        still fails: the caller then solves the full QP). ``tolerance`` is the one traced into ``d``.

        The working set starts from the rows violated now and those binding in the previous answer
        (a warm start: a bound that binds usually binds for many steps, and one solve then suffices;
        any superset of rows gives the same answer once that answer satisfies every row).

        The QP in the actuators ``x`` is ``½ xᵀH x − gᵀx`` (``H``, ``g`` from the call) under the rows
        ``(C_x − C_f X_x) x ≤ d − tolerance − C_f X_b``; daqp gets it directly (Jacobi-scaled); any
        other solver as a :class:`~wbc.control.qp.QPProblem` in cost rows."""
        p = self.p
        C = self._C
        if self._traced.size:
            C = C.copy()
            C[self._traced] = self._G
        d = self._d
        Xx, Xb = self.X[:, :p], self.X[:, p]
        working = (self.Cu > d) | self._binding
        self._binding[:] = False
        for _ in range(max_rounds):
            rows = np.flatnonzero(working)
            Cs = C[rows]
            Cf = Cs[:, p:]
            G, h = Cs[:, :p] - Cf @ Xx, d[rows] - tolerance - Cf @ Xb
            x = self._daqp(solver, G, h) if isinstance(solver, DaqpSolver) else self._generic(solver, G, h, rows)
            if x is None or not np.isfinite(x).all():
                return None
            u = np.concatenate([x, Xb - Xx @ x])
            Cu = C @ u
            violated = Cu > d
            if not (violated & ~working).any():
                if violated.any():
                    return None
                np.greater(Cu, d - 2.0 * tolerance, out=self._binding)
                return u
            working |= violated
        return None

    def _daqp(self, solver: DaqpSolver, G: np.ndarray, h: np.ndarray) -> np.ndarray | None:
        H = self.Hfull
        scale = 1.0 / np.sqrt(np.diagonal(H))
        Hs = H * np.multiply.outer(scale, scale)  # H is exactly symmetric (shortcut.c)
        m = h.size
        x, _, exitflag, _ = solver._daqp.solve(
            Hs,
            -scale * self.H[:, self.p],
            G * scale,
            np.minimum(h, _BIG),
            np.full(m, -_BIG),
            np.zeros(m, dtype=solver._c_int),
        )
        return np.asarray(x) * scale if exitflag > 0 else None

    def _generic(self, solver: QPSolver, G: np.ndarray, h: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        p, layout = self.p, self.layout
        R, rf, A = self.R, self.rf, self._A
        sr = np.sqrt(rf)
        groups = [*layout.in_groups, *self._bound_row_groups()]
        free = np.full(p, np.inf)
        problem = QPProblem(
            np.vstack([R[:, :p], sr[:, None] * self.X[:, :p]]),
            np.concatenate([R[:, p], sr * self.X[:, p]]),
            self._data.reg * np.einsum("ij,ij->j", A[:, :p], A[:, :p]) + 1e-12,
            np.zeros((0, p)),
            np.zeros(0),
            G,
            h,
            -free,
            free,
            {},
            [],
            [groups[i] for i in rows],
        )
        solution = solver.solve(problem, shortcut=False)
        return solution.x if solution.found else None

    def _bound_row_groups(self) -> list:
        """The groups of the bound rows of ``C`` (upper, then lower), in their order."""
        groups = [g for g in self.layout.bound_groups if g is not None]
        if len(groups) != (self._C.shape[0] - self.layout.in_rows.size) // 2:
            raise CompileError("the layout's bound rows do not match its feasibility matrix")
        return groups + groups


class _Gathers:
    """The kernel buffers of one layout's active rows and columns, in the shortcut's shapes.

    Where the layout uses a buffer whole (every row and column active), its target is the buffer
    itself; otherwise a preallocated column-major copy, refilled by each call (one ``np.take`` of
    precomputed flat indices per buffer: a walking robot in single support drops the lifted foot's
    force columns, equality rows and inequality rows).

    Attributes:
        targets: ``(A, b, A_eq, b_eq, G, d)``: costs (k, n), (k,); contact equalities (m, n), (m,);
            the traced inequality rows (n_t, n); right-hand sides of ``C u ≤ d`` (n_c,).
    """

    def __init__(self, layout: Layout, outputs: list[np.ndarray]) -> None:
        A, b, A_eq, b_eq, G, d = (*outputs[0:5], outputs[11])
        columns = None if layout.all_columns else layout.columns
        cost = None if layout.all_cost else layout.cost_rows
        eq = None if layout.all_eq else layout.eq_rows
        traced = None if layout._all_traced or not layout._traced_at.size else layout._traced_from
        self._plan: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (source, flat indices, target)
        self.targets = (
            self._matrix(A, cost, columns),
            self._vector(b, cost),
            self._matrix(A_eq, eq, columns),
            self._vector(b_eq, eq),
            self._matrix(G, traced, columns),
            self._vector(d, layout._d_rows),
        )

    def _matrix(self, M: np.ndarray, rows, columns) -> np.ndarray:
        if rows is None and columns is None:
            return M
        r = np.arange(M.shape[0]) if rows is None else np.asarray(rows)
        c = np.arange(M.shape[1]) if columns is None else np.asarray(columns)
        target = np.zeros((r.size, c.size), order="F")
        flat = (r[:, None] + c[None, :] * M.shape[0]).ravel(order="F")
        self._plan.append((M.reshape(-1, order="F"), flat, target.reshape(-1, order="F")))
        return target

    def _vector(self, v: np.ndarray, rows) -> np.ndarray:
        if rows is None:
            return v
        target = np.zeros(len(rows))
        self._plan.append((v, np.asarray(rows, dtype=np.intp), target))
        return target

    def __call__(self) -> None:
        for source, flat, target in self._plan:
            np.take(source, flat, out=target)
