"""Traced functions of the clustered-model algorithms, to compile with :mod:`wbc.codegen`.

Each ``*_function(cm, ...)`` traces one algorithm for one :class:`~wbc.ClusterModel` into a
``casadi.Function`` whose inputs are plain vectors: ``y`` the spanning configuration (tree.nq),
``v``/``a``/``tau`` independent vectors (nv). Compile with :func:`wbc.kernels.compile_kernel`::

    aba = wbc.kernels.compile_kernel(wbc.cluster_kernels.c_aba_function(cm))
    (qdd,) = aba(y, v, tau)

Method names of the baselines: ``"approximate"`` (rotor inertias as diagonal armature on the
independent tree, loops ignored), ``"projected"`` (``Gᵀ H G`` of the spanning tree, dense
factorisation), ``"lagrange"`` (KKT system on spanning coordinates).
"""

from __future__ import annotations

import casadi as ca

from ..algorithms.clusters import dynamics as cdyn
from ..model.clusters import ClusterModel
from .trace import trace

__all__ = ["c_rnea_function", "c_aba_function", "cluster_name"]


def cluster_name(cm: ClusterModel, what: str) -> str:
    """A kernel name for ``what`` on ``cm`` (sizes included; sanitized by :func:`trace`)."""
    return f"{what}_{cm.name}_{cm.tree.nq}_{cm.nv}"


def c_rnea_function(cm: ClusterModel) -> ca.Function:
    """``(y, v, a) -> tau``: C-RNEA, constrained inverse dynamics (independent forces)."""
    return trace(
        cluster_name(cm, "crnea"),
        [("y", cm.tree.nq), ("v", cm.nv), ("a", cm.nv)],
        lambda y, v, a: [cdyn.rnea(cm, y, v, a)],
        ["tau"],
    )


def c_aba_function(cm: ClusterModel) -> ca.Function:
    """``(y, v, tau) -> qdd``: C-ABA, constrained forward dynamics."""
    return trace(
        cluster_name(cm, "caba"),
        [("y", cm.tree.nq), ("v", cm.nv), ("tau", cm.nv)],
        lambda y, v, tau: [cdyn.aba(cm, y, v, tau)],
        ["qdd"],
    )
