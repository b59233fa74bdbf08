"""Maximal-coordinate forward dynamics (the fast-dynamics lecture notes): every body a free rigid
body, every joint, loop closure and coupling a constraint, the KKT system solved by the notes' O(n)
recursion (loops: a Schur complement) or, as the baseline, by one dense solve; the joint reaction
wrenches come with the accelerations.

* :mod:`.subspaces` what each joint forbids (``T``) and its force basis (``D``);
* :mod:`.system` the KKT system of one state, loop rows included;
* :mod:`.local` the recursion, each loop eliminated where it closes (``RECURSIVE``); :mod:`.recursive`
  the tree recursion with one Schur complement for all loops (``SCHUR``); :mod:`.dense` the naive solve;
* :mod:`.dynamics` :func:`maximal_dynamics` (CasADi), :class:`MaximalMethod`;
* :mod:`.structure` the KKT sparsity pattern and the fill-in of its factorization;
* :mod:`.numeric` the numpy API (``wbc.maximal_forward_dynamics``).
"""

from __future__ import annotations

from .dynamics import MaximalMethod, MaximalResult, maximal_dynamics, maximal_system

__all__ = ["MaximalMethod", "MaximalResult", "maximal_dynamics", "maximal_system"]
