"""``wbc.load_mjcf`` reads what MuJoCo compiled: each feature against MuJoCo's own model of the file.

* joints: ball joints (wxyz in ``qpos``), a hinge's and a slide's ``ref`` (``qpos0``), several joints
  in one body about their anchors, ``<frame>``, ``<include>``, inertia from geoms and meshes,
  ``fusestatic``: mass matrix (armature included), bias forces, and every body and site frame
  against ``mj_fullM``, ``qfrc_bias``, ``xpos``/``xmat``, ``site_xpos``/``site_xmat`` at random states;
* equalities: wbc's clusters close their loops where MuJoCo's equality rows vanish (``efc_pos``):
  site and body ``connect``, ``weld`` with an anchor and an explicit ``relpose``, joint polynomials
  and tendon equalities with ``ref``;
* actuators: effort limits from gear, control, force and joint ranges; actuator armature; tendon
  actuators; refusals and warnings;
* sources: a path, text, a ``mujoco.MjSpec`` (left untouched), a ``mujoco.MjModel``; MuJoCo's
  refusals and a missing ``mujoco`` as clear errors.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import casadi as ca
import numpy as np
import pytest

import wbc
from tests.helpers import assert_close
from wbc.algorithms import dynamics as D

mujoco = pytest.importorskip("mujoco")

from wbc.sim.mujoco import bias_to_wbc, mass_matrix_to_wbc, q_from_qpos, qpos_from_q, qvel_from_v  # noqa: E402

TOL = 1e-12

JOINTS = """
<mujoco model="joints">
  <default><joint armature="0.01" damping="0.1"/><geom density="800"/></default>
  <worldbody>
    <body name="torso" pos="0.1 -0.2 1.1" euler="10 20 30">
      <freejoint name="root"/>
      <geom type="box" size="0.2 0.15 0.1"/>
      <site name="imu" pos="0.05 0 0.1" euler="0 90 0"/>
      <body name="shoulder" pos="0.2 0.2 0.05" euler="5 -10 15">
        <joint name="shoulder" type="ball" pos="0.01 0.02 0" range="0 60"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.04"/>
        <frame pos="0.3 0 0" euler="0 0 20">
          <body name="elbow">
            <joint name="elbow" axis="0 1 0" ref="30" range="-90 120"/>
            <geom type="capsule" fromto="0 0 0 0.25 0.01 0" size="0.035"/>
            <site name="hand" pos="0.25 0 0" quat="0.9 0.1 0.3 0.2"/>
          </body>
        </frame>
      </body>
      <body name="hip" pos="0 -0.1 -0.15">
        <joint name="hip_x" axis="1 0 0" pos="0 0 0.02" ref="-10"/>
        <joint name="hip_y" axis="0 1 0.2" pos="0.01 0 0"/>
        <joint name="hip_slide" type="slide" axis="0 0.3 1" ref="0.05"/>
        <geom type="cylinder" fromto="0 0 0 0 0 -0.4" size="0.05"/>
        <body name="foot" pos="0 0 -0.4">
          <joint name="ankle" type="ball" armature="0.02"/>
          <geom name="sole" type="box" size="0.1 0.05 0.02" pos="0.03 0 -0.02"/>
          <body name="toe" pos="0.12 0 -0.02">
            <geom type="sphere" size="0.02"/>
          </body>
        </body>
      </body>
    </body>
    <body name="pendulum" pos="1 0 1">
      <joint name="swing" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.03"/>
    </body>
  </worldbody>
