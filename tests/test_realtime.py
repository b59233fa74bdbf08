"""The real-time helpers of a control loop: ``wbc.realtime_mode`` (garbage collector frozen, memory
locked where permitted, a clear message where not) and ``WholeBodyController.warm_up`` (the step
rehearsed at the loop's state, with no effect), as :class:`wbc.sim.balance.Balance` uses them."""

from __future__ import annotations

import ctypes
import errno
import gc
import os
import resource
import warnings

import numpy as np
import pytest

import wbc
from tests.helpers import robot_case
from wbc import realtime, tasks


class _FailingLibc:
    """A libc whose ``mlockall`` fails with ``code`` (and records the flags it was given)."""

    def __init__(self, code: int) -> None:
        self.code, self.flags = code, []

    def mlockall(self, flags: int) -> int:
        self.flags.append(flags)
        ctypes.set_errno(self.code)
        return -1

    def munlockall(self) -> int:  # pragma: no cover (never locked)
        raise AssertionError("nothing was locked")


def test_the_garbage_collector_is_frozen_inside_and_restored_after():
    assert gc.isenabled()
    with wbc.realtime_mode(lock_memory=False) as status:
        assert not gc.isenabled()
        assert status.frozen_objects > 0 and gc.get_freeze_count() > 0
        assert not status.memory_locked and status.problems == ()
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:  # a collector the caller had disabled stays disabled
        with wbc.realtime_mode(lock_memory=False):
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(KeyError), wbc.realtime_mode(lock_memory=False):  # an error in the block restores too
        raise KeyError("inside")
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_one_realtime_mode_at_a_time():
    with (
        wbc.realtime_mode(gc_freeze=False, lock_memory=False),
        pytest.raises(wbc.InputError, match="already active"),
        wbc.realtime_mode(lock_memory=False),
    ):
        pass
    with wbc.realtime_mode(gc_freeze=False, lock_memory=False):  # released after
        pass


@pytest.mark.parametrize("code", [errno.ENOMEM, errno.EPERM])
def test_memory_that_cannot_be_locked_is_a_clear_warning_or_error(monkeypatch, code):
    libc = _FailingLibc(code)
    monkeypatch.setattr(realtime, "_libc", lambda: libc)
    warning = r"memory not locked .*RLIMIT_MEMLOCK is .*CAP_IPC_LOCK"
    with pytest.warns(wbc.WbcPerformanceWarning, match=warning) as w, wbc.realtime_mode(gc_freeze=False) as status:
        assert not status.memory_locked and len(status.problems) == 1
    assert errno.errorcode[code] in str(w[0].message)
    with pytest.raises(wbc.RealtimeUnavailable, match="memory not locked"), wbc.realtime_mode(required=True):
        pytest.fail("entered")
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_future_pages_are_locked_only_without_a_limit(monkeypatch):
    """With a finite RLIMIT_MEMLOCK and no CAP_IPC_LOCK, MCL_FUTURE would make later allocations past
    the limit fail: only the pages mapped now are locked."""
    libc = _FailingLibc(errno.ENOMEM)
    monkeypatch.setattr(realtime, "_libc", lambda: libc)
    monkeypatch.setattr(realtime, "_has_capability", lambda bit: False)
    monkeypatch.setattr(resource, "getrlimit", lambda which: (8 << 20, 8 << 20))
    with pytest.warns(wbc.WbcPerformanceWarning, match="RLIMIT_MEMLOCK is 8 MiB"), wbc.realtime_mode(gc_freeze=False):
        pass
    monkeypatch.setattr(realtime, "_has_capability", lambda bit: bit == realtime.CAP_IPC_LOCK)
    with pytest.warns(wbc.WbcPerformanceWarning), wbc.realtime_mode(gc_freeze=False):
        pass
    assert libc.flags == [realtime.MCL_CURRENT, realtime.MCL_CURRENT | realtime.MCL_FUTURE]


