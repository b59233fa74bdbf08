"""Operational-space quantities of clustered models: C-EFPA (the Delassus matrix, the cluster
paper's Sec. VIII) and the clustered IIM (``B̂ = M⁻¹ B``).

Both reuse the articulated-cluster inertias of :class:`~.dynamics.ClusterArticulatedBodies` and
work in independent coordinates: ``M`` is ``Gᵀ H G``, a constraint's Jacobian is its spanning-tree
Jacobian times ``G``. Constraints are the tree's link constraints
(:class:`~wbc.PointConstraint`, :class:`~wbc.WeldConstraint`, :class:`~wbc.LinkConstraint`) on
any body of the spanning tree, rotors and rods included.

* **C-EFPA**: for each end-effector ``e`` (a constraint, rows ``K_e`` on body ``b``), the
  *extended force propagators* carry ``K_eᵀ`` up the cluster tree,
  ``𝖥 ← 𝖷ᵀ(𝖥 − 𝖴 𝖣⁻¹ 𝖲ᵀ 𝖥)`` (a cluster's joint freed); a forward pass gives every supporting
  cluster's acceleration per unit force of ``e``, ``𝖶 = 𝖲 𝖣⁻¹ 𝖲ᵀ 𝖥 + (I − 𝖲 𝖣⁻¹ 𝖴ᵀ) 𝖷 𝖶_parent``,
  and ``Λ⁻¹_ef = 𝖥_eᵀ 𝖶_f`` at the closest common ancestor cluster of ``e`` and ``f``.
* **IIM**: the C-ABA's backward pass run once on matrix-valued bias forces (one column per input:
  unit independent torques, then the constraints' unit forces), then its forward pass; the rows
  of cluster ``k`` of ``B̂`` are ``𝖣⁻¹(𝗎 − 𝖴ᵀ 𝖷 𝖠_parent)``.

Glossary: ``F[e][k]`` per-body blocks (6, m_e) of the propagated force of end-effector ``e`` at
cluster ``k`` (None: zero), ``W`` accelerations per unit force, ``P``/``A`` input bias forces and
accelerations (6, n_inputs) per body, ``E`` unit torques of a cluster's independent joints.
"""

from __future__ import annotations

from collections.abc import Sequence

import casadi as ca

from ...model.clusters import ClusterModel
from ...spatial.algebra import act_force, act_inv_motion, symmetric
from ..constraints import ResolvedConstraint
from .dynamics import ClusterArticulatedBodies
from .kinematics import ClusterKinematics

__all__ = ["efpa", "iim", "motor_iim", "constraint_jacobian", "cluster_support"]


def _zeros(like, rows: int, cols: int):
    return ca.SX(rows, cols) if isinstance(like, ca.SX) else ca.DM(rows, cols)


def _add(x, y):
    return y if x is None else x + y


def cluster_support(cm: ClusterModel, constraints: Sequence[ResolvedConstraint]) -> list[set[int]]:
    """End-effectors supported by each cluster (in its subtree of clusters)."""
    support = [set() for _ in cm.infos]
    for e, c in enumerate(constraints):
        support[cm.cluster_of(c.joint)].add(e)
    for k in range(len(cm.infos) - 1, -1, -1):
        p = cm.infos[k].parent
        if p >= 0:
            support[p] |= support[k]
    return support


def _ancestors(cm: ClusterModel, k: int) -> list[int]:
    out = []
    while k >= 0:
        out.append(k)
        k = cm.infos[k].parent
    return out


def _free_up(cm: ClusterModel, bodies: ClusterArticulatedBodies, k: int, F: list):
    """Per-body forces of cluster ``k``, joint freed (``F − 𝖴 𝖣⁻¹ 𝖲ᵀ F``), moved onto its output
    bodies: a dict {parent tree body: (6, m)}."""
    st = bodies.structure
    c = cm.infos[k]
    SF = None
    for b, Fb in enumerate(F):
        if Fb is not None:
            SF = _add(SF, ca.mtimes(st.S[k][b].T, Fb))
    DSF = ca.mtimes(bodies.Dinv[k], SF)
    out: dict[int, object] = {}
    for b, j in enumerate(c.joints):
        Fb = -ca.mtimes(bodies.U[k][b], DSF) if F[b] is None else F[b] - ca.mtimes(bodies.U[k][b], DSF)
        o = c.output[b]
        out[o] = _add(out.get(o), act_force(st.Mout[j], Fb))
    return out


