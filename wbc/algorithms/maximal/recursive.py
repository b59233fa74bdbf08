"""The lecture notes' recursive solve of the maximal-coordinate KKT system, leaves to root, and one
Schur complement for all loop rows (``MaximalMethod.SCHUR``; ``MaximalMethod.RECURSIVE`` runs the same
recursion with each loop eliminated where it closes, :mod:`.local`).

**Trees.** Eliminate each body and then its joint, from the leaves to the root. A body whose
children are eliminated satisfies ``M̂ᵢ aᵢ + Tᵢ μᵢ = f̂ᵢ`` (its own joint's constraint force left), so

    aᵢ = Wᵢ μᵢ + wᵢ,      Wᵢ = −M̂ᵢ⁻¹ Tᵢ,  wᵢ = M̂ᵢ⁻¹ f̂ᵢ                    (6x6 solve)

and its joint's rows ``Tᵢᵀ aᵢ − Tᵢᵀ Xᵢ a_λ = Tᵢᵀ cᵢ`` give the multiplier from the parent's motion

    μᵢ = Sᵢ a_λ + sᵢ,     Sᵢ = −Eᵢ⁻¹ Tᵢᵀ Xᵢ,  sᵢ = Eᵢ⁻¹ (Tᵢᵀ wᵢ − Tᵢᵀ cᵢ),  Eᵢ = Tᵢᵀ M̂ᵢ⁻¹ Tᵢ   (mᵢ x mᵢ)

(the notes' ``W, w, S, s`` with ``Cᵢⁱ = Tᵢᵀ``, ``C_λⁱ = −Tᵢᵀ Xᵢ``). Substituted into the parent's
equation, ``C_λⁱᵀ Sᵢ = Xᵢᵀ Pᵢ Xᵢ`` with ``Pᵢ = Tᵢ Eᵢ⁻¹ Tᵢᵀ`` adds to its block and ``−C_λⁱᵀ sᵢ`` to its
right-hand side:

    M̂_λ = I_λ + Σ_children Xᵢ* Pᵢ Xᵢ,   f̂_λ = d_λ + Σ_children Xᵢ* Tᵢ sᵢ.

(``Pᵢ = M̂ᵢ − M̂ᵢ Sᵢ (Sᵢᵀ M̂ᵢ Sᵢ)⁻¹ Sᵢᵀ M̂ᵢ`` is the articulated-body inertia: the recursion is the ABA's
backward pass reached from the constraint side.) Then root to leaves: ``μᵢ = Sᵢ a_λ + sᵢ``,
``aᵢ = Wᵢ μᵢ + wᵢ``, with ``a₀`` the ground's acceleration. Every solve is 6x6 or ``mᵢ x mᵢ``: the
cost is linear in the number of bodies.

A body whose own inertia is singular (massless, a point mass) can make ``M̂ᵢ`` singular although the
system is not (ABA's ``D = Sᵀ Iᴬ S`` stays invertible). For those bodies the joint's rows are added to
the body's equation, ``M̂ᵢ + ρ Tᵢ Tᵢᵀ`` (an exact rewriting, any ``ρ > 0``: ``Tᵢᵀ aᵢ`` is known from the
parent), and the parent receives ``Tᵢ (Eᵢ⁻¹ − ρ I) Tᵢᵀ``; ``ρ = 0`` everywhere else.

**Loops.** With ``A`` the tree's KKT matrix and ``B`` the loop rows, ``[A Bᵀ; B 0]`` is solved as
``Λ ν = B A⁻¹ r − b`` with ``Λ = B A⁻¹ Bᵀ`` (k x k), then ``x = A⁻¹ (r − Bᵀ ν)``: the tree
factorization reused for ``1 + k + 1`` right-hand sides. A loop column's forces sit on a few bodies,
so its backward pass runs along their ancestors only, and ``Λ`` reads its forward pass at the loop
bodies only (traced, the rest is never computed): ``O(n + k·depth + k³)`` operations.

Glossary: ``Minv`` = ``M̂ᵢ⁻¹``, ``Y`` = ``M̂ᵢ⁻¹ Tᵢ`` (= −W), ``Einv`` = ``Eᵢ⁻¹``, ``rho`` = ``ρᵢ``, ``y`` = ``wᵢ``,
``s`` = ``sᵢ``, ``sigma`` = the part of ``μᵢ`` that does not depend on ``a_λ``.
"""

