"""The cluster paper's baselines (Sec. II-C to II-E), for comparison with C-RNEA, C-ABA, C-EFPA.

* **Approximate** (:class:`ApproximateModel`): the *independent tree* (every dependent body, rotors,
  cranks and rods, removed; loops ignored) with each rotor's inertia reflected onto the joints it
  follows as a diagonal *armature* ``Σ_r G_{r,j}² I_r`` (``G`` at the neutral configuration for
  loops): MuJoCo's ``armature``. RNEA adds ``armature ⊙ q̈``; the ABA, the EFPA and the IIM add
  it to ``D = Sᵀ IA S``. Fast and approximate: it ignores the rotors' gyroscopic and coupling terms.
* **Projected**: the spanning tree's ``H`` (CRBA) and bias ``h(y, ẏ) + H g`` (RNEA at ``ÿ = g``)
  projected, ``M = Gᵀ H G``, ``b = Gᵀ(h + H g)``, then a dense LDLᵀ; inverse dynamics
  ``Gᵀ RNEA(y, ẏ, G q̈ + g)``; the Delassus matrix ``J M⁻¹ Jᵀ``.
* **Lagrange**: the KKT system on spanning coordinates, ``[H Kᵀ; K 0] [ÿ; −λ] = [τ − h; −K̇ ẏ]``
  (``K`` every cluster's constraint rows), by an LDLᵀ of the quasi-definite matrix.

Glossary: ``H``/``h`` spanning-tree inertia and bias, ``K`` loop constraint rows (n_c, tree.nv),
``Kdyd`` their drift ``K̇ ẏ``, ``armature`` reflected rotor inertias (nv).
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from functools import cached_property

import casadi as ca
import numpy as np

from ...errors import ModelError
from ...model.clusters import ClusterModel
from ...model.model import Joint, Model
from ...model.urdf import load_urdf
from ...spatial.algebra import act_inertia, symmetric
from .. import delassus as tree_delassus
from .. import dynamics as tree_dynamics
from .. import iim as tree_iim
from ..constraints import Constraint, resolve
from ..kinematics import TreeKinematics
from ..linalg import ldlt, ldlt_solve, spd_inverse
from .kinematics import ClusterKinematics
from .operational import constraint_jacobian

__all__ = [
    "ApproximateModel",
    "approximate_rnea",
    "approximate_aba",
    "approximate_efpa",
    "approximate_iim",
    "projected_rnea",
    "projected_aba",
    "projected_mass_matrix",
    "projected_efpa",
    "lagrange_aba",
]


# ------------------------------------------------------------------------------------- approximate
@dataclasses.dataclass(frozen=True, eq=False)
class ApproximateModel:
    """The independent tree of a clustered model with reflected rotor inertias as armature.

    Attributes:
        cluster_model: the exact model it approximates.
        model: the independent tree (same joint names as the independent joints).
        armature: reflected inertia (model.nv,), kg m² (or kg), in the tree's order.
        order: for each velocity of ``model``, its index in the clustered model's ``v``.
    """

    cluster_model: ClusterModel
    model: Model
    armature: np.ndarray
    order: np.ndarray

    @classmethod
    def build(cls, cm: ClusterModel) -> ApproximateModel:
        if cm.urdf is None:
            raise ModelError(f"model {cm.name!r}: the approximate model needs the spanning tree's URDF text")
        tree = cm.tree
        dependent = {c.joints[k] for c in cm.infos for k in c.dependent}
        for j in range(1, tree.njoints):
            if j not in dependent and tree.joints[j].parent in dependent:
                raise ModelError(
                    f"model {cm.name!r}: independent joint {tree.joints[j].name!r} hangs from a dependent body; "
                    "the independent tree is not a subtree"
                )
        drop_links = {tree.joints[j].link for j in dependent}
        root = ET.fromstring(cm.urdf)
        for joint in list(root.findall("joint")):
            if joint.find("child").get("link") in drop_links:
                root.remove(joint)
        removed = set(drop_links)
        changed = True
        while changed:  # links below dropped bodies (fixed frames on rotors, rods)
            changed = False
            for joint in list(root.findall("joint")):
                if joint.find("parent").get("link") in removed:
                    removed.add(joint.find("child").get("link"))
                    root.remove(joint)
                    changed = True
        for link in list(root.findall("link")):
            if link.get("name") in removed:
                root.remove(link)
        model = load_urdf(ET.tostring(root, encoding="unicode"), cm.floating_base)
        order = _independent_indices(cm, model, lambda joint: joint.nv)
        armature = np.zeros(cm.nv)
        y0 = cm.neutral()
        for k, c in enumerate(cm.infos):
            G = np.eye(c.nv) if c.trivial else np.array(ca.DM(cm.G_block(k, ca.DM(y0))), dtype=float)
            if cm.armature is not None:  # the user's own armature, reflected
                arm = np.asarray(cm.armature)[cm.spanning_v_indices(k)]
                armature[c.idx_v : c.idx_v + c.nv] += np.einsum("d,dj->j", arm, G**2)
            if c.trivial:
                continue
            for d in c.dependent:
                j = c.joints[d]
                if tree.children(j):
                    continue  # not a rotor: a crank or rod carrying others, ignored
                jt = tree.joints[j]
                S = np.zeros(6)
                S[3:6] = jt.axis
                spin = float(S @ tree.inertias[j] @ S)
                armature[c.idx_v : c.idx_v + c.nv] += spin * G[d, :] ** 2
        arm = armature[np.asarray(order, dtype=int)]
        arm.flags.writeable = False
        ordr = np.asarray(order, dtype=int)
        ordr.flags.writeable = False
        return cls(cm, model, arm, ordr)

    @cached_property
    def q_order(self) -> np.ndarray:
        """For each configuration entry of ``model``, its index in the independent ``q``."""
        return np.asarray(_independent_indices(self.cluster_model, self.model, lambda joint: joint.nq), dtype=int)

    def configuration(self, y):
        """The approximate model's configuration (model.nq) from a spanning ``y`` (CasADi)."""
        idx = np.asarray(self.cluster_model.independent_q_indices)[self.q_order]
        return y[idx.tolist(), :] if y.shape[1] == 1 else y[:, idx.tolist()].T

    def to_model(self, x):
        """An independent vector (clustered layout) in the approximate model's order."""
        return x[self.order.tolist(), :]

    def from_model(self, x):
        """The inverse of :meth:`to_model` (rows)."""
        inv = np.empty_like(self.order)
        inv[self.order] = np.arange(self.order.size)
        return x[inv.tolist(), :]

    def bodies(self, kin: TreeKinematics) -> tree_dynamics.ArticulatedBodies:
        """Articulated-body quantities with the armature added to each ``D``."""
        model = self.model
        n = model.njoints
        IA = [ca.DM(I) for I in model.inertias]
        U, Dinv, Ia = [None] * n, [None] * n, [None] * n
        for i in range(n - 1, 0, -1):
            j = model.joints[i]
            S = kin.S[i]
            U[i] = ca.mtimes(IA[i], S)
            D = ca.mtimes(S.T, U[i]) + ca.diag(ca.DM(self.armature[j.idx_v : j.idx_v + j.nv]))
            Dinv[i] = spd_inverse(D)
            Ia[i] = symmetric(IA[i] - ca.mtimes(ca.mtimes(U[i], Dinv[i]), U[i].T))
            if j.parent > 0:
                IA[j.parent] = IA[j.parent] + act_inertia(kin.liMi[i], Ia[i])
        return tree_dynamics.ArticulatedBodies(kin, IA, U, Dinv, Ia)


