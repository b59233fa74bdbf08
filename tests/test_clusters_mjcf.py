"""``wbc.load_mjcf`` against MuJoCo's own model of the same file (``mj_forward``: mass matrix with
armature, bias forces, equality-constraint Jacobians), against Pinocchio's MJCF parser, and against
``load_urdf`` on a tree converted to MJCF by MuJoCo. MuJoCo's constraints are soft and its
accelerations ignore ``J̇ v``: the exact reference is built from MuJoCo's M, bias and ``efc_J``
(null-space projection at zero velocity), not from its ``qacc``."""

from __future__ import annotations

from pathlib import Path

import casadi as ca
import numpy as np
import pinocchio as pin
import pytest

import wbc
from tests.cluster_cases import evaluate
from tests.helpers import TOL_PIN, assert_close
from wbc.algorithms import dynamics as D
from wbc.codegen import cluster_functions as ck
from wbc.robots import synthetic

mujoco = pytest.importorskip("mujoco")

MECHANISM = """
<mujoco model="mechanism">
  <compiler angle="radian"/>
  <option gravity="0 0 -9.81"/>
  <default>
    <joint armature="0.01"/>
    <default class="rotor"><joint armature="0.002"/></default>
  </default>
  <worldbody>
    <body name="base" pos="0 0 1">
      <freejoint name="root"/>
      <inertial pos="0.01 0 0" mass="3" diaginertia="0.05 0.04 0.03"/>
      <body name="crank">
        <joint name="crank" axis="0 1 0" range="-2 2"/>
        <inertial pos="0 0 0.05" mass="0.5" diaginertia="0.001 0.002 0.001"/>
        <body name="coupler" pos="0 0 0.1">
          <joint name="coupler" axis="0 1 0"/>
          <inertial pos="0.12 0 0" mass="0.3" diaginertia="0.001 0.003 0.002"/>
        </body>
      </body>
      <body name="rocker" pos="0.25 0 0">
        <joint name="rocker" axis="0 1 0"/>
        <inertial pos="0 0 0.05" mass="0.4" diaginertia="0.002 0.002 0.001"/>
      </body>
      <body name="rotor" pos="0 0.05 0" euler="1.5707963 0 0">
        <joint name="rotor" class="rotor" axis="0 0 1"/>
        <inertial pos="0 0 0" mass="0.07" diaginertia="2.5e-5 2.5e-5 5e-5"/>
      </body>
      <body name="arm" pos="0 0 0.2" quat="0.9 0.1 0.2 0.3">
        <joint name="arm1" axis="1 0 0" pos="0 0 0.05"/>
        <joint name="arm2" type="slide" axis="0 0 1"/>
        <inertial pos="0 0.02 0.1" mass="0.6"
                  fullinertia="0.003 0.004 0.002 0.0001 0.0002 0.0003"/>
        <site name="tip" pos="0 0 0.3"/>
      </body>
      <body name="ring" pos="-0.2 0 0" xyaxes="0 1 0 -1 0 0">
        <joint name="ring1" axis="0 0 1"/>
        <inertial pos="0 0.1 0" mass="0.2" diaginertia="0.001 0.001 0.001"/>
        <body name="ring2" pos="0 0.2 0">
          <joint name="ring2" axis="0 0 1"/>
          <inertial pos="0 0.1 0" mass="0.2" diaginertia="0.001 0.001 0.001"/>
          <body name="ring3" pos="0 0.2 0" zaxis="0 0.2 1">
            <joint name="ring3" axis="0 0 1"/>
            <inertial pos="0 0.05 0" mass="0.1" diaginertia="0.0005 0.0005 0.0005"/>
          </body>
        </body>
      </body>
      <body name="stop" pos="-0.1 0.3 0.05">
        <inertial pos="0 0 0" mass="0.1" diaginertia="0.0001 0.0001 0.0001"/>
      </body>
    </body>
  </worldbody>
  <equality>
    <connect name="four_bar" body1="coupler" body2="rocker" anchor="0.25 0 0"/>
    <joint joint1="rotor" joint2="crank" polycoef="0 6 0 0 0"/>
    <weld name="ring_weld" body1="ring3" body2="stop"/>
  </equality>
  <actuator><motor joint="crank"/><motor joint="arm1"/><motor joint="ring1"/></actuator>
</mujoco>
"""


