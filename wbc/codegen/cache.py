"""The on-disk cache of compiled kernels: C source in, a verified and loaded shared library out.

Layout. A kernel's library is ``<dir>/<name>-<key>.so`` (``key``: the first 24 hex digits of a
SHA-256 of what determines its C source (a traced function's serialization and the C writer's
version; a hand-written routine's text), the compiler and its version, the flags, CasADi's version and the
machine), next to ``<name>-<key>.sha256`` holding the full key and the SHA-256 of the library
bytes, and ``<name>-<key>.lock``.

Trust (``docs/security.md``). Loading a library runs its code, so a cache is used only when
nobody but this user (or root) can have written it: the directory and every directory above it
owned by this user or root and not writable by group or others (an ancestor may be open with the
sticky bit, as ``/tmp``), the library and its sidecar regular files owned likewise and not writable
by group or others (:mod:`wbc.codegen.trust`). A location that fails this is not read at all: the
kernel is built in the private fallback (below) with a :class:`~wbc.errors.WbcSecurityWarning`
saying why. A file that fails it in a trusted directory is rebuilt over. Directories wbc creates
are 0700 and the files it publishes 0644, whatever the umask.

Reading writes nothing. A library is used when its sidecar holds this key and its bytes hash to
the recorded digest, and it loads and exports the function with the traced signature; a library
that fails any of these (corrupt, truncated, foreign, unreadable sidecar) is rebuilt, never
loaded. So a read-only cache that already holds the kernels (one shipped with an application,
built with the same compiler, flags and CasADi version) works as it is.

Building. Under an exclusive lock on ``<name>-<key>.lock`` (checking again once it is held), the C
source is generated and compiled in a private ``.build-<name>-<key>-*`` directory inside the
cache; what the compiler produced must be non-empty, load, and export the function with the
traced signature (else :class:`~wbc.errors.CompileError`); the library, then its sidecar, are
published by atomic rename. Several processes compiling one kernel build it once and never see a
partial file. Build directories left by a killed process are removed by a later build in the
same cache once it holds their kernel's lock, so never while their builder is alive (a directory
of another layout is removed only when it is a day old).

Where. ``directory=`` if given, else ``$WBC_CACHE_DIR``, else ``~/.cache/wbc/kernels``.
A location that exists but is not a directory (a file, a dangling symbolic link) is a
CompileError naming it and where it came from. A location that cannot be written (read-only,
no permission) and lacks the kernel makes wbc compile into ``$TMPDIR/wbc-kernels-<uid>``
(created private, used only if owned by this user and closed to others) with a
:class:`~wbc.errors.WbcPerformanceWarning`; when that fails too, :class:`CacheUnavailable`
(:func:`~wbc.codegen.compile_function` then runs the kernel in CasADi's VM).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import errno
import fcntl
import functools
import hashlib
import itertools
import os
import platform
import re
import shutil
import stat
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Generic, TypeVar

import casadi as ca

from ..errors import CompileError, WbcPerformanceWarning, WbcSecurityWarning
from . import background, memo
from .emit import DEFAULT_PART_OPS, PARTS_PER_FILE, SplitPlan, Unsupported, writer_digest
from .trust import PRIVATE_DIRECTORY_MODE, PUBLIC_FILE_MODE, untrusted_directory, untrusted_file

__all__ = [
    "DEFAULT_FLAGS",
    "HOT_FLAGS",
    "STEP_FLAGS",
    "flags_of",
    "vector_flags",
    "fused_flags",
    "cache_dir",
    "find_compiler",
    "cached_library",
    "cached_source_library",
    "CachedLibrary",
    "CacheUnavailable",
]


def vector_flags() -> tuple[str, ...]:
    """``("-mavx", "-ffp-contract=off")`` on an x86-64 processor whose operating system enables AVX,
    else ``()``.

    Traced kernels are long runs of scalar double operations; with AVX's three-operand (VEX)
    instructions the compiler no longer copies a register before each operation that overwrites
    one (SSE2's two-operand forms): G1's RNEA, CRBA and ABA execute 14-19 % fewer instructions and
    ran 10-25 % faster (issue 27, same run, interleaved with Pinocchio). The results stay bit for
    bit those of CasADi's VM: the same IEEE operations, no fused multiply-add (no ``-mfma``, and
    contraction off should a user's flags allow it). The flags are part of the cache key, so a
    machine without AVX never loads a library built with them. ``WBC_VECTOR_FLAGS=0`` gives ``()``
    (also what finds the kernels of a read-only cache built without them).
    """
    if os.environ.get("WBC_VECTOR_FLAGS", "1") == "0":
        return ()
    return _vector_flags(platform.system(), platform.machine())


@functools.cache
def _vector_flags(system: str, machine: str) -> tuple[str, ...]:
    if machine.lower() not in ("x86_64", "amd64"):
        return ()
    features = ""
    try:
        if system == "Linux":
            features = Path("/proc/cpuinfo").read_text(errors="replace")
        elif system == "Darwin":
            features = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.features"], capture_output=True, text=True, timeout=5, check=False
            ).stdout.replace("AVX1.0", "avx")
    except (OSError, subprocess.SubprocessError):
        return ()
    return ("-mavx", "-ffp-contract=off") if re.search(r"(?i)\bavx\b", features) else ()


def fused_flags() -> tuple[str, ...]:
    """``("-mavx2", "-mfma", "-ffp-contract=fast")`` on an x86-64 Linux processor with AVX2 and FMA,
    else :func:`vector_flags` (also with ``WBC_VECTOR_FLAGS=0``: then ``()``).

    Fused multiply-adds round once where a product then a sum round twice: each operation differs
    from CasADi's virtual machine's by its last bit at most (a step kernel's outputs, after tens of
    thousands of operations, by up to 1e-13 of their scale: tested). Only the
    controller's step kernel takes them (:data:`STEP_FLAGS`): compiled synchronously by
    ``compile()``, never answered by the virtual machine first, so no caller sees two encodings.
    """
    base = vector_flags()
    if not base or platform.system() != "Linux":
        return base
    return _fused_flags(Path("/proc/cpuinfo").read_text(errors="replace")) or base


def _fused_flags(features: str) -> tuple[str, ...]:
    have = all(re.search(rf"(?i)\b{flag}\b", features) for flag in ("avx2", "fma"))
    return ("-mavx2", "-mfma", "-ffp-contract=fast") if have else ()


#: Compiler flags of traced kernels. Measured on the Talos balance kernel split in parts of 500
#: operations (benchmarks/compile.py, issue 14): ``-Og`` takes about 20 % less compiler time than
#: ``-O1`` for the same run time (straight-line code: what matters is done by both); ``-O2`` costs
#: more and runs no faster. Hand-written routines choose their own (``cached_source_library``).
#: :func:`vector_flags` are added where the processor has them.
DEFAULT_FLAGS: tuple[str, ...] = ("-Og", "-fPIC", "-shared", "-fno-math-errno", *vector_flags())

#: Compiler flags of *hot* traced kernels (``trace(..., hot=True)``: the classical dynamics, a few
#: thousand operations called in inner loops). Measured on Talos (issue 27, same run, interleaved
#: with Pinocchio): CRBA 12-15 % and RNEA ~3 % faster than at ``-Og``, for 1.7-1.9x the compiler
#: time (CRBA 0.2 -> 0.36 s). ABA too since: on one machine G1's ABA at ``-Og``, ``-O1`` and ``-O2``
#: were within the noise, on another (the same code, another day) 0.41 × Pinocchio at ``-Og``
#: against 0.34 at ``-O2`` (Talos 0.33 against 0.35; compiler 0.37 -> 0.65 s). :func:`vector_flags`
#: are added where the processor has them.
HOT_FLAGS: tuple[str, ...] = ("-O2", "-fPIC", "-shared", "-fno-math-errno", *vector_flags())

#: Compiler flags of the controller's step kernel (:func:`wbc.control.builder.compile_step`): ``-O2``
#: with fused multiply-adds (:func:`fused_flags`; ``-O1`` and ``-Og`` contract none) and without the
#: second instruction scheduling pass (which lengthens the code of a long straight line: 395 against
#: 469 kB). Measured on Talos's standing kernel (47k operations; 21 alternating rounds, issue 27):
#: 7.9 -> 6.3 µs called back to back, 12-13 -> 9.5 µs with the caches flushed between calls (2 MB
#: written: as in a control loop, where the step's other work evicts the kernel's code); ``-O2``
#: with FMA but scheduling 6.8 / 9.6, ``-Os`` 6.4 / 9.6, ``-O2`` without FMA 7.8 / 13.0.
STEP_FLAGS: tuple[str, ...] = ("-O2", "-fno-schedule-insns2", "-fPIC", "-shared", "-fno-math-errno", *fused_flags())


def flags_of(function: ca.Function) -> tuple[str, ...]:
    """The default compiler flags of ``function``: :data:`HOT_FLAGS` for a hot traced function
    (its ``hot`` attribute), else :data:`DEFAULT_FLAGS`."""
    return HOT_FLAGS if getattr(function, "hot", False) else DEFAULT_FLAGS


#: A build directory of an unknown layout (no lock to ask) is removed when older than this.
STALE_SECONDS = 24 * 3600.0

T = TypeVar("T")

_BUILD = re.compile(r"^\.build-(?P<stem>[A-Za-z0-9_]+-[0-9a-f]{24})-[A-Za-z0-9_]+$")
_UNWRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)


class CacheUnavailable(Exception):
    """No place to put a compiled library could be written (the message says where and why)."""


class _Unwritable(Exception):
    """A cache location cannot be written (read-only, no permission)."""


class _Untrusted(Exception):
    """A cache location others could have written (the message says who and how)."""


@dataclasses.dataclass(frozen=True)
class CachedLibrary:
    """A library taken from (or just built into) the cache, loaded.

    Attributes:
        function: the loaded ``casadi.Function`` (``casadi.external``).
        path: the library's path.
        compiled: whether this call compiled it.
        load_seconds: time spent loading it.
    """

    function: ca.Function
    path: Path
    compiled: bool
    load_seconds: float


def cache_dir() -> Path:
    """Where compiled kernels are cached: ``$WBC_CACHE_DIR`` or ``~/.cache/wbc/kernels`` (or, with
    no home directory, the private fallback ``$TMPDIR/wbc-kernels-<uid>``)."""
    env = os.environ.get("WBC_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    home = _home()
    return home / ".cache" / "wbc" / "kernels" if home is not None else _fallback_path()


def _home() -> Path | None:
    try:
        home = Path.home()
    except (RuntimeError, KeyError, OSError):
        return None
    return home if home.is_absolute() else None


def _fallback_path() -> Path:
    return Path(tempfile.gettempdir()) / f"wbc-kernels-{os.getuid()}"


def _origin(directory: Path | None) -> tuple[Path, str]:
    """The cache location and how it was chosen (for messages: it names the path)."""
    if directory is not None:
        return directory, f"the kernel cache directory={str(directory)!r}"
    path = cache_dir()
    if os.environ.get("WBC_CACHE_DIR"):
        return path, f"the kernel cache WBC_CACHE_DIR={os.environ['WBC_CACHE_DIR']!r}"
    return path, f"the default kernel cache {str(path)!r}"


def find_compiler() -> str | None:
    """The C compiler to use: ``$WBC_CC`` if set (empty disables compilation), else cc / gcc / clang
    (looked up on ``PATH`` once per value of ``WBC_CC`` and ``PATH``)."""
    return _find_compiler(os.environ.get("WBC_CC"), os.environ.get("PATH"))


@functools.lru_cache(maxsize=8)
def _find_compiler(env: str | None, path: str | None) -> str | None:
    if env is not None:
        return shutil.which(env, path=path) if env else None
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name, path=path)
        if found:
            return found
    return None


def cached_library(function: ca.Function, directory: Path | None, flags: Sequence[str], compiler: str) -> CachedLibrary:
    """The cached shared library of ``function`` built by ``compiler`` with ``flags``, loaded;
    compiled first when ``directory`` (default :func:`cache_dir`) holds no valid copy.

    An SX function is written by :func:`~wbc.codegen.emit.split_source` (parts of a few thousand
    operations in several files, compiled in parallel); any other function by CasADi's generator.
    The key hashes the function's serialization (not the C text, written only to build).

    Raises:
        CompileError: the compiler failed or produced no usable library, or the location exists
            and is not a directory.
        CacheUnavailable: neither the location nor the private fallback directory can be written.
    """
    name = function.name()

    def write(build: Path) -> Iterator[Path]:
        try:
            plan = SplitPlan(function, DEFAULT_PART_OPS, PARTS_PER_FILE)
        except Unsupported:  # CasADi's generator writes what the split writer does not handle
            generator = ca.CodeGenerator(f"{name}.c", {"with_header": False})
            generator.add(function)
            yield Path(generator.generate(str(build) + os.sep))
            return
        for file_name, text in plan.files():  # one at a time: the first compile while the next are written
            path = build / file_name
            path.write_text(text)
            yield path

    # the key: the function's exact serialization (instructions, constants, names, sparsities), the
    # writers (this split writer's source, CasADi's version in _key); the C text is written only
    # when the library is built
    source = f"wbc split writer {writer_digest()} {DEFAULT_PART_OPS} {PARTS_PER_FILE}\0".encode()
    source += function.serialize().encode()
    recipe = _Recipe(name, write, lambda path, compiled: _loaded(function, path, compiled))
    return _cached(recipe, source, directory, flags, compiler)


def cached_source_library(
    name: str,
    source: str,
    load: Callable[[Path], T],
    directory: Path | None = None,
    flags: Sequence[str] = DEFAULT_FLAGS,
    compiler: str | None = None,
) -> T:
    """A shared library compiled from the C ``source`` (a hand-written routine, not a traced
    function), cached like the kernels (same key, sidecar, locks and fallbacks), and loaded by
    ``load(path)``, which raises :class:`~wbc.errors.CompileError` if the library is unusable.

    ``name`` must be a safe file-name stem (letters, digits, underscores).

    Raises:
        CompileError: no compiler, the compiler failed, or the library does not load.
        CacheUnavailable: no writable place for the library.
    """
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name) or "__" in name:
        raise CompileError(f"cached_source_library: {name!r} is not a safe library name")
    compiler = compiler or find_compiler()
    if compiler is None:
        raise CompileError(f"no C compiler found to build {name} (set WBC_CC or install gcc)")

    def write(build: Path) -> Iterator[Path]:
        path = build / f"{name}.c"
        path.write_text(source)
        yield path

    return _cached(_Recipe(name, write, lambda path, compiled: load(path)), source.encode(), directory, flags, compiler)


@dataclasses.dataclass(frozen=True)
class _Recipe(Generic[T]):
    """How to build and load one library: its name, a writer of its C source into a build
    directory (yields the files, possibly as it writes them), and a loader ``(path, compiled) -> T``
    raising CompileError."""

    name: str
    write: Callable[[Path], Iterable[Path]]
    load: Callable[[Path, bool], T]


def _cached(recipe: _Recipe[T], source: bytes, directory: Path | None, flags: Sequence[str], compiler: str) -> T:
    location, origin = _origin(directory)
    key = _key(source, compiler, flags)
    category: type[Warning] = WbcPerformanceWarning
    try:
        return _get(recipe, key, location, origin, compiler, flags)
    except _Unwritable as e:
        reason = str(e)
    except _Untrusted as e:
        reason, category = f"{origin} is not used: {e}", WbcSecurityWarning
    fallback = _private_directory(reason)
    warnings.warn(
        f"{reason}; compiling kernel {recipe.name} into {fallback} instead (set WBC_CACHE_DIR to a "
        "private, writable directory to keep kernels across reboots)",
        category,
        stacklevel=4,
    )
    try:
        return _get(recipe, key, fallback, f"the fallback kernel cache {str(fallback)!r}", compiler, flags)
    except (_Unwritable, _Untrusted) as e:
        raise CacheUnavailable(f"{reason}, and {e}") from None


def _get(recipe: _Recipe[T], key: str, directory: Path, origin: str, compiler: str, flags: Sequence[str]) -> T:
    stem = f"{recipe.name}-{key[:24]}"
    library, sidecar = directory / f"{stem}.so", directory / f"{stem}.sha256"
    if directory.is_dir():
        _trusted(directory)
        found = _lookup(recipe, library, sidecar, key)  # no lock, no write: a read-only cache works
        if found is not None:
            return found
    _make_directory(directory, origin)
    _trusted(directory)  # created now, or made by someone else meanwhile
    with _locked(directory / f"{stem}.lock", origin):
        found = _lookup(recipe, library, sidecar, key)  # built by another process meanwhile?
        if found is not None:
            return found
        _remove_stale_builds(directory, stem)
        _build(recipe, compiler, flags, directory, stem, key, origin)
        return recipe.load(library, True)


def _trusted(directory: Path) -> None:
    """Raises _Untrusted when others could have written into ``directory`` (:mod:`.trust`)."""
    reason = untrusted_directory(directory)
    if reason is not None:
        raise _Untrusted(reason)


def _lookup(recipe: _Recipe[T], library: Path, sidecar: Path, key: str) -> T | None:
    """The cached library, loaded, if it is valid and loads (else None: to be rebuilt)."""
    if not _valid(library, sidecar, key):
        return None
    try:
        return recipe.load(library, False)
    except CompileError:  # the recorded bytes, but they do not load here
        return None


def _key(source: bytes, compiler: str, flags: Sequence[str]) -> str:
    h = hashlib.sha256()
    h.update(source)
    h.update(b"\0" + " ".join(flags).encode())
    h.update(b"\0" + _compiler_id(compiler).encode())
    h.update(b"\0" + getattr(ca, "__version__", "").encode())
    h.update(b"\0" + f"{platform.system()} {platform.machine()}".encode())
    return h.hexdigest()


_compiler_ids: dict[str, str] = {}


def _compiler_id(compiler: str) -> str:
    """The compiler's path and the first line of its ``--version``: once per process, and
    remembered across processes in the cache (:mod:`wbc.codegen.memo`, stamped with the binary's
    resolved path, size, modification time and inode: running it costs milliseconds)."""
    if compiler not in _compiler_ids:
        try:
            real = os.path.realpath(compiler)
            st = os.stat(real)
            stamp: str | None = f"{compiler}|{real}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}|{st.st_dev}"
        except (OSError, ValueError):
            stamp = None
        place = cache_dir()
        known = memo.recall(place, "compiler", stamp) if stamp is not None else None
        if known is None:
            try:
                out = subprocess.run(
                    [compiler, "--version"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
                ).stdout
            except (OSError, subprocess.SubprocessError, UnicodeDecodeError):
                out = ""
            known = f"{compiler} {out.splitlines()[0] if out else ''}"
            if stamp is not None and out:
                memo.remember(place, "compiler", stamp, known)
        _compiler_ids[compiler] = known
    return _compiler_ids[compiler]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _valid(library: Path, sidecar: Path, key: str) -> bool:
    """True when ``library`` exists and its bytes match the digest ``sidecar`` records for ``key``
    (any unreadable, malformed or non-text sidecar is simply not valid), and neither file could have
    been written by others (:func:`.trust.untrusted_file`)."""
    return library_digest(library, sidecar, key) is not None


def library_digest(library: Path, sidecar: Path, key: str) -> str | None:
    """The SHA-256 (hex) of ``library``'s bytes when it is valid as :func:`_valid` says, else None.

    The directory must have been checked (:func:`.trust.untrusted_directory`) by the caller."""
    if untrusted_file(library) is not None or untrusted_file(sidecar) is not None:
        return None
    try:
        with open(sidecar, "rb") as f:
            recorded = f.read(256).split()
        if len(recorded) != 2 or recorded[0] != key.encode():
            return None
        digest = _sha256(library)
    except OSError:
        return None
    return digest if digest.encode() == recorded[1] else None


def load_library(function: ca.Function, path: Path) -> ca.Function:
    """Load ``function`` from the shared library ``path`` and check its signature.

    Raises:
        CompileError: the library does not load, does not export ``function``, or exports it with
            other inputs or outputs.
    """
    try:
        loaded = ca.external(function.name(), str(path))
    except RuntimeError as e:
        raise CompileError(f"{path}: cannot load {function.name()} from it: {str(e)[-1000:]}") from None
    same = loaded.n_in() == function.n_in() and loaded.n_out() == function.n_out()
    same = same and all(loaded.sparsity_in(i) == function.sparsity_in(i) for i in range(function.n_in()))
    same = same and all(loaded.sparsity_out(i) == function.sparsity_out(i) for i in range(function.n_out()))
    if not same:
        raise CompileError(f"{path}: the library's signature does not match the traced function {function.name()}")
    return loaded


def _loaded(function: ca.Function, library: Path, compiled: bool) -> CachedLibrary:
    t0 = time.perf_counter()
    loaded = load_library(function, library)
    return CachedLibrary(loaded, library, compiled, time.perf_counter() - t0)


def _unwritable(e: OSError) -> bool:
    return isinstance(e, PermissionError) or e.errno in _UNWRITABLE


def _write_error(e: OSError, failed: str, hint: str = "") -> Exception:
    """The exception for ``e``, met doing what ``failed`` says ("cannot write in <origin>"): an
    :class:`_Unwritable` where the location is read-only or forbidden, else a :class:`CompileError`
    (with ``hint``)."""
    if _unwritable(e):
        return _Unwritable(f"{failed} ({e.strerror})")
    return CompileError(f"{failed}: {e}{hint}")


def _make_directory(directory: Path, origin: str) -> None:
    hint = "" if "WBC_CACHE_DIR" in origin else " (set WBC_CACHE_DIR to use another)"
    if directory.is_dir():
        return
    if os.path.islink(directory) and not os.path.exists(directory):
        raise CompileError(
            f"{origin} is a symbolic link to {os.readlink(directory)!r}, which does not exist: "
            f"create that directory or point to another{hint}"
        )
    if os.path.lexists(directory) and not directory.is_dir():  # (another process may have just made it)
        raise CompileError(f"{origin} exists and is not a directory{hint}")
    try:
        _mkdirs(directory)
    except (FileExistsError, NotADirectoryError) as e:
        raise CompileError(f"cannot create {origin}: {e.strerror} ({e.filename}){hint}") from None
    except OSError as e:
        raise _write_error(e, f"cannot create {origin}", hint) from None


def _mkdirs(directory: Path) -> None:
    """Create ``directory`` and its missing parents, each private (0700) whatever the umask."""
    missing = []
    for path in [directory, *directory.parents]:
        if os.path.isdir(path):
            break
        missing.append(path)
    for path in reversed(missing):
        try:
            os.mkdir(path, PRIVATE_DIRECTORY_MODE)
        except FileExistsError:
            if not os.path.isdir(path):
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path)) from None
            continue
        os.chmod(path, PRIVATE_DIRECTORY_MODE)  # the umask may have removed bits (or kept none)


def _publishable(path: Path) -> None:
    """Give a file about to be published the cache's file mode (0644), whatever the umask."""
    os.chmod(path, PUBLIC_FILE_MODE)


@contextmanager
def _locked(path: Path, origin: str) -> Iterator[None]:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, PUBLIC_FILE_MODE)
    except OSError as e:
        raise _write_error(e, f"cannot open the lock file {path.name} in {origin}") from None
    try:
        st = os.fstat(fd)
        if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) != PUBLIC_FILE_MODE:
            os.fchmod(fd, PUBLIC_FILE_MODE)  # the umask applied when it was created
    except OSError:
        pass
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _remove_stale_builds(directory: Path, own_stem: str) -> None:
    """Remove the build directories no live process is using: those of ``own_stem`` (whose lock
    the caller holds), those of other kernels whose lock can be taken at once, and any other
    ``.build-*`` entry a day old. Never raises."""
    try:
        entries = [e for e in os.scandir(directory) if e.name.startswith(".build-")]
    except OSError:
        return
    for entry in entries:
        match = _BUILD.match(entry.name)
        stem = match.group("stem") if match else None
        if stem == own_stem:
            _remove(entry.path)
        elif stem is not None and os.path.exists(directory / f"{stem}.lock"):
            _remove_if_unlocked(entry.path, directory / f"{stem}.lock")
        else:
            try:
                old = time.time() - entry.stat(follow_symlinks=False).st_mtime > STALE_SECONDS
            except OSError:
                continue
            if old:
                _remove(entry.path)