</mujoco>
"""


def _mj(source):
    m = mujoco.MjModel.from_xml_string(source) if isinstance(source, str) else source
    return m, mujoco.MjData(m)


def _against_mujoco(cm: wbc.ClusterModel, m, seed: int = 0, states: int = 5) -> None:
    """M + armature, h and every body and site frame against MuJoCo at random states."""
    tree, d = cm.tree, mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    arm = np.zeros(tree.nv) if cm.armature is None else cm.armature
    M_mj = np.zeros((m.nv, m.nv))
    for _ in range(states):
        y, v = wbc.random_configuration(tree, rng), rng.normal(size=tree.nv)
        d.qpos[:], d.qvel[:] = qpos_from_q(tree, y), qvel_from_v(tree, y, v)
        mujoco.mj_forward(m, d)
        mujoco.mj_fullM(m, d, M_mj)
        H = np.array(ca.DM(D.crba(tree, ca.DM(y)))) + np.diag(arm)
        assert_close(H, mass_matrix_to_wbc(tree, y, M_mj), TOL, "M + armature")
        h = np.array(ca.DM(D.nonlinear_effects(tree, ca.DM(y), ca.DM(v)))).ravel()
        assert_close(h, bias_to_wbc(tree, y, v, M_mj, d.qfrc_bias), TOL, "bias")
        for b in range(1, m.nbody):
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b)
            T = wbc.frame_placement(tree, y, name)
            assert_close(T[0:3, 3], d.xpos[b], TOL, f"body {name}")
            assert_close(T[0:3, 0:3], d.xmat[b].reshape(3, 3), TOL, f"body {name}")
        for s in range(m.nsite):
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_SITE, s)
            T = wbc.frame_placement(tree, y, name)
            assert_close(T[0:3, 3], d.site_xpos[s], TOL, f"site {name}")
            assert_close(T[0:3, 0:3], d.site_xmat[s].reshape(3, 3), TOL, f"site {name}")


def test_joints_refs_frames_and_geom_inertia_match_mujoco():
    cm = wbc.load_mjcf(JOINTS)
    m, _ = _mj(JOINTS)
    tree = cm.tree
    assert (tree.nq, tree.nv) == (m.nq, m.nv)
    kinds = [j.type for j in tree.joints[1:]]
    B, R, P = wbc.JointType.SPHERICAL, wbc.JointType.REVOLUTE, wbc.JointType.PRISMATIC
    assert kinds == [wbc.JointType.FREE_FLYER, B, R, R, R, P, B, R]
    assert tree.joints[tree.joint_id("shoulder")].max_angle == pytest.approx(np.pi / 3)
    elbow = tree.joints[tree.joint_id("elbow")]
    assert (elbow.lower[0], elbow.upper[0]) == pytest.approx((-np.pi / 2, 2 * np.pi / 3))
    assert cm.armature is not None and cm.armature[tree.joints[tree.joint_id("ankle")].idx_v] == 0.02
    assert tree.total_mass == pytest.approx(float(np.sum(m.body_mass)), rel=1e-12)
    assert tree.actuated == tuple(i for i in range(2, tree.njoints))  # no actuators: every joint but the root
    _against_mujoco(cm, m)


def test_qpos0_is_the_pose_in_the_file():
    """At MuJoCo's ``qpos0`` (the hinge's and the slide's ``ref``) every body is where the file puts it."""
    cm = wbc.load_mjcf(JOINTS)
    m, d = _mj(JOINTS)
    mujoco.mj_kinematics(m, d)  # qpos = qpos0
    y = q_from_qpos(cm.tree, m.qpos0)  # the quaternions in wbc's order
    assert y[cm.tree.joints[cm.tree.joint_id("elbow")].idx_q] == pytest.approx(np.pi / 6)
    for b in range(1, m.nbody):
        T = wbc.frame_placement(cm.tree, y, mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b))
        assert_close(T[0:3, 3], d.xpos[b], TOL)


def test_include_meshes_and_static_bodies(tmp_path: Path):
    """``<include>`` and mesh inertia come from MuJoCo's compiler; a file is read from its own folder."""
    (tmp_path / "tetra.obj").write_text(
        "v 0 0 0\nv 0.2 0 0\nv 0 0.15 0\nv 0 0 0.1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"
    )
    (tmp_path / "arm.xml").write_text(
        "<mujoco><body name='link' pos='0 0 0.5'><joint name='j2' axis='1 0 0'/>"
        "<geom type='mesh' mesh='tetra'/></body></mujoco>"
    )
    (tmp_path / "robot.xml").write_text(
        "<mujoco model='incl'><compiler fusestatic='true'/><asset><mesh name='tetra' file='tetra.obj'/></asset>"
        "<worldbody><body name='base'><joint name='j1' axis='0 0 1'/><geom type='mesh' mesh='tetra'/>"
        "<body name='static' pos='0.1 0 0'><geom size='0.05'/></body>"
        "<include file='arm.xml'/></body></worldbody></mujoco>"
    )
    cm = wbc.load_mjcf(tmp_path / "robot.xml")
    assert cm.name == "incl" and cm.tree.source == str(tmp_path / "robot.xml")
    m = mujoco.MjModel.from_xml_path(str(tmp_path / "robot.xml"))
    assert cm.tree.nv == 2
    _against_mujoco(cm, m)


