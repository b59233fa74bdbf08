"""The inertia-weighted input matrix ``B̂ = M⁻¹ B`` and the free acceleration ``a₀ = −M⁻¹ h``.

The input matrix is ``B = [Sᵀ, Kᵀ]`` (nv, n_actuated + m): the actuated degrees of freedom in
model order, then the rows of the link constraints in the order given (their forces ``λ`` act on
the constrained bodies as ``Kᵀ λ``). Then ``q̈ = a₀ + B̂ u`` for inputs ``u = (τ, λ)``.

Three methods, all traceable with ``SX``:

* ``"iim"`` — the Implicit Inversion Method (Krög, Gattringer, Müller), in Featherstone's terms:
  the articulated-body inertias of one ABA (:class:`~wbc.dynamics.ArticulatedBodies`) are
  computed once, then one backward pass carries every input's bias force up the tree
  (matrix-valued ``pA``, one column per input, ``pA_λ += X*(pA + U D⁻¹ u)``) and one forward pass
  turns them into accelerations (``q̈ᵢ = D⁻¹(uᵢ − Uᵀ aᵢ)``). The paper's ``T*ᵢₚ`` is the
  articulated force propagator ``X*(I − U D⁻¹ Sᵀ)``, its ``M*ᵢ`` the articulated-body inertia
  ``IA`` and ``M_Rᵢ = D``. No mass matrix, no inverse, no repeated forward dynamics.
* ``"eufm"`` — the extended unit force method: ``m + 1`` complete forward-dynamics runs, column
  ``k`` being ``ABA(u = e_k) − ABA(u = 0)``.
* ``"dense"`` — CRBA, LDLᵀ factorisation, solves.

Glossary: ``P`` input bias forces (6, n_inputs) per body, ``u`` their joint-space projection,
``A`` input-induced accelerations (6, n_inputs), ``Q`` rows of ``B̂`` for one joint.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

import casadi as ca
import numpy as np

from ..model import checks
from ..model.model import Model
from ..spatial.algebra import SE3, act_force, act_motion, compose
from ..spatial.lie import skew
from .constraints import ResolvedConstraint
from .dynamics import ArticulatedBodies, aba, crba
from .kinematics import TreeKinematics
from .linalg import ldlt, ldlt_solve

__all__ = [
    "InputMatrixMethod",
    "iim",
    "eufm",
    "dense",
    "input_matrix",
]


class InputMatrixMethod(enum.Enum):
    """How ``B̂ = M⁻¹B`` is computed (see the module docstring)."""

    IIM = "iim"  #: the Implicit Inversion Method (production)
    EUFM = "eufm"  #: extended unit force method, m + 1 forward-dynamics runs (baseline)
    DENSE = "dense"  #: CRBA, LDLᵀ, solves (baseline)


def _zeros(like, rows: int, cols: int):
    return ca.SX(rows, cols) if isinstance(like, ca.SX) else ca.DM(rows, cols)


def _input_columns(
    model: Model, constraints: Sequence[ResolvedConstraint]
) -> tuple[dict[int, list[tuple[int, int]]], list[int]]:
    """Columns of B: for each actuated joint its (dof, column) pairs; the first column of each constraint."""
    actuated: dict[int, list[tuple[int, int]]] = {}
    col = 0
    for i in model.actuated:
        j = model.joints[i]
        actuated[i] = [(k, col + k) for k in range(j.nv)]
        col += j.nv
    starts = []
    for c in constraints:
        starts.append(col)
        col += c.dim
    return actuated, starts


def _root_frame_placements(model: Model, kin: TreeKinematics) -> tuple[int, list]:
    """The frame the IIM works in and every joint frame's placement in it.

    A floating base's own frame (the free-flyer's motion subspace is the identity there and the
    placements do not depend on the base pose), else the world frame.
    """
    r = 1 if model.floating_base else 0
    rMi: list = [None] * model.njoints
    rMi[0] = kin.liMi[0]
    for i, j in enumerate(model.joints[1:], start=1):
        if i == r:
            rMi[i] = SE3(np.eye(3), np.zeros((3, 1)))
        elif j.parent == r or j.parent == 0:
            rMi[i] = kin.liMi[i]
        else:
            rMi[i] = compose(rMi[j.parent], kin.liMi[i])
    return r, rMi


def _aligned_wrench_basis(kin: TreeKinematics, rMi: list, r: int, joint: int):
    """Forces (6, 6), in the common frame, of unit world-axis forces and torques at ``joint``'s origin."""
    Rt = kin.oMi[r].R.T if r > 0 else ca.DM.eye(3)  # world axes -> common-frame axes
    lever = skew(rMi[joint].p)
    return ca.vertcat(ca.horzcat(Rt, ca.DM.zeros(3, 3)), ca.horzcat(ca.mtimes(lever, Rt), Rt))


