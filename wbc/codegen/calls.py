"""The per-call path of the compiled numeric API: arguments into a kernel's buffers, one C call,
a copy of the result out.

:func:`fast_call` wraps a :class:`~wbc.codegen.kernel.Kernel` whose last output is a validity
scalar (:func:`validity`) into a function of the kernel's inputs. Per call it compares each
argument's shape with its input's, copies it into the input buffer, evaluates the kernel, reads
the validity scalar and returns a copy of the first output: no tracing, no lookups, no numpy
reductions. For a compiled kernel this is **one C call** (``numeric_call.c``, next to this module,
compiled once per machine into the kernel cache): a CPython builtin function that reads the
arguments through the buffer protocol (float64 arrays of the inputs' exact shapes, contiguous),
calls the kernel's generated C entry point directly and copies the output into a new array made
before, with the GIL held and no Python code run from the first copy to the last (so concurrent
calls take turns without a lock: numpy's ``copy()`` would release the GIL on a large array). A
kernel in CasADi's virtual machine, a free-threaded CPython, or no compiler: the same steps in
Python, under a lock. Finiteness and unit quaternions (and, on clustered models, closed loops) are
checked inside the kernel, by the validity scalar: the sum of the squares of every input (not
finite when an input is not, or overflows) plus ``inf`` for each unit part (quaternion, (cos, sin)
pair) whose norm is off 1 by more than :data:`wbc.checks.UNIT_TOLERANCE` and each loop residual
beyond ``LOOP_TOLERANCE``. Anything unusual (another shape, a list, an integer dtype numpy will
not cast, a validity that is not finite) goes to the function's ``validate``, which converts the
arguments or raises the error the eager API raises (naming the argument); a validity that was not
finite only because of an overflow then returns the computed result.

The buffers are shared by every call of one function on one model: calls from several threads take
turns (the GIL on the C path, a lock on the Python path). :func:`kernel_of` gives a call's kernel.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable, Sequence
from typing import Any

import casadi as ca
import numpy as np

from ..errors import InputError
from ..model import checks
from ..model.model import Model
from . import builtins
from .batch import entry_points
from .kernel import Kernel

__all__ = ["fast_call", "validity", "kernel_of", "compiled_path", "check_out"]

_INF = float("inf")

_MAX_INPUTS = 8  # WBC_MAX_INPUTS in numeric_call.c
_P = ctypes.c_void_p


class _CallData(ctypes.Structure):
    """``wbc_call`` of ``numeric_call.c``: the kernel's entry point, its argument, result and work
    arrays, the validity scalar, the output's buffer and size, and each input's buffer and shape."""

    _fields_ = [
        ("eval", _P),
        ("arg", _P),
        ("res", _P),
        ("iw", _P),
        ("w", _P),
        ("check", _P),
        ("mem", ctypes.c_int),
        ("n_in", ctypes.c_int),
        ("out", _P),
        ("out_bytes", ctypes.c_ssize_t),
        ("out_rows", ctypes.c_ssize_t),
        ("out_cols", ctypes.c_ssize_t),
        ("out_ndim", ctypes.c_int),
        ("inputs", _P * _MAX_INPUTS),
        ("rows", ctypes.c_ssize_t * _MAX_INPUTS),
        ("cols", ctypes.c_ssize_t * _MAX_INPUTS),
        ("ndim", ctypes.c_int * _MAX_INPUTS),
    ]


def _definitions() -> tuple[int, ...] | None:
    """The addresses of ``numeric_call.c``'s method definitions (the numeric call, the kernel
    call), or None (:mod:`.builtins`)."""
    return builtins.definitions(
        "wbc.codegen",
        "numeric_call.c",
        "wbc_numeric_call",
        ("wbc_numeric_definition", "wbc_kernel_definition"),
        "wbc_numeric_call_size",
        ctypes.sizeof(_CallData),
    )


def _definition() -> int | None:
    """The address of ``numeric_call.c``'s numeric call definition, or None."""
    found = _definitions()
    return None if found is None else found[0]


def compiled_path(call: Callable) -> bool:
    """Whether ``call`` (from :func:`fast_call`) runs on the one-C-call path."""
    return builtins.is_builtin(call)


