"""A control step as one chain: each way of answering it is a small unit behind one interface.

:class:`StepPlan` holds, for one :class:`~wbc.control.builder.Layout` (one set of active
contributors), the units tried in order; each :meth:`Strategy.attempt` returns the step's
:class:`~wbc.control.command.Command`, or None to hand the step on:

1. :class:`OneCall` — the input checks, the kernel, the shortcut and the command in one C call
   (the common step: a compiled kernel; a layout with a lifted foot included, its active rows and
   columns copied in C);
2. :class:`Evaluation` — otherwise the input checks and the kernel (not an answer: the stage the
   units below read);
3. :class:`Shortcut` — the compiled shortcut on the layout's gathered rows and columns (when it is
   not attached to the kernel), or :class:`Minimizer` where the compiled shortcut does not apply (the
   solver's numpy minimizer);
4. :class:`WorkingSet` — after either shortcut found a row of ``C u ≤ d`` broken (an inequality binds):
   the QP on a working set of rows in least-distance form, warm-started with the rows active at the
   previous binding step (:meth:`~wbc.control.solvers.QPSolver.least_distance`);
5. :class:`Hierarchy` — tasks at several priority levels: level after level
   (:class:`~wbc.control.hierarchy.LexicographicSolver`);
6. :class:`FullQP` — the QP as posed, then the fallback (:class:`~wbc.control.fallback.FallbackPolicy`):
   always answers.

A layout gets the units that apply to it (``WholeBodyController._make_plan``): a weighted layout
whose equalities are the contacts' own rows gets 1 (or 2 and 3), 4 and 6; a layout with priority
levels 1 (its levels in C: :class:`~wbc.control.compiled_hierarchy.CompiledHierarchy`, where the
equalities are the contacts' own rows or none) or 2, then 5 and 6; a weighted layout without
equalities (a fixed base, no contact) 1 (its one level in C) and 6; any other weighted one 2, the
Minimizer and 6.

The working set (4): first in C (:meth:`~wbc.control.shortcut.CompiledShortcut.binding`: Goldfarb and
Idnani's dual active-set method over every row, each row reduced when it becomes active, warm-started
from the previous binding step's active rows); when that fails, the rows violated at the minimizer and
the rows active at the previous binding step's answer, grown by the rows violated at each answer
until none is, each round solved by the solver. The answer of the QP in the
actuators over a superset of the binding rows that satisfies every row is the full QP's (a convex QP's
minimizer over a superset of the feasible set that is feasible).
"""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import InputError
from ..model.checks import UNIT_TOLERANCE
from .builder import Layout
from .command import Command, CommandWriter
from .compiled_hierarchy import CompiledHierarchy
from .fallback import FallbackPolicy
from .hierarchy import LexicographicSolver
from .outputs import StepOutputs
from .shortcut import BAD_INPUT, FEASIBLE, INFEASIBLE, KERNEL_FAILED, NOT_VECTORS, CompiledShortcut
from .solvers import QPSolver

__all__ = [
    "Step",
    "Strategy",
    "OneCall",
    "Evaluation",
    "Shortcut",
    "WorkingSet",
    "Hierarchy",
    "Minimizer",
    "FullQP",
    "StepPlan",
    "State",
]

_clock = time.perf_counter


class Step:
    """One step in progress (reused from step to step: the controller runs one at a time).

    Attributes:
        q, v: the state as given.
        t_start: when the step started (clock, s).
        evaluated: whether the kernel's outputs are this state's.
        kernel: ``(start, end)`` of the kernel's evaluation (clock, s).
        code: what a shortcut found (a :class:`~wbc.control.shortcut_library.Code`), or -1.
        shortcut_us: the shortcut's time, µs.
    """

    __slots__ = ("code", "evaluated", "kernel", "q", "shortcut_us", "t_start", "v")

    def __init__(self) -> None:
        self.q: Any = None
        self.v: Any = None
        self.t_start = 0.0
        self.evaluated = False
        self.kernel: tuple[float, float] = (0.0, 0.0)
        self.code = -1
        self.shortcut_us = 0.0

    def reset(self, q: Any, v: Any, t_start: float) -> None:
        self.q, self.v, self.t_start = q, v, t_start
        self.evaluated, self.code, self.shortcut_us = False, -1, 0.0


