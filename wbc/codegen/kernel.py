"""Compiled kernels: a traced function compiled (or taken from the cache) and evaluated through
CasADi's buffer API into preallocated numpy arrays.

Shapes. A kernel's input and output arrays have exactly the shapes the function declares: for a
:class:`~wbc.codegen.TracedFunction` (what :func:`~wbc.codegen.trace` returns) the declared ones,
``(n,)`` for a size ``n`` and ``(rows, cols)`` for a size ``(rows, cols)``, also when ``rows`` or
``cols`` is 1 (a one-column input matrix stays ``(nv, 1)``, a 1x1 inertia matrix ``(1, 1)``); for
any other ``casadi.Function``, ``(n,)`` for a column ``(n, 1)`` and ``(rows, cols)`` otherwise.

Without a usable C compiler (none on ``PATH``, ``$WBC_CC`` names a missing one or is empty) or
without any writable place for the compiled library, kernels run in CasADi's SX virtual machine:
correct, slower, with a :class:`~wbc.errors.WbcPerformanceWarning`.
"""

from __future__ import annotations

import threading
import time
import warnings
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path

import casadi as ca
import numpy as np

from ..errors import CompileError, InputError, WbcPerformanceWarning
from .cache import CacheUnavailable, cached_library, find_compiler, flags_of
from .trace import TracedFunction, natural_shapes

__all__ = ["Kernel", "compile_function"]

_warned_no_compiler = False


def _shapes(function: ca.Function) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """The declared numpy shapes of ``function``'s inputs and outputs (see the module docstring)."""
    if isinstance(function, TracedFunction):
        return list(function.input_shapes), list(function.output_shapes)
    return natural_shapes(function.size_in, function.n_in()), natural_shapes(function.size_out, function.n_out())


def _accepted(shape: tuple[int, ...]) -> frozenset[tuple[int, ...]]:
    """The argument shapes :meth:`Kernel.__call__` takes for an input of ``shape``: the shape
    itself, a vector as a column or a row, a one-column (one-row) matrix as a vector, one entry
    as a scalar. Never a transposed matrix or a reshuffle of the entries."""
    n = int(np.prod(shape))
    ok = {shape}
    if len(shape) == 1 or 1 in shape:
        ok |= {(n,), (n, 1), (1, n)}
    if n == 1:
        ok.add(())
    return frozenset(ok)


