"""Loading what real files contain (issue 15, item 1; issue 17, items 2, 3, 8, 13).

* Inertias that are not PSD by rounding load, projected, with a warning naming the link; clearly
  wrong ones raise (TIAGo's antenna vs Romeo's LAAS trunk, and synthetic cases on both sides).
* Joints that move no mass load: kinematics, Jacobians, CRBA and RNEA match Pinocchio; what needs
  M⁻¹ (numeric, symbolic, Workspace, kernel builders, the controller) raises naming the joints.
* A massless root with a floating joint and ``floating_base=True`` is refused with a clear message.
* A chain of 1200 links loads (no recursion); bytes load like text.
"""

from __future__ import annotations

import re
import sys
import warnings

import casadi as ca
import numpy as np
import pinocchio as pin
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.helpers import assert_close
from wbc import robots, tasks
from wbc.codegen import algorithm_functions as traced

BOX = (
    '<inertial>{origin}<mass value="{mass}"/>'
    '<inertia ixx="{ixx}" ixy="{ixy}" ixz="0" iyy="{iyy}" iyz="0" izz="{izz}"/></inertial>'
)


def inertial(mass="1", ixx="0.1", iyy="0.1", izz="0.1", ixy="0", com=None):
    origin = "" if com is None else f'<origin xyz="{com}"/>'
    return BOX.format(mass=mass, ixx=ixx, iyy=iyy, izz=izz, ixy=ixy, origin=origin)


def joint(name, parent, child, jtype="revolute", axis="0 0 1", origin="0 0 0.2"):
    return (
        f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{origin}"/><axis xyz="{axis}"/><limit lower="-2" upper="2" effort="5" velocity="3"/></joint>'
    )


def robot(*parts: str, name: str = "r") -> str:
    return f'<robot name="{name}">{"".join(parts)}</robot>'


def _arm(sensor: str, sensor_joint: str = "fixed") -> str:
    """base -shoulder-> arm, with ``sensor`` (a link's inertial) attached to the arm by ``sensor_joint``."""
    return robot(
        f'<link name="base">{inertial("5", "0.5", "0.5", "0.5")}</link>',
        f'<link name="arm">{inertial("2", "0.05", "0.05", "0.01", com="0 0 0.2")}</link>',
        f'<link name="sensor">{sensor}</link>',
        joint("shoulder", "base", "arm", axis="0 1 0"),
        joint("mount", "arm", "sensor", sensor_joint),
    )


def _pinocchio(text: str, floating_base: bool) -> pin.Model:
    return oracle.build_model(text, floating_base, from_text=True)


# ----------------------------------------------------------------------------- inertias
ANTENNA = inertial("0.000001", "0.00000002371", "0.00000002833", "0.00000003849", ixy="0.00000006119")


def test_rounding_level_inertia_is_projected_with_a_warning_naming_the_link():
    """TIAGo's antenna inertia (principal moments -3.5e-8, 3.5e-8, 9.1e-8 kg m²) welded to a 2 kg arm:
    loads with a ModelWarning naming the link; the body's inertia differs from Pinocchio's (which
    takes the file as is) by exactly the projection, which is PSD and within 3.6e-8 kg m²."""
    text = _arm(ANTENNA)
    with pytest.warns(wbc.ModelWarning, match=r"link 'sensor'.*not positive semi-definite.*projected") as record:
        model = wbc.load_urdf(text, floating_base=False)
    assert len(record) == 1 and "body 'arm'" in str(record[0].message)
    pm = _pinocchio(text, False)
    I_file = np.array([[2.371e-8, 6.119e-8, 0], [6.119e-8, 2.833e-8, 0], [0, 0, 3.849e-8]])
    eig, vec = np.linalg.eigh(I_file)
    assert eig[0] < -3.5e-8
    projection = (vec * np.clip(eig, 0, None)) @ vec.T - I_file  # what the loader adds, kg m²
    k = model.joint_id("shoulder")
    difference = model.inertias[k] - pm.inertias[k].matrix()
    placement = model.frames[model.frame_id("sensor")].placement
    R = np.asarray(placement.R)
    np.testing.assert_allclose(difference[3:6, 3:6], R @ projection @ R.T, atol=1e-15)
    assert np.abs(difference[0:3, :]).max() < 1e-15  # mass and first moment untouched
    assert np.linalg.eigvalsh(model.inertias[k]).min() > 0


