"""The compiled shortcut's C library (``shortcut.c``): built once per machine, loaded, its ABI checked.

``shortcut.c`` (next to this module) holds the controller's least squares with the contact forces
eliminated, the feasibility check ``C u ≤ d``, the command, the binding step's least-distance
reduction, and the one-call step (input checks, the kernel's CasADi-generated C function, the rest).
It is compiled through the kernel cache (:func:`~wbc.codegen.cache.cached_source_library`, ``-O3``
and :func:`~wbc.codegen.cache.fused_flags`), with CPython's headers when they are installed (then
``wbc_step_objects`` reads ``q`` and ``v`` through the buffer protocol), and called through ctypes
with the address of one struct.

The struct is declared twice, in C and here (:class:`ShortcutData`); the library exports the struct's
size, every field's name and offset, and every return code's name and value (``wbc_abi_*``), and
:func:`shortcut_library` refuses a library whose exports differ from this module's declarations
(:class:`~wbc.errors.CompileError`, then the step runs without it).
"""

from __future__ import annotations

import _ctypes
import ctypes
import enum
import functools
import itertools
import os
import sysconfig
import warnings
import weakref
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import NamedTuple, Protocol

from ..codegen.builtins import new_builtin
from ..codegen.cache import CacheUnavailable, cached_source_library, find_compiler, fused_flags
from ..codegen.kernel import Kernel
from ..errors import CompileError, WbcPerformanceWarning

__all__ = ["Code", "ShortcutData", "Library", "shortcut_library", "kernel_symbol", "FLAGS", "python_include"]


class Code(enum.IntEnum):
    """The routines' return codes (``enum wbc_code`` in ``shortcut.c``)."""

    FEASIBLE = 0  #: the minimizer under the equalities satisfies ``C u ≤ d``: it is the QP's solution
    INFEASIBLE = 1  #: it is finite but breaks a row of ``C u ≤ d`` (an inequality binds)
    FAILED = 2  #: a factorization failed, or the answer (or ``q̈``) is not finite
    BAD_INPUT = 3  #: ``q`` or ``v`` is not finite, or a unit part of ``q`` is not of unit norm
    KERNEL_FAILED = 4  #: the kernel's C function returned an error
    NOT_VECTORS = 5  #: ``q`` or ``v`` is not a C-contiguous float64 ndarray of its size: nothing done


#: Compiler flags of the routines (small, loops: -O3 pays here, unlike on the large traced kernels;
#: measured 8.75 against 9.05 µs at -O2 for the shortcut and command of Talos standing), with the
#: machine's :func:`~wbc.codegen.cache.fused_flags` (AVX: 7.8 against 8.2 µs; with FMA, the blocked
#: products fuse their multiply-adds).
FLAGS = ("-O3", "-fPIC", "-shared", "-fno-math-errno", *fused_flags())

_P = ctypes.c_void_p


_INTS = ("k", "p", "m", "nc", "ng", "c0", "nspan", "nb", "nt", "nv", "ne", "ncontact")
_POINTERS = (
    "A", "b", "Aeq", "beq", "Cg", "g_rows", "b_rows", "b_cols", "b_sign", "G", "traced", "d",
    "u", "Cu", "L", "X", "S", "H", "rf", "W",
    "kernel", "arg", "res", "iw", "w", "q", "v",
)  # fmt: skip


class ShortcutData(ctypes.Structure):
    """``wbc_shortcut_data`` of ``shortcut.c`` (field by field; checked against the library's exports)."""

    _fields_ = [
        *[(name, ctypes.c_int) for name in _INTS],
        ("reg", ctypes.c_double),
        *[(name, _P) for name in _POINTERS],
        ("nq", ctypes.c_int),
        ("n_unit", ctypes.c_int),
        ("check", ctypes.c_int),
        ("unit_tol", ctypes.c_double),
        *[(name, _P) for name in ("unit", "a0", "Bhat", "errors", "normal", "out")],
        ("t_kernel", ctypes.c_double),
        ("t_qp", ctypes.c_double),
        ("Cdense", _P),
        ("traced_at", _P),
        ("vector_type", _P),
        ("ngather", ctypes.c_int),
        *[(name, _P) for name in ("gather_len", "gather_src", "gather_idx", "gather_dst")],
        ("nh", ctypes.c_int),
        *[(name, _P) for name in ("h_rows", "h_index", "h_sign", "h_at", "Bu")],
        ("na", ctypes.c_int),
        ("nat", ctypes.c_int),
        *[(name, _P) for name in ("A_traced", "at_rows", "a_rows", "a_index", "a_scale", "A_full")],
        ("a_blocks", ctypes.c_int),
        ("rx", _P),
        *[(name, _P) for name in ("binding_active", "binding_rows", "binding_M", "binding_work")],
        ("binding_iterations", ctypes.c_int),
        ("binding_step", ctypes.c_int),
        ("binding_tol", ctypes.c_double),
        ("binding_code", ctypes.c_int),
    ]


