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
from ..kinematics import ReferenceFrame, TreeKinematics

__all__ = ["ClusterKinematics"]


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