def test_sources_spec_model_text_and_path(tmp_path: Path):
    path = tmp_path / "joints.xml"
    path.write_text(JOINTS)
    spec = mujoco.MjSpec.from_string(JOINTS)
    before = spec.to_xml()
    models = [wbc.load_mjcf(JOINTS), wbc.load_mjcf(path), wbc.load_mjcf(str(path)), wbc.load_mjcf(spec)]
    models.append(wbc.load_mjcf(mujoco.MjModel.from_xml_string(JOINTS), name="given"))
    assert spec.to_xml() == before  # the caller's spec is not compiled in place
    assert models[-1].name == "given"
    y = wbc.random_configuration(models[0].tree, np.random.default_rng(3))
    H = wbc.crba(models[0].tree, y)
    for cm in models[1:]:
        assert cm.tree.joint_names == models[0].tree.joint_names
        assert_close(wbc.crba(cm.tree, y), H, TOL)


def test_errors_name_the_file_and_mujocos_message(tmp_path: Path, monkeypatch):
    bad = tmp_path / "bad.xml"
    bad.write_text(
        "<mujoco><worldbody><body name='b'><joint type='hinge' axis='0 0 0'/>"
        "<geom size='1'/></body></worldbody></mujoco>"
    )
    with pytest.raises(wbc.ModelError, match=rf"{bad}: MuJoCo rejected the file: .*axis"):
        wbc.load_mjcf(bad)
    with pytest.raises(wbc.ModelError, match="no such MJCF file"):
        wbc.load_mjcf(tmp_path / "missing.xml")
    with pytest.raises(wbc.ModelError, match="a directory"):
        wbc.load_mjcf(tmp_path)
    with pytest.raises(wbc.ModelError, match="got int"):
        wbc.load_mjcf(3)
    monkeypatch.setitem(sys.modules, "mujoco", None)  # as if not installed
    with pytest.raises(wbc.MissingDependency, match=r"wbc\[sim\]"):
        wbc.load_mjcf(JOINTS)


# ----------------------------------------------------------------------------- equalities
def _chain(eq: str = "", site_tip: str = "", site_base: str = "") -> str:
    """A 7-hinge spatial chain (a loop closed by ``eq`` keeps at least one degree of freedom)."""
    axes = ("1 0 0", "0 1 0", "0 0 1", "1 0 0", "0 1 0", "0 0 1", "1 1 0")
    body = ""
    for k, a in enumerate(axes):
        pos = f"{0.1 + 0.03 * k} {0.02 * (k % 3)} {0.03 * ((k * k) % 4)}"
        body += f'<body name="l{k}" pos="{pos}"><joint name="j{k}" axis="{a}"/><geom size="0.03" mass="0.2"/>'
    body += site_tip + "</body>" * len(axes)
    return (
        '<mujoco><compiler angle="radian"/><worldbody><body name="base" pos="0 0 1">'
        f'<inertial pos="0 0 0" mass="2" diaginertia="0.1 0.1 0.1"/>{site_base}{body}</body></worldbody>'
        f"<equality>{eq}</equality></mujoco>"
    )


def _text(x) -> str:
    return " ".join(repr(float(c)) for c in x)


def _closures() -> dict[str, str]:
    """Loops closed at a configuration ``qs`` away from ``qpos0`` (explicit relpose, sites that meet
    there) and at ``qpos0`` (relpose computed by MuJoCo)."""
    qs = np.array([0.3, -0.2, 0.25, 0.1, -0.3, 0.2, 0.15])
    m, d = _mj(_chain())
    d.qpos[:] = qs
    mujoco.mj_forward(m, d)
    t, b = m.body("l6").id, m.body("base").id
    R1, R2 = d.xmat[t].reshape(3, 3), d.xmat[b].reshape(3, 3)
    anchor = np.array([0.01, 0.02, 0.03])
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, (R1.T @ R2).ravel())
    relpose = _text(R1.T @ (d.xpos[b] + R2 @ anchor - d.xpos[t])) + " " + _text(quat)
    site_tip = f'<site name="st" pos="{_text(R1.T @ (d.xpos[b] + R2 @ anchor - d.xpos[t]))}" quat="{_text(quat)}"/>'
    site_base = f'<site name="sb" pos="{_text(anchor)}"/>'
    return {
        "weld_relpose": _chain(
            f'<weld name="w" body1="l6" body2="base" anchor="{_text(anchor)}" relpose="{relpose}"/>'
        ),
        "weld_sites": _chain('<weld name="w" site1="st" site2="sb"/>', site_tip, site_base),
        "connect_sites": _chain('<connect name="w" site1="st" site2="sb"/>', site_tip, site_base),
        "weld": _chain(f'<weld name="w" body1="l6" body2="base" anchor="{_text(anchor)}"/>'),
        "connect": _chain(f'<connect name="w" body1="l6" body2="base" anchor="{_text(anchor)}"/>'),
    }


