"""Tracing: an algorithm written against CasADi's matrix API becomes a ``casadi.Function``.

:func:`trace` calls a Python function with ``SX`` symbols and wraps the expressions it returns
(common subexpressions eliminated). :func:`sanitize` turns any name (a URDF's, a user's) into a
safe C identifier / file-name stem: names never reach generated code or paths as they are.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence

import casadi as ca

__all__ = ["trace", "sanitize"]


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


def trace(
    name: str,
    inputs: Sequence[tuple[str, int | tuple[int, int]]],
    build: Callable[..., Sequence],
    output_names: Sequence[str] | None = None,
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