def test_tiago_loads_and_matches_pinocchio_up_to_the_projection():
    """The real file: 2 warnings (left and right antenna), and the mass matrix at a random state
    equals Pinocchio's to 1e-9 (the projection, 3.5e-8 kg m² on a 43 kg base, is below it)."""
    urdf = robots.robots_dir() / "tiago_description" / "robots" / "tiago_no_hand.urdf"
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        model = wbc.load_urdf(urdf, floating_base=False)
    names = sorted(re.search(r"link '(\w+)'", str(w.message)).group(1) for w in record)
    assert names == ["base_antenna_left_link", "base_antenna_right_link"]
    pm = oracle.build_model(urdf, False)
    q = wbc.random_configuration(model, np.random.default_rng(3))
    assert_close(wbc.eager.crba(model, q), oracle.symmetrized(pin.crba(pm, pm.createData(), q)), what="M")


def test_clearly_wrong_inertia_still_raises():
    """Romeo's LAAS trunk (principal moment -0.021 kg m², 10% of its body's scale) is refused with the
    numbers; ``inertia_tolerance`` lets a user project it deliberately (with the warning)."""
    urdf = robots.robots_dir() / "romeo_description" / "urdf" / "romeo_laas_small.urdf"
    with pytest.raises(wbc.ModelError, match=r"link 'body'.*not positive semi-definite.*-0\.021.*beyond rounding"):
        wbc.load_urdf(urdf)
    with pytest.warns(wbc.ModelWarning) as record:
        model = wbc.load_urdf(urdf, inertia_tolerance=0.5)
    assert {re.search(r"link '(\w+)'", str(w.message)).group(1) for w in record} == {
        "body",
        "LHipPitch_link",
        "RHipPitch_link",
    }
    assert all(np.linalg.eigvalsh(np.asarray(I)).min() > -1e-12 for I in model.inertias)
    with pytest.raises(wbc.InputError, match="inertia_tolerance"):
        wbc.load_urdf(urdf, inertia_tolerance=-1.0)


@pytest.mark.parametrize(
    ("ixx", "outcome"),
    [("-0.0000001", "warn"), ("-0.00001", "raise"), ("-1e-20", "silent"), ("0", "silent")],
    ids=["rounding", "wrong", "noise", "exact"],
)
def test_tolerance_is_relative_to_the_body(ixx, outcome):
    """A sensor link of 0.1 kg on a 2 kg arm (body scale about the shoulder ~0.13 kg m²): a principal
    moment of -1e-7 is rounding (relative 7.6e-7 < 1e-6), -1e-5 is wrong, -1e-20 is below double
    precision on that body (kept as is, no warning, as iCub's zeros written as -5.4e-20)."""
    text = _arm(inertial("0.1", ixx, "0.001", "0.001"))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        if outcome == "raise":
            with pytest.raises(wbc.ModelError, match=r"link 'sensor'"):
                wbc.load_urdf(text)
            return
        wbc.load_urdf(text)
    assert len([w for w in record if issubclass(w.category, wbc.ModelWarning)]) == (outcome == "warn")


