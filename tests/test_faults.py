"""Fault injection (wbc.sim.faults, wbc.sim.mismatch, wbc.sim.injection): each fault is injected as
specified, and a run without faults is exactly the run it always was.

* Model mismatch: every massive body's mass, rotational inertia and centre of mass differ by exactly
  the requested amounts (SIGNS) or within them (UNIFORM); the simulated model is untouched; a robot
  file with other joints is refused.
* Sensors: the report is the true state exactly N periods earlier; bias ±b per channel; the white
  noise has the requested standard deviation (positions in the tangent space, the base orientation
  as a rotation vector); one report per period.
* Actuators: the command applies M periods later; the lag's per-period mean and end torques match a
  fine integration of ``τ̇ = (u − τ)/T``; quantization and saturation as specified.
* Joint friction reaches MuJoCo's model (damping force ``−b q̇`` on the actuated joints only).
* Faults off (None, all-off, or wrappers whose faults change nothing) reproduce the balance run bit
  for bit.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import wbc
from tests.helpers import ChainJoint, chain_urdf, robot_case

pytest.importorskip("wbc.sim.mujoco")

from wbc.sim import balance
from wbc.sim.faults import (
    Actuators,
    Faults,
    JointFriction,
    Latency,
    ModelMismatch,
    Noise,
    Perturbation,
    SensorNoise,
)
from wbc.sim.injection import Actuation, Injection, Sensors, inject
from wbc.sim.mismatch import body_inertial, controller_model
from wbc.sim.mujoco import MujocoSim


@pytest.fixture(scope="module")
def talos():
    return robot_case("talos")


def _talos_sim(case) -> MujocoSim:
    spec = case.spec
    sim = MujocoSim(case.model, [(f, spec.sole.length, spec.sole.width) for f in spec.feet])
    sim.reset(spec.q0)
    return sim


# ------------------------------------------------------------------------------------ descriptions
@pytest.mark.parametrize(
    "build, words",
    [
        (lambda: Noise(std=-1.0), "Noise.std"),
        (lambda: Noise(bias=math.nan), "Noise.bias"),
        (lambda: Latency(state_periods=1.5), "Latency.state_periods"),
        (lambda: Latency(command_periods=-1), "Latency.command_periods"),
        (lambda: ModelMismatch(mass=1.0), "ModelMismatch.mass"),
        (lambda: ModelMismatch(perturbation="gaussian"), "gaussian"),
        (lambda: Actuators(bandwidth_hz=0.0), "Actuators.bandwidth_hz"),
        (lambda: Actuators(quantum_Nm=math.inf), "Actuators.quantum_Nm"),
        (lambda: JointFriction(coulomb=-0.1), "JointFriction.coulomb"),
        (lambda: SensorNoise(joint_position=1e-3), "SensorNoise.joint_position"),
        (lambda: Faults(latency=2), "Faults.latency"),
        (lambda: Faults(seed=-1), "Faults.seed"),
    ],
)
def test_bad_descriptions_are_refused_naming_the_field(build, words):
    with pytest.raises(wbc.InputError, match=words.replace(".", r"\.")):
        build()


def test_faults_are_off_by_default_compose_and_describe_themselves():
    assert not Faults().active and Faults().describe() == {}
    assert ModelMismatch(perturbation="uniform").perturbation is Perturbation.UNIFORM
    realistic = Faults.realistic(seed=3)
    assert realistic.active and realistic.latency.total_periods == 2
    assert realistic.describe() == {
        "model": {"mass": 0.1, "inertia": 0.1},
        "sensors": {"joint_position": {"std": 1e-3}},
        "latency": {"state_periods": 1, "command_periods": 1},
        "actuators": {"bandwidth_hz": 300.0},
        "seed": 3,
    }
    both = Faults(sensors=SensorNoise(joint_position=Noise(bias=0.01)), seed=1).merge(realistic)
    assert both.sensors.joint_position == Noise(std=1e-3, bias=0.01)
    assert both.model.mass == 0.1 and both.seed == 3
    assert Faults(seed=5).merge(Faults(actuators=Actuators(saturation=0.8))).seed == 5


# ------------------------------------------------------------------------------------ model mismatch
@pytest.mark.parametrize("how", [Perturbation.SIGNS, Perturbation.UNIFORM])
def test_the_perturbed_model_differs_by_the_requested_amounts(talos, how):
    model = talos.model
    before = [np.array(I) for I in model.inertias]
    mismatch = ModelMismatch(mass=0.1, inertia=0.2, com_m=0.01, perturbation=how)
    other = controller_model(model, mismatch, np.random.default_rng(7))
    assert other is not model and other.joint_names == model.joint_names and other.frames == model.frames
    for I, I0 in zip(model.inertias, before):  # the simulated model is untouched
        np.testing.assert_array_equal(I, I0)
    signs = set()
    for i in range(1, model.njoints):
        m0, c0, Ic0 = body_inertial(model.inertias[i])
        m1, c1, Ic1 = body_inertial(other.inertias[i])
        if m0 == 0.0:
            np.testing.assert_array_equal(other.inertias[i], model.inertias[i])
            continue
        ratio, shift = m1 / m0, np.linalg.norm(c1 - c0)
        scale = np.linalg.eigvalsh(Ic1) / np.linalg.eigvalsh(Ic0)
        np.testing.assert_allclose(scale, scale[0], rtol=1e-9)  # the tensor scaled as a whole
        if how is Perturbation.SIGNS:
            assert abs(abs(ratio - 1.0) - 0.1) < 1e-12
            assert abs(abs(scale[0] - 1.0) - 0.2) < 1e-9
            assert abs(shift - 0.01) < 1e-12
            signs.add(ratio > 1.0)
        else:
            assert abs(ratio - 1.0) <= 0.1 + 1e-12 and abs(scale[0] - 1.0) <= 0.2 + 1e-9 and shift <= 0.01 + 1e-12
    if how is Perturbation.SIGNS:
        assert signs == {True, False}
    again = controller_model(model, mismatch, np.random.default_rng(7))
    for a, b in zip(other.inertias, again.inertias):  # seeded
        np.testing.assert_array_equal(a, b)
    assert controller_model(model, ModelMismatch(), np.random.default_rng(0)) is model


def _arm(mass: float, joint: str) -> str:
    return chain_urdf("arm", [ChainJoint(joint, "revolute", "arm", mass, 0.2, (0.02, 0.02, 0.01), "0 1 0", 2.0)])


def test_a_robot_file_replaces_the_controllers_model_and_must_match_its_joints(tmp_path):
    model = wbc.load_urdf(_arm(1.0, "shoulder"))
    other = tmp_path / "heavier.urdf"
    other.write_text(_arm(1.3, "shoulder"))
    loaded = controller_model(model, ModelMismatch(robot_file=str(other)), np.random.default_rng(0))
    assert loaded.total_mass == pytest.approx(3.3) and model.total_mass == pytest.approx(3.0)
    wrong = tmp_path / "wrong.urdf"
    wrong.write_text(_arm(1.0, "elbow"))
    with pytest.raises(wbc.InputError, match="'shoulder'"):
        controller_model(model, ModelMismatch(robot_file=str(wrong)), np.random.default_rng(0))


# ------------------------------------------------------------------------------------ sensors
def test_the_delayed_state_is_the_simulators_state_n_periods_earlier(talos):
    sim = _talos_sim(talos)
    injection = Injection(Faults(latency=Latency(state_periods=3)), sim, talos.model)
    fsim = injection.sim
    fsim.set_torques(np.zeros(talos.model.n_actuated))
    truth, reports = [], []
    for _ in range(12):  # the robot slumps under zero torque: every state differs
        q, v = fsim.get_state()
        truth.append((q, v))
        reports.append(injection.measure(q, v))
        again = injection.measure(q + 1.0, v)  # one report per period
        assert again[0] is reports[-1][0]
        fsim.step()
    for k, (qm, vm) in enumerate(reports):
        q, v = truth[max(k - 3, 0)]
        np.testing.assert_array_equal(qm, q)
        np.testing.assert_array_equal(vm, v)
    fsim.reset(talos.spec.q0)  # a reset empties the delay line
    q, v = fsim.get_state()
    np.testing.assert_array_equal(injection.measure(q, v)[0], q)


def test_sensor_bias_and_white_noise_have_the_requested_statistics(talos):
    model = talos.model
    noise = SensorNoise(
        joint_position=Noise(std=1e-3, bias=2e-3),
        joint_velocity=Noise(std=0.05),
        base_position=Noise(bias=0.01),
        base_orientation=Noise(std=0.02),
        base_angular_velocity=Noise(std=0.1, bias=0.03),
    )
    rng = np.random.default_rng(0)
    sensors = Sensors(model, noise, 0, np.random.default_rng(1), np.random.default_rng(2))
    bias_q, bias_v = sensors.bias
    joints = np.arange(6, model.nv)
    assert set(np.abs(bias_q[joints])) == {2e-3} and set(np.abs(bias_v[3:6])) == {0.03}
    assert set(np.abs(bias_q[0:3])) == {0.01} and not np.any(bias_v[joints]) and not np.any(bias_q[3:6])
    q = wbc.random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    n = 4000
    dq, dv = np.zeros((n, model.nv)), np.zeros((n, model.nv))
    for k in range(n):
        qm, vm = sensors.measure(q, v)
        dq[k] = wbc.difference(model, q, qm)
        dv[k] = vm - v
        dq[k, 0:3] = qm[0:3] - q[0:3]  # the base position's noise is in world axes
    tol = 4 / math.sqrt(n)  # 4 standard errors
    np.testing.assert_allclose(dq[:, joints].std(axis=0), 1e-3, rtol=4 / math.sqrt(2 * n))
    np.testing.assert_allclose(dq[:, joints].mean(axis=0), bias_q[joints], atol=1e-3 * tol)
    np.testing.assert_allclose(dq[:, 0:3], np.broadcast_to(bias_q[0:3], (n, 3)), atol=1e-12)
    np.testing.assert_allclose(dq[:, 3:6].std(axis=0), 0.02, rtol=4 / math.sqrt(2 * n))
    np.testing.assert_allclose(dq[:, 3:6].mean(axis=0), 0.0, atol=0.02 * tol)
    np.testing.assert_allclose(dv[:, joints].std(axis=0), 0.05, rtol=4 / math.sqrt(2 * n))
    np.testing.assert_allclose(dv[:, 3:6].mean(axis=0), bias_v[3:6], atol=0.1 * tol)
    np.testing.assert_array_equal(dv[:, 0:3], 0.0)
    assert np.all(np.abs(np.linalg.norm(np.array(qm[3:7])) - 1.0) < 1e-12)


# ------------------------------------------------------------------------------------ actuators
def test_the_lags_step_response_matches_the_integrated_first_order_system():
    acts = Actuators(bandwidth_hz=300.0)
    T, dt = acts.time_constant_s, 1e-3
    line = Actuation(acts, 0, np.full(2, np.inf), dt)
    line.advance(np.zeros(2))  # at rest under a zero command
    u = np.array([10.0, -4.0])
    fine = 20000  # substeps per period: an independent integration of τ̇ = (u − τ)/T
    tau, h = np.zeros(2), dt / fine
    for _ in range(5):
        applied = line.advance(u)
        mean = np.zeros(2)
        for _ in range(fine):
            tau = tau + h * (u - tau) / T
            mean += tau * h / dt
        np.testing.assert_allclose(applied, mean, rtol=2e-4)
        np.testing.assert_allclose(line._torque, tau, rtol=2e-4)
    k = np.arange(1, 4)  # closed form of the means of the first periods from rest
    exact = u[0] * (1 - (T / dt) * (1 - math.exp(-dt / T)) * np.exp(-(k - 1) * dt / T))
    line.reset()
    line.advance(np.zeros(2))
    np.testing.assert_allclose([line.advance(u)[0] for _ in k], exact, rtol=1e-12)


def test_commands_apply_m_periods_later_quantized_and_saturated():
    effort = np.array([10.0, np.inf, 5.0])
    line = Actuation(Actuators(saturation=0.5, quantum_Nm=0.25), 2, effort, 1e-3)
    commands = [np.array([1.1 * k, -3.0 * k, 0.37 * k]) for k in range(6)]
    applied = [line.advance(c) for c in commands]
    for k, a in enumerate(applied):
        u = np.round(commands[max(k - 2, 0)] / 0.25) * 0.25
        np.testing.assert_array_equal(a, np.clip(u, [-5.0, -np.inf, -2.5], [5.0, np.inf, 2.5]))


def test_joint_friction_and_damping_reach_mujoco_on_the_actuated_joints_only(talos):
    sim = _talos_sim(talos)
    injection = Injection(Faults(friction=JointFriction(viscous=2.0, coulomb=1.5, armature=0.01)), sim, talos.model)
    dofs = talos.model.actuated_v_indices
    m = sim.mjmodel
    assert np.all(m.dof_damping[dofs] == 2.0) and np.all(m.dof_frictionloss[dofs] == 1.5)
    assert np.all(m.dof_armature[dofs] == 0.01) and not np.any(m.dof_damping[0:6])
    v = np.zeros(talos.model.nv)
    v[dofs] = np.linspace(-1, 1, len(dofs))
    injection.sim.set_state(talos.spec.q0, v)
    np.testing.assert_allclose(sim.mjdata.qfrc_passive[dofs], -2.0 * v[dofs], rtol=1e-12)  # no springs
    assert not np.any(sim.mjdata.qfrc_passive[0:6])


def test_the_controllers_com_estimate_is_its_model_at_the_measured_state(talos):
    model = talos.model
    injection = Injection(Faults(model=ModelMismatch(mass=0.1, com_m=0.005)), _talos_sim(talos), model)
    rng = np.random.default_rng(3)
    q = talos.spec.q0.copy()
    v = rng.normal(size=model.nv) * 0.1
    injection.sim.set_state(q, v)
    com, vel = injection.center_of_mass()
    cm = injection.controller_model
    np.testing.assert_allclose(com, wbc.center_of_mass(cm, q), atol=1e-9)
    np.testing.assert_allclose(vel, wbc.com_jacobian(cm, q) @ v, atol=1e-9)
    assert np.linalg.norm(com - wbc.center_of_mass(model, q)) > 1e-3


# ------------------------------------------------------------------------------------ faults off
def _run(faults, seconds=0.3):
    sc = balance.Scenario(duration=seconds, sway_start=0.0, sway_end=seconds, sway_ramp=0.1)
    b = balance.Balance("talos", sc, faults=faults)
    return b.run(progress=False)


def test_faults_off_reproduce_the_balance_run_bit_for_bit():
    nominal = _run(None)
    assert inject(Faults(), None, None) is None  # type: ignore[arg-type]
    for faults in (
        Faults(),  # off: no injection at all
        # on, but changing nothing: the wrappers, delay lines and clip pass the numbers through
        Faults(actuators=Actuators(saturation=1e9), latency=Latency(0, 0), seed=4),
    ):
        run = _run(faults)
        for key in ("tau", "com", "base_z", "cop", "normal"):
            np.testing.assert_array_equal(run[key], nominal[key], err_msg=key)


def test_latency_changes_the_run():
    nominal = _run(None, 0.1)
    late = _run(Faults(latency=Latency(command_periods=2)), 0.1)
    assert not np.array_equal(late["tau"], nominal["tau"])


def test_differentiated_encoders_report_the_difference_of_the_measured_positions(talos):
    model = talos.model
    noise = SensorNoise(joint_position=Noise(std=1e-3), differentiate=True)
    sensors = Sensors(model, noise, 1, np.random.default_rng(1), np.random.default_rng(2), period_s=1e-3)
    rng = np.random.default_rng(0)
    q, v = talos.spec.q0.copy(), rng.normal(size=model.nv)
    previous = None
    for _ in range(5):
        qm, vm = sensors.measure(q, v)
        np.testing.assert_array_equal(vm[0:6], v[0:6])  # the base twist is measured
        if previous is None:
            np.testing.assert_array_equal(vm, v)
        else:
            np.testing.assert_allclose(vm[6:], (qm[7:] - previous[7:]) / 1e-3, rtol=1e-12, atol=1e-9)
        previous = qm
        q = q.copy()
        q[7:] += 1e-3 * v[6:]


def test_faults_off_reproduce_the_walk_bit_for_bit():
    from wbc.sim.walking import Walker

    runs = []
    for faults in (None, Faults()):
        walker = Walker("talos", faults=faults)
        walker.walk((0.2, 0.0, 0.0), 2)
        runs.append(walker.run(0.3, progress=False))
    for key in ("tau", "com", "dcm", "base_z"):
        np.testing.assert_array_equal(runs[0][key], runs[1][key], err_msg=key)


def test_the_stand_ins_pass_attribute_writes_to_what_they_wrap(talos):
    sim = _talos_sim(talos)
    injection = Injection(Faults(latency=Latency(state_periods=1)), sim, talos.model)
    injection.sim.clear_pushes()
    stand_in = injection.sim
    stand_in.contact_boxes = ()  # an attribute of the simulator: set there
    assert sim.contact_boxes == () and "contact_boxes" not in vars(stand_in)
