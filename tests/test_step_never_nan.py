"""A step never hands out NaN and its status tells the truth (issue 17's controller defects, each
repro as a test, and a property-based test over random states, targets, gains, activations, limits)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import wbc
from tests.helpers import robot_case
from wbc import tasks


def _talos_controller(**options):
    case = robot_case("talos")
    model, spec = case.model, case.spec
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width) for f in spec.feet]
    com = tasks.CoMTask(weight=10.0, kp=100.0)
    posture = tasks.PostureTask(model, weight=1e-2, kp=30.0)
    com.set_target_from_configuration(model, spec.q0)
    posture.set_target(spec.q0)
    return wbc.WholeBodyController(model, [com, posture], contacts, **options), com, posture, model, spec


def test_a_huge_velocity_gives_a_finite_command_and_names_the_cause():
    """Item 1: ``step(q0, full(38, 1e160))`` used to return OPTIMAL with NaN torques."""
    ctrl, _, _, model, spec = _talos_controller()
    good = ctrl.step(spec.q0, np.zeros(model.nv))
    assert good.status is wbc.StepStatus.OPTIMAL and good.failure is None
    cmd = ctrl.step(spec.q0, np.full(model.nv, 1e160))
    assert cmd.status is wbc.StepStatus.LAST_COMMAND and cmd.failure is wbc.Failure.NON_FINITE
    assert np.all(np.isfinite(cmd.tau)) and np.all(np.isfinite(cmd.qdd)) and np.all(np.isfinite(cmd.u))
    np.testing.assert_array_equal(cmd.tau, good.tau)


def test_unchecked_nan_state_gives_a_finite_command():
    """Item 1: ``check_inputs=False`` and a NaN in q: zero torques (no previous command), cause named."""
    ctrl, _, _, model, spec = _talos_controller(check_inputs=False)
    q = spec.q0.copy()
    q[10] = np.nan
    cmd = ctrl.step(q, np.zeros(model.nv))
    assert cmd.status is wbc.StepStatus.ZERO_TORQUE and cmd.failure is wbc.Failure.NON_FINITE
    assert np.all(np.isfinite(cmd.tau)) and np.all(np.isfinite(cmd.qdd))
    assert all(np.all(np.isfinite(f)) for f in cmd.forces.values())
    # the contacts were not placed at the NaN state: the next finite step places them and is solved
    for c in ctrl.contacts:
        ctrl.activate_contact(c.name)
    ctrl.step(q, np.zeros(model.nv))
    cmd = ctrl.step(spec.q0, np.zeros(model.nv))
    assert cmd.status is wbc.StepStatus.OPTIMAL, cmd.status
    assert all(np.all(np.isfinite(ctrl.contact_state(c.name).placement)) for c in ctrl.contacts)


def test_complex_states_are_refused():
    """Item 4: complex q used to lose its imaginary part with only a numpy warning."""
    ctrl, _, _, model, spec = _talos_controller()
    with pytest.raises(wbc.InputError, match="complex"):
        ctrl.step(spec.q0 + 0j, np.zeros(model.nv))


def test_one_actuated_joint_without_contacts_steps():
    """Item 5: one actuated joint and no contacts (B̂ is one column) steps normally."""
    urdf = wbc.robots.synthetic.chain_urdf(1)
    model = wbc.load_urdf(urdf, floating_base=False)
    task = tasks.PostureTask(model, kp=10.0)
    task.set_target(np.array([0.3]))
    ctrl = wbc.WholeBodyController(model, [task])
    cmd = ctrl.step(np.zeros(1), np.zeros(1))
    assert cmd.status is wbc.StepStatus.OPTIMAL and cmd.tau.shape == (1,) and cmd.qdd.shape == (1,)
    assert cmd.qdd[0] > 0, "the joint accelerates towards its target"


@pytest.mark.parametrize("task", ["com", "frame", "orientation", "posture"])
def test_bad_targets_name_the_task(task):
    """Item 13: ``set_target("abc")`` used to raise a bare ValueError."""
    model = robot_case("panda").model
    t = {
        "com": lambda: tasks.CoMTask(),
        "frame": lambda: tasks.FrameTask("panda_link7"),
        "orientation": lambda: tasks.OrientationTask("panda_link7"),
        "posture": lambda: tasks.PostureTask(model),
    }[task]()
    with pytest.raises(wbc.InputError, match=t.name):
        t.set_target("abc")


def test_proxqp_is_bounded_on_an_infeasible_collapse():
    """Item 6: proxqp on Talos with 1 N m torque limits used to spend minutes per QP. Run in a
    subprocess so a regression is a failed test, not a hung suite (a hang guard, not a timing)."""
    pytest.importorskip("proxsuite")
    code = textwrap.dedent(
        """
        import numpy as np
        from benchmarks.solvers import collapse
        r = collapse("proxqp", 60)
        assert r["non_finite_commands"] == 0, r
        print(r)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]