class Library(NamedTuple):
    """The compiled routines, each taking the struct's address first: ``shortcut`` (the least squares
    and the check on the kernel's outputs), ``step`` (the input checks, the kernel, then the same, and
    the command), ``command`` (the command of a given ``u``), ``check_state`` (the input checks of
    ``step`` alone, on the kernel's ``q`` and ``v`` buffers), ``reduce`` and ``expand`` (a binding
    step's QP on working rows in least-distance form, and its answer back to ``u``), and
    ``step_objects`` (``step`` reading ``q`` and ``v`` from Python objects; None without CPython's
    headers; ``step_method``, the address of its ``PyMethodDef`` as a builtin taking ``(q, v)``,
    0 without), ``binding`` (a binding step's QP over every row of ``C u ≤ d``, solved in C by a dual
    active-set method, warm-started); ``path``, the library's file."""

    shortcut: Callable[..., int]
    step: Callable[..., int]
    command: Callable[..., int]
    check_state: Callable[..., int]
    reduce: Callable[..., int]
    expand: Callable[..., int]
    step_objects: Callable[..., int] | None
    step_method: int
    binding: Callable[..., int]
    path: Path


class StepObjects(Protocol):
    """What :func:`bind_step_objects` reads of a library (:class:`Library`, or the hierarchy's)."""

    @property
    def step_objects(self) -> Callable[..., int] | None: ...

    @property
    def step_method(self) -> int: ...


def bind_step_objects(library: StepObjects, ref: object, owner: object) -> Callable[..., int] | None:
    """``library``'s one-call step reading ``(q, v)`` from Python objects, bound to the struct at
    ``ref``: a builtin (one C call, no ctypes conversions) where the library has its method definition
    and the GIL is on, else the ctypes routine; None without CPython's headers. The builtin holds
    the struct and every buffer it points into (``owner``'s attributes, not ``owner``: no reference
    cycle, so a dropped controller unloads its kernel at once, before a rebuilt library may take the
    same path)."""
    if library.step_method and not sysconfig.get_config_var("Py_GIL_DISABLED"):
        return new_builtin(library.step_method, (ref, tuple(vars(owner).values())))
    if library.step_objects is not None:
        return functools.partial(library.step_objects, ref)
    return None


def python_include() -> str | None:
    """The directory of CPython's headers when ``Python.h`` is there, else None."""
    include = sysconfig.get_paths().get("include")
    return include if include and (Path(include) / "Python.h").is_file() else None


def _abi_table(library: ctypes.CDLL, table: int) -> dict[str, int]:
    """Table ``table`` of the library's ABI exports (0: field offsets, 1: return codes), by name."""
    entry = library.wbc_abi_entry
    entry.restype, entry.argtypes = ctypes.c_char_p, [ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_long)]
    value = ctypes.c_long()
    out: dict[str, int] = {}
    for i in itertools.count():
        name = entry(table, i, ctypes.byref(value))
        if name is None:
            return out
        out[name.decode()] = int(value.value)
    raise AssertionError  # unreachable: the loop returns