def _mj(text: str):
    m = mujoco.MjModel.from_xml_string(text)
    return m, mujoco.MjData(m)


def _to_mujoco(y: np.ndarray) -> np.ndarray:
    """wbc's spanning configuration (free-flyer quaternion x y z w) as MuJoCo's qpos (w x y z)."""
    q = y.copy()
    q[3:7] = [y[6], y[3], y[4], y[5]]
    return q


def _base_map(y: np.ndarray, nv: int) -> np.ndarray:
    """``T`` with MuJoCo's qvel = T · wbc's v (free-flyer linear velocity: world vs base axes)."""
    x, yq, z, w = y[3:7]
    R = np.array(
        [
            [1 - 2 * (yq * yq + z * z), 2 * (x * yq - z * w), 2 * (x * z + yq * w)],
            [2 * (x * yq + z * w), 1 - 2 * (x * x + z * z), 2 * (yq * z - x * w)],
            [2 * (x * z - yq * w), 2 * (yq * z + x * w), 1 - 2 * (x * x + yq * yq)],
        ]
    )
    T = np.eye(nv)
    T[0:3, 0:3] = R
    return T


def test_mechanism_layout_and_clusters():
    cm = wbc.load_mjcf(MECHANISM)
    m, _ = _mj(MECHANISM)
    assert cm.tree.nq == m.nq and cm.tree.nv == m.nv
    assert [cm.tree.joints[i].name for i in range(1, cm.tree.njoints)] == [m.joint(i).name for i in range(m.njnt)]
    declared = [c.declared for c in cm.infos if not c.trivial]
    assert len(declared) == 2
    four_bar = next(c for c in declared if "rotor" in c.joints)
    assert four_bar.independent == ("crank",)  # the actuated joint stays independent
    assert cm.armature is not None and cm.armature[cm.tree.joints[cm.tree.joint_id("rotor")].idx_v] == 0.002


def test_mass_matrix_bias_and_constraints_against_mujoco():
    cm = wbc.load_mjcf(MECHANISM)
    m, d = _mj(MECHANISM)
    rng = np.random.default_rng(0)
    aba = ck.c_aba_function(cm)
    for _ in range(20):
        y = cm.random_configuration(rng, scale=0.5)
        T = _base_map(y, m.nv)
        d.qpos[:] = _to_mujoco(y)
        d.qvel[:] = 0.0
        mujoco.mj_forward(m, d)
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, M)
        H = np.array(ca.DM(D.crba(cm.tree, ca.DM(y)))) + np.diag(cm.armature)
        assert_close(H, T.T @ M @ T, TOL_PIN, "M with armature")
        h = np.array(ca.DM(D.nonlinear_effects(cm.tree, ca.DM(y), ca.DM.zeros(m.nv)))).ravel()
        assert_close(h, T.T @ d.qfrc_bias, TOL_PIN, "gravity")
        # MuJoCo's equality rows: G spans their null space
        eq = d.efc_type[: d.nefc] == mujoco.mjtConstraint.mjCNSTR_EQUALITY
        J = d.efc_J.reshape(d.nefc, m.nv)[eq] @ T
        G = np.array(ca.DM(cm.G_matrix(ca.DM(y))))
        assert np.abs(J @ G).max() <= 1e-12 * max(1.0, np.abs(J).max() * np.abs(G).max())
        # forward dynamics at rest: the exact constrained acceleration from MuJoCo's M, bias and rows
        _, s, Vt = np.linalg.svd(J)
        N = Vt[(s > 1e-10 * s[0]).sum() :].T
        Mw, tau = T.T @ M @ T, rng.normal(size=cm.nv)
        tau_span = np.zeros(m.nv)
        tau_span[cm.independent_v_indices] = tau
        acc = N @ np.linalg.solve(N.T @ Mw @ N, N.T @ (tau_span - T.T @ d.qfrc_bias))
        (qdd,) = evaluate(aba, y, np.zeros(cm.nv), tau)
        assert_close(qdd, acc[cm.independent_v_indices], TOL_PIN, "C-ABA vs MuJoCo's M, bias, efc_J")


