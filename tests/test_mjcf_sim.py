"""The user's own MJCF in MuJoCo (``MujocoSim.from_mjcf``) and a legged robot from any MJCF
(``wbc.sim.mjcf_robot``) standing under the controller.

* the file is simulated as written: its options and geoms are MuJoCo's own, the state conversion is
  exact (ball joints' ``wxyz``, free joints' world-frame linear velocity), MuJoCo's ``M`` and ``h``
  are wbc's (armature included), frames agree;
* wbc's torques reach the joints through the file's motors (``qfrc_actuator = Sᵀ τ``, gears and
  several motors on one joint included); servos are replaced by torque motors, with a warning;
* ``mjcf_robot``: feet from geoms (capsule ends, boxes), bodies (soles bounding their geoms) and
  sites; the standing configuration on the floor; refusals named;
* gymnasium's ``ant.xml`` and dm_control's ``humanoid.xml`` stand in their own files, the files'
  actuator limits as torque limits.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

import wbc
from tests.helpers import assert_close
from tests.test_mjcf_compiled import ACTUATED, JOINTS

mujoco = pytest.importorskip("mujoco")

from wbc.sim.balance import Balance, Scenario  # noqa: E402
from wbc.sim.mjcf_robot import mjcf_robot  # noqa: E402
from wbc.sim.mjcf_scene import ServoReplacedWarning  # noqa: E402
from wbc.sim.mujoco import MujocoSim  # noqa: E402

ANT_FEET = ("left_ankle_geom", "right_ankle_geom", "third_ankle_geom", "fourth_ankle_geom")


def _asset(package: str, relative: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        pytest.skip(f"{package} is not installed (the mjcf-files extra)")
    return Path(spec.origin).parent / relative


def test_the_file_as_written_state_dynamics_and_frames():
    cm = wbc.load_mjcf(JOINTS)
    sim = MujocoSim.from_mjcf(JOINTS, cm)
    given = mujoco.MjModel.from_xml_string(JOINTS)
    assert sim.timestep == given.opt.timestep and sim.mjmodel.ngeom == given.ngeom  # no floor added
    assert sim.mjmodel.nu == sim.n_inputs == cm.tree.nv - 6  # no actuators: torque motors on every joint
    rng = np.random.default_rng(0)
    arm = cm.armature
    for _ in range(3):
        y, v = wbc.random_configuration(cm.tree, rng), rng.normal(size=cm.tree.nv)
        sim.set_state(y, v)
        y2, v2 = sim.get_state()
        assert_close(y2, y, 1e-15)
        assert_close(v2, v, 1e-13)
        assert_close(sim.mass_matrix(), wbc.crba(cm.tree, y) + np.diag(arm), 1e-12, "M")
        assert_close(sim.bias_forces(), wbc.nonlinear_effects(cm.tree, y, v), 1e-12, "h")
        for name in ("elbow", "foot", "hand", "imu", "toe"):
            assert_close(sim.frame_placement(name), wbc.frame_placement(cm.tree, y, name), 1e-12, name)


def test_torques_reach_the_joints_through_the_files_motors():
    with pytest.warns(wbc.ModelWarning):
        cm = wbc.load_mjcf(ACTUATED)
    with pytest.warns(ServoReplacedWarning, match="'p2'"):
        sim = MujocoSim.from_mjcf(ACTUATED, cm)
    names = [sim.mjmodel.actuator(a).name for a in range(sim.mjmodel.nu)]
    assert "p2" not in names and "m45" in names  # the servo is gone; the tendon motor idles
    tree = cm.tree
    rng = np.random.default_rng(1)
    tau = rng.uniform(-0.5, 0.5, sim.n_inputs)  # inside the file's control ranges
    sim.set_state(wbc.random_configuration(tree, rng))
    sim.set_torques(tau)
    sim.forward()
    assert_close(sim.mjdata.qfrc_actuator, tree.actuation_matrix() @ tau, 1e-12, "qfrc_actuator")


def test_compiled_model_with_servos_is_refused_and_without_them_simulated():
    refused = pytest.raises(wbc.InputError, match=r"pass the file, its text or its mujoco\.MjSpec")
    with refused, warnings.catch_warnings():
        warnings.simplefilter("ignore", wbc.ModelWarning)
        MujocoSim.from_mjcf(mujoco.MjModel.from_xml_string(ACTUATED))
    text = ACTUATED.replace('<position name="p2" joint="j2" kp="10" forcerange="-1 1"/>', "")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wbc.ModelWarning)
        sim = MujocoSim.from_mjcf(mujoco.MjModel.from_xml_string(text))
    sim.set_torques(np.full(sim.n_inputs, 0.1))
    sim.step(3)


def test_mjcf_robot_feet_and_standing_configuration():
    ant = mjcf_robot(_asset("gymnasium", "envs/mujoco/assets/ant.xml"), ANT_FEET)
    assert ant.sole is None and ant.foot_radius == pytest.approx(0.08) and ant.feet == ANT_FEET
    assert isinstance(ant.model, wbc.ClusterModel) and np.all(ant.model.armature[6:] == 1.0)
    assert np.all(ant.model.tree.effort_limit == 150.0)  # gear 150, ctrlrange ±1
    for f in ant.feet:  # sphere centres one radius (and MuJoCo's margin) above the floor
        assert wbc.frame_placement(ant.model.tree, ant.q0, f)[2, 3] == pytest.approx(0.08 + 0.02)  # + includemargin
    humanoid = mjcf_robot(_asset("dm_control", "suite/humanoid.xml"), ["left_foot", "right_foot"])
    assert humanoid.feet == ("left_foot_sole", "right_foot_sole") and humanoid.foot_radius is None
    sole = humanoid.sole  # the box bounding the foot's two capsules
    assert (sole.length, sole.width) == pytest.approx((0.2694, 0.1237), abs=1e-3)
    for f in humanoid.feet:
        assert_close(wbc.frame_placement(humanoid.model.tree, humanoid.q0, f)[2, 3], 0.0, 1e-12)
    with pytest.raises(wbc.ModelError, match="no geom, body or site called 'paw'"):
        mjcf_robot(_asset("gymnasium", "envs/mujoco/assets/ant.xml"), ["paw"])
    with pytest.raises(wbc.InputError, match=r"feet must be a list of names, got one string: write \['left_foot'\]"):
        mjcf_robot(_asset("dm_control", "suite/humanoid.xml"), "left_foot")  # not the letters of one name
    with pytest.raises(wbc.ModelError, match="mix soles"):
        mjcf_robot(_asset("dm_control", "suite/humanoid.xml"), ["left_foot", "right_right_foot"])
    with pytest.raises(wbc.ModelError, match="floating base"):
        mjcf_robot(_asset("gymnasium", "envs/mujoco/assets/reacher.xml"), ["fingertip"])


def test_ant_stands_in_its_own_file():
    robot = mjcf_robot(_asset("gymnasium", "envs/mujoco/assets/ant.xml"), ANT_FEET)
    balance = Balance(robot, Scenario.standing(1.5))
    assert balance.dt == 0.01  # the file's time step
    run = balance.run(progress=False)
    summary = balance.summarize(run)
    assert not summary["fell"] and summary["non_optimal_steps"] == 0
    assert summary["max_foot_slip_m"] < 2e-3 and summary["max_com_error_m"] < 0.02
    assert np.abs(run["tau"]).max() <= 150.0 + 1e-9  # the file's limits


@pytest.mark.slow
def test_dm_control_humanoid_sways_and_takes_pushes_in_its_own_file():
    from wbc.sim.balance import standard_scenario

    robot = mjcf_robot(_asset("dm_control", "suite/humanoid.xml"), ["left_foot", "right_foot"])
    balance = Balance(robot, standard_scenario(robot, 9.0))
    run = balance.run(progress=False)
    summary = balance.summarize(run)
    assert not summary["fell"] and summary["non_optimal_steps"] == 0
    assert summary["max_com_error_m"] < 0.02 and summary["max_foot_slip_m"] < 0.03
    limit = robot.model.tree.effort_limit
    assert np.all(np.abs(run["tau"]) <= limit + 1e-9)


def test_generated_scene_of_a_model_with_ball_joints():
    """A wbc model with ball joints (no file) in the generated scene: MuJoCo's balls (wxyz), three
    motors each; state, M, h and the acceleration under torques are wbc's."""
    from tests.helpers import BALL_TREE_CASES, ball_tree_case

    for args in BALL_TREE_CASES[:2]:
        m = ball_tree_case(*args).model
        sim = MujocoSim(m, floor=False)
        assert sim.mjmodel.nu == m.n_actuated
        rng = np.random.default_rng(2)
        q, v = wbc.random_configuration(m, rng), rng.normal(size=m.nv)
        sim.set_state(q, v)
        q2, v2 = sim.get_state()
        assert_close(q2, q, 1e-15)
        assert_close(v2, v, 1e-13)
        assert_close(sim.mass_matrix(), wbc.crba(m, q), 1e-12, "M")
        assert_close(sim.bias_forces(), wbc.nonlinear_effects(m, q, v), 1e-12, "h")
        tau = rng.normal(size=m.n_actuated)
        sim.set_torques(tau)
        assert_close(sim.acceleration(), wbc.aba(m, q, v, m.actuation_matrix() @ tau), 1e-10, "aba")
