"""Kernels found by a fingerprint of what they are traced from, without tracing.

A cache hit through :func:`~wbc.codegen.compile_function` still needs the traced function (its
serialization is the key), and tracing a whole-body controller's step takes longer than loading
its library. :func:`compile_indexed` takes a **fingerprint** of everything the trace is made from
(:func:`~wbc.codegen.fingerprint.fingerprint`: the model, the contributors, the options, wbc's own
source) and looks for ``<dir>/index-<name>-<key>.json``, which names the library, the full key of
the library (checked against its ``.sha256`` sidecar and the library's bytes, as every cache hit
is), the kernel's input and output names and shapes, whatever the caller recorded with it
(e.g. the builder's row structure), and one **digest** of the whole entry: the library's bytes and
every field of the record. Found and valid (the index file, the library and the sidecar trusted
as :mod:`wbc.codegen.trust` says, in a trusted directory; the digest matching; the library's
signature matching the record; the caller's ``check`` of the value against the loaded kernel
passing): the library is loaded, nothing is traced. An index that exists but fails the digest or
the caller's check is not used, with a :class:`~wbc.errors.WbcSecurityWarning`: the kernel is
traced again and the index rewritten.
Otherwise ``make()`` traces, the kernel is compiled (or taken from the cache) as usual, and the
index is written (atomically, best effort: a read-only cache is simply not indexed; never when
wbc's source files changed since this process imported them).

The key also hashes the compiler, its version, the flags and the machine, like a library's. A
fingerprint that cannot be computed (``None``: a contributor class from outside wbc, a callable
attribute...) means: trace every time. Code is identified by wbc's source files: a process that
replaces wbc functions at run time (monkeypatching what is traced) must set
``WBC_KERNEL_INDEX=0``, which turns the index off (no lookup, no write).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import casadi as ca

from ..errors import CompileError, WbcSecurityWarning
from .cache import DEFAULT_FLAGS, _compiler_id, _fallback_path, _origin, find_compiler, library_digest
from .fingerprint import sources_unchanged
from .kernel import Kernel, compile_function
from .trace import TracedFunction
from .trust import PUBLIC_FILE_MODE, untrusted_directory, untrusted_file

__all__ = ["compile_indexed", "find_indexed", "build_indexed"]

T = TypeVar("T")

_FORMAT = 2  # 2: the entry digest
_STEM = re.compile(r"^[A-Za-z0-9_]+-[0-9a-f]{24}$")


def compile_indexed(
    name: str,
    fingerprint: str | None,
    make: Callable[[], tuple[ca.Function, T, Any]],
    parse: Callable[[Any], T | None],
    *,
    check: Callable[[Kernel, T], str | None] | None = None,
    directory: Path | str | None = None,
    flags: Sequence[str] = DEFAULT_FLAGS,
    compiler: str | None = None,
) -> tuple[Kernel, T, bool]:
    """The kernel ``make()`` would trace and compile, found by ``fingerprint`` when indexed.

    Args:
        name: a safe name stem for the index file (letters, digits, underscores).
        fingerprint: the digest of everything ``make`` traces from, or None (no index).
        make: traces; returns ``(function, value, record)``: ``value`` goes with the kernel,
            ``record`` (JSON data) describes it in the index.
        parse: ``record`` -> ``value`` again (None if it does not read: the index is not used).
        check: ``(kernel, value)`` -> why the value read from an index does not fit the loaded
            kernel (shapes, row counts), or None when it does; a misfit is traced again.

    Returns:
        ``(kernel, value, traced)``: ``traced`` is False when the index answered.

    Raises:
        CompileError: as :func:`~wbc.codegen.compile_function`.
    """
    compiler = compiler or find_compiler()
    key, found = find_indexed(
        name, fingerprint, parse, check=check, directory=directory, flags=flags, compiler=compiler
    )
    if found is not None:
        return found[0], found[1], False
    function, value, extra = make()
    kernel = build_indexed(name, key, function, extra, directory=directory, flags=flags, compiler=compiler)
    return kernel, value, True


def find_indexed(
    name: str,
    fingerprint: str | None,
    parse: Callable[[Any], T | None],
    *,
    check: Callable[[Kernel, T], str | None] | None = None,
    directory: Path | str | None = None,
    flags: Sequence[str] = DEFAULT_FLAGS,
    compiler: str | None = None,
) -> tuple[str | None, tuple[Kernel, T] | None]:
    """The lookup half of :func:`compile_indexed`: ``(key, (kernel, value))`` when the index
    answers, ``(key, None)`` when not (``key`` is what :func:`build_indexed` indexes the kernel
    under, None when nothing is indexed: no fingerprint, no compiler, ``WBC_KERNEL_INDEX=0``)."""
    compiler = compiler or find_compiler()
    location = Path(directory) if directory is not None else None
    enabled = os.environ.get("WBC_KERNEL_INDEX", "1") != "0"
    if not (enabled and fingerprint is not None and compiler is not None and re.fullmatch(r"[A-Za-z0-9_]+", name)):
        return None, None
    h = hashlib.sha256(f"wbc index {_FORMAT}|{fingerprint}|{' '.join(flags)}|".encode())
    h.update(_compiler_id(compiler).encode())
    key = h.hexdigest()
    for place in _places(location):
        path = place / f"index-{name}-{key[:32]}.json"
        found = _lookup(path, key)
        if isinstance(found, str):
            _refused(path, found)
            continue
        value = parse(found[1]) if found is not None else None
        if found is None or value is None:
            continue
        misfit = check(found[0], value) if check is not None else None
        if misfit is None:
            return key, (found[0], value)
        _refused(path, misfit)
    return key, None


def build_indexed(
    name: str,
    key: str | None,
    function: ca.Function,
    extra: Any,
    *,
    directory: Path | str | None = None,
    flags: Sequence[str] = DEFAULT_FLAGS,
    compiler: str | None = None,
) -> Kernel:
    """The building half of :func:`compile_indexed`: ``function`` compiled (or taken from the
    cache) and indexed under ``key`` (from :func:`find_indexed`; None: not indexed) with ``extra``."""
    location = Path(directory) if directory is not None else None
    kernel = compile_function(function, directory=location, flags=flags, compiler=compiler or find_compiler())
    if key is not None and kernel.backend == "c" and kernel.library is not None:
        _store(kernel, function, extra, key, kernel.library.parent / f"index-{name}-{key[:32]}.json")
    return kernel


def _refused(path: Path, reason: str) -> None:
    warnings.warn(
        f"the kernel index {path} is not used ({reason}); the kernel is traced again", WbcSecurityWarning, stacklevel=5
    )


def _places(location: Path | None) -> list[Path]:
    """Where an index may be: the cache location if others cannot write there, then the private
    fallback (where libraries go when the location is read-only or open to others) if it is a
    directory owned by this user and closed to others (:mod:`wbc.codegen.trust`)."""
    place = _origin(location)[0]
    places = [place] if untrusted_directory(place) is None else []
    with contextlib.suppress(OSError):
        fallback = _fallback_path()
        st = os.lstat(fallback)
        private = stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077
        if private and untrusted_directory(fallback) is None:
            places.append(fallback)
    return places


def entry_digest(record: dict, library_sha256: str) -> str:
    """The digest of an index entry: the library's bytes (their SHA-256) and every field of the
    record but ``digest`` itself, in a canonical JSON form."""
    fields = {k: v for k, v in record.items() if k != "digest"}
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(f"wbc index entry {_FORMAT}\0{library_sha256}\0{text}".encode()).hexdigest()


def _lookup(path: Path, key: str) -> tuple[Kernel, Any] | str | None:
    """The indexed kernel, loaded, if the index and its library are valid; None when there is no
    usable index for this key; why, when an index for this key exists but is refused."""
    if not os.path.lexists(path):
        return None
    reason = untrusted_file(path)
    if reason is not None:
        return reason
    try:
        with open(path, "rb") as f:
            record = json.loads(f.read(64 << 20))
        if record.get("format") != _FORMAT or record.get("key") != key:
            return None
        stem = record["library"]
        if not isinstance(stem, str) or not _STEM.match(stem):
            return "it names no library of the cache"
        library, sidecar = path.parent / f"{stem}.so", path.parent / f"{stem}.sha256"
        digest = library_digest(library, sidecar, record["library_key"])
        if digest is None:
            return None  # the library is missing, damaged or replaced: rebuilt (and re-indexed)
        if record.get("digest") != entry_digest(record, digest):
            return "its digest does not match the library and the record: modified or damaged"
        t0 = time.perf_counter()
        loaded = ca.external(record["name"], str(library))
        load_seconds = time.perf_counter() - t0
        in_shapes = [tuple(s) for s in record["input_shapes"]]
        out_shapes = [tuple(s) for s in record["output_shapes"]]
        if not _dense_signature(loaded, in_shapes, out_shapes, record["input_names"], record["output_names"]):
            return "the library's signature does not match the record"
        source = TracedFunction(loaded, input_shapes=in_shapes, output_shapes=out_shapes)
        kernel = Kernel(loaded, source, "c", library, 0.0, load_seconds, n_instructions=record["n_instructions"])
        return kernel, record["extra"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RuntimeError, CompileError) as e:
        return f"it does not read: {type(e).__name__}"


def _dense_signature(function: ca.Function, in_shapes, out_shapes, in_names, out_names) -> bool:
    """True when ``function`` has these dense inputs and outputs, with these names."""
    if function.n_in() != len(in_shapes) or function.n_out() != len(out_shapes):
        return False
    sides = (
        (in_shapes, in_names, function.sparsity_in, function.name_in),
        (out_shapes, out_names, function.sparsity_out, function.name_out),
    )
    for shapes, names, sparsity, name in sides:
        for i, shape in enumerate(shapes):
            sp = sparsity(i)
            if name(i) != names[i] or not sp.is_dense() or sp.numel() != _numel(shape):
                return False
            if sp.size1() != (shape[0] if shape else 1):
                return False
    return True


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _store(kernel: Kernel, function: ca.Function, extra: Any, key: str, path: Path) -> None:
    """Write the index next to the kernel's library (atomically; silently not when impossible)."""
    if not isinstance(function, TracedFunction) or not sources_unchanged():
        return
    if not all(function.sparsity_in(i).is_dense() for i in range(function.n_in())) or not all(
        function.sparsity_out(i).is_dense() for i in range(function.n_out())
    ):
        return
    library = kernel.library
    assert library is not None
    try:
        recorded = library.with_suffix(".sha256").read_text().split()
        digest = library_digest(library, library.with_suffix(".sha256"), recorded[0])
        if digest is None:
            return
        record = {
            "format": _FORMAT,
            "key": key,
            "name": function.name(),
            "library": library.stem,
            "library_key": recorded[0],
            "input_names": kernel.input_names,
            "output_names": kernel.output_names,
            "input_shapes": [list(s) for s in kernel.input_shapes],
            "output_shapes": [list(s) for s in kernel.output_shapes],
            "n_instructions": kernel.n_instructions,
            "extra": extra,
        }
        record = json.loads(json.dumps(record, allow_nan=True))  # as it will read back
        record["digest"] = entry_digest(record, digest)
        text = json.dumps(record, allow_nan=True)
        fd, tmp = tempfile.mkstemp(prefix=".build-index-", dir=path.parent)  # stale ones: removed a day old
        try:
            os.fchmod(fd, PUBLIC_FILE_MODE)  # readable like the library and its sidecar (mkstemp makes it 0600)
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, IndexError, TypeError, ValueError):
        return