def _input_groups(constraints: Sequence[ResolvedConstraint], first: int):
    """Internal input columns for the constraints: one 6D wrench basis per body carrying more than
    six rows (then recombined), else the rows themselves.

    Returns ``(groups, n_internal)``, each group ``(joint, internal_start, basis, members)`` with
    ``basis`` True for a wrench basis (6 columns) and members ``[constraint index]``.
    """
    rows_on: dict[int, int] = {}
    for c in constraints:
        rows_on[c.joint] = rows_on.get(c.joint, 0) + c.dim
    groups, col = [], first
    wrench_group: dict[int, int] = {}
    for k, c in enumerate(constraints):
        if rows_on[c.joint] > 6:
            if c.joint not in wrench_group:
                wrench_group[c.joint] = len(groups)
                groups.append((c.joint, col, True, []))
                col += 6
            groups[wrench_group[c.joint]][3].append(k)
        else:
            groups.append((c.joint, col, False, [k]))
            col += c.dim
    return groups, col


def iim(
    model: Model,
    kin: TreeKinematics,
    constraints: Sequence[ResolvedConstraint],
    bodies: ArticulatedBodies | None = None,
):
    """``B̂`` (nv, n_actuated + m) by the Implicit Inversion Method (see the module docstring).

    The two passes run in one common frame (the floating base's, else the world's), so a body's
    input forces and accelerations move to its parent with additions only; ``U`` and ``S`` are
    moved to that frame once per body. The block ``M⁻¹`` of the actuated joints is symmetric, so
    only its upper triangle is propagated; a body with more than six constraint rows receives a
    6D wrench basis whose responses are then combined into its rows. The forward pass forms a body's
    (6, k) acceleration only where that is cheaper than reaching it through its children's ``Uᵀ``
    (:func:`_accelerations`; Talos with two 6D feet: 37.0k -> 31.0k operations).
    """
    bodies = bodies or ArticulatedBodies.compute(model, kin)
    n, n_act = model.njoints, model.n_actuated
    r, rMi = _root_frame_placements(model, kin)
    actuated, _ = _input_columns(model, [])
    groups, ncol = _input_groups(constraints, n_act)
    # A constraint's rows act on its body as the forces Kᵀ = diag(R, R)ᵀ Gᵀ: world-axis wrenches at
    # the body's joint origin (the columns of W, in the common frame) combined by the sparse Gᵀ.
    P = [_zeros(kin.q, 6, ncol) for _ in range(n)]
    W = {j: _aligned_wrench_basis(kin, rMi, r, j) for j in {c.joint for c in constraints}}
    G = [c.aligned_rows(kin) for c in constraints]
    for joint, start, basis, members in groups:
        if basis:
            P[joint][:, start : start + 6] = -W[joint]
        else:
            k = members[0]
            P[joint][:, start : start + constraints[k].dim] = -ca.mtimes(W[joint], G[k].T)
    S = [None] + [act_motion(rMi[i], kin.S[i]) for i in range(1, n)]
    U = [None] + [act_force(rMi[i], bodies.U[i]) for i in range(1, n)]
    # Columns each body must carry: below an actuated joint whose subtree is all actuated, only the
    # torque columns of later joints (the rest follow from the symmetry of M⁻¹) and the forces.
    all_actuated = [False] * n
    for i in range(n - 1, 0, -1):
        all_actuated[i] = i in actuated and all(all_actuated[c] for c in model.children(i))
    first_col = {i: pairs[0][1] for i, pairs in actuated.items()}
    cols = [range(ncol)] + [range(first_col[i], ncol) if all_actuated[i] else range(ncol) for i in range(1, n)]
    u = [None] * n
    for i in range(n - 1, 0, -1):
        j = model.joints[i]
        E = _zeros(kin.q, j.nv, ncol)
        for dof, col in actuated.get(i, ()):
            E[dof, col] = 1
        u[i] = E - ca.mtimes(S[i].T, P[i])
        if j.parent > 0:
            P[j.parent] = P[j.parent] + P[i] + ca.mtimes(U[i], ca.mtimes(bodies.Dinv[i], u[i]))
    out = _zeros(kin.q, model.nv, ncol)
    owner = np.zeros(ncol, dtype=int)  # the body each input column acts on
    for i, pairs in actuated.items():
        for _, col in pairs:
            owner[col] = i
    for joint, start, basis, members in groups:
        owner[start : start + (6 if basis else constraints[members[0]].dim)] = joint
    for i, Q in enumerate(_accelerations(model, S, U, bodies.Dinv, u, cols, owner)):
        if Q is not None:
            j = model.joints[i]
            out[j.idx_v : j.idx_v + j.nv, cols[i].start :] = Q
    # Lower triangle of the actuated block, from its upper triangle: entry (row of i's dof a, column
    # of k's dof b) = entry (row of k's dof b, column of i's dof a), for k < i. One gather over the
    # column-major entries (sources and targets are disjoint), not one assignment per pair of
    # joints: each assignment costs the size of the matrix (a 200-body tree traced 3 s in them).
    targets, sources = [], []
    nv = model.nv
    for i in actuated:
        if not all_actuated[i]:
            continue
        ji = model.joints[i]
        for k in actuated:
            if k < i:
                jk = model.joints[k]
                for a in range(ji.nv):
                    for b in range(jk.nv):
                        targets.append((first_col[k] + b) * nv + ji.idx_v + a)
                        sources.append((first_col[i] + a) * nv + jk.idx_v + b)
    if targets:
        flat = ca.vec(out)
        flat[targets] = flat[sources]
        out = ca.reshape(flat, nv, ncol)
    # Output columns: torques, then every constraint's rows (wrench groups recombined).
    blocks = [out[:, 0:n_act]] if n_act else []
    by_constraint: dict[int, object] = {}
    for _, start, basis, members in groups:
        if basis:
            for k in members:
                by_constraint[k] = ca.mtimes(out[:, start : start + 6], G[k].T)
        else:
            k = members[0]
            by_constraint[k] = out[:, start : start + constraints[k].dim]
    blocks += [by_constraint[k] for k in range(len(constraints))]
    return ca.horzcat(*blocks) if blocks else _zeros(kin.q, model.nv, 0)


