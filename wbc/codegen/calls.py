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
    run = kernel.evaluate
    check = kernel.outputs[-1]
    out = kernel.outputs[0]
    lock = threading.Lock()
    copyto, array = np.copyto, np.array
    n = len(kernel.inputs)
    if n == 1:
        (b0,) = kernel.inputs
        s0 = b0.shape

        def call1(x0):
            with lock:
                try:
                    if x0.shape != s0:
                        raise TypeError
                    copyto(b0, x0)
                except (AttributeError, TypeError, ValueError):
                    (x0,) = validate(x0)
                    copyto(b0, x0)
                run()
                if not check[0] < _INF:
                    validate(x0)
                return array(out)

        return call1
    if n == 2:
        b0, b1 = kernel.inputs
        s0, s1 = b0.shape, b1.shape

        def call2(x0, x1):
            with lock:
                try:
                    if x0.shape != s0 or x1.shape != s1:
                        raise TypeError
                    copyto(b0, x0)
                    copyto(b1, x1)
                except (AttributeError, TypeError, ValueError):
                    x0, x1 = validate(x0, x1)
                    copyto(b0, x0)
                    copyto(b1, x1)
                run()
                if not check[0] < _INF:
                    validate(x0, x1)
                return array(out)

        return call2
    if n == 3:
        b0, b1, b2 = kernel.inputs
        s0, s1, s2 = b0.shape, b1.shape, b2.shape

        def call3(x0, x1, x2):
            with lock:
                try:
                    if x0.shape != s0 or x1.shape != s1 or x2.shape != s2:
                        raise TypeError
                    copyto(b0, x0)
                    copyto(b1, x1)
                    copyto(b2, x2)
                except (AttributeError, TypeError, ValueError):
                    x0, x1, x2 = validate(x0, x1, x2)
                    copyto(b0, x0)
                    copyto(b1, x1)
                    copyto(b2, x2)
                run()
                if not check[0] < _INF:
                    validate(x0, x1, x2)
                return array(out)

        return call3
    buffers = kernel.inputs
    shapes = [b.shape for b in buffers]

    def call(*xs):
        with lock:
            try:
                if [x.shape for x in xs] != shapes:
                    raise TypeError
                for b, x in zip(buffers, xs):
                    copyto(b, x)
            except (AttributeError, TypeError, ValueError):
                xs = validate(*xs)
                for b, x in zip(buffers, xs):
                    copyto(b, x)
            run()
            if not check[0] < _INF:
                validate(*xs)
            return array(out)

    return call