def test_against_pinocchio_mjcf_parser(tmp_path: Path):
    """Pinocchio reads only the first body under <worldbody> and turns <connect> into constraint
    models (it ignores <equality joint>): compare its spanning tree with the loader's."""
    path = tmp_path / "mechanism.xml"
    path.write_text(MECHANISM)
    cm = wbc.load_mjcf(path)
    pm = pin.buildModelFromMJCF(str(path))
    assert pm.nv == cm.tree.nv
    assert pm.nq == cm.tree.nq  # (Pinocchio makes the arm's two joints one composite joint)
    rng = np.random.default_rng(1)
    for _ in range(20):
        y = cm.random_configuration(rng, scale=0.5)
        v = rng.normal(size=cm.tree.nv)
        H = pin.crba(pm, pm.createData(), y)
        H = np.triu(H) + np.triu(H, 1).T
        H_w = np.array(ca.DM(D.crba(cm.tree, ca.DM(y)))) + np.diag(cm.armature)  # Pinocchio reads armature too
        assert_close(H_w, H, TOL_PIN, "Pinocchio MJCF crba")
        h = pin.nonLinearEffects(pm, pm.createData(), y, v)
        assert_close(np.array(ca.DM(D.nonlinear_effects(cm.tree, ca.DM(y), ca.DM(v)))).ravel(), h, TOL_PIN, "nle")


def _rpy_quat(rpy) -> str:
    """A URDF rpy as MuJoCo's ``quat`` (w x y z), full precision."""
    r, p, y = (float(x) for x in rpy)
    cr, sr, cp, sp, cy, sy = (np.cos(r / 2), np.sin(r / 2), np.cos(p / 2), np.sin(p / 2), np.cos(y / 2), np.sin(y / 2))
    q = [
        cr * cp * cy + sr * sp * sy,
        sr * cp * cy - cr * sp * sy,
        cr * sp * cy + sr * cp * sy,
        cr * cp * sy - sr * sp * cy,
    ]
    return " ".join(f"{x:.17g}" for x in q)