# ----------------------------------------------------------------------------- joints that move no mass
#: Models whose mass matrix is singular at every configuration, and the joints to name.
MASSLESS = {
    # issue 17.1: a sensor link whose <inertial> has only a mass, on a continuous joint: a point
    # mass on its own axis
    "sensor point mass": (_arm('<inertial><mass value="0.2"/></inertial>', "continuous"), ["mount"]),
    # issue 17.2: a prismatic joint moving inertia but no mass
    "prismatic, no mass": (_arm(inertial("0", "0.01", "0.01", "0.01"), "prismatic"), ["mount"]),
    # a massless finger chain (Romeo's fingers)
    "massless subtree": (
        robot(
            f'<link name="base">{inertial("5")}</link><link name="palm">{inertial("1")}</link>',
            '<link name="f1"/><link name="f2"/>',
            joint("wrist", "base", "palm"),
            joint("f1_joint", "palm", "f1", axis="1 0 0"),
            joint("f2_joint", "f1", "f2", "prismatic"),
        ),
        ["f1_joint", "f2_joint"],
    ),
    # two coaxial joints in series, the first link massless: each joint alone moves the mass, but
    # not independently (only the first one is named: locking it fixes the model)
    "coaxial pair": (
        robot(
            f'<link name="base">{inertial("5")}</link><link name="l1"/>',
            f'<link name="l2">{inertial("1", com="0.3 0 0")}</link>',
            joint("j1", "base", "l1"),
            joint("j2", "l1", "l2", origin="0 0 0.1"),
        ),
        ["j1"],
    ),
}


@pytest.mark.parametrize("case", list(MASSLESS), ids=list(MASSLESS))
@pytest.mark.parametrize("floating_base", [False, True], ids=["fixed", "floating"])
def test_joints_that_move_no_mass_load_and_are_named(case, floating_base):
    """They load; the kinematics, Jacobians, CRBA and RNEA match Pinocchio; Pinocchio's M is singular
    (so the detection is right) and ``massless_joints`` names exactly the expected joints."""
    text, expected = MASSLESS[case]
    model = wbc.load_urdf(text, floating_base)
    assert wbc.checks.massless_joints(model) == tuple(expected)
    pm = _pinocchio(text, floating_base)
    pd = pm.createData()
    rng = np.random.default_rng(5)
    q, v, a = wbc.random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
    M = oracle.symmetrized(pin.crba(pm, pd, q))
    assert np.linalg.eigvalsh(M).min() < 1e-12 * np.abs(M).max()
    assert_close(wbc.eager.crba(model, q), M, what="M")
    assert_close(wbc.eager.rnea(model, q, v, a), pin.rnea(pm, pd, q, v, a), what="rnea")
    pin.computeJointJacobians(pm, pd, q)
    for f in model.frames[1:]:
        J = pin.getFrameJacobian(pm, pd, pm.getFrameId(f.name), pin.LOCAL_WORLD_ALIGNED)
        assert_close(wbc.eager.frame_jacobian(model, q, f.name, wbc.ReferenceFrame.LOCAL_WORLD_ALIGNED), J, what=f.name)


def _deferred_calls(model):
    q, v = wbc.neutral(model), np.zeros(model.nv)
    frame = model.frames[-1].name
    qs, vs = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv)
    return {
        "wbc.aba": lambda: wbc.eager.aba(model, q, v, v),
        "wbc.free_acceleration": lambda: wbc.eager.free_acceleration(model, q, v),
        "wbc.inertia_weighted_input_matrix": lambda: wbc.eager.inertia_weighted_input_matrix(model, q),
        "wbc.inertia_weighted_input_matrix (dense)": lambda: wbc.eager.inertia_weighted_input_matrix(
            model, q, method=wbc.InputMatrixMethod.DENSE
        ),
        "wbc.delassus": lambda: wbc.eager.delassus(model, q, [wbc.PointConstraint(frame)]),
        "wbc.symbolic.aba": lambda: wbc.symbolic.aba(model, qs, vs, vs),
        "wbc.symbolic.delassus": lambda: wbc.symbolic.delassus(
            model, qs, [wbc.PointConstraint(frame)], wbc.DelassusMethod.DENSE
        ),
        "Workspace.bodies": lambda: wbc.Workspace(model, qs, vs).bodies,
        "kernels.aba_function": lambda: traced.aba_function(model),
        "kernels.input_matrix_function": lambda: traced.input_matrix_function(model),
        "kernels.delassus_function": lambda: traced.delassus_function(model, [wbc.PointConstraint(frame)]),
        "kernels.free_acceleration_and_input_matrix_function": lambda: (
            traced.free_acceleration_and_input_matrix_function(model)
        ),
        "WholeBodyController": lambda: wbc.WholeBodyController(model, [tasks.PostureTask(model)]),
    }


