"""Tracing: an algorithm written against CasADi's matrix API becomes a ``casadi.Function``.

:func:`trace` calls a Python function with ``SX`` symbols and wraps the expressions it returns
(common subexpressions eliminated) into a :class:`TracedFunction`, a ``casadi.Function`` that also
remembers the shape each argument and result was declared with (a vector ``n`` or a matrix
``(rows, cols)``; CasADi itself only knows ``(rows, cols)``), so that a compiled
:class:`~wbc.codegen.Kernel` hands out arrays of exactly those shapes, and whether it is *hot*
(a small kernel called in inner loops, compiled with :data:`~wbc.codegen.cache.HOT_FLAGS` by
default). :func:`sanitize` turns any name (a URDF's, a user's) into a safe C identifier /
file-name stem: names never reach generated code or paths as they are.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import casadi as ca

from ..errors import CompileError, InputError

__all__ = ["trace", "sanitize", "TracedFunction", "Size", "declared_shape"]

#: A declared size: ``n`` for a vector (numpy shape ``(n,)``), ``(rows, cols)`` for a matrix of
#: exactly that shape (also when ``rows`` or ``cols`` is 1).
Size = int | tuple[int, int]

# the tail of a hashed name: an underscore (or the start) and 8 hex digits
_HASHED_TAIL = re.compile(r"(?:^|_)[0-9a-f]{8}$")


def sanitize(name: str, prefix: str = "wbc_") -> str:
    """A C identifier / file-name stem made from ``name``: ``prefix`` followed by letters, digits and
    single underscores, at most 64 characters, never containing ``__`` (CasADi rejects it).

    A name that is already clean (letters, digits and single inner underscores, at most 48
    characters, starting with a letter once prefixed, and not ending like a hashed name,
    ``_`` + 8 hex digits) is kept as ``prefix + name``. Any other name, the empty one included,
    becomes ``prefix`` + its cleaned first 40 characters (``x`` if nothing is left) + ``_`` + the
    first 8 hex digits of its SHA-1, with an ``x`` in front if it would start with a non-letter. Kept
    names never end like hashed ones, so distinct inputs give distinct results (up to a collision of
    the 32-bit hash).
    """
    clean = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")
    out = prefix + clean
    if clean == name and 0 < len(clean) <= 48 and out[0].isalpha() and not _HASHED_TAIL.search(clean):
        return out
    stem = clean[:40].rstrip("_") or "x"
    out = f"{prefix}{stem}_{hashlib.sha1(name.encode()).hexdigest()[:8]}"
    return out if out[0].isalpha() else "x" + out


def declared_shape(size: Size, what: str) -> tuple[int, ...]:
    """The numpy shape of a declared size: ``(n,)`` for ``n``, ``(rows, cols)`` for a pair.

    Raises:
        InputError: ``size`` is neither a non-negative integer nor a pair of them.
    """
    if isinstance(size, bool):
        raise InputError(f"{what}: size must be an int n or a pair (rows, cols), got {size!r}")
    if isinstance(size, int):
        if size < 0:
            raise InputError(f"{what}: size must be non-negative, got {size}")
        return (size,)
    if (
        isinstance(size, tuple)
        and len(size) == 2
        and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in size)
    ):
        return (size[0], size[1])
    raise InputError(f"{what}: size must be an int n or a pair (rows, cols), got {size!r}")


def _casadi_size(shape: tuple[int, ...]) -> tuple[int, int]:
    return (shape[0], 1) if len(shape) == 1 else (shape[0], shape[1])


class TracedFunction(ca.Function):
    """A ``casadi.Function`` made by :func:`trace` that also records the numpy shape of each input
    and output as declared: ``(n,)`` for a vector, ``(rows, cols)`` for a matrix. Copies and
    pickles keep them.

    Attributes:
        input_shapes: one numpy shape per input.
        output_shapes: one numpy shape per output.
        hot: compiled with :data:`~wbc.codegen.cache.HOT_FLAGS` unless flags are given
            (:func:`~wbc.codegen.compile_function`).
    """

    input_shapes: tuple[tuple[int, ...], ...]
    output_shapes: tuple[tuple[int, ...], ...]
    hot: bool

    def __init__(
        self,
        *args,
        input_shapes: Sequence[tuple[int, ...]] | None = None,
        output_shapes: Sequence[tuple[int, ...]] | None = None,
        hot: bool | None = None,
    ) -> None:
        super().__init__(*args)
        source = args[0] if len(args) == 1 and isinstance(args[0], TracedFunction) else None
        if input_shapes is None:
            input_shapes = source.input_shapes if source is not None else natural_shapes(self.size_in, self.n_in())
        if output_shapes is None:
            output_shapes = source.output_shapes if source is not None else natural_shapes(self.size_out, self.n_out())
        self.input_shapes = tuple(tuple(s) for s in input_shapes)
        self.output_shapes = tuple(tuple(s) for s in output_shapes)
        self.hot = bool(source.hot if hot is None and source is not None else hot)

    def __getstate__(self) -> dict[str, Any]:
        return {
            **super().__getstate__(),
            "input_shapes": self.input_shapes,
            "output_shapes": self.output_shapes,
            "hot": self.hot,
        }

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            ca.Function.deserialize(state["serialization"]),
            input_shapes=state.get("input_shapes"),
            output_shapes=state.get("output_shapes"),
            hot=state.get("hot", False),
        )


def natural_shapes(size: Callable[[int], tuple[int, int]], n: int) -> list[tuple[int, ...]]:
    """CasADi's sizes as numpy shapes: ``(rows,)`` for a column, ``(rows, cols)`` otherwise."""
    shapes: list[tuple[int, ...]] = []
    for i in range(n):
        rows, cols = size(i)
        shapes.append((rows,) if cols == 1 else (rows, cols))
    return shapes