def _check_abi(library: ctypes.CDLL, path: Path) -> None:
    """Refuse a library whose struct or return codes differ from :class:`ShortcutData` and :class:`Code`."""
    size = library.wbc_abi_size
    size.restype = ctypes.c_size_t
    exported = _abi_table(library, 0)
    declared = {f[0]: getattr(ShortcutData, f[0]).offset for f in ShortcutData._fields_}
    if size() != ctypes.sizeof(ShortcutData) or exported != declared:
        names = list(exported) + [n for n in declared if n not in exported]  # the C declaration's order
        differ = [n for n in names if exported.get(n) != declared.get(n)]
        first = f" from field {differ[0]!r} on (C offset {exported.get(differ[0])}, here {declared.get(differ[0])})"
        raise CompileError(
            f"{path}: its struct ({size()} bytes) differs from ShortcutData ({ctypes.sizeof(ShortcutData)} "
            f"bytes){first if differ else ''}: the library and wbc.control.shortcut_library disagree"
        )
    codes = _abi_table(library, 1)
    if codes != {c.name: int(c) for c in Code}:
        raise CompileError(f"{path}: its return codes {codes} differ from wbc.control.shortcut_library.Code")


def _load(path: Path) -> Library:
    try:
        library = ctypes.CDLL(str(path))
        _check_abi(library, path)
        names = ("shortcut", "step", "command", "check_state", "reduce", "expand", "binding")
        functions = [getattr(library, f"wbc_{name}") for name in names]
    except (OSError, AttributeError) as e:
        raise CompileError(f"{path}: cannot load the shortcut's routines from it: {e}") from None
    for function in functions:
        function.argtypes = [_P]  # the struct's address (the cheapest conversion ctypes makes)
        function.restype = ctypes.c_int
    functions[4].argtypes = [_P, _P, _P, _P, _P, _P, ctypes.c_double]
    functions[5].argtypes = [_P, _P]
    functions[6].argtypes = [_P, ctypes.c_double]
    step_objects, step_method = None, 0
    try:  # with the GIL held: it reads q and v through the buffer protocol
        python_library = ctypes.PyDLL(str(path))
        step_objects = python_library.wbc_step_objects
        step_objects.argtypes = [_P, ctypes.py_object, ctypes.py_object]
        step_objects.restype = ctypes.c_int
        method = python_library.wbc_step_method
        method.restype, method.argtypes = _P, []
        step_method = int(method() or 0)
    except AttributeError:  # built without CPython's headers
        pass
    except OSError as e:
        raise CompileError(f"{path}: cannot load it as a Python extension: {e}") from None
    shortcut, step, command, check_state, reduce, expand, binding = functions
    return Library(shortcut, step, command, check_state, reduce, expand, step_objects, step_method, binding, path)


@functools.cache
def shortcut_library() -> Library | None:
    """The compiled routines (:class:`Library`), or None (with one warning) when they cannot be
    built: no C compiler, no writable cache, or a library whose ABI differs from this module's."""
    if find_compiler() is None:
        return None
    source = resources.files("wbc.control").joinpath("shortcut.c").read_text()
    include = python_include()
    flags = FLAGS if include is None else (*FLAGS, "-DWBC_WITH_PYTHON", f"-I{include}")
    try:
        return cached_source_library("wbc_shortcut", source, _load, flags=flags)
    except (CompileError, CacheUnavailable) as e:
        warnings.warn(f"the compiled shortcut is unavailable ({e}); the QP runs", WbcPerformanceWarning, stacklevel=2)
        return None


class OpenedLibrary:
    """A shared library opened again by path (the one CasADi loaded for a kernel), closed when this
    object is collected: a library left open forever would be what a later load of a rebuilt file at
    the same path finds (dlopen matches by path), with its old code."""

    def __init__(self, path: Path) -> None:
        try:  # the one already loaded, else loaded here
            self.library = ctypes.CDLL(str(path), mode=os.RTLD_NOLOAD | os.RTLD_NOW)
        except OSError:
            self.library = ctypes.CDLL(str(path))
        weakref.finalize(self, _ctypes.dlclose, self.library._handle)


def kernel_symbol(kernel: Kernel) -> tuple[int, tuple[int, int, int, int], OpenedLibrary] | None:
    """The address of ``kernel``'s CasADi-generated C function, its work sizes ``(arg, res, iw, w)``
    and the library holding it (keep it as long as the address is used), or None when the kernel is
    not a compiled library of the expected ABI (then it runs through CasADi)."""
    if kernel.backend != "c" or kernel.library is None:
        return None
    try:
        opened = OpenedLibrary(kernel.library)
        library = opened.library
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
    return ctypes.cast(function, _P).value or 0, (arg, res, iw, w), opened
