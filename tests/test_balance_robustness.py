"""Standing balance under pushes: contact stabilisation, the contact wrench cone against MuJoCo's
friction model, and foot slip in the balance demo's own scene.

* The contact schedule records where each contact was placed (measured at the first step that
  enforces it, or given with the activation) and its pose-feedback gains; both reach the kernel
  without recompiling (the feedback law itself is checked against Pinocchio in test_controller.py).
* The sole's contact wrench cone (``mu = 0.7``, corner pyramids inscribed in the Coulomb cone) is
  held by MuJoCo's contact model of the demo's scene (friction 1, elliptic cones) at any sole yaw;
  with pyramidal cones MuJoCo's pyramid is fixed in its own contact axes, so the controller's cone
  is held only while ``mu ≤ μ_MuJoCo / √2`` — a cone with the simulator's own ``μ`` slips.
* A mid-size lateral push on Talos (the demo's push scenario) moves the feet by less than 1 cm.
"""

from __future__ import annotations

import numpy as np
import pytest

import wbc
from tests.helpers import robot_case
from wbc import tasks

mujoco_bridge = pytest.importorskip("wbc.sim.mujoco")

from wbc.sim import balance  # noqa: E402


def _talos(kp: float = 100.0):
    case = robot_case("talos")
    spec, model = case.spec, case.model
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=0.7, kp=kp) for f in spec.feet]
    com = tasks.CoMTask(weight=10.0, kp=100.0)
    com.set_target_from_configuration(model, spec.q0)
    ctrl = wbc.WholeBodyController(model, [com, tasks.PostureTask(model, weight=1e-2, kp=30.0)], contacts)
    return case, ctrl


# ------------------------------------------------------------------------------ contact placements
def test_placements_are_measured_at_activation_and_feedback_is_zero_there():
    """At rest where the feet stand, the pose feedback adds nothing: the QP is the plain contact's."""
    case, ctrl = _talos(kp=100.0)
    _, plain = _talos(kp=0.0)
    model, spec = case.model, case.spec
    q, v = spec.q0, np.zeros(model.nv)
    with_feedback, without = ctrl.build_problem(q, v), plain.build_problem(q, v)
    for c in ctrl.contacts:
        state = ctrl.contact_state(c.name)
        assert state.placed and (state.kp, state.kd) == (100.0, 20.0)
        np.testing.assert_allclose(state.placement, wbc.frame_placement(model, q, c.frame), atol=1e-12)
    np.testing.assert_allclose(with_feedback.b_eq, without.b_eq, atol=1e-9)


def test_a_given_placement_is_held_and_a_released_contact_is_placed_again():
    case, ctrl = _talos()
    model, spec = case.model, case.spec
    q, v = spec.q0, np.zeros(model.nv)
    right = ctrl.contacts[1].name
    ctrl.step(q, v)
    kernel = ctrl.kernel
    target = wbc.frame_placement(model, q, right)
    target[0, 3] += 0.01  # 1 cm ahead of where the foot is
    ctrl.activate_contact(right, placement=target)
    cmd = ctrl.step(q, v)
    np.testing.assert_array_equal(ctrl.contact_state(right).placement, target)
    sole_acc = wbc.frame_jacobian(model, q, right, wbc.ReferenceFrame.LOCAL) @ cmd.qdd  # v = 0: no drift
    assert sole_acc[0] > 0.99 and np.abs(sole_acc[1:]).max() < 1e-6  # K_p x 1 cm = 1 m/s² toward it
    ctrl.deactivate_contact(right)
    ctrl.step(q, v)
    ctrl.activate_contact(right)  # placed again where the next step finds it
    assert not ctrl.contact_state(right).placed
    ctrl.step(q, v)
    np.testing.assert_allclose(ctrl.contact_state(right).placement, wbc.frame_placement(model, q, right), atol=1e-12)
    ctrl.set_contact_gains(right, 0.0)
    cmd = ctrl.step(q, v)
    assert ctrl.kernel is kernel, "placements and gains are parameters: no recompilation"


