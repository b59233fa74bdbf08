"""``WholeBodyController``: tasks, contacts and limits in, joint torques out, one QP in ``u = (τ, f)``.

The controller is thin; each concern is a small unit it owns:

* the contributors (tasks :mod:`wbc.tasks`, contacts :mod:`wbc.control.contacts`, limits
  :mod:`wbc.control.limits`) describe pieces of the QP and are never written to;
* the builder (:mod:`wbc.control.builder`) traces their pieces into one compiled kernel (once per
  contributor set; cached on disk) and selects each step's active rows and columns;
* the contact schedule (:mod:`wbc.control.schedule`) holds activation, force ramps and last forces;
* the solver (:mod:`wbc.control.solvers`) and the fallback policy (:mod:`wbc.control.fallback`).

Each step is one chain (:mod:`wbc.control.strategies`): the schedule advances; the state is checked
and one kernel call evaluates ``a₀``, ``B̂`` and every piece, reading the contributors' parameters
(targets, gains, weights, force limits) straight from their own arrays (bound to the kernel at compile
time: nothing is copied, nothing is written to a contributor); then the units of the step's layout
are tried in order: the minimizer under the equalities alone, kept when it satisfies every inequality
and bound (one product ``C x ≤ d``; then it is the QP's solution; in the common case checks, kernel,
minimizer and command are one C call), the QP on a working set of rows, the hierarchy, the full QP
and its fallback. ``q̈ = a₀ + B̂ u`` holds exactly by construction: the equations of motion are never
QP constraints.

Everything a step needs is prepared by :meth:`WholeBodyController.compile` (the kernel, the plans of
the layouts, the compiled routines), and :meth:`WholeBodyController.warm_up` rehearses the step at the
loop's state right before its first step (the caches hold its code again): the first step costs what
any step costs. Steps on one controller from several threads are serialized (each caller receives the
command of its own state).

The model may be a :class:`~wbc.Model` or a clustered :class:`~wbc.ClusterModel` (rotors,
transmissions, loops): the kernel's dynamics come from the step context of the model's type
(:func:`~wbc.control.model_context.context_type`); for a clustered model the state is ``(y, v)`` and the
inputs are the motors (:mod:`wbc.control.cluster_step_context`).
"""

from __future__ import annotations

import functools
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from itertools import product
from typing import Any, Generic, TypeVar, overload

import numpy as np

from ..algorithms.iim import InputMatrixMethod
from ..codegen import Kernel
from ..errors import InputError, TaskWarning, WbcError
from ..model import checks
from ..model.clusters import ClusterModel
from ..model.configuration import neutral
from ..model.model import Model
from .builder import Layout, Structure, compile_placements, compile_step
from .command import Command, CommandWriter, LastCommand
from .compiled_hierarchy import CompiledHierarchy
from .contacts import Contact
from .contributor import Contributor, Runtime
from .fallback import Failure, FallbackPolicy, StepStatus
from .hierarchy import LexicographicSolver
from .limits import JointPositionLimit, JointVelocityLimit, TorqueLimit
from .model_context import context_type
from .not_copyable import NotCopyable
from .outputs import StepOutputs, step_outputs
from .pieces import TAU
from .qp import QPProblem
from .schedule import ContactSchedule, ContactState
from .shortcut import FEASIBLE, Attachment, CompiledShortcut
from .solvers import DEFAULT_SOLVER, QPSolver, Solver, make_solver
from .strategies import (
    Evaluation,
    FullQP,
    Hierarchy,
    Minimizer,
    OneCall,
    Shortcut,
    State,
    StepPlan,
    Strategy,
    WorkingSet,
)
from .task import Task, unready_tasks

__all__ = ["WholeBodyController", "Command", "StepStatus", "Failure"]

_clock = time.perf_counter
T = TypeVar("T")

#: Up to this many contributors that can switch on and off (contacts), the plans of every activation
#: set are prepared by compile(); beyond, each set's plan is prepared the first time it occurs.
PLAN_EVERY_SET_UP_TO = 4


