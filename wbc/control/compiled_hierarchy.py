"""A task hierarchy's step in one C call: the levels solved in ``hierarchy.c``.

:class:`~wbc.control.hierarchy.LexicographicSolver` solves the levels in numpy: some forty numpy and
LAPACK calls on a problem of a few dozen variables, whose Python overhead is most of a step's cost
(Talos, two levels: 4.5 × one level). ``hierarchy.c`` does the same arithmetic (the equalities
eliminated once through the Delassus matrix, each level's minimizer in the null space of the levels
above by one Cholesky solve, ``C u ≤ d`` checked at each level, the next null space from Householder
reflections and a small Jacobi SVD, kept as those reflections while every level has full rank) on
the kernel's buffers, and :meth:`CompiledHierarchy.attach` makes it part of one C call with the input
checks, the kernel and the command, as the weighted controller's one-call step
(:class:`~wbc.control.shortcut.CompiledShortcut`, whose struct, gathers and command it reuses:
``hierarchy.c`` is compiled appended to ``shortcut.c``).

When a level's minimizer breaks a row of ``C u ≤ d`` (an inequality binds at that level), or a
factorization fails, the call says so and the step goes on with the numpy
:class:`~wbc.control.hierarchy.LexicographicSolver` on the same kernel outputs (its levels' QPs, then
the full QP and the fallback); the numpy solver is also the C routine's reference in the tests.

Applies to layouts with several levels whose equalities are the contacts' own rows (eliminable) or
absent (a fixed-base arm).
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..codegen.cache import CacheUnavailable, cached_source_library, find_compiler
from ..errors import CompileError
from .builder import Layout
from .hierarchy import null_space_rank_tolerance
from .outputs import StepOutputs
from .shortcut import Attachment, CompiledShortcut
from .shortcut_library import FLAGS, Library, _load, bind_step_objects, python_include

__all__ = ["CompiledHierarchy", "HierarchyData", "HierarchyLibrary", "hierarchy_library"]

_P = ctypes.c_void_p

_BUFFERS = (
    "sq", "above", "floor_", "sr", "a", "T", "u0", "At", "bt", "K", "e", "S", "H", "Z", "Z2", "xi", "z", "Vt", "sv",
    "Mc", "work", "G", "Q", "qbeta", "y",
)  # fmt: skip


class HierarchyData(ctypes.Structure):
    """``wbc_hierarchy_data`` of ``hierarchy.c`` (checked against the library's exports)."""

    _fields_ = [
        ("s", _P),
        ("nlev", ctypes.c_int),
        ("kmax", ctypes.c_int),
        ("lwork", ctypes.c_int),
        ("solved", ctypes.c_int),
        ("rank_tol", ctypes.c_double),
        ("lev_rows", _P),
        ("lev_start", _P),
        *[(name, _P) for name in _BUFFERS],
    ]


class HierarchyLibrary(NamedTuple):
    """The compiled routines: ``shortcut`` (``shortcut.c``'s, for the struct they share), ``levels``
    (the levels on the current outputs), ``step`` (checks, kernel, gathers, levels, command) and
    ``step_objects`` (``step`` reading ``q`` and ``v`` from Python objects; None without CPython's
    headers), each taking the :class:`HierarchyData`'s address first; ``step_method``, the address of
    ``step_objects``'s ``PyMethodDef`` as a builtin taking ``(q, v)`` (0 without)."""

    shortcut: Library
    levels: Callable[..., int]
    step: Callable[..., int]
    step_objects: Callable[..., int] | None
    step_method: int


def _check_abi(library: ctypes.CDLL, path: Path) -> None:
    """Refuse a library whose ``wbc_hierarchy_data`` differs from :class:`HierarchyData`."""
    size, entry = library.wbc_hierarchy_abi_size, library.wbc_hierarchy_abi_entry
    size.restype = ctypes.c_size_t
    entry.restype, entry.argtypes = ctypes.c_char_p, [ctypes.c_int, ctypes.POINTER(ctypes.c_long)]
    exported: dict[str, int] = {}
    value = ctypes.c_long()
    while (name := entry(len(exported), ctypes.byref(value))) is not None:
        exported[name.decode()] = int(value.value)
    declared = {f[0]: getattr(HierarchyData, f[0]).offset for f in HierarchyData._fields_}
    if size() != ctypes.sizeof(HierarchyData) or exported != declared:
        differ = [n for n in declared if exported.get(n) != declared[n]] + [n for n in exported if n not in declared]
        raise CompileError(
            f"{path}: its wbc_hierarchy_data ({size()} bytes) differs from HierarchyData "
            f"({ctypes.sizeof(HierarchyData)} bytes){f' at field {differ[0]!r}' if differ else ''}"
        )


def _load_hierarchy(path: Path) -> HierarchyLibrary:
    shortcut = _load(path)  # shortcut.c's routines and its struct's ABI check
    try:
        library = ctypes.CDLL(str(path))
        _check_abi(library, path)
        levels, step = library.wbc_hierarchy, library.wbc_hierarchy_step
    except (OSError, AttributeError) as e:
        raise CompileError(f"{path}: cannot load the hierarchy's routines from it: {e}") from None
    for function in (levels, step):
        function.argtypes, function.restype = [_P], ctypes.c_int
    step_objects, step_method = None, 0
    if shortcut.step_objects is not None:
        python_library = ctypes.PyDLL(str(path))
        step_objects = python_library.wbc_hierarchy_step_objects
        step_objects.argtypes = [_P, ctypes.py_object, ctypes.py_object]
        step_objects.restype = ctypes.c_int
        method = python_library.wbc_hierarchy_step_method
        method.restype, method.argtypes = _P, []
        step_method = int(method() or 0)
    return HierarchyLibrary(shortcut, levels, step, step_objects, step_method)


@functools.cache
def hierarchy_library() -> HierarchyLibrary | None:
    """The compiled routines (``shortcut.c`` and ``hierarchy.c``), or None when they cannot be built
    (no C compiler, no writable cache, an ABI that differs: the numpy hierarchy runs)."""
    if find_compiler() is None:
        return None
    package = resources.files("wbc.control")
    source = package.joinpath("shortcut.c").read_text() + "\n" + package.joinpath("hierarchy.c").read_text()
    include = python_include()
    flags = FLAGS if include is None else (*FLAGS, "-DWBC_WITH_PYTHON", f"-I{include}")
    try:
        return cached_source_library("wbc_hierarchy", source, _load_hierarchy, flags=flags)
    except (CompileError, CacheUnavailable):
        return None


class CompiledHierarchy:
    """The levels of one :class:`~wbc.control.builder.Layout` solved in C on one kernel's buffers.

    Attributes:
        layout: the layout.
        shortcut: the layout's :class:`~wbc.control.shortcut.CompiledShortcut` (the struct, gathers
            and command the levels use; its own least squares is the weighted problem's, not used).
        u: (n,) the solution of the last call (overwritten by the next).
        out, data, attached: as :class:`~wbc.control.shortcut.CompiledShortcut`'s.
        step, step_objects: after :meth:`attach`: the one-call step (codes as the shortcut's:
            ``INFEASIBLE`` when a level binds, ``FAILED`` when a factorization fails).
    """

    @classmethod
    def build(cls, layout: Layout, outputs: StepOutputs) -> CompiledHierarchy | None:
        """The compiled hierarchy of ``layout``, or None where it does not apply (no cost row,
        equalities other than the contacts' own rows, one level with equalities: the compiled shortcut's
        case) or no library is available. One level without equalities (a fixed base, no contact) is
        the weighted problem's minimizer, as :class:`~wbc.control.strategies.Minimizer` computes it."""
        if layout.cost_rows.size == 0 or (len(layout.levels) < 2 and layout.eq_rows.size):
            return None
        if layout.eq_rows.size and not layout.eliminable:
            return None
        library = hierarchy_library()
        return None if library is None else cls(library, layout, outputs)

    def __init__(self, library: HierarchyLibrary, layout: Layout, outputs: StepOutputs) -> None:
        self._library = library
        self.layout = layout
        self.shortcut = shortcut = CompiledShortcut(library.shortcut, layout, outputs)
        p, n, k = shortcut.p, shortcut.u.size, layout.cost_rows.size
        kmax = max(rows.size for rows in layout.levels)
        self._rows = np.ascontiguousarray(np.concatenate(layout.levels), dtype=np.int64)
        self._start = np.cumsum([0] + [rows.size for rows in layout.levels], dtype=np.int64)
        lwork = max(kmax * p + p, (3 * p + 2 * (p + 3)) * (p + 3))  # Rᵀ and the reflectors' factors; reflect_gram's
        shapes = {
            "sq": n, "above": n, "floor_": n, "sr": n, "a": p, "T": n * p, "u0": n, "At": k * p, "bt": k,
            "K": (kmax + n) * p, "e": kmax + n, "S": (kmax + n) * p, "H": p * p, "Z": p * p, "Z2": p * p,
            "xi": p, "z": p, "Vt": p * p, "sv": p, "Mc": kmax * p, "work": lwork,
            "G": p * p, "Q": p * p, "qbeta": p, "y": p,
        }  # fmt: skip
        self._buffers = {name: np.zeros(max(1, size)) for name, size in shapes.items()}
        data = HierarchyData()
        data.s = shortcut._ref
        data.nlev, data.kmax, data.lwork = len(layout.levels), kmax, lwork
        data.rank_tol = null_space_rank_tolerance
        data.lev_rows, data.lev_start = self._rows.ctypes.data, self._start.ctypes.data
        for name, buffer in self._buffers.items():
            setattr(data, name, buffer.ctypes.data)
        self._data = data
        self._ref = ctypes.addressof(data)
        self.u = shortcut.u
        self.data = shortcut.data
        self.out = shortcut.out
        self.attached = False
        self.step: Callable[[], int] = shortcut.step
        self.step_objects: Callable[[Any, Any], int] | None = None

    def __call__(self, regularization: float) -> int:
        """The levels on the kernel's current outputs: ``FEASIBLE`` (:attr:`u` is the hierarchy's
        solution), ``INFEASIBLE`` (a level's minimizer breaks a row of ``C u ≤ d``) or ``FAILED``."""
        self.shortcut.data.reg = regularization
        self.shortcut._gathers()
        return self._library.levels(self._ref)

    @property
    def levels_solved(self) -> int:
        """The levels the last call solved (all of them after ``FEASIBLE``, fewer when one bound)."""
        return self._data.solved

    def attach(self, attachment: Attachment) -> bool:
        """As :meth:`CompiledShortcut.attach`: the checks, the kernel, the levels and the command in
        one C call (:attr:`step`, :attr:`step_objects`); False (nothing changed) when it cannot."""
        if not self.shortcut.attach(attachment):
            return False
        self.out = self.shortcut.out
        self.step = functools.partial(self._library.step, self._ref)
        self.step_objects = bind_step_objects(self._library, self._ref, self)
        self.attached = True
        return True