from __future__ import annotations

import dataclasses

import casadi as ca
import numpy as np

from ...spatial.algebra import Matrix, act_force, act_inertia, act_inv_motion, symmetric
from ..linalg import ldlt, ldlt_solve, spd_inverse
from .system import MaximalSystem

__all__ = ["TreeFactor", "tree_solve", "recursive_solve", "augmentation"]

#: A body inertia whose smallest eigenvalue is below this fraction of its largest is treated as singular.
SINGULAR_INERTIA = 1e-9


def augmentation(system: MaximalSystem) -> list[float]:
    """``ρᵢ`` of each body: 0, or, for a body with a singular inertia, the mean diagonal of its
    subtree's inertias (a scale of the right order, model constant)."""
    model = system.model
    rho = [0.0] * model.njoints
    for i in range(1, model.njoints):
        I = np.asarray(model.inertias[i], float)
        eig = np.linalg.eigvalsh(I)
        if system.m[i] > 0 and eig[0] <= SINGULAR_INERTIA * max(eig[-1], 1e-300):
            scale = np.mean([np.mean(np.diag(model.inertias[k])) for k in model.subtree(i)])
            rho[i] = float(scale) if scale > 0 else 1.0
    return rho


@dataclasses.dataclass
class TreeFactor:
    """The configuration-dependent part of the recursion (no right-hand side), per body."""

    Minv: list
    Y: list
    Einv: list
    rho: list[float]

    @classmethod
    def compute(cls, system: MaximalSystem) -> TreeFactor:
        model, kin = system.model, system.kin
        n = model.njoints
        rho = augmentation(system)
        Mhat: list = [ca.DM(I) for I in model.inertias]
        Minv, Y, Einv = [None] * n, [None] * n, [None] * n
        for i in range(n - 1, 0, -1):
            T = system.T[i]
            M = Mhat[i] if rho[i] == 0.0 else Mhat[i] + rho[i] * (T @ T.T)
            Minv[i] = spd_inverse(symmetric(M))
            if T.shape[1] == 0:
                continue
            Y[i] = ca.mtimes(Minv[i], T)
            Einv[i] = spd_inverse(symmetric(ca.mtimes(T.T, Y[i])))
            G = Einv[i] if rho[i] == 0.0 else Einv[i] - rho[i] * np.eye(T.shape[1])
            p = model.joints[i].parent
            if p > 0:
                Mhat[p] = Mhat[p] + act_inertia(kin.liMi[i], symmetric(ca.mtimes(ca.mtimes(T, G), T.T)))
        return cls(Minv, Y, Einv, rho)