def test_memory_is_locked_inside_where_permitted():
    def locked_kib() -> int:
        return realtime._status_kib("VmLck")

    with wbc.realtime_mode(gc_freeze=False, required=False) as status:
        if not status.memory_locked:
            pytest.skip(f"not permitted here: {status.problems}")
        assert locked_kib() > 0
    assert locked_kib() == 0


# ---------------------------------------------------------------------------------------- warm_up
def talos_controller() -> tuple[wbc.WholeBodyController, np.ndarray, np.ndarray]:
    """Talos standing (the tests' controller of test_controller: its kernel is cached), its targets
    at ``q0``, and a state near ``q0`` moving."""
    case = robot_case("talos")
    spec, model = case.spec, case.model
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=0.3, kp=10.0) for f in spec.feet]
    com = tasks.CoMTask(weight=1.0, kp=20.0)
    posture = tasks.PostureTask(model, weight=1e-3, kp=10.0)
    hand = tasks.FrameTask(spec.hands[0], weight=0.1, kp=30.0)
    ctrl = wbc.WholeBodyController(model, [com, posture, hand], contacts)
    ctrl.compile()
    com.set_target(wbc.center_of_mass(model, spec.q0) + np.array([0.0, 0.02, 0.0]))
    posture.set_target(spec.q0)
    hand.set_target(wbc.frame_placement(model, spec.q0, spec.hands[0]))
    rng = np.random.default_rng(7)
    v = 0.05 * rng.standard_normal(model.nv)
    q = wbc.integrate(model, spec.q0, 0.01 * rng.standard_normal(model.nv))
    return ctrl, q, v


def test_warm_up_leaves_no_trace():
    """Warmed up at a state (twice: after a step too), a controller steps exactly as one that was not:
    the same commands bit for bit over several steps, the same clock and contact states."""
    warm, q, v = talos_controller()
    cold, _, _ = talos_controller()
    model = robot_case("talos").model
    states = {c.name: warm.contact_state(c.name) for c in warm.contacts}
    warm.warm_up(q, v)
    assert warm.time == 0.0
    for c in warm.contacts:  # still to be placed by the first step, at its state
        after, before = warm.contact_state(c.name), states[c.name]
        assert (after.active, after.placed, after.last_normal_force) == (before.active, False, before.last_normal_force)
        np.testing.assert_array_equal(after.parameters, before.parameters)
    for k in range(4):
        if k == 2:
            warm.warm_up(q + 0.0, v * 2.0)  # between steps: the clock and the last command kept
        a, b = warm.step(q, v), cold.step(q, v)
        assert a.status == b.status == wbc.StepStatus.OPTIMAL
        np.testing.assert_array_equal(a.tau, b.tau)
        np.testing.assert_array_equal(a.qdd, b.qdd)
        for name in a.forces:
            np.testing.assert_array_equal(a.forces[name], b.forces[name])
        assert warm.time == cold.time
        v = v + 1e-3 * a.qdd
        q = wbc.integrate(model, q, v, 1e-3)


def test_warm_up_refuses_a_bad_state_by_name():
    ctrl, q, v = talos_controller()
    bad = q.copy()
    bad[10] = np.nan
    with pytest.raises(wbc.InputError, match="q"):
        ctrl.warm_up(bad, v)
    with pytest.raises(wbc.InputError, match="v"):
        ctrl.warm_up(q, v[:-1])
    with pytest.raises(wbc.InputError, match="times must be a positive integer, got 0"):
        ctrl.warm_up(q, v, times=0)