class Kernel:
    """A ``casadi.Function`` evaluated through the buffer API into preallocated numpy arrays.

    ``kernel(*args)`` copies the arguments into the input buffers, evaluates, and returns the
    output arrays (on a compiled kernel, with float64 arrays of the inputs' exact shapes, matrices
    column-major, in one C call: :func:`wbc.codegen.calls.kernel_call`). **The returned arrays are
    the kernel's own buffers**, overwritten by the next call: copy what you keep. Each input and
    output has its declared shape exactly (:attr:`input_shapes`, :attr:`output_shapes`; see
    :mod:`wbc.codegen.kernel`); matrices are column-major views.

    Attributes:
        function: the function evaluated (the loaded library, or the SX function in VM mode).
        name: function name.
        backend: ``"c"`` (compiled) or ``"sx-vm"`` (CasADi virtual machine).
        n_instructions: operation count of the traced SX function (deterministic).
        library: path of the shared library, or None.
        compile_seconds: time spent generating and compiling (0 on a cache hit).
        load_seconds: time spent loading the library.
        input_names, output_names: the names of the inputs and outputs.
        input_shapes, output_shapes: their numpy shapes.
        inputs: the input arrays (write into them and call :meth:`run` to skip the copies).
        outputs: the output arrays.
        evaluate: the bare evaluation, a callable of no arguments returning nothing (what
            :meth:`run` calls): reads :attr:`inputs`, writes :attr:`outputs`.
        lock: a lock for callers that share the buffers across threads (the kernel itself takes
            none).
    """

    def __init__(
        self,
        function: ca.Function,
        source: ca.Function,
        backend: str,
        library: Path | None = None,
        compile_seconds: float = 0.0,
        load_seconds: float = 0.0,
        n_instructions: int | None = None,
    ) -> None:
        self.function = function
        self.name = source.name()
        self.backend = backend
        self.library = library
        self.compile_seconds = compile_seconds
        self.load_seconds = load_seconds
        self.n_instructions = int(source.n_instructions()) if n_instructions is None else int(n_instructions)
        self.input_names = [source.name_in(i) for i in range(source.n_in())]
        self.output_names = [source.name_out(i) for i in range(source.n_out())]
        in_shapes, out_shapes = _shapes(source)
        self.input_shapes = in_shapes
        self.output_shapes = out_shapes
        self._accepted = [_accepted(s) for s in in_shapes]
        self._in_flat = [np.zeros(source.nnz_in(i)) for i in range(source.n_in())]
        self._out_flat = [np.zeros(source.nnz_out(i)) for i in range(source.n_out())]
        self.inputs = [f.reshape(s, order="F") for f, s in zip(self._in_flat, in_shapes)]
        # what __call__ writes a vector argument through: a memoryview of a vector input's storage
        # (assigning to it copies a float64 vector of the same length, and refuses anything else);
        # None for a matrix input
        self._views: list[memoryview | None] = [
            memoryview(f) if len(s) == 1 else None  # type: ignore[arg-type]
            for f, s in zip(self._in_flat, in_shapes)
        ]
        self.outputs = [f.reshape(s, order="F") for f, s in zip(self._out_flat, out_shapes)]
        self.lock = threading.Lock()
        self._buffer, self._eval = function.buffer()
        self.evaluate = self._eval
        for i, f in enumerate(self._in_flat):
            self._buffer.set_arg(i, memoryview(f))  # type: ignore[call-arg, arg-type]
        for i, f in enumerate(self._out_flat):
            self._buffer.set_res(i, memoryview(f))  # type: ignore[call-arg, arg-type]
        # __call__ in one C call: made by the first call (a first kernel call on a machine compiles
        # the routine once, see wbc.codegen.builtins), None where unavailable
        self._c_call: Callable[..., list[np.ndarray]] | bool | None = False

    def _compiled_call(self) -> Callable[..., list[np.ndarray]] | None:
        """:meth:`__call__` in one C call (:func:`wbc.codegen.calls.kernel_call`), or None."""
        from .calls import kernel_call  # calls builds on this module

        if self.backend != "c":
            return None
        me = weakref.ref(self)  # the C call lives on the kernel: no reference cycle

        def fallback(*args):  # called only through the kernel's own __call__: it is alive
            return me()._call_checked(*args)

        return kernel_call(self, fallback)

    def bind_input(self, index: int, array: np.ndarray) -> None:
        """Make ``array`` (float64, contiguous, as many entries as input ``index``) the storage the
        kernel reads input ``index`` from: later changes to ``array`` are seen by :meth:`run` with no
        copy. The kernel keeps a reference to it; a matrix input reads ``array``'s entries in
        column-major order, and :attr:`inputs` ``[index]`` becomes a view of ``array`` with the
        input's shape."""
        size = self._in_flat[index].size
        if not (
            isinstance(array, np.ndarray)
            and array.dtype == np.float64
            and array.size == size
            and array.flags.c_contiguous
        ):
            raise CompileError(
                f"kernel {self.name}: input {self.input_names[index]!r} can only be bound to a contiguous "
                f"float64 array of {size} entries"
            )
        self._in_flat[index] = array
        self.inputs[index] = array.reshape(self.input_shapes[index], order="F")
        self._views[index] = memoryview(array) if len(self.input_shapes[index]) == 1 else None  # type: ignore[arg-type]
        self._buffer.set_arg(index, memoryview(array))  # type: ignore[call-arg, arg-type]
        self._c_call = False  # made again by the next call: the C call reads the new storage

    def run(self) -> list[np.ndarray]:
        """Evaluate with the current contents of :attr:`inputs`; returns :attr:`outputs`."""
        self._eval()
        return self.outputs

    def __call__(self, *args) -> list[np.ndarray]:
        """Copy ``args`` into the input buffers, evaluate, return the outputs.

        Each argument has its input's shape; a vector may also come as a column or a row, a
        one-column (or one-row) matrix as a vector, a single entry as a scalar.

        Raises:
            TypeError: not one argument per input.
            InputError: an argument of another shape, or not real numbers (names the kernel, the
                input, the expected and the given shapes).
        """
        c_call = self._c_call
        if c_call is False:
            c_call = self._c_call = self._compiled_call()
        if c_call is not None:  # one C call (arguments that do not fit: _call_checked)
            return c_call(*args)  # type: ignore[operator]
        try:  # the fastest path: float64 vectors of the inputs' lengths, copied by the memoryviews
            for view, src in zip(self._views, args, strict=True):
                view[:] = src  # type: ignore[index]
        except (TypeError, ValueError):
            return self._call_checked(*args)
        self._eval()
        return self.outputs

    def _call_checked(self, *args) -> list[np.ndarray]:
        """:meth:`__call__` for arguments its fastest path refused: matrices, other dtypes, shapes."""
        inputs = self.inputs
        if len(args) != len(inputs):
            raise TypeError(f"kernel {self.name} takes {len(inputs)} inputs ({self.input_names}), got {len(args)}")
        try:  # the fast path: arrays of the inputs' shapes
            for dst, src in zip(inputs, args):
                if src.shape != dst.shape:
                    break
                np.copyto(dst, src)
            else:
                self._eval()
                return self.outputs
        except (AttributeError, TypeError, ValueError):
            pass
        for k, src in enumerate(args):  # any other argument: checked, converted, or refused
            try:
                shape = np.shape(src)
            except (TypeError, ValueError) as e:
                raise self._bad_input(k, src, e) from None
            if shape not in self._accepted[k]:
                raise self._bad_input(k, src)
            try:
                np.copyto(inputs[k], np.reshape(src, inputs[k].shape))
            except (TypeError, ValueError) as e:
                raise self._bad_input(k, src, e) from None
        self._eval()
        return self.outputs

    def _bad_input(self, index: int, value, cause: Exception | None = None) -> InputError:
        expected = self.input_shapes[index]
        try:
            got = f"shape {np.shape(value)}, dtype {np.asarray(value).dtype}"
        except Exception:  # an object numpy cannot even look at
            got = type(value).__name__
        others = sorted(self._accepted[index] - {expected}, key=lambda s: (len(s), s), reverse=True)
        extra = f" (also accepted: {', '.join(str(s) for s in others)})" if others else ""
        why = f" ({cause})" if cause is not None else ""
        return InputError(
            f"kernel {self.name}: input {self.input_names[index]!r} must be real numbers of shape "
            f"{expected}{extra}, got {got}{why}"
        )

    def __repr__(self) -> str:
        return f"Kernel({self.name!r}, backend={self.backend!r}, n_instructions={self.n_instructions})"


