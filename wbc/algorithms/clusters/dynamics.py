"""Constrained dynamics of clustered models: C-RNEA and C-ABA (the cluster paper, Sec. VI-VII).

A cluster ``k`` of ``n_b`` bodies moves as one generalized body: its stacked body velocities
``𝗏_k`` (6 n_b) follow its parent cluster's through ``𝗏_k = 𝖷_k 𝗏_p + 𝖲_k q̇_k``, where ``𝖷_k``
carries each output body's motion to the cluster's bodies and the *cluster motion subspace*
``𝖲_k = Φ_k block(S_i) G_k`` (eq. 24) composes the bodies' own subspaces along the cluster's
internal chains (``Φ_k``) with the constraint Jacobian. Accelerations are
``𝖺_k = 𝖷_k 𝖺_p + 𝖲_k q̈_k + 𝖼_k`` with ``𝖼_k`` the velocity-product and constraint-bias terms
(``g``). Forces go back through ``𝖷_kᵀ`` (onto the output bodies) and generalized forces are
``τ_k = 𝖲_kᵀ 𝖿_k``. With these, the RNEA and the ABA are the classical recursions over clusters:

* **C-RNEA**: the forward pass computes every body's acceleration (``ÿ = G q̈ + g`` inside each
  cluster), the backward pass accumulates body forces and projects them,
  ``τ_k = 𝖲_kᵀ 𝖿_k = G_kᵀ (S_iᵀ f_i)_{i∈k}`` (the factorization (24) of ``𝖲_k``): it runs body by
  body and projects each cluster's joint forces through its own ``G_k``.
* **C-ABA** (Algorithm 1): articulated-cluster inertias ``𝖨ᴬ_k`` (6 n_b × 6 n_b), ``𝖴 = 𝖨ᴬ 𝖲``,
  ``𝖣 = 𝖲ᵀ 𝖴`` (nv_k × nv_k), ``𝗎 = τ_k − 𝖲ᵀ 𝗉ᴬ``; the parent receives ``𝖷ᵀ(𝖨ᴬ − 𝖴 𝖣⁻¹ 𝖴ᵀ)𝖷``
  and ``𝖷ᵀ(𝗉ᴬ + 𝖨ᵃ 𝖼 + 𝖴 𝖣⁻¹ 𝗎)``; the forward pass solves ``q̈_k = 𝖣⁻¹(𝗎 − 𝖴ᵀ(𝖷 𝖺_p + 𝖼))``.

Quantities are kept per body (6-row blocks) so that the structural zeros of ``𝖷`` (one output
body per row block) and of the block-diagonal inertias fold away when tracing.

Glossary (the paper's sans-serif symbols; ``b`` a body of the cluster, ``o(b)`` its output body):
  ``S[k][b]``   rows of ``𝖲_k`` for body b (6, nv_k)   ``c[k][b]``  rows of ``𝖼_k`` (6, 1)
  ``Mout[j]``   placement of body j in its output body  ``IA[k]``    ``𝖨ᴬ_k`` as a grid of 6x6 blocks
  ``U[k][b]``   rows of ``𝖴_k``                         ``Dinv[k]``  ``𝖣_k⁻¹``
  ``XU[k]``     ``𝖷ᵀ𝖴`` per output body                  ``pA``/``pa``  articulated bias forces
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import casadi as ca
import numpy as np

from ...model.clusters import ClusterModel
from ...spatial.algebra import act_force, act_inertia, act_inv_motion, compose, cross_force, cross_motion, symmetric
from .. import dynamics as tree_dynamics
from ..dynamics import gravity_acceleration
from ..linalg import spd_inverse
from .kinematics import ClusterKinematics

__all__ = ["rnea", "nonlinear_effects", "aba", "ClusterArticulatedBodies", "ClusterStructure"]

ForceMap = Mapping[int, object] | None


@dataclass
class ClusterStructure:
    """Per-configuration cluster geometry shared by C-ABA, C-EFPA and the clustered IIM.

    Attributes:
        kin: the kinematics it was computed from.
        bodies: tree joints of each cluster (its ``joints``).
        Mout: placement of each tree body in its output body's frame (index: tree joint).
        S: ``𝖲_k`` per cluster, as a list of (6, nv_k) rows per body.
        X: motion transform (6, 6) from each body's output body to the body (index: tree joint).
    """

    kin: ClusterKinematics
    Mout: list
    S: list
    X: list

    @classmethod
    def compute(cls, cm: ClusterModel, kin: ClusterKinematics) -> ClusterStructure:
        tree = cm.tree
        tk = kin.tree
        Mout: list = [None] * tree.njoints
        S: list = []
        X: list = [None] * tree.njoints
        for k, c in enumerate(cm.infos):
            members = set(c.joints)
            rows = {}
            for b, j in enumerate(c.joints):
                jt = tree.joints[j]
                p = jt.parent
                if p in members:
                    Mout[j] = compose(Mout[p], tk.liMi[j])
                else:
                    Mout[j] = tk.liMi[j]
                X[j] = act_inv_motion(Mout[j], ca.DM.eye(6))
                if c.trivial:
                    rows[j] = ca.DM(tk.S[j])
                else:
                    own = ca.mtimes(ca.DM(tk.S[j]), kin.G[k][b, :])
                    rows[j] = own + act_inv_motion(tk.liMi[j], rows[p]) if p in members else own
            S.append([rows[j] for j in c.joints])
        return cls(kin, Mout, S, X)


def _up(structure: ClusterStructure, cm: ClusterModel, k: int, parent_motion: Mapping[int, object], world):
    """``𝖷_k 𝖺_p``: each body's share of its output body's motion(s), as a list of (6, m) blocks."""
    out = []
    for b, j in enumerate(cm.infos[k].joints):
        o = cm.infos[k].output[b]
        m = world if o == 0 else parent_motion[o]
        out.append(None if m is None else act_inv_motion(structure.Mout[j], m))
    return out


def rnea(cm: ClusterModel, y, v, a, fext: ForceMap = None, kin: ClusterKinematics | None = None):
    """C-RNEA: generalized forces ``τ`` (nv, 1) with ``M q̈ + h = τ + Σ Jᵀ fext`` in independent coordinates.

    ``fext`` maps a tree joint to the spatial force (6, 1) on its body, in its joint frame.
    """
    kin = kin or ClusterKinematics(cm, y, v)
    a = a if a.shape[1] == 1 else a.T
    ydd = kin.spanning_acceleration(a)
    tau_tree = tree_dynamics.rnea(cm.tree, kin.y, kin.yd, ydd, fext, kin=kin.tree)
    if cm.armature is not None:
        tau_tree = tau_tree + ca.DM(cm.armature) * ydd
    return kin.project(tau_tree)


def nonlinear_effects(cm: ClusterModel, y, v, kin: ClusterKinematics | None = None):
    """``h(y, v)`` (nv, 1): Coriolis, centrifugal, gravity and constraint-bias generalized forces."""
    zero = ca.SX.zeros(cm.nv, 1) if isinstance(y, ca.SX) else ca.DM.zeros(cm.nv, 1)
    return rnea(cm, y, v, zero, kin=kin)


@dataclass
class ClusterArticulatedBodies:
    """Articulated-cluster quantities of one configuration (they depend on ``y`` only).

    The parent of cluster ``k`` receives ``𝖷ᵀ(𝖨ᴬ − 𝖴 𝖣⁻¹ 𝖴ᵀ)𝖷 = 𝖷ᵀ 𝖨ᴬ 𝖷 − (𝖷ᵀ𝖴) 𝖣⁻¹ (𝖷ᵀ𝖴)ᵀ``,
    computed body by body: ``𝖷ᵀ 𝖨ᴬ 𝖷`` from the (usually block-diagonal) grid of ``𝖨ᴬ`` moved to the
    output bodies, and a low-rank update by the cluster's ``nv_k`` columns of ``𝖷ᵀ𝖴``; the
    (6 n_b)² matrix ``𝖨ᵃ`` is never formed.

    Attributes:
        structure: the cluster geometry.
        IA: ``𝖨ᴬ_k`` of each cluster, a grid (list of lists, upper blocks) of 6x6 blocks (None: zero).
        U: ``𝖴_k`` rows per body (6, nv_k).
        Dinv: ``𝖣_k⁻¹`` (nv_k, nv_k).
        XU: ``𝖷ᵀ𝖴`` per output body of the cluster: {parent tree body: (6, nv_k)}.
    """

    structure: ClusterStructure
    IA: list
    U: list
    Dinv: list
    XU: list

    @classmethod
    def compute(
        cls, cm: ClusterModel, kin: ClusterKinematics, structure: ClusterStructure | None = None
    ) -> ClusterArticulatedBodies:
        structure = structure or ClusterStructure.compute(cm, kin)
        tree = cm.tree
        n = len(cm.infos)
        IA = [[[None] * len(c.joints) for _ in c.joints] for c in cm.infos]
        for k, c in enumerate(cm.infos):
            for b, j in enumerate(c.joints):
                IA[k][b][b] = ca.DM(tree.inertias[j])
        U: list = [None] * n
        Dinv: list = [None] * n
        XU: list = [None] * n
        for k in range(n - 1, -1, -1):
            c = cm.infos[k]
            nb = len(c.joints)
            S = structure.S[k]
            Uk = [_ia_times(IA[k], b, S) for b in range(nb)]
            D = None
            for b in range(nb):
                term = ca.mtimes(S[b].T, Uk[b])
                D = term if D is None else D + term
            if cm.armature is not None:
                D = D + _reflected_armature(cm, kin, k)
            U[k] = Uk
            Dinv[k] = spd_inverse(symmetric(D))
            if c.parent < 0:
                continue
            p = c.parent
            ppos = {j: i for i, j in enumerate(cm.infos[p].joints)}
            xu: dict[int, object] = {}
            for b, jb in enumerate(c.joints):
                o = c.output[b]
                f = act_force(structure.Mout[jb], Uk[b])
                xu[o] = f if o not in xu else xu[o] + f
                for e in range(b, nb):
                    blk = IA[k][b][e]
                    if blk is None:
                        continue
                    oe = ppos[c.output[e]]
                    if b == e:
                        _add_block(IA[p], ppos[o], oe, act_inertia(structure.Mout[jb], blk))
                    else:
                        contrib = ca.mtimes(structure.X[jb].T, ca.mtimes(blk, structure.X[c.joints[e]]))
                        _add_block(IA[p], ppos[o], oe, contrib)
                        if ppos[o] == oe:
                            _add_block(IA[p], oe, oe, contrib.T)
            XU[k] = xu
            outs = list(xu)
            XUD = {o: ca.mtimes(xu[o], Dinv[k]) for o in outs}
            for a_, oa in enumerate(outs):
                for ob in outs[a_:]:
                    red = ca.mtimes(XUD[oa], xu[ob].T)
                    if oa == ob:
                        red = symmetric(red)
                    _add_block(IA[p], ppos[oa], ppos[ob], -red)
        return cls(structure, IA, U, Dinv, XU)


def _reflected_armature(cm: ClusterModel, kin: ClusterKinematics, k: int):
    """``G_kᵀ diag(armature_k) G_k`` (nv_k, nv_k): the spanning joints' armature seen by cluster ``k``."""
    arm = np.asarray(cm.armature)[cm.spanning_v_indices(k)]
    if cm.infos[k].trivial:
        return ca.DM(np.diag(arm))
    G = kin.G[k]
    return symmetric(ca.mtimes(G.T, ca.mtimes(ca.DM(np.diag(arm)), G)))


