"""The QP builder: stacks the contributors' pieces into one traced step function, then, each step,
selects the rows and columns of the active contributors and hands out the QP.

Tracing (once per contributor set): every contributor's pieces are placed over the QP variables
and stacked by type into the kernel's outputs

    A, b        cost rows              (n_traced_cost, n_u), (n_cost,): the rows of an
                                       AccelerationCost piece (a posture task: scaled rows of B̂) are
                                       assembled from the Bhat and scale outputs where the cost is used
    A_eq, b_eq  equality rows          (n_eq, n_u), (n_eq,)
    G, h        inequality rows        (n_traced, n_u), (n_in,): only the rows whose matrix depends on
                                       the state or the parameters (e.g. self-collision); constant rows
                                       (friction cones) stay numpy constants of the structure, and the
                                       rows of an AccelerationBounds piece (joint limits: ±rows of
                                       B̂) are read from the Bhat output where the QP is assembled
    lb, ub      variable bounds        (n_u,), (n_u,)   (±inf where unbounded)
    a0, Bhat    q̈ = a0 + Bhat u        (nv,), (nv, n_u)
    errors      the cost pieces' reported errors (e.g. task errors)
    d           [h; ub_b; −lb_b] + tolerance over the inequality rows and the bounded variables:
                the right-hand side of the one-product feasibility check ``C x ≤ d`` of a step
    scale       the scales of the AccelerationCost rows (n_bhat_cost,)

and a :class:`Structure` remembers which rows belong to which contributor and group. A variable
block bounded twice keeps its first :class:`~wbc.control.pieces.Bounds` as bounds; later ones
become inequality rows.

Each step, a :class:`Layout` (cached per set of active contributors) keeps the active variables
and rows; :meth:`Layout.select` returns views of the kernel's buffers when everything is active
(the common case: no copies) and :meth:`Layout.problem` assembles a :class:`~wbc.control.qp.QPProblem`.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import importlib
from collections.abc import Sequence
from typing import Any, NamedTuple

import casadi as ca
import numpy as np

from ..algorithms.iim import InputMatrixMethod
from ..codegen.cache import STEP_FLAGS
from ..codegen.fingerprint import fingerprint
from ..codegen.index import compile_indexed
from ..codegen.kernel import Kernel
from ..codegen.trace import trace
from ..errors import InputError
from ..model.clusters import ClusterModel
from ..model.model import Model
from .contributor import Contributor
from .model_context import context_type
from .outputs import OUTPUTS, StepOutputs
from .pieces import TAU, AccelerationBounds, AccelerationCost, Bounds, Cost, Equality, Group, Inequality
from .qp import QPProblem
from .step_context import Variables
from .structure_check import structure_misfit

__all__ = ["Structure", "Layout", "Selection", "trace_step", "compile_step", "compile_placements", "OUTPUTS"]


@dataclasses.dataclass(frozen=True)
class RowBlock:
    """Rows ``rows`` of one stacked output, from contributor ``owner``, of group ``group`` (cost rows:
    at hierarchy level ``priority``)."""

    group: Group
    rows: slice
    owner: int
    priority: int = 0


@dataclasses.dataclass(frozen=True)
class Structure:
    """What the traced step function's outputs are made of.

    Attributes:
        variables: the QP variable blocks (``"tau"``, then each contact's).
        parameter_inputs: the contributors with kernel parameters, in the order of the function's
            parameter inputs (after ``q`` and ``v``; one input each).
        costs, equalities, inequalities: the row blocks of ``A``, ``A_eq`` and ``G``.
        bounds: per variable (n_u,), the group of its bounds, or None.
        errors: cost group name -> rows of the ``errors`` output.
        variable_owner: variable block name -> contributor index (``"tau"`` -> -1).
        identity_basis: contributor indices whose force variables are their equality rows' forces.
        G_constant: (n_in, n_u) the constant inequality rows (zero where a row is traced or read from ``B̂``).
        traced_rows: the rows of ``G`` the kernel outputs (its ``G`` output, in this order).
        bhat_rows: the inequality rows that are rows of ``B̂`` (:class:`~wbc.control.pieces.AccelerationBounds`),
            increasing; ``bhat_index``: their row of the kernel's ``Bhat`` output; ``bhat_sign``: ±1.0
            (row ``bhat_rows[i]`` of ``G`` is ``bhat_sign[i] * Bhat[bhat_index[i]]``).
        cost_traced_rows: the cost rows the kernel's ``A`` output holds (in this order), increasing.
        cost_bhat_rows: the cost rows that are scaled rows of ``B̂`` (:class:`~wbc.control.pieces.AccelerationCost`),
            increasing; ``cost_bhat_index``: their row of ``Bhat`` (row ``cost_bhat_rows[i]`` of ``A`` is
            ``scale[i] * Bhat[cost_bhat_index[i]]``, ``scale`` the kernel's output).
    """

    variables: Variables
    parameter_inputs: tuple[int, ...]
    costs: tuple[RowBlock, ...]
    equalities: tuple[RowBlock, ...]
    inequalities: tuple[RowBlock, ...]
    bounds: tuple[Group | None, ...]
    errors: dict[str, slice]
    variable_owner: dict[str, int]
    identity_basis: frozenset[int]
    G_constant: np.ndarray
    traced_rows: np.ndarray
    bhat_rows: np.ndarray
    bhat_index: np.ndarray
    bhat_sign: np.ndarray
    cost_traced_rows: np.ndarray
    cost_bhat_rows: np.ndarray
    cost_bhat_index: np.ndarray


class _Rows(enum.Enum):
    """The three stacks of rows a piece goes into."""

    COST = "cost"
    EQUALITY = "equality"
    INEQUALITY = "inequality"


def _place(M, cols: slice, n_u: int):
    """``M`` (k, width) placed in the columns ``cols`` of a (k, n_u) matrix."""
    if cols.start == 0 and cols.stop == n_u:
        return M
    rows = M.shape[0]
    out = ca.SX(rows, n_u)
    out[:, cols] = M
    return out


def _column(x, rows: int, what: str):
    x = ca.SX(x) if not isinstance(x, (ca.SX, ca.MX)) else x
    if x.shape == (1, rows) and rows != 1:
        x = x.T
    if x.shape != (rows, 1):
        raise InputError(f"{what}: expected {rows} entries, got shape {x.shape}")
    return x


def trace_step(
    model: Model | ClusterModel,
    contributors: Sequence[Contributor],
    contacts: Sequence,
    method: InputMatrixMethod,
    tolerance: float = 0.0,
) -> tuple[ca.Function, Structure]:
    """Trace the step function of ``contributors`` (``contacts`` among them, in variable order).

    Returns:
        ``(function, structure)``: inputs ``(q, v, p_k...)`` (one parameter vector per contributor that
        has parameters), outputs :data:`OUTPUTS` (``tolerance`` is added to ``d``).

    Raises:
        InputError: a piece of the wrong type or size (naming its contributor).
    """
    sizes = [c.parameter_size for c in contributors]
    with_parameters = tuple(k for k, size in enumerate(sizes) if size > 0)
    context: Any = context_type(model)  # StepContext or ClusterStepContext, by the model's type
    variables = Variables.of(context.input_count(model), contacts)
    n_u = variables.n
    record: dict[_Rows, list] = {kind: [] for kind in _Rows}
    rows_of: dict[_Rows, int] = {kind: 0 for kind in _Rows}
    bound_groups: list[Group | None] = [None] * n_u
    constant_rows: list[tuple[slice, slice, np.ndarray]] = []
    bhat_rows: list[tuple[int, int, float]] = []  # (inequality row, row of B̂, sign)
    bhat_costs: list[tuple[int, int]] = []  # (cost row, row of B̂)
    errors: dict[str, slice] = {}
    contact_index = {id(c): k for k, c in enumerate(contributors)}
    variable_owner = {TAU: -1} | {c.name: contact_index[id(c)] for c in contacts}
    identity = frozenset(
        contact_index[id(c)]
        for c in contacts
        if c.dim == c.equality_dim and np.array_equal(c.force_basis(), np.eye(c.dim))
    )

    def build(q, v, *parameters) -> list:
        p = dict(zip(with_parameters, parameters))
        ctx = context(model, q, v, contacts, method)
        parts: dict[_Rows, list] = {kind: [] for kind in _Rows}
        lb = [ca.SX(-np.inf) for _ in range(n_u)]
        ub = [ca.SX(np.inf) for _ in range(n_u)]
        error_parts, n_err = [], 0
        scales: list = []  # the AccelerationCost rows' scales (the kernel's scale output)
        for k, contributor in enumerate(contributors):
            for piece in contributor.pieces(ctx, p.get(k, ca.SX(0, 1))):
                where = f"{type(contributor).__name__} {contributor.name!r}"
                if isinstance(piece, Bounds):
                    _bounds(piece, k, where, variables, lb, ub, bound_groups, parts, record, rows_of)
                    continue
                if isinstance(piece, AccelerationBounds):
                    _acceleration_bounds(piece, k, where, ctx, parts, record, rows_of, bhat_rows)
                    continue
                if isinstance(piece, AccelerationCost):
                    e = _acceleration_cost(piece, k, where, ctx, parts, record, rows_of, bhat_costs, scales)
                    if e is not None:
                        error_parts.append(e)
                        errors[piece.group.name] = slice(n_err, n_err + e.shape[0])
                        n_err += e.shape[0]
                    continue
                if not isinstance(piece, (Cost, Equality, Inequality)):
                    raise InputError(f"{where} returned {type(piece).__name__}, not a wbc.control.pieces piece")
                cols = variables[piece.variables] if piece.variables is not None else slice(0, n_u)
                M, rhs = (piece.G, piece.h) if isinstance(piece, Inequality) else (piece.A, piece.b)
                M = ca.SX(M) if not isinstance(M, (ca.SX, ca.MX)) else M
                width = cols.stop - cols.start
                if M.shape[1] != width:
                    raise InputError(
                        f"{where}: a piece over {piece.variables or 'all variables'} needs {width} "
                        f"columns, got {M.shape[1]}"
                    )
                n_rows = M.shape[0]
                rhs = _column(rhs, n_rows, where)
                kind = (
                    _Rows.COST
                    if isinstance(piece, Cost)
                    else _Rows.EQUALITY
                    if isinstance(piece, Equality)
                    else _Rows.INEQUALITY
                )
                start = rows_of[kind]
                rows_of[kind] += n_rows
                if kind is _Rows.INEQUALITY and _constant(M):  # kept in the structure as numbers, not in the kernel
                    numbers = np.array(ca.evalf(M), dtype=float)
                    constant_rows.append((slice(start, start + n_rows), cols, numbers))
                    parts[kind].append((None, rhs))
                else:
                    parts[kind].append((_place(M, cols, n_u), rhs))
                level = _priority(piece, where) if isinstance(piece, Cost) else 0
                record[kind].append(RowBlock(piece.group, slice(start, rows_of[kind]), k, level))
                if isinstance(piece, Cost) and piece.error is not None:
                    e = _column(piece.error, n_rows, where)
                    error_parts.append(e)
                    errors[piece.group.name] = slice(n_err, n_err + e.shape[0])
                    n_err += e.shape[0]

        def stack(kind):
            matrices = [m for m, _ in parts[kind] if m is not None]
            rhs = [r for _, r in parts[kind]]
            return (
                ca.vertcat(*matrices) if matrices else ca.DM.zeros(0, n_u),
                ca.vertcat(*rhs) if rhs else ca.DM.zeros(0, 1),
            )

        A, b = stack(_Rows.COST)
        A_eq, b_eq = stack(_Rows.EQUALITY)
        G, h = stack(_Rows.INEQUALITY)
        e = ca.vertcat(*error_parts) if error_parts else ca.DM.zeros(0, 1)
        bounded = [i for i, g in enumerate(bound_groups) if g is not None]
        d = ca.vertcat(h, *[ub[i] for i in bounded], *[-lb[i] for i in bounded]) + tolerance
        scale = ca.vertcat(*scales) if scales else ca.DM.zeros(0, 1)
        return [A, b, A_eq, b_eq, G, h, ca.vertcat(*lb), ca.vertcat(*ub), ctx.a0, ctx.Bhat, e, d, scale]

    tag = "_".join(f"{type(c).__name__}{c.parameter_size}" for c in contributors) + method.value
    name = f"step_{model.name}_{len(contributors)}c_{hashlib.sha1(tag.encode()).hexdigest()[:8]}"
    nq, nv = context.state_sizes(model)
    inputs = [("q", nq), ("v", nv)] + [(f"p{k}", sizes[k]) for k in with_parameters]
    # No CasADi CSE pass: the traced graph already shares its nodes, and the pass found only 3-5 %
    # more common subexpressions (Talos 67,934 -> 71,001 operations; the compiler merges those within
    # a part, same run time) for 0.23 s of the 0.42 s trace on Talos, 0.43 of 0.73 s on G1 with
    # hands, 3.5 of 8.6 s on a 200-body tree (issue 14, benchmarks/compile.py).
    function = trace(name, inputs, build, list(OUTPUTS), cse=False)
    G_constant = np.zeros((rows_of[_Rows.INEQUALITY], n_u))
    is_constant = np.zeros(rows_of[_Rows.INEQUALITY], dtype=bool)
    for rows, cols, M in constant_rows:
        G_constant[rows, cols] = M
        is_constant[rows] = True
    from_bhat = np.array([row for row, _, _ in bhat_rows], dtype=np.int64)
    is_constant[from_bhat] = True  # not in the kernel's G either
    cost_from_bhat = np.array([row for row, _ in bhat_costs], dtype=np.int64)
    cost_traced = np.setdiff1d(np.arange(rows_of[_Rows.COST]), cost_from_bhat).astype(np.int64)
    structure = Structure(
        variables,
        with_parameters,
        tuple(record[_Rows.COST]),
        tuple(record[_Rows.EQUALITY]),
        tuple(record[_Rows.INEQUALITY]),
        tuple(bound_groups),
        errors,
        variable_owner,
        identity,
        G_constant,
        np.flatnonzero(~is_constant),
        from_bhat,
        np.array([index for _, index, _ in bhat_rows], dtype=np.int64),
        np.array([sign for _, _, sign in bhat_rows], dtype=float),
        cost_traced,
        cost_from_bhat,
        np.array([index for _, index in bhat_costs], dtype=np.int64),
    )
    return function, structure


def compile_step(
    model: Model | ClusterModel,
    contributors: Sequence[Contributor],
    contacts: Sequence,
    method: InputMatrixMethod,
    tolerance: float = 0.0,
) -> tuple[Kernel, Structure]:
    """The compiled step kernel of :func:`trace_step` and its :class:`Structure`.

    Found without tracing when the kernel cache indexes a fingerprint of the same model,
    contributors (every attribute, by value), contacts, method, tolerance and wbc source
    (:mod:`wbc.codegen.index`); traced and compiled (or taken from the cache) otherwise, with
    :data:`~wbc.codegen.cache.STEP_FLAGS` (fused multiply-adds where the processor has them).
    """
    position = {id(c): k for k, c in enumerate(contributors)}
    where = [position.get(id(c), -1) for c in contacts]
    key = None if -1 in where else fingerprint("step", model, list(contributors), where, method, float(tolerance))

    def make() -> tuple[ca.Function, Structure, dict]:
        function, structure = trace_step(model, contributors, contacts, method, tolerance)
        return function, structure, _structure_record(structure)

    def check(kernel: Kernel, structure: Structure) -> str | None:
        sizes = [c.parameter_size for c in contributors]
        context: Any = context_type(model)
        return structure_misfit(
            structure,
            dict(zip(kernel.output_names, kernel.output_shapes)),
            variables=Variables.of(context.input_count(model), contacts),
            parameter_inputs=tuple(k for k, size in enumerate(sizes) if size > 0),
            variable_owner={TAU: -1} | {c.name: position[id(c)] for c in contacts},
            n_contributors=len(contributors),
        )

    kernel, structure, _ = compile_indexed("step", key, make, _structure_from_record, check=check, flags=STEP_FLAGS)
    return kernel, structure


def compile_placements(tree: Model, contacts: Sequence) -> Kernel:
    """The compiled contact-placement kernel (``q`` -> the contact frames' placements), found
    without tracing when indexed like :func:`compile_step`."""
    from .contacts.placement import placement_function

    key = fingerprint("placements", tree, list(contacts))

    def make() -> tuple[ca.Function, bool, bool]:
        return placement_function(tree, contacts), True, True

    kernel, _, _ = compile_indexed("placements", key, make, lambda r: True if r is True else None)
    return kernel


def _group_record(group: Group | None) -> list | None:
    if group is None:
        return None
    kind = group.kind
    return [type(kind).__module__, type(kind).__qualname__, kind.name, group.name]


def _group(record) -> Group | None:
    if record is None:
        return None
    module, qualname, member, name = record
    if not (module == "wbc" or module.startswith("wbc.")):
        raise ValueError(f"kind from outside wbc: {module}")
    cls: Any = importlib.import_module(module)
    for part in qualname.split("."):
        cls = getattr(cls, part)
    if not (isinstance(cls, type) and issubclass(cls, enum.Enum)):
        raise ValueError(f"{module}.{qualname} is not an enum")
    return Group(cls[member], name)


def _blocks_record(blocks: Sequence[RowBlock]) -> list:
    return [[_group_record(b.group), b.rows.start, b.rows.stop, b.owner, b.priority] for b in blocks]


def _blocks(record) -> tuple[RowBlock, ...]:
    blocks = []
    for g, a, b, o, p in record:
        group = _group(g)
        if group is None:
            raise ValueError("a row block without its group")
        blocks.append(RowBlock(group, slice(int(a), int(b)), int(o), int(p)))
    return tuple(blocks)


def _structure_record(s: Structure) -> dict:
    """``s`` as JSON data (every float exact: JSON numbers written by ``repr``)."""
    return {
        "variables": [[name, size] for name, size in s.variables.blocks],
        "parameter_inputs": list(s.parameter_inputs),
        "costs": _blocks_record(s.costs),
        "equalities": _blocks_record(s.equalities),
        "inequalities": _blocks_record(s.inequalities),
        "bounds": [_group_record(g) for g in s.bounds],
        "errors": [[name, rows.start, rows.stop] for name, rows in s.errors.items()],
        "variable_owner": [[name, k] for name, k in s.variable_owner.items()],
        "identity_basis": sorted(s.identity_basis),
        "G_constant": [list(s.G_constant.shape), s.G_constant.ravel().tolist()],
        "traced_rows": s.traced_rows.tolist(),
        "bhat_rows": [s.bhat_rows.tolist(), s.bhat_index.tolist(), s.bhat_sign.tolist()],
        "cost_rows": [s.cost_traced_rows.tolist(), s.cost_bhat_rows.tolist(), s.cost_bhat_index.tolist()],
    }


def _structure_from_record(r: dict) -> Structure | None:
    """The :class:`Structure` recorded by :func:`_structure_record`, or None if it does not read."""
    try:
        shape, values = r["G_constant"]
        bhat_rows, bhat_index, bhat_sign = r["bhat_rows"]
        cost_traced, cost_bhat, cost_index = r["cost_rows"]
        return Structure(
            Variables(tuple((str(name), int(size)) for name, size in r["variables"])),
            tuple(int(k) for k in r["parameter_inputs"]),
            _blocks(r["costs"]),
            _blocks(r["equalities"]),
            _blocks(r["inequalities"]),
            tuple(_group(g) for g in r["bounds"]),
            {str(name): slice(int(a), int(b)) for name, a, b in r["errors"]},
            {str(name): int(k) for name, k in r["variable_owner"]},
            frozenset(int(k) for k in r["identity_basis"]),
            np.array(values, dtype=float).reshape([int(n) for n in shape]),
            np.array(r["traced_rows"], dtype=np.int64),
            np.array(bhat_rows, dtype=np.int64),
            np.array(bhat_index, dtype=np.int64),
            np.array(bhat_sign, dtype=float),
            np.array(cost_traced, dtype=np.int64),
            np.array(cost_bhat, dtype=np.int64),
            np.array(cost_index, dtype=np.int64),
        )
    except (KeyError, TypeError, ValueError, AttributeError, ImportError):
        return None


def _priority(piece: Cost | AccelerationCost, where: str) -> int:
    level = piece.priority
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or level < 0:
        raise InputError(f"{where}: a cost's priority must be an integer >= 0, got {level!r}")
    return int(level)


def _constant(M) -> bool:
    """True when ``M`` holds no symbol (numbers only)."""
    return not isinstance(M, (ca.SX, ca.MX)) or (isinstance(M, ca.SX) and M.is_constant())


def _bounds(piece: Bounds, owner, where, variables, lb, ub, bound_groups, parts, record, rows_of) -> None:
    """Place a Bounds piece: as bounds where its variables have none yet, else as inequality rows."""
    cols = variables[piece.variables]
    size = cols.stop - cols.start
    lower, upper = _column(piece.lower, size, where), _column(piece.upper, size, where)
    if all(bound_groups[i] is None for i in range(cols.start, cols.stop)):
        for k, i in enumerate(range(cols.start, cols.stop)):
            lb[i], ub[i] = lower[k], upper[k]
            bound_groups[i] = piece.group
        return
    n_u = len(lb)
    eye = ca.DM.eye(size)
    parts[_Rows.INEQUALITY].append((_place(ca.vertcat(eye, -eye), cols, n_u), ca.vertcat(upper, -lower)))
    start = rows_of[_Rows.INEQUALITY]
    rows_of[_Rows.INEQUALITY] += 2 * size
    record[_Rows.INEQUALITY].append(RowBlock(piece.group, slice(start, rows_of[_Rows.INEQUALITY]), owner))


def _acceleration_bounds(piece: AccelerationBounds, owner, where, ctx, parts, record, rows_of, bhat_rows) -> None:
    """Place an AccelerationBounds piece: right-hand sides ``upper − a₀[i]`` then ``a₀[i] − lower`` in
    ``h``; its matrix (``±B̂[i]``) is recorded as rows of ``B̂``, not traced."""
    nv = ctx.a0.shape[0]
    indices = [int(i) for i in piece.indices]
    if any(not 0 <= i < nv for i in indices):
        raise InputError(f"{where}: acceleration bounds on rows {indices} of q̈, which has {nv}")
    size = len(indices)
    lower, upper = _column(piece.lower, size, where), _column(piece.upper, size, where)
    a0 = ctx.a0[indices]
    start = rows_of[_Rows.INEQUALITY]
    parts[_Rows.INEQUALITY].append((None, ca.vertcat(upper - a0, a0 - lower)))
    rows_of[_Rows.INEQUALITY] += 2 * size
    bhat_rows += [(start + k, i, 1.0) for k, i in enumerate(indices)]
    bhat_rows += [(start + size + k, i, -1.0) for k, i in enumerate(indices)]
    record[_Rows.INEQUALITY].append(RowBlock(piece.group, slice(start, rows_of[_Rows.INEQUALITY]), owner))


def _acceleration_cost(piece: AccelerationCost, owner, where, ctx, parts, record, rows_of, bhat_costs, scales):
    """Place an AccelerationCost piece: right-hand sides ``scale ⊙ (target − a₀[i])`` in ``b``, the
    scales in the ``scale`` output; its matrix (``diag(scale) B̂[i]``) is recorded as rows of ``B̂``,
    not traced. Returns the piece's error (a column), or None."""
    nv = ctx.a0.shape[0]
    indices = [int(i) for i in piece.indices]
    if not indices or any(not 0 <= i < nv for i in indices):
        raise InputError(f"{where}: an acceleration cost on rows {indices} of q̈, which has {nv}")
    size = len(indices)
    scale, target = _column(piece.scale, size, where), _column(piece.target, size, where)
    start = rows_of[_Rows.COST]
    parts[_Rows.COST].append((None, scale * (target - ctx.a0[indices])))
    rows_of[_Rows.COST] += size
    bhat_costs += [(start + k, i) for k, i in enumerate(indices)]
    scales.append(scale)
    level = _priority(piece, where)
    record[_Rows.COST].append(RowBlock(piece.group, slice(start, rows_of[_Rows.COST]), owner, level))
    return None if piece.error is None else _column(piece.error, size, where)


def _indices(blocks: Sequence[RowBlock], active: Sequence[bool]) -> np.ndarray:
    idx = [np.arange(b.rows.start, b.rows.stop) for b in blocks if active[b.owner]]
    return np.concatenate(idx).astype(int) if idx else np.zeros(0, dtype=int)


def _levels(blocks: Sequence[RowBlock], active: Sequence[bool]) -> tuple[np.ndarray, ...]:
    """Per hierarchy level present, highest first: its rows among the active cost rows."""
    position = 0
    levels: dict[int, list[np.ndarray]] = {}
    for b in blocks:
        if not active[b.owner]:
            continue
        n = b.rows.stop - b.rows.start
        levels.setdefault(b.priority, []).append(np.arange(position, position + n))
        position += n
    return tuple(np.concatenate(levels[k]).astype(int) for k in sorted(levels))


def _groups(blocks: Sequence[RowBlock], active: Sequence[bool]) -> list[Group]:
    return [b.group for b in blocks if active[b.owner] for _ in range(b.rows.stop - b.rows.start)]


class Selection(NamedTuple):
    """One step's QP in a layout's active rows and columns (:meth:`Layout.selection`), selected once
    for a unit that reads it several times (the hierarchy: every level's feasibility test).

    Attributes:
        A, b: the cost rows ``A u ≈ b`` (k, n), (k,).
        A_eq, b_eq: the equalities (m_eq, n), (m_eq,).
        h: the inequalities' right-hand sides (m_in,).
        lb, ub: the bounds on ``u`` (n,).
        G: the inequality rows (m_in, n) (``G u ≤ h``).
        C, d: every inequality and bound as rows ``C u ≤ d`` (m_in + 2 n_bounded, n), the tolerance
            traced into ``d`` (:meth:`Layout.feasible`'s product, as one matrix).
        Bhat: ``B̂`` (nv, n) of the active columns.
    """

    A: np.ndarray
    b: np.ndarray
    A_eq: np.ndarray
    b_eq: np.ndarray
    h: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    G: np.ndarray
    C: np.ndarray
    d: np.ndarray
    Bhat: np.ndarray


class Layout:
    """The QP's rows and columns for one set of active contributors.

    Attributes:
        active: per contributor, whether it is in the QP.
        columns: the active variables' indices in ``u`` (inactive contacts' forces are dropped).
        variables: active variable block name -> slice of the active ``u``.
        n_tau: number of actuator variables (the leading block).
        eliminable: the equalities are exactly the active contacts' no-acceleration rows, each over its
            own force variables (``Γ = I``), so they can be eliminated through the Delassus matrix.
        levels: per priority level present (highest first), the indices of its rows among the active
            cost rows; one entry when every cost is at the same level (the weighted controller).
    """

    def __init__(self, structure: Structure, active: Sequence[bool]) -> None:
        self.structure = structure
        self.active = tuple(active)
        n_u = structure.variables.n
        cols, variables, n = [], {}, 0
        for name, size in structure.variables.blocks:
            owner = structure.variable_owner[name]
            if owner >= 0 and not active[owner]:
                continue
            block = structure.variables[name]
            cols.append(np.arange(block.start, block.stop))
            variables[name] = slice(n, n + size)
            n += size
        self.columns = np.concatenate(cols).astype(int)
        self.variables = variables
        self.n_tau = structure.variables.blocks[0][1]
        self.all_columns = self.columns.size == n_u
        self.cost_rows = _indices(structure.costs, active)
        self.eq_rows = _indices(structure.equalities, active)
        self.in_rows = _indices(structure.inequalities, active)
        self.all_cost = self.cost_rows.size == (structure.costs[-1].rows.stop if structure.costs else 0)
        self.all_eq = self.eq_rows.size == (structure.equalities[-1].rows.stop if structure.equalities else 0)
        self.all_in = self.in_rows.size == (structure.inequalities[-1].rows.stop if structure.inequalities else 0)
        self.levels = _levels(structure.costs, active)
        self.eq_groups = _groups(structure.equalities, active)
        self.in_groups = _groups(structure.inequalities, active)
        self.bound_groups = [structure.bounds[i] for i in self.columns]
        self.eliminable = self._eliminable()
        self._prepare_costs()
        self._prepare_feasibility()

    def _eliminable(self) -> bool:
        s = self.structure
        owners = [b.owner for b in s.equalities if self.active[b.owner]]
        force_blocks = [name for name in self.variables if name != TAU]
        if not owners or len(owners) != len(force_blocks):
            return False
        return all(
            s.variable_owner[name] == owner and owner in s.identity_basis for name, owner in zip(force_blocks, owners)
        )

    def _prepare_costs(self) -> None:
        """Where the active cost rows come from: the kernel's ``A`` (``_cost_traced_at`` among the active
        rows, ``_cost_traced_from`` its rows) or scaled rows of its ``Bhat`` (``_cost_bhat_at``, their
        entry of ``scale`` ``_cost_bhat_from``, their row of ``Bhat`` ``_cost_bhat_index``)."""
        s = self.structure
        position = {row: k for k, row in enumerate(self.cost_rows)}
        traced = [(position[row], k) for k, row in enumerate(s.cost_traced_rows) if row in position]
        from_bhat = [(position[row], k) for k, row in enumerate(s.cost_bhat_rows) if row in position]
        self._cost_traced_at = np.array([a for a, _ in traced], dtype=np.int64)
        self._cost_traced_from = np.array([b for _, b in traced], dtype=np.int64)
        self._cost_bhat_at = np.array([a for a, _ in from_bhat], dtype=np.int64)
        self._cost_bhat_from = np.array([b for _, b in from_bhat], dtype=np.int64)
        self._cost_bhat_index = s.cost_bhat_index[self._cost_bhat_from].astype(np.int64)
        # no row of B̂ among the costs: the kernel's A is the cost matrix (a view where all is active)
        self.cost_from_bhat = bool(s.cost_bhat_rows.size)

    def cost_matrix(self, outputs: StepOutputs) -> np.ndarray:
        """``A`` (k, n) of the active cost rows and columns: the kernel's ``A`` (a view where every row
        and column is active and no row is read from ``B̂``), else a new array with the rows of
        :class:`~wbc.control.pieces.AccelerationCost` pieces ``scale[i] * B̂[index]``."""
        A = outputs.A
        if not self.cost_from_bhat:
            A = A if self.all_columns else A[:, self.columns]
            return A if self.all_cost else A[self.cost_rows]
        out = np.empty((self.cost_rows.size, outputs.A.shape[1]), order="F")  # as the kernel writes A
        out[self._cost_traced_at] = A[self._cost_traced_from]
        out[self._cost_bhat_at] = outputs.scale[self._cost_bhat_from, None] * outputs.Bhat[self._cost_bhat_index]
        return out if self.all_columns else out[:, self.columns]

    def _prepare_feasibility(self) -> None:
        """``C`` of the active inequalities and bounds as rows ``C x ≤ d`` (``d`` a kernel output): its
        constant rows now; the traced ones (if any) are zero rows whose products come from the kernel's
        ``G`` each step."""
        s = self.structure
        n_in = s.G_constant.shape[0]
        bounded = [i for i, g in enumerate(s.bounds) if g is not None]  # in the kernel's d, in this order
        position = {i: k for k, i in enumerate(self.columns)}
        active_bounded = [k for k, i in enumerate(bounded) if i in position]
        eye = np.eye(self.columns.size)[[position[bounded[k]] for k in active_bounded]]
        G = s.G_constant[np.ix_(self.in_rows, self.columns)]
        self._C = np.vstack([G, eye, -eye])
        nb = len(bounded)
        rows = np.concatenate(
            [self.in_rows, n_in + np.array(active_bounded, dtype=int), n_in + nb + np.array(active_bounded, dtype=int)]
        ).astype(int)
        self._d_rows = None if rows.size == n_in + 2 * nb else rows
        position_in = {row: k for k, row in enumerate(self.in_rows)}
        traced = [(position_in[row], k) for k, row in enumerate(s.traced_rows) if row in position_in]
        self._traced_at = np.array([a for a, _ in traced], dtype=int)
        self._traced_from = np.array([b for _, b in traced], dtype=int)
        # C keeps zeros on the traced rows; their products are added each step from the kernel's G.
        # When every traced row and column is in use, in order, G is used as is (no copy).
        self._all_traced = self.all_columns and np.array_equal(self._traced_from, np.arange(s.traced_rows.size))
        # the rows of B̂ (joint limits): their products sign * (B̂ x)[index], from the kernel's Bhat
        from_bhat = [(position_in[row], k) for k, row in enumerate(s.bhat_rows) if row in position_in]
        self._bhat_at = np.array([a for a, _ in from_bhat], dtype=np.int64)
        self._bhat_index = s.bhat_index[[b for _, b in from_bhat]].astype(np.int64)
        self._bhat_sign = s.bhat_sign[[b for _, b in from_bhat]].astype(float)
        self._Cx = np.zeros(self._C.shape[0])
        self._C_step = self._C.copy()  # C with this step's traced rows and rows of B̂ (:meth:`selection`)

    def inequality_matrix(self, outputs: StepOutputs) -> np.ndarray:
        """``G`` (m_in, n) of the active rows and columns (a new array)."""
        s = self.structure
        G = s.G_constant.copy()
        if s.traced_rows.size:
            G[s.traced_rows] = outputs.G
        if s.bhat_rows.size:
            G[s.bhat_rows] = s.bhat_sign[:, None] * outputs.Bhat[s.bhat_index]
        return G[np.ix_(self.in_rows, self.columns)]

    def select(self, outputs: StepOutputs) -> tuple[np.ndarray, ...]:
        """``(A, b, A_eq, b_eq, h, lb, ub)`` of the active rows and columns: views of the kernel
        buffers where everything is active, copies otherwise (overwritten by the next kernel call)."""
        A, b, A_eq, b_eq = self.cost_matrix(outputs), outputs.b, outputs.A_eq, outputs.b_eq
        h, lb, ub = outputs.h, outputs.lb, outputs.ub
        if not self.all_columns:
            c = self.columns
            A_eq, lb, ub = A_eq[:, c], lb[c], ub[c]
        if not self.all_cost:
            b = b[self.cost_rows]
        if not self.all_eq:
            A_eq, b_eq = A_eq[self.eq_rows], b_eq[self.eq_rows]
        if not self.all_in:
            h = h[self.in_rows]
        return A, b, A_eq, b_eq, h, lb, ub

    def selection(self, outputs: StepOutputs) -> Selection:
        """The step's QP in the active rows and columns, with its inequalities and bounds as one matrix
        ``C`` (``C`` and ``G`` are the layout's buffer, ``A``... as :meth:`select` returns them: both
        overwritten by the next selection or kernel call)."""
        C = self._C_step  # the constant rows stay; the traced rows and the rows of B̂ are this step's
        Bhat = outputs.Bhat if self.all_columns else outputs.Bhat[:, self.columns]
        if self._traced_at.size:
            C[self._traced_at] = outputs.G if self._all_traced else outputs.G[self._traced_from][:, self.columns]
        if self._bhat_at.size:
            C[self._bhat_at] = self._bhat_sign[:, None] * Bhat[self._bhat_index]
        G = C[: self.in_rows.size]  # the inequalities; the bounds' rows follow
        d = outputs.d if self._d_rows is None else outputs.d[self._d_rows]
        A, b, A_eq, b_eq, h, lb, ub = self.select(outputs)
        return Selection(A, b, A_eq, b_eq, h, lb, ub, G, C, d, Bhat)

    def feasible(self, x: np.ndarray, outputs: StepOutputs) -> bool:
        """Whether ``x`` (n,) is finite and satisfies every active inequality and bound within the
        tolerance traced into ``d``: one product ``C x ≤ d``."""
        Cx = np.dot(self._C, x, out=self._Cx)
        if self._traced_at.size:
            G = outputs.G if self._all_traced else outputs.G[self._traced_from][:, self.columns]
            Cx[self._traced_at] += G @ x
        if self._bhat_at.size:
            Bhat = outputs.Bhat if self.all_columns else outputs.Bhat[:, self.columns]
            Cx[self._bhat_at] += self._bhat_sign * (Bhat @ x)[self._bhat_index]
        d = outputs.d if self._d_rows is None else outputs.d[self._d_rows]
        return bool((Cx <= d).all())

    def problem(self, outputs: StepOutputs, regularization: float) -> QPProblem:
        """The step's :class:`QPProblem` (copies of the data), regularization ``ε ‖A[:, i]‖² + 1e-12``."""
        A, b, A_eq, b_eq, h, lb, ub = (np.array(x) for x in self.select(outputs))
        r = regularization * np.einsum("ij,ij->j", A, A) + 1e-12
        G = self.inequality_matrix(outputs)
        return QPProblem(
            A,
            b,
            r,
            A_eq,
            b_eq,
            G,
            h,
            lb,
            ub,
            dict(self.variables),
            list(self.eq_groups),
            list(self.in_groups),
            list(self.bound_groups),
        )
