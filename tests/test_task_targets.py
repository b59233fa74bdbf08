"""Task targets and custom tasks: ``set_target`` validates, all or nothing, with errors naming the
task and the argument; a custom task whose ``measure()``/``error()`` returns the wrong shape, or uses
numpy on the traced symbols, gets an error naming the task and the method; the first step refuses a
task never given a target and warns for one without gains."""

from __future__ import annotations

import warnings

import casadi as ca
import numpy as np
import pytest

import wbc
from wbc import robots, tasks
from wbc.codegen.fingerprint import fingerprint
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


# ------------------------------------------------------------------------- set_target in one C call
needs_compiler = pytest.mark.skipif(wbc.codegen.find_compiler() is None, reason="no C compiler")


def _targets(model, q, rng):
    """One task of each kind with a set_target call (arguments of the shapes a control loop passes)
    and the parameters (target, ẋ_ref, ẍ_ref) that call must leave."""
    T = wbc.frame_placement(model, q, "panda_hand")
    v6, a6, v3, a3 = (rng.normal(size=n) for n in (6, 6, 3, 3))
    R, p = T[0:3, 0:3], T[0:3, 3]
    com, vn = wbc.center_of_mass(model, q), rng.normal(size=model.nv)
    cols = R.reshape(-1, order="F")
    return [
        (tasks.FrameTask("panda_hand"), (T, v6, a6), np.concatenate([p, cols, v6, a6])),
        (tasks.PositionTask("panda_hand"), (p, v3, None), np.concatenate([p, v3, np.zeros(3)])),
        (tasks.OrientationTask("panda_hand"), (R, None, a3), np.concatenate([cols, np.zeros(3), a3])),
        (tasks.CoMTask(), (com, v3, a3), np.concatenate([com, v3, a3])),
        (tasks.CoMTask("xz"), (com, v3, a3), np.concatenate([com[[0, 2]], v3[[0, 2]], a3[[0, 2]]])),
        (tasks.PostureTask(model), (q, vn), np.concatenate([q, vn, np.zeros(model.nv)])),
        (tasks.MomentumTask(linear=True), (v6, a6), np.concatenate([v6, np.zeros(6), a6])),
        (tasks.MomentumTask(), (None, a3), np.concatenate([np.zeros(3), np.zeros(3), a3])),
    ]


@needs_compiler
def test_set_target_becomes_one_c_call_with_the_same_parameters(panda):
    rng = np.random.default_rng(3)
    q = wbc.random_configuration(panda.model, rng)
    for task, args, expected in _targets(panda.model, q, rng):
        assert "set_target" not in task.__dict__
        task.set_target(*args)  # the first call: Python, then the C path is the task's own
        by_python = task._params.copy()
        np.testing.assert_array_equal(by_python[: expected.size], expected, err_msg=task.name)
        assert wbc.codegen.builtins.is_builtin(task.__dict__.get("set_target")), task.name
        assert fingerprint(task) is not None  # the controller's kernel index still sees the task
        task._params[: expected.size] = -1.0  # the target's part (the rest: gains, untouched)
        task.set_target(*args)  # the C path
        np.testing.assert_array_equal(task._params, by_python, err_msg=task.name)  # the whole buffer


@needs_compiler
def test_the_c_set_target_hands_unusual_arguments_back(panda):
    q = panda.q0
    task = tasks.FrameTask("panda_hand")
    T = wbc.frame_placement(panda.model, q, "panda_hand")
    task.set_target(T)
    assert wbc.codegen.builtins.is_builtin(task.__dict__.get("set_target"))
    expected = np.concatenate([T[0:3, 3], T[0:3, 0:3].reshape(-1, order="F")])
    for placement in (np.asfortranarray(T), T.tolist(), np.ascontiguousarray(T.T).T, T.astype(np.float32)):
        task._params[:12] = 0.0
        task.set_target(placement)
        np.testing.assert_allclose(task.target, expected, atol=1e-7)
    task.set_target(T, velocity=np.ones(6))  # keywords: the Python method
    np.testing.assert_array_equal(task._params[12:18], np.ones(6))
    before = task._params.copy()
    bad = T.copy()
    bad[0:3, 0:3] *= 1.01
    for args, match in (
        ((bad,), "rotation matrix"),
        ((T, np.full(6, np.nan)), r"velocity must be finite"),
        ((T, np.zeros(5)), r"velocity must be 6 numbers"),
        ((np.eye(3),), r"placement must be a \(4, 4\)"),
    ):
        with pytest.raises(wbc.InputError, match=match):
            task.set_target(*args)
        np.testing.assert_array_equal(task._params, before)  # all or nothing
    with pytest.raises(TypeError):
        task.set_target(T, None, None, None)


def test_a_subclass_overriding_set_target_keeps_its_own():
    class Offset(tasks.PositionTask):
        def set_target(self, position, velocity=None, acceleration=None):
            super().set_target(np.asarray(position) + 1.0, velocity, acceleration)

    task = Offset("x")
    for _ in range(2):
        task.set_target(np.zeros(3))
        np.testing.assert_array_equal(task.target, np.ones(3))
    assert "set_target" not in task.__dict__