def _armature_bias(cm: ClusterModel, kin: ClusterKinematics, k: int):
    """``G_kᵀ (armature_k ⊙ g_k)``, or None."""
    if cm.armature is None or kin.g[k] is None:
        return None
    arm = np.asarray(cm.armature)[cm.spanning_v_indices(k)]
    if not np.any(arm):
        return None
    return ca.mtimes(kin.G[k].T, ca.DM(arm) * kin.g[k])


def _add_block(grid, r: int, s: int, blk) -> None:
    """Add ``blk`` at block (r, s) of an upper-stored symmetric grid (transposed if r > s)."""
    if r > s:
        r, s, blk = s, r, blk.T
    grid[r][s] = blk if grid[r][s] is None else grid[r][s] + blk


def _ia_times(grid, b: int, vecs) -> object:
    """Row block ``b`` of ``grid · vecs`` (vecs: per-body (6, m) blocks, None for zero)."""
    acc = None
    for e, x in enumerate(vecs):
        if x is None:
            continue
        blk = grid[b][e] if b <= e else (grid[e][b].T if grid[e][b] is not None else None)
        if blk is None:
            continue
        term = ca.mtimes(blk, x)
        acc = term if acc is None else acc + term
    return acc


def velocity_terms(cm: ClusterModel, kin: ClusterKinematics, structure: ClusterStructure, fext: ForceMap = None):
    """Per body: the cluster bias acceleration ``𝖼`` (6, 1) and the bias force ``v ×* I v − fext``."""
    tree = cm.tree
    tk = kin.tree
    c_acc: list = [None] * tree.njoints
    pA: list = [None] * tree.njoints
    for k, c in enumerate(cm.infos):
        members = set(c.joints)
        g = None if c.trivial else kin.g[k]
        for b, j in enumerate(c.joints):
            jt = tree.joints[j]
            vj = ca.mtimes(tk.S[j], kin.yd[jt.idx_v : jt.idx_v + jt.nv])
            ci = cross_motion(tk.velocities[j], vj)
            if g is not None:
                ci = ci + ca.mtimes(tk.S[j], g[b])
            if jt.parent in members:
                ci = ci + act_inv_motion(tk.liMi[j], c_acc[jt.parent])
            c_acc[j] = ci
            vi = tk.velocities[j]
            pA[j] = cross_force(vi, ca.mtimes(tree.inertias[j], vi))
            if fext and j in fext:
                pA[j] = pA[j] - fext[j]
    return c_acc, pA