@pytest.mark.parametrize("call", list(_deferred_calls(wbc.load_urdf(MASSLESS["massless subtree"][0]))))
def test_what_needs_the_inverse_mass_matrix_names_the_massless_joints(call):
    """Each entry point that would divide by the zero inertia raises ModelError naming the joints and
    suggesting wbc.lock_joints, instead of returning NaN; locking them makes it work."""
    model = wbc.load_urdf(MASSLESS["massless subtree"][0], floating_base=True)
    with pytest.raises(wbc.ModelError, match=r"'f1_joint', 'f2_joint' move no mass.*wbc\.lock_joints"):
        _deferred_calls(model)[call]()
    fixed = wbc.lock_joints(model, {"f1_joint": 0.0, "f2_joint": 0.0})
    assert wbc.checks.massless_joints(fixed) == ()
    if not call.startswith(("kernels", "WholeBody")):  # (those compile; the fast ones prove the point)
        _deferred_calls(fixed)[call]()


def test_massless_finger_joints_of_romeo():
    """Romeo's finger and hand joints (24) move no mass: the file loads, Pinocchio's M is singular with
    exactly that many zero eigenvalues, and locking those joints gives a model whose ABA matches
    Pinocchio's on its own reduced model."""
    urdf = robots.robots_dir() / "romeo_description" / "urdf" / "romeo.urdf"
    model = wbc.load_urdf(urdf)
    names = wbc.checks.massless_joints(model)
    assert len(names) == 24 and all(re.match(r"[LR](Finger\d\d|Thumb\d|Hand)$", n) for n in names)
    pm = oracle.build_model(urdf, True)
    pd = pm.createData()
    q = wbc.random_configuration(model, np.random.default_rng(0))
    M = oracle.symmetrized(pin.crba(pm, pd, q))
    eig = np.linalg.eigvalsh(M)
    assert np.sum(eig < 1e-12 * eig.max()) == 24 and eig[24] > 1e-7 * eig.max()
    with pytest.raises(wbc.ModelError, match="'LFinger21'"):
        wbc.eager.aba(model, q, np.zeros(model.nv), np.zeros(model.nv))
    reduced = wbc.lock_joints(model, dict.fromkeys(names, 0.0))
    pr = pin.buildReducedModel(pm, [pm.getJointId(n) for n in names], pin.neutral(pm))
    rng = np.random.default_rng(1)
    qr, vr, tau = wbc.random_configuration(reduced, rng), rng.normal(size=reduced.nv), rng.normal(size=reduced.nv)
    assert_close(wbc.eager.aba(reduced, qr, vr, tau), pin.aba(pr, pr.createData(), qr, vr, tau), what="aba")


def test_catalog_robots_have_no_massless_joints():
    for name in robots.names(robots.RobotKind.TREE):
        assert wbc.checks.massless_joints(robots.load(name).model) == (), name


# ----------------------------------------------------------------------------- world + floating joint
WORLD = robot(
    f'<link name="world"/><link name="base">{inertial("3")}</link><link name="arm">{inertial("1")}</link>',
    '<joint name="float" type="floating"><parent link="world"/><child link="base"/><origin xyz="0 0 1"/></joint>',
    joint("elbow", "base", "arm", axis="0 1 0"),
)


