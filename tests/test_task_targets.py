"""Task targets and custom tasks: ``set_target`` validates, all or nothing, with errors naming the
task and the argument; a custom task whose ``measure()``/``error()`` returns the wrong shape, or uses
numpy on the traced symbols, gets an error naming the task and the method."""

from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

import wbc
from wbc import robots, tasks
from wbc.control import Task


@pytest.fixture(scope="module")
def panda():
    return robots.load("panda")


def test_set_target_parameters_is_all_or_nothing():
    task = tasks.PositionTask("x")
    task.set_target(np.array([1.0, 2.0, 3.0]), np.array([0.1, 0.2, 0.3]))
    before = task._params.copy()
    with pytest.raises(wbc.InputError, match=r"task 'position_x': velocity must be finite.*\[1\]"):
        task.set_target(np.array([4.0, 5.0, 6.0]), np.array([0.0, np.nan, 0.0]))
    with pytest.raises(wbc.InputError, match=r"task 'position_x': acceleration must be 3 numbers, got shape \(2,\)"):
        task.set_target(np.array([4.0, 5.0, 6.0]), None, [0.0, 1.0])
    np.testing.assert_array_equal(task._params, before)  # a refused target changes nothing
    task.set_target([4, 5, 6])  # lists and integers convert; no velocity: zero
    np.testing.assert_array_equal(task.target, [4.0, 5.0, 6.0])
    np.testing.assert_array_equal(task._params[3:9], np.zeros(6))


def test_public_set_target_parameters():
    task = tasks.MomentumTask(linear=True)
    task.set_target_parameters(np.arange(6.0), None, np.ones(6))
    np.testing.assert_array_equal(task.target, np.arange(6.0))
    with pytest.raises(wbc.InputError, match=r"task 'momentum': momentum must be 6 numbers"):
        task.set_target(np.zeros(5))
    with pytest.raises(wbc.InputError, match="complex"):
        task.set_target_parameters(np.zeros(6, complex))


def test_rotations_and_quaternions_are_checked(panda):
    orientation = tasks.OrientationTask("x")
    with pytest.raises(wbc.InputError, match=r"task 'orientation_x': expected a rotation matrix"):
        orientation.set_target(np.diag([1.0, 1.0, -1.0]))  # a reflection
    with pytest.raises(wbc.InputError, match="rotation matrix"):
        orientation.set_target(np.diag([1.0, 1.0, 1.0 + 1e-4]))
    orientation.set_target(np.diag([1.0, 1.0, 1.0 + 1e-7]))  # within is_rotation's tolerance
    with pytest.raises(wbc.InputError, match=r"placement must be a \(4, 4\) transform"):
        tasks.FrameTask("x").set_target(np.eye(3))
    floating = wbc.robots.synthetic.chain(3, floating_base=True)
    posture = tasks.PostureTask(floating)
    q = wbc.neutral(floating)
    posture.set_target(q)
    q[3:7] = [0.0, 0.0, 0.0, 2.0]
    with pytest.raises(wbc.InputError, match=r"task 'posture': target: the quaternion of joint .* norm 2"):
        posture.set_target(q)


class _Height(Task):
    """The architecture guide's custom task, with knobs to break it."""

    def __init__(self, frame, how="right"):
        self.frame, self.how = frame, how
        super().__init__(1, 1.0, 10.0, None, f"height_{how}")

    @property
    def target_size(self):
        return 1

    def measure(self, ctx):
        fid = ctx.model.frame_id(self.frame)
        J = ctx.kin.frame_jacobian(fid, wbc.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        drift = ctx.kin.frame_drift(fid, wbc.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        if self.how == "wrong_shape":
            return J[0:3, :], drift[0:3], ca.mtimes(J[0:3, :], ctx.kin.v)  # three rows for a 1-row task
        if self.how == "numpy":
            return np.asarray(J)[2:3, :], drift[2], ca.mtimes(J[2:3, :], ctx.kin.v)
        return J[2:3, :], drift[2], ca.mtimes(J[2:3, :], ctx.kin.v)

    def error(self, ctx, target):
        z = ctx.kin.frame_placement(ctx.model.frame_id(self.frame)).p[2]
        return ca.vertcat(target - z, 0.0) if self.how == "wrong_error" else target - z


@pytest.mark.parametrize(
    ("how", "match"),
    [
        ("wrong_shape", r"task 'height_wrong_shape': measure\(\) returned J of shape \(3, 9\), expected \(1, 9\)"),
        (
            "wrong_error",
            r"task 'height_wrong_error': error\(\) returned the error of shape \(2, 1\), expected \(1, 1\)",
        ),
        ("numpy", r"(?s)task 'height_numpy': measure\(\) failed: .*receive CasADi symbols"),
    ],
)
def test_a_custom_task_of_the_wrong_shape_is_named(panda, how, match):
    task = _Height("panda_hand", how)
    task.set_target_parameters(np.array([0.5]))
    controller = wbc.WholeBodyController(panda.model, [task])
    with pytest.raises(wbc.InputError, match=match):
        controller.step(panda.q0, np.zeros(panda.model.nv))


def test_the_custom_task_of_the_guide_tracks_its_target(panda):
    task = _Height("panda_hand")
    z = wbc.frame_placement(panda.model, panda.q0, "panda_hand")[2, 3]
    task.set_target_parameters(np.array([z]))
    controller = wbc.WholeBodyController(panda.model, [task, tasks.PostureTask(panda.model, weight=1e-3)])
    cmd = controller.step(panda.q0, np.zeros(panda.model.nv))
    assert np.all(np.isfinite(cmd.tau))