def _independent_indices(cm: ClusterModel, model: Model, size: Callable[[Joint], int]) -> list[int]:
    """For each joint of ``model`` (the approximate model, named as ``cm``'s spanning tree) in order,
    the indices of its ``size(joint)`` entries (``nq`` or ``nv``) in ``cm``'s independent vector."""
    out: list[int] = []
    for j in model.joints[1:]:
        cj = cm.tree.joint_id(j.name)
        off = 0
        for ij in cm.independent_joints:
            if ij == cj:
                break
            off += size(cm.tree.joints[ij])
        out.extend(range(off, off + size(j)))
    return out


def _col(x):
    return x if x.shape[1] == 1 else x.T


def approximate_rnea(am: ApproximateModel, y, v, a):
    """Approximate inverse dynamics (nv, 1) in the clustered layout."""
    q, v, a = am.configuration(_col(y)), am.to_model(_col(v)), am.to_model(_col(a))
    tau = tree_dynamics.rnea(am.model, q, v, a) + ca.DM(am.armature) * a
    return am.from_model(tau)


def approximate_aba(am: ApproximateModel, y, v, tau):
    """Approximate forward dynamics (nv, 1) in the clustered layout."""
    q, v, tau = am.configuration(_col(y)), am.to_model(_col(v)), am.to_model(_col(tau))
    kin = TreeKinematics(am.model, q, v)
    return am.from_model(tree_dynamics.aba(am.model, q, v, tau, kin=kin, bodies=am.bodies(kin)))


