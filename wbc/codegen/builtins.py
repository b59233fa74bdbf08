"""CPython builtin functions written in C without Python's headers: one C call per Python call.

A hand-written C source (shipped with wbc, compiled once per machine into the kernel cache by
:func:`~wbc.codegen.cache.cached_source_library`) defines a ``METH_FASTCALL`` function and exports
its ``PyMethodDef`` (a static struct: it outlives every function made from it) and the size of the
data struct the Python side lays out with ``ctypes`` (checked on loading). :func:`new_builtin`
makes a builtin function of a definition and a ``self`` tuple that holds the data's address and
keeps everything the C code reads alive. The C code includes ``stable_abi.h`` (the few functions of
CPython's stable ABI it calls, shared by the routines), so no ``Python.h`` (often not installed) is
needed.

Used by :mod:`wbc.codegen.calls` (the numeric API's calls) and :mod:`wbc.control.target_call` (the
tasks' ``set_target``). Not available on a free-threaded CPython (those routines rely on the GIL
to run without a lock), without a C compiler or without a writable cache: :func:`definitions`
then answers None and the callers keep their Python paths.
"""

from __future__ import annotations

import ctypes
import functools
import sysconfig
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path

from ..errors import CompileError
from .cache import CacheUnavailable, cached_source_library, find_compiler

__all__ = ["definitions", "new_builtin", "is_builtin", "with_stable_abi", "FLAGS", "STABLE_ABI_HEADER"]

#: Compiler flags of the routines (small, with loops).
FLAGS: tuple[str, ...] = ("-O2", "-fPIC", "-shared", "-fno-math-errno")

_P = ctypes.c_void_p
_loaded: list[ctypes.CDLL] = []  # kept for the life of the process: their functions are referenced by address


def load(path: Path, symbols: Sequence[str], size_symbol: str, size: int) -> tuple[int, ...]:
    """The addresses returned by the functions ``symbols`` (no arguments) of the library at
    ``path``, after checking that ``size_symbol()`` returns ``size``.

    Raises:
        CompileError: the library does not load, lacks a symbol or has another data layout.
    """
    try:
        library = ctypes.PyDLL(str(path))
        functions = [getattr(library, s) for s in symbols]
        size_of = getattr(library, size_symbol)
    except (OSError, AttributeError) as e:
        raise CompileError(f"{path}: cannot load {', '.join(symbols)} from it: {e}") from None
    size_of.restype, size_of.argtypes = ctypes.c_int, []
    if size_of() != size:
        raise CompileError(f"{path}: its data layout ({size_of()} bytes) is not the {size} bytes wbc lays out")
    addresses = []
    for f in functions:
        f.restype, f.argtypes = _P, []
        addresses.append(int(f() or 0))
    if not all(addresses):
        raise CompileError(f"{path}: a method definition is missing")
    _loaded.append(library)
    return tuple(addresses)


@functools.cache
def definitions(
    package: str, filename: str, name: str, symbols: tuple[str, ...], size_symbol: str, size: int
) -> tuple[int, ...] | None:
    """The method definitions ``symbols`` of the C source ``filename`` of ``package``, compiled as
    library ``name`` (see the module docstring), or None when unavailable."""
    if sysconfig.get_config_var("Py_GIL_DISABLED") or find_compiler() is None:
        return None
    source = with_stable_abi(resources.files(package).joinpath(filename).read_text())
    try:
        return cached_source_library(name, source, lambda path: load(path, symbols, size_symbol, size), flags=FLAGS)
    except (CompileError, CacheUnavailable):
        return None


#: The header of CPython's stable ABI the routines include (``-I`` this folder to compile one by hand).
STABLE_ABI_HEADER = "stable_abi.h"


def with_stable_abi(source: str) -> str:
    """``source`` with its ``#include "stable_abi.h"`` line replaced by the header's text: the kernel
    cache compiles (and digests) one source text."""
    header = resources.files(__package__).joinpath(STABLE_ABI_HEADER).read_text()
    line = f'#include "{STABLE_ABI_HEADER}"'
    if line not in source:
        raise CompileError(f"a builtin's C source does not include {STABLE_ABI_HEADER}")
    return source.replace(line, header, 1)


@functools.cache
def _new() -> Callable[[int, tuple, None], Callable]:
    new = ctypes.pythonapi.PyCFunction_NewEx
    new.restype, new.argtypes = ctypes.py_object, [_P, ctypes.py_object, _P]
    return new


def new_builtin(definition: int, self: tuple) -> Callable:
    """A builtin function of the method definition at address ``definition`` with ``self``."""
    return _new()(definition, self, None)


_BUILTIN = type(len)


def is_builtin(function: object) -> bool:
    """Whether ``function`` is a builtin function (made by :func:`new_builtin`, or any other)."""
    return type(function) is _BUILTIN
