"""Fingerprints: a digest of everything a trace is made from, to find its kernel without tracing.

:func:`fingerprint` hashes objects by value, recursively: numbers (exactly, by ``repr``), strings,
enums, paths (as text), numpy arrays (dtype, shape, bytes), lists, tuples, dicts (in order), sets, slices, and the
instances of wbc's own classes (class name and every attribute, sorted by name, cycles as
back-references; a class lists derived attributes to leave out in ``_fingerprint_skip``).
Anything else (a class defined outside wbc, a function, a CasADi object, an object array) makes
it answer ``None``: such a trace is not fingerprinted, it is traced. Weak references (a task's
link to its controller) are not followed.

:func:`source_digest` hashes the source of wbc itself (and of ``wbc.tasks`` and ``wbc.robots``),
so that any change of the code that traces invalidates every fingerprint; :func:`sources_unchanged`
says whether those files still are what this process imported (an index is written only then).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import importlib.util
import os
import platform
import sys
import time
import types
import weakref
from pathlib import Path, PurePath

import casadi as ca
import numpy as np

from . import memo
from .cache import cache_dir

__all__ = ["fingerprint", "source_digest", "sources_unchanged"]

_PACKAGES = ("wbc", "wbc.tasks", "wbc.robots")
_IMPORTED = time.time()  # files changed after this may differ from the code this process runs


class _Refused(Exception):
    """An object that is not fingerprinted (see the module docstring)."""


def fingerprint(*objects) -> str | None:
    """SHA-256 (hex) of ``objects`` by value, with wbc's source digest and the versions of Python,
    numpy and CasADi; None when one of them holds something that is not fingerprinted."""
    h = hashlib.sha256()
    h.update(
        f"wbc fingerprint 1|{source_digest()}|{sys.version}|{np.__version__}|{getattr(ca, '__version__', '')}|".encode()
    )
    h.update(f"{platform.system()} {platform.machine()}|".encode())
    try:
        for obj in objects:
            _feed(obj, h, {})
    except (_Refused, RecursionError):
        return None
    return h.hexdigest()


def _wbc_class(cls: type) -> bool:
    module = getattr(cls, "__module__", "") or ""
    return module == "wbc" or module.startswith("wbc.")


def _feed(obj, h, memo: dict[int, int]) -> None:
    t = type(obj)
    if obj is None or t in (bool, int, float, str, complex):
        h.update(f"{t.__name__}:{obj!r};".encode())
    elif t is bytes:
        h.update(b"bytes:%d:" % len(obj) + obj)
    elif isinstance(obj, enum.Enum):
        if not _wbc_class(t):
            raise _Refused
        h.update(f"enum:{t.__module__}.{t.__qualname__}.{obj.name};".encode())
    elif t is np.ndarray:
        if obj.dtype.hasobject:
            raise _Refused
        h.update(f"array:{obj.dtype.str}:{obj.shape}:".encode())
        h.update(np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, np.generic):
        if obj.dtype.hasobject:
            raise _Refused
        h.update(f"scalar:{obj.dtype.str}:".encode() + obj.tobytes())
    elif t in (list, tuple):
        h.update(f"{t.__name__}:{len(obj)}[".encode())
        for x in obj:
            _feed(x, h, memo)
        h.update(b"]")
    elif t is dict or t is types.MappingProxyType:
        h.update(f"dict:{len(obj)}{{".encode())
        for k, v in obj.items():
            _feed(k, h, memo)
            _feed(v, h, memo)
        h.update(b"}")
    elif t in (set, frozenset):
        items = sorted(_digest(x) for x in obj)
        h.update(f"{t.__name__}:{len(items)}:{','.join(items)};".encode())
    elif isinstance(obj, PurePath):
        h.update(f"path:{obj!s};".encode())
    elif t is slice:
        h.update(f"slice:{obj.start!r}:{obj.stop!r}:{obj.step!r};".encode())
    elif t is weakref.ref:
        h.update(b"weakref;")  # a back-link (owner), never read when tracing
    elif _wbc_class(t) and not isinstance(obj, type) and not callable(obj):
        if id(obj) in memo:
            h.update(f"ref:{memo[id(obj)]};".encode())
            return
        memo[id(obj)] = len(memo)
        h.update(f"object:{t.__module__}.{t.__qualname__}{{".encode())
        for name, value in _state(obj):
            h.update(f"{name}=".encode())
            _feed(value, h, memo)
        h.update(b"}")
    else:
        raise _Refused


def _digest(obj) -> str:
    h = hashlib.sha256()
    _feed(obj, h, {})
    return h.hexdigest()


def _state(obj) -> list[tuple[str, object]]:
    """Every attribute of ``obj`` (instance dictionary and slots), sorted by name, but those its
    class names in ``_fingerprint_skip`` (derived state: caches, buffers, compiled helpers)."""
    state = dict(getattr(obj, "__dict__", {}))
    for name in getattr(type(obj), "_fingerprint_skip", ()):
        state.pop(name, None)
    slots, fields = _attribute_names(type(obj))
    for name in slots:
        if hasattr(obj, name):
            state[name] = getattr(obj, name)
    for name in fields:
        if name not in state:
            state[name] = getattr(obj, name)
    return sorted(state.items())


def _attribute_names(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The slot names of ``cls`` (and its bases) and, for a dataclass, its field names."""
    known = _ATTRIBUTE_NAMES.get(cls)
    if known is None:
        known = _ATTRIBUTE_NAMES[cls] = _find_attribute_names(cls)
    return known


