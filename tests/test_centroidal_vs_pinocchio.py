"""Centre of mass and centroidal momentum against Pinocchio at 20 random states per robot: CoM, CoM
Jacobian, CoM drift, centroidal momentum matrix and its drift; floating and fixed bases."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import wbc
from tests.helpers import assert_close, oracle_cases, random_state, random_states, tree_case

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
    for where, (q, v, _, _) in random_states(case, np.random.default_rng(seed), N_STATES):
        assert_close(wbc.eager.center_of_mass(m, q), pin.centerOfMass(pm, pd, q), what=f"{where} CoM")
        assert_close(wbc.eager.com_jacobian(m, q), pin.jacobianCenterOfMass(pm, pd, q), what=f"{where} CoM Jacobian")
        pin.centerOfMass(pm, pd, q, v, 0 * v)
        assert_close(wbc.eager.com_drift(m, q, v), pd.acom[0], what=f"{where} CoM drift")
        assert_close(
            wbc.eager.centroidal_map(m, q), pin.computeCentroidalMap(pm, pd, q), what=f"{where} centroidal map"
        )
        pin.computeCentroidalMomentumTimeVariation(pm, pd, q, v, 0 * v)
        assert_close(wbc.eager.centroidal_drift(m, q, v), pd.dhg.vector, what=f"{where} centroidal drift")


@pytest.mark.parametrize("build,seed", oracle_cases(ROBOTS, catalog_seed=30, tree_seed_offset=200))
def test_centroidal_vs_pinocchio(build, seed):
    """CoM, CoM Jacobian, CoM drift, A_g and Ȧ_g v equal Pinocchio's to 1e-9 at 20 random states, on
    catalog robots, random trees (fixed and floating) and random trees with ball joints
    (``JointModelSpherical``) among the other types."""
    _check_centroidal(build(), seed)


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
