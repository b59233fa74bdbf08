"""``WholeBodyController``: tasks, contacts and limits in, joint torques out, one QP in ``u = (τ, f)``.

The controller is thin; each concern is a small unit it owns:

* the contributors (tasks :mod:`wbc.tasks`, contacts :mod:`wbc.control.contacts`, limits
  :mod:`wbc.control.limits`) describe pieces of the QP and are never written to;
* the builder (:mod:`wbc.control.builder`) traces their pieces into one compiled kernel (once per
  contributor set; cached on disk) and selects each step's active rows and columns;
* the contact schedule (:mod:`wbc.control.schedule`) holds activation, force ramps and last forces;
* the solver (:mod:`wbc.control.solvers`) and the fallback policy (:mod:`wbc.control.fallback`).

Each step: the schedule advances; one kernel call evaluates ``a₀``, ``B̂`` and every piece, reading
the contributors' parameters (targets, gains, weights, force limits) straight from their own arrays
(bound to the kernel at compile time: nothing is copied, nothing is written to a contributor); the
minimizer under the equalities alone is kept when it satisfies every inequality and bound (one
product ``C x ≤ d``; then it is the QP's solution), else the QP is solved. ``q̈ = a₀ + B̂ u`` holds exactly by
construction: the equations of motion are never QP constraints.

The model may be a :class:`~wbc.Model` or a clustered :class:`~wbc.ClusterModel` (rotors,
transmissions, loops): the kernel's dynamics come from the step context of the model's type
(:func:`~wbc.control.contexts.context_type`); for a clustered model the state is ``(y, v)`` and the
inputs are the motors (:mod:`wbc.control.cluster_context`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import numpy as np

from ..algorithms.iim import InputMatrixMethod
from ..codegen import Kernel
from ..errors import InputError
from ..model import checks
from ..model.clusters import ClusterModel
from ..model.model import Model
from .builder import OUTPUTS, Layout, Structure, compile_placements, compile_step
from .contacts import Contact
from .contexts import context_type
from .contributor import Contributor, Runtime
from .fallback import Failure, FallbackPolicy, StepStatus
from .fastpath import BAD_INPUT, FAILED, FEASIBLE, INFEASIBLE, KERNEL_FAILED, NOT_VECTORS, CompiledShortcut
from .hierarchy import LexicographicSolver
from .limits import JointPositionLimit, JointVelocityLimit, TorqueLimit
from .not_copyable import NotCopyable
from .pieces import TAU, Group
from .qp import QPProblem, equality_constrained_least_squares, least_squares_by_elimination
from .schedule import ContactSchedule, ContactState
from .solvers import DEFAULT_SOLVER, QPSolver, Solver, make_solver
from .task import Task

__all__ = ["WholeBodyController", "Command", "StepStatus", "Failure"]

_NO_CONFLICT: tuple[Group, ...] = ()
_clock = time.perf_counter


@dataclasses.dataclass
class Command:
    """The result of one control step.

    Attributes:
        tau: actuator efforts (n_actuated,), N m / N, in ``model.actuated`` order; for a clustered
            model the motor efforts (n_motors,), in ``model.motor_joints`` order.
        forces: contact name -> its force variables (zeros for inactive contacts): a world-axis
            force (3,) for a point contact; a sole-frame wrench (6,) or four sole-frame corner forces
            (12,) for a surface contact.
        qdd: the acceleration ``a₀ + B̂ u`` (nv,) the command produces (exact dynamics).
        task_errors: task name -> error ``e`` (dim,).
        status: a :class:`StepStatus`: what was applied.
        conflict: the constraint groups found in conflict when the QP was infeasible, else ().
        failure: why the QP's solution could not be applied as posed (a :class:`Failure`), else None;
            then ``qdd`` is what the applied command produces if that is finite, else zeros.
        timings: microseconds spent in the ``kernel`` (input checks included), in the ``qp``
            (assembly and solution) and in ``total``.
        u: the inputs ``(τ, f of the active contacts)`` applied.
    """

    tau: np.ndarray
    forces: dict
    qdd: np.ndarray
    task_errors: dict
    status: StepStatus
    conflict: tuple[Group, ...]
    timings: dict
    u: np.ndarray
    failure: Failure | None = None


def _positive(value, name: str) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {value!r}") from None
    if not (np.isfinite(value) and value > 0):
        raise InputError(f"{name} must be a finite number > 0, got {value!r}")
    return value


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
        self.model = model
        self._context = context_type(model)
        self.contacts: tuple[Contact, ...] = tuple(contacts)
        for c in self.contacts:
            if not isinstance(c, Contact):
                raise InputError(f"expected wbc contacts (PointContact, SurfaceContact, ...), got {type(c).__name__}")
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
                raise InputError(f"limits must be limit contributors (wbc.control.limits), got {type(limit).__name__}")
            limit.check(model)
        self.kernel: Kernel | None = None
        self._fused: CompiledShortcut | None = None  # the one running the whole step of _fused_layout
        self._fast: dict[int, CompiledShortcut | None] = {}  # per layout (by id): the compiled shortcut
        self.solver = solver  # resolved once by the setter
        self.regularization = regularization
        self.dt = _positive(dt, "dt")
        self.fallback = FallbackPolicy(soft_contact_weight, feasibility_tolerance)
        self._hierarchy = LexicographicSolver(self.solver, self.fallback)
        self.input_matrix = checks.option(InputMatrixMethod, input_matrix, "input_matrix")
        self.check_inputs = bool(check_inputs)
        self.time = 0.0
        self._schedule = ContactSchedule(self.contacts)
        self._runtime = Runtime(self.dt, self.time, self._schedule)
        self._tasks: list[Task] = []
        self._placements: Kernel | None = None  # q -> the contact frames' placements
        self._structure: Structure | None = None
        self._layouts: dict[tuple[bool, ...], Layout] = {}
        self._fused_layout: Layout | None = None
        self._fused_version = -1  # the schedule version _fused_layout is valid for (-1: ask _layout)
        self._fused_by_schedule = False  # whether the layout depends on the schedule alone
        self._tolerance = 0.0  # the shortcut's tolerance traced into the kernel's d
        self._last_tau: np.ndarray | None = None
        self.n_u = self._context.input_count(model) + sum(c.dim for c in self.contacts)
        for t in tasks:
            self.add_task(t)

    # ----------------------------------------------------------------------------- settings
    @property
    def regularization(self) -> float:
        """Relative weight ``ε`` of the strict-convexity term (see the class docstring)."""
        return self._regularization

    @regularization.setter
    def regularization(self, value) -> None:
        self._regularization = _positive(value, "regularization")
        self._unfuse()

    @property
    def check_inputs(self) -> bool:
        """Whether ``step`` validates ``q`` and ``v`` (sizes, finiteness, unit quaternions)."""
        return self._check_inputs

    @check_inputs.setter
    def check_inputs(self, value) -> None:
        self._check_inputs = bool(value)
        self._unfuse()

    @property
    def solver(self) -> QPSolver:
        """The QP solver (a :class:`~wbc.control.solvers.QPSolver`; set it from anything ``solver=`` takes)."""
        return self._solver

    @solver.setter
    def solver(self, value) -> None:
        self._solver = make_solver(value)
        if self.kernel is not None and self._solver.unconstrained_tolerance != self._tolerance:
            self._invalidate()  # the shortcut's tolerance is traced into the kernel
        self._unfuse()
        if hasattr(self, "_hierarchy"):
            self._hierarchy = LexicographicSolver(self._solver, self.fallback)

    def _unfuse(self) -> None:
        """Settings the one-call step read when it was set up changed: set it up again at the next step."""
        self._fused = self._fused_layout = None
        self._fast = {}

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
            raise InputError(f"expected a wbc Task, got {type(task).__name__}")
        if any(t.name == task.name for t in self._tasks):
            raise InputError(f"a task named {task.name!r} is already in the controller")
        task.check(self.model)
        task._claim(self)
        self._tasks.append(task)
        self._invalidate()

    def remove_task(self, task: Task) -> None:
        """Remove a task (recompiles)."""
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
        self.kernel, self._structure, self._layouts, self._fast = None, None, {}, {}
        self._fused = self._fused_layout = None

    # ----------------------------------------------------------------------------- contacts
    def activate_contact(self, name: str, placement=None, ramp: float = 0.0, ramp_force: float | None = None) -> None:
        """Enforce contact ``name`` from the next step on (no recompilation), its frame held toward
        ``placement`` (4, 4) in the world, default where the next step finds it; with ``ramp`` > 0
        its maximum normal force rises from zero to ``ramp_force`` (N, default its limit) over
        ``ramp`` s first (a touchdown without a force jump)."""
        self._schedule.activate(name, placement, ramp, ramp_force)

    def deactivate_contact(self, name: str, ramp: float = 0.0, start_force: float | None = None) -> None:
        """Release contact ``name`` after ramping its maximum normal force to zero over ``ramp`` s
        (from ``start_force``, N, default its limit or its last normal force); no recompilation."""
        self._schedule.deactivate(name, ramp, start_force)

    def contact_state(self, name: str) -> ContactState:
        """A copy of contact ``name``'s runtime state (active, ramp, last normal force, placement, gains)."""
        return self._schedule.state(name).copy()

    def set_contact_gains(self, name: str, kp: float, kd: float | None = None) -> None:
        """Pose-feedback gains of contact ``name`` (1/s², 1/s; ``kd`` default ``2 √kp``); no recompilation."""
        self._schedule.set_gains(name, kp, kd)

    def contact_active(self, name: str) -> bool:
        return self._schedule.state(name).active

    # ----------------------------------------------------------------------------- kernel
    def compile(self) -> Kernel:
        """Trace and compile the control kernel (cached on disk by content); done lazily by ``step``."""
        self._tolerance = self.solver.unconstrained_tolerance
        self.kernel, structure = compile_step(
            self.model, self.contributors, self.contacts, self.input_matrix, self._tolerance
        )
        tree = self._context.kinematic_tree(self.model)
        self._placements = compile_placements(tree, self.contacts) if self.contacts else None
        self._structure = structure
        self._layouts, self._fast = {}, {}
        self._fused = self._fused_layout = None
        contributors = self.contributors
        self._switchable = [
            contributors[k]
            for k in range(len(contributors))
            if type(contributors[k]).is_active is not Contributor.is_active
        ]
        self._switch_index = [contributors.index(c) for c in self._switchable]
        self._contact_outputs = [(c, structure.variables[c.name], self._schedule.state(c.name)) for c in self.contacts]
        self._error_rows = list(structure.errors.items())
        for i, k in enumerate(structure.parameter_inputs):  # the kernel reads them in place: no copies
            self.kernel.bind_input(2 + i, contributors[k].parameters(self._runtime))
        nq = self.kernel.inputs[0].size
        self._state = np.zeros(nq + self.kernel.inputs[1].size)  # q then v: one copy fills both inputs
        self.kernel.bind_input(0, self._state[:nq])
        self.kernel.bind_input(1, self._state[nq:])
        # the outputs with their declared shapes, as views of the kernel's buffers
        shapes = [self.kernel.function.size_out(i) for i in range(self.kernel.function.n_out())]
        self._outputs = [
            np.reshape(o, shape if name in ("A", "A_eq", "G", "Bhat") else (shape[0],), order="F")
            for o, shape, name in zip(self.kernel.outputs, shapes, OUTPUTS)
        ]
        return self.kernel

    def _layout(self) -> Layout:
        runtime = self._runtime
        key = tuple([c.is_active(runtime) for c in self._switchable])  # contributors that can be inactive
        layout = self._layouts.get(key)
        if layout is None:
            active = [True] * len(self.contributors)
            for k, on in zip(self._switch_index, key):
                active[k] = on
            layout = self._layouts[key] = Layout(self._compiled_structure(), active)
        return layout

    def _compiled_structure(self) -> Structure:
        if self._structure is None:
            self.compile()
        assert self._structure is not None  # set by compile
        return self._structure

    def _evaluate(self, q, v) -> list[np.ndarray]:
        """Copy the parameters and the state into the kernel and run it; returns its outputs
        (views of its buffers, overwritten by the next run)."""
        kernel = self.kernel if self.kernel is not None else self.compile()
        if self.check_inputs:
            q, v = self._context.check_state(self.model, q, v)
        inputs = kernel.inputs
        np.copyto(inputs[0], q)
        np.copyto(inputs[1], v)
        kernel.run()
        return self._outputs

    def _advance_clock(self, q) -> None:
        self._runtime.time = self.time
        self._schedule.advance(self.time)
        pending = self._schedule.pending
        if pending:  # contacts just activated without a placement: where they are now
            if self.kernel is None:
                self.compile()
            assert self._placements is not None  # pending contacts exist, so the kernel was built
            if self.check_inputs:
                q = self._context.check_configuration(self.model, q)
            placements = self._placements(q)[0]
            for k, c in enumerate(self.contacts):
                block = placements[12 * k : 12 * k + 12]
                if c.name in pending and np.isfinite(block).all():  # else measured again at the next step
                    self._schedule.place(c.name, *np.split(block, [3]))

    # ----------------------------------------------------------------------------- the step
    def build_problem(self, q, v) -> QPProblem:
        """Evaluate the kernel at ``(q, v)`` and assemble this step's QP, for inspection.

        Does not advance the controller's clock.
        """
        self._advance_clock(q)
        if self.kernel is None:
            self.compile()
        layout = self._layout()
        return layout.problem(self._evaluate(q, v), self.regularization)

    def _shortcut(self, layout: Layout, outputs: Sequence[np.ndarray]) -> np.ndarray | None:
        """The minimizer under the equalities alone if it satisfies every inequality and bound (then
        it solves the QP), else None; see :mod:`wbc.control.qp`."""
        A, b, A_eq, b_eq, _, _, _ = layout.select(outputs)
        if layout.eliminable:
            p = layout.n_tau
            sol = least_squares_by_elimination(
                A[:, :p], A[:, p:], b, A_eq[:, :p], A_eq[:, p:], b_eq, self.regularization
            )
            x = None if sol is None else np.concatenate(sol)
        else:
            r = self.regularization * np.einsum("ij,ij->j", A, A) + 1e-12
            x = equality_constrained_least_squares(A, b, r, A_eq, b_eq)
        if x is None or not layout.feasible(x, outputs):
            return None
        return x

    def step(self, q, v) -> Command:
        """One control step at state ``(q, v)``: returns the :class:`Command` to apply."""
        t_start = _clock()
        fast = self._fused
        self._runtime.time = self.time
        schedule = self._schedule
        if (  # the common case: one C call (checks, kernel, shortcut, command)
            fast is not None
            and schedule.idle(self.time)
            and (schedule.version == self._fused_version or self._fused_layout_again())
        ):
            code = fast.step_objects(q, v)  # float64 vectors: read in C, no conversion
            if code == NOT_VECTORS:  # anything else: converted (or refused, naming the culprit)
                q, v = self._context.check_state(self.model, q, v)
                np.concatenate((q, v), out=self._state)
                code = fast.step()
            if code == FEASIBLE:
                return self._fused_command(fast, t_start)
            return self._fused_fallback(fast, code, q, v, t_start)
        return self._step(q, v, t_start)

    def _fused_layout_again(self) -> bool:
        """Whether this step's layout is the fused one (after the schedule changed)."""
        if self._layout() is not self._fused_layout:
            return False
        if self._fused_by_schedule:  # back to the fused activation set: no need to ask again
            self._fused_version = self._schedule.version
        return True

    def _fused_fallback(self, fast: CompiledShortcut, code: int, q, v, t_start: float) -> Command:
        """The fused call found no answer: refuse a bad state, or solve the binding step's QP on a
        working set of rows (the kernel's outputs are current), or the full QP."""
        if code == BAD_INPUT:
            self._context.check_state(self.model, q, v)  # raises, naming the culprit
            raise InputError("q or v is not finite, or a quaternion of q is not of unit norm")
        if code == KERNEL_FAILED:
            raise InputError("the control kernel failed at this state")
        if code == INFEASIBLE:  # an inequality binds
            t1 = _clock()
            x = fast.screened(self.solver, self._tolerance)
            if x is not None and fast.command(x) == FEASIBLE:
                kernel_us, shortcut_us = fast.timings
                fast.out[self._fused_tail :] = (kernel_us, 0.0)
                return self._fused_command(fast, t_start, shortcut_us + (_clock() - t1) * 1e6)
            code = FAILED  # the working set failed: the full QP, as posed
        return self._step(q, v, t_start, fused_code=code)

    def _fused_command(self, fast: CompiledShortcut, t_start: float, t_qp: float | None = None) -> Command:
        """The :class:`Command` of the fused routine's output block (``t_qp``: the QP time, µs, when
        the answer came from a binding step's QP)."""
        block = fast.out.copy()
        n, p, o = self._fused_sizes
        x, tau, qdd = block[:n], block[:p], block[n:o]
        errors = {}
        for name, rows in self._fused_errors:
            errors[name] = block[rows]
        forces = {}
        for name, columns in self._fused_forces:
            forces[name] = block[columns]
        self._schedule.defer_normal_forces(block)
        self._last_tau = tau
        self.time += self.dt
        t_kernel, t_shortcut = block[self._fused_tail :].tolist()
        timings = {"kernel": t_kernel, "qp": t_shortcut if t_qp is None else t_qp, "total": (_clock() - t_start) * 1e6}
        return Command(tau, forces, qdd, errors, StepStatus.OPTIMAL, _NO_CONFLICT, timings, x, None)

    def _fuse(self, layout: Layout, fast: CompiledShortcut) -> None:
        """Make ``fast`` run this layout's whole step in one C call, when it can (every contact's
        normal force linear in its variables; a compiled kernel)."""
        kernel = self.kernel
        assert kernel is not None and self._structure is not None
        if fast.gathered:  # a layout with inactive contacts: the two-call step
            return
        n = fast.u.size
        normal = np.zeros((len(self.contacts), n))
        rng = np.random.default_rng(0)
        for k, c in enumerate(self.contacts):
            cols = layout.variables[c.name]
            w = np.array([c.normal_force(e) for e in np.eye(c.dim)], dtype=float)
            for f in rng.standard_normal((2, c.dim)):  # linear (all the library's contacts are)?
                if not abs(c.normal_force(f) - w @ f) <= 1e-9 * (1.0 + np.abs(w).sum() * np.abs(f).max()):
                    return
            normal[k, cols] = w
        tree = self.model.tree if isinstance(self.model, ClusterModel) else self.model
        parts = [(start, stop) for start, stop, _, _ in checks.unit_parts(tree)]
        if not fast.fuse(kernel, self.regularization, parts, self.check_inputs, normal):
            return
        nv = self._outputs[8].size
        self._fused, self._fused_layout = fast, layout
        # the layout follows the schedule's version when only contacts (as defined) switch on and off
        self._fused_by_schedule = all(
            isinstance(c, Contact) and type(c).is_active is Contact.is_active for c in self._switchable
        )
        self._fused_version = self._schedule.version if self._fused_by_schedule else -1
        self._fused_sizes = (n, layout.n_tau, n + nv)
        self._fused_errors = [(name, slice(n + nv + r.start, n + nv + r.stop)) for name, r in self._error_rows]
        self._fused_forces = [(c.name, layout.variables[c.name]) for c in self.contacts]
        at = n + nv + self._outputs[10].size
        self._schedule.normal_forces_at(range(at, at + len(self.contacts)))
        self._fused_tail = at + len(self.contacts)

    def _step(self, q, v, t_start: float, fused_code: int | None = None) -> Command:
        """The step in general (any layout, hierarchy, solver); ``fused_code``: the code of the fused
        call that ran the kernel at ``(q, v)`` and the shortcut already (the binding case)."""
        evaluated = fused_code is not None
        if not evaluated:
            self._advance_clock(q)
        if self.kernel is None:
            self.compile()
        layout = self._layout()
        t0 = _clock()
        outputs = self._outputs if evaluated else self._evaluate(q, v)
        t1 = _clock()
        if evaluated:  # the fused call's own timings
            t_kernel, t_shortcut = self._fused.timings if self._fused is not None else (0.0, 0.0)
            t0, t1 = t1 - 1e-6 * (t_kernel + t_shortcut), t1 - 1e-6 * t_shortcut
        status, conflict, failure = StepStatus.OPTIMAL, _NO_CONFLICT, None
        if len(layout.levels) > 1:  # a strict hierarchy (None: infeasible constraints, handled below)
            x = self._hierarchy.solve(layout, outputs, self.regularization)
        elif self.solver.try_unconstrained:
            key = id(layout)
            if key not in self._fast:
                self._fast[key] = fast = CompiledShortcut.build(layout, outputs)
                if fast is not None and self._fused is None:
                    self._fuse(layout, fast)
            fast = self._fast[key]
            if fast is None:
                x = self._shortcut(layout, outputs)
            else:
                code = fused_code if fused_code is not None else fast(self.regularization)
                if code == FEASIBLE:
                    x = fast.u.copy()
                elif code == INFEASIBLE:
                    x = fast.screened(self.solver, self._tolerance)
                else:
                    x = None
        else:
            x = None
        if x is None:
            outcome = self.fallback.solve(layout.problem(outputs, self.regularization), self.solver)
            x, status, conflict, failure = outcome.x, outcome.status, outcome.conflict, outcome.failure
        t_end = _clock()
        a0, Bhat, errors_all = outputs[8], outputs[9], outputs[10]
        if x is not None:
            if layout.all_columns:
                u_full = x
            else:
                u_full = np.zeros(self.n_u)
                u_full[layout.columns] = x
            qdd = a0 + Bhat @ u_full
            if np.isfinite(qdd).all():
                tau = x[: layout.n_tau].copy()
                self._last_tau = tau
            else:  # singular or overflowing dynamics: never hand out NaN
                x, failure = None, Failure.NON_FINITE
        if x is None:
            if self._last_tau is not None:
                tau, status = self._last_tau.copy(), StepStatus.LAST_COMMAND
            else:
                tau, status = np.zeros(layout.n_tau), StepStatus.ZERO_TORQUE
            u_full = np.zeros(self.n_u)
            u_full[: tau.size] = tau
            x = u_full[layout.columns].copy()
            qdd = a0 + Bhat @ u_full
            if not np.isfinite(qdd).all():
                failure, qdd = Failure.NON_FINITE, np.zeros(self.model.nv)
            failure = failure or Failure.SOLVER
        forces = {}
        for contact, columns, state in self._contact_outputs:
            f = u_full[columns]
            forces[contact.name] = f
            if state.active:
                self._schedule.record(contact.name, contact.normal_force(f))
        errors = {name: errors_all[rows].copy() for name, rows in self._error_rows}
        self.time += self.dt
        timings = {"kernel": (t1 - t0) * 1e6, "qp": (t_end - t1) * 1e6, "total": (t_end - t_start) * 1e6}
        return Command(tau, forces, qdd, errors, status, conflict, timings, x, failure)
