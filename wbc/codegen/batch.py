"""Batched evaluation: one compiled kernel over N states per call, in parallel threads.

:class:`BatchKernel` evaluates a :class:`~wbc.codegen.Kernel`'s function for a batch of states in
one call: numpy arrays with a leading batch axis in, the same out. A small C driver (``batch.c``,
compiled once into the kernel cache) splits the N states into contiguous chunks, one per thread,
and calls the kernel's generated C entry point state by state with per-thread work vectors; it is
called through ``ctypes``, which releases the GIL for the whole call, so there is no Python per
state and other Python threads run meanwhile. Each state is computed exactly as a single call of
the kernel computes it: a batched call equals N single calls bit for bit::

    aba = wbc.codegen.compile_function(wbc.codegen.algorithm_functions.aba_function(model))
    batch = wbc.codegen.BatchKernel(aba)              # threads: every processor this process may use
    qdd, = batch(Q, V, TAU)                           # Q (N, nq), V and TAU (N, nv) -> qdd (N, nv)
    tau, = rnea_batch(Q, V, a0)                       # a0 (nv,): one value shared by all states

Shapes. An argument of shape ``(N, *s)``, ``s`` the input's :attr:`~wbc.codegen.Kernel.input_shapes`
entry, is one value per state; an argument of shape ``s`` itself is one value shared by every
state (read in place, no copy). Every output comes back as ``(N, *s)`` for its declared shape ``s``.
A matrix output ``(N, rows, cols)`` is a view of column-major storage (each state's matrix is
contiguous in Fortran order, as the kernel writes it); ``np.ascontiguousarray`` makes a C-ordered
copy when one is needed.

Fallback. A kernel running in CasADi's virtual machine (no C compiler), or one whose library does
not have CasADi's C interface, is evaluated by CasADi's own ``Function.map(N, "thread", threads)``:
correct, slower, with a :class:`~wbc.errors.WbcPerformanceWarning`.
"""

from __future__ import annotations

import ctypes
import functools
import os
import warnings
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import NamedTuple

import casadi as ca
import numpy as np

from ..errors import CompileError, InputError, WbcPerformanceWarning
from .cache import CacheUnavailable, cached_source_library, find_compiler
from .kernel import Kernel

__all__ = ["BatchKernel", "available_threads"]

#: Compiler flags of the driver (a loop and pointer arithmetic; the kernel's own code is compiled
#: with its own flags).
FLAGS: tuple[str, ...] = ("-O2", "-fPIC", "-shared", "-pthread")

_P = ctypes.c_void_p
_INT = ctypes.c_longlong


