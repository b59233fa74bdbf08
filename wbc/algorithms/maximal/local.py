"""The recursion with each loop eliminated where it closes: ``MaximalMethod.RECURSIVE``.

The notes' leaves-to-root elimination (:mod:`.recursive`) is extended by the loop rows: a loop row
block ``l`` touches a few bodies, whose closest common ancestor ``C_l`` (the ground when they hang
from different roots) is where the loop *closes*. Below ``C_l`` the block is *pending*: each body
``i`` on the way carries the coefficient ``G_i,l`` (6, k_l) of the loop's multipliers ``ν_l`` in its
equation, and the loop keeps a Schur block ``Λ`` and right-hand side ``b̂``:

    M̂ᵢ aᵢ + Tᵢ μᵢ + Σ_l G_i,l ν_l = f̂ᵢ,        Σ_bodies G_i,lᵀ aᵢ + Σ_l' Λ_l,l' ν_l' = b̂_l.

Eliminating body ``i`` and its joint (``Πᵢ = M̂ᵢ⁻¹ − Yᵢ Eᵢ⁻¹ Yᵢᵀ``, the rest as in :mod:`.recursive`):

    Λ −= Gᵢᵀ Πᵢ Gᵢ,   b̂ −= Gᵢᵀ (wᵢ − Yᵢ sᵢ),   G_λ += Xᵢ* Tᵢ Eᵢ⁻¹ Yᵢᵀ Gᵢ   (to the parent; the ground: to b̂)

and at ``C_l`` the loop's multipliers are eliminated from the body's equation (a small Schur
complement, ``k_l x k_l``; ``Λ`` is negative definite, so ``M̂`` stays positive definite):

    M̂ −= G_L Λ_LL⁻¹ G_Lᵀ,   f̂ −= G_L Λ_LL⁻¹ b̂_L,   and the same for the loops still pending.

Root to leaves, ``ν_L = Λ_LL⁻¹ (b̂_L − G_Lᵀ a_C − Λ_LP ν_P)`` is read right after ``a_C``. A loop's
columns live only between its bodies and ``C_l``: the cost is ``O(n + Σ_l k_l · length_l + Σ k_l³)``,
linear in the bodies and in the loops when loops are local (a parallel ankle, a four-bar, a gear), and
the fill-in of the factorization stays inside each loop (:attr:`.structure.Ordering.RECURSIVE`).

Glossary: ``G`` pending coefficients (per body, per loop), ``Lam`` Schur blocks ``Λ`` per loop pair,
``bhat`` per loop, ``Pi`` = ``Πᵢ``, ``home`` = ``C_l``; the rest as :mod:`.recursive`.
"""

from __future__ import annotations

import casadi as ca
import numpy as np

from ...spatial.algebra import Matrix, act_force, act_inertia, act_inv_motion, symmetric
from ..linalg import ldlt, ldlt_solve, spd_inverse
from .recursive import augmentation
from .system import MaximalSystem

__all__ = ["common_ancestor", "loop_homes", "local_solve"]


def common_ancestor(parent: tuple[int, ...], bodies: list[int]) -> int:
    """The closest common ancestor (a joint index, 0 for the ground) of ``bodies``."""
    paths = []
    for b in bodies:
        path = []
        while b > 0:
            path.append(b)
            b = parent[b]
        paths.append(set(path) | {0})
    shared = set.intersection(*paths) if paths else {0}
    return max(shared)  # ancestors have smaller indices (depth-first numbering)


def loop_homes(system: MaximalSystem) -> list[int]:
    """``C_l`` of each loop row block: the closest common ancestor of the bodies it touches, the ground
    included (a loop through the ground closes there: below it, nothing would hold its rows)."""
    parent = system.model.parents
    return [common_ancestor(parent, [b for b, _ in blk.terms] + ([0] if blk.grounded else [])) for blk in system.loops]