def validity(model: Model, inputs: Sequence, loop_residuals: Sequence = (), loop_tolerance: float = 0.0):
    """The validity scalar (1, 1) of a kernel of ``model`` on ``inputs`` (CasADi columns or
    matrices; the first one the configuration): finite exactly when every input is finite (and its
    squares do not overflow), every unit part of the configuration has norm 1 within
    :data:`~wbc.model.checks.UNIT_TOLERANCE`, and every entry of ``loop_residuals`` is within
    ``loop_tolerance``."""
    total = ca.sumsqr(ca.vertcat(*[ca.vec(x) for x in inputs]))
    q = inputs[0]
    for start, stop, _, _ in checks.unit_parts(model):
        norm = ca.sqrt(ca.sumsqr(q[start:stop]))
        total = total + ca.if_else(ca.fabs(norm - 1.0) > checks.UNIT_TOLERANCE, _INF, 0.0)
    for r in loop_residuals:
        total = total + ca.if_else(ca.mmax(ca.fabs(r)) > loop_tolerance, _INF, 0.0)
    return total


def fast_call(kernel: Kernel, validate: Callable[..., tuple]) -> Callable[..., np.ndarray]:
    """A function of ``kernel``'s inputs returning a copy of its first output (see the module
    docstring): a new array, or, given one more argument than the inputs, that array ``out``
    (:func:`check_out`) filled and returned. ``validate(*args)`` returns the arguments as arrays
    of the inputs' shapes or raises. The function keeps ``kernel`` alive (:func:`kernel_of`)."""
    call = _compiled_call(kernel, validate)
    if call is None:
        call = _fast_call(kernel, validate)
        call.kernel = kernel  # type: ignore[attr-defined]
    return call


def kernel_of(call: Callable) -> Kernel:
    """The kernel a function made by :func:`fast_call` evaluates."""
    return call.__self__[5] if compiled_path(call) else call.kernel  # type: ignore[attr-defined]


def kernel_call(kernel: Kernel, fallback: Callable[..., list[np.ndarray]]) -> Callable[..., list[np.ndarray]] | None:
    """``kernel(*args)`` in one C call (``numeric_call.c``), or None when unavailable: float64
    arrays of the inputs' exact shapes (matrices Fortran-contiguous, vectors contiguous) are copied
    into the input buffers, the kernel is evaluated and ``kernel.outputs`` returned; any other
    arguments go to ``fallback(*args)``. The function keeps no reference to ``kernel``'s object,
    only to its buffers."""
    found = _call_data(kernel)
    definitions = _definitions() if found is not None else None
    if found is None or definitions is None:
        return None
    data, keep = found
    return builtins.new_builtin(definitions[1], (ctypes.addressof(data), fallback, kernel.outputs, data, *keep))


def _call_data(kernel: Kernel) -> tuple[_CallData, tuple] | None:
    """The ``wbc_call`` of ``kernel`` (first output as the output, last as the validity scalar)
    and the objects it points into (the input buffers last), or None when ``kernel`` has no usable C entry point."""
    n = len(kernel.inputs)
    if n > _MAX_INPUTS or kernel.backend != "c" or not kernel.outputs:
        return None
    entry = entry_points(kernel)
    if entry is None:
        return None
    arg_size, res_size, iw_size, w_size = entry.sizes
    arg = (_P * max(arg_size, n, 1))()
    res = (_P * max(res_size, len(kernel.outputs), 1))()
    iw = np.zeros(max(iw_size, 1), dtype=np.int64)
    w = np.zeros(max(w_size, 1))
    flat_in = [x.reshape(-1, order="F") for x in kernel.inputs]  # views of the kernel's buffers
    flat_out = [x.reshape(-1, order="F") for x in kernel.outputs]
    if any(f.ctypes.data != x.ctypes.data for f, x in zip(flat_in + flat_out, kernel.inputs + kernel.outputs)):
        return None
    data = _CallData(eval=entry.eval, arg=ctypes.addressof(arg), res=ctypes.addressof(res))
    data.iw, data.w, data.check = iw.ctypes.data, w.ctypes.data, flat_out[-1].ctypes.data
    data.mem = ctypes.CFUNCTYPE(ctypes.c_int)(entry.checkout)() if entry.checkout else 0
    data.n_in = n
    data.out, data.out_bytes = flat_out[0].ctypes.data, flat_out[0].nbytes
    out_shape: tuple[int, ...] = tuple(kernel.outputs[0].shape)
    data.out_rows, data.out_ndim = out_shape[0], len(out_shape)
    data.out_cols = out_shape[1] if len(out_shape) == 2 else 1
    for k, (f, x) in enumerate(zip(flat_in, kernel.inputs)):
        arg[k] = data.inputs[k] = f.ctypes.data
        shape: tuple[int, ...] = tuple(x.shape)
        data.rows[k], data.cols[k], data.ndim[k] = shape[0], (shape[1] if len(shape) == 2 else 1), len(shape)
    for j, f in enumerate(flat_out):
        res[j] = f.ctypes.data
    return data, (arg, res, iw, w, entry, flat_in)