def eufm(model: Model, q, v, constraints: Sequence[ResolvedConstraint]):
    """``B̂`` by the extended unit force method: ``m + 1`` independent forward-dynamics runs."""
    actuated, _starts = _input_columns(model, constraints)
    zero_tau = _zeros(q, model.nv, 1)

    def run(tau=None, fext=None):
        return aba(model, q, v, zero_tau if tau is None else tau, fext)  # a fresh, complete ABA

    a0 = run()
    Ks = [c.local_matrix(TreeKinematics(model, q, v)) for c in constraints]  # the inputs, not part of the runs
    cols = []
    for i, pairs in actuated.items():
        j = model.joints[i]
        for dof, _ in pairs:
            tau = _zeros(q, model.nv, 1)
            tau[j.idx_v + dof] = 1
            cols.append(run(tau=tau) - a0)
    for c, K in zip(constraints, Ks):
        for r in range(c.dim):
            # the unit force of row r, as the spatial force Kᵀ e_r on the constrained body
            cols.append(run(fext={c.joint: K[r, :].T}) - a0)
    return ca.horzcat(*cols) if cols else _zeros(q, model.nv, 0)


def dense(model: Model, kin: TreeKinematics, constraints: Sequence[ResolvedConstraint]):
    """``B̂`` by CRBA, LDLᵀ and solves with ``B = [Sᵀ, Jᵀ]``."""
    M = crba(model, kin.q, kin=kin)
    B = [ca.DM(model.actuation_matrix())] + [c.jacobian(kin).T for c in constraints]
    return ldlt_solve(ldlt(M), ca.horzcat(*B))