def _block(Lam: dict, rows: list[int], cols: list[int], sizes: list[int]) -> Matrix:
    """The block matrix ``[Λ_r,c]`` (zeros where absent) of loops ``rows`` x ``cols``."""
    out = []
    for r in rows:
        row = []
        for c in cols:
            key = (r, c) if r <= c else (c, r)
            blk = Lam.get(key)
            if blk is None:
                blk = ca.DM.zeros(sizes[r], sizes[c])
            elif r > c:
                blk = blk.T
            row.append(blk)
        out.append(ca.horzcat(*row))
    return ca.vertcat(*out)


def _add(store: dict, key, value) -> None:
    store[key] = value if key not in store else store[key] + value


def local_solve(system: MaximalSystem) -> tuple[list, list, Matrix]:
    """The KKT system by the recursion, loops eliminated at their common ancestors.

    Returns:
        ``(a, mu, nu)`` as :func:`~wbc.algorithms.maximal.recursive.recursive_solve`.
    """
    model, kin = system.model, system.kin
    n = model.njoints
    rho = augmentation(system)
    loops = system.loops
    sizes = [blk.size for blk in loops]
    homes = loop_homes(system)
    Mhat: list = [ca.DM(I) for I in model.inertias]
    fhat: list = list(system.d)
    G: list[dict] = [dict() for _ in range(n)]
    for l, blk in enumerate(loops):
        for body, coef in blk.terms:
            _add(G[body], l, coef.T)
    Lam: dict = {}
    bhat: dict = {l: blk.rhs for l, blk in enumerate(loops)}
    saved: list = [None] * n  # per body: what the forward pass needs
    closing: list = [None] * n  # per body: the loops eliminated there
    for i in range(n - 1, 0, -1):
        here = [l for l in range(len(loops)) if homes[l] == i]
        pending = [l for l in sorted(G[i]) if homes[l] != i]
        if here:
            closing[i] = _close(Mhat, fhat, G[i], Lam, bhat, i, here, pending, sizes)
        T, m = system.T[i], system.m[i]
        M = Mhat[i] if rho[i] == 0.0 else Mhat[i] + rho[i] * ca.DM(T @ T.T)
        Minv = spd_inverse(symmetric(M))
        y = ca.mtimes(Minv, fhat[i])
        p = model.joints[i].parent
        X = kin.liMi[i]
        if m:
            Y = ca.mtimes(Minv, T)
            Einv = spd_inverse(symmetric(ca.mtimes(T.T, Y)))
            s = ca.mtimes(Einv, ca.mtimes(Y.T, fhat[i]) - system.c[i])
            Pi = symmetric(Minv - ca.mtimes(ca.mtimes(Y, Einv), Y.T))
            free = y - ca.mtimes(Y, s)
        else:
            Y = Einv = s = None
            Pi, free = Minv, y
        for a_idx, l in enumerate(pending):
            for l2 in pending[a_idx:]:
                _add(Lam, (l, l2), -ca.mtimes(ca.mtimes(G[i][l].T, Pi), G[i][l2]))
            bhat[l] = bhat[l] - ca.mtimes(G[i][l].T, free)
        if m:
            K = ca.mtimes(ca.mtimes(T, Einv), Y.T)  # 6x6: Tᵢ Eᵢ⁻¹ Yᵢᵀ
            G_up = {l: act_force(X, ca.mtimes(K, G[i][l])) for l in pending}
            if p > 0:
                P = ca.mtimes(ca.mtimes(T, Einv if rho[i] == 0.0 else Einv - rho[i] * np.eye(m)), T.T)
                Mhat[p] = Mhat[p] + act_inertia(X, symmetric(P))
                sigma = s if rho[i] == 0.0 else s + rho[i] * system.c[i]
                fhat[p] = fhat[p] + act_force(X, ca.mtimes(T, sigma))
                for l, g in G_up.items():
                    _add(G[p], l, g)
            else:  # the ground's acceleration is known: its coupling goes to the right-hand side
                for l, g in G_up.items():
                    bhat[l] = bhat[l] - ca.mtimes(g.T, system.a0)
        saved[i] = (Minv, Y, Einv, s, y, pending)
    # loops closing at the ground
    ground = [l for l in range(len(loops)) if homes[l] == 0]
    nu: dict = {}
    if ground:
        sol = ldlt_solve(ldlt(_block(Lam, ground, ground, sizes)), ca.vertcat(*[bhat[l] for l in ground]))
        off = 0
        for l in ground:
            nu[l] = sol[off : off + sizes[l]]
            off += sizes[l]
    a: list = [system.a0] + [None] * (n - 1)
    mu: list = [None] * n
    for i in range(1, n):
        Minv, Y, Einv, s, y, pending = saved[i]
        p = model.joints[i].parent
        Gnu = None
        for l in pending:
            term = ca.mtimes(G[i][l], nu[l])
            Gnu = term if Gnu is None else Gnu + term
        T, m = system.T[i], system.m[i]
        if m:
            Ta = ca.mtimes(T.T, act_inv_motion(kin.liMi[i], a[p]))
            mu_t = s - ca.mtimes(Einv, Ta)
            if Gnu is not None:
                mu_t = mu_t - ca.mtimes(Einv, ca.mtimes(Y.T, Gnu))
            a[i] = y - ca.mtimes(Y, mu_t)
            mu[i] = mu_t if rho[i] == 0.0 else mu_t + rho[i] * (Ta + system.c[i])
        else:
            a[i], mu[i] = y, ca.DM.zeros(0, 1)
        if Gnu is not None:
            a[i] = a[i] - ca.mtimes(Minv, Gnu)
        if closing[i] is not None:
            _reopen(closing[i], a[i], nu, sizes)
    nu_all = ca.vertcat(*[nu[l] for l in range(len(loops))]) if loops else None
    return a, mu, nu_all