def efpa(
    cm: ClusterModel,
    kin: ClusterKinematics,
    constraints: Sequence[ResolvedConstraint],
    bodies: ClusterArticulatedBodies | None = None,
):
    """C-EFPA: the Delassus matrix ``J M⁻¹ Jᵀ`` (m, m) of ``constraints`` (independent coordinates)."""
    if not constraints:
        raise ValueError("the Delassus matrix needs at least one constraint")
    bodies = bodies or ClusterArticulatedBodies.compute(cm, kin)
    st = bodies.structure
    n = len(cm.infos)
    support = cluster_support(cm, constraints)
    pos = [{j: b for b, j in enumerate(c.joints)} for c in cm.infos]
    # backward: F[e][k] per-body blocks
    F: list[dict[int, list]] = [{} for _ in constraints]
    for e, c in enumerate(constraints):
        k = cm.cluster_of(c.joint)
        blocks = [None] * len(cm.infos[k].joints)
        blocks[pos[k][c.joint]] = c.local_matrix(kin.tree).T
        F[e][k] = blocks
    for k in range(n - 1, -1, -1):
        p = cm.infos[k].parent
        if p < 0:
            continue
        for e in support[k]:
            moved = _free_up(cm, bodies, k, F[e][k])
            blocks = F[e].get(p) or [None] * len(cm.infos[p].joints)
            blocks = list(blocks)
            for o, f in moved.items():
                blocks[pos[p][o]] = _add(blocks[pos[p][o]], f)
            F[e][p] = blocks
    # forward: W[e][k] per-body accelerations per unit force of e
    W: list[dict[int, list]] = [{} for _ in constraints]
    for k, c in enumerate(cm.infos):
        S, U, Dinv = st.S[k], bodies.U[k], bodies.Dinv[k]
        for e in support[k]:
            SF = None
            for b, Fb in enumerate(F[e][k]):
                if Fb is not None:
                    SF = _add(SF, ca.mtimes(S[b].T, Fb))
            rhs = SF
            Xa = None
            if c.parent >= 0 and c.parent in W[e]:
                Wp = W[e][c.parent]
                ppos = pos[c.parent]
                Xa = [act_inv_motion(st.Mout[j], Wp[ppos[c.output[b]]]) for b, j in enumerate(c.joints)]
                for b in range(len(c.joints)):
                    rhs = rhs - ca.mtimes(U[b].T, Xa[b])
            Q = ca.mtimes(Dinv, rhs)
            W[e][k] = [ca.mtimes(S[b], Q) if Xa is None else Xa[b] + ca.mtimes(S[b], Q) for b in range(len(c.joints))]
    blocks = {}
    for e in range(len(constraints)):
        anc_e = _ancestors(cm, cm.cluster_of(constraints[e].joint))
        for f in range(e, len(constraints)):
            anc_f = set(_ancestors(cm, cm.cluster_of(constraints[f].joint)))
            k = next((a for a in anc_e if a in anc_f), None)
            if k is None:
                continue
            acc = None
            for Fb, Wb in zip(F[e][k], W[f][k]):
                if Fb is not None:
                    acc = _add(acc, ca.mtimes(Fb.T, Wb))
            blocks[(e, f)] = acc
    dims = [c.dim for c in constraints]
    rows = []
    for e, de in enumerate(dims):
        row = []
        for f, df in enumerate(dims):
            blk = blocks.get((e, f)) if e <= f else None
            row.append(_zeros(kin.y, de, df) if blk is None else blk)
        rows.append(ca.horzcat(*row))
    return symmetric(ca.vertcat(*rows))


def constraint_jacobian(cm: ClusterModel, kin: ClusterKinematics, constraints: Sequence[ResolvedConstraint]):
    """Stacked constraint Jacobians (m, nv) in independent coordinates: ``K J_body G``."""
    J = ca.vertcat(*[c.jacobian(kin.tree) for c in constraints])
    return kin.project(J.T).T


def iim(
    cm: ClusterModel,
    kin: ClusterKinematics,
    constraints: Sequence[ResolvedConstraint],
    bodies: ClusterArticulatedBodies | None = None,
):
    """Clustered IIM: ``B̂ = M⁻¹ [Sᵀ, Jᵀ]`` (nv, n_actuated + m), columns: the actuated independent
    degrees of freedom (all but a free-flyer's), then every constraint's rows."""
    first = cm.nv - cm.n_actuated

    def unit(k: int, ncol: int):
        c = cm.infos[k]
        E = _zeros(kin.y, c.nv, ncol)
        for d in range(c.nv):
            if c.idx_v + d >= first:
                E[d, c.idx_v + d - first] = 1
        return E

    rows, _ = _input_pass(cm, kin, constraints, bodies, cm.n_actuated, unit)
    return rows


