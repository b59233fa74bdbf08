"""The Delassus matrix (inverse operational-space inertia) ``Λ⁻¹ = K M⁻¹ Kᵀ`` of link constraints.

Five methods, all traceable with ``SX`` and all in joint-local frames (as the PV-OSIMr paper's
CasADi implementation):

* ``"pv-osimr"`` — PV-OSIMr (Sathya, Decré, Swevers, Algorithm 3), O(n + m²): force propagators
  and inverse inertias are carried only between *branching links* (where the constrained subtrees
  meet), then composed.
* ``"pv-osim"`` — PV-OSIM (Algorithm 1), O(n + m²d): every link propagates the stacked constraint
  rows of its subtree and updates their inverse inertia.
* ``"efpa"`` — the extended force propagator algorithm (Algorithm 2), O(n + md + m²).
* ``"ltl"`` — LTL-OSIM (eq. 4-6): ``M = Lᵀ L`` exploiting branch-induced sparsity, ``Y = J L⁻¹``,
  ``Λ⁻¹ = Y Yᵀ``.
* ``"dense"`` — CRBA, dense LDLᵀ, ``J M⁻¹ Jᵀ``.

Notation (the paper's): every constraint ``e`` is an *end-effector*, a fictitious child of its
constrained body. ``ES(i)`` is the set of end-effectors supported by link ``i``; branching links
``N`` are the links where two or more constrained subtrees meet (plus every end-effector);
``D(i)`` is the closest descendant branching link (or end-effector) of ``i``, ``A(x)`` the
closest ancestor branching link of ``x``; ``cca`` the closest common ancestor.
``P`` are (extended) force propagators ``^{π(i)}P_i = X*(I − U D⁻¹ Sᵀ)`` (their transposes the
motion propagators), ``Ω`` apparent inverse inertias (``^{π(i)}Ω_i = S D⁻¹ Sᵀ``), ``K`` constraint
rows propagated to a link (constraint-space motion propagators, CEMP).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence

import casadi as ca
import numpy as np

from ..errors import InputError
from ..model import checks
from ..model.model import Model
from ..spatial.algebra import act_force, act_inv_motion, symmetric
from .constraints import ResolvedConstraint
from .dynamics import ArticulatedBodies, crba
from .kinematics import TreeKinematics
from .linalg import ldlt, ldlt_solve

__all__ = [
    "DelassusMethod",
    "ConstraintTree",
    "pv_osimr",
    "pv_osim",
    "efpa",
    "ltl_osim",
    "dense",
    "delassus_matrix",
]


class DelassusMethod(enum.Enum):
    """How the Delassus matrix is computed (see the module docstring)."""

    PV_OSIMR = "pv-osimr"  #: PV-OSIMr, Algorithm 3 (production)
    PV_OSIM = "pv-osim"  #: PV-OSIM, Algorithm 1
    EFPA = "efpa"  #: extended force propagator algorithm, Algorithm 2
    LTL = "ltl"  #: LTL-OSIM, eqs. 4-6
    DENSE = "dense"  #: CRBA, LDLᵀ, J M⁻¹ Jᵀ


@dataclasses.dataclass(frozen=True)
class ConstraintTree:
    """The topology the recursive algorithms need, computed once from a model and constraint bodies.

    Attributes:
        bodies: the constrained body (joint index) of each end-effector.
        support: ``ES(i)``: end-effectors in the subtree of each link (frozensets; index 0 = world).
        branching: branching links ``N`` (real links only; end-effectors are branching too).
        closest_branching_ancestor: ``A`` of each branching link and of each end-effector
            (``("link", i)`` or ``("ee", e)`` keys), 0 for the world.
    """

    model: Model
    bodies: tuple[int, ...]
    support: tuple[frozenset, ...]
    branching: frozenset
    attached: tuple[tuple[int, ...], ...]

    @classmethod
    def build(cls, model: Model, bodies: Sequence[int]) -> ConstraintTree:
        n = model.njoints
        attached: list[list[int]] = [[] for _ in range(n)]
        for e, b in enumerate(bodies):
            attached[b].append(e)
        support = [set(a) for a in attached]
        for i in range(n - 1, 0, -1):
            support[model.joints[i].parent] |= support[i]
        branching = set()
        for i in range(1, n):
            if not support[i]:
                continue
            parts = [frozenset(support[c]) for c in model.children(i)] + [frozenset({e}) for e in attached[i]]
            if all(p != support[i] for p in parts):
                branching.add(i)
        return cls(
            model,
            tuple(bodies),
            tuple(frozenset(s) for s in support),
            frozenset(branching),
            tuple(tuple(a) for a in attached),
        )

    def ancestor_branching(self, i: int) -> int:
        """``A(i)`` for a link ``i``: its closest strict ancestor in ``N`` (0 for the world)."""
        k = self.model.joints[i].parent
        while k > 0 and k not in self.branching:
            k = self.model.joints[k].parent
        return max(k, 0)

    def ee_ancestor_branching(self, e: int) -> int:
        """``A(e)`` of end-effector ``e``: its body if branching, else the body's ``A``."""
        b = self.bodies[e]
        return b if b in self.branching else self.ancestor_branching(b)

    def top_link(self, i: int, ancestor: int) -> int:
        """The link just below ``ancestor`` on the path from the root to link ``i``."""
        while self.model.joints[i].parent != ancestor:
            i = self.model.joints[i].parent
        return i

    def cca(self, a: int, b: int) -> int:
        """Closest common ancestor-or-self of links ``a`` and ``b`` (0 for the world)."""
        pa = set(self.model.support(a)) | {0}
        while b not in pa:
            b = self.model.joints[b].parent
        return b


