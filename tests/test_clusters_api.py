"""The eager numpy API of clustered models: same numbers as the traced kernels, checked inputs,
and the actuator map (motor efforts to independent generalized forces)."""

from __future__ import annotations

import numpy as np
import pytest

import wbc
from tests.cluster_cases import case, evaluate, states
from tests.helpers import assert_close
from wbc.codegen import cluster_functions as ck


def test_eager_api_matches_kernels():
    c = case("tello")
    cm = c.model
    y, v, a, tau = states(cm, 1)[0]
    cons = [wbc.PointConstraint(f, o) for f, o in c.robot.contacts]
    assert_close(wbc.eager.cluster_rnea(cm, y, v, a), evaluate(ck.c_rnea_function(cm), y, v, a)[0], 1e-12, "rnea")
    assert_close(wbc.eager.cluster_aba(cm, y, v, tau), evaluate(ck.c_aba_function(cm), y, v, tau)[0], 1e-12, "aba")
    assert_close(wbc.eager.cluster_delassus(cm, y, cons), evaluate(ck.c_efpa_function(cm, cons), y)[0], 1e-12, "efpa")
    assert_close(wbc.eager.cluster_input_matrix(cm, y, cons), evaluate(ck.c_iim_function(cm, cons), y)[0], 1e-12, "iim")


def test_input_errors():
    cm = case("four_bar").model
    y = cm.neutral()
    with pytest.raises(wbc.InputError, match=r"v must have shape \(2,\)"):
        wbc.eager.cluster_aba(cm, y, np.zeros(3), np.zeros(2))
    with pytest.raises(wbc.InputError, match="non-finite"):
        wbc.eager.cluster_rnea(cm, y, np.zeros(2), np.array([np.nan, 0.0]))
    bad = y.copy()
    bad[cm.tree.joints[cm.tree.joint_id("rocker_joint")].idx_q] += 0.1
    with pytest.raises(wbc.InputError, match="does not close the loops"):
        wbc.eager.cluster_aba(cm, bad, np.zeros(2), np.zeros(2))
    with pytest.raises(wbc.InputError, match="at least one constraint"):
        wbc.eager.cluster_delassus(cm, y, [])
    with pytest.raises(wbc.FrameError):
        wbc.eager.cluster_delassus(cm, y, [wbc.PointConstraint("nope")])


def test_actuator_map_of_gears_and_parallel_ankles():
    cm = case("mini_cheetah").model
    y = cm.neutral()
    A = cm.actuator_map(y, ["FR_knee_joint_rotor_joint"])
    col = np.zeros(cm.nv)
    col[cm.joint_names.index("FR_knee_joint") - 1 + 6] = 9.33
    assert_close(A[:, 0], col, 1e-15, "a geared rotor maps its torque times N")
    g1 = case("g1_parallel_ankle").model
    y = g1.random_configuration(np.random.default_rng(3), scale=0.3)
    motors = ["left_ankle_rod0_crank_joint_rotor_joint", "left_ankle_rod1_crank_joint_rotor_joint"]
    A = g1.actuator_map(y, motors)
    rows = [g1.joint_names.index(n) - 1 + 6 for n in ("left_ankle_pitch_joint", "left_ankle_roll_joint")]
    assert np.abs(np.delete(A, rows, axis=0)).max() == 0.0
    assert abs(np.linalg.det(A[rows])) > 1e-3  # the two motors control pitch and roll