def available_threads() -> int:
    """The processors this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _load_driver(path: Path) -> ctypes._CDLL:  # type: ignore[name-defined]
    try:
        library = ctypes.CDLL(str(path))  # CDLL: the GIL is released during the call
        run = library.wbc_batch
    except (OSError, AttributeError) as e:
        raise CompileError(f"{path}: cannot load wbc_batch from it: {e}") from None
    run.argtypes = [_P, _P, _P, ctypes.c_int, _P, _P, ctypes.c_int, _P, _P, _INT, _P, ctypes.c_int, _P]
    run.restype = ctypes.c_int
    return library


@functools.cache
def _driver() -> ctypes._CDLL | None:  # type: ignore[name-defined]
    """The compiled driver, or None (the caller warns) when it cannot be built."""
    if find_compiler() is None:
        return None
    source = resources.files("wbc.codegen").joinpath("batch.c").read_text()
    try:
        return cached_source_library("wbc_batch", source, _load_driver, flags=FLAGS)
    except (CompileError, CacheUnavailable):
        return None


class EntryPoints(NamedTuple):
    """A kernel's C entry points: ``eval``, ``checkout`` and ``release`` addresses (0: absent),
    the work sizes ``(arg, res, iw, w)``, and the library holding them (kept alive)."""

    eval: int
    checkout: int
    release: int
    sizes: tuple[int, int, int, int]
    library: ctypes.CDLL


def entry_points(kernel: Kernel) -> EntryPoints | None:
    """``kernel``'s generated C entry points, or None when it is not a compiled library with
    CasADi's C interface and wbc's number types (double, long long)."""
    if kernel.backend != "c" or kernel.library is None:
        return None
    name = kernel.name
    try:
        library = ctypes.CDLL(str(kernel.library))
        function = getattr(library, name)
        work = getattr(library, f"{name}_work")
    except (OSError, AttributeError):
        return None
    for what, size in (("int", ctypes.sizeof(_INT)), ("real", ctypes.sizeof(ctypes.c_double))):
        probe = getattr(library, f"{name}_casadi_{what}_size", None)
        if probe is not None:
            probe.restype = ctypes.c_int
            if probe() != size:
                return None
    sizes = [_INT() for _ in range(4)]
    work.restype = ctypes.c_int
    if work(*[ctypes.byref(x) for x in sizes]) != 0:
        return None
    checkout = getattr(library, f"{name}_checkout", None)
    release = getattr(library, f"{name}_release", None)
    return EntryPoints(
        ctypes.cast(function, _P).value or 0,
        0 if checkout is None else ctypes.cast(checkout, _P).value or 0,
        0 if release is None else ctypes.cast(release, _P).value or 0,
        (sizes[0].value, sizes[1].value, sizes[2].value, sizes[3].value),
        library,
    )


def _is_matrix(shape: tuple[int, ...]) -> bool:
    """Whether column-major and row-major orders of ``shape`` differ (two axes, both longer than 1)."""
    return len(shape) == 2 and shape[0] > 1 and shape[1] > 1


class BatchKernel:
    """A compiled kernel evaluated over a batch of states per call (see :mod:`wbc.codegen.batch`).

    Args:
        kernel: the kernel (from :func:`~wbc.codegen.compile_function`, or a controller's
            ``kernel``). It is only read: its buffers and bound inputs are left alone.
        threads: threads per call (default :func:`available_threads`); a call may override it.

    Attributes:
        kernel: the kernel.
        threads: the default thread count.
        backend: ``"c-threads"`` (the C driver) or ``"casadi-map"`` (the fallback).
        input_shapes, output_shapes: the per-state shapes (the kernel's).
    """

    def __init__(self, kernel: Kernel, threads: int | None = None) -> None:
        if not isinstance(kernel, Kernel):
            raise InputError(f"BatchKernel takes a wbc.codegen.Kernel, got {type(kernel).__name__}")
        self.kernel = kernel
        self.threads = self._threads(threads)
        self.input_shapes = [tuple(s) for s in kernel.input_shapes]
        self.output_shapes = [tuple(s) for s in kernel.output_shapes]
        self._nnz_in = [int(np.prod(s)) for s in self.input_shapes]
        self._nnz_out = [int(np.prod(s)) for s in self.output_shapes]
        entry = entry_points(kernel)
        driver = _driver() if entry is not None else None
        self._c = entry if driver is not None else None
        self._run = driver.wbc_batch if driver is not None else None
        self.backend = "c-threads" if self._c is not None else "casadi-map"
        if self._c is None:
            warnings.warn(
                f"kernel {kernel.name}: no compiled batch driver (backend {kernel.backend!r}); batches run "
                "through CasADi's Function.map, correct but slower",
                WbcPerformanceWarning,
                stacklevel=2,
            )

    @staticmethod
    def _threads(threads: int | None) -> int:
        if threads is None:
            return available_threads()
        if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
            raise InputError(f"threads must be a positive integer, got {threads!r}")
        return int(threads)

    def __repr__(self) -> str:
        return f"BatchKernel({self.kernel.name!r}, threads={self.threads}, backend={self.backend!r})"

    # ----------------------------------------------------------------------------- arguments
    def _inputs(self, args: Sequence) -> tuple[int, list[np.ndarray], list[int]]:
        """The batch size, each input as a float64 array in the kernel's storage order (per state
        contiguous) and its stride in doubles (0: shared by every state)."""
        k = self.kernel
        if len(args) != len(self.input_shapes):
            raise TypeError(
                f"batched kernel {k.name} takes {len(self.input_shapes)} inputs ({k.input_names}), got {len(args)}"
            )
        arrays: list[np.ndarray] = []
        batched: list[bool] = []
        n: int | None = None
        for j, (arg, shape) in enumerate(zip(args, self.input_shapes)):
            try:
                a = np.asarray(arg, dtype=np.float64)
            except (TypeError, ValueError) as e:
                raise self._bad_input(j, arg, f"not real numbers: {e}") from None
            if a.shape == shape:
                batched.append(False)
            elif a.ndim == len(shape) + 1 and a.shape[1:] == shape:
                batched.append(True)
                if n is None:
                    n = a.shape[0]
                elif a.shape[0] != n:
                    raise self._bad_input(j, arg, f"{a.shape[0]} states where the earlier inputs have {n}")
            else:
                raise self._bad_input(j, arg)
            arrays.append(a)
        if n is None:
            raise InputError(
                f"batched kernel {k.name}: no input has a batch axis (give at least one input as (N, *shape)); "
                f"per-state shapes {self.input_shapes}"
            )
        out, strides = [], []
        for a, is_batched, shape, nnz in zip(arrays, batched, self.input_shapes, self._nnz_in):
            if _is_matrix(shape):  # the kernel reads each matrix column-major
                a = np.swapaxes(a, -1, -2)
            a = np.ascontiguousarray(a)
            out.append(a)
            strides.append(nnz if is_batched else 0)
        return n, out, strides

    def _bad_input(self, index: int, value, why: str | None = None) -> InputError:
        k = self.kernel
        shape = self.input_shapes[index]
        got = f"shape {np.shape(value)}" if why is None else why
        return InputError(
            f"batched kernel {k.name}: input {k.input_names[index]!r} must be (N, *{shape}) for N states or "
            f"{shape} shared by all, got {got}"
        )

    def _outputs(self, n: int, out: Sequence[np.ndarray] | None) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The arrays returned (``(n, *shape)``) and their storage (per state contiguous, column-major)."""
        k = self.kernel
        if out is None:
            storage = [  # zeroed: the kernel never writes its structural zeros (wbc.codegen.emit)
                np.zeros((n, s[1], s[0]) if _is_matrix(s) else (n, *s), dtype=np.float64) for s in self.output_shapes
            ]
            views = [np.swapaxes(a, 1, 2) if _is_matrix(s) else a for a, s in zip(storage, self.output_shapes)]
            return views, storage
        if len(out) != len(self.output_shapes):
            raise InputError(f"batched kernel {k.name}: out= needs {len(self.output_shapes)} arrays, got {len(out)}")
        storage = []
        for j, (a, s) in enumerate(zip(out, self.output_shapes)):
            if not (isinstance(a, np.ndarray) and a.dtype == np.float64 and a.shape == (n, *s)):
                raise InputError(
                    f"batched kernel {k.name}: out[{j}] ({k.output_names[j]!r}) must be a float64 array of shape "
                    f"{(n, *s)}, got {getattr(a, 'shape', type(a).__name__)}"
                )
            base = np.swapaxes(a, 1, 2) if _is_matrix(s) else a
            if not base.flags.c_contiguous:
                order = "column-major per state, as the arrays this kernel returns" if _is_matrix(s) else "C-contiguous"
                raise InputError(f"batched kernel {k.name}: out[{j}] ({k.output_names[j]!r}) must be {order}")
            base.fill(0.0)  # the kernel never writes its structural zeros (wbc.codegen.emit)
            storage.append(base)
        return list(out), storage

    # ----------------------------------------------------------------------------- evaluation
    def __call__(self, *args, threads: int | None = None, out: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
        """Evaluate the kernel for every state of the batch.

        Args:
            *args: one per input: ``(N, *shape)`` (one value per state) or ``shape`` (shared).
            threads: threads for this call (default :attr:`threads`; never more than N).
            out: arrays to write the outputs into (as this call returns them: float64, ``(N, *shape)``,
                matrices column-major per state; cleared first); default new arrays.

        Returns:
            One array ``(N, *shape)`` per output.

        Raises:
            TypeError: not one argument per input.
            InputError: an argument or ``out`` array of another shape, no batched argument, or not numbers
                (names the kernel and the input).
            CompileError: the kernel's C function reported a failure (names the state).
        """
        n, inputs, strides = self._inputs(args)
        views, storage = self._outputs(n, out)
        count = self.threads if threads is None else self._threads(threads)
        if n == 0:
            return views
        if self._c is None or self._run is None:
            self._map(n, inputs, strides, storage, count)
            return views
        c = self._c
        n_in, n_out = len(inputs), len(storage)
        in_ptrs = (_P * max(1, n_in))(*[a.ctypes.data for a in inputs])
        in_strides = (_INT * max(1, n_in))(*strides)
        out_ptrs = (_P * max(1, n_out))(*[a.ctypes.data for a in storage])
        out_strides = (_INT * max(1, n_out))(*self._nnz_out)
        sizes = (_INT * 4)(*c.sizes)
        failed = _INT(-1)
        status = self._run(
            c.eval,
            c.checkout or None,
            c.release or None,
            n_in,
            in_ptrs,
            in_strides,
            n_out,
            out_ptrs,
            out_strides,
            n,
            sizes,
            count,
            ctypes.byref(failed),
        )
        if status == 1:
            raise CompileError(f"batched kernel {self.kernel.name}: the C function failed at state {failed.value}")
        if status == 2:
            raise MemoryError(f"batched kernel {self.kernel.name}: no memory for {count} threads' work vectors")
        return views

    def _map(self, n: int, inputs: list[np.ndarray], strides: list[int], storage: list[np.ndarray], threads: int):
        """CasADi's ``Function.map`` over the batch (the fallback): input ``j`` of size ``(r, c)`` goes
        in as the ``(r, c N)`` concatenation of the states' matrices, and the outputs come back so."""
        function = self.kernel.function
        mapped = function.map(n, "thread", max(1, min(threads, n)))
        columns = []
        for j, (a, stride, nnz) in enumerate(zip(inputs, strides, self._nnz_in)):
            rows = function.size1_in(j)
            flat = a.reshape(n, nnz) if stride else np.broadcast_to(a.reshape(1, nnz), (n, nnz))
            columns.append(ca.DM(np.ascontiguousarray(flat.reshape(-1, rows).T)))
        results = mapped.call(columns)
        for dst, res, nnz in zip(storage, results, self._nnz_out):
            dst.reshape(n, nnz)[:] = np.asarray(ca.DM(res).full()).T.reshape(n, nnz)
