"""The on-disk cache of compiled kernels: C source in, a verified shared library out.

A library is stored under ``$WBC_CACHE_DIR`` (default ``~/.cache/wbc/kernels``) with a key that
hashes its C source, the compiler and its flags, next to a sidecar file holding the SHA-256 of
the library bytes; a library whose bytes do not match its sidecar (corrupt, truncated or foreign)
is rebuilt, never loaded. Builds hold an exclusive file lock per key and publish by atomic
rename, so several processes compiling the same kernel at once build it once and never see a
partial file.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import casadi as ca

from ..errors import CompileError

__all__ = ["DEFAULT_FLAGS", "cache_dir", "find_compiler", "cached_library"]

#: Compiler flags. ``-O1`` compiles large kernels in seconds (``-O2`` takes minutes on a 1 MB file
#: for little run-time gain, see DESIGN.md §4).
DEFAULT_FLAGS: tuple[str, ...] = ("-O1", "-fPIC", "-shared", "-fno-math-errno")


def cache_dir() -> Path:
    """Where compiled kernels are cached: ``$WBC_CACHE_DIR`` or ``~/.cache/wbc/kernels``."""
    env = os.environ.get("WBC_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "wbc" / "kernels"


def find_compiler() -> str | None:
    """The C compiler to use: ``$WBC_CC`` if set (empty disables compilation), else cc / gcc / clang."""
    env = os.environ.get("WBC_CC")
    if env is not None:
        return shutil.which(env) if env else None
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return path
    return None


def cached_library(function: ca.Function, directory: Path, flags: Sequence[str], compiler: str) -> tuple[Path, bool]:
    """Generate ``function``'s C source and return the cached shared library built from it,
    compiling it first when the cache has no valid copy.

    Returns:
        ``(library, compiled)``: the library's path and whether this call compiled it.

    Raises:
        CompileError: the compiler failed (its output is in the message).
    """
    directory.mkdir(parents=True, exist_ok=True)
    cname = function.name()  # casadi only accepts valid C identifiers as function names
    with tempfile.TemporaryDirectory(prefix="wbc-gen-") as tmp:
        generator = ca.CodeGenerator(f"{cname}.c", {"with_header": False})
        generator.add(function)
        src_path = Path(generator.generate(tmp + os.sep))
        key = _key(src_path.read_bytes(), compiler, flags)
        stem = directory / f"{cname}-{key[:24]}"
        library, sidecar = stem.with_suffix(".so"), stem.with_suffix(".sha256")
        with _locked(stem.with_suffix(".lock")):
            if _valid(library, sidecar, key):
                return library, False
            _build(compiler, flags, src_path, library, sidecar, key)
    return library, True


def _key(source: bytes, compiler: str, flags: Sequence[str]) -> str:
    h = hashlib.sha256()
    h.update(source)
    h.update(b"\0" + " ".join(flags).encode())
    h.update(b"\0" + _compiler_id(compiler).encode())
    h.update(b"\0" + getattr(ca, "__version__", "").encode())
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
