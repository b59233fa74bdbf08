"""Trace once, compile, call cheaply.

An algorithm written against CasADi's matrix API is traced with ``SX`` symbols into a
``casadi.Function`` (:func:`trace`, common subexpressions eliminated), generated as C, compiled by
the system C compiler into a shared library, cached on disk, loaded with ``casadi.external`` and
evaluated through ``Function.buffer()`` into preallocated numpy arrays (:class:`Kernel`).

Cache: ``$WBC_CACHE_DIR`` (default ``~/.cache/wbc/kernels``). A library is stored under a key that
hashes its C source, the compiler and its flags, with a sidecar file holding the SHA-256 of the
library bytes; a library whose bytes do not match its sidecar (corrupt, truncated or foreign) is
rebuilt, never loaded. Builds hold an exclusive file lock per key and publish by atomic rename, so
several processes compiling the same kernel at once build it once and never see a partial file.

Without a C compiler (none on ``PATH``, or ``$WBC_CC`` names a missing one) kernels run in
CasADi's SX virtual machine: correct, slower, with one :class:`~wbc.errors.WbcPerformanceWarning`.

Names: C identifiers and file names are made from :func:`sanitize`-d names only, so names taken
from a URDF never reach generated code or paths as they are.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

import casadi as ca
import numpy as np

from .errors import CompileError, WbcPerformanceWarning

__all__ = ["Kernel", "trace", "compile_function", "sanitize", "cache_dir", "find_compiler", "DEFAULT_FLAGS"]

#: Compiler flags. ``-O1`` compiles large kernels in seconds (``-O2`` takes minutes on a 1 MB file
#: for little run-time gain, see DESIGN.md §4).
DEFAULT_FLAGS: tuple[str, ...] = ("-O1", "-fPIC", "-shared", "-fno-math-errno")

_warned_no_compiler = False


def sanitize(name: str, prefix: str = "wbc_") -> str:
    """A C identifier / file-name stem made from ``name``: ``prefix`` followed by letters, digits and
    single underscores, at most 64 characters.

    A name that is already clean (and starts with a letter once prefixed) is kept as ``prefix + name``;
    any other name gets a short hash suffix, so distinct inputs give distinct results.
    """
    clean = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")
    out = prefix + clean
    if clean != name or not clean or len(clean) > 48 or not out[0].isalpha():
        out = f"{prefix}{clean[:40].rstrip('_')}_{hashlib.sha1(name.encode()).hexdigest()[:8]}"
        if not out[0].isalpha():
            out = "x" + out
    return out


def cache_dir() -> Path:
    """Where compiled kernels are cached: ``$WBC_CACHE_DIR`` or ``~/.cache/wbc/kernels``."""
    env = os.environ.get("WBC_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "wbc" / "kernels"


def find_compiler() -> Optional[str]:
    """The C compiler to use: ``$WBC_CC`` if set (empty disables compilation), else cc / gcc / clang."""
    env = os.environ.get("WBC_CC")
    if env is not None:
        return shutil.which(env) if env else None
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return path
    return None


def trace(
    name: str,
    inputs: Sequence[tuple[str, int | tuple[int, int]]],
    build: Callable[..., Sequence],
    output_names: Optional[Sequence[str]] = None,
    cse: bool = True,
) -> ca.Function:
    """Trace ``build`` with SX symbols into a ``casadi.Function`` with dense outputs.

    Args:
        name: function name (sanitized into a C identifier).
        inputs: ``(name, size)`` of each input, size ``n`` for a column or ``(rows, cols)``.
        build: called with one SX symbol per input; returns the output expressions.
        output_names: names of the outputs (default ``o0, o1, ...``).
        cse: eliminate common subexpressions (on by default).
    """
    syms = []
    for in_name, size in inputs:
        shape = (size, 1) if isinstance(size, int) else size
        syms.append(ca.SX.sym(sanitize(in_name, ""), *shape))
    outs = [ca.densify(ca.SX(o)) for o in build(*syms)]
    out_names = [sanitize(n, "") for n in (output_names or [f"o{k}" for k in range(len(outs))])]
    in_names = [sanitize(n, "") for n, _ in inputs]
    return ca.Function(sanitize(name), syms, outs, in_names, out_names, {"cse": cse})


class Kernel:
    """A ``casadi.Function`` evaluated through the buffer API into preallocated numpy arrays.

    ``kernel(*args)`` copies the arguments into the input buffers, evaluates, and returns the
    output arrays. **The returned arrays are the kernel's own buffers**, overwritten by the next
    call: copy what you keep. Matrices are returned in their natural shape (column-major views).

    Attributes:
        function: the function evaluated (the loaded library, or the SX function in VM mode).
        name: function name.
        backend: ``"c"`` (compiled) or ``"sx-vm"`` (CasADi virtual machine).
        n_instructions: operation count of the traced SX function (deterministic).
        library: path of the shared library, or None.
        compile_seconds: time spent generating and compiling (0 on a cache hit).
        load_seconds: time spent loading the library.
        inputs: the input arrays (write into them and call :meth:`run` to skip the copies).
        outputs: the output arrays.
    """

    def __init__(self, function: ca.Function, source: ca.Function, backend: str, library: Optional[Path] = None,
                 compile_seconds: float = 0.0, load_seconds: float = 0.0) -> None:
        self.function = function
        self.name = source.name()
        self.backend = backend
        self.library = library
        self.compile_seconds = compile_seconds
        self.load_seconds = load_seconds
        self.n_instructions = int(source.n_instructions())
        self.input_names = [source.name_in(i) for i in range(source.n_in())]
        self.output_names = [source.name_out(i) for i in range(source.n_out())]
        self._in_flat = [np.zeros(source.nnz_in(i)) for i in range(source.n_in())]
        self._out_flat = [np.zeros(source.nnz_out(i)) for i in range(source.n_out())]
        self.inputs = [self._view(f, source.size_in(i)) for i, f in enumerate(self._in_flat)]
        self.outputs = [self._view(f, source.size_out(i)) for i, f in enumerate(self._out_flat)]
        self._buffer, self._eval = function.buffer()
        for i, f in enumerate(self._in_flat):
            self._buffer.set_arg(i, memoryview(f))
        for i, f in enumerate(self._out_flat):
            self._buffer.set_res(i, memoryview(f))

    @staticmethod
    def _view(flat: np.ndarray, size: tuple[int, int]) -> np.ndarray:
        rows, cols = size
        return flat if cols == 1 else flat.reshape((rows, cols), order="F")

    def run(self) -> list[np.ndarray]:
        """Evaluate with the current contents of :attr:`inputs`; returns :attr:`outputs`."""
        self._eval()
        return self.outputs

    def __call__(self, *args) -> list[np.ndarray]:
        """Copy ``args`` (shaped like :attr:`inputs`) into the input buffers, evaluate, return the outputs."""
        if len(args) != len(self.inputs):
            raise TypeError(f"kernel {self.name} takes {len(self.inputs)} inputs ({self.input_names}), got {len(args)}")
        for dst, src in zip(self.inputs, args):
            try:
                np.copyto(dst, src)
            except ValueError:  # a column or row vector for a vector input
                np.copyto(dst, np.reshape(src, dst.shape))
        self._eval()
        return self.outputs

    def __repr__(self) -> str:
        return f"Kernel({self.name!r}, backend={self.backend!r}, n_instructions={self.n_instructions})"


def compile_function(
    function: ca.Function,
    *,
    directory: Optional[Path] = None,
    flags: Sequence[str] = DEFAULT_FLAGS,
    compiler: Optional[str] = None,
) -> Kernel:
    """Compile ``function`` to a shared library (or reuse the cached one) and wrap it in a :class:`Kernel`.

    Falls back to CasADi's SX virtual machine, with one warning, when no C compiler exists.

    Raises:
        CompileError: the compiler exists but failed (its output is in the message).
    """
    compiler = compiler or find_compiler()
    if compiler is None:
        _warn_no_compiler()
        return Kernel(function, function, "sx-vm")
    directory = Path(directory) if directory is not None else cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    cname = function.name()  # casadi only accepts valid C identifiers as function names
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="wbc-gen-") as tmp:
        generator = ca.CodeGenerator(f"{cname}.c", {"with_header": False})
        generator.add(function)
        src_path = Path(generator.generate(tmp + os.sep))
        source = src_path.read_bytes()
        key = _key(source, compiler, flags)
        stem = directory / f"{cname}-{key[:24]}"
        library, sidecar = stem.with_suffix(".so"), stem.with_suffix(".sha256")
        compiled = False
        with _locked(stem.with_suffix(".lock")):
            if not _valid(library, sidecar, key):
                _build(compiler, flags, src_path, library, sidecar, key)
                compiled = True
    compile_seconds = time.perf_counter() - t0 if compiled else 0.0
    t1 = time.perf_counter()
    external = ca.external(cname, str(library))
    load_seconds = time.perf_counter() - t1
    _check_signature(external, function, library)
    return Kernel(external, function, "c", library, compile_seconds, load_seconds)


def _warn_no_compiler() -> None:
    global _warned_no_compiler
    if not _warned_no_compiler:
        _warned_no_compiler = True
        warnings.warn(
            "no C compiler found (set WBC_CC or install gcc): kernels run in CasADi's SX virtual "
            "machine, correct but about 30x slower",
            WbcPerformanceWarning,
            stacklevel=3,
        )


def _key(source: bytes, compiler: str, flags: Sequence[str]) -> str:
    h = hashlib.sha256()
    h.update(source)
    h.update(b"\0" + " ".join(flags).encode())
    h.update(b"\0" + _compiler_id(compiler).encode())
    h.update(b"\0" + ca.__version__.encode())
    return h.hexdigest()


_compiler_ids: dict[str, str] = {}


def _compiler_id(compiler: str) -> str:
    if compiler not in _compiler_ids:
        try:
            out = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        _compiler_ids[compiler] = f"{compiler} {out.splitlines()[0] if out else ''}"
    return _compiler_ids[compiler]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _valid(library: Path, sidecar: Path, key: str) -> bool:
    """True when ``library`` exists and its bytes match the digest recorded for ``key``."""
    try:
        recorded = sidecar.read_text().split()
    except OSError:
        return False
    if len(recorded) != 2 or recorded[0] != key or not library.exists():
        return False
    return _sha256(library) == recorded[1]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _build(compiler: str, flags: Sequence[str], src: Path, library: Path, sidecar: Path, key: str) -> None:
    fd, tmp_lib = tempfile.mkstemp(dir=library.parent, prefix=".build-", suffix=".so")
    os.close(fd)
    try:
        cmd = [compiler, *flags, str(src), "-o", tmp_lib, "-lm"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise CompileError(f"compiling {src.name} failed ({' '.join(cmd)}):\n{proc.stderr[-4000:]}")
        digest = _sha256(Path(tmp_lib))
        os.replace(tmp_lib, library)
        fd, tmp_side = tempfile.mkstemp(dir=library.parent, prefix=".build-", suffix=".sha256")
        with os.fdopen(fd, "w") as f:
            f.write(f"{key} {digest}\n")
        os.replace(tmp_side, sidecar)
    finally:
        if os.path.exists(tmp_lib):
            os.unlink(tmp_lib)


def _check_signature(loaded: ca.Function, source: ca.Function, library: Path) -> None:
    same = loaded.n_in() == source.n_in() and loaded.n_out() == source.n_out()
    same = same and all(loaded.sparsity_in(i) == source.sparsity_in(i) for i in range(source.n_in()))
    same = same and all(loaded.sparsity_out(i) == source.sparsity_out(i) for i in range(source.n_out()))
    if not same:
        raise CompileError(f"{library}: the library's signature does not match the traced function")