def test_world_link_with_a_floating_joint():
    """Issue 17.3: ``floating_base=True`` would stack a second free-flyer on the massless world link
    (Pinocchio does, with a singular M): refused, saying to load with ``floating_base=False``; so
    loaded, the file's own floating joint is the free-flyer and everything matches Pinocchio."""
    with pytest.raises(wbc.ModelError, match=r"root link 'world'.*'float'.*floating_base=False"):
        wbc.load_urdf(WORLD, floating_base=True)
    model = wbc.load_urdf(WORLD, floating_base=False)
    assert model.floating_base and model.joint_names == ("universe", "float", "elbow") and model.nq == 8
    assert wbc.checks.massless_joints(model) == ()
    pm = _pinocchio(WORLD, False)
    rng = np.random.default_rng(2)
    q, v, tau = wbc.random_configuration(model, rng), rng.normal(size=7), rng.normal(size=7)
    assert_close(wbc.eager.aba(model, q, v, tau), pin.aba(pm, pm.createData(), q, v, tau), what="aba")
    assert_close(
        wbc.eager.frame_placement(model, q, "arm"), pin.updateFramePlacement(pm, _fk(pm, q), pm.getFrameId("arm"))
    )


def _fk(pm, q):
    pd = pm.createData()
    pin.forwardKinematics(pm, pd, q)
    return pd


# ----------------------------------------------------------------------------- deep trees, bytes
def test_a_chain_of_1200_links_loads_without_recursion():
    """Issue 17.8: a ~1000-link chain used to hit RecursionError. 1200 links (deeper than Python's
    recursion limit) load; the layout and the tip's placement match Pinocchio."""
    n = 1200
    parts = [f'<link name="l{i}">{inertial("0.1", "0.001", "0.001", "0.001")}</link>' for i in range(n)]
    parts += [joint(f"j{i:04d}", f"l{i}", f"l{i + 1}", axis="0 1 0" if i % 2 else "1 0 0") for i in range(n - 1)]
    text = robot(*parts, name="chain")
    assert n > sys.getrecursionlimit()
    model = wbc.load_urdf(text, floating_base=False)
    assert model.nv == n - 1 and model.joints[-1].name == f"j{n - 2:04d}" and model.joints[-1].parent == n - 2
    pm = _pinocchio(text, False)  # (Pinocchio's Data for 1200 joints does not fit in memory: no createData)
    assert list(pm.parents) == [0] + list(range(n - 1))
    q = np.full(model.nq, 0.01)
    oMi = pin.SE3.Identity()
    for i in range(1, pm.njoints):  # the tip's placement from Pinocchio's joint placements and motions
        jdata = pm.joints[i].createData()
        pm.joints[i].calc(jdata, q)
        oMi = oMi * pm.jointPlacements[i] * jdata.M
    tip = pm.frames[pm.getFrameId(f"l{n - 1}")]
    assert tip.parentJoint == n - 1 and model.frames[model.frame_id(f"l{n - 1}")].joint == n - 1
    expected = (oMi * tip.placement).homogeneous
    assert_close(wbc.eager.frame_placement(model, q, f"l{n - 1}"), expected, what="tip placement")


def test_bytes_load_like_text(tmp_path):
    """Issue 17.13: ``load_urdf(b"<robot...")`` used to raise a pathlib TypeError. Bytes documents (with
    or without an XML declaration naming their encoding) load like the text; a bytes file name loads
    the file; anything else is a ModelError naming the type."""
    text = _arm(inertial("0.1"))
    from_text = wbc.load_urdf(text)
    for source in (text.encode(), b"\n  " + text.encode(), b'<?xml version="1.0" encoding="latin-1"?>' + text.encode()):
        model = wbc.load_urdf(source)
        assert model.joint_names == from_text.joint_names and model.source == "<bytes>"
        np.testing.assert_array_equal(model.inertias[1], from_text.inertias[1])
    path = tmp_path / "arm.urdf"
    path.write_text(text)
    assert wbc.load_urdf(bytes(path)).source == str(path)
    with pytest.raises(wbc.ModelError, match="int"):
        wbc.load_urdf(42)
