"""The sparsity of the maximal-coordinate KKT system and the fill-in of its factorization.

The KKT matrix of :mod:`.system` is a graph of blocks: a body (6 unknowns), a joint (``mᵢ`` rows,
joined to its two bodies), a loop row block (``k`` rows, joined to every body it touches). A
symmetric elimination in a given order (an LDLᵀ) turns the remaining neighbours of each eliminated
block into a clique; the new block entries are the *fill-in*. Counted here with dense blocks (what
the recursion stores), from the model alone:

* :attr:`Ordering.SCHUR`, the notes' order for the tree, leaves to root, each body then its joint,
  loop rows last (``MaximalMethod.SCHUR``). A tree fills nothing (its pattern is a tree of blocks, a
  band for a chain); each loop row block fills its rows against every ancestor of the bodies it
  touches (bodies and joints up to the root) and against the other loop blocks: that is the loss of
  the banded structure, ``O(k · depth + k²)`` entries;
* :attr:`Ordering.RECURSIVE`, the same with each loop block eliminated just before the closest
  common ancestor of its bodies (``MaximalMethod.RECURSIVE``, :mod:`.local`): a loop fills only its
  rows against the bodies and joints between its bodies and that ancestor, ``O(k · loop length)``;
* :attr:`Ordering.NATURAL`, the notes' naive order: all bodies, then all joints, then loop rows.
"""

from __future__ import annotations

import dataclasses
import enum

import numpy as np

from ...model.clusters import ClusterModel, JointCoupling, LoopClosure, PolynomialCoupling
from ...model.model import Model
from .local import common_ancestor
from .subspaces import constraint_subspace

__all__ = ["Ordering", "BlockGraph", "FillIn", "block_graph", "fill_in", "patterns"]


class Ordering(enum.Enum):
    """An elimination order of the KKT blocks."""

    RECURSIVE = "recursive"
    SCHUR = "schur"
    NATURAL = "natural"


@dataclasses.dataclass(frozen=True)
class BlockGraph:
    """The KKT matrix as blocks.

    Attributes:
        names: ``("body", i)``, ``("joint", i)`` or ``("loop", l)`` per block, in the matrix order
            of :mod:`.dense` (bodies, joints, loop blocks).
        sizes: rows of each block.
        edges: pairs ``(a, b)``, ``a < b``, of blocks with a nonzero off-diagonal block.
        parent: for the recursive orders, each body's parent body (0 for the ground).
        homes: each loop block's closest common ancestor of its bodies (0: the ground).
    """

    names: tuple[tuple[str, int], ...]
    sizes: tuple[int, ...]
    edges: frozenset[tuple[int, int]]
    parent: tuple[int, ...]
    homes: tuple[int, ...] = ()

    @property
    def size(self) -> int:
        return int(sum(self.sizes))


@dataclasses.dataclass(frozen=True)
class FillIn:
    """Nonzeros of the KKT matrix (lower triangle, diagonal included) and of its factor ``L``.

    Attributes:
        size: ``N_x``, the number of unknowns.
        nnz_kkt: nonzeros of the lower triangle of the KKT matrix (dense blocks, the body blocks'
            diagonal ones included).
        nnz_factor: nonzeros of the factor (lower triangle with its diagonal blocks, which are dense
            for constraint rows too: their Schur complements).
        fill: entries created outside the diagonal blocks (off-diagonal blocks of the factor that
            are zero in the KKT matrix).
        loop_fill: the part of ``fill`` in rows or columns of loop blocks.
    """

    size: int
    nnz_kkt: int
    nnz_factor: int
    fill: int
    loop_fill: int


def _coupling_joints(tree: Model, c) -> list[int]:
    if isinstance(c, JointCoupling):
        return [tree.joint_id(c.joint)] + [tree.joint_id(s) for s, _ in c.sources]
    return [tree.joint_id(c.joint), tree.joint_id(c.source)]


