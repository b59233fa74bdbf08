"""The controller's common step in one compiled call: input checks, kernel, shortcut, command.

:func:`~wbc.control.qp.least_squares_by_elimination` and :meth:`~wbc.control.builder.Layout.feasible`
are some twenty numpy/LAPACK calls on a problem of a few dozen variables: their Python overhead is
most of their cost. ``shortcut.c`` (next to this module) does the same arithmetic in one C call:
compiled once per machine through the kernel cache (:func:`~wbc.codegen.cache.cached_source_library`,
``-O3``), called through ctypes with the address of a struct of pointers into the kernel's buffers
and preallocated arrays (no copies, no allocation per step). The rows of ``C u ≤ d`` are taken by
kind: constant rows over their nonzero columns only, bounds (``±u_j``) as comparisons, traced rows
from the kernel's ``G``.

:meth:`CompiledShortcut.fuse` attaches the controller's kernel: its CasADi-generated C function is
called from C directly (its address from the kernel's library), so that one call
(``wbc_step_objects``, with the GIL held) reads ``q`` and ``v`` through the buffer protocol when they
are contiguous float64 vectors (anything else: the caller converts them), checks them (finite, unit
quaternions: the caller names a culprit), runs the kernel, the shortcut, and writes the command
(``u``, ``q̈ = a₀ + B̂u``, the task errors, the contacts' normal forces, the C-side timings) into one
block the controller copies once.

When the minimizer fails the check (an inequality binds), :meth:`CompiledShortcut.screened` solves
the QP on a working set of rows (those violated at the minimizer and those active at the previous
binding step's answer, grown by the rows violated at each answer until none is): the QP is in the
actuator variables alone (the forces eliminated through the Delassus matrix), handed to daqp in
least-distance form built in C from the shortcut's Cholesky factor (warm-started with the previous
active rows), and its answer, feasible for every row, is the full QP's solution (a convex QP's
minimizer over a superset of the feasible set that is feasible).

Used when the equalities are eliminable (the active contacts' no-acceleration rows); a layout with
inactive contacts (a lifted foot) runs on copies of its active rows and columns, gathered after the
kernel and before each call (not fused). Otherwise, and without a C compiler, the numpy path runs
(:meth:`CompiledShortcut.build` returns None).
"""

from __future__ import annotations

import ctypes
import functools
import warnings
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..codegen.cache import CacheUnavailable, cached_source_library, find_compiler
from ..codegen.kernel import Kernel
from ..errors import CompileError, WbcPerformanceWarning
from ..model.checks import UNIT_TOLERANCE
from .builder import Layout
from .qp import QPProblem
from .solvers import DaqpSolver, QPSolver

__all__ = [
    "CompiledShortcut",
    "Library",
    "shortcut_library",
    "kernel_symbol",
    "FEASIBLE",
    "INFEASIBLE",
    "FAILED",
    "BAD_INPUT",
    "KERNEL_FAILED",
    "NOT_VECTORS",
]

#: Return codes of ``wbc_shortcut`` and ``wbc_step``.
FEASIBLE, INFEASIBLE, FAILED, BAD_INPUT, KERNEL_FAILED, NOT_VECTORS = 0, 1, 2, 3, 4, 5

#: Compiler flags of the routines (small, loops: -O3 pays here, unlike on the large traced kernels;
#: measured 8.75 against 9.05 µs at -O2 for the shortcut and command of Talos standing).
FLAGS = ("-O3", "-fPIC", "-shared", "-fno-math-errno")

_P = ctypes.c_void_p
_BIG = 1e20  # what daqp takes for an infinite bound

#: The BLAS and LAPACK routines the C code calls, from SciPy's (``scipy.linalg.cython_blas``/``cython_lapack``).
_ROUTINES = ("dgemm", "dgemv", "dsyrk", "dpotrf", "dpotrs")


_INTS = ("k", "p", "m", "nc", "ng", "c0", "nspan", "nb", "nt", "nv", "ne", "ncontact")
_POINTERS = (
    "A", "b", "Aeq", "beq", "Cg", "g_rows", "b_rows", "b_cols", "b_sign", "G", "traced", "d",
    "u", "Cu", "L", "X", "S", "H", "rf", "W",
    "kernel", "arg", "res", "iw", "w", "q", "v",
)  # fmt: skip


