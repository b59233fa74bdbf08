"""Whether a step :class:`~wbc.control.builder.Structure` read back from a kernel index fits the
loaded kernel and the controller asking for it.

The index's digest (:mod:`wbc.codegen.index`) already says the record is the one written with the
library; these checks keep an index written by another wbc, or edited and re-digested, from
reaching the QP with rows that index out of range or do not belong to these contributors: a
misfit is traced again (never a raw ``IndexError`` or a QP over the wrong rows).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["structure_misfit"]


def _partition(blocks: Sequence[Any], n_rows: int, n_contributors: int, what: str) -> str | None:
    """Row blocks must tile ``[0, n_rows)`` in order, each owned by a contributor."""
    position = 0
    for block in blocks:
        rows = block.rows
        if rows.step not in (None, 1) or rows.start != position or rows.stop <= rows.start:
            return f"{what} row blocks do not tile the rows in order (at {rows})"
        if not 0 <= block.owner < n_contributors or block.priority < 0:
            return f"a {what} row block names contributor {block.owner} of {n_contributors}"
        position = rows.stop
    if position != n_rows:
        return f"{what} row blocks cover {position} rows, the kernel has {n_rows}"
    return None


def structure_misfit(
    s: Any,
    output_shapes: Mapping[str, tuple[int, ...]],
    *,
    variables: Any,
    parameter_inputs: tuple[int, ...],
    variable_owner: Mapping[str, int],
    n_contributors: int,
) -> str | None:
    """Why the structure ``s`` does not fit, or None when it does.

    Args:
        s: the structure read from the index.
        output_shapes: the loaded kernel's output name -> shape.
        variables, parameter_inputs, variable_owner: what the controller's contributors give
            (computed without tracing).
        n_contributors: number of contributors.
    """
    if s.variables != variables:
        return f"its variables {s.variables.blocks} are not the controller's {variables.blocks}"
    if tuple(s.parameter_inputs) != tuple(parameter_inputs) or dict(s.variable_owner) != dict(variable_owner):
        return "its parameter inputs or variable owners are not the controller's"
    n_u = variables.n
    names = ("A", "b", "A_eq", "G", "h", "lb", "Bhat", "errors", "d", "scale")
    shape = {name: tuple(output_shapes.get(name, ())) for name in names}
    n_cost = shape["b"][0] if shape["b"] else 0
    n_eq = shape["A_eq"][0] if shape["A_eq"] else 0
    n_in = shape["h"][0] if shape["h"] else 0
    for name in ("A", "A_eq", "G", "Bhat"):
        if len(shape[name]) != 2 or shape[name][1] != n_u:
            return f"the kernel's {name} has shape {shape[name]}, not n_u = {n_u} columns"
    if shape["lb"] not in ((n_u,), (n_u, 1)) or len(s.bounds) != n_u:
        return f"bounds for {len(s.bounds)} variables, the kernel has {shape['lb']}"
    kinds = ((s.costs, n_cost, "cost"), (s.equalities, n_eq, "equality"), (s.inequalities, n_in, "inequality"))
    for blocks, n, what in kinds:
        reason = _partition(blocks, n, n_contributors, what)
        if reason is not None:
            return reason
    G = s.G_constant
    if not isinstance(G, np.ndarray) or G.shape != (n_in, n_u) or not np.all(np.isfinite(G)):
        return f"its constant inequality rows have shape {getattr(G, 'shape', None)}, expected {(n_in, n_u)}, finite"
    traced = s.traced_rows
    n_traced = shape["G"][0]
    if traced.ndim != 1 or traced.size != n_traced:
        return f"it lists {traced.size} traced inequality rows, the kernel outputs {n_traced}"
    if traced.size and (traced[0] < 0 or traced[-1] >= n_in or np.any(np.diff(traced) <= 0)):
        return "its traced inequality rows are not increasing row indices"
    if traced.size and np.any(G[traced] != 0):
        return "its constant inequality rows are not zero where the kernel traces them"
    rows, index, sign = s.bhat_rows, s.bhat_index, s.bhat_sign
    if rows.ndim != 1 or index.shape != rows.shape or sign.shape != rows.shape:
        return "its rows of B̂ are not three vectors of one size"
    if rows.size and (rows[0] < 0 or rows[-1] >= n_in or np.any(np.diff(rows) <= 0)):
        return "its rows of B̂ are not increasing inequality row indices"
    if rows.size and (np.any(index < 0) or np.any(index >= shape["Bhat"][0]) or np.any(np.abs(sign) != 1.0)):
        return f"its rows of B̂ index outside the kernel's {shape['Bhat'][0]} rows or have a sign other than ±1"
    if rows.size and (np.intersect1d(rows, traced).size or np.any(G[rows] != 0)):
        return "its rows of B̂ are also traced or constant rows"
    reason = _cost_misfit(s, shape, n_cost)
    if reason is not None:
        return reason
    n_errors = shape["errors"][0] if shape["errors"] else 0
    for name, rows in s.errors.items():
        if not 0 <= rows.start < rows.stop <= n_errors:
            return f"its error rows of {name!r} ({rows}) are outside the kernel's {n_errors}"
    bounded = sum(g is not None for g in s.bounds)
    if shape["d"] not in ((n_in + 2 * bounded,), (n_in + 2 * bounded, 1)):
        return f"the kernel's d has shape {shape['d']}, expected {n_in + 2 * bounded} rows"
    if not set(s.identity_basis) <= {k for k in variable_owner.values() if k >= 0}:
        return "its identity-basis contacts are not contacts"
    return None


def _cost_misfit(s: Any, shape: Mapping[str, tuple], n_cost: int) -> str | None:
    """Why the structure's cost rows (traced, or scaled rows of ``B̂``) do not fit the kernel's
    ``A``, ``scale`` and ``Bhat``, or None."""
    traced, rows, index = s.cost_traced_rows, s.cost_bhat_rows, s.cost_bhat_index
    if traced.ndim != 1 or rows.ndim != 1 or index.shape != rows.shape:
        return "its cost rows are not vectors (rows of B̂ and their index of one size)"
    if traced.size != shape["A"][0] or shape["scale"] not in ((rows.size,), (rows.size, 1)):
        return (
            f"it lists {traced.size} traced and {rows.size} B̂ cost rows, the kernel's A and scale hold "
            f"{shape['A'][0]} and {shape['scale']}"
        )
    together = np.concatenate([traced, rows])
    if together.size != n_cost or not np.array_equal(np.sort(together), np.arange(n_cost)):
        return f"its traced and B̂ cost rows do not partition the kernel's {n_cost} cost rows"
    if np.any(np.diff(traced) <= 0) or np.any(np.diff(rows) <= 0):
        return "its cost rows are not increasing row indices"
    if rows.size and (np.any(index < 0) or np.any(index >= shape["Bhat"][0])):
        return f"its cost rows of B̂ index outside the kernel's {shape['Bhat'][0]} rows"
    return None