def _remove_if_unlocked(path: str, lock: Path) -> None:
    try:
        fd = os.open(lock, os.O_RDWR)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # its builder is alive
        os.close(fd)
        return
    try:
        _remove(path)
    finally:
        os.close(fd)


def _remove(path: str) -> None:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass


def _build(
    recipe: _Recipe,
    compiler: str,
    flags: Sequence[str],
    directory: Path,
    stem: str,
    key: str,
    origin: str,
) -> None:
    """Compile into a private build directory, check the result, publish library then sidecar."""
    try:
        build = Path(tempfile.mkdtemp(prefix=f".build-{stem}-", dir=directory))
    except OSError as e:
        raise _write_error(e, f"cannot write in {origin}") from None
    try:
        sources = recipe.write(build)
        out = build / f"{recipe.name}.so"
        cmd = _compile_and_link(compiler, flags, sources, out)
        if not out.is_file() or out.stat().st_size == 0:
            raise CompileError(
                f"the compiler {compiler} exited 0 but wrote no library ({' '.join(cmd)}); "
                "is it a C compiler? (WBC_CC chooses it)"
            )
        try:
            recipe.load(out, True)
        except CompileError as e:
            raise CompileError(f"the compiler {compiler} produced an unusable library ({' '.join(cmd)}): {e}") from None
        digest = _sha256(out)
        _publishable(out)
        os.replace(out, directory / f"{stem}.so")
        side = build / "sidecar"
        side.write_text(f"{key} {digest}\n")
        _publishable(side)
        os.replace(side, directory / f"{stem}.sha256")
    finally:
        shutil.rmtree(build, ignore_errors=True)