def motor_iim(
    cm: ClusterModel,
    kin: ClusterKinematics,
    constraints: Sequence[ResolvedConstraint],
    bodies: ClusterArticulatedBodies | None = None,
):
    """Clustered IIM in motor inputs: ``B̂ = M⁻¹ [Gᵀ E, Jᵀ]`` (nv, n_motors + m), and the constraint
    rows' accelerations per unit input ``J B̂`` (m, n_motors + m), both from one pass.

    The motor columns are the generalized forces of unit motor efforts (:attr:`ClusterModel.motor_joints`:
    each cluster's ``G_kᵀ`` rows at its motors), so the loop's and the rotors' dynamics are exact in
    them. The constraint rows come from the forward pass's body accelerations, ``K_e 𝖺_b`` for
    constraint ``e`` on body ``b`` (the torque block is ``J M⁻¹ Gᵀ E``, the force block the Delassus
    matrix ``J M⁻¹ Jᵀ``, symmetrized).
    """
    n_m = cm.n_motors
    start = []
    col = 0
    for c in cm.infos:
        start.append(col)
        col += len(c.motor_rows)

    def unit(k: int, ncol: int):
        c = cm.infos[k]
        E = _zeros(kin.y, c.nv, ncol)
        if c.motors:
            block = kin.G[k][list(c.motor_rows), :].T if not c.trivial else ca.DM.eye(c.nv)
            E[:, start[k] : start[k] + len(c.motor_rows)] = block
        return E

    rows, acc = _input_pass(cm, kin, constraints, bodies, n_m, unit)
    if not constraints:
        return rows, _zeros(kin.y, 0, n_m)
    J_B = ca.vertcat(*[ca.mtimes(c.local_matrix(kin.tree), acc[c.joint]) for c in constraints])
    m = J_B.shape[0]
    J_B[:, n_m : n_m + m] = symmetric(J_B[:, n_m : n_m + m])
    return rows, J_B


def _input_pass(cm: ClusterModel, kin: ClusterKinematics, constraints, bodies, n_inputs: int, unit):
    """The IIM's two passes: ``(B̂ rows (nv, ncol), body accelerations {tree joint: (6, ncol)})`` for
    the inputs ``unit(k, ncol)`` (nv_k, ncol) of each cluster, then the constraints' unit forces."""
    bodies = bodies or ClusterArticulatedBodies.compute(cm, kin)
    st = bodies.structure
    n = len(cm.infos)
    ncol = n_inputs + sum(c.dim for c in constraints)
    P: dict[int, object] = {}
    col = n_inputs
    for c in constraints:
        P[c.joint] = _add(P.get(c.joint), _place(kin.y, -c.local_matrix(kin.tree).T, col, ncol))
        col += c.dim
    u: list = [None] * n
    for k in range(n - 1, -1, -1):
        c = cm.infos[k]
        uk = unit(k, ncol)
        for b, j in enumerate(c.joints):
            if j in P:
                uk = uk - ca.mtimes(st.S[k][b].T, P[j])
        u[k] = uk
        if c.parent < 0:
            continue
        Du = ca.mtimes(bodies.Dinv[k], uk)
        for b, j in enumerate(c.joints):
            pa = ca.mtimes(bodies.U[k][b], Du)
            if j in P:
                pa = pa + P[j]
            o = c.output[b]
            P[o] = _add(P.get(o), act_force(st.Mout[j], pa))
    A: dict[int, object] = {}
    rows = []
    for k, c in enumerate(cm.infos):
        a_pre = []
        rhs = u[k]
        for b, j in enumerate(c.joints):
            o = c.output[b]
            ap = None if o == 0 else act_inv_motion(st.Mout[j], A[o])
            a_pre.append(ap)
            if ap is not None:
                rhs = rhs - ca.mtimes(bodies.U[k][b].T, ap)
        Q = ca.mtimes(bodies.Dinv[k], rhs)
        for b, j in enumerate(c.joints):
            SQ = ca.mtimes(st.S[k][b], Q)
            A[j] = SQ if a_pre[b] is None else a_pre[b] + SQ
        rows.append(Q)
    return ca.vertcat(*rows), A


def _place(like, block, col: int, ncol: int):
    """``block`` (6, d) as columns ``col..col+d`` of a (6, ncol) matrix."""
    out = _zeros(like, block.shape[0], ncol)
    out[:, col : col + block.shape[1]] = block
    return out
