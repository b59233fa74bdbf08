"""The priority levels in one C call (``hierarchy.c``): the same commands as the numpy hierarchy.

Reference: :class:`~wbc.control.hierarchy.LexicographicSolver` (numpy), itself checked against
Pinocchio and independent sequential QPs in ``test_hierarchy.py``. Where a level binds, the C call
hands the step to it: the commands are equal either way, and both ways are exercised.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import wbc
from tests.helpers import assert_builtin_step, assert_close, assert_same_inputs, eom_residual, robot_case
from tests.test_hierarchy import _near_elbow_limit, _set_levels, _state, _targets, talos_levels
from wbc import tasks
from wbc.codegen.cache import find_compiler
from wbc.control import compiled_hierarchy
from wbc.control.compiled_hierarchy import CompiledHierarchy, hierarchy_library
from wbc.control.hierarchy import LexicographicSolver
from wbc.control.shortcut import FEASIBLE, INFEASIBLE
from wbc.control.shortcut_library import shortcut_library
from wbc.control.solvers import DaqpSolver
from wbc.control.strategies import Hierarchy, Minimizer, OneCall
from wbc.errors import CompileError

pytestmark = pytest.mark.skipif(find_compiler() is None, reason="no C compiler")


def test_the_shipped_c_builds_where_a_compiler_is():
    """With a C compiler, ``shortcut.c`` and ``hierarchy.c`` build (a build error is a failure here,
    not the numpy path running silently)."""
    assert shortcut_library() is not None
    assert hierarchy_library() is not None


def _compiled(ctrl) -> CompiledHierarchy:
    first = ctrl._plan.strategies[0]
    assert isinstance(first, OneCall) and isinstance(first.fast, CompiledHierarchy), ctrl._plan.strategies
    assert first.fast.attached
    assert any(isinstance(s, Hierarchy) for s in ctrl._plan.strategies), "the numpy hierarchy takes binding levels"
    return first.fast


def _compare(ctrl, q, v) -> int:
    """One step against the numpy hierarchy on the same kernel outputs; the C call's code."""
    cmd = ctrl.step(q, v)
    assert cmd.status is wbc.StepStatus.OPTIMAL
    fast = _compiled(ctrl)
    outputs = ctrl.evaluate(q, v)
    layout = ctrl._layout()
    reference = LexicographicSolver(ctrl.solver, ctrl.fallback).solve(
        layout, layout.selection(outputs), ctrl.regularization
    )
    assert reference is not None
    assert_same_inputs(cmd.u, reference, outputs.Bhat, "u: C levels vs numpy levels")
    assert_close(cmd.qdd, outputs.a0 + outputs.Bhat @ reference, 1e-9, "qdd")
    code = fast(ctrl.regularization)
    if code == FEASIBLE:  # the C call answered: its own answer is the reference's
        assert_same_inputs(fast.u, reference, outputs.Bhat, "the C call's u")
        assert fast.levels_solved == len(ctrl._layout().levels)
    return code


def test_the_levels_one_call_step_is_a_builtin():
    """With CPython's headers, the levels' one-call step is a builtin taking ``(q, v)`` (as the
    shortcut's: no ctypes conversions per call): it answers as the ctypes routine, refuses a wrong
    number of arguments with a TypeError, and answers NOT_VECTORS for what it does not read in C."""
    from benchmarks.controller import build

    library = hierarchy_library()
    if not library.step_method:
        pytest.skip("built without CPython's headers")
    ctrl, spec, _, _ = build("daqp", "wrench", levels=2)  # torque limits only: nothing binds at rest
    q, v = spec.q0.copy(), np.zeros(spec.model.nv)
    ctrl.step(q, v)
    assert_builtin_step(_compiled(ctrl), library.step_objects, q, v)


@pytest.mark.parametrize("levels", ["2", "3", "split"])
def test_talos_levels_equal_the_numpy_hierarchy(levels):
    """Talos on two feet, CoM | hand | posture (3 levels), CoM | hand and posture (2), or CoM and hand |
    posture (split: the first level's rows are not consecutive, the posture's lie between), default
    limits, posture rows read from B̂: random states answered by the C levels, states with the elbow at
    its limit handed to the numpy levels' QPs; the commands equal the numpy hierarchy's to 1e-9."""
    case = robot_case("talos")
    model, spec = case.model, case.spec
    ctrl, com, hand, posture = talos_levels()
    _set_levels(
        {"2": {com: 0, hand: 1, posture: 1}, "3": {com: 0, hand: 1, posture: 2}}.get(
            levels, {com: 0, hand: 0, posture: 1}
        )
    )
    rng = np.random.default_rng(len(levels))
    codes = []
    try:
        for trial in range(6):
            if trial < 4:  # near the reference posture, nothing binds
                q, v = spec.q0, rng.normal(size=model.nv) * 0.01
                com.set_target(wbc.center_of_mass(model, spec.q0) + rng.normal(size=3) * 0.005)
                T = wbc.frame_placement(model, spec.q0, spec.hands[0])
                T[0:3, 3] += rng.normal(size=3) * 0.01
                hand.set_target(T)
                limits = [x for x in ctrl.limits if isinstance(x, wbc.JointPositionLimit)]
                posture.set_target(limits[0].inside(spec.q0))
            else:
                q, v = _state(model, spec.q0, rng)
                q = _near_elbow_limit(model, q)
                _targets(model, spec, com, hand, posture, rng)
            codes.append(_compare(ctrl, q, v))
            assert eom_residual(case, q, v, ctrl.step(q, v), ctrl.contacts) < 1e-9
    finally:
        _set_levels({com: 0, hand: 0, posture: 0})
    assert FEASIBLE in codes, "the C levels answered some steps"
    assert INFEASIBLE in codes, "a binding level was handed on"


