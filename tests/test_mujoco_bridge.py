"""The MuJoCo bridge (wbc.sim.mujoco): MuJoCo's dynamics of the generated model are wbc's.

* M and h from MuJoCo, converted to wbc coordinates, equal ``wbc.crba`` / ``wbc.nonlinear_effects``
  at random states of Talos, a random floating-base tree with every joint kind, and Panda;
* the state conversions round-trip exactly, and the free-joint convention is what we assume;
* MuJoCo's acceleration under torques and pushes equals ``wbc.aba`` with the same external forces;
* a zero-torque fall of Panda equals the same semi-implicit Euler integration of wbc's ABA;
* Talos stands on its sole boxes under PD + static feed-forward torques, feet carrying m g;
* bad input raises wbc errors.
"""

from __future__ import annotations

import functools
import subprocess
import sys

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import wbc  # noqa: E402
from wbc import robots  # noqa: E402
from wbc.codegen import algorithm_functions as traced  # noqa: E402
from wbc.errors import FrameError, InputError, ModelError  # noqa: E402
from wbc.robots import synthetic  # noqa: E402
from wbc.sim.mujoco import (  # noqa: E402
    ContactBox,
    ContactParameters,
    MujocoSim,
    SimulationDiverged,
    acceleration_to_wbc,
    q_from_qpos,
    qpos_from_q,
    qvel_from_v,
    sole_corner_names,
    v_from_qvel,
)

#: M and h agree to this, relative to their largest entry (measured: below 1e-15).
TOL_DYN = 1e-8
N_STATES = 10