class _Data(ctypes.Structure):
    _fields_ = [
        *[(name, ctypes.c_int) for name in _INTS],
        ("reg", ctypes.c_double),
        *[(name, _P) for name in _POINTERS],
        ("nq", ctypes.c_int),
        ("n_unit", ctypes.c_int),
        ("check", ctypes.c_int),
        ("unit_tol", ctypes.c_double),
        *[(name, _P) for name in ("unit", "a0", "Bhat", "errors", "normal", "out")],
        *[(name, _P) for name in _ROUTINES],
        ("t_kernel", ctypes.c_double),
        ("t_qp", ctypes.c_double),
        ("Cdense", _P),
        ("traced_at", _P),
    ]


class Library(NamedTuple):
    """The compiled routines: ``shortcut`` (the least squares and the check on the kernel's outputs),
    ``step`` (the input checks, the kernel, then the same, and the command), ``reduce`` and ``expand``
    (a binding step's QP on working rows in least-distance form, and its answer back to ``u``)."""

    shortcut: Callable[..., int]
    step: Callable[..., int]
    reduce: Callable[..., int]
    expand: Callable[..., int]
    command: Callable[..., int]
    step_objects: Callable[..., int]


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


def _load(path: Path) -> Library:
    try:
        library = ctypes.CDLL(str(path))
        functions = [
            getattr(library, name) for name in ("wbc_shortcut", "wbc_step", "wbc_reduce", "wbc_expand", "wbc_command")
        ]
    except (OSError, AttributeError) as e:
        raise CompileError(f"{path}: cannot load the shortcut's routines from it: {e}") from None
    for function in functions:
        function.argtypes = [_P]  # the struct's address (the cheapest conversion ctypes makes)
        function.restype = ctypes.c_int
    functions[2].argtypes = [_P, _P, ctypes.c_double, _P, _P, _P, _P]
    functions[3].argtypes = [_P, _P]
    try:  # with the GIL held: it reads q and v through the buffer protocol
        step_objects = ctypes.PyDLL(str(path)).wbc_step_objects
    except (OSError, AttributeError) as e:
        raise CompileError(f"{path}: cannot load wbc_step_objects from it: {e}") from None
    step_objects.argtypes = [_P, ctypes.py_object, ctypes.py_object]
    step_objects.restype = ctypes.c_int
    shortcut, step, reduce, expand, command = functions
    return Library(shortcut, step, reduce, expand, command, step_objects)


@functools.cache
def shortcut_library() -> Library | None:
    """The compiled routines (:class:`Library`), or None (with one warning) when they cannot be
    built: no C compiler, or no writable cache."""
    if find_compiler() is None:
        return None
    source = resources.files("wbc.control").joinpath("shortcut.c").read_text()
    try:
        return cached_source_library("wbc_shortcut", source, _load, flags=FLAGS)
    except (CompileError, CacheUnavailable) as e:
        warnings.warn(f"the compiled shortcut is unavailable ({e}); numpy runs it", WbcPerformanceWarning, stacklevel=2)
        return None


def kernel_symbol(kernel: Kernel) -> tuple[int, tuple[int, int, int, int], ctypes.CDLL] | None:
    """The address of ``kernel``'s CasADi-generated C function, its work sizes ``(arg, res, iw, w)``
    and the library holding it (keep it alive), or None when the kernel is not a compiled library of
    the expected ABI (then it runs through CasADi)."""
    if kernel.backend != "c" or kernel.library is None:
        return None
    try:
        library = ctypes.CDLL(str(kernel.library))
        function = getattr(library, kernel.name)
        int_size = getattr(library, f"{kernel.name}_casadi_int_size")
        real_size = getattr(library, f"{kernel.name}_casadi_real_size")
        work = getattr(library, f"{kernel.name}_work")
    except (OSError, AttributeError):
        return None
    int_size.restype = real_size.restype = ctypes.c_int
    if int_size() != ctypes.sizeof(ctypes.c_longlong) or real_size() != ctypes.sizeof(ctypes.c_double):
        return None
    sizes = [ctypes.c_longlong() for _ in range(4)]
    work.restype = ctypes.c_int
    if work(*[ctypes.byref(x) for x in sizes]) != 0:
        return None
    arg, res, iw, w = (int(x.value) for x in sizes)
    return ctypes.cast(function, _P).value or 0, (arg, res, iw, w), library