class State:
    """The checked state's way into the kernel: ``check(q, v)`` returns the state as float64 vectors
    (or raises :class:`~wbc.errors.InputError` naming the culprit), ``buffer`` (nq + nv,) is the
    storage the kernel's ``q`` and ``v`` inputs are bound to (``q`` then ``v``); ``unit_parts``:
    ``(start, stop)`` of each part of ``q`` of unit norm."""

    def __init__(
        self,
        check: Callable[[Any, Any], tuple[np.ndarray, np.ndarray]],
        buffer: np.ndarray,
        nq: int,
        unit_parts: Sequence[tuple[int, int]] = (),
    ) -> None:
        self.check, self.buffer = check, buffer
        self.enabled = True
        self._shapes = ((nq,), (buffer.size - nq,))
        self._parts = tuple(unit_parts)

    def load(self, q: Any, v: Any) -> None:
        """Check (when enabled) and copy ``q``, ``v`` into the kernel's inputs."""
        if self.enabled and not self._fits(q, v):
            q, v = self.check(q, v)  # converts, or raises naming the culprit
        np.concatenate((q, v), out=self.buffer)

    def _fits(self, q: Any, v: Any) -> bool:
        """The control loop's case, checked without the model: float64 vectors of the state's sizes,
        finite, each unit part of norm 1 (as :func:`wbc.model.checks.configuration`); anything else
        goes through ``check``."""
        if not (type(q) is type(v) is np.ndarray and q.dtype == v.dtype == np.float64):
            return False
        if (q.shape, v.shape) != self._shapes or not (np.isfinite(q).all() and np.isfinite(v).all()):
            return False
        for start, stop in self._parts:
            part = q[start:stop]
            if abs(float(np.sqrt(part @ part)) - 1.0) > UNIT_TOLERANCE:
                return False
        return True


class Strategy(abc.ABC):
    """One way of answering a step."""

    @abc.abstractmethod
    def attempt(self, step: Step) -> Command | None:
        """The step's command, or None to hand the step to the next unit."""

    def forget(self) -> None:  # noqa: B027 (most units remember nothing)
        """Forget what past steps taught the unit (warm starts)."""


class OneCall(Strategy):
    """The input checks, the kernel, the shortcut and the command in one C call
    (:meth:`CompiledShortcut.attach`); ``q`` and ``v`` read in C when they are float64 ndarrays."""

    def __init__(self, fast: CompiledShortcut | CompiledHierarchy, state: State, writer: CommandWriter) -> None:
        self.fast, self.state, self.writer = fast, state, writer
        self._objects = fast.step_objects

    def attempt(self, step: Step) -> Command | None:
        fast = self.fast
        code = step.code  # the plan may have run the C call already (its common case)
        if code == -1:
            code = NOT_VECTORS if self._objects is None else self._objects(step.q, step.v)
        if code == NOT_VECTORS:  # anything else: converted (or refused, naming the culprit)
            self.state.load(step.q, step.v)
            code = fast.step()
        if code == FEASIBLE:
            return self.writer.from_block(fast.out, step.t_start)
        if code == BAD_INPUT:
            self.state.check(step.q, step.v)  # raises, naming the culprit
            raise InputError("q or v is not finite, or a quaternion of q is not of unit norm")
        if code == KERNEL_FAILED:
            raise InputError("the control kernel failed at this state")
        data = fast.data  # INFEASIBLE or FAILED: the kernel's outputs are this state's
        end = _clock() - 1e-6 * data.t_qp
        step.evaluated, step.kernel = True, (end - 1e-6 * data.t_kernel, end)
        step.code, step.shortcut_us = code, data.t_qp
        return None


