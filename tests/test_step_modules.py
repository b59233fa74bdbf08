"""A control step is a straight pipeline: it enters each wbc module once (``benchmarks.step_modules``)."""

from __future__ import annotations

import pytest

from benchmarks.step_modules import modules_entered, scenario, trace


@pytest.mark.parametrize("name", ["standing", "binding", "single_support"])
def test_a_steady_step_enters_each_module_once(name):
    """Standing (the minimizer), binding (the CoP bounds: the working-set QP) and single support (a
    lifted foot: gathered rows, binding): no unit calls back into a module the step already left."""
    entries = trace(name)
    assert entries[0] == "wbc.control.controller"
    assert len(entries) == len(set(entries)), " › ".join(entries)
    if name != "standing":  # the QP was solved: the working set's modules are on the path
        assert "wbc.control.shortcut" in entries and "wbc.control.solvers" in entries


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
