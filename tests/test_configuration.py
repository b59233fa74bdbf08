"""Configuration-space operations against Pinocchio: neutral, normalize, integrate, difference (exact
SE(3) logarithm on the free-flyer, SO(3) logarithm on ball joints), and random configurations, on
catalog robots, random trees and random trees with ball joints (``JointModelSpherical``)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import wbc
from tests.helpers import BALL_TREE_CASES, ROBOT_NAMES, TOL_PIN, assert_close, ball_tree_case, oracle_cases, tree_case
from wbc import robots

N = 30
#: Every catalog robot in its default base and a floating Panda, the random trees (floating and
#: fixed) and the trees with ball joints, as pytest params ``(build, seed)``.
CASES = oracle_cases([(name, None) for name in ROBOT_NAMES] + [("panda", True)], 0, 0)


@pytest.fixture(params=[param.values[0] for param in CASES], ids=[param.id for param in CASES])
def case(request):
    return request.param()


def _quaternion_slices(model):
    return [slice(start, stop) for start, stop, _, what in wbc.checks.unit_parts(model) if what == "quaternion"]


def _rotation_v_slices(model):
    """Velocity entries that are rotations (free-flyer angular part, ball, revolute and continuous joints)."""
    out = []
    for j in model.joints[1:]:
        if j.type is wbc.JointType.FREE_FLYER:
            out.append(slice(j.idx_v + 3, j.idx_v + 6))
        elif j.type is wbc.JointType.SPHERICAL:
            out.append(slice(j.idx_v, j.idx_v + 3))
        elif j.type in (wbc.JointType.REVOLUTE, wbc.JointType.REVOLUTE_UNBOUNDED):
            out.append(slice(j.idx_v, j.idx_v + 1))
    return out


def _same_up_to_quaternion_sign(model, a, b):
    """``a`` with each free-flyer quaternion's sign chosen to match ``b`` (q and -q are the same rotation)."""
    a = a.copy()
    for s in _quaternion_slices(model):
        if np.dot(a[s], b[s]) < 0:
            a[s] = -a[s]
    return a


def test_neutral(case):
    """wbc.neutral is pin.neutral (identity quaternions, (cos, sin) = (1, 0), zeros)."""
    np.testing.assert_array_equal(wbc.neutral(case.model), pin.neutral(case.pin_model))


def test_normalize(case):
    """wbc.normalize rescales quaternions and (cos, sin) pairs as pin.normalize, leaving the rest."""
    m, pm = case.model, case.pin_model
    rng = np.random.default_rng(60)
    for _ in range(5):
        q = wbc.random_configuration(m, rng)
        q_off = q * rng.uniform(0.5, 2.0, size=m.nq)
        n = wbc.normalize(m, q_off)
        assert_close(n, pin.normalize(pm, q_off), tol=1e-12, what="normalize")
        wbc.checks.configuration(m, n)  # valid


def test_random_configuration(case):
    """Random configurations are valid, within the position limits, and reproducible from the seed."""
    m = case.model
    a = [wbc.random_configuration(m, np.random.default_rng(61)) for _ in range(2)]
    np.testing.assert_array_equal(a[0], a[1])
    rng = np.random.default_rng(62)
    for _ in range(20):
        q = wbc.random_configuration(m, rng)
        wbc.checks.configuration(m, q)
        assert np.all(q >= m.lower_position_limit) and np.all(q <= m.upper_position_limit)
        assert pin.isNormalized(case.pin_model, q, 1e-12)


def test_integrate_vs_pinocchio(case):
    """wbc.integrate is pin.integrate (translation, joint coordinates and rotation; the quaternion is
    compared up to its sign, which does not change the configuration) for velocities of all sizes."""
    m, pm = case.model, case.pin_model
    rng = np.random.default_rng(63)
    for k in range(N):
        q = wbc.random_configuration(m, rng)
        v = rng.normal(size=m.nv) * [0.01, 0.3, 1.5][k % 3]
        out = wbc.integrate(m, q, v)
        expected = pin.integrate(pm, q, v)
        assert_close(_same_up_to_quaternion_sign(m, out, expected), expected, tol=TOL_PIN, what=f"integrate {k}")
        wbc.checks.configuration(m, out)
        assert_close(wbc.integrate(m, q, v, dt=0.37), wbc.integrate(m, q, 0.37 * v), tol=1e-15, what="dt")


def test_integrate_keeps_quaternion_hemisphere():
    """Like pin.integrate, wbc.integrate returns the quaternion on the side of the input one
    (dot(q_out, q_in) >= 0), so integrating a trajectory gives no sign jumps: the output equals
    Pinocchio's exactly, sign included (floating catalog robots and trees)."""
    for param in CASES:
        build, _ = param.values
        case = build()
        m, pm = case.model, case.pin_model
        if not m.floating_base:
            continue
        rng = np.random.default_rng(64)
        for k in range(N):
            q = wbc.random_configuration(m, rng)
            v = rng.normal(size=m.nv) * [0.01, 0.3, 1.5][k % 3]
            out = wbc.integrate(m, q, v)
            assert np.dot(out[3:7], q[3:7]) >= 0, (
                f"{case.name} step {k}: quaternion {q[3:7]} integrated by |v| = {np.linalg.norm(v):.3g} "
                f"to {out[3:7]} (sign jump)"
            )
            assert_close(out, pin.integrate(pm, q, v), tol=TOL_PIN, what=f"{case.name} integrate {k}")


