"""The compiled shortcut of one layout: the minimizer under the equalities, and whether it is the QP's.

When the equalities are the active contacts' no-acceleration rows (``E_x x + Λ f = b_eq``, ``Λ`` the
Delassus matrix: :attr:`~wbc.control.builder.Layout.eliminable`), the forces are eliminated and the
minimizer of the cost is one Cholesky solve in the actuators; it is the QP's solution when it
satisfies every inequality and bound (one product ``C u ≤ d``). That arithmetic is some twenty
numpy/LAPACK calls on a problem of a few dozen variables, whose Python overhead is most of its cost:
``shortcut.c`` (:mod:`wbc.control.shortcut_library`) does it in one C call, on a struct of pointers
into the kernel's buffers and preallocated arrays (no copies, no allocation per step). The rows of
``C u ≤ d`` are taken by kind: constant rows over their nonzero columns only, bounds (``±u_j``) as
comparisons, traced rows from the kernel's ``G``, and the joint limits' rows (``±B̂[i]``) from the
kernel's ``B̂`` (one product ``B̂u``; the kernel does not copy them).

A :class:`CompiledShortcut` serves the step three ways:

* :meth:`~CompiledShortcut.__call__`: on the kernel's current outputs (a layout with inactive
  contacts runs on copies of its active rows and columns, gathered first: :class:`Gathers`);
* :meth:`~CompiledShortcut.attach`: the kernel's own C function attached, so that one call
  (:attr:`~CompiledShortcut.step_objects`) checks ``q`` and ``v``, runs the kernel, makes the gathers
  (in C), runs the shortcut, and writes the command (``u``, ``q̈ = a₀ + B̂u``, the task errors, the
  contacts' normal forces, the C-side timings) into one block (:attr:`~CompiledShortcut.out`);
* :meth:`~CompiledShortcut.binding`: when an inequality binds, the QP in the actuators in
  least-distance form, from the shortcut's factor, solved in C (a dual active-set method over every
  row, warm-started from the previous binding step's active rows);
* :meth:`~CompiledShortcut.working_set`: when that fails, the same QP on a growing working set of
  rows handed to the backend's least-distance solve (:meth:`~CompiledShortcut.reduce`, from the
  shortcut's factor; :meth:`~CompiledShortcut.expand`, its answer back to ``u``), and its command
  (the working-set strategy's fallback, :mod:`wbc.control.strategies`).

The numpy functions :func:`~wbc.control.qp.least_squares_by_elimination` and
:meth:`~wbc.control.builder.Layout.feasible` are its reference in the tests, not a second path.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..codegen.kernel import Kernel
from ..errors import CompileError
from ..model.checks import UNIT_TOLERANCE
from .builder import Layout
from .outputs import StepOutputs
from .shortcut_library import (
    _INTS,
    Code,
    Library,
    ShortcutData,
    bind_step_objects,
    kernel_symbol,
    shortcut_library,
)

__all__ = ["CompiledShortcut", "Gathers", "FEASIBLE", "INFEASIBLE", "FAILED", "BAD_INPUT", "KERNEL_FAILED"]

# the codes as plain ints (compared on every step)
FEASIBLE, INFEASIBLE, FAILED = int(Code.FEASIBLE), int(Code.INFEASIBLE), int(Code.FAILED)
BAD_INPUT, KERNEL_FAILED, NOT_VECTORS = int(Code.BAD_INPUT), int(Code.KERNEL_FAILED), int(Code.NOT_VECTORS)

_P = ctypes.c_void_p


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


class Attachment(NamedTuple):
    """What a one-call step runs on (:meth:`CompiledShortcut.attach`,
    :meth:`~wbc.control.compiled_hierarchy.CompiledHierarchy.attach`).

    Attributes:
        kernel: the controller's kernel (inputs ``q``, ``v``, then its bound parameters).
        regularization: the controller's (fixed from now on for the step).
        unit_parts: ``(start, stop)`` of every part of ``q`` that must have unit norm.
        check: whether the step checks ``q`` and ``v`` (finite, unit norms).
        normal_rows: (n_contacts, n) each contact's normal force as a linear function of ``u``.
    """

    kernel: Kernel
    regularization: float
    unit_parts: Sequence[tuple[int, int]]
    check: bool
    normal_rows: np.ndarray


class CompiledShortcut:
    """The shortcut of one :class:`~wbc.control.builder.Layout` on one kernel's output buffers.

    Attributes:
        layout: the layout.
        p, m: actuator and force variables of the layout (``n = p + m``).
        u: (n,) the minimizer of the last call (overwritten by the next).
        working: (n_c,) bool, the rows :meth:`reduce` takes.
        Cu: (n_c,) the products ``C u`` of the last call.
        d: (n_c,) the right-hand sides of ``C u ≤ d`` (the kernel's, or their gathered rows).
        gathered: whether it runs on gathered copies of the kernel's outputs (a layout with inactive
            contacts): after :meth:`attach`, :attr:`step` makes them in C between the kernel and
            the shortcut.
        out: after :meth:`attach` and a :data:`FEASIBLE` step: ``[u (n), q̈ (nv), task errors,
            contacts' normal forces, kernel µs, shortcut µs]`` (overwritten by the next).
        step: after :meth:`attach`, with ``q`` and ``v`` in the kernel's inputs: the checks, the kernel
            and the shortcut in one C call; returns a :class:`~wbc.control.shortcut_library.Code`.
        check_state: after :meth:`attach`, the input checks of :attr:`step` alone on the kernel's ``q``
            and ``v`` buffers: ``BAD_INPUT``, or ``FEASIBLE`` (they pass, or checks are off).
        step_objects: after :meth:`attach`, ``step_objects(q, v)``: the same, reading ``q`` and ``v``
            (ndarrays, C-contiguous float64 vectors of the state's sizes) in C; any other objects:
            ``NOT_VECTORS``, nothing done. None when the library was built without CPython's headers.
    """

    @classmethod
    def build(cls, layout: Layout, outputs: StepOutputs) -> CompiledShortcut | None:
        """The compiled shortcut of ``layout``, or None when the layout has none (equalities not
        eliminable, no force variable or no cost row) or no library is available."""
        if not layout.eliminable or layout.eq_rows.size == 0 or layout.cost_rows.size == 0:
            return None
        library = shortcut_library()
        return None if library is None else cls(library, layout, outputs)

    def __init__(self, library: Library, layout: Layout, outputs: StepOutputs) -> None:
        for a in (outputs.A, outputs.b, outputs.A_eq, outputs.b_eq, outputs.G, outputs.d, outputs.Bhat, outputs.scale):
            if not (a.flags.f_contiguous and a.dtype == np.float64):
                raise CompileError("the kernel's outputs must be column-major float64 buffers")
        self._kernel_outputs = outputs  # keeps the buffers the gathers read alive
        self._gathers = Gathers(layout, outputs)
        A, b, A_eq, b_eq, G, d, Bhat, scale = self._gathers.targets
        k, n = b.size, A_eq.shape[1]
        m = A_eq.shape[0]
        A_traced = A  # the kernel's traced cost rows (all of them without rows of B̂)
        if layout.cost_from_bhat:  # assembled in C from them and the scaled rows of B̂
            A = np.zeros((k, n), order="F")
        p = n - m
        self._library = library
        self.layout = layout
        self.p, self.m = p, m
        self.d = d
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
        self._h_rows = np.asarray(layout._bhat_at, dtype=np.int64)
        self._h_index = np.asarray(layout._bhat_index, dtype=np.int64)
        self._h_sign = np.asarray(layout._bhat_sign, dtype=float)
        self._h_where = np.full(nc, -1, dtype=np.int64)
        self._h_where[self._h_rows] = np.arange(self._h_rows.size)
        self._Bu = np.zeros(Bhat.shape[0])
        self.u = np.zeros(n)
        self.Cu = np.zeros(nc)
        self.L = np.zeros((m, m), order="F")
        self.X = np.zeros((m, p + 1), order="F")
        self.S = np.zeros((k + m, p + 1), order="F")
        self.H = np.zeros((p, p + 1), order="F")
        self.rf = np.zeros(m)
        self._rx = np.zeros(max(1, p))  # work: the actuators' regularization
        self.W = np.zeros(max(1, g_rows.size, self._traced.size))
        # a binding step's working rows in least-distance form (reduce / expand)
        self.rows = np.zeros(nc, dtype=np.int64)
        self.M = np.zeros((nc, p))
        self.h = np.zeros(nc)
        self.y0 = np.zeros(p)
        self._y = np.zeros(p)
        self.working = np.zeros(nc, dtype=bool)  # the rows reduce() takes
        self._outputs = (
            A,
            b,
            A_eq,
            b_eq,
            G,
            d,
            Bhat,
            A_traced,
            scale,
        )  # keeps the buffers the struct points into alive
        self._Bhat = Bhat  # B̂ over the layout's active columns (the kernel's, or its gathered copy)
        data = ShortcutData()
        nt, nv = self._traced.size, Bhat.shape[0]
        for name, value in zip(_INTS, (k, p, m, nc, g_rows.size, c0, c1 - c0, b_rows.size, nt, nv, 0, 0)):
            setattr(data, name, int(value))
        data.nh = self._h_rows.size
        if layout.cost_from_bhat:
            self._cost_rows = tuple(
                np.asarray(rows, dtype=np.int64)
                for rows in (layout._cost_traced_at, layout._cost_bhat_at, layout._cost_bhat_index)
            )
            data.na, data.nat = self._cost_rows[1].size, A_traced.shape[0]
            data.a_blocks = int(all(rows.size == 0 or np.all(np.diff(rows) == 1) for rows in self._cost_rows))
            cost_arrays = (*self._cost_rows, A_traced, scale, A)
            for name, buffer in zip(("at_rows", "a_rows", "a_index", "A_traced", "a_scale", "A_full"), cost_arrays):
                setattr(data, name, buffer.ctypes.data)
        for name, array in (
            ("A", A), ("b", b), ("Aeq", A_eq), ("beq", b_eq), ("Cg", self._Cg), ("g_rows", self._g_rows),
            ("b_rows", self._b_rows), ("b_cols", self._b_cols), ("b_sign", self._b_sign), ("G", G),
            ("traced", self._traced), ("d", d), ("u", self.u), ("Cu", self.Cu), ("L", self.L), ("X", self.X),
            ("S", self.S), ("H", self.H), ("rf", self.rf), ("W", self.W), ("Cdense", self._Cdense),
            ("traced_at", self._traced_where), ("Bhat", Bhat), ("rx", self._rx), ("h_rows", self._h_rows),
            ("h_index", self._h_index), ("h_sign", self._h_sign), ("h_at", self._h_where), ("Bu", self._Bu),
        ):  # fmt: skip
            setattr(data, name, array.ctypes.data)
        data.vector_type = id(np.ndarray)  # only exact ndarrays are read in C (not masked arrays)
        self.data = self._data = data  # read by the strategies: t_kernel, t_qp
        self._ref = ctypes.addressof(data)
        # the binding step's routines, their buffers bound once (ndarray.ctypes costs a microsecond)
        arrays = (self.working, self.rows, self.M, self.h, self.y0)
        self._reduce = functools.partial(library.reduce, self._ref, *(a.ctypes.data for a in arrays))
        self._expand = functools.partial(library.expand, self._ref, self._y.ctypes.data)
        # the binding step's QP in C (binding): its work buffers
        self.binding_active = np.zeros(nc, dtype=bool)  # the rows active at the last binding answer
        self._binding_buffers = (
            np.zeros(max(1, p), dtype=np.int64),
            np.zeros((max(1, p), max(1, p))),
            np.zeros(6 * max(1, p) + 2 * max(1, p) ** 2),
        )
        for name, array in zip(
            ("binding_active", "binding_rows", "binding_M", "binding_work"),
            (self.binding_active, *self._binding_buffers),
        ):
            setattr(data, name, array.ctypes.data)
        data.binding_iterations = 4 * (nc + p) + 10
        data.binding_code = -1
        self._binding = functools.partial(library.binding, self._ref)
        self.attached = False
        self.out = np.zeros(0)
        self.step: Callable[[], int] = self._not_attached
        self.check_state: Callable[[], int] = self._not_attached
        self.step_objects: Callable[[Any, Any], int] | None = None
        self.gathered = self._gathers.partial

    @staticmethod
    def _not_attached() -> int:
        raise CompileError("CompiledShortcut.step and check_state need attach() first")

    def __call__(self, regularization: float) -> int:
        """Run on the kernel's current outputs: ``FEASIBLE`` (``u`` solves the QP), ``INFEASIBLE``
        (``u`` is finite, some row of ``C u ≤ d`` fails) or ``FAILED``."""
        self._data.reg = regularization
        self._gathers()
        return self._library.shortcut(self._ref)

    @property
    def regularization(self) -> float:
        """The regularization of the last call (or the one :meth:`attach` fixed)."""
        return self._data.reg

    @property
    def timings(self) -> tuple[float, float]:
        """``(kernel, shortcut)`` microseconds of the last :attr:`step` (checks included in the first)."""
        return self._data.t_kernel, self._data.t_qp

    # ----------------------------------------------------------------------------- the whole step
    def attach(self, attachment: Attachment) -> bool:
        """Attach the kernel whose outputs this shortcut reads, so that :attr:`step` runs the input
        checks, the kernel and the shortcut in one C call (with the gathers of a layout with inactive
        contacts, and ``B̂``'s active columns for the command). False (nothing changed) when the
        kernel is not a compiled library of the expected ABI."""
        kernel, regularization, unit_parts, check, normal_rows = attachment
        symbol = kernel_symbol(kernel)
        if symbol is None:
            return False
        address, (n_arg, n_res, n_iw, n_w), library = symbol
        inputs, outputs = kernel.inputs, kernel.outputs
        if n_arg < len(inputs) or n_res < len(outputs):
            return False
        a0, errors = self._kernel_outputs.a0, self._kernel_outputs.errors
        self._kernel_library = library
        self._kernel_arrays = (list(inputs), list(outputs))  # the buffers the argument arrays point into
        self._arg = (_P * n_arg)(*[a.ctypes.data for a in inputs])
        self._res = (_P * n_res)(*[r.ctypes.data for r in outputs])
        self._iw = np.zeros(max(1, n_iw), dtype=np.int64)
        self._w = np.zeros(max(1, n_w))
        self._unit = np.array([x for part in unit_parts for x in part] or [0], dtype=np.int64)
        self._normal = np.asfortranarray(normal_rows, dtype=float)
        n, nv, ne, nk = self.u.size, a0.size, errors.size, self._normal.shape[0]
        copies = list(self._gathers.copies)  # with B̂'s active columns (q̈ = a₀ + B̂ u) where some are not
        self._copies = copies  # keeps what the pointers below point into alive
        self._gather_len = np.array([flat.size for _, flat, _ in copies] or [0], dtype=np.int64)
        self._gather_src = (_P * max(1, len(copies)))(*[source.ctypes.data for source, _, _ in copies])
        self._gather_idx = (_P * max(1, len(copies)))(*[flat.ctypes.data for _, flat, _ in copies])
        self._gather_dst = (_P * max(1, len(copies)))(*[target.ctypes.data for _, _, target in copies])
        self.out = np.zeros(n + nv + ne + nk + 2)
        data = self._data
        data.nv, data.ne, data.ncontact = nv, ne, nk
        data.nq, data.n_unit, data.check = inputs[0].size, len(unit_parts), int(bool(check))
        data.unit_tol = UNIT_TOLERANCE
        data.reg = regularization
        data.kernel = address
        data.ngather = len(copies)
        for name, value in (
            ("arg", ctypes.addressof(self._arg)),
            ("res", ctypes.addressof(self._res)),
            ("iw", self._iw.ctypes.data),
            ("w", self._w.ctypes.data),
            ("q", inputs[0].ctypes.data),
            ("v", inputs[1].ctypes.data),
            ("unit", self._unit.ctypes.data),
            ("a0", a0.ctypes.data),
            ("errors", errors.ctypes.data),
            ("normal", self._normal.ctypes.data),
            ("out", self.out.ctypes.data),
            ("gather_len", self._gather_len.ctypes.data),
            ("gather_src", ctypes.addressof(self._gather_src)),
            ("gather_idx", ctypes.addressof(self._gather_idx)),
            ("gather_dst", ctypes.addressof(self._gather_dst)),
        ):
            setattr(data, name, value)
        self.step = functools.partial(self._library.step, self._ref)
        self.check_state = functools.partial(self._library.check_state, self._ref)
        self.step_objects = bind_step_objects(self._library, self._ref, self)
        self.attached = True
        return True

    def command(self, u: np.ndarray) -> int:
        """After :meth:`attach`: the command of ``u`` (n,) (a binding step's answer) into :attr:`out`,
        as :attr:`step` writes it (the timings excepted); ``FEASIBLE``, or ``FAILED`` when ``q̈`` is
        not finite."""
        if u is not self.u:
            np.copyto(self.u, u)
        return self._library.command(self._ref)

    # ----------------------------------------------------------------------------- binding rows
    def reduce(self, tolerance: float) -> int:
        """After a call that found ``u`` finite: the QP in the actuators ``x`` on the rows marked in
        :attr:`working` ((n_c,) bool, one byte each) in least-distance form, from the call's factor
        ``H = L Lᵀ``: with ``y = Lᵀx``, ``min ½‖y‖² − y0ᵀy`` s.t. ``M y ≤ h``, ``M_r = (L⁻¹G_rᵀ)ᵀ``,
        ``G_r = c_x − c_f X_x``, ``h_r = d_r − tolerance − c_f X_b`` (``c`` a row of ``C``).

        Returns the number ``r`` of working rows: :attr:`rows` ``[:r]`` are their indices,
        :attr:`M` ``[:r]``, :attr:`h` ``[:r]`` and :attr:`y0` the problem. (Bound to the C routine in
        ``__init__``: no Python frame per call.)"""
        return self._reduce(tolerance)

    def binding(self, tolerance: float) -> int:
        """After a call that found ``u`` finite but a row of ``C u ≤ d`` broken: the QP over every row in
        C (``min ½‖y‖² − y0ᵀy`` s.t. ``M y ≤ h``, :meth:`reduce`'s form, each row reduced only when it
        becomes active), by Goldfarb and Idnani's dual active-set method, warm-started from
        :attr:`binding_active` (the rows active at the previous binding answer; updated on success).

        Returns ``FEASIBLE`` (``u`` the QP's solution, ``C u ≤ d`` checked into :attr:`Cu`),
        ``INFEASIBLE`` (the rows admit no solution) or ``FAILED`` (iterations exhausted, dependent
        rows, not finite, an active row broken by rounding): then solve it otherwise (:meth:`reduce`
        and a solver)."""
        return self._binding(tolerance)

    def bind_in_step(self, tolerance: float) -> None:
        """After :meth:`attach`: :attr:`step` also solves a binding step's QP (:meth:`binding`, with
        ``tolerance``) when the minimizer breaks a row, and writes its command; when that QP fails,
        :attr:`step` returns ``INFEASIBLE`` as before, with :attr:`binding_tried` set."""
        self._data.binding_tol = tolerance
        self._data.binding_step = 1

    @property
    def binding_tried(self) -> bool:
        """Whether the last :attr:`step` tried :meth:`binding` (and it failed, when it returned
        ``INFEASIBLE``)."""
        return self._data.binding_code != -1

    def expand(self, y: np.ndarray) -> int:
        """``u`` from a least-distance answer ``y`` (p,) of :meth:`reduce` (``x = L⁻ᵀy``, the forces
        from the equalities) into :attr:`u`, then ``C u ≤ d`` into :attr:`Cu`: ``FEASIBLE``,
        ``INFEASIBLE`` or ``FAILED`` (not finite)."""
        np.copyto(self._y, y)
        return self._expand()

    def working_set(
        self,
        least_distance: Callable[..., tuple[np.ndarray, np.ndarray] | None],
        tolerance: float,
        active: np.ndarray,
        max_rounds: int = 10,
    ) -> int:
        """After :meth:`binding` failed: the QP in the actuators on a growing working set of rows
        (:meth:`reduce`, ``least_distance``, :meth:`expand`), its answer in :attr:`u` and, when
        attached, its command in :attr:`out` (as :meth:`command`).

        The working set starts as the rows violated at the minimizer and the rows in ``active`` (those
        active at the previous binding step's answer, a warm start) and grows by the rows violated at
        each answer until none is: the minimizer over a superset of the binding rows that satisfies
        every row is the QP's. Everything a binding step does after the kernel happens here, so that
        the step enters this module once (the solver once per round: usually one).

        Args:
            least_distance: the backend's :meth:`~wbc.control.solvers.QPSolver.least_distance`.
            tolerance: the one traced into the kernel's ``d``.
            active: (n_c,) bool, updated in place to the rows active at the answer.
            max_rounds: bound on the rounds of growing the set.

        Returns:
            ``FEASIBLE`` (the answer), or ``FAILED``: the solver failed, ``q̈`` is not finite, or the set
            stopped growing while a row still fails (the full QP then runs).
        """
        working, d, Cu = self.working, self.d, self.Cu
        np.greater(Cu, d, out=working)
        working |= active
        for _ in range(max_rounds):
            r = self._reduce(tolerance)
            rows = self.rows[:r]
            answer = least_distance(self.M[:r], self.h[:r], self.y0, active[rows])
            if answer is None:
                return FAILED
            y, on = answer
            np.copyto(self._y, y)
            code = self._expand()
            if code == FAILED:
                return FAILED
            violated = Cu > d
            if not (violated & ~working).any():
                if code != FEASIBLE:
                    return FAILED
                active[:] = False
                active[rows[on]] = True
                return self._library.command(self._ref) if self.attached else FEASIBLE
            working |= violated
        return FAILED


class Gathers:
    """The kernel buffers of one layout's active rows and columns, in the shortcut's shapes.

    Where the layout uses a buffer whole (every row and column active), its target is the buffer
    itself; otherwise a preallocated column-major copy, refilled by each call (one ``np.take`` of
    precomputed flat indices per buffer; the same copies in C after the kernel on the one-call step):
    a walking robot in single support drops the lifted foot's force columns, equality rows and
    inequality rows.

    Attributes:
        targets: ``(A, b, A_eq, b_eq, G, d, Bhat, scale)``: costs (k, n) (only the traced cost rows
            where some are rows of ``B̂``), (k,); contact equalities (m, n), (m,); the traced inequality
            rows (n_t, n); right-hand sides of ``C u ≤ d`` (n_c,); ``B̂`` (nv, n) (the joint limits' rows
            of ``C``, the posture's cost rows, and ``q̈ = a₀ + B̂u``); the scales of the cost rows of
            ``B̂`` (n_a,).
        partial: whether some target is a gathered copy.
        copies: ``(source, flat indices, target)`` of each copy, the source and the target flat
            column-major views of the buffers, the indices int64 (``target[i] = source[index[i]]``).
    """

    def __init__(self, layout: Layout, outputs: StepOutputs) -> None:
        columns = None if layout.all_columns else layout.columns
        cost = None if layout.all_cost else layout.cost_rows
        eq = None if layout.all_eq else layout.eq_rows
        traced = None if layout._all_traced or not layout._traced_at.size else layout._traced_from
        self.copies: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        scale_rows = None
        if layout.cost_from_bhat:  # the kernel's A holds the traced cost rows only
            traced_from, bhat_from = layout._cost_traced_from, layout._cost_bhat_from
            cost = None if np.array_equal(traced_from, np.arange(outputs.A.shape[0])) else traced_from
            scale_rows = None if np.array_equal(bhat_from, np.arange(outputs.scale.size)) else bhat_from
        self.targets = (
            self._matrix(outputs.A, cost, columns),
            self._vector(outputs.b, cost),
            self._matrix(outputs.A_eq, eq, columns),
            self._vector(outputs.b_eq, eq),
            self._matrix(outputs.G, traced, columns),
            self._vector(outputs.d, layout._d_rows),
            self._matrix(outputs.Bhat, None, columns),
            self._vector(outputs.scale, scale_rows),
        )
        self.partial = bool(self.copies)

    @staticmethod
    def matrix_copy(M: np.ndarray, rows, columns) -> tuple[np.ndarray, np.ndarray]:
        """The column-major target of ``M[rows][:, columns]`` (None: all) and its flat indices into
        ``M`` (column-major)."""
        r = np.arange(M.shape[0]) if rows is None else np.asarray(rows)
        c = np.arange(M.shape[1]) if columns is None else np.asarray(columns)
        target = np.zeros((r.size, c.size), order="F")
        flat = np.ascontiguousarray((r[:, None] + c[None, :] * M.shape[0]).ravel(order="F"), dtype=np.int64)
        return target, flat

    def _matrix(self, M: np.ndarray, rows, columns) -> np.ndarray:
        if rows is None and columns is None:
            return M
        target, flat = self.matrix_copy(M, rows, columns)
        self.copies.append((M.reshape(-1, order="F"), flat, target.reshape(-1, order="F")))
        return target

    def _vector(self, v: np.ndarray, rows) -> np.ndarray:
        if rows is None:
            return v
        target = np.zeros(len(rows))
        self.copies.append((v, np.ascontiguousarray(rows, dtype=np.int64), target))
        return target

    def __call__(self) -> None:
        for source, flat, target in self.copies:
            np.take(source, flat, out=target)
