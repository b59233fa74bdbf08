"""A control step is a straight pipeline: it enters each wbc module once (``benchmarks.step_modules``)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import wbc
from benchmarks.step_modules import modules_entered, scenario, trace
from wbc.control.strategies import WorkingSet
from wbc.errors import InputError


@pytest.mark.parametrize("name", ["standing", "binding", "single_support"])
def test_a_steady_step_enters_each_module_once(name):
    """Standing (the minimizer), binding (the CoP bounds: the binding QP, in C inside the one call) and
    single support (a lifted foot: gathered rows, binding): no unit calls back into a module the step
    already left."""
    ctrl, q, v = scenario(name)
    for _ in range(5):
        ctrl.step(q, v)
    entries = modules_entered(lambda: ctrl.step(q, v))
    assert entries[0] == "wbc.control.controller"
    assert len(entries) == len(set(entries)), " › ".join(entries)
    working_set = next(s for s in ctrl._plan.strategies if isinstance(s, WorkingSet))
    assert working_set.active.any() == (name != "standing")  # the traced step bound (a QP) or not


def test_the_tracer_counts_returns_to_a_module_left():
    """The tracer sees a module entered twice (not a test that cannot fail)."""
    ctrl, q, v = scenario("standing")

    def twice():
        ctrl.step(q, v)
        ctrl.contact_active(ctrl.contacts[0].name)
        ctrl.step(q, v)

    entries = modules_entered(twice)
    assert entries.count("wbc.control.controller") == 3 and entries.count("wbc.control.schedule") >= 2


def test_a_step_during_a_force_ramp_enters_each_module_once():
    """A foot's release ramp (the schedule advancing at every step: one call, ``ContactSchedule.tick``;
    the activation set read without asking each contact): each module once."""
    ctrl, q, v = scenario("standing")
    for _ in range(3):
        ctrl.step(q, v)
    name = ctrl.contacts[0].name
    ctrl.deactivate_contact(name, ramp=0.05)
    ctrl.step(q, v)  # the first step of the ramp also hands the schedule the new plan's forces
    entries = modules_entered(lambda: ctrl.step(q, v))
    assert ctrl.contact_state(name).ramp is not None  # still ramping
    assert len(entries) == len(set(entries)), " › ".join(entries)


def _numpy_levels():
    """Two priority levels answered in numpy (the levels' one-call step disabled: the hierarchy)."""
    return scenario("numpy_levels")


@pytest.mark.parametrize("name", ["touchdown", "first_step", "numpy_levels"])
def test_a_plan_switch_a_first_step_and_the_numpy_levels_enter_each_module_once(name):
    """The step of a touchdown (another plan: the schedule reads the previous plan's normal forces in
    its tick, no call of the writer back into it), the first step after ``compile()`` and a step of
    the levels in numpy (the hierarchy on the layout's selection, made once): each module once."""
    entries = trace(name)
    assert entries[0] == "wbc.control.controller"
    assert len(entries) == len(set(entries)), " › ".join(entries)
    if name == "numpy_levels":
        assert "wbc.control.hierarchy" in entries


@pytest.mark.parametrize("ramp, stop_at_switch", [(0.0, False), (0.005, False), (0.005, True)])
def test_the_last_normal_forces_survive_a_plan_switch_without_a_read_between(ramp, stop_at_switch):
    """A release (at once, or at the end of a ramp: the tick switches the plan), then steps of the
    single-support plan (or only its first: the states read before another tick), nobody reading the
    schedule meanwhile: the released foot keeps the normal force of the last command that enforced it
    (the previous plan's source, read by the tick that found the new one, or by the read), the
    standing foot reports the last command's."""
    ctrl, q, v = scenario("standing")
    for _ in range(3):
        enforced = ctrl.step(q, v)
    left, right = ctrl.contacts
    schedule = ctrl._schedule
    ctrl.deactivate_contact(left.name, ramp=ramp)
    for _ in range(12):
        command = ctrl.step(q, v)
        if schedule.activation[0]:  # this step's plan enforced the left foot (read without a call)
            enforced = command
        elif stop_at_switch:
            break
    assert not schedule.activation[0]
    assert ctrl.contact_state(left.name).last_normal_force == pytest.approx(
        left.normal_force(enforced.forces[left.name]), rel=1e-12, abs=1e-9
    )
    assert ctrl.contact_state(right.name).last_normal_force == pytest.approx(
        right.normal_force(command.forces[right.name]), rel=1e-12
    )
    assert left.normal_force(enforced.forces[left.name]) > (1.0 if ramp else 100.0)


def test_the_numpy_paths_state_check_refuses_what_the_full_check_refuses():
    """Two priority levels (the state checked in Python, without entering the model's modules in the
    common case): a non-finite entry, a quaternion off unit norm, a wrong size or a masked array are
    refused naming ``q`` or ``v``; a list is converted; the command equals that of the array."""
    ctrl, q, v = _numpy_levels()
    bad_quaternion = q.copy()
    bad_quaternion[3:7] *= 1.01
    nan_v = v.copy()
    nan_v[4] = np.nan
    for qq, vv, culprit in (
        (bad_quaternion, v, "q: the quaternion"),
        (q, nan_v, "v has non-finite entries at indices [4]"),
        (q[:-1], v, "q must have shape"),
        (np.ma.masked_array(q), v, "q is a numpy masked array"),
    ):
        with pytest.raises(InputError, match=re.escape(culprit)):
            ctrl.step(qq, vv)
    a = ctrl.step(list(q), list(v))
    ctrl.time = 0.0
    assert np.array_equal(ctrl.step(q, v).u, a.u)


def _panda_levels_with_a_collision_limit():
    """The Panda, the hand above the posture, a self-collision limit (rows of ``G`` the kernel traces)."""
    from wbc import robots, tasks

    spec = robots.load("panda")
    model = spec.model
    hand = tasks.PositionTask("panda_hand_tcp", weight=1.0, kp=100.0)
    posture = tasks.PostureTask(model, weight=1e-3, kp=10.0)
    posture.set_priority(1)
    pair = wbc.CollisionPair(
        wbc.Sphere("panda_hand", 0.06, (0, 0, 0.05)), wbc.Capsule("panda_link0", 0.12, (0, 0, 0), (0, 0, 0.35))
    )
    limits = [wbc.TorqueLimit(), wbc.JointPositionLimit(), wbc.JointVelocityLimit(), wbc.SelfCollisionLimit([pair])]
    ctrl = wbc.WholeBodyController(model, [hand, posture], limits=limits)
    hand.set_target([0.0, 0.0, 0.2])
    posture.set_target(spec.q0)
    return ctrl, spec.q0.copy(), np.zeros(model.nv)


@pytest.mark.parametrize("case", ["talos", "talos_lifted", "panda_collision"])
def test_the_layouts_selection_is_what_its_rows_and_feasibility_test_give(case):
    """``Layout.selection`` (the hierarchy's one call into the builder) holds ``inequality_matrix``'s
    ``G`` and ``select``'s rows, and ``C u ≤ d`` is ``Layout.feasible``'s product: Talos on both feet
    and with a lifted foot (gathered columns), the Panda with its joint limits (rows of ``B̂``) and a
    self-collision limit (traced rows of ``G``)."""
    ctrl, q, v = _panda_levels_with_a_collision_limit() if case == "panda_collision" else scenario("numpy_levels")
    if case == "talos_lifted":
        ctrl.deactivate_contact(ctrl.contacts[0].name)
    u = ctrl.step(q, v).u
    layout = ctrl._layout()
    assert layout.all_columns != (case == "talos_lifted")
    if case == "panda_collision":  # both kinds of step-dependent rows
        assert layout._traced_at.size and layout._bhat_at.size
    outputs = ctrl.evaluate(q, v)
    selection = layout.selection(outputs)
    assert np.array_equal(selection.G, layout.inequality_matrix(outputs))
    for mine, theirs in zip(selection[:7], layout.select(outputs)):
        assert np.array_equal(mine, theirs)
    assert np.array_equal(selection.Bhat, outputs.Bhat[:, layout.columns])
    rng = np.random.default_rng(3)
    verdicts = set()
    for x in (u, u + 1e4 * rng.standard_normal(u.size), u + 1e-3 * rng.standard_normal(u.size)):
        feasible = layout.feasible(x, outputs)
        verdicts.add(feasible)
        np.testing.assert_allclose(selection.C @ x, layout._Cx, rtol=1e-12, atol=1e-9)
        assert bool((selection.C @ x <= selection.d).all()) == feasible
    assert verdicts == {True, False}  # both answers met