class Evaluation(Strategy):
    """The input checks and the kernel, when no unit before ran them (never an answer)."""

    def __init__(self, state: State, run: Callable[[], object]) -> None:
        self.state, self.run = state, run

    def attempt(self, step: Step) -> Command | None:
        if not step.evaluated:
            t0 = _clock()
            self.state.load(step.q, step.v)
            self.run()
            step.evaluated, step.kernel = True, (t0, _clock())
        return None


class Shortcut(Strategy):
    """The compiled shortcut on the kernel's outputs (gathered rows and columns of the layout)."""

    def __init__(self, fast: CompiledShortcut, regularization: float, writer: CommandWriter) -> None:
        self.fast, self.regularization, self.writer = fast, regularization, writer

    def attempt(self, step: Step) -> Command | None:
        t0 = _clock()
        step.code = code = self.fast(self.regularization)
        step.shortcut_us = (_clock() - t0) * 1e6
        if code == FEASIBLE:
            return self.writer.from_x(self.fast.u.copy(), step.t_start, step.kernel)
        return None


class Minimizer(Strategy):
    """The minimizer under the equalities alone where the compiled shortcut does not apply (general
    equalities such as corner contacts, no contact at all, no C compiler), as the solver computes it
    (:meth:`~wbc.control.solvers.QPSolver.minimizer`, numpy), on views of the layout's rows; kept when
    it satisfies every inequality and bound (one product ``C u ≤ d``)."""

    def __init__(
        self, solver: QPSolver, layout: Layout, outputs: StepOutputs, regularization: float, writer: CommandWriter
    ) -> None:
        self.solver, self.layout, self.outputs, self.regularization, self.writer = (
            solver, layout, outputs, regularization, writer,
        )  # fmt: skip

    def attempt(self, step: Step) -> Command | None:
        layout, outputs = self.layout, self.outputs
        A, b, A_eq, b_eq, _, _, _ = layout.select(outputs)
        r = self.regularization * np.einsum("ij,ij->j", A, A) + 1e-12
        x = self.solver.minimizer(A, b, r, A_eq, b_eq)
        if x is None or not layout.feasible(x, outputs):
            return None
        return self.writer.from_x(x, step.t_start, step.kernel)


class WorkingSet(Strategy):
    """A binding step's QP on a growing working set of rows, warm-started (module docstring).

    Args:
        fast: the layout's compiled shortcut (its last call found a row broken).
        solver: the backend (:meth:`~wbc.control.solvers.QPSolver.least_distance`).
        tolerance: the one traced into the kernel's ``d`` (subtracted from the rows' right-hand sides).
        max_rounds: bound on the rounds of growing the set.
    """

    def __init__(
        self, fast: CompiledShortcut, solver: QPSolver, tolerance: float, writer: CommandWriter, max_rounds: int = 10
    ) -> None:
        self.fast, self.solver, self.tolerance, self.writer = fast, solver, tolerance, writer
        self.max_rounds = max_rounds
        self.active = fast.binding_active  # rows active at the last binding step's answer (both ways)
        if fast.attached:  # the one-call step solves binding steps in C too
            fast.bind_in_step(tolerance)

    def forget(self) -> None:
        self.active[:] = False

    def attempt(self, step: Step) -> Command | None:
        if step.code != INFEASIBLE:
            return None
        t0 = _clock()
        fast = self.fast
        tried = fast.attached and fast.binding_tried  # by the one-call step, in C: it failed
        if not tried and fast.binding(self.tolerance) == FEASIBLE:
            code = fast.command(fast.u) if fast.attached else FEASIBLE
        else:  # the working set handed to the backend, its command written as binding's
            code = fast.working_set(self.solver.least_distance, self.tolerance, self.active, self.max_rounds)
        if code != FEASIBLE:
            return None
        if fast.attached:  # its command is in the block
            out = fast.out
            out[-2], out[-1] = fast.data.t_kernel, 0.0
            return self.writer.from_block(out, step.t_start, step.shortcut_us + (_clock() - t0) * 1e6)
        return self.writer.from_x(fast.u.copy(), step.t_start, step.kernel)

    def solve(self) -> np.ndarray | None:
        """The QP's solution ``u`` (n,) (a view of the shortcut's), or None (the solver failed, or the
        set stopped growing while a row still fails: the full QP then runs)."""
        code = self.fast.working_set(self.solver.least_distance, self.tolerance, self.active, self.max_rounds)
        return self.fast.u if code == FEASIBLE else None


