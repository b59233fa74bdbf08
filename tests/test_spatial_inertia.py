"""The ten-parameter rigid inertia and the Newton-Euler body force of wbc.spatial.algebra against
the (6, 6) matrix forms they replace in the CRBA, RNEA and ABA, at random placements and motions,
on numbers (DM) and traced (SX): same values to rounding."""

from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

from wbc.spatial.algebra import (
    SE3,
    RigidInertia,
    act_inertia,
    cross_force,
    rigid_body_force,
    rigid_inertia,
    rotation_about_axis,
)
from wbc.spatial.lie import quaternion_to_rotation

TOL = 1e-12


def _random_inertia(rng: np.random.Generator, mass: float) -> np.ndarray:
    A = rng.normal(size=(3, 3))
    return rigid_inertia(mass, rng.normal(size=3), A @ A.T + 0.1 * np.eye(3))


def _random_placement(rng: np.random.Generator) -> SE3:
    q = rng.normal(size=4)
    R = np.array(ca.DM(quaternion_to_rotation(ca.DM(q / np.linalg.norm(q)))))
    return SE3(R, rng.normal(size=(3, 1)))


@pytest.mark.parametrize("seed", range(5))
def test_rigid_inertia_moves_and_adds_as_the_matrix(seed):
    """RigidInertia.act / + / times agree with act_inertia and the matrix product, composites of a
    massless body included."""
    rng = np.random.default_rng(seed)
    I1, I2 = _random_inertia(rng, 2.5), _random_inertia(rng, 0.0)
    X1, X2 = _random_placement(rng), _random_placement(rng)
    V = rng.normal(size=(6, 4))
    Y = RigidInertia.from_matrix(I1).act(X1) + RigidInertia.from_matrix(I2).act(X2)
    expected = np.array(act_inertia(X1, I1)) + np.array(act_inertia(X2, I2))
    np.testing.assert_allclose(np.array(Y.times(ca.DM(V))), expected @ V, rtol=0, atol=TOL * np.abs(expected).max())
    assert Y.m == 2.5


@pytest.mark.parametrize("mass", [3.0, 0.0])
def test_rigid_body_force_is_the_matrix_form(mass):
    """Newton-Euler about the CoM gives I a + v ×* (I v) (and v ×* (I v) without a)."""
    rng = np.random.default_rng(7)
    I = _random_inertia(rng, mass)
    v, a = ca.DM(rng.normal(size=(6, 1))), ca.DM(rng.normal(size=(6, 1)))
    bias = cross_force(v, ca.mtimes(I, v))
    for got, expected in [(rigid_body_force(I, v, a), ca.mtimes(I, a) + bias), (rigid_body_force(I, v), bias)]:
        np.testing.assert_allclose(np.array(got), np.array(expected), rtol=0, atol=TOL * 100)


def test_traced_forms_are_smaller_and_equal():
    """Traced for a revolute joint about z, the ten-parameter move and the CoM form take fewer
    operations than the matrix forms and evaluate to the same numbers."""
    rng = np.random.default_rng(11)
    I = _random_inertia(rng, 1.7)
    theta, v, a = ca.SX.sym("theta"), ca.SX.sym("v", 6), ca.SX.sym("a", 6)
    X = SE3(
        rotation_about_axis(np.array([0.0, 0.0, 1.0]), ca.cos(theta), ca.sin(theta)), np.array([[0.1], [0.0], [0.3]])
    )
    S = np.array([[0.0], [0.0], [0.0], [0.0], [0.0], [1.0]])
    moved = ca.Function("moved", [theta], [RigidInertia.from_matrix(I).act(X).times(S)])
    moved_matrix = ca.Function("moved_matrix", [theta], [ca.mtimes(act_inertia(X, I), S)])
    force = ca.Function("force", [v, a], [rigid_body_force(I, v, a)])
    force_matrix = ca.Function("force_matrix", [v, a], [ca.mtimes(I, a) + cross_force(v, ca.mtimes(I, v))])
    assert moved.n_instructions() < moved_matrix.n_instructions()
    assert force.n_instructions() < force_matrix.n_instructions()
    np.testing.assert_allclose(np.array(moved(0.7)), np.array(moved_matrix(0.7)), rtol=0, atol=1e-12)
    args = (rng.normal(size=6), rng.normal(size=6))
    np.testing.assert_allclose(np.array(force(*args)), np.array(force_matrix(*args)), rtol=0, atol=1e-12)
