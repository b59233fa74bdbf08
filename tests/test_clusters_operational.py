"""C-EFPA (Delassus matrix) and the clustered IIM (``B̂ = M⁻¹ B``) against Pinocchio.

The oracle needs no ``G``: with ``P`` the top-left block of ``[H Kᵀ; K 0]⁻¹`` (Pinocchio's CRBA and
the declared loop rows rebuilt from Pinocchio's kinematics), ``G (Gᵀ H G)⁻¹ Gᵀ = P`` for any basis
of the loop's null space, so ``J M⁻¹ Jᵀ = J_s P J_sᵀ`` (``J_s`` Pinocchio's spanning-tree contact
Jacobians), ``M⁻¹ = P[ind, ind]`` and ``M⁻¹ Jᵀ = P[ind, :] J_sᵀ``.
"""

from __future__ import annotations

import numpy as np
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.cluster_cases import FAST, SLOW, case, evaluate, states
from tests.helpers import TOL_PIN, assert_close
from wbc.codegen import cluster_functions as ck


def _points(robot):
    return [wbc.PointConstraint(f, o) for f, o in robot.contacts]


@pytest.mark.parametrize("name", [*FAST, *SLOW])
def test_c_efpa_and_iim_against_pinocchio(name):
    c = case(name)
    cm, robot = c.model, c.robot
    cons = _points(robot)
    efpa, iim = ck.c_efpa_function(cm, cons), ck.c_iim_function(cm, cons)
    ind = np.asarray(cm.independent_v_indices)
    S = cm.actuation_matrix()
    for y, _, _, _ in states(cm):
        H, _, K, _ = oracle.kkt(c.pm, cm, y, np.zeros(c.pm.nv))
        P = oracle.kkt_inverse(H, K) if K.size else np.linalg.inv(H)
        J = oracle.contact_jacobian(c.pm, y, robot.contacts)
        (L,) = evaluate(efpa, y)
        assert_close(L, J @ P @ J.T, TOL_PIN, f"{name} C-EFPA")
        (B,) = evaluate(iim, y)
        assert_close(B, np.hstack([P[np.ix_(ind, ind)] @ S, P[ind] @ J.T]), TOL_PIN, f"{name} IIM")


def test_free_acceleration_and_input_matrix_share_the_pass():
    c = case("tello")
    cm = c.model
    cons = _points(c.robot)[:2]
    f = ck.c_free_acceleration_and_input_matrix_function(cm, cons)
    for y, v, _, _ in states(cm, 3):
        a0, B = evaluate(f, y, v)
        (ref,) = evaluate(ck.c_aba_function(cm), y, v, np.zeros(cm.nv))
        assert_close(a0, ref, 1e-12, "a0")
        (Bref,) = evaluate(ck.c_iim_function(cm, cons), y)
        assert_close(B, Bref, 1e-12, "B̂")


def test_welds_and_rows_on_rotors_and_rods():
    """Constraints on any spanning-tree body: a weld on a foot, a point on a rod, rows on a rotor."""
    c = case("g1_parallel_ankle")
    cm = c.model
    cons = [
        wbc.WeldConstraint("left_sole"),
        wbc.PointConstraint("left_ankle_rod0_rod", (0.0, 0.0, -0.05)),
        wbc.LinkConstraint("left_ankle_rod0_crank_joint_rotor", np.eye(6)[3:6], wbc.ReferenceFrame.LOCAL),
    ]
    (L,) = evaluate(ck.c_efpa_function(cm, cons), states(cm, 1)[0][0])
    y = states(cm, 1)[0][0]
    H, _, K, _ = oracle.kkt(c.pm, cm, y, np.zeros(c.pm.nv))
    P = oracle.kkt_inverse(H, K)
    J = oracle.constraint_jacobian(c.pm, y, cons)
    assert_close(L, J @ P @ J.T, TOL_PIN, "mixed constraints")
