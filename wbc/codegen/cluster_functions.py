"""Traced functions of the clustered-model algorithms, to compile with :mod:`wbc.codegen`.

Each ``*_function(cm, ...)`` traces one algorithm for one :class:`~wbc.ClusterModel` into a
``casadi.Function`` whose inputs are plain vectors: ``y`` the spanning configuration (tree.nq),
``v``/``a``/``tau`` independent vectors (nv); outputs are declared with their shapes (a vector
``qdd`` (nv,), a matrix ``B̂`` (nv, n_actuated + m) even with one column). Compile with
:func:`wbc.codegen.compile_function`::

    aba = wbc.codegen.compile_function(wbc.cluster_functions.c_aba_function(cm))
    (qdd,) = aba(y, v, tau)

``method`` of the inverse-dynamics, forward-dynamics and Delassus builders: ``"cluster"`` (C-RNEA,
C-ABA, C-EFPA), ``"approximate"`` (independent tree with armature, loops ignored), ``"projected"``
(``Gᵀ H G`` of the spanning tree) or, for forward dynamics, ``"lagrange"`` (KKT on spanning
coordinates); see :mod:`wbc.algorithms.clusters.baselines`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import casadi as ca

from ..algorithms.clusters import baselines as bl
from ..algorithms.clusters import dynamics as cdyn
from ..algorithms.clusters import operational as op
from ..algorithms.clusters.kinematics import ClusterKinematics
from ..algorithms.constraints import Constraint, resolve
from ..errors import InputError
from ..model.clusters import ClusterModel
from .trace import trace

__all__ = [
    "INVERSE_METHODS",
    "FORWARD_METHODS",
    "DELASSUS_METHODS",
    "c_rnea_function",
    "c_aba_function",
    "c_efpa_function",
    "c_iim_function",
    "c_free_acceleration_and_input_matrix_function",
    "cluster_name",
]

INVERSE_METHODS = ("cluster", "approximate", "projected")
FORWARD_METHODS = ("cluster", "approximate", "projected", "lagrange")
DELASSUS_METHODS = ("cluster", "approximate", "projected")


def cluster_name(cm: ClusterModel, what: str) -> str:
    """A kernel name for ``what`` on ``cm`` (sizes included; sanitized by :func:`trace`)."""
    return f"{what}_{cm.name}_{cm.tree.nq}_{cm.nv}"


def _check(method: str, methods: Sequence[str]) -> None:
    if method not in methods:
        raise InputError(f"unknown method {method!r}; choose one of {', '.join(methods)}")


def c_rnea_function(cm: ClusterModel, method: str = "cluster") -> ca.Function:
    """``(y, v, a) -> tau``: constrained inverse dynamics (independent generalized forces)."""
    algorithms: dict[str, Callable[..., Any]] = {
        "cluster": cdyn.rnea,
        "projected": bl.projected_rnea,
        "approximate": bl.approximate_rnea,
    }
    return _dynamics_function(cm, method, INVERSE_METHODS, "crnea", algorithms, "a", "tau")


def c_aba_function(cm: ClusterModel, method: str = "cluster") -> ca.Function:
    """``(y, v, tau) -> qdd``: constrained forward dynamics."""
    algorithms: dict[str, Callable[..., Any]] = {
        "cluster": cdyn.aba,
        "projected": bl.projected_aba,
        "lagrange": bl.lagrange_aba,
        "approximate": bl.approximate_aba,
    }
    return _dynamics_function(cm, method, FORWARD_METHODS, "caba", algorithms, "tau", "qdd")


def _dynamics_function(
    cm: ClusterModel,
    method: str,
    methods: Sequence[str],
    name: str,
    algorithms: Mapping[str, Callable[..., Any]],
    last: str,
    out: str,
) -> ca.Function:
    """``(y, v, last) -> out`` (nv,) by ``algorithms[method](model, y, v, last)``: ``model`` is ``cm``,
    or for ``"approximate"`` its approximate model (built once, here)."""
    _check(method, methods)
    model = bl.ApproximateModel.build(cm) if method == "approximate" else cm
    algorithm = algorithms[method]
    return trace(
        cluster_name(cm, f"{name}_{method}"),
        [("y", cm.tree.nq), ("v", cm.nv), (last, cm.nv)],
        lambda y, v, x: [algorithm(model, y, v, x)],
        [(out, cm.nv)],
    )


def c_efpa_function(
    cm: ClusterModel, constraints: Sequence[Constraint], method: str = "cluster", cse: bool = True
) -> ca.Function:
    """``y -> Λ⁻¹``: the Delassus matrix (m, m) of link constraints on the spanning tree's bodies."""
    _check(method, DELASSUS_METHODS)
    resolved = resolve(cm.tree, constraints)
    m = sum(c.dim for c in resolved)
    if method == "cluster":
        build = lambda y: op.efpa(cm, ClusterKinematics(cm, y), resolved)  # noqa: E731
    elif method == "projected":
        build = lambda y: bl.projected_efpa(cm, y, resolved)  # noqa: E731
    else:
        am = bl.ApproximateModel.build(cm)
        build = lambda y: bl.approximate_efpa(am, y, constraints)  # noqa: E731
    return _function_of_y(cm, f"cefpa_{method}_{len(resolved)}c{m}", build, ("delassus", (m, m)), cse)


def c_iim_function(cm: ClusterModel, constraints: Sequence[Constraint] = (), method: str = "cluster") -> ca.Function:
    """``y -> B̂``: ``M⁻¹ [Sᵀ, Jᵀ]`` (nv, n_actuated + m) in independent coordinates."""
    _check(method, ("cluster", "approximate"))
    resolved = resolve(cm.tree, constraints)
    m = sum(c.dim for c in resolved)
    if method == "cluster":
        build = lambda y: op.iim(cm, ClusterKinematics(cm, y), resolved)  # noqa: E731
    else:
        am = bl.ApproximateModel.build(cm)
        build = lambda y: bl.approximate_iim(am, y, constraints)  # noqa: E731
    return _function_of_y(cm, f"ciim_{method}_{len(resolved)}c{m}", build, ("Bhat", (cm.nv, cm.n_actuated + m)))


def _function_of_y(
    cm: ClusterModel, name: str, build: Callable[[Any], Any], output: tuple[str, tuple[int, int]], cse: bool = True
) -> ca.Function:
    """``y -> output``: ``build(y)`` traced as the kernel ``name`` of ``cm``; ``output`` is (name, shape)."""
    return trace(cluster_name(cm, name), [("y", cm.tree.nq)], lambda y: [build(y)], [output], cse=cse)


def c_free_acceleration_and_input_matrix_function(
    cm: ClusterModel, constraints: Sequence[Constraint] = ()
) -> ca.Function:
    """``(y, v) -> (a0, B̂)``: the C-ABA's free acceleration and the clustered IIM sharing their
    articulated-cluster inertias (what a controller's step needs)."""
    resolved = resolve(cm.tree, constraints)

    def build(y, v):
        kin = ClusterKinematics(cm, y, v)
        bodies = cdyn.ClusterArticulatedBodies.compute(cm, kin)
        a0 = cdyn.aba(cm, y, v, ca.SX.zeros(cm.nv, 1), kin=kin, bodies=bodies)
        return [a0, op.iim(cm, kin, resolved, bodies)]

    m = sum(c.dim for c in resolved)
    return trace(
        cluster_name(cm, f"ca0_bhat_{len(resolved)}c{m}"),
        [("y", cm.tree.nq), ("v", cm.nv)],
        build,
        [("a0", cm.nv), ("Bhat", (cm.nv, cm.n_actuated + m))],
    )