# ---------------------------------------------------------------------------------------- the balance loop
def test_balance_run_warms_up_at_the_initial_state_right_before_its_loop_with_no_effect():
    """The warm-up comes right before the first step, at its state; a run with it gives the same log,
    bit for bit, as a run without."""
    pytest.importorskip("mujoco")
    from wbc.sim.balance import Balance, Scenario

    scenario = Scenario.standing(0.1)
    warmed = Balance("solo12", scenario)
    calls: list[tuple] = []
    controller = warmed.controller
    warm_up, step = controller.warm_up, controller.step
    controller.warm_up = lambda q, v: (calls.append(("warm_up", q.copy(), v.copy())), warm_up(q, v))[1]
    controller.step = lambda q, v: (calls.append(("step", q.copy(), v.copy())), step(q, v))[1]
    run = warmed.run(progress=False)
    assert [c[0] for c in calls[:3]] == ["warm_up", "step", "step"]
    np.testing.assert_array_equal(calls[0][1], calls[1][1])
    np.testing.assert_array_equal(calls[0][2], calls[1][2])
    plain = Balance("solo12", scenario)
    plain.controller.warm_up = lambda q, v: None
    other = plain.run(progress=False)
    assert not run["fell"] and len(run["tau"]) == 100
    np.testing.assert_array_equal(run["tau"], other["tau"])


def test_balance_run_in_realtime_mode_and_the_step_makes_no_reference_cycles():
    """``run(realtime=True)``: the loop runs with the collector disabled, restored after; the steps
    leave no reference cycles (what a disabled collector would never free)."""
    pytest.importorskip("mujoco")
    from wbc.sim.balance import Balance, Scenario

    balance = Balance("solo12", Scenario.standing(0.05))
    seen: list[bool] = []
    with warnings.catch_warnings():  # where memory cannot be locked: said, not the point here
        warnings.simplefilter("ignore", wbc.WbcPerformanceWarning)
        balance.run(progress=False, on_step=lambda *a: seen.append(gc.isenabled()), realtime=True)
    assert seen and not any(seen) and gc.isenabled()
    q, v = balance.sim.get_state()
    gc.collect()
    gc.disable()
    try:
        for _ in range(50):
            balance.controller.step(q, v)
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_walker_run_warms_up_right_before_its_loop_with_no_effect():
    """The Walker's loop, as the balance demo's: the warm-up comes right before the first step, at its
    state; the run's torques are those of a run without it, bit for bit."""
    pytest.importorskip("mujoco")
    from wbc.sim.walking import Walker

    warmed = Walker("g1")
    calls: list[tuple] = []
    controller = warmed.controller
    warm_up, step = controller.warm_up, controller.step
    controller.warm_up = lambda q, v: (calls.append(("warm_up", q.copy(), v.copy())), warm_up(q, v))[1]
    controller.step = lambda q, v: (calls.append(("step", q.copy(), v.copy())), step(q, v))[1]
    run = warmed.run(0.05, progress=False)
    assert [c[0] for c in calls[:3]] == ["warm_up", "step", "step"]
    np.testing.assert_array_equal(calls[0][1], calls[1][1])
    np.testing.assert_array_equal(calls[0][2], calls[1][2])
    plain = Walker("g1")
    plain.controller.warm_up = lambda q, v: None
    other = plain.run(0.05, progress=False)
    assert len(run["tau"]) == 50
    np.testing.assert_array_equal(run["tau"], other["tau"])


def _fifo_permitted() -> bool:
    """Whether this process may run a thread under SCHED_FIFO (probed, then put back)."""
    if not hasattr(os, "SCHED_FIFO"):
        return False
    policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except PermissionError:
        return False
    os.sched_setscheduler(0, policy, param)
    return True


