"""Boundary checks of the eager API: wrong sizes, NaN / inf, non-unit quaternions and (cos, sin)
pairs, unknown frames, bad reference frames and bad external forces all raise a clear wbc error
naming the argument (``InputError`` is a ``ValueError``, ``FrameError`` a ``KeyError``), never a
crash or a NaN result."""

from __future__ import annotations

import re

import numpy as np
import pytest

import wbc
from tests.helpers import tree_case

RF = wbc.ReferenceFrame


@pytest.fixture(scope="module")
def model():
    """A small floating tree with every joint type (free-flyer, revolute, continuous, prismatic)."""
    m = tree_case(1, 6, True).model
    assert {j.type for j in m.joints[1:]} == {
        wbc.JointType.FREE_FLYER,
        wbc.JointType.REVOLUTE,
        wbc.JointType.REVOLUTE_UNBOUNDED,
        wbc.JointType.PRISMATIC,
    }
    return m


@pytest.fixture(scope="module")
def state(model):
    rng = np.random.default_rng(50)
    return wbc.random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)


FRAME = "link3"

# Every eager entry point, as f(model, q, v, x) where x is an nv-vector (a or tau) when it takes one.
CALLS = {
    "rnea": lambda m, q, v, x: wbc.rnea(m, q, v, x),
    "nonlinear_effects": lambda m, q, v, x: wbc.nonlinear_effects(m, q, v),
    "crba": lambda m, q, v, x: wbc.crba(m, q),
    "aba": lambda m, q, v, x: wbc.aba(m, q, v, x),
    "frame_placement": lambda m, q, v, x: wbc.frame_placement(m, q, FRAME),
    "frame_jacobian": lambda m, q, v, x: wbc.frame_jacobian(m, q, FRAME, RF.WORLD),
    "frame_velocity": lambda m, q, v, x: wbc.frame_velocity(m, q, v, FRAME, RF.LOCAL),
    "frame_drift": lambda m, q, v, x: wbc.frame_drift(m, q, v, FRAME, RF.LOCAL_WORLD_ALIGNED),
    "center_of_mass": lambda m, q, v, x: wbc.center_of_mass(m, q),
    "com_jacobian": lambda m, q, v, x: wbc.com_jacobian(m, q),
    "com_drift": lambda m, q, v, x: wbc.com_drift(m, q, v),
    "centroidal_map": lambda m, q, v, x: wbc.centroidal_map(m, q),
    "centroidal_drift": lambda m, q, v, x: wbc.centroidal_drift(m, q, v),
    "integrate": lambda m, q, v, x: wbc.integrate(m, q, v),
}
TAKES_V = {
    "rnea",
    "nonlinear_effects",
    "aba",
    "frame_velocity",
    "frame_drift",
    "com_drift",
    "centroidal_drift",
    "integrate",
}
TAKES_X = {"rnea", "aba"}


@pytest.mark.parametrize("fn", list(CALLS))
def test_valid_call_is_finite(fn, model, state):
    """The valid call these tests spoil returns finite numbers."""
    q, v, x = state
    assert np.all(np.isfinite(CALLS[fn](model, q, v, x)))