def test_integrate_is_a_one_parameter_group(case):
    """Moving at constant v for two half steps equals one full step (exp(v/2) exp(v/2) = exp(v))."""
    m = case.model
    rng = np.random.default_rng(65)
    for _ in range(5):
        q = wbc.random_configuration(m, rng)
        v = rng.normal(size=m.nv)
        two = wbc.integrate(m, wbc.integrate(m, q, v, 0.5), v, 0.5)
        one = wbc.integrate(m, q, v)
        assert_close(_same_up_to_quaternion_sign(m, two, one), one, tol=1e-12, what="half steps")


def test_difference_vs_pinocchio(case):
    """wbc.difference equals pin.difference on every entry, the free-flyer's included (the SE(3)
    logarithm of the relative placement, not a first-order approximation), for arbitrary pairs and
    for pure rotations and pure translations of the base."""
    m, pm = case.model, case.pin_model
    rng = np.random.default_rng(66)
    for k in range(N):
        q0, q1 = wbc.random_configuration(m, rng), wbc.random_configuration(m, rng)
        assert_close(wbc.difference(m, q0, q1), pin.difference(pm, q0, q1), tol=TOL_PIN, what=f"random pair {k}")
        if m.floating_base:
            rot, trans = q1.copy(), q1.copy()
            rot[0:3] = q0[0:3]
            trans[3:7] = q0[3:7]
            for name, target in (("pure rotation", rot), ("pure translation", trans)):
                assert_close(
                    wbc.difference(m, q0, target), pin.difference(pm, q0, target), tol=TOL_PIN, what=f"{name} {k}"
                )


def test_difference_inverts_integrate(case):
    """difference(q, integrate(q, v)) = v for any v whose rotation angles are below π (exact SE(3)
    log and exp on the free-flyer)."""
    m = case.model
    rng = np.random.default_rng(67)
    rot = _rotation_v_slices(m)
    for k in range(N):
        q = wbc.random_configuration(m, rng)
        v = rng.uniform(-1.0, 1.0, size=m.nv)
        for s in rot:
            if s.stop - s.start == 3 and np.linalg.norm(v[s]) >= np.pi:
                v[s] *= 3.0 / np.linalg.norm(v[s])
        assert_close(wbc.difference(m, q, wbc.integrate(m, q, v)), v, tol=1e-12, what=f"round trip {k}")


@pytest.mark.parametrize("margin", [1e-3, 1e-5, 1e-7, 1e-9])
def test_difference_near_half_turn(margin):
    """The free-flyer rotation log is exact close to a half turn too: for base rotations by π − margin
    about random axes, difference(q, integrate(q, v)) = v and equals pin.difference."""
    case = tree_case(1, 6, True)
    m, pm = case.model, case.pin_model
    rng = np.random.default_rng(68)
    for k in range(10):
        q = wbc.random_configuration(m, rng)
        axis = rng.normal(size=3)
        v = np.zeros(m.nv)
        v[3:6] = (np.pi - margin) * axis / np.linalg.norm(axis)
        q1 = wbc.integrate(m, q, v)
        assert_close(wbc.difference(m, q, q1), pin.difference(pm, q, q1), what=f"vs Pinocchio, axis {k}")
        assert_close(wbc.difference(m, q, q1), v, what=f"round trip, axis {k}")


def test_difference_of_identical_configurations_is_zero(case):
    """difference(q, q) = 0 exactly."""
    m = case.model
    q = wbc.random_configuration(m, np.random.default_rng(69))
    np.testing.assert_array_equal(wbc.difference(m, q, q), np.zeros(m.nv))


def _ball_joints(model):
    return [j for j in model.joints[1:] if j.type is wbc.JointType.SPHERICAL]


@pytest.mark.parametrize("margin", [1e-3, 1e-6, 1e-9])
def test_ball_joint_difference_near_half_turn(margin):
    """A ball joint's SO(3) log is exact close to a half turn: rotations by π − margin about random
    axes come back from difference and equal pin.difference."""
    case = ball_tree_case(*BALL_TREE_CASES[1])
    m, pm = case.model, case.pin_model
    rng = np.random.default_rng(70)
    for k in range(10):
        q = wbc.random_configuration(m, rng)
        v = np.zeros(m.nv)
        for j in _ball_joints(m):
            axis = rng.normal(size=3)
            v[j.idx_v : j.idx_v + 3] = (np.pi - margin) * axis / np.linalg.norm(axis)
        q1 = wbc.integrate(m, q, v)
        assert_close(wbc.integrate(m, q, v), pin.integrate(pm, q, v), what=f"integrate, axes {k}")
        assert_close(wbc.difference(m, q, q1), pin.difference(pm, q, q1), what=f"vs Pinocchio, axes {k}")
        assert_close(wbc.difference(m, q, q1), v, what=f"round trip, axes {k}")


