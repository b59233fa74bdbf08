"""Every MJCF file gymnasium and dm_control ship (36) through ``wbc.load_mjcf`` (``benchmarks.mjcf_files``):
each loads or is refused naming what wbc cannot represent, and every loaded file's spanning-tree mass
matrix (armature included) and bias forces are MuJoCo's ``mj_fullM`` and ``qfrc_bias`` to 1e-9 at
random states. A representative subset in the default run (a free-floating quadruped with armature,
tendon couplings and tendon actuators, the 56-joint CMU humanoid), all 36 under ``slow``.

Pinocchio, on models built joint for joint from wbc's (``benchmarks.pinocchio_adapter.from_wbc``):
frames, ``M``, RNEA, ABA, ``M⁻¹ [Sᵀ, Jᵀ]`` and the Delassus matrix of loaded files and of an MJCF with
ball joints, to 1e-9.
"""

from __future__ import annotations

import warnings

import casadi as ca
import numpy as np
import pinocchio as pin
import pytest

import wbc
from benchmarks import mjcf_files
from benchmarks import pinocchio_adapter as oracle
from tests.helpers import assert_close
from tests.test_mjcf_compiled import JOINTS

pytest.importorskip("mujoco")


def _files() -> dict[str, object]:
    try:
        return dict(mjcf_files.shipped_files())
    except wbc.MissingDependency as e:
        pytest.skip(str(e))


FAST = ("gymnasium/ant.xml", "dm_control/suite/quadruped.xml", "dm_control/walkers/humanoid_CMU_V2020.xml")


def test_the_36_files():
    files = _files()
    assert len(files) == 36
    assert sum(label.startswith("gymnasium/") for label in files) == 14
    assert sum(label.startswith("dm_control/suite/") for label in files) == 19


def _check(label: str) -> mjcf_files.FileResult:
    result = mjcf_files.check_file(label, _files()[label], states=3)
    assert result.loaded, result.message
    assert result.mass_matrix_error <= mjcf_files.TOLERANCE, label
    assert result.bias_error <= mjcf_files.TOLERANCE, label
    return result


@pytest.mark.parametrize("label", FAST)
def test_shipped_file_matches_mujoco(label):
    result = _check(label)
    if label.endswith("quadruped.xml"):  # the legs' tendon couplings as clusters; tendon actuators named
        assert result.clusters == 4 and result.warnings and "lift_front_left" in result.warnings[0]


@pytest.mark.slow
def test_every_shipped_file_matches_mujoco():
    for label in _files():
        _check(label)


def test_the_comparison_can_fail():
    """Without the free joints' velocity convention or the armature the errors are large."""
    label = "gymnasium/ant.xml"
    path = _files()[label]
    cm = wbc.load_mjcf(path)
    m, _ = wbc.model.mjcf.compile_mjcf(path)
    no_armature = wbc.ClusterModel(cm.tree)
    err_M, _ = mjcf_files.compare_with_mujoco(no_armature, m, 2, np.random.default_rng(0))
    assert err_M > 0.1
    err_M, err_h = mjcf_files.compare_with_mujoco(cm, m, 2, np.random.default_rng(0))
    assert max(err_M, err_h) < 1e-12


def _pinocchio_agrees(tree: wbc.Model, seed: int) -> None:
    """Frames, M, h, ABA, B̂ and the Delassus matrix of point constraints on up to five bodies."""
    names = [f.name for f in tree.frames]
    bodies = [f.name for f in tree.frames[1:] if f.kind is wbc.FrameKind.BODY and names.count(f.name) == 1]
    feet = bodies[:: max(1, len(bodies) // 5)][:5]
    pm = oracle.from_wbc(tree)
    pd = pm.createData()
    rng = np.random.default_rng(seed)
    for _ in range(2):
        q = wbc.random_configuration(tree, rng)
        v, tau = rng.normal(size=tree.nv), rng.normal(size=tree.nv)
        pin.forwardKinematics(pm, pd, q)
        pin.updateFramePlacements(pm, pd)
        ws = wbc.Workspace(tree, ca.DM(q))
        for k, f in enumerate(tree.frames):  # Pinocchio's frame 0 is its universe: wbc's k is its k + 1
            X, M = ws.frame_placement(k), pd.oMf[k + 1]
            assert_close(np.array(ca.DM(X.p)).ravel(), M.translation, what=f.name)
            assert_close(np.array(ca.DM(X.R)), M.rotation, what=f.name)
        assert_close(wbc.crba(tree, q), oracle.symmetrized(pin.crba(pm, pd, q)), what="M")
        assert_close(wbc.nonlinear_effects(tree, q, v), pin.nonLinearEffects(pm, pd, q, v), what="h")
        assert_close(wbc.aba(tree, q, v, tau), pin.aba(pm, pd, q, v, tau), what="aba")
        constraints = [wbc.PointConstraint(f) for f in feet]
        J = oracle.constraint_jacobian(pm, q, constraints)
        S = tree.actuation_matrix()
        Minv = oracle.minverse(pm, q)
        assert_close(wbc.inertia_weighted_input_matrix(tree, q, constraints), Minv @ np.hstack([S, J.T]), what="IIM")
        assert_close(wbc.delassus(tree, q, constraints), J @ Minv @ J.T, what="Delassus")


def test_loaded_files_and_ball_joints_against_pinocchio():
    files = _files()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wbc.ModelWarning)
        ant = wbc.load_mjcf(files["gymnasium/ant.xml"]).tree
        humanoid = wbc.load_mjcf(files["dm_control/suite/humanoid.xml"]).tree
    _pinocchio_agrees(ant, 0)
    _pinocchio_agrees(humanoid, 1)
    balls = wbc.load_mjcf(JOINTS).tree  # free, ball, hinge (ref), chains of joints in one body, slide
    _pinocchio_agrees(balls, 2)