def aba(
    cm: ClusterModel,
    y,
    v,
    tau,
    fext: ForceMap = None,
    kin: ClusterKinematics | None = None,
    bodies: ClusterArticulatedBodies | None = None,
):
    """C-ABA: constrained forward dynamics ``q̈`` (nv, 1) for independent generalized forces ``tau`` (nv,)."""
    kin = kin or ClusterKinematics(cm, y, v)
    bodies = bodies or ClusterArticulatedBodies.compute(cm, kin)
    st = bodies.structure
    tau = tau if tau.shape[1] == 1 else tau.T
    n = len(cm.infos)
    c_acc, pA = velocity_terms(cm, kin, st, fext)
    u: list = [None] * n
    for k in range(n - 1, -1, -1):
        c = cm.infos[k]
        S = st.S[k]
        uk = tau[c.idx_v : c.idx_v + c.nv]
        for b, j in enumerate(c.joints):
            uk = uk - ca.mtimes(S[b].T, pA[j])
        extra = _armature_bias(cm, kin, k)
        if extra is not None:
            uk = uk - extra
        u[k] = uk
        if c.parent < 0:
            continue
        # 𝖷ᵀ(𝗉ᴬ + 𝖨ᵃ 𝖼 + 𝖴 𝖣⁻¹ 𝗎) = 𝖷ᵀ(𝗉ᴬ + 𝖨ᴬ 𝖼) + (𝖷ᵀ𝖴) 𝖣⁻¹ (𝗎 − 𝖴ᵀ 𝖼)
        cvec = [c_acc[j] for j in c.joints]
        rest = uk
        for b in range(len(c.joints)):
            rest = rest - ca.mtimes(bodies.U[k][b].T, cvec[b])
        Dr = ca.mtimes(bodies.Dinv[k], rest)
        for b, j in enumerate(c.joints):
            pa = pA[j] + _ia_times(bodies.IA[k], b, cvec)
            o = c.output[b]
            pA[o] = pA[o] + act_force(st.Mout[j], pa)
        for o, xu in bodies.XU[k].items():
            pA[o] = pA[o] + ca.mtimes(xu, Dr)
    world = gravity_acceleration(cm.tree)
    acc: dict[int, object] = {}
    out = []
    for k, c in enumerate(cm.infos):
        a_up = _up(st, cm, k, acc, world)
        a_pre = [a_up[b] + c_acc[j] for b, j in enumerate(c.joints)]
        rhs = u[k]
        for b in range(len(c.joints)):
            rhs = rhs - ca.mtimes(bodies.U[k][b].T, a_pre[b])
        qdd = ca.mtimes(bodies.Dinv[k], rhs)
        for b, j in enumerate(c.joints):
            acc[j] = a_pre[b] + ca.mtimes(st.S[k][b], qdd)
        out.append(qdd)
    return ca.vertcat(*out) if out else ca.DM.zeros(0, 1)