def block_graph(model: Model | ClusterModel) -> BlockGraph:
    """The block graph of ``model``'s KKT system (a cluster model's loop rows grouped as in
    :func:`~wbc.algorithms.maximal.system.loop_rows`)."""
    tree = model.tree if isinstance(model, ClusterModel) else model
    n = tree.njoints
    names: list[tuple[str, int]] = [("body", i) for i in range(1, n)]
    sizes = [6] * (n - 1)
    index = {("body", i): i - 1 for i in range(1, n)}
    edges = set()
    for i in range(1, n):
        m = constraint_subspace(tree.joints[i]).shape[1]
        if m == 0:
            continue
        index[("joint", i)] = len(names)
        names.append(("joint", i))
        sizes.append(m)
        edges.add((index[("body", i)], index[("joint", i)]))
        p = tree.joints[i].parent
        if p > 0:
            edges.add((index[("body", p)], index[("joint", i)]))
    loops: list[tuple[int, set[int]]] = []  # (rows, bodies)
    if isinstance(model, ClusterModel):
        for c in model.infos:
            if c.declared is None:
                continue
            coupled: set[int] = set()
            n_coupling = 0
            for x in c.declared.constraints:
                if isinstance(x, LoopClosure):
                    full = 6 if x.kind.value == "weld" else 3
                    bodies = {tree.frames[tree.frame_id(f)].joint for f in (x.frame_a, x.frame_b)}
                    loops.append((full if x.rows is None else len(x.rows), bodies))
                elif isinstance(x, (JointCoupling, PolynomialCoupling)):
                    n_coupling += 1
                    for j in _coupling_joints(tree, x):
                        coupled.update({j, tree.joints[j].parent})
            if n_coupling:
                loops.append((n_coupling, coupled))
    for k, (rows, bodies) in enumerate(loops):
        b = len(names)
        names.append(("loop", k))
        sizes.append(rows)
        for body in sorted(bodies - {0}):
            edges.add((index[("body", body)], b))
    parent = tuple(j.parent for j in tree.joints)
    homes = tuple(common_ancestor(parent, sorted(bodies)) for _, bodies in loops)  # the ground (0) included
    return BlockGraph(tuple(names), tuple(sizes), frozenset(edges), parent, homes)


def _order(graph: BlockGraph, ordering: Ordering) -> list[int]:
    if ordering is Ordering.NATURAL:
        return list(range(len(graph.names)))
    where = {name: k for k, name in enumerate(graph.names)}
    local = ordering is Ordering.RECURSIVE
    order = []
    for i in range(len(graph.parent) - 1, 0, -1):
        if local:
            order += [where[("loop", l)] for l, home in enumerate(graph.homes) if home == i]
        order.append(where[("body", i)])
        if ("joint", i) in where:
            order.append(where[("joint", i)])
    order += [where[("loop", l)] for l, home in enumerate(graph.homes) if not local or home == 0]
    return order


def _eliminate(graph: BlockGraph, order: list[int]) -> set[tuple[int, int]]:
    """The block pattern of ``L`` (pairs of positions in ``order``, row > column) by the
    elimination game."""
    pos = {b: k for k, b in enumerate(order)}
    adj: list[set[int]] = [set() for _ in order]
    for a, b in graph.edges:
        adj[pos[a]].add(pos[b])
        adj[pos[b]].add(pos[a])
    pattern = set()
    for k in range(len(order)):
        later = sorted(x for x in adj[k] if x > k)
        for x in later:
            pattern.add((x, k))
        for u in later:
            adj[u].update(w for w in later if w != u)
    return pattern


def fill_in(model: Model | ClusterModel, ordering: Ordering = Ordering.RECURSIVE) -> FillIn:
    """Nonzeros of the KKT matrix and of its LDLᵀ factor in ``ordering`` (dense blocks)."""
    graph = block_graph(model)
    order = _order(graph, ordering)
    pos = {b: k for k, b in enumerate(order)}
    original = {(max(pos[a], pos[b]), min(pos[a], pos[b])) for a, b in graph.edges}
    sizes = [graph.sizes[b] for b in order]
    is_body = [graph.names[b][0] == "body" for b in order]
    is_loop = [graph.names[b][0] == "loop" for b in order]

    def entries(pairs) -> int:
        return sum(sizes[r] * sizes[c] for r, c in pairs)

    triangle = [s * (s + 1) // 2 for s in sizes]
    nnz_kkt = entries(original) + sum(t for t, body in zip(triangle, is_body) if body)
    pattern = _eliminate(graph, order)
    new = pattern - original
    return FillIn(
        graph.size,
        nnz_kkt,
        entries(pattern) + sum(triangle),
        entries(new),
        entries((r, c) for r, c in new if is_loop[r] or is_loop[c]),
    )


def patterns(model: Model | ClusterModel, ordering: Ordering = Ordering.RECURSIVE):
    """``(A, L, labels)``: the lower-triangular scalar patterns (N_x, N_x) of the KKT matrix and of
    its factor in ``ordering`` (numpy bools, dense blocks) and each block's ``(name, start, size)``."""
    graph = block_graph(model)
    order = _order(graph, ordering)
    sizes = [graph.sizes[b] for b in order]
    start = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    N = int(start[-1])
    pos = {b: k for k, b in enumerate(order)}
    A = np.zeros((N, N), bool)
    L = np.zeros((N, N), bool)
    for k, b in enumerate(order):
        s = slice(start[k], start[k + 1])
        block = np.tril(np.ones((sizes[k], sizes[k]), bool))
        L[s, s] = block
        if graph.names[b][0] == "body":
            A[s, s] = block
    for a, b in graph.edges:
        r, c = max(pos[a], pos[b]), min(pos[a], pos[b])
        A[start[r] : start[r + 1], start[c] : start[c + 1]] = True
    for r, c in _eliminate(graph, order):
        L[start[r] : start[r + 1], start[c] : start[c + 1]] = True
    labels = [(graph.names[b], int(start[k]), sizes[k]) for k, b in enumerate(order)]
    return A, L, labels
