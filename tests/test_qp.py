"""The QP layer's exact reductions against plain references, and the solvers against each other."""

from __future__ import annotations

import numpy as np
import pytest

from wbc.control import qp
from wbc.control.pieces import Group, Kind
from wbc.control.solvers import make_solver

FRICTION = Group(Kind.FRICTION, "foot")
LIMITS = Group(Kind.TORQUE_LIMIT, "torque_limit")


def random_problem(rng, n=12, k=9, m_eq=4, m_in=10, bounds=True, spd_block=True) -> qp.QPProblem:
    """A least-squares QP whose last ``m_eq`` equality columns form an SPD block (like the Delassus)."""
    A = rng.normal(size=(k, n)) * rng.uniform(0.01, 100, n)  # badly scaled columns, as torques vs forces
    b = rng.normal(size=k)
    r = 1e-8 * np.einsum("ij,ij->j", A, A) + 1e-12
    if spd_block:
        L = rng.normal(size=(m_eq, m_eq))
        A_eq = np.hstack([rng.normal(size=(m_eq, n - m_eq)), L @ L.T + m_eq * np.eye(m_eq)])
    else:
        A_eq = rng.normal(size=(m_eq, n))
    b_eq = rng.normal(size=m_eq)
    G = rng.normal(size=(m_in, n))
    h = rng.uniform(0.5, 2.0, m_in)
    lb = np.full(n, -np.inf)
    ub = np.full(n, np.inf)
    bound_groups = [None] * n
    if bounds:
        lb[: n // 2], ub[: n // 2] = -5.0, 5.0
        bound_groups[: n // 2] = [LIMITS] * (n // 2)
    eq_groups = [Group(Kind.CONTACT, "foot")] * m_eq
    return qp.QPProblem(A, b, r, A_eq, b_eq, G, h, lb, ub, {}, eq_groups, [FRICTION] * m_in, bound_groups)


def kkt_reference(p: qp.QPProblem) -> np.ndarray:
    n, m = p.n, p.A_eq.shape[0]
    K = np.block([[p.H, p.A_eq.T], [p.A_eq, np.zeros((m, m))]])
    return np.linalg.solve(K, np.concatenate([-p.g, p.b_eq]))[:n]


def test_equality_constrained_least_squares_is_the_kkt_solution():
    rng = np.random.default_rng(0)
    for _ in range(20):
        p = random_problem(rng)
        x = qp.equality_constrained_least_squares(p.A, p.b, p.r, p.A_eq, p.b_eq)
        ref = kkt_reference(p)
        assert np.abs(p.A_eq @ x - p.b_eq).max() < 1e-9
        assert abs(p.objective(x) - p.objective(ref)) <= 1e-9 * max(1.0, abs(p.objective(ref)))


def test_elimination_through_the_spd_block_gives_the_same_minimizer():
    rng = np.random.default_rng(1)
    for _ in range(20):
        p = random_problem(rng)
        k = p.n - p.A_eq.shape[0]
        x, f = qp.least_squares_by_elimination(p.A[:, :k], p.A[:, k:], p.b, p.A_eq[:, :k], p.A_eq[:, k:], p.b_eq, 1e-8)
        u = np.concatenate([x, f])
        ref = qp.equality_constrained_least_squares(p.A, p.b, p.r, p.A_eq, p.b_eq)
        assert np.abs(p.A_eq @ u - p.b_eq).max() < 1e-9
        assert abs(p.objective(u) - p.objective(ref)) <= 1e-9 * max(1.0, abs(p.objective(ref)))


def test_eliminate_equalities_preserves_the_qp():
    """Solving the reduced QP and recovering gives the full QP's solution (constraints active)."""
    rng = np.random.default_rng(2)
    solver = make_solver("quadprog")
    for _ in range(10):
        p = random_problem(rng, m_in=14)
        reduced, elimination = qp.eliminate_equalities(p)
        assert elimination is not None and reduced.A_eq.shape[0] == 0
        full = solver.solve(p, shortcut=False)
        solver.eliminate = False
        direct = solver.solve(p, shortcut=False)
        solver.eliminate = True
        assert full.found and direct.found
        assert np.abs(full.x - direct.x).max() <= 1e-7 * max(1.0, np.abs(direct.x).max())


def test_eliminate_equalities_declines_a_non_spd_block():
    rng = np.random.default_rng(3)
    p = random_problem(rng, spd_block=False)
    reduced, elimination = qp.eliminate_equalities(p)
    assert elimination is None and reduced is p


def test_jacobi_scaling_gives_a_unit_diagonal_and_the_same_solution():
    rng = np.random.default_rng(4)
    p = random_problem(rng)
    scaled, inv = qp.jacobi_scaled(p)
    assert np.allclose(np.diag(scaled.H), 1.0)
    x = qp.equality_constrained_least_squares(scaled.A, scaled.b, scaled.r, scaled.A_eq, scaled.b_eq) * inv
    ref = qp.equality_constrained_least_squares(p.A, p.b, p.r, p.A_eq, p.b_eq)
    assert np.abs(x - ref).max() <= 1e-8 * np.abs(ref).max()


@pytest.mark.parametrize("name", ["daqp", "proxqp", "quadprog", "osqp"])
def test_solvers_agree_with_quadprog_with_active_constraints(name):
    rng = np.random.default_rng(5)
    reference = make_solver("quadprog")
    solver = make_solver(name)
    for _ in range(5):
        p = random_problem(rng, m_in=16)
        ref = reference.solve(p, shortcut=False)
        sol = solver.solve(p)
        assert ref.found and sol.found, name
        assert p.violation(sol.x) < 1e-5
        # compare objectives: the solution is unique, but its sensitivity grows with the conditioning
        assert p.objective(sol.x) <= p.objective(ref.x) + 1e-6 * max(1.0, abs(p.objective(ref.x)))


def test_shortcut_is_taken_exactly_when_no_inequality_binds():
    rng = np.random.default_rng(6)
    p = random_problem(rng, m_in=4, bounds=False)
    p.h[:] = 1e6  # nothing can bind
    sol = make_solver("daqp").solve(p)
    assert sol.found and sol.unconstrained
    x_free = sol.x
    p.h[0] = p.G[0] @ x_free - 0.5  # now the free minimizer violates row 0
    sol = make_solver("daqp").solve(p)
    assert sol.found and not sol.unconstrained
    assert abs(p.G[0] @ sol.x - p.h[0]) < 1e-8, "the violated row becomes active"


def test_infeasible_problem_is_reported_not_solved():
    rng = np.random.default_rng(7)
    p = random_problem(rng, m_eq=2, m_in=2, bounds=False)
    p.G = np.vstack([p.G[0], -p.G[0]])
    p.h = np.array([-1.0, -1.0])  # g·u ≤ −1 and −g·u ≤ −1: empty
    for name in ("daqp", "quadprog"):
        assert not make_solver(name).solve(p).found, name


def test_without_and_soften_equalities():
    rng = np.random.default_rng(8)
    p = random_problem(rng)
    relaxed = p.without(Kind.TORQUE_LIMIT, Kind.FRICTION)
    assert relaxed.G.shape[0] == 0 and np.all(np.isinf(relaxed.lb)) and relaxed.A_eq.shape == p.A_eq.shape
    assert p.without(FRICTION).G.shape[0] == 0 and np.array_equal(p.without(FRICTION).lb, p.lb), "by group"
    assert p.without(Kind.CONTACT).A_eq.shape[0] == 0, "an equality kind drops the equalities"
    soft = p.soften_equalities(1e6)
    x = qp.equality_constrained_least_squares(soft.A, soft.b, soft.r, soft.A_eq, soft.b_eq)
    assert soft.A_eq.shape[0] == 0 and np.abs(p.A_eq @ x - p.b_eq).max() < 1e-3


def test_unknown_solver_is_a_clear_error():
    import wbc

    with pytest.raises(wbc.InputError, match="unknown solver"):
        make_solver("simplex-from-1947")
    assert make_solver(wbc.Solver.DAQP).name == make_solver("daqp").name == "daqp"


def test_qpsolvers_backends_are_an_enum_member_with_a_backend():
    """``Solver.QPSOLVERS`` with ``backend=``; the string ``"qpsolvers:<name>"`` resolves to the same."""
    import wbc

    pytest.importorskip("qpsolvers")
    a, b = make_solver(wbc.Solver.QPSOLVERS, backend="osqp"), make_solver("qpsolvers:osqp")
    assert type(a) is type(b) and a.name == b.name == "osqp"
    with pytest.raises(wbc.InputError, match="needs backend="):
        make_solver(wbc.Solver.QPSOLVERS)
    with pytest.raises(wbc.InputError, match="has no solver"):
        make_solver(wbc.Solver.QPSOLVERS, backend="simplex-from-1947")
