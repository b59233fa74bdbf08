"""The per-call path of the compiled numeric API: arguments into a kernel's buffers, one C call,
a copy of the result out.

:func:`fast_call` wraps a :class:`~wbc.codegen.kernel.Kernel` whose last output is a validity
scalar (:func:`validity`) into a plain Python function of the kernel's inputs. Per call it compares
each argument's shape with its input's, copies it into the input buffer, evaluates the kernel,
reads the validity scalar and returns a copy of the first output: no tracing, no lookups, no
numpy reductions. Finiteness and unit quaternions (and, on clustered models, closed loops) are
checked inside the kernel, by the validity scalar: the sum of the squares of every input (not
finite when an input is not, or overflows) plus ``inf`` for each unit part (quaternion, (cos, sin)
pair) whose norm is off 1 by more than :data:`wbc.checks.UNIT_TOLERANCE` and each loop residual
beyond ``LOOP_TOLERANCE``. Anything unusual (another shape, a list, an integer dtype numpy will
not cast, a validity that is not finite) goes to the function's ``validate``, which converts the
arguments or raises the error the eager API raises (naming the argument); a validity that was not
finite only because of an overflow then returns the computed result.

The buffers are shared by every call of one function on one model: a lock makes concurrent calls
from several threads take turns.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import casadi as ca
import numpy as np

from ..model import checks
from ..model.model import Model
from .kernel import Kernel

__all__ = ["fast_call", "validity"]

_INF = float("inf")


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
    docstring). ``validate(*args)`` returns the arguments as arrays of the inputs' shapes or raises.
    The function's ``kernel`` attribute is ``kernel`` (which must live as long as its buffers)."""
    call = _fast_call(kernel, validate)
    call.kernel = kernel  # type: ignore[attr-defined]
    return call


def _fast_call(kernel: Kernel, validate: Callable[..., tuple]) -> Callable[..., np.ndarray]:
    namespace: dict[str, Any] = {f"b{k}": b for k, b in enumerate(kernel.inputs)}
    namespace |= {f"s{k}": b.shape for k, b in enumerate(kernel.inputs)}
    namespace |= {
        "run": kernel.evaluate,
        "check": kernel.outputs[-1],
        "out": kernel.outputs[0],
        "lock": threading.Lock(),
        "copyto": np.copyto,
        "array": np.array,
        "validate": validate,
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
def call({xs}):
    with lock:
        try:
            if {shapes}:
                raise TypeError{copies}
        except (AttributeError, TypeError, ValueError):
            {unpack} = validate({xs}){copies}
        run()
        if not check[0] < INF:
            validate({xs})
        return array(out)
"""