def _split_rows(C: np.ndarray, traced: np.ndarray) -> tuple:
    """The rows of ``C`` (nc, n) by kind: general constant rows (their indices, their nonzero column
    span ``c0, c1``), unit rows (``±u_j``: indices, columns, signs); the traced rows are skipped."""
    nc = C.shape[0]
    is_traced = np.zeros(nc, dtype=bool)
    is_traced[traced] = True
    nonzero = C != 0
    count = nonzero.sum(axis=1)
    column = np.argmax(nonzero, axis=1)
    value = C[np.arange(nc), column]
    unit = ~is_traced & (count == 1) & (np.abs(value) == 1.0)
    general = ~is_traced & ~unit & (count > 0)
    g_rows = np.flatnonzero(general)
    if g_rows.size:
        used = np.flatnonzero(nonzero[g_rows].any(axis=0))
        c0, c1 = int(used[0]), int(used[-1]) + 1
    else:
        c0, c1 = 0, 0
    b_rows = np.flatnonzero(unit)
    return g_rows, c0, c1, b_rows, column[b_rows], value[b_rows]


def _not_fused(*_) -> int:
    raise CompileError("CompiledShortcut.step needs fuse() first")


class CompiledShortcut:
    """The shortcut of one :class:`~wbc.control.builder.Layout` on one kernel's output buffers.

    Attributes:
        u: (n,) the minimizer of the last call (overwritten by the next).
        Cu: (n_c,) the products ``C u`` of the last call.
        out: after a feasible :meth:`step`: ``[u (n), q̈ (nv), task errors, contacts' normal forces,
            kernel µs, shortcut µs]`` (overwritten by the next).
        fused: whether :meth:`fuse` attached a kernel.
        step: after :meth:`fuse`, with ``q`` and ``v`` copied into the kernel's inputs, a function of no
            argument running the checks, the kernel and the shortcut in one C call; it returns
            :data:`FEASIBLE` (then :attr:`out` holds the command), :data:`INFEASIBLE`, :data:`FAILED`
            (as :meth:`__call__`; the kernel's outputs are current), :data:`BAD_INPUT` (``q`` or ``v``
            not finite, or a unit part of ``q`` not of unit norm; the kernel did not run) or
            :data:`KERNEL_FAILED`.
        step_objects: ``step_objects(q, v)``: the same, reading ``q`` and ``v`` (C-contiguous float64
            vectors of the state's sizes) through the buffer protocol into the kernel's inputs; any other
            objects: :data:`NOT_VECTORS`, nothing done.
        timings: ``(kernel, shortcut)`` microseconds of the last :meth:`step` (checks included in the first).
    """

    @classmethod
    def build(cls, layout: Layout, outputs: list[np.ndarray]) -> CompiledShortcut | None:
        """The compiled shortcut of ``layout``, or None when its layout needs the numpy path (equalities
        not eliminable, no force variable or no cost row) or no library is available. A layout with
        inactive contacts (a lifted foot) runs on copies of its active rows and columns, gathered
        before each call (:class:`_Gathers`; not fused: the kernel runs first)."""
        if not layout.eliminable or layout.eq_rows.size == 0 or layout.cost_rows.size == 0:
            return None
        library = shortcut_library()
        return None if library is None else cls(library, layout, outputs)

    def __init__(self, library: Library, layout: Layout, outputs: list[np.ndarray]) -> None:
        for a in (*outputs[0:5], outputs[11]):
            if not (a.flags.f_contiguous and a.dtype == np.float64):
                raise CompileError("the kernel's outputs must be column-major float64 buffers")
        self._kernel_outputs = outputs  # keeps the buffers the gathers read alive
        self._gathers = _Gathers(layout, outputs)
        outputs = list(outputs)
        outputs[0:5], outputs[11] = self._gathers.targets[0:5], self._gathers.targets[5]
        A, b, A_eq, b_eq, G = outputs[0], outputs[1], outputs[2], outputs[3], outputs[4]
        k, n = A.shape
        m = A_eq.shape[0]
        p = n - m
        self._library = library
        self.layout = layout
        self.p, self.m = p, m
        self._C = np.asarray(layout._C, dtype=float)
        nc = self._C.shape[0]
        self._traced = np.asarray(layout._traced_at, dtype=np.int64)
        g_rows, c0, c1, b_rows, b_cols, b_sign = _split_rows(self._C, self._traced)
        self._g_rows = g_rows.astype(np.int64)
        self._Cg = np.asfortranarray(self._C[np.ix_(g_rows, np.arange(c0, c1))])
        self._b_rows, self._b_cols = b_rows.astype(np.int64), b_cols.astype(np.int64)
        self._b_sign = np.ascontiguousarray(b_sign, dtype=float)
        self._Cdense = np.ascontiguousarray(self._C)
        self._traced_where = np.full(nc, -1, dtype=np.int64)
        self._traced_where[self._traced] = np.arange(self._traced.size)
        self._M = np.zeros((nc, p))  # the working rows in least-distance form (binding steps)
        self._h = np.zeros(nc)
        self._y0 = np.zeros(p)
        self._y = np.zeros(p)
        self._eye = np.eye(p)
        self._working = np.zeros(nc, dtype=bool)  # one byte per row, read by wbc_reduce
        self._rows = np.zeros(nc, dtype=np.int64)
        self._lower = np.full(nc, -_BIG)
        self._sense = np.zeros(nc, dtype=ctypes.c_int)
        self._addresses = tuple(a.ctypes.data for a in (self._working, self._rows, self._M, self._h, self._y0, self._y))
        self.u = np.zeros(n)
        self.Cu = np.zeros(nc)
        self.L = np.zeros((m, m), order="F")
        self.X = np.zeros((m, p + 1), order="F")
        self.S = np.zeros((k + m, p + 1), order="F")
        self.R = self.S[:k]  # [A_x, b] - A_f X
        self.H = np.zeros((p, p + 1), order="F")
        self.rf = np.zeros(m)
        self.W = np.zeros(max(1, g_rows.size, self._traced.size))
        for a in (A, b, A_eq, b_eq, G, outputs[11]):
            if not (a.flags.f_contiguous and a.dtype == np.float64):
                raise CompileError("the kernel's outputs must be column-major float64 buffers")
        self._outputs = outputs  # keeps the buffers the struct points into alive
        data = _Data()
        for name, value in zip(_INTS, (k, p, m, nc, g_rows.size, c0, c1 - c0, b_rows.size, self._traced.size, 0, 0, 0)):
            setattr(data, name, int(value))
        for name, array in (
            ("A", A),
            ("b", b),
            ("Aeq", A_eq),
            ("beq", b_eq),
            ("Cg", self._Cg),
            ("g_rows", self._g_rows),
            ("b_rows", self._b_rows),
            ("b_cols", self._b_cols),
            ("b_sign", self._b_sign),
            ("G", G),
            ("traced", self._traced),
            ("d", outputs[11]),
            ("u", self.u),
            ("Cu", self.Cu),
            ("L", self.L),
            ("X", self.X),
            ("S", self.S),
            ("H", self.H),
            ("rf", self.rf),
            ("W", self.W),
            ("Cdense", self._Cdense),
            ("traced_at", self._traced_where),
        ):
            setattr(data, name, array.ctypes.data)
        for name, address in zip(_ROUTINES, _routine_addresses()):
            setattr(data, name, address)
        self._data = data
        self._ref = ctypes.addressof(data)
        self.fused = False
        self.out = np.zeros(0)
        self.step: Callable[[], int] = _not_fused
        self.step_objects: Callable[[Any, Any], int] = _not_fused
        self._active = np.zeros(nc, dtype=bool)  # rows active at the last binding step's solution

    def __call__(self, regularization: float) -> int:
        """Run on the kernel's current outputs: :data:`FEASIBLE` (``u`` solves the QP),
        :data:`INFEASIBLE` (``u`` is finite, some row of ``C u ≤ d`` fails) or :data:`FAILED`."""
        self._data.reg = regularization
        self._gathers()
        return self._library.shortcut(self._ref)

    # ----------------------------------------------------------------------------- the whole step
    def fuse(
        self,
        kernel: Kernel,
        regularization: float,
        unit_parts: Sequence[tuple[int, int]],
        check: bool,
        normal_rows: np.ndarray,
    ) -> bool:
        """Attach the kernel whose outputs this shortcut reads, so that :meth:`step` runs the input
        checks, the kernel and the shortcut in one C call. False (nothing changed) when the kernel is
        not a compiled library of the expected ABI.

        Args:
            kernel: the controller's kernel (inputs ``q``, ``v``, then its bound parameters).
            regularization: the controller's (fixed from now on for :meth:`step`).
            unit_parts: ``(start, stop)`` of every part of ``q`` that must have unit norm.
            check: whether :meth:`step` checks ``q`` and ``v`` (finite, unit norms).
            normal_rows: (n_contacts, n) each contact's normal force as a linear function of ``u``.
        """
        if self.gathered:  # the gathers run between the kernel and the shortcut
            return False
        symbol = kernel_symbol(kernel)
        if symbol is None:
            return False
        address, (n_arg, n_res, n_iw, n_w), library = symbol
        inputs, outputs = kernel._in_flat, kernel._out_flat
        if n_arg < len(inputs) or n_res < len(outputs):
            return False
        self._kernel_library = library
        self._kernel_arrays = (inputs, outputs)  # the buffers the argument arrays point into
        self._arg = (_P * n_arg)(*[a.ctypes.data for a in inputs])
        self._res = (_P * n_res)(*[r.ctypes.data for r in outputs])
        self._iw = np.zeros(max(1, n_iw), dtype=np.int64)
        self._w = np.zeros(max(1, n_w))
        self._unit = np.array([x for part in unit_parts for x in part] or [0], dtype=np.int64)
        self._normal = np.asfortranarray(normal_rows, dtype=float)
        a0, Bhat, errors = self._outputs[8], self._outputs[9], self._outputs[10]
        if not (Bhat.flags.f_contiguous and Bhat.dtype == np.float64):
            return False
        n, nv, ne, nk = self.u.size, a0.size, errors.size, self._normal.shape[0]
        self.out = np.zeros(n + nv + ne + nk + 2)
        data = self._data
        data.nv, data.ne, data.ncontact = nv, ne, nk
        data.nq, data.n_unit, data.check = inputs[0].size, len(unit_parts), int(bool(check))
        data.unit_tol = UNIT_TOLERANCE
        data.reg = regularization
        data.kernel = address
        for name, value in (
            ("arg", ctypes.addressof(self._arg)),
            ("res", ctypes.addressof(self._res)),
            ("iw", self._iw.ctypes.data),
            ("w", self._w.ctypes.data),
            ("q", inputs[0].ctypes.data),
            ("v", inputs[1].ctypes.data),
            ("unit", self._unit.ctypes.data),
            ("a0", a0.ctypes.data),
            ("Bhat", Bhat.ctypes.data),
            ("errors", errors.ctypes.data),
            ("normal", self._normal.ctypes.data),
            ("out", self.out.ctypes.data),
        ):
            setattr(data, name, value)
        self.step = functools.partial(self._library.step, self._ref)
        self.step_objects = functools.partial(self._library.step_objects, self._ref)
        self.fused = True
        return True

    @property
    def gathered(self) -> bool:
        """Whether it runs on gathered copies of the kernel's outputs (a layout with inactive
        contacts): the kernel then runs first, and :meth:`fuse` refuses."""
        return self._gathers.partial

    @property
    def timings(self) -> tuple[float, float]:
        return self._data.t_kernel, self._data.t_qp

    def command(self, u: np.ndarray) -> int:
        """After :meth:`fuse`: the command of ``u`` (n,) (a binding step's answer) into :attr:`out`, as
        :meth:`step` writes it (the timings excepted); :data:`FEASIBLE`, or :data:`FAILED` when ``q̈``
        is not finite."""
        if u is not self.u:
            np.copyto(self.u, u)
        return self._library.command(self._ref)

    # ----------------------------------------------------------------------------- binding rows
    def screened(self, solver: QPSolver, tolerance: float, max_rounds: int = 10) -> np.ndarray | None:
        """After an :data:`INFEASIBLE` call: the QP's solution ``u`` (n,) found on a growing working set
        of rows (module docstring), or None (the solver failed, or the set stopped growing while a row
        still fails: the caller then solves the full QP). ``tolerance`` is the one traced into ``d``.

        The QP in the actuators ``x`` is ``½ xᵀH x − gᵀx`` (``H = L Lᵀ``, ``g`` from the call) under the
        rows ``(C_x − C_f X_x) x ≤ d − tolerance − C_f X_b``. daqp gets it in least-distance form
        (``y = Lᵀx``: ``½|y|² − (L⁻¹g)ᵀy`` under ``(L⁻¹G_rᵀ)ᵀ y ≤ h_r``, built in C from the call's
        factor); any other solver as a :class:`~wbc.control.qp.QPProblem` in cost rows.

        Warm start: the working set starts with the rows violated at the minimizer and the rows active
        at the previous binding step's solution, which daqp is also told are active (its warm start).
        A superset of the binding rows changes nothing to the answer (it is still the full QP's when
        it satisfies every row)."""
        if not isinstance(solver, DaqpSolver):
            return self._screened_generic(solver, tolerance, max_rounds)
        d = self._outputs[11]
        library, address = self._library, self._ref
        working, active = self._working, self._active
        a_working, a_rows, a_M, a_h, a_y0, a_y = self._addresses
        np.greater(self.Cu, d, out=working)
        working |= active
        for _ in range(max_rounds):
            r = library.reduce(address, a_working, tolerance, a_rows, a_M, a_h, a_y0)
            rows = self._rows[:r]
            sense = self._sense[:r]
            sense[:] = active[rows]
            y, _, exitflag, info = solver._daqp.solve(
                self._eye, -self._y0, self._M[:r], np.minimum(self._h[:r], _BIG), self._lower[:r], sense
            )
            if exitflag <= 0:
                return None
            np.copyto(self._y, y)
            code = library.expand(address, a_y)
            if code == FAILED:
                return None
            violated = self.Cu > d
            if not (violated & ~working).any():
                if code != FEASIBLE:
                    return None
                self._active[:] = False
                self._active[rows[np.asarray(info["lam"]) != 0.0]] = True
                return self.u.copy()
            working |= violated
        return None

    def _screened_generic(self, solver: QPSolver, tolerance: float, max_rounds: int) -> np.ndarray | None:
        """:meth:`screened` for a solver other than daqp (through :class:`~wbc.control.qp.QPProblem`)."""
        p, outputs = self.p, self._outputs
        C = self._C
        if self._traced.size:
            C = C.copy()
            C[self._traced] = outputs[4]
        d = outputs[11]
        Xx, Xb = self.X[:, :p], self.X[:, p]
        working = self.Cu > d
        for _ in range(max_rounds):
            rows = np.flatnonzero(working)
            Cs = C[rows]
            Cf = Cs[:, p:]
            G, h = Cs[:, :p] - Cf @ Xx, d[rows] - tolerance - Cf @ Xb
            x = self._generic(solver, G, h, rows)
            if x is None or not np.isfinite(x).all():
                return None
            u = np.concatenate([x, Xb - Xx @ x])
            violated = C @ u > d
            if not (violated & ~working).any():
                return None if violated.any() else u
            working |= violated
        return None

    def _generic(self, solver: QPSolver, G: np.ndarray, h: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
        p, layout = self.p, self.layout
        R, rf, A = self.R, self.rf, self._outputs[0]
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
        self.partial = bool(self._plan)  # some buffer is a gathered copy

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
