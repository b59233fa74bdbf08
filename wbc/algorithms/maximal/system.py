"""The maximal-coordinate KKT system of one state (the lecture notes' formulation).

Every body ``i`` of the tree is a free rigid body with its own spatial acceleration ``aᵢ`` (6, in
its joint frame, gravity included as the ground's acceleration ``a₀ = [−g; 0]``, as in the ABA);
every joint is a constraint between two bodies; a loop closure or a coupling of a cluster model is
a constraint among a few more. The unknowns are the accelerations ``a`` (6 per body), the joint
multipliers ``μ`` (``mᵢ = 6 − nᵢ`` per joint) and the loop multipliers ``ν`` (``k`` in all):

    ⎡ M  Cᵀ Bᵀ ⎤ ⎡a⎤   ⎡d⎤      M = diag(Iᵢ)                   body inertias, 6x6 blocks
    ⎢ C  0  0  ⎥ ⎢μ⎥ = ⎢c⎥      C: Tᵢᵀ aᵢ − Tᵢᵀ Xᵢ a_λ(i) = Tᵢᵀ cᵢ   joint i, mᵢ rows, 2 bodies
    ⎣ B  0  0  ⎦ ⎣ν⎦   ⎣b⎦      B: Σ_j B_j a_j = b                 loop rows, k rows, 2+ bodies

with ``dᵢ = Dᵢ τᵢ − Σ_children X꜀* D꜀ τ꜀ + fextᵢ − vᵢ ×* Iᵢ vᵢ`` (joint efforts as equal and opposite
wrenches on the two bodies of each joint) and ``cᵢ = vᵢ × Sᵢ q̇ᵢ``. The multipliers are the
reactions: the wrench joint ``i`` transmits from its parent body to body ``i`` is
``fᵢ = −Tᵢ μᵢ + Dᵢ τᵢ`` (see :mod:`.subspaces`), and a loop row block's wrench on a body it touches
is ``−B_jᵀ ν``. Without loops the system is a tree of 6x6 and mᵢ x mᵢ blocks (banded for a chain);
loop rows couple bodies that are not parent and child and break that structure.

Loop rows of a :class:`~wbc.ClusterModel`:

* a :class:`~wbc.LoopClosure` between frames ``a`` and ``b`` acts on their two bodies only: the
  second time derivative of its residual (``R_aᵀ (p_a − p_b)`` and, for a weld,
  ``vee(½ (R_ab − R_abᵀ))``) in terms of the frames' spatial accelerations ``A_a``, ``A_b`` (local),
  with ``R_ab = R_aᵀ R_b``, ``p_ab = R_aᵀ (p_b − p_a)``::

      point:  A_a,lin + A_a,ang × p_ab − R_ab A_b,lin  = −(ω_a × ṗ_ab − R_ab (ω_b × v_b) + ω_a × R_ab v_b)
      weld:   ½ (tr R I − Rᵀ) A_b,ang − ½ (tr R I − R) A_a,ang = −(½ (tr Ṙ I − Ṙᵀ) ω_b − ½ (tr Ṙ I − Ṙ) ω_a)

  (``R = R_ab``, ``Ṙ = R [ω_b] − [ω_a] R``, ``ṗ_ab = R v_b − v_a − ω_a × p_ab``), the rows selected;
  its multipliers are a physical wrench between the two bodies, so the joint wrenches are the
  mechanism's structural loads;
* a coupling (gear, belt, polynomial) is a row on joint accelerations, ``K ÿ = −K̇ ẏ``, written on
  bodies through ``ÿⱼ = Dⱼᵀ (aⱼ − Xⱼ a_λ − cⱼ)``; its force is a generalized force ``−Kᵀ ν`` on
  those joints (part of their ``Sᵀ f``).

Glossary: ``T``/``D`` constraint subspace / force basis of a joint (:mod:`.subspaces`), ``X`` a joint's
placement in its parent (``liMi``), ``a0`` the ground's acceleration, ``cvel`` velocity-product
accelerations ``v × S q̇``, ``d``/``c``/``b`` the right-hand sides above.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import casadi as ca
import numpy as np

from ...model.clusters import ClosureKind, ClusterModel, JointCoupling, LoopClosure, PolynomialCoupling
from ...model.model import Model
from ...spatial.algebra import SE3, Matrix, act_force, act_inv_motion, compose, cross_force, cross_motion
from ...spatial.lie import skew
from ..dynamics import gravity_acceleration
from ..kinematics import TreeKinematics
from .subspaces import constraint_subspace, force_basis

__all__ = ["LoopRows", "MaximalSystem", "closure_rows", "coupling_rows", "loop_rows"]


@dataclasses.dataclass(frozen=True)
class LoopRows:
    """``k`` loop rows on body accelerations, ``Σ coef a_body = rhs`` (terms on the ground moved to
    ``rhs``).

    Attributes:
        terms: ``(body, coef (k, 6))`` pairs, bodies ≥ 1, each body once.
        rhs: (k, 1).
        closure: the :class:`~wbc.LoopClosure` the rows come from, or None for coupling rows.
        frame_b: for a closure, ``(body, coef (k, 6))`` of frame ``b``'s own acceleration (for its
            wrench in frame ``b``), else None.
        joint_columns: for couplings, ``{tree joint: K[:, j] (k, 1)}`` (their generalized forces).
        grounded: the rows also act on the ground (a frame of the universe, a joint on the root):
            the loop then runs through the ground, where the recursion closes it.
    """

    terms: tuple[tuple[int, Matrix], ...]
    rhs: Matrix
    closure: LoopClosure | None = None
    frame_b: tuple[int, Matrix] | None = None
    joint_columns: Mapping[int, Matrix] | None = None
    grounded: bool = False

    @property
    def size(self) -> int:
        return int(self.rhs.shape[0])


def _zeros(like, n: int, m: int = 1):
    return ca.SX(n, m) if isinstance(like, ca.SX) else ca.DM(n, m)


class MaximalSystem:
    """The blocks of the KKT system above for ``tree`` at one state.

    Args:
        tree: the (spanning) tree.
        kin: its kinematics at ``(q, v)``.
        tau: generalized forces (tree.nv, 1) on the tree's joints.
        fext: ``{joint: wrench (6, 1)}`` on bodies, in their joint frames, or None.
        loops: loop row blocks (:func:`loop_rows`).
    """

    def __init__(
        self, tree: Model, kin: TreeKinematics, tau, fext: Mapping[int, Matrix] | None, loops: Sequence[LoopRows] = ()
    ) -> None:
        n = tree.njoints
        self.model = tree
        self.kin = kin
        self.loops = tuple(loops)
        self.T = [np.zeros((6, 0))] + [constraint_subspace(j) for j in tree.joints[1:]]
        self.D = [np.zeros((6, 0))] + [force_basis(j) for j in tree.joints[1:]]
        self.a0 = gravity_acceleration(tree)
        self.tau = [tau[j.idx_v : j.idx_v + j.nv] for j in tree.joints]
        self.cvel: list = [None] * n
        self.d: list = [None] * n
        for i in range(1, n):
            vi = kin.velocities[i]
            self.cvel[i] = cross_motion(vi, kin._vj(i))
            self.d[i] = -cross_force(vi, ca.mtimes(tree.inertias[i], vi)) + ca.mtimes(self.D[i], self.tau[i])
            if fext and i in fext:
                self.d[i] = self.d[i] + fext[i]
        for i in range(n - 1, 0, -1):
            p = tree.joints[i].parent
            if p > 0:
                self.d[p] = self.d[p] - act_force(kin.liMi[i], ca.mtimes(self.D[i], self.tau[i]))
        self.c = [None] + [ca.mtimes(self.T[i].T, self.cvel[i]) for i in range(1, n)]

    @property
    def m(self) -> list[int]:
        """Constraint rows per joint, ``6 − nᵢ`` (0 for the universe)."""
        return [T.shape[1] for T in self.T]

    def joint_acceleration(self, i: int, a: list):
        """``q̈ᵢ = Dᵢᵀ (aᵢ − Xᵢ a_λ − cᵢ)`` (nᵢ, 1) from body accelerations ``a`` (``a[0]`` the ground's)."""
        p = self.model.joints[i].parent
        rel = a[i] - act_inv_motion(self.kin.liMi[i], a[p]) - self.cvel[i]
        return ca.mtimes(self.D[i].T, rel)

    def joint_wrench(self, i: int, mu, coupling_tau=None):
        """``fᵢ = −Tᵢ μᵢ + Dᵢ (τᵢ + coupling forces)`` (6, 1): the wrench joint ``i`` transmits from its
        parent body to body ``i``, in joint ``i``'s frame about its origin, [force; moment]."""
        tau = self.tau[i] if coupling_tau is None else self.tau[i] + coupling_tau
        f = ca.mtimes(self.D[i], tau)
        return f if self.T[i].shape[1] == 0 else f - ca.mtimes(self.T[i], mu)


# ------------------------------------------------------------------------------------- loop rows
def _frame_twist(kin: TreeKinematics, frame) -> Matrix:
    if frame.joint == 0:
        return ca.DM.zeros(6, 1)
    return act_inv_motion(frame.placement, kin.velocities[frame.joint])


def _frame_placement(kin: TreeKinematics, frame) -> SE3:
    return compose(kin.oMi[frame.joint], frame.placement)


def _body_rows(frame, coef) -> tuple[int, Matrix]:
    """Rows ``coef`` (k, 6) on a frame's local acceleration as rows on its body's acceleration."""
    return frame.joint, act_force(frame.placement, coef.T).T


def closure_rows(tree: Model, kin: TreeKinematics, closure: LoopClosure, a0) -> LoopRows:
    """The rows of a loop closure on the accelerations of its two bodies (see the module docstring)."""
    fa, fb = tree.frames[tree.frame_id(closure.frame_a)], tree.frames[tree.frame_id(closure.frame_b)]
    Ma, Mb = _frame_placement(kin, fa), _frame_placement(kin, fb)
    R = ca.mtimes(Ma.R.T, Mb.R)
    p = ca.mtimes(Ma.R.T, Mb.p - Ma.p)
    Va, Vb = _frame_twist(kin, fa), _frame_twist(kin, fb)
    va, wa, vb, wb = Va[0:3], Va[3:6], Vb[0:3], Vb[3:6]
    pdot = ca.mtimes(R, vb) - va - ca.cross(wa, p)
    zero = ca.DM.zeros(3, 3)
    coef_a = [ca.horzcat(ca.DM.eye(3), -skew(p))]
    coef_b = [ca.horzcat(-R, zero)]
    drift = [ca.cross(wa, pdot) - ca.mtimes(R, ca.cross(wb, vb)) + ca.cross(wa, ca.mtimes(R, vb))]
    if closure.kind is ClosureKind.WELD:
        Rdot = ca.mtimes(R, skew(wb)) - ca.mtimes(skew(wa), R)
        tr, trd = ca.trace(R), ca.trace(Rdot)
        eye = ca.DM.eye(3)
        coef_a.append(ca.horzcat(zero, -(tr * eye - R) / 2))
        coef_b.append(ca.horzcat(zero, (tr * eye - R.T) / 2))
        drift.append(ca.mtimes(trd * eye - Rdot.T, wb) / 2 - ca.mtimes(trd * eye - Rdot, wa) / 2)
    sel = list(range(3 * len(coef_a))) if closure.rows is None else list(closure.rows)
    Ca, Cb, rhs = ca.vertcat(*coef_a)[sel, :], ca.vertcat(*coef_b)[sel, :], -ca.vertcat(*drift)[sel, 0]
    terms = []
    for frame, coef in ((fa, Ca), (fb, Cb)):
        body, rows = _body_rows(frame, coef)
        if body == 0:
            rhs = rhs - ca.mtimes(rows, a0)
        else:
            terms.append((body, rows))
    return LoopRows(tuple(terms), rhs, closure, (fb.joint, Cb), grounded=0 in (fa.joint, fb.joint))


def coupling_rows(tree: Model, kin: TreeKinematics, joints: Sequence[int], K, Kd_yd, a0) -> LoopRows:
    """Rows ``K ÿ = −K̇ẏ`` (k, len(joints)) on the joint accelerations of ``joints`` (one DoF each),
    written on body accelerations through ``ÿⱼ = Dⱼᵀ (aⱼ − Xⱼ a_λ − cⱼ)``."""
    rows: dict[int, Matrix] = {}
    rhs = -Kd_yd
    columns = {}
    grounded = False
    for col, j in enumerate(joints):
        k = K[:, col]
        if isinstance(k, (ca.DM, ca.SX)) and k.is_zero():
            continue
        Dj = force_basis(tree.joints[j])
        own = ca.mtimes(k, Dj.T)  # (k, 6)
        columns[j] = k
        rows[j] = rows[j] + own if j in rows else own
        rhs = rhs + ca.mtimes(own, cross_motion(kin.velocities[j], kin._vj(j)))
        p = tree.joints[j].parent
        parent_rows = -act_force(kin.liMi[j], own.T).T
        if p == 0:
            rhs = rhs - ca.mtimes(parent_rows, a0)
            grounded = True
        else:
            rows[p] = rows[p] + parent_rows if p in rows else parent_rows
    return LoopRows(tuple(rows.items()), rhs, None, None, columns, grounded)


def loop_rows(cm: ClusterModel, kin: TreeKinematics) -> list[LoopRows]:
    """Every declared cluster's constraints as loop row blocks: one block per loop closure, one per
    cluster for its couplings, in declaration order."""
    tree = cm.tree
    a0 = gravity_acceleration(tree)
    out = []
    for k, c in enumerate(cm.infos):
        if c.declared is None:
            continue
        _, jacobian, bias = c.loop_functions()
        yc = cm.cluster_coordinates(k, kin.q)
        K = jacobian(yc)
        Kd_yd = bias(yc, cm.cluster_velocities(k, kin.v))
        row = 0
        coupled: list[int] = []
        for constraint in c.declared.constraints:
            if isinstance(constraint, (JointCoupling, PolynomialCoupling)):
                coupled.append(row)
                row += 1
            else:
                out.append(closure_rows(tree, kin, constraint, a0))
                row += (
                    3 * (2 if constraint.kind is ClosureKind.WELD else 1)
                    if constraint.rows is None
                    else len(constraint.rows)
                )
        if coupled:
            out.append(coupling_rows(tree, kin, c.joints, K[coupled, :], Kd_yd[coupled, 0], a0))
    return out
