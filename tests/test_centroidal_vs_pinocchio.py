"""Centre of mass and centroidal momentum against Pinocchio at 20 random states per robot: CoM, CoM
Jacobian, CoM drift, centroidal momentum matrix and its drift; floating and fixed bases."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import wbc
from tests.helpers import (
    BALL_TREE_CASES,
    TREE_CASES,
    assert_close,
    ball_tree_case,
    random_state,
    robot_case,
    tree_case,
)

N_STATES = 20

# Catalog robots in their default base (panda and allegro are fixed), plus fixed-base Talos and
# floating Panda.
ROBOTS = [
    ("talos", None),
    ("g1", None),
    ("g1_with_hands", None),
    ("panda", None),
    ("allegro", None),
    ("talos", False),
    ("panda", True),
]


def _check_centroidal(case, seed: int) -> None:
    m, pm = case.model, case.pin_model
    pd = pm.createData()
    rng = np.random.default_rng(seed)
    for i in range(N_STATES):
        q, v, _, _ = random_state(m, rng)
        where = f"{case.name} state {i}"
        assert_close(wbc.eager.center_of_mass(m, q), pin.centerOfMass(pm, pd, q), what=f"{where} CoM")
        assert_close(wbc.eager.com_jacobian(m, q), pin.jacobianCenterOfMass(pm, pd, q), what=f"{where} CoM Jacobian")
        pin.centerOfMass(pm, pd, q, v, 0 * v)
        assert_close(wbc.eager.com_drift(m, q, v), pd.acom[0], what=f"{where} CoM drift")
        assert_close(
            wbc.eager.centroidal_map(m, q), pin.computeCentroidalMap(pm, pd, q), what=f"{where} centroidal map"
        )
        pin.computeCentroidalMomentumTimeVariation(pm, pd, q, v, 0 * v)
        assert_close(wbc.eager.centroidal_drift(m, q, v), pd.dhg.vector, what=f"{where} centroidal drift")


@pytest.mark.parametrize("name,floating_base", ROBOTS, ids=[f"{n}-{fb}" for n, fb in ROBOTS])
def test_catalog_centroidal_vs_pinocchio(name, floating_base):
    """CoM, CoM Jacobian, CoM drift, A_g and Ȧ_g v equal Pinocchio's to 1e-9 at 20 random states."""
    _check_centroidal(robot_case(name, floating_base), seed=30)


@pytest.mark.parametrize("floating_base", [True, False], ids=["floating", "fixed"])
@pytest.mark.parametrize("seed,n", TREE_CASES)
def test_random_tree_centroidal_vs_pinocchio(seed, n, floating_base):
    """The same on random trees (the fixed-base root link is welded to the world, as Pinocchio's)."""
    _check_centroidal(tree_case(seed, n, floating_base), seed=seed + 200)


@pytest.mark.parametrize("seed,n,floating_base", BALL_TREE_CASES)
def test_ball_joint_tree_centroidal_vs_pinocchio(seed, n, floating_base):
    """The same on random trees with ball joints (``JointModelSpherical``) among the other types."""
    _check_centroidal(ball_tree_case(seed, n, floating_base), seed=seed + 200)


def test_com_jacobian_and_centroidal_map_are_consistent():
    """Internal: the linear rows of A_g are M J_com (momentum = mass × CoM velocity) and the CoM
    position is the mass-weighted mean of the body CoMs (Pinocchio-independent), fixed and floating."""
    for fb in (True, False):
        m = tree_case(4, 10, fb).model
        q, _v, _, _ = random_state(m, np.random.default_rng(31))
        A, J = wbc.eager.centroidal_map(m, q), wbc.eager.com_jacobian(m, q)
        assert_close(A[0:3], m.total_mass * J, tol=1e-12, what=f"A_g linear rows (floating={fb})")
        mass_com = np.zeros(3)
        for f in m.frames:
            if f.kind is wbc.FrameKind.JOINT:
                I = m.inertias[f.joint]
                c_local = np.array([I[5, 1], I[3, 2], I[4, 0]])  # m c of the body, joint frame
                T = wbc.eager.frame_placement(m, q, f.name)  # joint frames sit at the joint (identity placement)
                mass_com += T[0:3, 0:3] @ c_local + I[0, 0] * T[0:3, 3]
        assert_close(
            wbc.eager.center_of_mass(m, q),
            mass_com / m.total_mass,
            tol=1e-12,
            what=f"CoM as mean of the moving bodies' CoMs (floating={fb})",
        )