def _check(constraints: Sequence[ResolvedConstraint]) -> None:
    if not constraints:
        raise InputError("the Delassus matrix needs at least one constraint")


def _recursive_setup(
    model: Model, kin: TreeKinematics, constraints: Sequence[ResolvedConstraint], bodies: ArticulatedBodies | None
) -> tuple[ArticulatedBodies, ConstraintTree, list]:
    """What the recursive methods start from: the constraints checked, the articulated bodies (given,
    or computed), the tree of the constrained links and each constraint's rows ``^iK_e`` (dim, 6) in
    its link's frame."""
    _check(constraints)
    tree = ConstraintTree.build(model, [c.joint for c in constraints])
    return bodies or ArticulatedBodies.compute(model, kin), tree, [c.local_matrix(kin) for c in constraints]


def _assemble(blocks: dict[tuple[int, int], object], dims: Sequence[int], like):
    """The symmetric matrix with upper blocks ``blocks[(e, f)]`` (e <= f) in end-effector order."""
    rows = []
    for e, de in enumerate(dims):
        row = []
        for f, df in enumerate(dims):
            if e <= f:
                block = blocks.get((e, f))
                row.append(block if block is not None else _zeros(like, de, df))
            else:
                row.append(_zeros(like, de, df))
        rows.append(ca.horzcat(*row))
    return symmetric(ca.vertcat(*rows))


def _zeros(like, rows: int, cols: int):
    return ca.SX(rows, cols) if isinstance(like, ca.SX) else ca.DM(rows, cols)


def _project_up(kin: TreeKinematics, bodies: ArticulatedBodies, i: int, F):
    """``^{π(i)}P_i F``: force(s) ``F`` (6, k) at link ``i`` seen at its parent, joint ``i`` free."""
    SF = ca.mtimes(kin.S[i].T, F)
    return act_force(kin.liMi[i], F - ca.mtimes(bodies.U[i], ca.mtimes(bodies.Dinv[i], SF)))


def _omega_update(kin: TreeKinematics, bodies: ArticulatedBodies, i: int, F):
    """``Fᵀ (S D⁻¹ Sᵀ) F`` for forces ``F`` (6, k) at link ``i``: the inverse inertia joint ``i`` adds."""
    SF = ca.mtimes(kin.S[i].T, F)
    return ca.mtimes(SF.T, ca.mtimes(bodies.Dinv[i], SF))