# Level shapes that leave every remainder of the levels' blocks (4 x 4 reflections, 4-row panels) on
# robots whose actuator count is not a multiple of 4: (robot, levels), each level a tuple of tasks
# (kind, argument): a CoM task's axes, a hand's index; the reflector counts r after each level.
_SHAPES = [
    ("g1", ((("com", "z"),), (("pose", 0),), (("posture", None),))),  # 29 actuators: r 1, 7
    ("g1", ((("com", "xyz"), ("pose", 0)), (("pose", 1),), (("posture", None),))),  # r 9, 15
    ("jvrc1", ((("com", "xy"),), (("pose", 0), ("pose", 1)), (("posture", None),))),  # 44: r 2, 14
    ("jvrc1", ((("com", "xy"), ("position", 1)), (("pose", 0), ("orientation", 1)), (("posture", None),))),  # r 5, 14
    ("panda", ((("position", 0),), (("orientation", 0),), (("posture", None),))),  # 7, no contacts: r 3, 6
]
_TASKS = {
    "com": lambda model, spec, axes: tasks.CoMTask(axes, weight=1.0, kp=20.0),
    "pose": lambda model, spec, i: tasks.FrameTask(spec.hands[i], weight=0.1, kp=30.0),
    "position": lambda model, spec, i: tasks.PositionTask(spec.hands[i], weight=0.1, kp=30.0),
    "orientation": lambda model, spec, i: tasks.OrientationTask(spec.hands[i], weight=0.1, kp=30.0),
    "posture": lambda model, spec, _: tasks.PostureTask(model, weight=1e-3, kp=10.0),
}


@pytest.mark.parametrize("robot, shape", _SHAPES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(_SHAPES)])
def test_level_shapes_equal_the_numpy_hierarchy(robot, shape):
    """G1 (29 actuators) and JVRC-1 (44) on two feet and the Panda (7, no contacts), levels of 1 to 12
    rows: random states near the reference posture, the tasks' targets from a nearby configuration;
    the C levels answer and equal the numpy hierarchy."""
    case = robot_case(robot)
    model, spec = case.model, case.spec
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=0.5, kp=0.0, kd=0.0) for f in spec.feet]
    made = []
    for level, level_tasks in enumerate(shape):
        for kind, argument in level_tasks:
            made.append(_TASKS[kind](model, spec, argument))
            made[-1].set_priority(level)
    solver = DaqpSolver()
    solver.unconstrained_tolerance = 1e-9
    ctrl = wbc.WholeBodyController(model, made, contacts, solver=solver)
    ctrl.compile()
    position_limit = next(x for x in ctrl.limits if isinstance(x, wbc.JointPositionLimit))
    q0 = position_limit.inside(spec.q0)  # JVRC-1's fingers rest at their limits
    rng = np.random.default_rng(len(shape[0]) + model.nv)
    codes = []
    for _ in range(3):
        nearby = wbc.integrate(model, q0, rng.normal(size=model.nv) * 0.01)
        for task in made:
            if isinstance(task, tasks.CoMTask):
                task.set_target(wbc.center_of_mass(model, nearby))
            elif isinstance(task, tasks.PostureTask):
                task.set_target(q0)
            else:
                task.set_target_from_configuration(model, nearby)
        codes.append(_compare(ctrl, q0, rng.normal(size=model.nv) * 0.01))
    assert FEASIBLE in codes, codes