def trace(
    name: str,
    inputs: Sequence[tuple[str, Size]],
    build: Callable[..., Sequence],
    outputs: Sequence[str | tuple[str, Size]] | None = None,
    cse: bool = True,
    hot: bool = False,
) -> TracedFunction:
    """Trace ``build`` with SX symbols into a ``casadi.Function`` with dense outputs.

    Args:
        name: function name (sanitized into a C identifier).
        inputs: ``(name, size)`` of each input: size ``n`` for a vector (a column for CasADi), or
            ``(rows, cols)`` for a matrix.
        build: called with one SX symbol per input; returns the output expressions.
        outputs: each output's name, or ``(name, size)`` to declare its shape like an input's
            (checked against the traced expression). An output given by name only is a vector
            when its expression has one column and a matrix otherwise: declare the size of a
            matrix that may have one column (a Jacobian of a one-joint robot). Default
            ``o0, o1, ...``.
        cse: eliminate common subexpressions (on by default).
        hot: a small kernel called in inner loops (the classical dynamics): compiled with
            :data:`~wbc.codegen.cache.HOT_FLAGS` by default (``hot`` attribute).

    Returns:
        The function, with the declared numpy shapes in ``input_shapes`` and ``output_shapes``.

    Raises:
        InputError: a size is malformed.
        CompileError: ``build`` returned another number of outputs than declared, or an output
            whose shape differs from its declared size.
    """
    syms = []
    in_shapes: list[tuple[int, ...]] = []
    for in_name, size in inputs:
        shape = declared_shape(size, f"trace {name!r}: input {in_name!r}")
        in_shapes.append(shape)
        syms.append(ca.SX.sym(sanitize(in_name, ""), *_casadi_size(shape)))
    outs = [ca.densify(ca.SX(o)) for o in build(*syms)]
    declared = list(outputs) if outputs is not None else [f"o{k}" for k in range(len(outs))]
    if len(declared) != len(outs):
        raise CompileError(f"trace {name!r}: build returned {len(outs)} outputs, {len(declared)} declared")
    out_names: list[str] = []
    out_shapes: list[tuple[int, ...]] = []
    for entry, expr in zip(declared, outs):
        got = (int(expr.size1()), int(expr.size2()))
        if isinstance(entry, str):
            out_names.append(entry)
            out_shapes.append((got[0],) if got[1] == 1 else got)
            continue
        out_name, size = entry
        shape = declared_shape(size, f"trace {name!r}: output {out_name!r}")
        if _casadi_size(shape) != got:
            raise CompileError(f"trace {name!r}: output {out_name!r} is {got[0]}x{got[1]}, declared {size!r}")
        out_names.append(out_name)
        out_shapes.append(shape)
    return TracedFunction(
        sanitize(name),
        syms,
        outs,
        [sanitize(n, "") for n, _ in inputs],
        [sanitize(n, "") for n in out_names],
        {"cse": cse},
        input_shapes=in_shapes,
        output_shapes=out_shapes,
        hot=hot,
    )