def _close(Mhat, fhat, Gi: dict, Lam: dict, bhat: dict, i: int, here, pending, sizes):
    """Eliminate the loops ``here`` (closing at body ``i``) from its equation; returns what the
    forward pass needs to recover their multipliers."""
    GL = ca.horzcat(*[Gi[l] if l in Gi else ca.DM.zeros(6, sizes[l]) for l in here])
    factor = ldlt(_block(Lam, here, here, sizes))
    bL = ca.vertcat(*[bhat[l] for l in here])
    LamLP = {l: _block(Lam, here, [l], sizes) for l in pending}
    Mhat[i] = Mhat[i] - symmetric(ca.mtimes(GL, ldlt_solve(factor, GL.T)))
    fhat[i] = fhat[i] - ca.mtimes(GL, ldlt_solve(factor, bL))
    solved_G = {l: ldlt_solve(factor, LamLP[l]) for l in pending}  # Λ_LL⁻¹ Λ_Ll
    for a_idx, l in enumerate(pending):
        Gi[l] = Gi[l] - ca.mtimes(GL, solved_G[l])
        bhat[l] = bhat[l] - ca.mtimes(LamLP[l].T, ldlt_solve(factor, bL))
        for l2 in pending[a_idx:]:
            _add(Lam, (l, l2), -ca.mtimes(LamLP[l].T, solved_G[l2]))
    for l in here:
        Gi.pop(l, None)
    return here, factor, GL, bL, LamLP


def _reopen(closed, a_i, nu: dict, sizes) -> None:
    """``ν_L = Λ_LL⁻¹ (b̂_L − G_Lᵀ a_C − Λ_LP ν_P)`` for the loops closed at this body."""
    here, factor, GL, bL, LamLP = closed
    rhs = bL - ca.mtimes(GL.T, a_i)
    for l, blk in LamLP.items():
        rhs = rhs - ca.mtimes(blk, nu[l])
    sol = ldlt_solve(factor, rhs)
    off = 0
    for l in here:
        nu[l] = sol[off : off + sizes[l]]
        off += sizes[l]