def approximate_efpa(am: ApproximateModel, y, constraints: Sequence[Constraint]):
    """Approximate Delassus matrix (EFPA on the independent tree with armature)."""
    q = am.configuration(_col(y))
    kin = TreeKinematics(am.model, q)
    return tree_delassus.efpa(am.model, kin, resolve(am.model, constraints), am.bodies(kin))


def approximate_iim(am: ApproximateModel, y, constraints: Sequence[Constraint]):
    """Approximate ``B̂`` (rows in the clustered layout; columns: the tree's actuated joints, then
    the constraints)."""
    q = am.configuration(_col(y))
    kin = TreeKinematics(am.model, q)
    B = am.from_model(tree_iim.iim(am.model, kin, resolve(am.model, constraints), am.bodies(kin)))
    first = am.model.nv - am.model.n_actuated
    act = am.order[first:] - first  # the tree's actuated columns in the clustered layout
    inv = np.empty_like(act)
    inv[act] = np.arange(act.size)
    cols = inv.tolist() + list(range(act.size, B.shape[1]))
    return B[:, cols]


# ------------------------------------------------------------------------------------- projected
def projected_rnea(cm: ClusterModel, y, v, a, kin: ClusterKinematics | None = None):
    """``Gᵀ RNEA(y, ẏ, G q̈ + g)`` with the whole ``G`` (tree.nv, nv) as one matrix."""
    kin = kin or ClusterKinematics(cm, y, v)
    a = _col(a)
    G = cm.G_matrix(kin.y)
    ydd = ca.mtimes(G, a) if kin.gamma is None else ca.mtimes(G, a) + kin.gamma
    tau = tree_dynamics.rnea(cm.tree, kin.y, kin.yd, ydd, kin=kin.tree)
    if cm.armature is not None:
        tau = tau + ca.DM(cm.armature) * ydd
    return ca.mtimes(G.T, tau)


def _spanning_inertia(cm: ClusterModel, kin: ClusterKinematics):
    """``H`` (tree.nv, tree.nv) of the spanning tree, armature included."""
    H = tree_dynamics.crba(cm.tree, kin.y, kin=kin.tree)
    return H if cm.armature is None else H + ca.DM(np.diag(cm.armature))


def projected_mass_matrix(cm: ClusterModel, y, kin: ClusterKinematics | None = None):
    """``M = Gᵀ H G`` (nv, nv) from the spanning tree's CRBA."""
    kin = kin or ClusterKinematics(cm, y)
    H = _spanning_inertia(cm, kin)
    G = cm.G_matrix(kin.y)
    return symmetric(ca.mtimes(G.T, ca.mtimes(H, G)))