def compile_function(
    function: ca.Function,
    *,
    directory: Path | str | None = None,
    flags: Sequence[str] | None = None,
    compiler: str | None = None,
) -> Kernel:
    """Compile ``function`` to a shared library (or reuse the cached one) and wrap it in a :class:`Kernel`.

    The library is cached in ``directory`` (default :func:`~wbc.codegen.cache_dir`); see
    :mod:`wbc.codegen.cache` for what happens when that place is read-only or unusable. Falls back
    to CasADi's SX virtual machine, with a warning, when no C compiler exists or no place to put
    the library can be written. ``flags`` default to :func:`~wbc.codegen.cache.flags_of`
    ``(function)``: ``-O2`` for a hot traced function, ``-Og`` otherwise.

    Raises:
        CompileError: the compiler exists but failed or produced no usable library (its output is
            in the message), or the cache location exists and is not a directory (the message
            names it and where it came from: ``directory=`` or ``$WBC_CACHE_DIR``).
    """
    compiler = compiler or find_compiler()
    flags = flags_of(function) if flags is None else flags
    if compiler is None:
        _warn_no_compiler()
        return Kernel(function, function, "sx-vm")
    t0 = time.perf_counter()
    try:
        cached = cached_library(function, None if directory is None else Path(directory), flags, compiler)
    except CacheUnavailable as e:
        warnings.warn(
            f"{e}: kernel {function.name()} runs in CasADi's SX virtual machine, correct but about 30x slower",
            WbcPerformanceWarning,
            stacklevel=2,
        )
        return Kernel(function, function, "sx-vm")
    compile_seconds = time.perf_counter() - t0 - cached.load_seconds if cached.compiled else 0.0
    return Kernel(cached.function, function, "c", cached.path, compile_seconds, cached.load_seconds)


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