def _panda_trials(levels: int, trials: int, seed: int):
    """The Panda (no equalities): the hand task and the posture (above it with ``levels`` 2, weighted
    with 1); per trial a random hand target and velocity, every other trial the elbow driven into its
    limit by the posture's target; yields ``(ctrl, q, v)`` with the targets set."""
    case = robot_case("panda")
    model, spec = case.model, case.spec
    hand = tasks.FrameTask("panda_hand_tcp", weight=1.0, kp=100.0)
    posture = tasks.PostureTask(model, weight=1e-2, kp=50.0)
    posture.set_priority(levels - 1)
    ctrl = wbc.WholeBodyController(model, [hand, posture])
    rng = np.random.default_rng(seed)
    j = model.joints[model.joint_id("panda_joint4")]
    for trial in range(trials):
        q, v = spec.q0.copy(), rng.normal(size=model.nv) * 0.05
        target = spec.q0.copy()
        if trial % 2:
            q[j.idx_q] = j.upper[0] - 0.011
            v[j.idx_v] = 0.3
            target[j.idx_q] = j.upper[0] + 0.5  # the posture pulls the joint into its limit
        T = wbc.frame_placement(model, spec.q0, "panda_hand_tcp")
        T[0:3, 3] += rng.normal(size=3) * 0.05
        hand.set_target(T)
        posture.set_target(target)
        yield ctrl, q, v


def test_panda_levels_with_a_binding_limit():
    """The Panda (no equalities): the hand above the posture, the elbow driven into its limit in some
    steps; the C levels answer the others; the commands equal the numpy hierarchy's."""
    codes = [_compare(ctrl, q, v) for ctrl, q, v in _panda_trials(2, 6, seed=5)]
    assert FEASIBLE in codes and INFEASIBLE in codes, codes


def test_panda_one_level_in_c_equals_the_minimizer_and_the_qp():
    """The Panda's weighted step (one level, no equality): one C call (the levels' path), no numpy
    minimizer in its plan; its commands equal the solver's weighted minimizer where no row binds and
    the full QP's where the elbow is driven into its limit (the C call hands those steps on)."""
    codes = []
    for ctrl, q, v in _panda_trials(1, 8, seed=11):
        cmd = ctrl.step(q, v)
        assert cmd.status is wbc.StepStatus.OPTIMAL
        first = ctrl._plan.strategies[0]
        assert isinstance(first, OneCall) and isinstance(first.fast, CompiledHierarchy) and first.fast.attached
        assert not any(isinstance(s, Minimizer) for s in ctrl._plan.strategies)
        outputs = ctrl.evaluate(q, v)
        layout = ctrl._layout()
        A, b, A_eq, b_eq, *_ = layout.select(outputs)
        r = ctrl.regularization * np.einsum("ij,ij->j", A, A) + 1e-12
        minimizer = ctrl.solver.minimizer(A, b, r, A_eq, b_eq)
        code = first.fast(ctrl.regularization)
        codes.append(code)
        if code == FEASIBLE:
            reference = minimizer
            assert layout.feasible(minimizer, outputs)
        else:  # a row binds at the minimizer: the full QP (as the numpy levels pose it) answers
            assert not layout.feasible(minimizer, outputs)
            reference = LexicographicSolver(ctrl.solver, ctrl.fallback).solve(
                layout, layout.selection(outputs), ctrl.regularization
            )
        scale = max(1.0, float(np.abs(reference).max()))
        assert np.abs(cmd.u - reference).max() <= 1e-9 * scale, "u: one C level vs the reference"
        assert_close(cmd.qdd, outputs.a0 + outputs.Bhat @ reference, 1e-9, "qdd")
    assert FEASIBLE in codes and INFEASIBLE in codes, codes


def test_degenerate_level():
    """The same CoM task at levels 0 and 1 (level 1 has nothing left to move: rank 0 in the null space)
    and the posture at level 2: equal to the numpy hierarchy."""
    case = robot_case("talos")
    model, spec = case.model, case.spec
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=0.3) for f in spec.feet]
    com, again = tasks.CoMTask(weight=1.0, kp=20.0), tasks.CoMTask(weight=2.0, kp=10.0, name="com_again")
    posture = tasks.PostureTask(model, weight=1e-3, kp=10.0)
    again.set_priority(1)
    posture.set_priority(2)
    ctrl = wbc.WholeBodyController(model, [com, again, posture], contacts, limits=[wbc.TorqueLimit()])
    ctrl.compile()
    c0 = wbc.center_of_mass(model, spec.q0)
    com.set_target(c0)
    again.set_target(c0 + 0.01)
    posture.set_target(spec.q0)
    rng = np.random.default_rng(0)
    codes = [_compare(ctrl, spec.q0, rng.normal(size=model.nv) * 0.01) for _ in range(3)]
    assert FEASIBLE in codes


def test_abi_mismatch_is_refused(monkeypatch):
    """A library whose struct differs from :class:`HierarchyData` is refused, naming the field."""
    library = hierarchy_library()
    assert library is not None
    path = library.shortcut.path

    class Other(ctypes.Structure):
        _fields_ = [("s", ctypes.c_void_p), ("kmax", ctypes.c_int)]  # nlev left out

    monkeypatch.setattr(compiled_hierarchy, "HierarchyData", Other)
    with pytest.raises(CompileError, match="kmax"):
        compiled_hierarchy._check_abi(ctypes.CDLL(str(path)), path)