def _compile_and_link(compiler: str, flags: Sequence[str], sources: Iterable[Path], out: Path) -> list[str]:
    """Build the library ``out`` from ``sources``: one compiler call for one file; for several, each
    compiled to an object file as soon as it is written (as many at once as this process may use
    processors), then linked. Returns the last command (for messages).

    Raises:
        CompileError: a compiler call failed (its output is in the message).
    """
    files = iter(sources)
    first = next(files)
    second = next(files, None)
    low = background.is_worker()  # a background compile: the compiler yields to the user's threads
    if second is None:
        cmd = [compiler, *flags, str(first), "-o", str(out), "-lm"]
        _run(cmd, first.name, low)
        return cmd
    objects: list[Path] = []
    running: collections.deque[tuple[subprocess.Popen, list[str], str]] = collections.deque()
    try:
        for src in itertools.chain((first, second), files):
            if len(running) >= _processors():
                _finish(*running.popleft())
            objects.append(src.with_suffix(".o"))
            command = [compiler, *flags, "-c", str(src), "-o", str(objects[-1])]
            running.append((_start(command, low), command, src.name))
        while running:
            _finish(*running.popleft())
    finally:  # a failed file (or an interrupt): the others' compilers are stopped, not left behind
        for proc, _, _ in running:
            proc.kill()
            proc.communicate()
    cmd = [compiler, *flags, *map(str, objects), "-o", str(out), "-lm"]
    _run(cmd, out.name, low)
    return cmd


