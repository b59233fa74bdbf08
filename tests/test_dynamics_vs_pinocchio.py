"""Rigid-body dynamics against Pinocchio at 20 random states per robot: CRBA, nonlinear effects,
RNEA and ABA, with and without external forces; and internal consistency (ABA = M⁻¹(τ − h),
RNEA inverts ABA, RNEA = M a + h)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.helpers import assert_close, oracle_cases, random_state, random_states, robot_case, tree_case

N_STATES = 20

# Catalog robots in their default base, plus fixed-base Talos (root link welded to the world).
ROBOTS = [("talos", None), ("g1", None), ("g1_with_hands", None), ("panda", None), ("allegro", None), ("talos", False)]


def _force_frames(case, rng) -> list[str]:
    """Frames to push on: the catalog's feet or hands plus one random frame, or 3 random tree frames."""
    if case.spec is not None:
        named = list(case.spec.feet or case.spec.hands)
        others = [f.name for f in case.model.frames[1:] if f.name not in named]
        return named + [str(rng.choice(others))]
    return [str(x) for x in rng.choice([f.name for f in case.model.frames], size=3, replace=False)]


def _check_dynamics(case, seed: int) -> None:
    m, pm = case.model, case.pin_model
    pd = pm.createData()
    rng = np.random.default_rng(seed)
    for where, (q, v, a, tau) in random_states(case, rng, N_STATES):
        M = wbc.eager.crba(m, q)
        np.testing.assert_array_equal(M, M.T, err_msg=f"{where}: M is not symmetric")
        assert_close(M, oracle.symmetrized(pin.crba(pm, pd, q)), what=f"{where} CRBA")
        h = wbc.eager.nonlinear_effects(m, q, v)
        assert_close(h, pin.nonLinearEffects(pm, pd, q, v), what=f"{where} nonlinear effects")
        tau_id = wbc.eager.rnea(m, q, v, a)
        assert_close(tau_id, pin.rnea(pm, pd, q, v, a), what=f"{where} RNEA")
        qdd = wbc.eager.aba(m, q, v, tau)
        assert_close(qdd, pin.aba(pm, pd, q, v, tau), what=f"{where} ABA")

        fext = {name: 10.0 * rng.normal(size=6) for name in _force_frames(case, rng)}
        pf = oracle.external_forces(case.pin_model, fext)
        assert_close(
            wbc.eager.rnea(m, q, v, a, fext), pin.rnea(pm, pd, q, v, a, pf), what=f"{where} RNEA with fext {list(fext)}"
        )
        assert_close(
            wbc.eager.aba(m, q, v, tau, fext),
            pin.aba(pm, pd, q, v, tau, pf),
            what=f"{where} ABA with fext {list(fext)}",
        )

        # internal consistency, from the same numbers
        assert_close(qdd, np.linalg.solve(M, tau - h), what=f"{where} ABA vs solve(CRBA, tau - h)")
        assert_close(tau_id, M @ a + h, what=f"{where} RNEA vs M a + h")


@pytest.mark.parametrize("build,seed", oracle_cases(ROBOTS, catalog_seed=20, tree_seed_offset=100))
def test_dynamics_vs_pinocchio(build, seed):
    """CRBA, h, RNEA, ABA (with and without external forces: on the feet / hands and a random frame of
    a catalog robot, on 3 random frames of a tree) equal Pinocchio's to 1e-9 at 20 random states, on
    catalog robots, random trees with every joint type (fixed and floating) and random trees with
    ball joints (``JointModelSpherical``); ABA equals solve(CRBA, τ − h)."""
    _check_dynamics(build(), seed)


def test_rnea_inverts_aba():
    """RNEA(q, v, ABA(q, v, τ, f), f) = τ with external forces, on a random floating tree."""
    case = tree_case(4, 10, True)
    m = case.model
    rng = np.random.default_rng(21)
    for _ in range(3):
        q, v, _, tau = random_state(m, rng)
        fext = {m.frames[-1].name: rng.normal(size=6), m.frames[5].name: rng.normal(size=6)}
        assert_close(wbc.eager.rnea(m, q, v, wbc.eager.aba(m, q, v, tau, fext), fext), tau, what="RNEA(ABA(tau))")


def test_external_force_is_jacobian_transpose():
    """A LOCAL wrench w on a frame enters the dynamics as J_LOCALᵀ w: RNEA(q, v, a) − RNEA(q, v, a, {f: w})
    = Jᵀ w (also for a frame on the universe of a fixed-base model, where it does nothing)."""
    for fb in (True, False):
        m = tree_case(4, 10, fb).model
        rng = np.random.default_rng(22)
        q, v, a, _ = random_state(m, rng)
        base = wbc.eager.rnea(m, q, v, a)
        for f in (m.frames[0], m.frames[1], m.frames[-1]):
            w = rng.normal(size=6)
            J = wbc.eager.frame_jacobian(m, q, f.name, wbc.ReferenceFrame.LOCAL)
            assert_close(base - wbc.eager.rnea(m, q, v, a, {f.name: w}), J.T @ w, tol=1e-12, what=f"fext on {f.name}")


def test_gravity_only_matches_pinocchio_generalized_gravity():
    """h(q, 0) is the generalized gravity (Pinocchio's computeGeneralizedGravity) on Talos' default
    posture, and ABA at rest with τ = h gives zero acceleration."""
    case = robot_case("talos")
    m, pm = case.model, case.pin_model
    q = case.spec.q0
    g = wbc.eager.nonlinear_effects(m, q, np.zeros(m.nv))
    assert_close(g, pin.computeGeneralizedGravity(pm, pm.createData(), q), what="gravity")
    assert_close(wbc.eager.aba(m, q, np.zeros(m.nv), g), np.zeros(m.nv), what="ABA holding against gravity")
