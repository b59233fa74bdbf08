"""Kinematics of a clustered model: the spanning tree's, driven by independent velocities.

:class:`ClusterKinematics` evaluates, for a spanning configuration ``y`` (tree.nq) and
independent velocities ``v`` (nv), each cluster's ``G`` and ``g`` (see :mod:`wbc.model.clusters`),
the spanning velocities ``ẏ = G v`` and, through :class:`~wbc.algorithms.kinematics.TreeKinematics`
of the spanning tree, every body's placement and velocity. Jacobians in independent coordinates
are the tree's times ``G``; drifts add the tree Jacobian times ``g`` to the tree's drift.

Glossary: ``G[k]``/``g[k]`` cluster ``k``'s explicit constraint Jacobian (ny_k, nv_k) and bias,
``yd`` spanning velocity (tree.nv), ``tree`` the spanning tree's kinematics.
"""

from __future__ import annotations

from functools import cached_property

import casadi as ca

from ...model.clusters import ClusterModel
from ...spatial.algebra import act_inv_motion, cross_motion
from ..kinematics import ReferenceFrame, TreeKinematics

__all__ = ["ClusterKinematics", "IndependentKinematics"]


def _column(x):
    return x if x is None or x.shape[1] == 1 else x.T


class ClusterKinematics:
    """Kinematic quantities of clustered model ``cm`` at ``(y, v)``; lazily computed, cached.

    Args:
        cm: the model.
        y: spanning configuration (tree.nq), loops closed.
        v: independent velocities (nv), or None for position-level queries.
    """

    def __init__(self, cm: ClusterModel, y, v=None) -> None:
        self.cm = cm
        self.y = _column(y)
        self.v = _column(v)
        self.G = [None if c.trivial else cm.G_block(k, self.y) for k, c in enumerate(cm.infos)]
        self.yd = None if self.v is None else self.spanning(self.v)  # tree order
        self.tree = TreeKinematics(cm.tree, self.y, self.yd)

    # ----------------------------------------------------------------------------- maps
    def _zeros(self, n: int, m: int = 1):
        return ca.SX(n, m) if isinstance(self.y, ca.SX) else ca.DM(n, m)

    def spanning(self, x):
        """Tree-sized ``G x`` (tree.nv, k) of independent-sized ``x`` (nv, k), in the tree's order."""
        cm = self.cm
        rows: list = [None] * cm.tree.nv
        for k, c in enumerate(cm.infos):
            xk = x[c.idx_v : c.idx_v + c.nv, :]
            block = xk if c.trivial else ca.mtimes(self.G[k], xk)
            for r, i in enumerate(cm.spanning_v_indices(k)):
                rows[i] = block[r, :]
        return ca.vertcat(*rows) if rows else self._zeros(0, x.shape[1])

    def project(self, t):
        """Independent-sized ``Gᵀ t`` (nv, k) of tree-sized ``t`` (tree.nv, k), tree order."""
        cm = self.cm
        parts = []
        for k, c in enumerate(cm.infos):
            tk = t[cm.spanning_v_indices(k), :]
            parts.append(tk if c.trivial else ca.mtimes(self.G[k].T, tk))
        return ca.vertcat(*parts) if parts else self._zeros(0, t.shape[1])

    @cached_property
    def g(self) -> list:
        """``g`` of each cluster (ny_k, 1), None where it vanishes (explicit clusters)."""
        if self.v is None:
            raise ValueError("ClusterKinematics was built without a velocity")
        return [None if c.explicit else self.cm.g_block(k, self.y, self.yd) for k, c in enumerate(self.cm.infos)]

    @cached_property
    def gamma(self):
        """All ``g`` stacked in the tree's order (tree.nv, 1), or None when every cluster is explicit."""
        cm = self.cm
        if all(c.explicit for c in cm.infos):
            return None
        rows: list = [0] * cm.tree.nv
        for k, gk in enumerate(self.g):
            if gk is not None:
                for r, i in enumerate(cm.spanning_v_indices(k)):
                    rows[i] = gk[r]
        return ca.vertcat(*rows)

    def spanning_acceleration(self, a):
        """``ÿ = G a + g`` (tree.nv, 1), tree order."""
        ydd = self.spanning(a)
        return ydd if self.gamma is None else ydd + self.gamma

    # ----------------------------------------------------------------------------- queries
    def frame_jacobian(self, frame: int, reference: ReferenceFrame):
        """Jacobian (6, nv) of frame ``frame`` with respect to the independent velocities."""
        return self.project(self.tree.frame_jacobian(frame, reference).T).T

    def frame_drift(self, frame: int, reference: ReferenceFrame):
        """Classical drift ``J̇ v`` (6, 1) of frame ``frame`` (independent coordinates)."""
        d = self.tree.frame_drift(frame, reference)
        if self.gamma is None:
            return d
        return d + ca.mtimes(self.tree.frame_jacobian(frame, reference), self.gamma)


class IndependentKinematics(TreeKinematics):
    """The spanning tree's kinematics seen in independent coordinates: what tasks and contacts use.

    It answers every query of :class:`~wbc.algorithms.kinematics.TreeKinematics` (placements,
    frame and body Jacobians, drifts, centre of mass, centroidal momentum) for a clustered model
    at ``(y, v)``: positions are the spanning tree's (``q`` is ``y``), velocities independent
    (``v``, nv), and

    * every Jacobian is the spanning tree's times ``G`` (nv columns: ``ẋ = J v``);
    * every drift is the acceleration at ``q̈ = 0``, i.e. at ``ÿ = g``: the body accelerations
      carry the constraint bias ``S_i g_i`` of each joint, so ``ẍ = J q̈ + drift`` exactly.

    Placements and velocities are shared with ``kin.tree`` (no second trace of them).

    Args:
        kin: the clustered kinematics at ``(y, v)`` (built with a velocity).
    """

    def __init__(self, kin: ClusterKinematics) -> None:
        if kin.v is None:
            raise ValueError("IndependentKinematics needs a ClusterKinematics built with a velocity")
        self.cluster = kin
        self.model = kin.cm.tree
        self.q = kin.y
        self.v = kin.v
        self.S = kin.tree.S

    @cached_property
    def liMi(self) -> list:
        return self.cluster.tree.liMi

    @cached_property
    def oMi(self) -> list:
        return self.cluster.tree.oMi

    @cached_property
    def velocities(self) -> list:
        return self.cluster.tree.velocities

    @cached_property
    def drift_accelerations(self) -> list:
        """Spatial acceleration of each body at ``ÿ = g`` (``q̈ = 0``), no gravity, (6, 1) each."""
        tree, gamma = self.cluster.tree, self.cluster.gamma
        if gamma is None:
            return tree.drift_accelerations
        out = [ca.DM.zeros(6, 1)]
        for i, j in enumerate(self.model.joints[1:], start=1):
            ci = cross_motion(tree.velocities[i], tree._vj(i)) + ca.mtimes(self.S[i], gamma[j.idx_v : j.idx_v + j.nv])
            out.append(ci if j.parent == 0 else act_inv_motion(self.liMi[i], out[j.parent]) + ci)
        return out

    def _vj(self, i: int):
        return self.cluster.tree._vj(i)

    def _assemble(self, cols: dict):
        """A spanning-tree Jacobian (6, tree.nv) from its columns, projected onto ``v``: (6, nv)."""
        return self.cluster.project(super()._assemble(cols).T).T