def input_matrix(
    model: Model,
    kin: TreeKinematics,
    constraints: Sequence[ResolvedConstraint],
    method: InputMatrixMethod = InputMatrixMethod.IIM,
):
    """``B̂`` by ``method`` (an :class:`InputMatrixMethod`), as a CasADi expression."""
    method = checks.option(InputMatrixMethod, method, "method")
    if method is InputMatrixMethod.IIM:
        return iim(model, kin, constraints)
    if method is InputMatrixMethod.EUFM:
        v = kin.v if kin.v is not None else _zeros(kin.q, model.nv, 1)
        return eufm(model, kin.q, v, constraints)
    return dense(model, kin, constraints)


def _restrict(X, have: range, want: range):
    """The columns ``want`` of ``X``, whose columns are ``have`` (``want`` a tail of ``have``)."""
    return X[:, want.start - have.start :]


#: The longest run of bodies whose accelerations are left unformed (a bound on the search, and on the
#: terms of one body's ``Uᵀ a``: past a dozen the 6-row update is cheaper anyway).
_MAX_UNFORMED = 16


def _is_identity(X) -> bool:
    """Whether ``X`` is the constant 6x6 identity."""
    if X.shape != (6, 6) or (isinstance(X, ca.SX) and not X.is_constant()):
        return False
    return bool(np.array_equal(np.array(ca.evalf(X) if isinstance(X, ca.SX) else ca.DM(X)), np.eye(6)))


def _materialized(model: Model, S: list, U: list, cols: list, owner: np.ndarray, last: list[int]) -> list[bool]:
    """Which bodies' input-induced accelerations the forward pass forms as (6, k) matrices.

    Every other body's is only ever seen through its children's ``Uᵀ`` (see :func:`_accelerations`).
    Chosen by a dynamic programme over (body, nearest formed ancestor), leaves first, minimising the
    operations counted from the structural non-zeros of ``S`` and ``U`` and the columns carried.
    """
    n = model.njoints
    nv = [j.nv for j in model.joints]
    nnz_S = [0] + [S[i].nnz() for i in range(1, n)]
    nnz_U = [0] + [U[i].nnz() for i in range(1, n)]
    identity = [False] + [_is_identity(S[i]) for i in range(1, n)]  # a free-flyer root: a = q̈, no products
    children = [model.children(i) for i in range(n)]
    ancestors: list[list[int]] = [[]] + [[] for _ in range(1, n)]  # strict ancestors, nearest first, 0 last
    for i in range(1, n):
        p = model.joints[i].parent
        ancestors[i] = [p, *ancestors[p]] if p > 0 else [0]
    # cost[i][m], formed[i][m]: fewest operations for i's subtree when m is i's nearest formed ancestor
    cost: list[dict[int, float]] = [{} for _ in range(n)]
    choice: list[dict[int, bool]] = [{} for _ in range(n)]
    for i in range(n - 1, 0, -1):
        k = len(cols[i])
        for d, m in enumerate(ancestors[i][:_MAX_UNFORMED]):
            between = ancestors[i][:d]
            k_out = 0
            if m > 0:  # columns of inputs outside the path's top subtree: Φᵢ a_m (see _accelerations)
                r = between[-1] if between else i
                k_out = int(np.count_nonzero((owner[cols[i].start :] < r) | (owner[cols[i].start :] > last[r])))
            per_column = (2 * nnz_U[i] if m > 0 else 0) + sum(2 * nv[i] * nv[a] for a in between) + 2 * nv[i] * nv[i]
            own = (k - k_out) * per_column + k_out * 12 * nv[i]
            own += sum(11 * nv[i] * nv[a] for a in between)  # the couplings Uᵀ S, once
            own += 12 * nv[i] * (len(between) + 1) if m > 0 else 0  # Φᵢ, once
            if not children[i]:
                cost[i][m], choice[i][m] = own, False
                continue
            forming = 0 if (m == 0 and not between and identity[i]) else k * 2 * sum(nnz_S[a] for a in [*between, i])
            form = own + forming + sum(cost[c][i] for c in children[i])
            skip = own + sum(cost[c].get(m, float("inf")) for c in children[i])
            cost[i][m], choice[i][m] = (form, True) if form <= skip else (skip, False)
    formed = [False] * n
    stack = [(i, 0) for i in children[0]]
    while stack:
        i, m = stack.pop()
        formed[i] = choice[i][m]
        stack += [(c, i if formed[i] else m) for c in children[i]]
    return formed