def _rel_err(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


@functools.cache
def _talos():
    return robots.load("talos")


@functools.cache
def _tree_text() -> str:
    """A random tree whose URDF has every joint kind (continuous, prismatic, unaligned revolute, fixed)."""
    for seed in range(100):
        text = synthetic.random_tree_urdf(12, np.random.default_rng(seed), name=f"bridge_tree_{seed}")
        model = wbc.load_urdf(text, floating_base=True)
        kinds = {j.type for j in model.joints}
        unaligned = any(
            j.type is wbc.JointType.REVOLUTE and np.count_nonzero(np.abs(j.axis) > 1e-9) > 1 for j in model.joints
        )
        movable = {wbc.JointType.REVOLUTE_UNBOUNDED, wbc.JointType.PRISMATIC}
        if 'type="fixed"' in text and unaligned and movable <= kinds:
            return text
    raise AssertionError("no random tree with every joint kind in 100 seeds")


def _tree() -> wbc.Model:
    return wbc.load_urdf(_tree_text(), floating_base=True)


MODELS = {
    "talos": lambda: _talos().model,
    "tree": _tree,
    "panda": lambda: robots.load("panda").model,
}


# --------------------------------------------------------------------------------- optional
def test_wbc_does_not_import_mujoco_and_the_bridge_explains_a_missing_mujoco():
    code = (
        "import sys\n"
        "import wbc\n"
        "assert 'mujoco' not in sys.modules, 'import wbc pulled mujoco in'\n"
        "assert wbc.robots.load and wbc.tasks.FrameTask and wbc.sim\n"  # sub-packages on first use
        "assert 'mujoco' not in sys.modules, 'wbc.sim pulled mujoco in'\n"
        "sys.modules['mujoco'] = None\n"
        "try:\n"
        "    import wbc.sim.mujoco\n"
        "except ImportError as e:\n"
        '    assert "wbc.sim.mujoco needs MuJoCo" in str(e) and "pip install \'wbc[sim]\'" in str(e), str(e)\n'
        "else:\n"
        "    raise AssertionError('no ImportError')\n"
        "from wbc.sim.mujoco_coordinates import qpos_from_q\n"  # the converters need no MuJoCo
        "from wbc import robots\n"
        "model = robots.load('talos').model\n"
        "assert qpos_from_q(model, wbc.neutral(model)).shape == (model.nq,)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# --------------------------------------------------------------------------------- dynamics
@pytest.mark.parametrize("name", list(MODELS))
def test_mass_matrix_and_bias_forces_equal_wbc(name):
    model = MODELS[name]()
    sim = MujocoSim(model, position_limits=False)
    rng = np.random.default_rng(11)
    worst_M = worst_h = 0.0
    for _ in range(N_STATES):
        q = wbc.random_configuration(model, rng)
        v = rng.normal(size=model.nv)
        sim.set_state(q, v)
        M, h = sim.mass_matrix(), sim.bias_forces()
        worst_M = max(worst_M, _rel_err(M, wbc.crba(model, q)))
        worst_h = max(worst_h, _rel_err(h, wbc.nonlinear_effects(model, q, v)))
    assert worst_M < TOL_DYN, f"{name}: M differs by {worst_M:.2e}"
    assert worst_h < TOL_DYN, f"{name}: h differs by {worst_h:.2e}"


def test_bias_needs_the_velocity_map_derivative():
    """Without ``Tᵀ M_mj Ṫ v`` (the ω × v_lin term) h is off: the test above is discriminating."""
    model = _tree()
    sim = MujocoSim(model)
    rng = np.random.default_rng(5)
    q, v = wbc.random_configuration(model, rng), rng.normal(size=model.nv)
    sim.set_state(q, v)
    T = np.eye(model.nv)
    T[0:3, 0:3] = wbc.frame_placement(model, q, model.frames[model.frame_id(model.joints[1].link)].name)[0:3, 0:3]
    naive = T.T @ sim.mjdata.qfrc_bias
    assert _rel_err(naive, wbc.nonlinear_effects(model, q, v)) > 1e-3


# --------------------------------------------------------------------------------- states
@pytest.mark.parametrize("name", list(MODELS))
def test_state_round_trips(name):
    model = MODELS[name]()
    sim = MujocoSim(model)
    rng = np.random.default_rng(3)
    for _ in range(N_STATES):
        q = wbc.random_configuration(model, rng)
        v = rng.normal(size=model.nv)
        sim.set_state(q, v)
        q2, v2 = sim.get_state()
        np.testing.assert_allclose(q2, q, rtol=0, atol=1e-14)  # a few ulp: (cos, sin) of θ + 2πk
        np.testing.assert_allclose(v2, v, rtol=0, atol=1e-14)
        qpos, qvel = np.array(sim.mjdata.qpos), np.array(sim.mjdata.qvel)
        back = qpos_from_q(model, q_from_qpos(model, qpos), reference=qpos)  # keeps continuous-joint turns
        np.testing.assert_allclose(back, qpos, rtol=0, atol=1e-15)
        np.testing.assert_allclose(qvel_from_v(model, q, v_from_qvel(model, q, qvel)), qvel, rtol=0, atol=1e-14)


def test_free_joint_convention():
    """MuJoCo's free-joint qpos is [x y z, w x y z]; its qvel the base-origin velocity in world
    axes, then the angular velocity in base axes; wbc's v is both in base axes."""
    model = _tree()
    sim = MujocoSim(model)
    rng = np.random.default_rng(8)
    q, v = wbc.random_configuration(model, rng), rng.normal(size=model.nv)
    sim.set_state(q, v)
    np.testing.assert_array_equal(sim.mjdata.qpos[3:7], [q[6], q[3], q[4], q[5]])
    base = model.joints[1].link
    local = np.zeros(6)  # MuJoCo's order: [angular, linear]
    mujoco.mj_objectVelocity(sim.mjmodel, sim.mjdata, mujoco.mjtObj.mjOBJ_XBODY, sim.mjmodel.body(base).id, local, 1)
    np.testing.assert_allclose(local[3:6], v[0:3], atol=1e-14)
    np.testing.assert_allclose(local[0:3], v[3:6], atol=1e-14)
    world_lin = wbc.frame_velocity(model, q, v, base, wbc.ReferenceFrame.LOCAL_WORLD_ALIGNED)[0:3]
    np.testing.assert_allclose(sim.mjdata.qvel[0:3], world_lin, atol=1e-14)
    np.testing.assert_allclose(sim.mjdata.qvel[3:6], v[3:6], atol=0)


def test_continuous_joints_keep_their_winding():
    model = _tree()
    sim = MujocoSim(model)
    j = next(j for j in model.joints if j.type is wbc.JointType.REVOLUTE_UNBOUNDED)
    adr = sim.mjmodel.joint(j.name).qposadr[0]
    q = wbc.neutral(model)
    for theta in (3.0, 3.3, 3.6, -2.5):  # -2.5 rad is 3.78 rad one turn on: no unwinding
        q[j.idx_q : j.idx_q + 2] = np.cos(theta), np.sin(theta)
        sim.set_state(q)
    assert sim.mjdata.qpos[adr] == pytest.approx(2 * np.pi - 2.5, abs=1e-12)
    np.testing.assert_allclose(sim.get_state()[0], q, atol=1e-15)


def test_frame_placements_equal_wbc():
    spec = _talos()
    sim = MujocoSim(spec.model)
    q = wbc.random_configuration(spec.model, np.random.default_rng(2))
    sim.set_state(q)
    for frame in spec.feet + spec.hands:
        np.testing.assert_allclose(sim.frame_placement(frame), wbc.frame_placement(spec.model, q, frame), atol=1e-14)


# --------------------------------------------------------------------------------- inputs
def test_torques_map_to_actuated_joints_in_model_order():
    full = _tree()
    names = [j.name for j in full.joints[2:] if j.nv == 1][::2]
    model = full.with_actuation(names[::-1])  # kept in model order whatever the order given
    sim = MujocoSim(model)
    tau = np.arange(1.0, model.n_actuated + 1)
    sim.set_torques(tau)
    sim.forward()
    np.testing.assert_array_equal(sim.mjdata.qfrc_actuator, model.actuation_matrix() @ tau)
    assert [sim.mjmodel.actuator(k).name for k in range(sim.mjmodel.nu)] == list(model.actuated_joint_names)


def test_acceleration_under_torques_and_a_push_equals_aba():
    model = _tree()
    sim = MujocoSim(model)
    rng = np.random.default_rng(4)
    q, v = wbc.random_configuration(model, rng), rng.normal(size=model.nv)
    tau = rng.normal(size=model.n_actuated)
    frame = model.frames[-1]
    force, point = rng.normal(size=3) * 20, rng.normal(size=3) * 0.1
    sim.set_state(q, v)
    sim.set_torques(tau)
    sim.apply_push(frame.name, force, duration=0.01, point=point)
    R = wbc.frame_placement(model, q, frame.name)[0:3, 0:3]
    f_local = R.T @ force
    wrench = np.concatenate([f_local, np.cross(point, f_local)])  # LOCAL, about the frame origin
    expected = wbc.aba(model, q, v, model.actuation_matrix() @ tau, fext={frame.name: wrench})
    assert _rel_err(sim.acceleration(), expected) < TOL_DYN


def test_push_lasts_its_duration():
    """The acceleration of each step (MuJoCo's qacc, at the state before the step) includes the
    push for exactly duration / timestep steps."""
    model = _tree()
    sim = MujocoSim(model)
    rng = np.random.default_rng(6)
    sim.set_state(wbc.random_configuration(model, rng), rng.normal(size=model.nv))
    frame, force = model.frames[-1].name, np.array([30.0, -20.0, 10.0])
    sim.apply_push(frame, force, duration=2 * sim.timestep)
    tau = np.zeros(model.nv)
    for k, pushed in enumerate((True, True, False)):
        q, v = sim.get_state()
        sim.step()
        qdd = acceleration_to_wbc(model, q, v, sim.mjdata.qacc)
        R = wbc.frame_placement(model, q, frame)[0:3, 0:3]
        fext = {frame: np.concatenate([R.T @ force, np.zeros(3)])} if pushed else None
        assert _rel_err(qdd, wbc.aba(model, q, v, tau, fext=fext)) < TOL_DYN, f"step {k}"
    assert not np.any(sim.mjdata.xfrc_applied)


# --------------------------------------------------------------------------------- simulation
def test_zero_torque_fall_of_panda_equals_integrated_aba():
    """200 steps of 1 ms from the default posture, no limits, no contacts, zero torque.

    Both sides run the same scheme (MuJoCo's Euler: ``v += dt a(q, v); q += dt v``) on the same
    dynamics, so they differ only by rounding: ~1e-16 per step, amplified by the dynamics over
    0.2 s. The velocities reach ~9 rad/s; a 1e-9 tolerance leaves a wide margin (measured ~1e-15)
    while any modelling difference (an inertia, an axis, a damping) shows at ≥ 1e-6.
    """
    spec = robots.load("panda")
    model = spec.model
    sim = MujocoSim(model, position_limits=False)
    q, v = spec.q0.copy(), np.zeros(model.nv)
    sim.set_state(q, v)
    aba = traced.aba_function(model)  # the same ABA, traced: ~0.1 ms per call instead of 20
    zero = np.zeros(model.nv)
    assert _rel_err(np.array(aba(q, v, zero)).ravel(), wbc.aba(model, q, v, zero)) < 1e-12
    dt = sim.timestep
    for _ in range(200):
        v = v + dt * np.array(aba(q, v, zero)).ravel()
        q = wbc.integrate(model, q, v, dt)
    sim.step(200)
    q_mj, v_mj = sim.get_state()
    assert np.max(np.abs(v)) > 1.0, "the arm should have fallen"
    assert sim.time == pytest.approx(0.2)
    np.testing.assert_allclose(q_mj, q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(v_mj, v, rtol=0, atol=1e-9)


def _flat_height_field_scene():
    from wbc.locomotion import HeightField, Terrain
    from wbc.sim.terrain import terrain_scene

    return terrain_scene(Terrain(heightfield=HeightField((-1.0, -1.0), 0.02, np.zeros((101, 101))), floor=None))


@pytest.mark.parametrize("ground", ["floor", "height field"])
def test_talos_stands_on_its_sole_boxes(ground):
    """On the floor the boxes touch it; on a height field (zero heights) spheres at the boxes' corners
    do, every contact at a corner (a sphere over a triangle edge touches both triangles; a box on a
    height field got one contact per triangle prism at an arbitrary point of the face it overlaps:
    the contacts under a flat sole came and went)."""
    spec = _talos()
    model, q0 = spec.model, spec.q0
    boxes = [ContactBox(f, spec.sole.length, spec.sole.width) for f in spec.feet]
    if ground == "floor":
        sim = MujocoSim(model, boxes)
    else:
        sim = MujocoSim(model, boxes, floor=False, scene=_flat_height_field_scene())
    v0 = np.zeros(model.nv)
    sim.set_state(q0, v0)
    # static feed-forward: sole wrenches balancing the base rows of h, the rest on the joints
    h = wbc.nonlinear_effects(model, q0, v0)
    J = np.vstack([wbc.frame_jacobian(model, q0, f, wbc.ReferenceFrame.LOCAL) for f in spec.feet])
    f = np.linalg.lstsq(J[:, 0:6].T, h[0:6], rcond=None)[0]
    S = model.actuated_v_indices
    tau_ff = (h - J.T @ f)[S]
    Md = np.diag(wbc.crba(model, q0))[S]
    omega = 40.0  # rad/s joint-space bandwidth; kd dt / M_ii = 0.08 keeps explicit damping stable
    kp, kd = omega**2 * Md, 2 * omega * Md
    for _ in range(500):
        q, v = sim.get_state()
        sim.set_torques(tau_ff + kp * (q0[7:] - q[7:]) - kd * v[S])
        sim.step()
    q, v = sim.get_state()
    weight = model.total_mass * -model.gravity[2]
    forces = sim.contact_forces()
    total = sum(forces.values())
    assert total[2] == pytest.approx(weight, rel=0.01), f"feet carry {total[2]:.1f} N of {weight:.1f} N"
    for frame, fo in forces.items():
        assert 0.3 * weight < fo[2] < 0.7 * weight, f"{frame}: {fo}"
        assert np.linalg.norm(fo[0:2]) < 0.05 * fo[2], f"{frame} slides: {fo}"
        z = sim.frame_placement(frame)[2, 3]
        assert -1e-3 < z < 1e-3, f"{frame} at z = {z}"
    assert np.max(np.abs(q[0:3] - q0[0:3])) < 5e-3
    assert np.max(np.abs(v)) < 0.05
    assert sum(sim.normal_forces().values()) == pytest.approx(total[2])
    if ground == "height field":
        m, d = sim.mjmodel, sim.mjdata
        for frame in spec.feet:
            corners = [m.geom(n).id for n in sole_corner_names(frame)]
            T = sim.frame_placement(frame)
            touching = [d.contact[k] for k in range(d.ncon) if {d.contact[k].geom1, d.contact[k].geom2} & set(corners)]
            assert {c.geom1 for c in touching} | {c.geom2 for c in touching} >= set(corners), "all four touch"
            local = np.array([T[0:3, 0:3].T @ (c.pos - T[0:3, 3]) for c in touching])
            hx, hy = spec.sole.length / 2, spec.sole.width / 2
            np.testing.assert_allclose(np.abs(local[:, 0:2]), [[hx, hy]] * len(local), atol=1e-3)  # at the corners


def test_only_the_sole_boxes_collide_and_only_with_the_floor():
    spec = _talos()
    sim = MujocoSim(spec.model, [(f, spec.sole.length, spec.sole.width) for f in spec.feet])
    m = sim.mjmodel
    names = sorted(m.geom(g).name for g in range(m.ngeom))
    assert names == sorted(["floor"] + [f"{f}_contact" for f in spec.feet])
    boxes = [m.geom(f"{f}_contact").id for f in spec.feet]

    def collide(a: int, b: int) -> bool:
        return bool(m.geom_contype[a] & m.geom_conaffinity[b] or m.geom_contype[b] & m.geom_conaffinity[a])

    assert collide(boxes[0], m.geom("floor").id) and not collide(boxes[0], boxes[1])
    on_field = MujocoSim(
        spec.model, [(f, spec.sole.length, spec.sole.width) for f in spec.feet], scene=_flat_height_field_scene()
    ).mjmodel
    field, floor = on_field.geom("terrain_rough").id, on_field.geom("floor").id
    box, corner = on_field.geom(f"{spec.feet[0]}_contact").id, on_field.geom(sole_corner_names(spec.feet[0])[0]).id
    pairs = [(a, b) for a in (box, corner) for b in (field, floor)]
    assert [bool(on_field.geom_contype[a] & on_field.geom_conaffinity[b]) for a, b in pairs] == [
        False,
        True,
        True,
        False,
    ]
    assert m.body_mass[1:].sum() == pytest.approx(spec.model.total_mass, rel=1e-14)  # geoms add no mass


def test_options_and_flags():
    spec = _talos()
    contact = ContactParameters(friction=0.7, condim=6, cone="pyramidal")
    sim = MujocoSim(
        spec.model,
        [(f, 0.2, 0.1) for f in spec.feet],
        timestep=2e-3,
        position_limits=False,
        torque_limits=True,
        contact=contact,
    )
    m = sim.mjmodel
    assert m.opt.timestep == 2e-3 and m.opt.cone == mujoco.mjtCone.mjCONE_PYRAMIDAL
    np.testing.assert_array_equal(m.opt.gravity, spec.model.gravity)
    assert not m.jnt_limited.any()
    np.testing.assert_array_equal(m.actuator_ctrlrange[:, 1], spec.model.effort_limit)
    box = m.geom(f"{spec.feet[0]}_contact").id
    assert m.geom_condim[box] == 6 and m.geom_friction[box, 0] == 0.7
    assert not np.any(m.dof_damping) and not np.any(m.dof_armature) and not np.any(m.dof_frictionloss)
    limited = MujocoSim(spec.model).mjmodel
    j = spec.model.joints[2]
    np.testing.assert_array_equal(limited.jnt_range[limited.joint(j.name).id], [j.lower[0], j.upper[0]])
    assert "<mujoco" in sim.to_xml()
    assert MujocoSim(robots.load("panda").model).mjmodel.ngeom == 0  # fixed base: no floor by default


# --------------------------------------------------------------------------------- errors
def test_bad_input_raises_wbc_errors():
    spec = _talos()
    model = spec.model
    sim = MujocoSim(model)
    q0 = spec.q0
    with pytest.raises(InputError):
        sim.set_state(q0[:-1])
    with pytest.raises(InputError):
        sim.set_state(q0, np.zeros(model.nv + 1))
    bad = q0.copy()
    bad[3:7] = [0.0, 0.0, 0.0, 2.0]
    with pytest.raises(InputError):
        sim.set_state(bad)
    with pytest.raises(InputError):
        sim.set_torques(np.zeros(model.n_actuated + 1))
    with pytest.raises(InputError):
        sim.set_torques(np.full(model.n_actuated, np.nan))
    with pytest.raises(InputError):
        sim.set_torques(np.full(model.n_actuated, 1e12))  # MuJoCo would silently zero it
    with pytest.raises(InputError):
        sim.step(-1)
    with pytest.raises(InputError):
        q_from_qpos(model, np.zeros(3))
    with pytest.raises(InputError):
        sim.apply_push(spec.feet[0], [1.0, 2.0], duration=0.1)
    with pytest.raises(InputError):
        sim.apply_push(spec.feet[0], [1.0, 2.0, 3.0], duration=0.0)
    with pytest.raises(FrameError):
        sim.apply_push("no_such_frame", [1.0, 0.0, 0.0], duration=0.1)
    with pytest.raises(FrameError):
        sim.frame_placement("no_such_frame")
    with pytest.raises(FrameError):
        MujocoSim(model, [("left_sole", 0.2, 0.1)])  # Talos' is left_sole_link
    with pytest.raises(InputError):
        MujocoSim(model, [ContactBox(spec.feet[0], -0.2, 0.1)])
    with pytest.raises(InputError):
        MujocoSim(model, [(spec.feet[0],)])
    with pytest.raises(InputError):
        MujocoSim(model, timestep=0.0)
    with pytest.raises(InputError):
        ContactParameters(condim=2)


def test_massless_moving_body_is_a_model_error():
    urdf = (
        '<robot name="massless"><link name="base"><inertial><mass value="1"/>'
        '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>'
        '<link name="tip"/><joint name="j" type="revolute"><parent link="base"/><child link="tip"/>'
        '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>'
    )
    with pytest.raises(ModelError, match="'j'"):
        MujocoSim(wbc.load_urdf(urdf, floating_base=False))


def test_divergence_raises_instead_of_resetting(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo logs its warning to ./MUJOCO_LOG.TXT
    model = robots.load("panda").model
    sim = MujocoSim(model, torque_limits=False)  # no drive limit: the torques diverge the state
    sim.set_torques(np.full(model.n_actuated, 1e9))  # N m on 0.01 kg m² links: unbounded growth
    with pytest.raises(SimulationDiverged, match="bad"):
        sim.step(1000)
    assert sim.time > 0  # not silently reset