#: How much a background compile's compiler processes are niced (POSIX priority, 0-19).
BACKGROUND_NICENESS = 10


def _run(cmd: list[str], what: str, low_priority: bool = False) -> None:
    """Run the compiler ``cmd`` (``what``: the file, for the message) and wait for it.

    Raises:
        CompileError: it failed (its output is in the message).
    """
    _finish(_start(cmd, low_priority), cmd, what)


def _start(cmd: list[str], low_priority: bool = False) -> subprocess.Popen:
    """Start the compiler ``cmd`` (niced by :data:`BACKGROUND_NICENESS` if ``low_priority``), with a
    copy of the environment: without one, the child reads the process's environment while it is
    copied for it, and another thread changing ``os.environ`` meanwhile (a background compile runs
    beside the user's threads) made ``exec`` fail with EFAULT (a stress run: 68 of 257 spawns).

    Processes, not a thread pool: a background compile finishing at interpreter exit (its ``atexit``
    wait) may no longer submit work to an executor."""
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
        env=os.environ.copy(),
    )
    if low_priority:
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, proc.pid, BACKGROUND_NICENESS)
    return proc


def _finish(proc: subprocess.Popen, cmd: list[str], what: str) -> None:
    """Wait for the compiler ``proc`` started with ``cmd``; CompileError naming ``what`` if it failed."""
    _, stderr = proc.communicate()
    if proc.returncode != 0:
        raise CompileError(f"compiling {what} failed ({' '.join(cmd)}):\n{stderr[-4000:]}")


def _processors() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _private_directory(reason: str) -> Path:
    """The private fallback cache ``$TMPDIR/wbc-kernels-<uid>``, created if needed (``reason``: why
    it is needed, for the message).

    Raises:
        CacheUnavailable: it cannot be created, or it is not a directory owned by this user and
            closed to others (someone else's, or a link).
    """
    try:
        path = _fallback_path()
    except OSError as e:  # no usable temporary directory at all
        raise CacheUnavailable(f"{reason}, and no temporary directory for a fallback: {e}") from None
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        raise CacheUnavailable(f"{reason}, and cannot create the fallback kernel cache {path} ({e.strerror})") from None
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise CacheUnavailable(
            f"{reason}, and the fallback kernel cache {path} is not a directory owned by this user and closed "
            "to others (remove it)"
        )
    chain = untrusted_directory(path)
    if chain is not None:
        raise CacheUnavailable(f"{reason}, and the fallback kernel cache cannot be trusted: {chain}")
    return path