def test_contact_state_is_a_copy():
    _, ctrl = _talos()
    name = ctrl.contacts[0].name
    state = ctrl.contact_state(name)
    before = state.parameters.copy()
    state.parameters[:] = np.nan
    np.testing.assert_array_equal(ctrl.contact_state(name).parameters, before)


def test_bad_placements_and_gains_raise_clear_errors():
    _, ctrl = _talos()
    name = ctrl.contacts[0].name
    with pytest.raises(wbc.InputError, match="homogeneous"):
        ctrl.activate_contact(name, placement=np.eye(3))
    bad = np.eye(4)
    bad[0, 0] = 2.0
    with pytest.raises(wbc.InputError, match="rotation"):
        ctrl.activate_contact(name, placement=bad)
    with pytest.raises(wbc.InputError, match="gains"):
        ctrl.set_contact_gains(name, -1.0)
    with pytest.raises(wbc.InputError, match="gains"):
        wbc.SurfaceContact("left_sole_link", 0.2, 0.1, kp=float("nan"))
    with pytest.raises(wbc.InputError, match="no contact named"):
        ctrl.activate_contact("nose")


# ------------------------------------------------------------------------------ cone vs MuJoCo
_BLOCK = """<robot name="sole_block"><link name="block"><inertial><origin xyz="0 0 0.05"/><mass value="10"/>
<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link><link name="sole"/>
<joint name="sole_fix" type="fixed"><parent link="block"/><child link="sole"/></joint></robot>"""


def _cone_extremes(mu: float, fz: float) -> dict[str, np.ndarray]:
    """Wrenches on the boundary of a 0.2 x 0.13 m sole's cone (sole axes, at the sole centre), normal
    force ``fz``, each made of corner forces on the edges of their pyramids."""
    corners = wbc.SurfaceCornersContact("sole", 0.2, 0.13, mu=mu)
    m = mu / np.sqrt(2)
    x, y = corners.corners()[:, 0], corners.corners()[:, 1]  # (−x, −y), (−x, +y), (+x, −y), (+x, +y)
    spin = np.column_stack([-np.sign(y) * m, np.sign(x) * m, np.ones(4)])  # tangential ⟂ the lever arm
    toe = np.array([[0, 0, 0], [0, 0, 0], [0, m, 1], [0, m, 1]])
    forces = {
        "tangential, corner of the pyramid": np.tile([m, m, 1.0], (4, 1)) / 4,
        "tangential, face of the pyramid": np.tile([m, 0, 1.0], (4, 1)) / 4,
        "largest yaw moment": spin / 4,
        "CoP on the toe edge, tangential": toe / 2,
    }
    return {name: corners.force_basis() @ (f * fz).reshape(12) for name, f in forces.items()}


def _held(wrench: np.ndarray, yaw: float, cone: str, seconds: float = 0.4) -> float:
    """How far (m) a sole block slides in MuJoCo, the demo's contact settings with ``cone``, while the
    floor has to supply ``wrench`` (sole axes, at the sole centre; ramped in over 0.1 s)."""
    model = wbc.load_urdf(_BLOCK)
    sim = mujoco_bridge.MujocoSim(model, [("sole", 0.2, 0.13)], contact=mujoco_bridge.ContactParameters(cone=cone))
    q = wbc.neutral(model)
    q[3:7] = [0.0, 0.0, np.sin(yaw / 2), np.cos(yaw / 2)]
    sim.reset(q)
    data, body = sim.mjdata, sim.mjmodel.body("block").id
    R = sim.frame_placement("sole")[0:3, 0:3]
    weight = np.array([0.0, 0.0, 10 * 9.81])
    start = sim.frame_placement("sole")[0:2, 3].copy()
    for i in range(int(seconds / sim.timestep)):
        s = min(1.0, i / 100)
        f = s * R @ wrench[0:3] + (1 - s) * weight  # what the floor must supply
        moment = s * R @ wrench[3:6]
        sole = sim.frame_placement("sole")[0:3, 3]
        data.xfrc_applied[body, 0:3] = weight - f
        data.xfrc_applied[body, 3:6] = -(moment + np.cross(sole - data.xipos[body], f))
        sim.step()
    return float(np.linalg.norm(sim.frame_placement("sole")[0:2, 3] - start))