def _bad_vectors(n: int):
    good = np.linspace(0.1, 0.5, n)
    nan, inf, ninf = good.copy(), good.copy(), good.copy()
    nan[n // 2], inf[-1], ninf[0] = np.nan, np.inf, -np.inf
    return {
        "too short": (good[:-1], r"shape"),
        "too long": (np.append(good, 0.0), r"shape"),
        "matrix": (np.tile(good, (2, 1)), r"shape"),
        "scalar": (0.3, r"shape"),
        "strings": (["a"] * n, r"numbers"),
        "None": (None, r"shape|numbers"),
        "NaN": (nan, rf"non-finite entries at indices \[{n // 2}\]"),
        "inf": (inf, rf"non-finite entries at indices \[{n - 1}\]"),
        "-inf": (ninf, r"non-finite entries at indices \[0\]"),
    }


BAD_KINDS = list(_bad_vectors(4))


@pytest.mark.parametrize("kind", BAD_KINDS)
@pytest.mark.parametrize("fn", list(CALLS))
def test_bad_configuration(fn, kind, model, state):
    """A q of the wrong size, type or with non-finite entries is an InputError naming q."""
    q, v, x = state
    bad, pattern = _bad_vectors(model.nq)[kind]
    if kind in ("NaN", "inf", "-inf"):  # keep the free-flyer quaternion unit: spoil a joint coordinate
        bad = q.copy()
        bad[-1] = {"NaN": np.nan, "inf": np.inf, "-inf": -np.inf}[kind]
        pattern = rf"non-finite entries at indices \[{model.nq - 1}\]"
    with pytest.raises(wbc.InputError, match=r"^q\b") as info:
        CALLS[fn](model, bad, v, x)
    assert isinstance(info.value, ValueError)
    assert re.search(pattern, str(info.value)), str(info.value)


@pytest.mark.parametrize("kind", BAD_KINDS)
@pytest.mark.parametrize("fn", sorted(TAKES_V))
def test_bad_velocity(fn, kind, model, state):
    """A v of the wrong size, type or with non-finite entries is an InputError naming v."""
    q, _v, x = state
    bad, pattern = _bad_vectors(model.nv)[kind]
    with pytest.raises(wbc.InputError, match=rf"^v .*({pattern})"):
        CALLS[fn](model, q, bad, x)


@pytest.mark.parametrize("kind", BAD_KINDS)
@pytest.mark.parametrize("fn", sorted(TAKES_X))
def test_bad_acceleration_or_torque(fn, kind, model, state):
    """A bad a (RNEA) or tau (ABA) is an InputError naming it."""
    q, v, _x = state
    bad, pattern = _bad_vectors(model.nv)[kind]
    name = {"rnea": "a", "aba": "tau"}[fn]
    with pytest.raises(wbc.InputError, match=rf"^{name} .*({pattern})"):
        CALLS[fn](model, q, v, bad)


def test_column_and_row_vectors_are_accepted(model, state):
    """(n, 1) and (1, n) arrays are accepted as vectors and give the same result."""
    q, v, x = state
    expected = wbc.aba(model, q, v, x)
    np.testing.assert_array_equal(wbc.aba(model, q.reshape(-1, 1), v.reshape(1, -1), list(x)), expected)


def _quaternion_slice(model):
    j = model.joints[1]
    assert j.type is wbc.JointType.FREE_FLYER
    return slice(j.idx_q + 3, j.idx_q + 7)


def _cos_sin_slice(model):
    j = next(j for j in model.joints if j.type is wbc.JointType.REVOLUTE_UNBOUNDED)
    return j, slice(j.idx_q, j.idx_q + 2)


@pytest.mark.parametrize(
    "factor", [0.5, 1.0 + 10 * wbc.checks.UNIT_TOLERANCE, 1.0 - 10 * wbc.checks.UNIT_TOLERANCE, 0.0]
)
@pytest.mark.parametrize("fn", ["aba", "frame_placement", "centroidal_map", "integrate"])
def test_non_unit_quaternion_is_rejected(fn, factor, model, state):
    """A free-flyer quaternion whose norm is off by more than UNIT_TOLERANCE is an InputError naming the
    joint and the norm (and the zero quaternion too)."""
    q, v, x = state
    bad = q.copy()
    bad[_quaternion_slice(model)] *= factor
    with pytest.raises(wbc.InputError, match=r"quaternion of joint 'root_joint'.*norm"):
        CALLS[fn](model, bad, v, x)


@pytest.mark.parametrize("factor", [1.0 + 0.5 * wbc.checks.UNIT_TOLERANCE, 1.0 - 0.5 * wbc.checks.UNIT_TOLERANCE])
def test_slightly_non_unit_quaternion_is_accepted(factor, model, state):
    """A quaternion off by less than UNIT_TOLERANCE is accepted and the results stay finite and within
    a few tolerances of the normalized configuration's."""
    q, v, x = state
    off = q.copy()
    off[_quaternion_slice(model)] *= factor
    for fn in ("aba", "frame_placement", "com_drift"):
        a, b = CALLS[fn](model, off, v, x), CALLS[fn](model, q, v, x)
        assert np.all(np.isfinite(a))
        assert np.max(np.abs(a - b)) <= 100 * wbc.checks.UNIT_TOLERANCE * max(1.0, np.max(np.abs(b)))


@pytest.mark.parametrize("pair", [(0.9, 0.1), (1.0, 1.0), (0.0, 0.0), (np.cos(0.3) * 1.001, np.sin(0.3) * 1.001)])
@pytest.mark.parametrize("fn", ["crba", "frame_jacobian", "integrate"])
def test_non_unit_cos_sin_pair_is_rejected(fn, pair, model, state):
    """A continuous joint's (cos, sin) pair whose norm is not 1 is an InputError naming the joint."""
    q, v, x = state
    j, s = _cos_sin_slice(model)
    bad = q.copy()
    bad[s] = pair
    with pytest.raises(wbc.InputError, match=rf"\(cos, sin\) pair of joint '{j.name}'.*norm"):
        CALLS[fn](model, bad, v, x)


@pytest.mark.parametrize("fn", ["frame_placement", "frame_jacobian", "frame_velocity", "frame_drift"])
def test_unknown_frame(fn, model, state):
    """An unknown frame is a FrameError (a KeyError) suggesting close names; neither a name nor an
    index one too; an index out of range an InputError; an index is the frame it indexes."""
    q, v, _ = state
    call = {
        "frame_placement": lambda f: wbc.frame_placement(model, q, f),
        "frame_jacobian": lambda f: wbc.frame_jacobian(model, q, f),
        "frame_velocity": lambda f: wbc.frame_velocity(model, q, v, f),
        "frame_drift": lambda f: wbc.frame_drift(model, q, v, f),
    }[fn]
    with pytest.raises(wbc.FrameError, match=r"no frame 'link_3'.*did you mean.*'link3'") as info:
        call("link_3")
    assert isinstance(info.value, KeyError) and isinstance(info.value, wbc.WbcError)
    with pytest.raises(wbc.FrameError, match=r"no frame 'zzzz'$"):
        call("zzzz")
    with pytest.raises(wbc.FrameError, match="string"):
        call(3.0)
    with pytest.raises(wbc.InputError, match="frame index 999 out of range"):
        call(999)
    np.testing.assert_array_equal(call(3), call(model.frames[3].name))  # a frame by index


@pytest.mark.parametrize("reference", ["local", "WORLD", 0, None, wbc.JointType.REVOLUTE])
@pytest.mark.parametrize("fn", ["frame_jacobian", "frame_velocity", "frame_drift"])
def test_reference_must_be_a_reference_frame(fn, reference, model, state):
    """A reference frame given as anything but a wbc.ReferenceFrame is an InputError listing the choices."""
    q, v, _ = state
    call = {
        "frame_jacobian": lambda r: wbc.frame_jacobian(model, q, FRAME, r),
        "frame_velocity": lambda r: wbc.frame_velocity(model, q, v, FRAME, r),
        "frame_drift": lambda r: wbc.frame_drift(model, q, v, FRAME, r),
    }[fn]
    with pytest.raises(wbc.InputError, match=r"ReferenceFrame.*LOCAL, WORLD or LOCAL_WORLD_ALIGNED"):
        call(reference)


@pytest.mark.parametrize("fn", ["rnea", "aba"])
def test_bad_external_forces(fn, model, state):
    """External forces must be {known frame: finite (6,) wrench}: anything else is a clear wbc error."""
    q, v, x = state
    call = (lambda f: wbc.rnea(model, q, v, x, f)) if fn == "rnea" else (lambda f: wbc.aba(model, q, v, x, f))
    with pytest.raises(wbc.InputError, match=r"fext\['link3'\] must have shape \(6,\)"):
        call({"link3": np.ones(3)})
    with pytest.raises(wbc.InputError, match=r"fext\['link3'\] has non-finite"):
        call({"link3": [0, 0, np.nan, 0, 0, 0]})
    with pytest.raises(wbc.InputError, match=r"fext must be a mapping"):
        call([("link3", np.ones(6))])
    for eager in (False, True):  # one wrench without its frame: named, not numpy's ambiguous truth value
        fn_of = getattr(wbc.eager if eager else wbc, fn)
        with pytest.raises(wbc.InputError, match=r"fext must be a mapping \{frame name: wrench \(6,\)\}, got ndarray"):
            fn_of(model, q, v, x, np.ones(6))
    with pytest.raises(wbc.FrameError, match=r"no frame 'lnk3'.*'link3'"):
        call({"lnk3": np.ones(6)})
    # empty mappings are no force at all
    np.testing.assert_array_equal(call({}), call(None))


def test_error_hierarchy():
    """Every wbc error derives from WbcError; input errors are ValueErrors, frame errors KeyErrors."""
    assert issubclass(wbc.InputError, wbc.WbcError) and issubclass(wbc.InputError, ValueError)
    assert issubclass(wbc.FrameError, wbc.WbcError) and issubclass(wbc.FrameError, KeyError)
    assert issubclass(wbc.MissingDependency, ImportError)
    for cls in (wbc.ModelError, wbc.CompileError, wbc.MissingDependency):
        assert issubclass(cls, wbc.WbcError)
    assert str(wbc.FrameError("no frame 'x'")) == "no frame 'x'"  # not quoted like a KeyError


def test_difference_checks_both_configurations(model, state):
    """wbc.difference validates q0 and q1 and names the bad one."""
    q, _, _ = state
    bad = q.copy()
    bad[_quaternion_slice(model)] *= 2.0
    with pytest.raises(wbc.InputError, match=r"^q0: the quaternion"):
        wbc.difference(model, bad, q)
    with pytest.raises(wbc.InputError, match=r"^q1: the quaternion"):
        wbc.difference(model, q, bad)
    with pytest.raises(wbc.InputError, match=r"^q1 must have shape"):
        wbc.difference(model, q, q[:-1])


def test_model_lookups(model):
    """Model.joint_id / frame_id on unknown names raise ModelError / FrameError with suggestions."""
    with pytest.raises(wbc.ModelError, match=r"no joint 'joint_2'.*'joint2'"):
        model.joint_id("joint_2")
    with pytest.raises(wbc.ModelError, match=r"already has a frame 'link3'"):
        model.add_frame("link3", "link2", wbc.spatial.algebra.identity())
    with pytest.raises(wbc.ModelError, match="universe"):
        model.with_actuation(["universe"])


def test_a_cluster_model_in_a_tree_function_and_a_q_for_a_y_name_the_right_call():
    from wbc import robots

    cm = robots.load("mit_humanoid").model
    v = np.zeros(cm.nv)
    with pytest.raises(
        wbc.InputError, match=r"aba does not apply to a wbc.ClusterModel.*use wbc.cluster_rnea, cluster_aba"
    ):
        wbc.aba(cm, np.zeros(cm.tree.nq), v, v)
    match = rf"y must have shape \({cm.tree.nq},\), got \({cm.nq},\).*cm.spanning_configuration\(...\) from the"
    with pytest.raises(wbc.InputError, match=match):
        wbc.cluster_aba(cm, np.zeros(cm.nq), v, v)


def test_controller_arguments_name_a_missing_list_and_a_class_given_for_an_instance():
    from wbc import robots, tasks

    model = robots.load("panda").model
    posture = tasks.PostureTask(model)
    with pytest.raises(wbc.InputError, match=r"tasks must be a sequence: put the one PostureTask in a list"):
        wbc.WholeBodyController(model, posture)
    with pytest.raises(
        wbc.InputError, match=r"got the class TorqueLimit itself, not an instance \(TorqueLimit\(...\)\)"
    ):
        wbc.WholeBodyController(model, [posture], limits=[wbc.TorqueLimit])
    with pytest.raises(wbc.InputError, match=r"expected a wbc Task, got the class CoMTask itself"):
        wbc.WholeBodyController(model, [tasks.CoMTask])