def _compiled_call(kernel: Kernel, validate: Callable[..., tuple]) -> Callable[..., np.ndarray] | None:
    """The one-C-call function of ``kernel`` (``numeric_call.c``), or None when unavailable."""
    found = _call_data(kernel)
    definition = _definition() if found is not None else None
    if found is None or definition is None:
        return None
    data, (arg, res, iw, w, entry, _) = found
    shapes = [x.shape for x in kernel.inputs]

    def converted(*args):
        return tuple(np.asfortranarray(x, dtype=np.float64) for x in validate(*args))

    def refuse(*args):
        raise InputError(f"kernel {kernel.name}: arguments of shapes {[np.shape(x) for x in args]} for inputs {shapes}")

    output = kernel.outputs[0]
    new = functools.partial(np.empty, output.shape, np.float64, "F")  # the result, filled in C
    bad_out = _out_refusal(output.shape)
    keep = (ctypes.addressof(data), converted, new, refuse, bad_out, kernel, data, arg, res, iw, w, entry)
    return builtins.new_builtin(definition, keep)


def _out_refusal(shape: tuple[int, ...]) -> Callable[[object], None]:
    """``bad_out(out)``: raises the error of an ``out`` array that does not fit ``shape``."""

    def bad_out(out) -> None:
        check_out(out, shape)
        raise InputError(f"out must be a Fortran-contiguous float64 array of shape {shape}")  # never: check_out raised

    return bad_out


def check_out(out, shape: tuple[int, ...]) -> np.ndarray:
    """``out`` when it is a writable float64 array of ``shape``, Fortran-contiguous (what a numeric
    call writes its result into).

    Raises:
        InputError: anything else (says what is wrong).
    """
    if not isinstance(out, np.ndarray):
        raise InputError(f"out must be a numpy array of shape {shape}, got {type(out).__name__}")
    if out.shape != shape or out.dtype != np.float64:
        raise InputError(f"out must be a float64 array of shape {shape}, got {out.dtype} of shape {out.shape}")
    if not out.flags.f_contiguous or not out.flags.writeable:
        raise InputError(
            f"out must be writable and Fortran-contiguous (np.zeros({shape}, order='F')), got "
            f"{'a read-only' if not out.flags.writeable else 'a non-Fortran-contiguous'} array"
        )
    return out


def _fast_call(kernel: Kernel, validate: Callable[..., tuple]) -> Callable[..., np.ndarray]:
    namespace: dict[str, Any] = {f"b{k}": b for k, b in enumerate(kernel.inputs)}
    namespace |= {f"s{k}": b.shape for k, b in enumerate(kernel.inputs)}
    namespace |= {
        "run": kernel.evaluate,
        "check": kernel.outputs[-1],
        "out": kernel.outputs[0],
        "lock": kernel.lock,  # shared by every Python-path call of this kernel
        "copyto": np.copyto,
        "array": np.array,
        "validate": validate,
        "check_out": check_out,
        "shape": kernel.outputs[0].shape,
        "INF": _INF,
    }
    exec(_source(len(kernel.inputs)), namespace)
    return namespace["call"]


def _source(n: int) -> str:
    """The text of the call of a kernel of ``n`` inputs (see the module docstring)."""
    xs = ", ".join(f"x{k}" for k in range(n))
    unpack = f"{xs}," if n == 1 else xs
    shapes = " or ".join(f"x{k}.shape != s{k}" for k in range(n))
    copies = "".join(f"\n            copyto(b{k}, x{k})" for k in range(n))
    return f"""
def call({xs}, result=None):
    if result is not None:
        check_out(result, shape)
    with lock:
        try:
            if {shapes}:
                raise TypeError{copies}
        except (AttributeError, TypeError, ValueError):
            {unpack} = validate({xs}){copies}
        run()
        if not check[0] < INF:
            validate({xs})
        if result is None:
            return array(out)
        copyto(result, out)
        return result
"""