@pytest.mark.parametrize("cone", ["elliptic", "pyramidal"])
def test_the_contact_wrench_cone_is_held_by_mujoco_at_any_sole_yaw(cone):
    """The demo's cone (mu 0.7) against MuJoCo's friction 1: held for both cone models at 0°, 17°, 45°
    of yaw (creep well under a millimetre), and every tested wrench is on the cone's boundary."""
    G, h, _ = wbc.SurfaceContact("sole", 0.2, 0.13, mu=0.7).inequalities(0.0, np.inf)
    for name, w in _cone_extremes(0.7, 400.0).items():
        assert np.all(G @ w <= h + 1e-9) and np.max(G @ w - h) > -1e-9, f"{name}: not on the cone's boundary"
        for yaw in (0.0, 0.3, np.pi / 4):
            assert _held(w, yaw, cone) < 5e-4, f"{cone}, yaw {np.degrees(yaw):.0f}°: {name} slides"


def test_a_cone_with_mujocos_own_friction_slides_on_pyramidal_cones_but_not_on_elliptic_ones():
    """Why the inscribed pyramid matters: with mu = μ_MuJoCo = 1, the pyramid's corner direction is
    held by elliptic cones but not by MuJoCo's pyramid when the sole is aligned with its axes; and a
    force beyond MuJoCo's friction slides in both (the check can fail)."""
    corner = _cone_extremes(1.0, 400.0)["tangential, corner of the pyramid"]
    assert _held(corner, 0.0, "elliptic") < 5e-4
    assert _held(corner, 0.0, "pyramidal") > 0.05
    beyond = np.array([1.1, 0, 1, 0, 0, 0]) * 400.0
    assert _held(beyond, 0.0, "elliptic") > 0.05


# ------------------------------------------------------------------------------ pushes in the demo
def test_a_mid_size_push_slips_less_than_a_centimetre():
    """Talos, the demo's push scenario (lateral, 0.1 s, on the pelvis): 300 N, where the controller
    without contact feedback slipped 1.5 cm (and TSID 1.2 cm), moves the feet by less than 1 cm."""
    out = balance.push_trial("talos", balance.PushTrial(300.0))
    assert out.up and out.base_ratio > 0.95
    assert out.survived and out.slip_m < 0.01, out
    assert out.non_optimal_steps == 0


@pytest.mark.slow
def test_push_scan_rows_and_first_failure_and_fall():
    """The push scan reports, per force, up/slip/pelvis and the first failure and fall (G1, coarse grid)."""
    out = balance.push_scan("g1", [0.0, 100.0, 400.0])
    assert [r["force_N"] for r in out["rows"]] == [0.0, 100.0, 400.0]
    assert out["rows"][0]["survived"] and out["rows"][0]["slip_m"] < 1e-3
    assert out["first_fall_N"] == 400.0 and out["first_failure_N"] <= 400.0


@pytest.mark.slow
def test_a_short_soak_does_not_fall():
    """Random pushes (50-300 N every 0.5-1 s) for 20 s on Talos: no fall, no NaN, no exception."""
    out = balance.soak("talos", balance.SoakSettings(seconds=20.0, seed=1), progress=False)
    assert out["pushes"] >= 20
    assert out["n_falls"] == 0 and out["nan_steps"] == 0 and not out["exceptions"], out
    assert out["foot_drift_max_m"] < 0.02, out