def tree_solve(system: MaximalSystem, factor: TreeFactor, d: list, c: list | None, a0) -> tuple[list, list]:
    """Solve the tree's KKT system for right-hand sides ``d`` (6, k) per body and ``c`` (mᵢ, k) per
    joint (None: zero), the ground accelerating at ``a0`` (6, k) (None: at rest).

    Returns:
        ``(a, mu)``: body accelerations (6, k) per body (``a[0] = a0``), joint multipliers (mᵢ, k).
    """
    model, kin = system.model, system.kin
    n = model.njoints
    k = next(x.shape[1] for x in d[1:] if x is not None) if n > 1 else 1
    fhat = [None if x is None else x for x in d]
    y, s = [None] * n, [None] * n
    for i in range(n - 1, 0, -1):
        T = system.T[i]
        fi = fhat[i]
        y[i] = ca.DM.zeros(6, k) if fi is None else ca.mtimes(factor.Minv[i], fi)
        if T.shape[1] == 0:
            continue
        ci = None if c is None else c[i]
        Ty = ca.mtimes(T.T, y[i])
        s[i] = ca.mtimes(factor.Einv[i], Ty if ci is None else Ty - ci)
        sigma = s[i] if factor.rho[i] == 0.0 or ci is None else s[i] + factor.rho[i] * ci
        p = model.joints[i].parent
        if p > 0 and not (isinstance(sigma, ca.DM) and sigma.is_zero()):
            push = act_force(kin.liMi[i], ca.mtimes(T, sigma))
            fhat[p] = push if fhat[p] is None else fhat[p] + push
    a: list = [ca.DM.zeros(6, k) if a0 is None else a0] + [None] * (n - 1)
    mu: list = [None] * n
    for i in range(1, n):
        T = system.T[i]
        if T.shape[1] == 0:
            a[i], mu[i] = y[i], ca.DM.zeros(0, k)
            continue
        Ta = ca.mtimes(T.T, act_inv_motion(kin.liMi[i], a[model.joints[i].parent]))
        mu_tilde = s[i] - ca.mtimes(factor.Einv[i], Ta)
        mu[i] = mu_tilde
        if factor.rho[i] != 0.0:
            ci = 0 if c is None else c[i]
            mu[i] = mu_tilde + factor.rho[i] * (Ta + ci)
        a[i] = y[i] - ca.mtimes(factor.Y[i], mu_tilde)
    return a, mu


def _loop_columns(system: MaximalSystem) -> tuple[list, list[int]]:
    """``Bᵀ`` as body right-hand sides (6, K) per body, and each block's first column."""
    n = system.model.njoints
    offsets = list(np.cumsum([0] + [blk.size for blk in system.loops]))
    K = offsets[-1]
    cols: list = [None] * n
    for blk, o in zip(system.loops, offsets):
        for body, coef in blk.terms:
            col = ca.horzcat(ca.DM.zeros(6, o), coef.T, ca.DM.zeros(6, K - o - blk.size))
            cols[body] = col if cols[body] is None else cols[body] + col
    return cols, offsets


def _apply_rows(system: MaximalSystem, a: list):
    """``B a`` (K, k) for body accelerations ``a`` (6, k)."""
    parts = []
    for blk in system.loops:
        acc = None
        for body, coef in blk.terms:
            term = ca.mtimes(coef, a[body])
            acc = term if acc is None else acc + term
        parts.append(acc)
    return ca.vertcat(*parts)


def recursive_solve(system: MaximalSystem) -> tuple[list, list, Matrix]:
    """The whole KKT system by the recursion (and the loops' Schur complement).

    Returns:
        ``(a, mu, nu)``: body accelerations (6, 1), joint multipliers (mᵢ, 1), loop multipliers
        (K, 1) (None without loops).
    """
    factor = TreeFactor.compute(system)
    if not system.loops:
        a, mu = tree_solve(system, factor, system.d, system.c, system.a0)
        return a, mu, None
    free, _ = tree_solve(system, factor, system.d, system.c, system.a0)
    cols, offsets = _loop_columns(system)
    Z, _ = tree_solve(system, factor, cols, None, None)
    Lam = symmetric(_apply_rows(system, Z))
    b = ca.vertcat(*[blk.rhs for blk in system.loops])
    nu = ldlt_solve(ldlt(Lam), _apply_rows(system, free) - b)
    d = list(system.d)
    for blk, o in zip(system.loops, offsets):
        nu_blk = nu[o : o + blk.size]
        for body, coef in blk.terms:
            d[body] = d[body] - ca.mtimes(coef.T, nu_blk)
    a, mu = tree_solve(system, factor, d, system.c, system.a0)
    return a, mu, nu
