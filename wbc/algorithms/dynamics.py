"""Rigid-body dynamics in Featherstone's form, in joint-local frames: RNEA, CRBA, ABA.

All functions take CasADi column vectors (``DM`` numbers or ``SX`` symbols) and return CasADi
expressions; :mod:`wbc.api` wraps them for numpy users and :mod:`wbc.codegen` compiles them.

External forces ``fext`` map a joint index to the spatial force (6, 1) acting on that joint's
body, expressed in the joint frame (as Pinocchio's ``fext``). Generalized forces follow
``M(q) q̈ + h(q, v) = τ + Σ Jᵢᵀ fextᵢ``.

Glossary (Featherstone / spatial_v2):
  ``liMi``  joint placement in its parent (``Xup``)     ``S``   motion subspace (6, nv_i)
  ``vJ``    joint velocity ``S q̇ᵢ``                    ``c``   velocity-product acceleration ``v × vJ``
  ``IA``    articulated-body inertia                    ``pA``  articulated-body bias force
  ``U``     ``IA S``                                    ``D``   ``Sᵀ IA S`` (nv_i, nv_i)
  ``u``     ``τᵢ − Sᵀ pA``                              ``Ic``  composite-rigid-body inertia, by its
                                                        ten parameters (``RigidInertia``)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import casadi as ca
import numpy as np

from ..model.model import Model
from ..model.reframe import reframed
from ..spatial.algebra import (
    RigidInertia,
    act_force,
    act_inertia,
    act_inv_motion,
    cross_motion,
    rigid_body_force,
    symmetric,
)
from .kinematics import TreeKinematics
from .linalg import spd_inverse

__all__ = [
    "rnea",
    "nonlinear_effects",
    "crba",
    "composite_inertias",
    "aba",
    "aba_with_accelerations",
    "ArticulatedBodies",
    "gravity_acceleration",
]

ForceMap = Mapping[int, object] | None


def gravity_acceleration(model: Model) -> np.ndarray:
    """The spatial acceleration (6, 1) of the world that stands in for gravity: ``[-g; 0]``."""
    return np.concatenate([-np.asarray(model.gravity), np.zeros(3)]).reshape(6, 1)


def _vj(kin: TreeKinematics, i: int, x):
    j = kin.model.joints[i]
    return ca.mtimes(kin.S[i], x[j.idx_v : j.idx_v + j.nv])


def _own_kinematics(model: Model, q, v, fext: ForceMap) -> tuple[Model, TreeKinematics, ForceMap]:
    """The kinematics a recursion builds for itself: on the equivalent model with cheaper joint
    frames (:func:`wbc.model.reframe.reframed`; joint-space results are the same), the external
    forces re-expressed in its frames."""
    frames = reframed(model)
    if fext:
        fext = {i: frames.force_in_new_frame(i, f) for i, f in fext.items()}
    return frames.model, TreeKinematics(frames.model, q, v), fext


def rnea(model: Model, q, v, a, fext: ForceMap = None, kin: TreeKinematics | None = None):
    """Inverse dynamics ``τ = M q̈ + h − Σ Jᵀ fext`` (nv, 1), N m / N.

    Without ``kin``, the recursion runs on the equivalent model of :func:`wbc.model.reframe.reframed`.
    """
    if kin is None:
        model, kin, fext = _own_kinematics(model, q, v, fext)
    a = a if a.shape[1] == 1 else a.T
    acc = [gravity_acceleration(model)]
    f = [None] * model.njoints
    for i, j in enumerate(model.joints[1:], start=1):
        I = model.inertias[i]
        vi = kin.velocities[i]
        ai = act_inv_motion(kin.liMi[i], acc[j.parent]) + _vj(kin, i, a) + cross_motion(vi, _vj(kin, i, kin.v))
        acc.append(ai)
        f[i] = rigid_body_force(I, vi, ai)
        if fext and i in fext:
            f[i] = f[i] - fext[i]
    tau = [None] * model.njoints
    for i in range(model.njoints - 1, 0, -1):
        tau[i] = ca.mtimes(kin.S[i].T, f[i])
        p = model.joints[i].parent
        if p > 0:
            f[p] = f[p] + act_force(kin.liMi[i], f[i])
    return ca.vertcat(*tau[1:]) if model.njoints > 1 else ca.DM.zeros(0, 1)


def nonlinear_effects(model: Model, q, v, kin: TreeKinematics | None = None):
    """``h(q, v)`` (nv, 1): Coriolis, centrifugal and gravity generalized forces."""
    return rnea(model, q, v, ca.DM.zeros(model.nv, 1), kin=kin)


def crba(model: Model, q, kin: TreeKinematics | None = None):
    """The joint-space inertia matrix ``M(q)`` (nv, nv), symmetric (composite-rigid-body algorithm).

    Without ``kin``, the recursion runs on the equivalent model of :func:`wbc.model.reframe.reframed`.
    """
    if kin is None:
        model, kin, _ = _own_kinematics(model, q, None, None)
    Ic = composite_inertias(model, kin)
    M = ca.SX.zeros(model.nv, model.nv) if _symbolic(q) else ca.DM.zeros(model.nv, model.nv)
    for i in range(1, model.njoints):
        ji = model.joints[i]
        F = Ic[i].times(kin.S[i])
        sl_i = slice(ji.idx_v, ji.idx_v + ji.nv)
        M[sl_i, sl_i] = ca.mtimes(kin.S[i].T, F)
        k = i
        while model.joints[k].parent > 0:
            F = act_force(kin.liMi[k], F)
            k = model.joints[k].parent
            jk = model.joints[k]
            M[jk.idx_v : jk.idx_v + jk.nv, sl_i] = ca.mtimes(kin.S[k].T, F)
    return symmetric(M)


def composite_inertias(model: Model, kin: TreeKinematics) -> list[RigidInertia]:
    """Each body's composite (subtree) inertia in its joint frame, by its ten parameters.

    The constant parts of the children's moved inertias (:meth:`RigidInertia.moved`) are summed
    with the body's own inertia first, as numbers, and added once to the varying parts.
    """
    n = model.njoints
    constant = [RigidInertia.from_matrix(I) for I in model.inertias]
    varying: list[RigidInertia | None] = [None] * n
    Ic: list = [None] * n
    for i in range(n - 1, 0, -1):
        Ic[i] = constant[i] if varying[i] is None else varying[i] + constant[i]
        p = model.joints[i].parent
        if p > 0:
            moved, moved_constant = Ic[i].moved(kin.liMi[i])
            constant[p] = constant[p] + moved_constant
            varying[p] = moved if varying[p] is None else varying[p] + moved
    return Ic


def _symbolic(x) -> bool:
    return isinstance(x, (ca.SX, ca.MX))


@dataclass
class ArticulatedBodies:
    """The articulated-body quantities of one configuration, shared by the ABA, the IIM and the
    Delassus algorithms: they depend on ``q`` only.

    Attributes:
        kin: the kinematics they were computed from.
        IA: articulated-body inertia of each body in its joint frame (6, 6).
        U: ``IA S`` (6, nv_i).
        Dinv: ``D⁻¹ = (Sᵀ IA S)⁻¹`` (nv_i, nv_i).
        Ia: ``IA − U D⁻¹ Uᵀ``, what a body passes to its parent before transforming (6, 6).
    """

    kin: TreeKinematics
    IA: list
    U: list
    Dinv: list
    Ia: list

    @classmethod
    def compute(cls, model: Model, kin: TreeKinematics) -> ArticulatedBodies:
        n = model.njoints
        IA = [ca.DM(I) for I in model.inertias]
        U, Dinv, Ia = [None] * n, [None] * n, [None] * n
        for i in range(n - 1, 0, -1):
            S = kin.S[i]
            U[i] = ca.mtimes(IA[i], S)
            Dinv[i] = spd_inverse(ca.mtimes(S.T, U[i]))
            p = model.joints[i].parent
            UDinv = ca.mtimes(U[i], Dinv[i])
            Ia[i] = symmetric(IA[i] - ca.mtimes(UDinv, U[i].T))
            if p > 0:
                IA[p] = IA[p] + act_inertia(kin.liMi[i], Ia[i])
        return cls(kin, IA, U, Dinv, Ia)


def aba(
    model: Model,
    q,
    v,
    tau,
    fext: ForceMap = None,
    kin: TreeKinematics | None = None,
    bodies: ArticulatedBodies | None = None,
):
    """Forward dynamics ``q̈`` (nv, 1) by the articulated-body algorithm.

    ``tau`` (nv,) are the generalized forces of every degree of freedom (zeros on a free-flyer).
    Without ``kin`` and ``bodies``, the recursion runs on the equivalent model of
    :func:`wbc.model.reframe.reframed`.
    """
    if kin is None and bodies is None:
        model, kin, fext = _own_kinematics(model, q, v, fext)
    kin = kin or TreeKinematics(model, q, v)
    return aba_with_accelerations(model, kin, bodies or ArticulatedBodies.compute(model, kin), tau, fext)[0]


def aba_with_accelerations(model: Model, kin: TreeKinematics, bodies: ArticulatedBodies, tau, fext: ForceMap = None):
    """The ABA's ``q̈`` (nv, 1) and every body's spatial acceleration in its joint frame, (6, 1) each,
    with the world's ``[−g; 0]`` included (the recursion's: gravity as an upward acceleration of the
    world, ``acc[0]``); ``kin`` and ``bodies`` of ``model`` itself."""
    tau = tau if tau.shape[1] == 1 else tau.T
    n = model.njoints
    c = [None] * n
    pA = [None] * n
    for i in range(1, n):
        vi = kin.velocities[i]
        c[i] = cross_motion(vi, _vj(kin, i, kin.v))
        pA[i] = rigid_body_force(model.inertias[i], vi)
        if fext and i in fext:
            pA[i] = pA[i] - fext[i]
    u = [None] * n
    for i in range(n - 1, 0, -1):
        j = model.joints[i]
        u[i] = tau[j.idx_v : j.idx_v + j.nv] - ca.mtimes(kin.S[i].T, pA[i])
        if j.parent > 0:
            pa = pA[i] + ca.mtimes(bodies.Ia[i], c[i]) + ca.mtimes(bodies.U[i], ca.mtimes(bodies.Dinv[i], u[i]))
            pA[j.parent] = pA[j.parent] + act_force(kin.liMi[i], pa)
    acc = [gravity_acceleration(model)] + [None] * (n - 1)
    qdd = [None] * n
    for i in range(1, n):
        j = model.joints[i]
        ai = act_inv_motion(kin.liMi[i], acc[j.parent]) + c[i]
        qdd[i] = ca.mtimes(bodies.Dinv[i], u[i] - ca.mtimes(bodies.U[i].T, ai))
        acc[i] = ai + ca.mtimes(kin.S[i], qdd[i])
    return (ca.vertcat(*qdd[1:]) if n > 1 else ca.DM.zeros(0, 1)), acc
