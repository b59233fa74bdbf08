"""Compiled kernels: a traced function compiled (or taken from the cache) and evaluated through
CasADi's buffer API into preallocated numpy arrays.

Without a C compiler (none on ``PATH``, or ``$WBC_CC`` names a missing one) kernels run in
CasADi's SX virtual machine: correct, slower, with one :class:`~wbc.errors.WbcPerformanceWarning`.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import casadi as ca
import numpy as np

from ..errors import CompileError, WbcPerformanceWarning
from .cache import DEFAULT_FLAGS, cache_dir, cached_library, find_compiler

__all__ = ["Kernel", "compile_function"]

_warned_no_compiler = False


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

    def __init__(
        self,
        function: ca.Function,
        source: ca.Function,
        backend: str,
        library: Path | None = None,
        compile_seconds: float = 0.0,
        load_seconds: float = 0.0,
    ) -> None:
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
            self._buffer.set_arg(i, memoryview(f))  # type: ignore[call-arg, arg-type]
        for i, f in enumerate(self._out_flat):
            self._buffer.set_res(i, memoryview(f))  # type: ignore[call-arg, arg-type]

    @staticmethod
    def _view(flat: np.ndarray, size: tuple[int, int]) -> np.ndarray:
        rows, cols = size
        return flat if cols == 1 else flat.reshape((rows, cols), order="F")

    def bind_input(self, index: int, array: np.ndarray) -> None:
        """Make ``array`` (float64, contiguous, as many entries as input ``index``) the storage the
        kernel reads input ``index`` from: later changes to ``array`` are seen by :meth:`run` with no
        copy. The kernel keeps a reference to it."""
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
        self.inputs[index] = array
        self._buffer.set_arg(index, memoryview(array))  # type: ignore[call-arg, arg-type]

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
    directory: Path | None = None,
    flags: Sequence[str] = DEFAULT_FLAGS,
    compiler: str | None = None,
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
    t0 = time.perf_counter()
    directory = Path(directory) if directory is not None else cache_dir()
    library, compiled = cached_library(function, directory, flags, compiler)
    compile_seconds = time.perf_counter() - t0 if compiled else 0.0
    t1 = time.perf_counter()
    external = ca.external(function.name(), str(library))
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


def _check_signature(loaded: ca.Function, source: ca.Function, library: Path) -> None:
    same = loaded.n_in() == source.n_in() and loaded.n_out() == source.n_out()
    same = same and all(loaded.sparsity_in(i) == source.sparsity_in(i) for i in range(source.n_in()))
    same = same and all(loaded.sparsity_out(i) == source.sparsity_out(i) for i in range(source.n_out()))
    if not same:
        raise CompileError(f"{library}: the library's signature does not match the traced function")