COUPLINGS = """
<mujoco model="couplings">
  <compiler angle="radian"/>
  <worldbody>
    <body name="base" pos="0 0 1">
      <inertial pos="0 0 0" mass="2" diaginertia="0.1 0.1 0.1"/>
      <body name="a1"><joint name="a1" axis="0 1 0" ref="0.2"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02"/>
        <body name="a2" pos="0.3 0 0"><joint name="a2" axis="0 1 0" ref="-0.3"/>
          <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02"/>
          <site name="tip_a" pos="0.3 0 0" euler="0.1 0.2 0.3"/>
        </body>
      </body>
      <body name="b1" pos="0.5 0 0"><joint name="b1" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.1 0 0.2" size="0.02"/>
        <body name="b2" pos="0.1 0 0.2"><joint name="b2" axis="0 1 0"/>
          <geom type="capsule" fromto="0 0 0 -0.1 0 0" size="0.02"/>
          <site name="tip_b" pos="0 0 -0.2" euler="0.3 0.2 0.1"/>
        </body>
      </body>
      <body name="c1" pos="0 0.5 0"><joint name="c1" axis="1 0 0" ref="0.1"/><geom size="0.05" mass="0.3"/>
        <body name="c2" pos="0 0.2 0"><joint name="c2" axis="1 0 0" ref="0.4"/><geom size="0.05" mass="0.3"/>
          <body name="c3" pos="0 0.2 0"><joint name="c3" type="slide" axis="0 1 0" ref="0.05"/>
            <geom size="0.05" mass="0.3"/>
          </body>
        </body>
      </body>
      <body name="d1" pos="0 -0.5 0"><joint name="d1" axis="1 0 0"/><geom size="0.05" mass="0.3"/>
        <body name="d2" pos="0 -0.2 0.1"><joint name="d2" axis="0 0 1"/>
          <geom type="box" size="0.05 0.02 0.03" mass="0.3"/>
        </body>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="tc"><joint joint="c1" coef="1"/><joint joint="c2" coef="0.5"/></fixed>
    <fixed name="tc3"><joint joint="c3" coef="2"/></fixed>
  </tendon>
  <equality>
    <connect name="loop" site1="tip_a" site2="tip_b"/>
    <joint joint1="a2" joint2="a1" polycoef="0.1 0.5 0.3 0 0"/>
    <tendon tendon1="tc3" tendon2="tc" polycoef="0.02 0.4 0 0 0"/>
    <weld name="w" body1="d2" body2="base" anchor="0.01 0.02 0.03"/>
    <joint joint1="d1" joint2="b1" active="false"/>
  </equality>
</mujoco>
"""


def _equalities_hold_in_mujoco(text: str, scale: float) -> int:
    """wbc closes the loops at random independent coordinates; MuJoCo's equality rows vanish there and
    its constraint Jacobian annihilates wbc's ``G``. Returns how many states were checked."""
    cm = wbc.load_mjcf(text)
    m, d = _mj(text)
    rng = np.random.default_rng(1)
    checked = 0
    for _ in range(6):
        try:
            y = cm.random_configuration(rng, scale=scale)
        except wbc.InputError:  # out of the mechanism's range: draw again
            continue
        d.qpos[:] = qpos_from_q(cm.tree, y)
        mujoco.mj_forward(m, d)
        eq = d.efc_type[: d.nefc] == mujoco.mjtConstraint.mjCNSTR_EQUALITY
        assert np.abs(d.efc_pos[: d.nefc][eq]).max() < 1e-12
        J = d.efc_J.reshape(d.nefc, m.nv)[eq]
        G = np.array(ca.DM(cm.G_matrix(ca.DM(y))))
        assert np.abs(J @ G).max() < 1e-10
        checked += 1
    return checked