class Hierarchy(Strategy):
    """Tasks at several priority levels, solved level after level."""

    def __init__(
        self, solver: LexicographicSolver, layout: Layout, outputs: StepOutputs, regularization: float, writer
    ) -> None:
        self.solver, self.layout, self.outputs, self.regularization, self.writer = (
            solver, layout, outputs, regularization, writer,
        )  # fmt: skip

    def attempt(self, step: Step) -> Command | None:
        layout = self.layout
        x = self.solver.solve(layout, layout.selection(self.outputs), self.regularization)
        return None if x is None else self.writer.from_x(x, step.t_start, step.kernel)


class FullQP(Strategy):
    """The step's QP as posed (:meth:`~wbc.control.builder.Layout.problem`), solved by the fallback
    policy (which diagnoses and softens an infeasible one): always answers."""

    def __init__(
        self,
        fallback: FallbackPolicy,
        solver: QPSolver,
        layout: Layout,
        outputs: StepOutputs,
        regularization: float,
        writer: CommandWriter,
    ) -> None:
        self.fallback, self.solver, self.layout, self.outputs = fallback, solver, layout, outputs
        self.regularization, self.writer = regularization, writer

    def attempt(self, step: Step) -> Command:
        problem = self.layout.problem(self.outputs, self.regularization)
        outcome = self.fallback.solve(problem, self.solver)
        return self.writer.from_x(
            outcome.x, step.t_start, step.kernel, outcome.status, outcome.conflict, outcome.failure
        )


class StepPlan:
    """The units of one layout, tried in order (the module docstring).

    Attributes:
        layout: the layout.
        strategies: the units, in order (the last always answers).
        shortcut: the layout's compiled shortcut, or None.
        one_call: whether the first unit is :class:`OneCall`.
    """

    def __init__(self, layout: Layout, strategies: list[Strategy], shortcut: CompiledShortcut | None) -> None:
        self.layout, self.strategies, self.shortcut = layout, tuple(strategies), shortcut
        first = strategies[0]
        self.one_call = isinstance(first, OneCall)
        self._step = Step()
        # the one-call unit's common case, taken first: its C call reading q and v, then its command
        self._objects = first._objects if isinstance(first, OneCall) else None
        if isinstance(first, OneCall):
            self._out, self._from_block = first.fast.out, first.writer.from_block

    def forget(self) -> None:
        """Every unit forgets what past steps taught it (:meth:`Strategy.forget`)."""
        for strategy in self.strategies:
            strategy.forget()

    def reset(self, q: Any, v: Any, t_start: float) -> Step:
        """The plan's :class:`Step`, reset for a new step at ``(q, v)``."""
        step = self._step
        step.reset(q, v, t_start)
        return step

    def run(self, q: Any, v: Any, t_start: float) -> Command:
        """The command of one step at ``(q, v)``."""
        step = self._step
        objects = self._objects
        if objects is not None:
            code = objects(q, v)
            if code == FEASIBLE:
                return self._from_block(self._out, t_start)
            step.reset(q, v, t_start)
            step.code = code  # OneCall carries on from it
        else:
            step.reset(q, v, t_start)
        for strategy in self.strategies:
            command = strategy.attempt(step)
            if command is not None:
                return command
        raise AssertionError("the last unit of a plan always answers")