def projected_aba(cm: ClusterModel, y, v, tau, kin: ClusterKinematics | None = None):
    """``q̈ = (Gᵀ H G)⁻¹ (τ − Gᵀ(h + H g))`` by a dense LDLᵀ."""
    kin = kin or ClusterKinematics(cm, y, v)
    G = cm.G_matrix(kin.y)
    H = _spanning_inertia(cm, kin)
    ydd0 = kin.gamma
    if ydd0 is None:
        ydd0 = ca.SX.zeros(cm.tree.nv, 1) if isinstance(kin.y, ca.SX) else ca.DM.zeros(cm.tree.nv, 1)
    bias = tree_dynamics.rnea(cm.tree, kin.y, kin.yd, ydd0, kin=kin.tree)
    if cm.armature is not None and kin.gamma is not None:
        bias = bias + ca.DM(cm.armature) * kin.gamma
    M = symmetric(ca.mtimes(G.T, ca.mtimes(H, G)))
    return ldlt_solve(ldlt(M), _col(tau) - ca.mtimes(G.T, bias))


def projected_efpa(cm: ClusterModel, y, constraints, kin: ClusterKinematics | None = None):
    """``J (Gᵀ H G)⁻¹ Jᵀ`` by a dense LDLᵀ (``constraints`` resolved on the tree)."""
    kin = kin or ClusterKinematics(cm, y)
    M = projected_mass_matrix(cm, kin.y, kin)
    J = constraint_jacobian(cm, kin, constraints)
    return symmetric(ca.mtimes(J, ldlt_solve(ldlt(M), J.T)))


# ------------------------------------------------------------------------------------- Lagrange
def loop_rows(cm: ClusterModel, kin: ClusterKinematics):
    """``(K, K̇ẏ)``: every cluster's constraint rows (n_c, tree.nv) and their drift (n_c, 1)."""
    rows, drifts = [], []
    for k, c in enumerate(cm.infos):
        if c.jacobian is None or not c.dependent:
            continue
        yc = cm.cluster_coordinates(k, kin.y)
        Kc = c.jacobian(yc)
        idx = cm.spanning_v_indices(k)
        full = ca.SX(Kc.shape[0], cm.tree.nv) if isinstance(kin.y, ca.SX) else ca.DM(Kc.shape[0], cm.tree.nv)
        full[:, idx] = Kc
        rows.append(full)
        if c.explicit:
            drifts.append(ca.DM.zeros(Kc.shape[0], 1))
        else:
            drifts.append(c.bias(yc, cm.cluster_velocities(k, kin.yd)))
    return ca.vertcat(*rows), ca.vertcat(*drifts)


def lagrange_aba(cm: ClusterModel, y, v, tau, kin: ClusterKinematics | None = None):
    """Forward dynamics by the KKT system on spanning coordinates, LDLᵀ without pivoting (H first)."""
    kin = kin or ClusterKinematics(cm, y, v)
    H = _spanning_inertia(cm, kin)
    h = tree_dynamics.nonlinear_effects(cm.tree, kin.y, kin.yd, kin=kin.tree)
    K, drift = loop_rows(cm, kin)
    n, m = cm.tree.nv, K.shape[0]
    tau_span = ca.SX(n, 1) if isinstance(kin.y, ca.SX) else ca.DM(n, 1)
    tau_span[np.asarray(cm.independent_v_indices).tolist(), 0] = _col(tau)
    zero = ca.SX(m, m) if isinstance(kin.y, ca.SX) else ca.DM(m, m)
    A = ca.vertcat(ca.horzcat(H, K.T), ca.horzcat(K, zero))
    rhs = ca.vertcat(tau_span - h, -drift)
    sol = ldlt_solve(ldlt(A), rhs)
    return sol[np.asarray(cm.independent_v_indices).tolist(), 0]