@pytest.mark.skipif(not _fifo_permitted(), reason="SCHED_FIFO not permitted here (CAP_SYS_NICE / RLIMIT_RTPRIO)")
def test_the_thread_runs_under_sched_fifo_on_its_cpu_inside_and_as_before_after():
    policy, param, cpus = os.sched_getscheduler(0), os.sched_getparam(0), os.sched_getaffinity(0)
    cpu = max(cpus)
    with wbc.realtime_mode(lock_memory=False, priority=10, cpu=cpu) as status:
        assert os.sched_getscheduler(0) == os.SCHED_FIFO and os.sched_getparam(0).sched_priority == 10
        assert os.sched_getaffinity(0) == {cpu}
        assert (status.priority, status.cpu, status.problems) == (10, cpu, ())
    assert os.sched_getscheduler(0) == policy and os.sched_getparam(0) == param
    assert os.sched_getaffinity(0) == cpus
    with pytest.raises(KeyError), wbc.realtime_mode(lock_memory=False, priority=5):  # an error inside restores
        raise KeyError("inside")
    assert os.sched_getscheduler(0) == policy and os.sched_getaffinity(0) == cpus
    with wbc.realtime_mode(lock_memory=False) as status:  # not asked: left alone
        assert os.sched_getscheduler(0) == policy and (status.priority, status.cpu) == (None, None)


def test_a_priority_that_cannot_be_set_is_a_clear_warning_or_error(monkeypatch):
    def refused(*args):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    policy = os.sched_getscheduler(0)
    monkeypatch.setattr(os, "sched_setscheduler", refused)
    with (
        pytest.warns(wbc.WbcPerformanceWarning, match="priority not set.*RLIMIT_RTPRIO.*CAP_SYS_NICE"),
        wbc.realtime_mode(lock_memory=False, priority=10) as status,
    ):
        assert status.priority is None and "priority not set" in status.problems[0]
        assert not gc.isenabled(), "the rest of the mode still applies"
    assert gc.isenabled()
    monkeypatch.undo()
    monkeypatch.setattr(os, "sched_setscheduler", refused)
    with (
        pytest.raises(wbc.RealtimeUnavailable, match="priority not set"),
        wbc.realtime_mode(lock_memory=False, priority=10, required=True),
    ):
        pass  # pragma: no cover
    assert gc.isenabled() and gc.get_freeze_count() == 0 and os.sched_getscheduler(0) == policy
    with wbc.realtime_mode(gc_freeze=False, lock_memory=False):  # nothing left active
        pass


@pytest.mark.parametrize(
    "options, match",
    [
        ({"priority": 0}, "priority must be an integer in"),
        ({"priority": 100}, "priority must be an integer in"),
        ({"priority": 1.5}, "priority must be an integer in"),
        ({"priority": True}, "priority must be an integer in"),
        ({"cpu": -1}, "cpu must be one of this process's CPUs"),
        ({"cpu": 10_000}, "cpu must be one of this process's CPUs"),
    ],
)
def test_a_priority_or_cpu_the_system_does_not_offer_is_refused_by_name(options, match):
    with pytest.raises(wbc.InputError, match=match), wbc.realtime_mode(lock_memory=False, **options):
        pass  # pragma: no cover
    assert gc.isenabled()


def test_a_paced_balance_loop_starts_each_step_on_its_tick_and_a_priority_needs_realtime():
    """``run(paced=True)``: step ``i`` starts no sooner than ``i`` ms after the first (the loop sleeps
    between steps; unpaced, the 50 steps take far less than 50 ms); the commands are those of an
    unpaced run, bit for bit. A priority outside the real-time mode is refused by name."""
    pytest.importorskip("mujoco")
    import time

    from wbc.sim.balance import Balance, Scenario

    scenario = Scenario.standing(0.05)
    starts: list[float] = []
    paced = Balance("solo12", scenario)
    step = paced.controller.step
    paced.controller.step = lambda q, v: (starts.append(time.perf_counter()), step(q, v))[1]
    run = paced.run(progress=False, paced=True)
    offsets = np.asarray(starts) - starts[0]
    assert len(offsets) == 50 and np.all(offsets >= np.arange(50) * 1e-3 - 1e-6)
    np.testing.assert_array_equal(run["tau"], Balance("solo12", scenario).run(progress=False)["tau"])
    with pytest.raises(wbc.InputError, match="priority is for the real-time mode"):
        Balance("solo12", scenario).run(progress=False, priority=50)