def pv_osimr(
    model: Model,
    kin: TreeKinematics,
    constraints: Sequence[ResolvedConstraint],
    bodies: ArticulatedBodies | None = None,
):
    """PV-OSIMr (Algorithm 3): ``Λ⁻¹`` (m, m) in O(n + m²)."""
    bodies, tree, K = _recursive_setup(model, kin, constraints, bodies)
    n = model.njoints
    # Backward sweep: Pd[i] = ^{π(i)}P_{D(i)}, Om[i] = ^{π(i)}Ω_{D(i)} for links supporting constraints.
    Pd: list = [None] * n
    Om: list = [None] * n
    for i in range(n - 1, 0, -1):
        if not tree.support[i]:
            continue
        if i in tree.branching:
            P_in, O_in = ca.DM.eye(6), _zeros(kin.q, 6, 6)
        elif tree.attached[i]:  # exactly one end-effector, nothing constrained below
            e = tree.attached[i][0]
            P_in, O_in = K[e].T, _zeros(kin.q, constraints[e].dim, constraints[e].dim)
        else:
            child = next(c for c in model.children(i) if tree.support[c] == tree.support[i])
            P_in, O_in = Pd[child], Om[child]
        Om[i] = symmetric(O_in + _omega_update(kin, bodies, i, P_in))
        if model.joints[i].parent > 0:
            Pd[i] = _project_up(kin, bodies, i, P_in)

    def segment(target_link: int | None, e: int | None, ancestor: int):
        """(^{A}P_x, ^{A}Ω_x) for a branching link or an end-effector x below ``ancestor``."""
        if e is not None and tree.bodies[e] == ancestor:
            return K[e].T, _zeros(kin.q, constraints[e].dim, constraints[e].dim)
        top = tree.top_link(target_link if e is None else tree.bodies[e], ancestor)
        return Pd[top], Om[top]

    # Forward sweep over branching links: ^0Ω_i.
    omega0: dict = {}
    for i in sorted(tree.branching):
        a = tree.ancestor_branching(i)
        P, O = segment(i, None, a)
        omega0[i] = O if a == 0 else symmetric(O + ca.mtimes(P.T, ca.mtimes(omega0[a], P)))
    # End-effectors: diagonal blocks ^0Ω_e and CEMPs ^{A}K_e at their branching ancestors.
    blocks: dict = {}
    cemp: list[dict[int, object]] = []
    for e in range(len(constraints)):
        a = tree.ee_ancestor_branching(e)
        P, O = segment(None, e, a)
        blocks[(e, e)] = O if a == 0 else symmetric(O + ca.mtimes(P.T, ca.mtimes(omega0[a], P)))
        rows = {}
        if a > 0:
            rows[a] = P.T
            j = a
            while tree.ancestor_branching(j) > 0:
                up = tree.ancestor_branching(j)
                Pj, _ = segment(j, None, up)
                rows[up] = ca.mtimes(rows[j], Pj.T)
                j = up
        cemp.append(rows)
    # Off-diagonal blocks through the closest common ancestor.
    for e in range(len(constraints)):
        for f in range(e + 1, len(constraints)):
            k = tree.cca(tree.bodies[e], tree.bodies[f])
            if k > 0:
                blocks[(e, f)] = ca.mtimes(cemp[e][k], ca.mtimes(omega0[k], cemp[f][k].T))
    return _assemble(blocks, [c.dim for c in constraints], kin.q)


def pv_osim(
    model: Model,
    kin: TreeKinematics,
    constraints: Sequence[ResolvedConstraint],
    bodies: ArticulatedBodies | None = None,
):
    """PV-OSIM (Algorithm 1): every link stacks and propagates its subtree's constraint rows."""
    bodies, _, K = _recursive_setup(model, kin, constraints, bodies)
    n = model.njoints
    stack_K: list[list] = [[] for _ in range(n)]  # blocks of rows, in link i's frame
    stack_L: list[list] = [[] for _ in range(n)]  # diagonal blocks of L_i^A (one per stacked block)
    stack_ee: list[list[int]] = [[] for _ in range(n)]  # end-effector order of the stacked rows
    for e, c in enumerate(constraints):
        stack_K[c.joint].append(K[e])
        stack_L[c.joint].append(_zeros(kin.q, c.dim, c.dim))
        stack_ee[c.joint].append(e)
    for i in range(n - 1, 0, -1):
        if not stack_K[i]:
            continue
        Ki = ca.vertcat(*stack_K[i])
        Li = symmetric(ca.diagcat(*stack_L[i]) + _omega_update(kin, bodies, i, Ki.T))
        p = model.joints[i].parent
        if p > 0:
            stack_K[p].append(_project_up(kin, bodies, i, Ki.T).T)
        stack_L[p].append(Li)
        stack_ee[p].extend(stack_ee[i])
    L0 = ca.diagcat(*stack_L[0])
    order = stack_ee[0]
    dims = [constraints[e].dim for e in order]
    offsets = np.concatenate([[0], np.cumsum(dims)]).astype(int)
    pos = {e: k for k, e in enumerate(order)}
    idx = np.concatenate([np.arange(offsets[pos[e]], offsets[pos[e] + 1]) for e in range(len(constraints))])
    return symmetric(L0[idx.tolist(), idx.tolist()])