def test_proxqp_without_warm_start_is_deterministic():
    """Item 14: with ``warm_start=False`` proxqp's answer does not depend on its history (warm-started,
    this test's second pass differs by 4e-7 N m; the issue's scenario, by 0.05 N m). Not bit for bit:
    once in a full run the same problem (checked identical) solved twice differed by 2e-12 N m
    (2.5e-10 relative), most likely round-off of SIMD/BLAS kernels whose summation order follows the
    arrays' memory alignment; it did not reproduce in isolation."""
    pytest.importorskip("proxsuite")
    solver = wbc.control.solvers.ProxQPSolver(warm_start=False)
    ctrl, _, _, model, spec = _talos_controller(solver=solver, limits=[wbc.TorqueLimit()])
    ctrl.solver.try_unconstrained = False  # always solve the QP
    rng = np.random.default_rng(1)
    states = [
        (wbc.integrate(model, spec.q0, rng.normal(size=model.nv) * 0.02), rng.normal(size=model.nv) * 0.1)
        for _ in range(4)
    ]
    first = [ctrl.step(q, v).tau for q, v in states]
    second = [ctrl.step(q, v).tau for q, v in states]
    for a, b in zip(first, second):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


# ----------------------------------------------------------------------------- property-based
@pytest.fixture(scope="module")
def controller():
    return _talos_controller()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@pytest.mark.filterwarnings("ignore::wbc.TaskWarning")  # kp = 0 is one of the drawn gains
@given(
    seed=st.integers(0, 2**31 - 1),
    q_scale=st.floats(0.0, 0.3),
    v_scale=st.floats(0.0, 3.0),
    com_offset=st.lists(st.floats(-0.3, 0.3), min_size=3, max_size=3),
    kp=st.floats(0.0, 1e4),
    weight=st.floats(0.0, 1e3),
    left=st.booleans(),
    right=st.booleans(),
    limit=st.floats(0.0, 500.0),
)
def test_random_steps_are_finite_and_their_status_is_truthful(
    controller, seed, q_scale, v_scale, com_offset, kp, weight, left, right, limit
):
    """Random finite states, targets, gains, contact activations and torque limits: the command is
    always finite, and OPTIMAL only when ``u`` satisfies the step's QP constraints to tolerance."""
    ctrl, com, posture, model, spec = controller
    rng = np.random.default_rng(seed)
    q = wbc.integrate(model, spec.q0, rng.normal(size=model.nv) * q_scale)
    v = rng.normal(size=model.nv) * v_scale
    com.set_target(wbc.center_of_mass(model, spec.q0) + np.asarray(com_offset))
    com.set_gains(kp)
    posture.set_weight(weight)
    ctrl.limits[0].set_limit(np.full(model.n_actuated, limit))
    for name, on in zip(spec.feet, (left, right)):
        (ctrl.activate_contact if on else ctrl.deactivate_contact)(name)
    problem = ctrl.build_problem(q, v)
    cmd = ctrl.step(q, v)
    assert np.all(np.isfinite(cmd.tau)) and np.all(np.isfinite(cmd.qdd)) and np.all(np.isfinite(cmd.u))
    assert all(np.all(np.isfinite(f)) for f in cmd.forces.values())
    if cmd.status is wbc.StepStatus.OPTIMAL:
        assert cmd.failure is None
        assert problem.violation(cmd.u) <= ctrl.fallback.feasibility_tolerance, problem.violation(cmd.u)
    else:
        assert cmd.failure is not None
    for name in spec.feet:
        ctrl.activate_contact(name)
