"""Task Jacobians and drifts against finite differences; the tasks' fast paths against ``J B̂``."""

from __future__ import annotations

import casadi as ca
import numpy as np
import pytest

import wbc
from tests.helpers import assert_close, robot_case, tree_case
from wbc import tasks
from wbc.algorithms.kinematics import TreeKinematics
from wbc.control.step_context import StepContext

H = 1e-6  # central differences: truncation ~1e-12 · |third derivative|, rounding ~1e-10


def _ctx(model, q, v, contacts=()):
    """The controller's step context, evaluated on numbers."""
    return StepContext(model, ca.DM(q), ca.DM(v), contacts, wbc.InputMatrixMethod.IIM)


def _np(x):
    return np.array(ca.DM(x), dtype=float)


def _task_position(task, model, q):
    """A position-like quantity whose time derivative is the task velocity J v."""
    kin = TreeKinematics(model, ca.DM(q))
    if isinstance(task, tasks.CoMTask):
        return _np(kin.center_of_mass())[task.axes].ravel()
    oMf = kin.frame_placement(model.frame_id(task.frame))
    p, R = _np(oMf.p).ravel(), _np(oMf.R)
    if isinstance(task, tasks.PositionTask):
        return p + R @ np.asarray(task.offset)
    return p, R


def _fd_velocity(task, model, q, v):
    """Finite-difference task velocity along v (angular parts through the rotation log)."""
    qp, qm = wbc.integrate(model, q, v, H), wbc.integrate(model, q, v, -H)
    a, b = _task_position(task, model, qp), _task_position(task, model, qm)
    if not isinstance(a, tuple):
        return (a - b) / (2 * H)
    linear = (a[0] - b[0]) / (2 * H)
    angular = wbc.spatial.log3(a[1] @ b[1].T) / (2 * H)
    if isinstance(task, tasks.OrientationTask):
        return angular
    return np.concatenate([linear, angular])


def _tasks_for(case):
    spec = case.spec
    out = [tasks.CoMTask(kp=1.0), tasks.CoMTask(axes="xy", kp=1.0)]
    frame = spec.hands[0]
    out += [tasks.FrameTask(frame), tasks.PositionTask(frame, offset=(0.05, -0.02, 0.1)), tasks.OrientationTask(frame)]
    return out


@pytest.mark.parametrize("name", ["talos", "panda"])
def test_task_jacobians_and_drifts_against_finite_differences(name):
    case = robot_case(name)
    model = case.model
    rng = np.random.default_rng(4)
    for _ in range(3):
        q = wbc.random_configuration(model, rng, scale=0.5)
        v = rng.normal(size=model.nv)
        ctx = _ctx(model, q, v)
        for task in _tasks_for(case):
            J, drift, vel = (_np(x) for x in task.measure(ctx))
            assert_close(J @ v, vel.ravel(), 1e-12, f"{task.name}: velocity = J v")
            assert_close(vel.ravel(), _fd_velocity(task, model, q, v), 1e-7, f"{task.name}: J v vs finite differences")
            # drift: d/dt(J v) at q̈ = 0
            Jp = _np(task.measure(_ctx(model, wbc.integrate(model, q, v, H), v))[0])
            Jm = _np(task.measure(_ctx(model, wbc.integrate(model, q, v, -H), v))[0])
            assert_close(drift.ravel(), (Jp - Jm) @ v / (2 * H), 1e-6, f"{task.name}: J̇ v vs finite differences")


def test_posture_task_jacobian_and_error():
    case = tree_case(2, 12, True)  # continuous, prismatic, unaligned joints
    model = case.model
    rng = np.random.default_rng(0)
    q, v = wbc.random_configuration(model, rng), rng.normal(size=model.nv)
    target = wbc.random_configuration(model, rng)
    task = tasks.PostureTask(model)
    ctx = _ctx(model, q, v)
    _J, drift, vel = (_np(x) for x in task.measure(ctx))
    assert_close(vel.ravel(), v[model.actuated_v_indices], 1e-15, "posture velocity")
    assert_close(drift, np.zeros_like(drift), 0.0, "posture drift")
    e = _np(task.error(ctx, ca.DM(target))).ravel()
    assert_close(e, wbc.difference(model, q, target)[model.actuated_v_indices], 1e-12, "posture error = q_ref ⊖ q")


def test_momentum_task_measure_against_pinocchio_quantities():
    case = robot_case("talos")
    model = case.model
    rng = np.random.default_rng(5)
    q, v = wbc.random_configuration(model, rng, scale=0.3), rng.normal(size=model.nv)
    ctx = _ctx(model, q, v)
    task = tasks.MomentumTask(linear=True)
    J, drift, _ = (_np(x) for x in task.measure(ctx))
    assert_close(J, wbc.centroidal_map(model, q), 1e-12, "A_g")
    assert_close(drift.ravel(), wbc.centroidal_drift(model, q, v), 1e-12, "Ȧ_g v")
    assert_close(_np(task.error(ctx, ca.DM.zeros(6, 1))).ravel(), -J @ v, 1e-12, "momentum error")


@pytest.mark.parametrize("contact_model", ["wrench", "corners"])
def test_newton_fast_paths_equal_the_general_input_rows(contact_model):
    """CoM and momentum rows from the contact wrenches equal J B̂ and J a₀ + J̇ v (floating base)."""
    case = robot_case("talos")
    model, spec = case.model, case.spec
    model_class = {"wrench": wbc.SurfaceContact, "corners": wbc.SurfaceCornersContact}[contact_model]
    contacts = [model_class(f, spec.sole.length, spec.sole.width) for f in spec.feet]
    contacts.append(wbc.PointContact(spec.hands[0], offset=(0.0, 0.0, 0.1)))
    rng = np.random.default_rng(6)
    q, v = wbc.random_configuration(model, rng, scale=0.3), rng.normal(size=model.nv)
    ctx = _ctx(model, q, v, contacts)  # B̂ in the contacts' force variables, as the controller builds it
    for task in (tasks.CoMTask(), tasks.CoMTask(axes="yz"), tasks.MomentumTask(), tasks.MomentumTask(linear=True)):
        J, drift, _ = task.measure(ctx)
        fast = [_np(x) for x in task.input_rows(ctx, J, drift)]
        general = [_np(x) for x in wbc.control.Task.input_rows(task, ctx, J, drift)]
        scale = max(1.0, np.abs(general[0]).max())
        assert_close(fast[0], general[0], 1e-9 * scale, f"{task.name}: A_u")
        assert_close(fast[1], general[1], 1e-9, f"{task.name}: drift")


def test_task_parameter_errors_are_clear():
    task = tasks.CoMTask()
    with pytest.raises(wbc.InputError, match="kp"):
        task.set_gains([1.0, 2.0])
    with pytest.raises(wbc.InputError, match="weight"):
        task.set_weight(-1.0)
    with pytest.raises(wbc.InputError, match="position"):
        task.set_target([0.0, 1.0])
    frame = tasks.FrameTask("x")
    with pytest.raises(wbc.InputError, match="rotation"):
        frame.set_target(np.diag([1.0, 1.0, 2.0, 1.0]))
    with pytest.raises(wbc.FrameError):
        wbc.WholeBodyController(robot_case("panda").model, [frame])