def test_couplings_with_refs_site_connect_and_weld_hold_in_mujoco():
    cm = wbc.load_mjcf(COUPLINGS)
    clusters = {c.declared.joints: c.declared for c in cm.infos if not c.trivial}
    assert set(clusters) == {("a1", "a2", "b1", "b2"), ("c1", "c2", "c3"), ("d1", "d2")}
    assert clusters["a1", "a2", "b1", "b2"].independent == ("a1",)  # a2 is joint1 of its equality
    assert clusters["d1", "d2"].independent == ()  # welded: no freedom left
    assert _equalities_hold_in_mujoco(COUPLINGS, 0.3) >= 4


@pytest.mark.parametrize("case", ["weld_relpose", "weld_sites", "connect_sites", "weld", "connect"])
def test_loop_closures_hold_in_mujoco(case):
    assert _equalities_hold_in_mujoco(_closures()[case], 0.05) >= 4


# ----------------------------------------------------------------------------- actuators
ACTUATED = """
<mujoco>
  <worldbody>
    <body name="b0"><joint name="j0"/><geom size="0.1"/>
      <body name="b1" pos="0 0 0.3"><joint name="j1" axis="1 0 0" actuatorfrcrange="-20 20"/><geom size="0.1"/>
        <body name="b2" pos="0 0 0.3"><joint name="j2" axis="0 1 0"/><geom size="0.1"/>
          <body name="b3" pos="0 0 0.3"><joint name="j3" type="slide"/><geom size="0.1"/>
            <body name="b4" pos="0 0 0.3"><joint name="j4" axis="1 0 0"/><joint name="j5" axis="0 1 0"/>
              <geom size="0.1"/>
            </body>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="t3"><joint joint="j3" coef="-0.5"/></fixed>
    <fixed name="t45"><joint joint="j4" coef="1"/><joint joint="j5" coef="1"/></fixed>
  </tendon>
  <actuator>
    <motor name="m0" joint="j0" gear="150" ctrlrange="-1 1"/>
    <motor name="m0b" joint="j0" gear="-10" ctrlrange="-2 3"/>
    <motor name="m1" joint="j1" gear="100" ctrlrange="-1 1"/>
    <motor name="m2" joint="j2" gear="3" ctrllimited="false" forcerange="-4 5" armature="0.2"/>
    <position name="p2" joint="j2" kp="10" forcerange="-1 1"/>
    <motor name="m3" tendon="t3" gear="2" ctrlrange="-3 3"/>
    <motor name="m45" tendon="t45" ctrlrange="-1 1"/>
  </actuator>
</mujoco>
"""


def test_actuators_effort_limits_armature_and_tendons():
    with pytest.warns(wbc.ModelWarning, match="m45"):
        cm = wbc.load_mjcf(ACTUATED)
    tree = cm.tree
    assert tree.actuated_joint_names == ("j0", "j1", "j2", "j3")  # j4, j5: only the two-joint tendon
    effort = dict(zip(tree.actuated_joint_names, tree.effort_limit))
    assert effort["j0"] == pytest.approx(150 + 10 * 2)
    assert effort["j1"] == pytest.approx(20)  # actuatorfrcrange caps 100
    assert effort["j2"] == pytest.approx(3 * 4 + 1)  # forcerange of the motor, the servo's own
    assert effort["j3"] == pytest.approx(2 * 0.5 * 3)
    m, _ = _mj(ACTUATED)
    assert cm.armature is not None and cm.armature[tree.joints[tree.joint_id("j2")].idx_v] == pytest.approx(9 * 0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wbc.ModelWarning)
        _against_mujoco(cm, m, states=2)  # the actuator's armature is in MuJoCo's M too


@pytest.mark.parametrize(
    ("actuator", "match"),
    [
        ("<motor name='thrust' site='s'/>", "'thrust' acts through a site"),
        ("<adhesion name='glue' body='b0' ctrlrange='0 1'/>", "'glue' acts through a body"),
        ("<motor name='f' joint='free'/>", "drives the free joint 'free'"),
    ],
)
def test_actuators_wbc_cannot_represent_are_refused(actuator, match):
    text = (
        "<mujoco><worldbody><body name='b0'><freejoint name='free'/><geom size='0.1'/><site name='s'/>"
        f"<body name='b1'><joint name='j'/><geom size='0.1'/></body></body></worldbody><actuator>{actuator}</actuator>"
        "</mujoco>"
    )
    with pytest.raises(wbc.ModelError, match=match):
        wbc.load_mjcf(text)
