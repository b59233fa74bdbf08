"""The MuJoCo bridge on clustered models: rotors and rods as MuJoCo bodies, gears and loops as
MuJoCo equality constraints.

* the state conversion ``(y, v) ↔ (qpos, qvel)`` is exact (independent velocities in, the loop's
  ``ẏ = G v`` out, and back);
* the spanning tree MuJoCo integrates is wbc's: ``M``, ``h`` and frame placements agree to 1e-8
  (massless bodies such as the rods' universal-joint crosses become chains of joints in one MuJoCo
  body; a massless rotor gets 1e-12 kg on its axis);
* MuJoCo's constrained acceleration under motor torques is C-ABA's up to MuJoCo's constraint
  softness (impedance 0.9999, MuJoCo's maximum: 1e-4 to 1e-3 relative);
* gears are ``<equality joint>``, belts and differentials fixed tendons held by ``<equality tendon>``,
  loop closures site ``connect`` / ``weld``; a non-physical inertia is refused by name.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import wbc  # noqa: E402
from wbc import robots  # noqa: E402
from wbc.errors import FrameError, ModelError  # noqa: E402
from wbc.robots import clustered  # noqa: E402
from wbc.sim.mujoco import MujocoSim  # noqa: E402

#: M and h of the spanning tree (measured: ~1e-13, the rotors' 1e-12 kg).
TOL_DYN = 1e-8
#: MuJoCo's soft constraints (impedance 0.9999, its maximum) against the exact C-ABA, relative
#: (measured: G1 ankle rods 3e-5 to 2e-4; MIT humanoid's belts and heavy rotors up to 1.1e-3).
TOL_SOFT = 2e-3


@functools.cache
def _robot(name: str):
    if name == "four_bar_floating":
        return clustered.four_bar(floating_base=True)
    return robots.load(name)


def _rel(a, b) -> float:
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


@pytest.mark.parametrize("name", ["geared_chain", "mit_humanoid", "g1_parallel_ankle"])
def test_state_conversion_and_spanning_dynamics_are_exact(name):
    robot = _robot(name)
    cm = robot.model
    sim = MujocoSim(cm, floor=False)
    assert sim.mjmodel.nu == cm.n_motors and sim.mjmodel.nq == cm.tree.nq
    rng = np.random.default_rng(0)
    for _ in range(3):
        y = cm.random_configuration(rng, scale=0.5)
        v = rng.normal(size=cm.nv)
        sim.set_state(y, v)
        y2, v2 = sim.get_state()
        assert np.allclose(y2, y, atol=1e-15, rtol=0) and np.allclose(v2, v, atol=1e-13, rtol=0)
        ys, yds = sim.get_spanning_state()
        assert np.allclose(yds, cm.spanning_velocity(y, v), atol=1e-13, rtol=0)
        assert sim.loop_error() < 1e-12 and sim.coupling_error() < 1e-12
        assert _rel(sim.mass_matrix(), wbc.eager.crba(cm.tree, ys)) < TOL_DYN
        assert _rel(sim.bias_forces(), wbc.eager.nonlinear_effects(cm.tree, ys, yds)) < TOL_DYN
        for f in cm.tree.frames:
            if f.joint == 0:
                continue
            try:
                T = sim.frame_placement(f.name)
            except FrameError:  # on a massless body merged into its child
                continue
            assert np.allclose(T, wbc.eager.frame_placement(cm.tree, ys, f.name), atol=1e-12, rtol=0), f.name


@pytest.mark.parametrize("name", ["mit_humanoid", "g1_parallel_ankle"])
def test_constrained_acceleration_is_c_aba_up_to_mujoco_softness(name):
    cm = _robot(name).model
    sim = MujocoSim(cm, floor=False)
    rng = np.random.default_rng(1)
    worst = 0.0
    for _ in range(3):
        y = cm.random_configuration(rng, scale=0.5)
        v = rng.normal(size=cm.nv)
        tau = rng.normal(size=cm.n_motors)
        sim.set_state(y, v)
        sim.set_torques(tau)
        qdd_mj = sim.acceleration()[cm.independent_v_indices]
        qdd = wbc.eager.cluster_aba(cm, y, v, cm.motor_map(y) @ tau)
        worst = max(worst, _rel(qdd_mj, qdd))
    assert worst < TOL_SOFT


def test_non_physical_inertias_are_refused_by_name():
    # the four-bar's rotor inertia diag(2e-5, 2e-5, 5e-5) breaks the triangle inequality A + B >= C
    with pytest.raises(ModelError, match="crank_joint_rotor"):
        MujocoSim(_robot("four_bar_floating").model)