def urdf_to_mjcf(text: str) -> str:
    """A URDF tree (revolute, prismatic and fixed joints, diagonal inertias) written as MJCF by hand,
    numbers at full precision (MuJoCo's own ``mj_saveLastXML`` rounds them to 6 digits)."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(text)
    links = {link.get("name"): link for link in root.findall("link")}
    children: dict[str, list] = {}
    for j in root.findall("joint"):
        children.setdefault(j.find("parent").get("link"), []).append(j)
    child_links = {j.find("child").get("link") for j in root.findall("joint")}
    (base,) = [n for n in links if n not in child_links]

    def inertial(link) -> str:
        el = link.find("inertial")
        if el is None:
            return ""
        o, m, i = el.find("origin"), el.find("mass"), el.find("inertia")
        diag = " ".join(i.get(k) for k in ("ixx", "iyy", "izz"))
        return (
            f'<inertial pos="{o.get("xyz", "0 0 0")}" quat="{_rpy_quat(o.get("rpy", "0 0 0").split())}" '
            f'mass="{m.get("value")}" diaginertia="{diag}"/>'
        )

    def body(joint) -> str:
        child = joint.find("child").get("link")
        o = joint.find("origin")
        out = f'<body name="{child}" pos="{o.get("xyz", "0 0 0")}" quat="{_rpy_quat(o.get("rpy", "0 0 0").split())}">'
        kind = joint.get("type")
        if kind != "fixed":
            mj = "hinge" if kind in ("revolute", "continuous") else "slide"
            out += f'<joint name="{joint.get("name")}" type="{mj}" axis="{joint.find("axis").get("xyz")}"/>'
        out += inertial(links[child])
        out += "".join(body(c) for c in sorted(children.get(child, []), key=lambda e: e.get("name")))
        return out + "</body>"

    inner = "".join(body(c) for c in sorted(children.get(base, []), key=lambda e: e.get("name")))
    return f'<mujoco model="tree"><compiler angle="radian"/><worldbody>{inner}</worldbody></mujoco>'


def test_tree_only_mjcf_equals_load_urdf():
    """The same random tree as URDF and as MJCF: the same robot (and MuJoCo agrees with the MJCF)."""
    kinds = ("revolute_x", "revolute_y", "revolute_z", "revolute_unaligned", "prismatic", "fixed")
    text = synthetic.random_tree_urdf(10, np.random.default_rng(5), kinds=kinds)
    mjcf = urdf_to_mjcf(text)
    cm = wbc.load_mjcf(mjcf)
    tree = wbc.load_urdf(text, floating_base=False)
    assert cm.nv == tree.nv and not cm.clusters
    perm = [tree.joint_id(cm.tree.joints[i].name) - 1 for i in range(1, cm.tree.njoints)]
    m, d = _mj(mjcf)
    rng = np.random.default_rng(6)
    for _ in range(20):
        q = rng.uniform(-1, 1, tree.nq)
        v = rng.normal(size=tree.nv)
        y = q[perm]
        H_u = np.array(ca.DM(D.crba(tree, ca.DM(q))))[np.ix_(perm, perm)]
        H_m = np.array(ca.DM(D.crba(cm.tree, ca.DM(y))))
        assert_close(H_m, H_u, TOL_PIN, "MJCF vs URDF inertia")
        h_u = np.array(ca.DM(D.nonlinear_effects(tree, ca.DM(q), ca.DM(v)))).ravel()[perm]
        h_m = np.array(ca.DM(D.nonlinear_effects(cm.tree, ca.DM(y), ca.DM(v[perm])))).ravel()
        assert_close(h_m, h_u, TOL_PIN, "MJCF vs URDF bias")
        d.qpos[:], d.qvel[:] = y, v[perm]
        mujoco.mj_forward(m, d)
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, M)
        assert_close(H_m, M, TOL_PIN, "MJCF vs MuJoCo")
        assert_close(h_m, d.qfrc_bias, TOL_PIN, "MJCF bias vs MuJoCo")


_B = (
    "<body name='b'><joint name='j'/><inertial pos='0 0 0' mass='1' diaginertia='1 1 1'/><site name='s'/>"
    "<body name='c' pos='0 0 1'><joint name='k'/><inertial pos='0 0 0' mass='1' diaginertia='1 1 1'/>"
    "<site name='s2'/></body></body>"
)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("<robot/>", "expected <mujoco>"),
        ("<mujoco><include file='x.xml'/><worldbody/></mujoco>", "MuJoCo rejected the file: .*x.xml"),
        (
            f"<mujoco><worldbody>{_B}</worldbody><tendon><spatial name='t'><site site='s'/><site site='s2'/>"
            "</spatial></tendon><equality><tendon name='e' tendon1='t'/></equality></mujoco>",
            "equality 'e' holds the spatial tendon 't'",
        ),
        (
            f"<mujoco><worldbody>{_B}</worldbody><tendon><fixed name='t1'><joint joint='j' coef='1'/></fixed>"
            "<fixed name='t2'><joint joint='k' coef='1'/></fixed></tendon>"
            "<equality><tendon name='e' tendon1='t1' tendon2='t2' polycoef='0 1 0.5 0 0'/></equality></mujoco>",
            "degree > 1",
        ),
        (f"<mujoco><worldbody>{_B}</worldbody><actuator><motor name='thrust' site='s2'/></actuator></mujoco>", "site"),
        (
            "<mujoco><worldbody><flexcomp name='cloth' type='grid' count='3 3 1' spacing='.1 .1 .1' dim='2' "
            "mass='1' radius='0.01'/></worldbody></mujoco>",
            "flex 'cloth'",
        ),
        (
            "<mujoco><worldbody><body name='b'><freejoint/><inertial pos='0 0 0' mass='1' diaginertia='1 1 1'/></body>"
            "</worldbody><equality><connect body1='b' anchor='0 0 0'/></equality></mujoco>",
            "free_flyer",
        ),
        ("<mujoco><worldbody><body><joint/></body></worldbody></mujoco>", "mass and inertia of moving bodies"),
        ("<mujoco><worldbody", "MuJoCo rejected the file"),
    ],
)
def test_bad_mjcf_is_a_model_error_naming_the_element(text, match):
    with pytest.raises(wbc.ModelError, match=match):
        wbc.load_mjcf(text)


def test_missing_file():
    with pytest.raises(wbc.ModelError, match="no such MJCF file"):
        wbc.load_mjcf("/nonexistent/robot.xml")
