"""The Lie-group module (wbc.spatial.lie) against the group axioms, against Pinocchio and against
scipy's matrix exponential, on numpy and on CasADi (traced, then evaluated)."""

from __future__ import annotations

import casadi as ca
import numpy as np
import pinocchio as pin
import pytest
from scipy.linalg import expm

from wbc.spatial import lie

#: Angles drawn for each case: generic, close to zero, close to a half turn, exactly a half turn.
ANGLE_KINDS = ("generic", "tiny", "near_pi", "pi")


def _angle(kind: str, rng: np.random.Generator) -> float:
    if kind == "generic":
        return float(rng.uniform(0.0, np.pi))
    if kind == "tiny":
        return float(10 ** rng.uniform(-12, -2))
    if kind == "near_pi":
        return float(np.pi - 10 ** rng.uniform(-12, -1))
    return float(np.pi)


def _rotation_vectors(kind: str, n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        axis = rng.normal(size=3)
        out.append(_angle(kind, rng) * axis / np.linalg.norm(axis))
    return out


def _same_rotation_vector(a: np.ndarray, b: np.ndarray, tol: float) -> bool:
    """Equal, or opposite half turns (both are logs of the same rotation)."""
    if np.abs(a - b).max() <= tol:
        return True
    return abs(np.linalg.norm(b) - np.pi) < 1e-6 and np.abs(a + b).max() <= tol


# casadi versions, traced once
_R = ca.SX.sym("R", 3, 3)
_p = ca.SX.sym("p", 3)
_w = ca.SX.sym("w", 3)
_nu = ca.SX.sym("nu", 6)
_q = ca.SX.sym("q", 4)
SYMBOLIC = {
    "log3": ca.Function("log3", [_R], [lie.log3(_R)]),
    "exp3": ca.Function("exp3", [_w], [lie.exp3(_w)]),
    "exp6": ca.Function("exp6", [_nu], list(lie.exp6(_nu))),
    "log6": ca.Function("log6", [_R, _p], [lie.log6(_R, _p)]),
    "quat": ca.Function("quat", [_R], [lie.rotation_to_quaternion(_R)]),
    "rot": ca.Function("rot", [_q], [lie.quaternion_to_rotation(_q)]),
}


@pytest.mark.parametrize("kind", ANGLE_KINDS)
def test_exp3_is_a_rotation_and_log3_inverts_it(kind):
    """exp3(ω) is orthonormal with determinant 1, and log3(exp3(ω)) = ω to 1e-15 at every angle
    (up to the sign of an exact half turn)."""
    for k, w in enumerate(_rotation_vectors(kind, 200, 1)):
        R = lie.exp3(w)
        assert np.abs(R @ R.T - np.eye(3)).max() < 4e-15, k  # a few ulps of round-off
        assert abs(np.linalg.det(R) - 1.0) < 4e-15, k
        assert _same_rotation_vector(lie.log3(R), w, 2e-15), (k, lie.log3(R), w)


@pytest.mark.parametrize("kind", ANGLE_KINDS)
def test_so3_against_pinocchio(kind):
    """exp3 and log3 equal Pinocchio's (Pinocchio's log3 is less accurate near π: 1e-10 there)."""
    for k, w in enumerate(_rotation_vectors(kind, 200, 2)):
        np.testing.assert_allclose(lie.exp3(w), pin.exp3(w), rtol=0, atol=1e-15, err_msg=str(k))
        R = pin.exp3(w)
        assert _same_rotation_vector(lie.log3(R), pin.log3(R), 1e-10), (k, lie.log3(R), pin.log3(R))


def test_so3_group_laws():
    """One-parameter subgroups, the inverse, and the adjoint action R exp3(ω) Rᵀ = exp3(R ω)."""
    rng = np.random.default_rng(3)
    for _ in range(200):
        w = rng.normal(size=3)
        a, b = rng.uniform(-1, 1, 2)
        np.testing.assert_allclose(lie.exp3(a * w) @ lie.exp3(b * w), lie.exp3((a + b) * w), atol=1e-14)
        np.testing.assert_allclose(lie.exp3(-w), lie.exp3(w).T, atol=1e-15)
        R = lie.exp3(rng.normal(size=3))
        np.testing.assert_allclose(R @ lie.exp3(w) @ R.T, lie.exp3(R @ w), atol=1e-14)


def test_skew_and_vee():
    rng = np.random.default_rng(4)
    for _ in range(50):
        w, x = rng.normal(size=3), rng.normal(size=3)
        np.testing.assert_allclose(lie.skew(w) @ x, np.cross(w, x), atol=1e-15)
        np.testing.assert_array_equal(lie.vee(lie.skew(w)), w)
        np.testing.assert_array_equal(lie.skew(w), pin.skew(w))


@pytest.mark.parametrize("kind", ANGLE_KINDS)
def test_se3_exp_and_log(kind):
    """exp6 equals scipy's matrix exponential of the twist to 1e-14, Pinocchio's exp6 to 1e-12
    (Pinocchio loses digits around 1e-4 rad), and log6 inverts it (angles below π)."""
    rng = np.random.default_rng(5)
    for k, w in enumerate(_rotation_vectors(kind, 150, 6)):
        nu = np.concatenate([rng.normal(size=3), w])
        X = np.zeros((4, 4))
        X[:3, :3], X[:3, 3] = lie.skew(w), nu[:3]
        E = expm(X)
        R, p = lie.exp6(nu)
        np.testing.assert_allclose(R, E[:3, :3], atol=1e-14, err_msg=str(k))
        np.testing.assert_allclose(p, E[:3, 3], atol=1e-13, err_msg=str(k))
        M = pin.exp6(pin.Motion(nu))
        np.testing.assert_allclose(R, M.rotation, atol=1e-12)
        np.testing.assert_allclose(p, M.translation, atol=1e-12)
        if kind != "pi":
            np.testing.assert_allclose(lie.log6(R, p), nu, atol=1e-12, err_msg=str(k))
            np.testing.assert_allclose(lie.log6(M.rotation, M.translation), pin.log6(M).vector, atol=1e-9)


def test_se3_group_laws():
    """exp6(−ν) is the inverse placement; exp6(aν) exp6(bν) = exp6((a + b)ν)."""
    rng = np.random.default_rng(7)
    for _ in range(100):
        nu = rng.normal(size=6)
        R, p = lie.exp6(nu)
        Ri, pi = lie.exp6(-nu)
        np.testing.assert_allclose(Ri, R.T, atol=1e-14)
        np.testing.assert_allclose(pi, -R.T @ p, atol=1e-13)
        a, b = rng.uniform(-1, 1, 2)
        Ra, pa = lie.exp6(a * nu)
        Rb, pb = lie.exp6(b * nu)
        Rab, pab = lie.exp6((a + b) * nu)
        np.testing.assert_allclose(Ra @ Rb, Rab, atol=1e-14)
        np.testing.assert_allclose(pa + Ra @ pb, pab, atol=1e-13)


@pytest.mark.parametrize("kind", ANGLE_KINDS)
def test_quaternions(kind):
    """rotation ↔ quaternion round trips, against Pinocchio's Quaternion (same coefficients up to sign)."""
    for w in _rotation_vectors(kind, 100, 8):
        R = lie.exp3(w)
        quat = lie.rotation_to_quaternion(R)
        assert abs(np.linalg.norm(quat) - 1) < 1e-15 and quat[3] >= 0
        np.testing.assert_allclose(lie.quaternion_to_rotation(quat), R, atol=1e-15)
        theirs = pin.Quaternion(R).coeffs()
        assert min(np.abs(quat - theirs).max(), np.abs(quat + theirs).max()) < 1e-15


@pytest.mark.parametrize("kind", ANGLE_KINDS)
def test_casadi_equals_numpy(kind):
    """The same functions traced with SX and evaluated give numpy's results (to round-off): the one
    implementation serves the compiled kernels and the numpy API."""
    rng = np.random.default_rng(9)
    for w in _rotation_vectors(kind, 50, 10):
        R = lie.exp3(w)
        nu = np.concatenate([rng.normal(size=3), w])
        np.testing.assert_allclose(np.array(SYMBOLIC["exp3"](w)), R, atol=1e-15)
        np.testing.assert_allclose(np.array(SYMBOLIC["log3"](R)).ravel(), lie.log3(R), atol=1e-15)
        Rs, ps = SYMBOLIC["exp6"](nu)
        Rn, pn = lie.exp6(nu)
        np.testing.assert_allclose(np.array(Rs), Rn, atol=1e-15)
        np.testing.assert_allclose(np.array(ps).ravel(), pn, atol=1e-15)
        if kind != "pi":
            np.testing.assert_allclose(np.array(SYMBOLIC["log6"](Rn, pn)).ravel(), lie.log6(Rn, pn), atol=1e-14)
        quat = lie.rotation_to_quaternion(R)
        np.testing.assert_allclose(np.array(SYMBOLIC["quat"](R)).ravel(), quat, atol=1e-15)
        np.testing.assert_allclose(np.array(SYMBOLIC["rot"](quat)), R, atol=1e-15)


def test_log3_trace_is_finite_at_the_identity_and_at_a_half_turn():
    """The traced log3 has if_else branches whose untaken side may divide by zero: its value is
    finite (and right) at the identity and at exact half turns about the axes."""
    assert np.array_equal(np.array(SYMBOLIC["log3"](np.eye(3))).ravel(), np.zeros(3))
    for axis in np.eye(3):
        R = lie.exp3(np.pi * axis)
        out = np.array(SYMBOLIC["log3"](R)).ravel()
        assert np.all(np.isfinite(out)) and _same_rotation_vector(out, np.pi * axis, 1e-15)


def test_is_rotation_rejects_reflections_and_non_orthonormal_matrices():
    assert lie.is_rotation(lie.exp3(np.array([0.3, -0.2, 1.0])))
    assert not lie.is_rotation(-np.eye(3))  # determinant −1
    assert not lie.is_rotation(np.diag([1.0, 1.0, 1.1]))
    assert not lie.is_rotation(np.full((3, 3), np.nan))
    assert not lie.is_rotation(np.eye(4))


def test_wrong_shapes_raise():
    with pytest.raises(ValueError, match="log3"):
        lie.log3(np.eye(4))
    with pytest.raises(ValueError, match="exp6"):
        lie.exp6(np.zeros(3))