_ATTRIBUTE_NAMES: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _find_attribute_names(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    slots = []
    for base in cls.__mro__:
        names = getattr(base, "__slots__", ())
        for name in (names,) if isinstance(names, str) else names:
            if name not in ("__dict__", "__weakref__"):
                slots.append(name)
    fields = tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else ()
    return tuple(slots), fields


_source: list[tuple[str, dict[Path, tuple[int, int]]]] = []  # computed once per process


def _package_files() -> list[Path]:
    files: set[str] = set()
    for package in _PACKAGES:
        spec = importlib.util.find_spec(package)
        for location in (spec.submodule_search_locations or []) if spec is not None else []:
            for root, _, names in os.walk(location):
                files.update(os.path.join(root, n) for n in names if n.endswith((".py", ".c")))
    return sorted(Path(f) for f in files)


def _hash_files(files: list[Path]) -> tuple[str, dict[Path, tuple[int, int]]]:
    h = hashlib.sha256()
    stats = {}
    for path in files:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            data = f.read()
        stats[path] = (st.st_mtime_ns, st.st_size)
        h.update(f"{path.name}:{st.st_size}:".encode())
        h.update(data)
    return h.hexdigest(), stats


def source_digest() -> str:
    """SHA-256 of wbc's source files (``*.py``, ``*.c`` of wbc, wbc.tasks, wbc.robots), once per
    process; remembered across processes in the kernel cache (:mod:`wbc.codegen.memo`) under the
    files' paths, sizes, modification times and inodes."""
    if not _source:
        files = _package_files()
        try:
            stats = {path: os.stat(path) for path in files}
        except OSError:
            stats = {}
        stamp = "\n".join(f"{p}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}|{st.st_dev}" for p, st in stats.items())
        place = cache_dir()
        known = memo.recall(place, "sources", stamp) if stats else None
        if known is not None:
            _source.append((known, {p: (st.st_mtime_ns, st.st_size) for p, st in stats.items()}))
        else:
            _source.append(_hash_files(files))
            if stats:
                memo.remember(place, "sources", stamp, _source[0][0])
    return _source[0][0]


def sources_unchanged() -> bool:
    """True when wbc's source files are those :func:`source_digest` hashed and none was modified
    after this module was imported (so the code this process runs is the code hashed)."""
    digest = source_digest()
    try:
        files = _package_files()
        now, stats = _hash_files(files)
    except OSError:
        return False
    return now == digest and all(mtime / 1e9 < _IMPORTED for mtime, _ in stats.values())