def test_a_copied_task_has_its_own_targets():
    import copy

    task = tasks.PositionTask("x")
    task.set_target(np.zeros(3))
    twin = copy.deepcopy(task)
    twin.set_target(np.ones(3))
    twin.set_target(np.full(3, 2.0))
    np.testing.assert_array_equal(task.target, np.zeros(3))
    np.testing.assert_array_equal(twin.target, np.full(3, 2.0))


def test_the_first_step_refuses_a_task_without_a_target(panda):
    """A frame or CoM task never given a target would aim at zeros (a matrix of zeros as a rotation:
    NaN and a zero-torque command; the CoM pulled to the floor): the first step names it instead.
    A posture starts at the neutral configuration and a momentum task at zero momentum."""
    model, q, v = panda.model, panda.q0, np.zeros(panda.model.nv)
    hand = tasks.FrameTask("panda_hand_tcp", kp=100.0)
    com = tasks.CoMTask(kp=10.0)
    posture = tasks.PostureTask(model, weight=1e-3, kp=10.0)
    momentum = tasks.MomentumTask(weight=1e-3, kp=1.0)
    ctrl = wbc.WholeBodyController(model, [hand, com, posture, momentum])
    ctrl.compile()  # at set-up, before any target: allowed
    with pytest.raises(wbc.InputError, match=r"tasks 'frame_panda_hand_tcp', 'com' have no target: call set_target"):
        ctrl.step(q, v)
    hand.set_target_from_configuration(model, q)
    with pytest.raises(wbc.InputError, match=r"^task 'com' has no target"):
        ctrl.step(q, v)
    com.set_target(wbc.center_of_mass(model, q))
    assert ctrl.step(q, v).status is wbc.StepStatus.OPTIMAL
    np.testing.assert_array_equal(posture.target, wbc.neutral(model))
    np.testing.assert_array_equal(momentum.target, np.zeros(3))
    elbow = tasks.PositionTask("panda_link4", kp=10.0)  # a task added later is checked at the next step
    ctrl.add_task(elbow)
    with pytest.raises(wbc.InputError, match=r"^task 'position_panda_link4' has no target"):
        ctrl.step(q, v)
    assert not elbow.target_given
    elbow.set_target_from_configuration(model, q)
    assert elbow.target_given
    assert ctrl.step(q, v).status is wbc.StepStatus.OPTIMAL


def test_a_posture_starts_at_the_neutral_configuration_of_ball_joints():
    model = wbc.robots.synthetic.random_ball_tree(6, np.random.default_rng(0), floating_base=True)
    assert any(j.type is wbc.JointType.SPHERICAL for j in model.joints)
    posture = tasks.PostureTask(model)
    np.testing.assert_array_equal(posture.target, wbc.neutral(model))
    assert posture.target_given is False and posture.needs_target is False


def test_a_task_without_gains_is_named_at_the_first_step(panda):
    """kp defaults to 0 (and kd to 2√kp = 0): such a task never tracks its target; the first step
    says so, once, naming it (a momentum task, whose kp is a damping rate, is left alone)."""
    model, q, v = panda.model, panda.q0, np.zeros(panda.model.nv)
    hand = tasks.FrameTask("panda_hand_tcp")
    hand.set_target_from_configuration(model, q)
    posture = tasks.PostureTask(model, weight=1e-3, kp=10.0)
    ctrl = wbc.WholeBodyController(model, [hand, posture, tasks.MomentumTask(weight=1e-3)])
    with pytest.warns(wbc.TaskWarning, match=r"task 'frame_panda_hand_tcp' has no gains") as record:
        ctrl.step(q, v)
    assert len(record) == 1 and record[0].filename == __file__  # points at the caller's step
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ctrl.step(q, v)  # once
        hand.set_gains(100.0)
        ctrl.add_task(tasks.PositionTask("panda_link4", kp=10.0))
        ctrl.tasks[-1].set_target_from_configuration(model, q)
        ctrl.step(q, v)  # every task has gains: nothing to say


def test_a_controller_without_tasks_warns_at_its_first_step(panda):
    ctrl = wbc.WholeBodyController(panda.model, [])
    with pytest.warns(wbc.TaskWarning, match="the controller has no tasks"):
        ctrl.step(panda.q0, np.zeros(panda.model.nv))


def test_a_placement_whose_last_row_is_not_0001_is_refused_in_python_and_in_c(panda):
    """A (4, 4) whose last row is not (0, 0, 0, 1) is not a transform: refused by name, by the first
    (Python) call and by the compiled set_target after it (which hands it back); rounding noise of a
    computed inverse (1e-17) is accepted."""
    hand = tasks.FrameTask("panda_hand_tcp", kp=10.0)
    T = wbc.frame_placement(panda.model, panda.q0, "panda_hand_tcp")
    bad = T.copy()
    bad[3] = 1.0
    for _ in range(2):  # the second call goes through the compiled set_target, when there is one
        with pytest.raises(wbc.InputError, match=r"task 'frame_panda_hand_tcp': placement's last row must be"):
            hand.set_target(bad)
        hand.set_target(T)
    np.testing.assert_array_equal(hand.target[0:3], T[0:3, 3])
    noisy = T.copy()
    noisy[3, 0] = 1e-17
    hand.set_target(noisy)
    with pytest.raises(wbc.InputError, match="last row"):
        hand.set_target(bad.tolist())  # lists convert, and are checked alike