def efpa(
    model: Model,
    kin: TreeKinematics,
    constraints: Sequence[ResolvedConstraint],
    bodies: ArticulatedBodies | None = None,
):
    """EFPA (Algorithm 2): per-end-effector CEMPs up the tree, then ``^0Ω_i ^iK_eᵀ`` down it."""
    bodies, tree, K = _recursive_setup(model, kin, constraints, bodies)
    n, m = model.njoints, len(constraints)
    cemp: list[dict[int, object]] = [{c.joint: K[e]} for e, c in enumerate(constraints)]
    for i in range(n - 1, 0, -1):
        p = model.joints[i].parent
        if p > 0:
            for e in tree.support[i]:
                cemp[e][p] = _project_up(kin, bodies, i, cemp[e][i].T).T
    # W[e][i] = ^0Ω_i ^iK_eᵀ: link i's acceleration per unit constraint force of e.
    W: list[dict[int, object]] = [{} for _ in range(m)]
    for i in range(1, n):
        p = model.joints[i].parent
        S, U, Dinv = kin.S[i], bodies.U[i], bodies.Dinv[i]
        for e in tree.support[i]:
            own = ca.mtimes(S, ca.mtimes(Dinv, ca.mtimes(S.T, cemp[e][i].T)))
            if p > 0:
                Xa = act_inv_motion(kin.liMi[i], W[e][p])
                W[e][i] = Xa - ca.mtimes(S, ca.mtimes(Dinv, ca.mtimes(U.T, Xa))) + own
            else:
                W[e][i] = own
    blocks = {}
    for e in range(m):
        for f in range(e, m):
            k = tree.cca(tree.bodies[e], tree.bodies[f])
            if k > 0:
                blocks[(e, f)] = ca.mtimes(cemp[e][k], W[f][k])
    return _assemble(blocks, [c.dim for c in constraints], kin.q)


def _dof_parents(model: Model) -> list[int]:
    """The expanded parent array over degrees of freedom (-1 for the root)."""
    parent = []
    last_dof = {0: -1}
    for i, j in enumerate(model.joints[1:], start=1):
        prev = last_dof[j.parent]
        for k in range(j.nv):
            parent.append(prev)
            prev = j.idx_v + k
        last_dof[i] = prev
    return parent


def ltl_osim(model: Model, kin: TreeKinematics, constraints: Sequence[ResolvedConstraint]):
    """LTL-OSIM (eq. 4-6): sparse ``M = Lᵀ L``, ``Y = J L⁻¹``, ``Λ⁻¹ = Y Yᵀ``."""
    _check(constraints)
    lam = _dof_parents(model)
    M = crba(model, kin.q, kin=kin)
    nv = model.nv
    H = [[M[r, c] for c in range(nv)] for r in range(nv)]
    for k in range(nv - 1, -1, -1):  # Featherstone's LTL factorisation, in place (lower triangle)
        H[k][k] = ca.sqrt(H[k][k])
        i = lam[k]
        while i >= 0:
            H[k][i] = H[k][i] / H[k][k]
            i = lam[i]
        i = lam[k]
        while i >= 0:
            j = i
            while j >= 0:
                H[i][j] = H[i][j] - H[k][i] * H[k][j]
                j = lam[j]
            i = lam[i]
    J = ca.vertcat(*[c.jacobian(kin) for c in constraints])
    rows = []
    for r in range(J.shape[0]):
        y = [J[r, c] for c in range(nv)]
        for i in range(nv - 1, -1, -1):  # y L = j_r, exploiting that L_ij ≠ 0 only for ancestors j
            y[i] = y[i] / H[i][i]
            j = lam[i]
            while j >= 0:
                y[j] = y[j] - y[i] * H[i][j]
                j = lam[j]
        rows.append(ca.horzcat(*y))
    Y = ca.vertcat(*rows)
    return symmetric(ca.mtimes(Y, Y.T))


def dense(model: Model, kin: TreeKinematics, constraints: Sequence[ResolvedConstraint]):
    """The naive method: CRBA, LDLᵀ of ``M``, ``J M⁻¹ Jᵀ``."""
    _check(constraints)
    M = crba(model, kin.q, kin=kin)
    J = ca.vertcat(*[c.jacobian(kin) for c in constraints])
    return symmetric(ca.mtimes(J, ldlt_solve(ldlt(M), J.T)))


def delassus_matrix(
    model: Model,
    kin: TreeKinematics,
    constraints: Sequence[ResolvedConstraint],
    method: DelassusMethod = DelassusMethod.PV_OSIMR,
    bodies: ArticulatedBodies | None = None,
):
    """``Λ⁻¹`` (m, m) by ``method`` (a :class:`DelassusMethod`), as a CasADi expression."""
    method = checks.option(DelassusMethod, method, "method")
    if method is DelassusMethod.PV_OSIMR:
        return pv_osimr(model, kin, constraints, bodies)
    if method is DelassusMethod.PV_OSIM:
        return pv_osim(model, kin, constraints, bodies)
    if method is DelassusMethod.EFPA:
        return efpa(model, kin, constraints, bodies)
    if method is DelassusMethod.LTL:
        return ltl_osim(model, kin, constraints)
    return dense(model, kin, constraints)