class _Setting(Generic[T]):
    """A controller setting the step's plans read: converted when set (``convert``: checks and
    resolves it), then the plans are prepared again, under the controller's lock."""

    def __init__(self, convert: Callable[[Any], T]) -> None:
        self.convert = convert

    def __set_name__(self, owner: type, name: str) -> None:
        self.attribute = f"_{name}"

    @overload
    def __get__(self, controller: None, owner: type) -> _Setting[T]: ...
    @overload
    def __get__(self, controller: object, owner: type) -> T: ...
    def __get__(self, controller, owner):
        return self if controller is None else getattr(controller, self.attribute)

    def __set__(self, controller, value) -> None:
        with controller._lock:
            setattr(controller, self.attribute, self.convert(value))
            controller._replan()


class WholeBodyController(NotCopyable):
    """Operational-space whole-body controller whose QP unknowns are the inputs ``u = (τ, f)``.

    Args:
        model: the robot: a :class:`~wbc.Model`, or a :class:`~wbc.ClusterModel` (then ``step`` takes
            the spanning configuration ``y`` and the independent velocity, and the inputs are its motors).
        tasks: :class:`~wbc.control.task.Task` objects (see :mod:`wbc.tasks`).
        contacts: :class:`~wbc.control.contacts.Contact` objects (point, surface, surface corners).
        limits: limit contributors (:mod:`wbc.control.limits`); default ``[TorqueLimit(torque_limit),
            JointPositionLimit(), JointVelocityLimit()]`` (the URDF's limits).
        solver: a :class:`~wbc.control.solvers.Solver`, its value (``"daqp"``, ``"proxqp"``, ...),
            ``"qpsolvers:<name>"`` or a :class:`~wbc.control.solvers.QPSolver`; resolved once.
        regularization: relative weight ``ε`` of the term ``ε/2 Σᵢ ‖A[:, i]‖² uᵢ²`` (plus a 1e-12 floor)
            that keeps the QP strictly convex; relative, because torques (N m) and forces (N) live
            on very different scales.
        dt: control period, s (the controller's clock: contact force ramps).
        torque_limit: (n_actuated,) symmetric effort limits for the default :class:`TorqueLimit`,
            N m; default the model's URDF limits (unbounded where the URDF gives none).
        soft_contact_weight: weight of the contact equalities in the infeasibility fallback.
        feasibility_tolerance: largest constraint violation (m/s², N) accepted from a solver.
        input_matrix: how the kernel computes ``B̂``: an :class:`~wbc.algorithms.iim.InputMatrixMethod`
            (default the IIM; the dense and eUFM baselines are for comparisons).
        check_inputs: validate ``q``/``v`` each step (sizes, finiteness, unit quaternions).
    """

    def __init__(
        self,
        model: Model,
        tasks: Sequence[Task] = (),
        contacts: Sequence[Contact] = (),
        *,
        limits: Sequence[Contributor] | None = None,
        solver: Solver | str | QPSolver = DEFAULT_SOLVER,
        regularization: float = 1e-8,
        dt: float = 1e-3,
        torque_limit=None,
        soft_contact_weight: float = 1e4,
        feasibility_tolerance: float = 1e-4,
        input_matrix: InputMatrixMethod = InputMatrixMethod.IIM,
        check_inputs: bool = True,
    ) -> None:
        if not isinstance(model, (Model, ClusterModel)):
            raise InputError(f"model must be a wbc.Model or a wbc.ClusterModel, got {type(model).__name__}")
        checks.invertible_dynamics(model.tree if isinstance(model, ClusterModel) else model, "WholeBodyController")
        for given, what in ((tasks, "tasks"), (contacts, "contacts"), (limits, "limits")):
            if isinstance(given, Contributor):
                raise InputError(f"{what} must be a sequence: put the one {type(given).__name__} in a list")
        self.model = model
        self._context = context_type(model)
        self.contacts: tuple[Contact, ...] = tuple(contacts)
        for c in self.contacts:
            if not isinstance(c, Contact):
                raise InputError(f"expected wbc contacts (PointContact, SurfaceContact, ...), got {_kind_of(c)}")
            c.check(model)
        names = [c.name for c in self.contacts]
        if len(set(names)) != len(names) or TAU in names:
            raise InputError(f"contacts must have distinct names other than {TAU!r}, got {names}")
        if limits is None:
            limits = [TorqueLimit(torque_limit), JointPositionLimit(), JointVelocityLimit()]
        elif torque_limit is not None:
            raise InputError("give torque_limit or limits, not both (put a TorqueLimit in limits)")
        self.limits: tuple[Contributor, ...] = tuple(limits)
        for limit in self.limits:
            if not isinstance(limit, Contributor) or isinstance(limit, (Task, Contact)):
                raise InputError(f"limits must be limit contributors (wbc.control.limits), got {_kind_of(limit)}")
            limit.check(model)
        self._lock = threading.RLock()  # one step (or change) at a time
        self.kernel: Kernel | None = None
        self.solver = solver  # resolved once by the setter
        self.regularization = regularization
        self.dt = checks.positive(dt, "dt")
        self.fallback = FallbackPolicy(soft_contact_weight, feasibility_tolerance)
        self.input_matrix = checks.option(InputMatrixMethod, input_matrix, "input_matrix")
        self.check_inputs = bool(check_inputs)
        self.time = 0.0
        self._schedule = ContactSchedule(self.contacts)
        self._runtime = Runtime(self.dt, self.time, self._schedule)
        self._tasks: list[Task] = []
        self._placements: Kernel | None = None  # q -> the contact frames' placements
        self._check_state: Callable[[], int] | None = None  # the input checks in C (a one-call plan's)
        self._measured = np.zeros((0, 12))  # its output: one contact's placement a row (a view)
        self._structure: Structure | None = None
        self._tolerance = 0.0  # the shortcut's tolerance traced into the kernel's d
        self._last = LastCommand()
        self._plans: dict[tuple[bool, ...], StepPlan] = {}  # per activation set
        self._plan: StepPlan | None = None  # this step's, valid while the schedule is at _plan_version
        self._plan_version = -1  # -1: ask the contributors at each step
        self._targets_checked = False  # every task's target checked set (at the first step)
        self.n_u = self._context.input_count(model) + sum(c.dim for c in self.contacts)
        for t in tasks:
            self.add_task(t)

    # ----------------------------------------------------------------------------- settings
    #: Relative weight ``ε`` of the strict-convexity term (see the class docstring).
    regularization = _Setting(lambda value: checks.positive(value, "regularization"))
    #: Whether ``step`` validates ``q`` and ``v`` (sizes, finiteness, unit quaternions).
    check_inputs = _Setting(bool)
    #: The QP solver (a :class:`~wbc.control.solvers.QPSolver`; set it from anything ``solver=`` takes).
    solver = _Setting(make_solver)

    def _replan(self) -> None:
        """A setting the plans read changed: prepare them again now (when compiled); a solver with
        another shortcut tolerance (traced into the kernel) needs the kernel again."""
        if getattr(self, "kernel", None) is not None and self.solver.unconstrained_tolerance != self._tolerance:
            self._invalidate()
        if getattr(self, "_structure", None) is not None:
            self._prepare_plans()

    # ----------------------------------------------------------------------------- contributors
    @property
    def tasks(self) -> tuple[Task, ...]:
        return tuple(self._tasks)

    @property
    def contributors(self) -> tuple[Contributor, ...]:
        """Every contributor, in kernel order: tasks, contacts, limits."""
        return (*self._tasks, *self.contacts, *self.limits)

    def add_task(self, task: Task) -> None:
        """Add a task (the kernel is recompiled, from the disk cache if it was built before).

        Raises:
            InputError: not a task, a duplicate name, or a task that belongs to another controller.
        """
        if not isinstance(task, Task):
            raise InputError(f"expected a wbc Task, got {_kind_of(task)}")
        if any(t.name == task.name for t in self._tasks):
            raise InputError(f"a task named {task.name!r} is already in the controller")
        with self._lock:
            task.check(self.model)
            task._claim(self)
            self._tasks.append(task)
            self._invalidate()

    def remove_task(self, task: Task) -> None:
        """Remove a task (recompiles)."""
        with self._lock:
            if task not in self._tasks:
                raise InputError(f"task {getattr(task, 'name', task)!r} is not in the controller")
            self._tasks.remove(task)
            task._release()
            self._invalidate()

    def within_limits(self, q) -> np.ndarray:
        """``q`` (nq,) with every joint under a :class:`JointPositionLimit` of this controller moved
        inside that limit's effective range (:meth:`JointPositionLimit.inside`, default inset: its
        margin); a copy, other joints as given.

        Use it for posture targets: a target inside a limit's margin band asks the joint for motion
        the limit forbids there, so the bound binds at every step and every step solves a QP (Talos's
        grippers rest at their URDF upper limit in ``half_sitting``).

        Raises:
            InputError: ``q`` is not a finite configuration of the model.
        """
        model = self.model.tree if isinstance(self.model, ClusterModel) else self.model
        q = checks.configuration(model, q, "q").copy()
        for limit in self.limits:
            if isinstance(limit, JointPositionLimit) and limit.joints:
                q = limit.inside(q)
        return q

    def _invalidate(self) -> None:
        """The contributors changed: the kernel is compiled again (by :meth:`compile` or the next step)."""
        self.kernel, self._structure, self._plans, self._plan, self._plan_version = None, None, {}, None, -1
        self._targets_checked = False

    def _check_targets(self) -> None:
        """Before the first step (of these tasks): every task that needs a target has one
        (:attr:`Task.needs_target <wbc.control.task.Task.needs_target>`), else an InputError naming them;
        a :class:`~wbc.errors.TaskWarning` for such a task without gains, or for no task at all."""
        missing, no_gains = unready_tasks(self._tasks)
        if missing:
            names = ", ".join(map(repr, missing))
            subject = f"tasks {names} have" if len(missing) > 1 else f"task {names} has"
            raise InputError(
                f"{subject} no target: call set_target(...) or set_target_from_configuration(model, q) "
                "before the first step"
            )
        if not self._tasks:
            warnings.warn(
                "the controller has no tasks: each step returns the smallest inputs its contacts and limits "
                "allow (no torque against gravity); add tasks (wbc.tasks) to the controller",
                TaskWarning,
                stacklevel=3,
            )
        for name in no_gains:
            warnings.warn(
                f"task {name!r} has no gains (kp = kd = 0): it follows its feed-forward acceleration "
                "only, never its target; give kp (1/s², e.g. kp=100.0) when building it or with set_gains",
                TaskWarning,
                stacklevel=3,
            )
        self._targets_checked = True

    # ----------------------------------------------------------------------------- contacts
    def activate_contact(self, name: str, placement=None, ramp: float = 0.0, ramp_force: float | None = None) -> None:
        """Enforce contact ``name`` from the next step on (no recompilation), its frame held toward
        ``placement`` (4, 4) in the world, default where the next step finds it; with ``ramp`` > 0
        its maximum normal force rises from zero to ``ramp_force`` (N, default its limit) over
        ``ramp`` s first (a touchdown without a force jump)."""
        with self._lock:
            self._schedule.activate(name, placement, ramp, ramp_force)

    def deactivate_contact(self, name: str, ramp: float = 0.0, start_force: float | None = None) -> None:
        """Release contact ``name`` after ramping its maximum normal force to zero over ``ramp`` s
        (from ``start_force``, N, default its limit or its last normal force); no recompilation."""
        with self._lock:
            self._schedule.deactivate(name, ramp, start_force)

    def contact_state(self, name: str) -> ContactState:
        """A copy of contact ``name``'s runtime state (active, ramp, last normal force, placement, gains)."""
        return self._schedule.state(name).copy()

    def set_contact_gains(self, name: str, kp: float, kd: float | None = None) -> None:
        """Pose-feedback gains of contact ``name`` (1/s², 1/s; ``kd`` default ``2 √kp``); no recompilation."""
        with self._lock:
            self._schedule.set_gains(name, kp, kd)

    def contact_active(self, name: str) -> bool:
        return self._schedule.is_active(name)

    # ----------------------------------------------------------------------------- compile
    def compile(self) -> Kernel:
        """Trace and compile the control kernel (cached on disk by content) and prepare every step's
        plan (:mod:`wbc.control.strategies`), each run once: after it, a first step right away costs what
        any step costs (with work in between, call :meth:`warm_up` right before the loop's first step).
        Done by the first step when not called before (and after the tasks changed)."""
        with self._lock:
            return self._compile()

    def _compile(self) -> Kernel:
        self._tolerance = self.solver.unconstrained_tolerance
        contributors = self.contributors
        kernel, structure = compile_step(self.model, contributors, self.contacts, self.input_matrix, self._tolerance)
        tree = self._context.kinematic_tree(self.model)
        placements = compile_placements(tree, self.contacts) if self.contacts else None
        for i, k in enumerate(structure.parameter_inputs):  # the kernel reads them in place: no copies
            kernel.bind_input(2 + i, contributors[k].parameters(self._runtime))
        nq = kernel.inputs[0].size
        state = np.zeros(nq + kernel.inputs[1].size)  # q then v: one copy fills both inputs
        kernel.bind_input(0, state[:nq])
        kernel.bind_input(1, state[nq:])
        if placements is not None:  # it reads the same q; its output, one row per contact, is a view
            placements.bind_input(0, state[:nq])
            self._measured = placements.outputs[0].reshape(len(self.contacts), 12)
        self._placements = placements
        self.kernel, self._structure = kernel, structure
        self._outputs = step_outputs(kernel)
        self._unit_parts = [(start, stop) for start, stop, _, _ in checks.unit_parts(tree)]  # of unit norm
        check = functools.partial(self._context.check_state, self.model)  # no cycle
        self._state = State(check, state, nq, self._unit_parts)
        self._switchable = [c for c in contributors if type(c).is_active is not Contributor.is_active]
        self._switch_index = [contributors.index(c) for c in self._switchable]
        # the activation set follows the schedule's version when only contacts (as defined) switch
        self._by_schedule = all(
            isinstance(c, Contact) and type(c).is_active is Contact.is_active for c in self._switchable
        )
        self._prepare_plans()
        return kernel

    def _prepare_plans(self) -> None:
        """The plans of every activation set (of the current one when there are many)."""
        self._plans, self._plan, self._plan_version = {}, None, -1
        self._state.enabled = self.check_inputs
        self._check_state = None  # the input checks in C (of a plan that runs in one call), or None
        if len(self._switchable) <= PLAN_EVERY_SET_UP_TO:
            keys = list(product((True, False), repeat=len(self._switchable)))
        else:
            keys = [self._activation()]
        for key in keys:
            plan = self._plans[key] = self._make_plan(key)
            if plan.one_call and plan.shortcut is not None and self._check_state is None:
                self._check_state = plan.shortcut.check_state
        self._warm_up()
        self._keep_first_plan()

    def _keep_first_plan(self) -> None:
        """The first step's plan chosen now, when the schedule alone decides it (else by the step)."""
        schedule = self._schedule
        if self._by_schedule and not schedule.awaiting_placement:
            self._plan, self._plan_version = self._plans.get(self._activation()), schedule.version

    def _warm_up(self) -> None:
        """Run the compiled code once (the kernel, the placements, each plan's shortcut and one-call
        step) at the neutral configuration at rest, then rehearse the first step (:meth:`_rehearse`),
        so that the first step does not pay for loading it (page faults of a library of a megabyte,
        first calls through ctypes, Python code run for the first time)."""
        assert self.kernel is not None
        tree = self._context.kinematic_tree(self.model)
        buffer = self._state.buffer
        q0 = neutral(tree)
        buffer[:] = 0.0
        buffer[: q0.size] = q0
        v0 = buffer[q0.size :].copy()
        with np.errstate(all="ignore"):
            self.kernel.run()
            if self._placements is not None:
                self._placements.run()
            for plan in self._plans.values():
                fast = plan.shortcut
                if fast is not None:
                    fast(self.regularization)
                    if plan.one_call:  # its Python side too (a few runs: the interpreter specializes)
                        for _ in range(10):
                            plan.strategies[0].attempt(plan.reset(q0, v0, 0.0))
                        self._schedule.forget()  # not applied: never read (the next tick would read them)
            self._rehearse(q0, v0)
        self._last.tau = None  # forget the warm-up's commands
        self._schedule.forget()

    def warm_up(self, q, v, times: int = 3) -> None:
        """Rehearse the step at the state ``(q, v)`` (nq,), (nv,) ``times`` times, with no effect: call it
        right before the control loop's first step, once the robot's state is known.

        :meth:`compile` runs every step's code at the neutral configuration, but whatever runs between
        it and the first step (building targets, a simulator, waiting for the first sensor message)
        evicts the kernel's code and data from the caches (Talos: 0.7 MB of code): the first step then
        costs 5-10 steps (Talos: 140-570 µs against 40). This call brings them back, at the state the
        first step will see. Nothing a step changes is kept: the clock, the contact schedule (pending
        placements stay pending), the last command; the units' and the solver's warm starts start
        afresh, as after :meth:`compile` (so call it before the first step, not between steps).

        Raises:
            InputError: a bad state (named), as :meth:`step` would; ``times`` not a positive integer.
        """
        if isinstance(times, bool) or not isinstance(times, int) or times < 1:
            raise InputError(f"warm_up: times must be a positive integer, got {times!r}")
        with self._lock:
            if self.kernel is None:
                self._compile()
            self._state.load(q, v)  # checks it (raises naming the culprit) like the step
            last = self._last.tau
            saved = None if last is None else last.copy()
            with np.errstate(all="ignore"):
                self._rehearse(q, v, times)
            self._last.tau = saved
            self._keep_first_plan()

    def _rehearse(self, q: np.ndarray, v: np.ndarray, times: int = 10) -> None:
        """Run the first step's own path at ``(q, v)`` ``times`` times (the schedule advancing, the
        contacts pending a placement placed, the plan's units, the command), each time putting back
        what it changed: the schedule, the clock, the units' and the solver's warm starts."""
        schedule = self._schedule
        saved, time_now = schedule.snapshot(), self.time
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for _ in range(times):
                    self._runtime.time = self.time
                    self._advance(q, v).run(q, v, _clock())
                    schedule.restore(saved)
        except WbcError:  # a state the step refuses (a model whose neutral configuration is singular)
            pass
        finally:
            schedule.restore(saved)
            self.time = self._runtime.time = time_now
            self._plan, self._plan_version = None, -1
            for plan in self._plans.values():
                plan.forget()
            self.solver.reset()

    def _activation(self) -> tuple[bool, ...]:
        """Which contributors that can switch are active now."""
        runtime = self._runtime
        return tuple([c.is_active(runtime) for c in self._switchable])

    def _make_plan(self, key: tuple[bool, ...]) -> StepPlan:
        """The plan of one activation set: its layout and the units that apply to it."""
        assert self.kernel is not None and self._structure is not None
        active = [True] * len(self.contributors)
        for k, on in zip(self._switch_index, key):
            active[k] = on
        layout, outputs = Layout(self._structure, active), self._outputs
        writer = CommandWriter(
            layout, outputs, self.contacts, self._schedule, list(self._structure.errors.items()), self._last, self.n_u
        )
        reg, solver = self.regularization, self.solver
        units: list[Strategy] = []
        fast = None
        if len(layout.levels) == 1 and solver.try_unconstrained:
            fast = CompiledShortcut.build(layout, outputs)
        levels = None
        if len(layout.levels) > 1 or (fast is None and solver.try_unconstrained and layout.eq_rows.size == 0):
            levels = CompiledHierarchy.build(layout, outputs)  # one level without equalities: its minimizer
        if fast is not None and self._attach(layout, fast, writer):
            units.append(OneCall(fast, self._state, writer))  # it runs the kernel (or raises)
        elif levels is not None and self._attach(layout, levels, writer):
            units.append(OneCall(levels, self._state, writer))  # the levels in C; a binding level: Hierarchy
        else:
            units.append(Evaluation(self._state, self.kernel.evaluate))
        if fast is not None:
            if not fast.attached:
                units.append(Shortcut(fast, reg, writer))
            units.append(WorkingSet(fast, solver, self._tolerance, writer))
        elif len(layout.levels) == 1 and solver.try_unconstrained and not (levels is not None and levels.attached):
            units.append(Minimizer(solver, layout, outputs, reg, writer))  # no compiled shortcut for this layout
        if len(layout.levels) > 1:
            units.append(Hierarchy(LexicographicSolver(solver, self.fallback), layout, outputs, reg, writer))
        units.append(FullQP(self.fallback, solver, layout, outputs, reg, writer))
        return StepPlan(layout, units, fast)

    def _attach(self, layout: Layout, fast: CompiledShortcut | CompiledHierarchy, writer: CommandWriter) -> bool:
        """Make ``fast`` run this layout's whole step in one C call, when it can (every contact's
        normal force linear in its variables; a compiled kernel)."""
        assert self.kernel is not None
        n = fast.u.size
        if writer.normal_rows is None:  # a contact's normal force is not linear in its variables
            return False
        normal = writer.normal_rows[:, layout.columns]  # an inactive contact's columns are not there: zero
        if not fast.attach(Attachment(self.kernel, self.regularization, self._unit_parts, self.check_inputs, normal)):
            return False
        outputs = self._outputs
        writer.block_layout(n, outputs.a0.size, outputs.errors.size, len(self.contacts))
        return True

    # ----------------------------------------------------------------------------- the step
    def step(self, q, v) -> Command:
        """One control step at state ``(q, v)`` (nq,), (nv,): returns the :class:`Command` to apply.

        A QP that cannot be solved is not an exception: the command still holds a safe torque, and
        its ``status`` and ``failure`` say what happened (and which constraints conflict).
        Thread-safe: steps on one controller from several threads run one after the other.

        Raises:
            InputError: a bad state (named: size, a non-finite entry, a quaternion not of unit norm);
                at the first step, a task without a target (named).
        """
        with self._lock:
            t_start = _clock()
            if self.kernel is None:
                self._compile()
            if not self._targets_checked:
                self._check_targets()
            plan = self._advance(q, v)
            command = plan.run(q, v, t_start)
            self.time += self.dt
            return command

    def _advance(self, q, v) -> StepPlan:
        """The schedule's clock moves to this step's (one call: :meth:`ContactSchedule.tick`, given the
        placements measured at ``q`` when a contact awaits one); this step's plan: the last one unless a
        contact switched (the schedule's version moved) or the last one was not kept (:meth:`_choose`; a
        ramp in progress changes bounds only, the plan stays)."""
        schedule = self._schedule
        self._runtime.time = self.time
        measured = self._measure(q, v) if schedule.awaiting_placement else None
        schedule.tick(self.time, measured)
        plan = self._plan
        if plan is None or schedule.version != self._plan_version:
            plan = self._choose()
        return plan

    def _choose(self) -> StepPlan:
        """This step's plan (of the activation set now; made if it was not prepared), kept for the next
        steps while the schedule stays at its version (not kept: a contact awaits a placement, or the
        activation is not the schedule's alone)."""
        schedule = self._schedule
        key = schedule.activation if self._by_schedule else self._activation()
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._make_plan(key)
        self._plan = plan
        self._plan_version = schedule.version if self._by_schedule and not schedule.awaiting_placement else -1
        return plan

    def _measure(self, q, v) -> np.ndarray:
        """Where the contact frames are at ``q`` (the state checked first: in C when a plan runs in one
        call), one call of the placements kernel: (n_contacts, 12), one row per contact (a view,
        :meth:`ContactSchedule.place_measured`). Compiled routines only (no Python of another module)."""
        state, check = self._state, self._check_state
        if check is not None and type(q) is type(v) is np.ndarray and q.dtype == v.dtype == np.float64:
            try:
                np.concatenate((q, v), out=state.buffer)
                checked = check() == FEASIBLE
            except ValueError:  # a wrong size or shape
                checked = False
            if not checked:
                state.load(q, v)  # raises, naming the culprit
        else:
            state.load(q, v)
        assert self._placements is not None  # active contacts exist, so the kernel has them
        self._placements.evaluate()
        return self._measured

    # ----------------------------------------------------------------------------- inspection
    def evaluate(self, q, v) -> StepOutputs:
        """The kernel's outputs at ``(q, v)`` (:class:`~wbc.control.outputs.StepOutputs`: views of its
        buffers, overwritten by the next step or evaluation), for inspection; does not advance the clock.

        Raises:
            InputError: a bad state (named).
        """
        with self._lock:
            if self.kernel is None:
                self._compile()
            self._state.load(q, v)
            assert self.kernel is not None
            self.kernel.run()
            return self._outputs

    def build_problem(self, q, v) -> QPProblem:
        """Evaluate the kernel at ``(q, v)`` and assemble this step's QP, for inspection.

        Does not advance the controller's clock (contacts pending a placement are placed at ``q``).
        """
        with self._lock:
            self._runtime.time = self.time
            if self.kernel is None:
                self._compile()
            plan = self._advance(q, v)
            return plan.layout.problem(self.evaluate(q, v), self.regularization)

    def _layout(self) -> Layout:
        """This step's layout (for tests and inspection)."""
        with self._lock:
            if self.kernel is None:
                self._compile()
            key = self._activation()
            plan = self._plans.get(key)
            if plan is None:
                plan = self._plans[key] = self._make_plan(key)
            return plan.layout


def _kind_of(obj: object) -> str:
    """What ``obj`` is, for a message: its class's name, or for a class given in place of an
    instance, that (``TorqueLimit`` for ``TorqueLimit()``)."""
    if isinstance(obj, type):
        return f"the class {obj.__name__} itself, not an instance ({obj.__name__}(...))"
    return type(obj).__name__