def _accelerations(model: Model, S: list, U: list, Dinv: list, u: list, cols: list, owner: np.ndarray) -> list:
    """The forward pass of the IIM: each body's rows ``Q`` of ``B̂`` over its columns ``cols[i]``.

    ``q̈ᵢ = D⁻¹(uᵢ − Uᵢᵀ a_λ)`` needs the parent's input-induced acceleration ``a_λ`` only through
    ``Uᵢᵀ a_λ``. With ``a_λ = a_m + Σ_a S_a q̈_a`` over the bodies ``a`` between the nearest ancestor
    ``m`` whose ``a_m`` is formed (6, k) and ``λ``, ``Uᵢᵀ a_λ = Uᵢᵀ a_m + Σ_a (Uᵢᵀ S_a) q̈_a``: two
    operations per column and body on the path instead of a 6-row update per body. Which bodies form
    ``a`` is chosen by :func:`_materialized`.

    An input acting outside the subtree of ``r``, the body below ``m`` on the path, has ``u = 0`` on
    the whole path: its columns are ``q̈ᵢ = Φᵢ a_m`` with ``Φᵢ = −D⁻¹(Uᵢᵀ + Σ_a (Uᵢᵀ S_a) Φ_a)``
    (nv_i, 6), formed once per body: one row-times-vector per column, whatever the path's length.
    ``owner`` (n_columns,) is the body each input column acts on.
    """
    n = model.njoints
    parent = [j.parent for j in model.joints]
    last = list(range(n))  # the last body of each subtree (bodies are in depth-first order)
    for i in range(n - 1, 0, -1):
        if parent[i] > 0:
            last[parent[i]] = max(last[parent[i]], last[i])
    formed = _materialized(model, S, U, cols, owner, last)
    anchor = [0] * n  # nearest formed strict ancestor, 0 for none (the universe: a = 0)
    Q: list = [None] * n
    A: list = [None] * n
    Phi: list = [None] * n
    for i in range(1, n):
        p = parent[i]
        anchor[i] = p if (p > 0 and formed[p]) else anchor[p] if p > 0 else 0
        m, c = anchor[i], cols[i]
        between, k = [], p
        while k != m:
            between.append(k)
            k = parent[k]
        ui = u[i][:, c.start :]
        Am = _restrict(A[m], cols[m], c) if m > 0 else None
        coupling = {a: ca.mtimes(U[i].T, S[a]) for a in between}
        if m > 0:
            r = between[-1] if between else i
            outside = (owner[c.start :] < r) | (owner[c.start :] > last[r])
            psi = U[i].T
            for a in between:
                psi = psi + ca.mtimes(coupling[a], Phi[a])
            Phi[i] = -ca.mtimes(Dinv[i], psi)
        else:
            outside = np.zeros(len(c), dtype=bool)
        inner, outer = np.flatnonzero(~outside).tolist(), np.flatnonzero(outside).tolist()
        Qi = _zeros(ui, ui.shape[0], ui.shape[1])
        if outer:
            Qi[:, outer] = ca.mtimes(Phi[i], Am[:, outer])
        if inner:
            y = ca.mtimes(U[i].T, Am[:, inner]) if m > 0 else None
            for a in between:
                term = ca.mtimes(coupling[a], _restrict(Q[a], cols[a], c)[:, inner])
                y = term if y is None else y + term
            Qi[:, inner] = ca.mtimes(Dinv[i], ui[:, inner] if y is None else ui[:, inner] - y)
        Q[i] = Qi
        if formed[i]:
            Ai = ca.mtimes(S[i], Q[i])
            for a in between:
                Ai = Ai + ca.mtimes(S[a], _restrict(Q[a], cols[a], c))
            A[i] = Ai if m == 0 else Am + Ai
    return Q