def test_ball_joint_integrate_matches_pinocchio_sign_included():
    """A ball joint's quaternion is ``quat ⊗ exp(ω)`` as Pinocchio's, sign included, also beyond a
    half turn (where it leaves the input's hemisphere, as Pinocchio's does)."""
    case = ball_tree_case(*BALL_TREE_CASES[0])
    m, pm = case.model, case.pin_model
    rng = np.random.default_rng(71)
    for k in range(N):
        q = wbc.random_configuration(m, rng)
        v = rng.normal(size=m.nv) * [0.01, 1.0, 4.0][k % 3]
        assert_close(wbc.integrate(m, q, v), pin.integrate(pm, q, v), tol=1e-12, what=f"integrate {k}")


def test_ball_joint_random_configuration_within_cone():
    """A ball joint with a cone limit (``max_angle``) gets random rotations within the cone, and
    reaches near its edge; without one, rotations of every angle up to π."""
    from wbc.robots import synthetic

    base = synthetic.random_tree(6, np.random.default_rng(5))
    names = [j.name for j in base.joints[1:] if j.nv == 1][:2]
    m = synthetic.with_ball_joints(base, names, max_angle=0.6)
    rng = np.random.default_rng(72)
    angles = []
    for _ in range(200):
        q = wbc.random_configuration(m, rng)
        for j in _ball_joints(m):
            angles.append(2 * np.arccos(min(1.0, abs(q[j.idx_q + 3]))))
    assert max(angles) <= 0.6 + 1e-12 and max(angles) > 0.55
    free = synthetic.with_ball_joints(base, names)
    angles = [
        2 * np.arccos(min(1.0, abs(q[j.idx_q + 3])))
        for q in (wbc.random_configuration(free, rng) for _ in range(200))
        for j in _ball_joints(free)
    ]
    assert max(angles) > 2.5


def test_compiled_integrate_equals_numpy_and_symbolic(case):
    """``wbc.integrate`` (compiled: one C call once the background compile is in) gives the numpy
    formulas' numbers (:func:`wbc.model.configuration.integrate`, to rounding) and CasADi's symbols
    evaluated (:func:`wbc.symbolic.integrate`), on every joint type of the cases."""
    from wbc.codegen import background, calls, model_kernels
    from wbc.model import configuration

    m = case.model
    rng = np.random.default_rng(73)
    q, v = wbc.random_configuration(m, rng), rng.normal(size=m.nv)
    first = wbc.integrate(m, q, v, 0.01)
    assert background.wait(600)
    call = model_kernels.kernels_of(m).integrate
    assert calls.kernel_of(call).backend == "c"
    for _ in range(5):
        q, v = wbc.random_configuration(m, rng), rng.normal(size=m.nv)
        ours = wbc.integrate(m, q, v, 0.01)
        assert_close(ours, configuration.integrate(m, q, v, 0.01), tol=1e-14, what="compiled vs numpy")
        symbolic = np.asarray(wbc.symbolic.integrate(m, q, v, 0.01), dtype=float).reshape(-1)
        assert_close(ours, symbolic, tol=1e-14, what="compiled vs symbolic")
    assert first.shape == (m.nq,)


def test_compiled_integrate_refuses_bad_input_by_name():
    """Bad arguments are refused by name, never a NaN configuration: a quaternion off the unit sphere
    (naming its joint), a velocity of another size or not finite, a time step that is not a finite
    number; a bad first call (the virtual machine's) as well as later ones (the compiled call)."""
    from wbc.codegen import background

    spec = robots.load("talos")
    m = spec.model
    q, v = spec.q0.copy(), np.zeros(m.nv)
    for _ in range(2):
        bad_q = q.copy()
        bad_q[3:7] *= 1.1
        with pytest.raises(wbc.InputError, match=r"^q: the quaternion of joint 'root_joint'"):
            wbc.integrate(m, bad_q, v)
        with pytest.raises(wbc.InputError, match=r"^v must have shape \(38,\)"):
            wbc.integrate(m, q, np.zeros(m.nv + 1), 1e-3)
        with pytest.raises(wbc.InputError, match=r"^v has non-finite entries"):
            wbc.integrate(m, q, np.full(m.nv, np.nan), 1e-3)
        for dt in (np.nan, np.inf, "1e-3", None):
            with pytest.raises(wbc.InputError, match=r"^dt must be a finite number"):
                wbc.integrate(m, q, v, dt)
            with pytest.raises(wbc.InputError, match=r"^dt must be a finite number"):
                wbc.eager.integrate(m, q, v, dt)  # the numpy formulas too
        with pytest.raises(wbc.InputError, match=r"^v must be an array of 38 numbers"):
            wbc.integrate(m, q, ["a"] * m.nv, 1e-3)
        assert np.array_equal(wbc.integrate(m, q, v, 1e-3), q)
        assert background.wait(600)
