"""What a control step returns (:class:`Command`), and how one layout's answers become one.

A :class:`CommandWriter` is shared by the strategies of one layout (:mod:`wbc.control.strategies`):
an answer is either the block the one-call C step wrote (``u``, ``q̈``, task errors, normal forces,
its timings: :meth:`CommandWriter.from_block`) or the inputs ``x`` of the layout's active variables
with how they were found (:meth:`CommandWriter.from_x`: ``q̈ = a₀ + B̂u`` in numpy). A step that
found no applicable ``x`` repeats the last command, else applies zero torques (never NaN).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence

import numpy as np

from .builder import Layout
from .fallback import Failure, StepStatus
from .outputs import StepOutputs
from .pieces import Group
from .schedule import ContactSchedule

__all__ = ["Command", "CommandWriter", "LastCommand", "linear_normal_rows"]

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
        timings: microseconds spent in the ``kernel`` (input checks included), in the ``qp``
            (assembly and solution) and in ``total``.
        u: the inputs ``(τ, f of the active contacts)`` applied.
        failure: why the QP's solution could not be applied as posed (a :class:`Failure`), else None;
            then ``qdd`` is what the applied command produces if that is finite, else zeros.
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


class LastCommand:
    """The last torques a controller applied (shared by its layouts' writers): what a step that finds
    no answer repeats."""

    __slots__ = ("tau",)

    def __init__(self) -> None:
        self.tau: np.ndarray | None = None


def linear_normal_rows(contacts: Sequence, variables: Mapping[str, slice], n: int) -> np.ndarray | None:
    """(n_contacts, n) each contact's normal force as a linear function of the variables (its columns
    ``variables[name]`` of ``n``), or None when some contact's normal force is not linear in its force
    variables (all the library's contacts are: checked at two random forces each)."""
    rows = np.zeros((len(contacts), n))
    rng = np.random.default_rng(0)
    for k, c in enumerate(contacts):
        w = np.array([c.normal_force(e) for e in np.eye(c.dim)], dtype=float)
        for f in rng.standard_normal((2, c.dim)):
            if not abs(c.normal_force(f) - w @ f) <= 1e-9 * (1.0 + np.abs(w).sum() * np.abs(f).max()):
                return None
        rows[k, variables[c.name]] = w
    return rows


class _NormalForces:
    """The normal forces of a :meth:`CommandWriter.from_x` answer (``block``), which the schedule follows."""

    __slots__ = ("block", "normal_at")

    def __init__(self, n_contacts: int, normal_at: list[int | None]) -> None:
        self.block = np.zeros(n_contacts)
        self.normal_at = normal_at  # contact k's normal force is block[normal_at[k]] (None: inactive)


class CommandWriter:
    """Writes the :class:`Command` of one layout's answers.

    Args:
        layout: the step's rows and columns.
        outputs: the kernel's outputs (``a₀``, ``B̂``, the task errors of the step).
        contacts: the controller's contacts, in variable order.
        schedule: their runtime state (the normal forces applied are recorded there).
        error_rows: task name -> rows of ``outputs.errors``.
        last: the controller's last applied torques.
        n_u: the number of QP variables with every contact active.
    """

    def __init__(
        self,
        layout: Layout,
        outputs: StepOutputs,
        contacts: Sequence,
        schedule: ContactSchedule,
        error_rows: Sequence[tuple[str, slice]],
        last: LastCommand,
        n_u: int,
    ) -> None:
        self.layout, self.outputs, self.schedule, self.last, self.n_u = layout, outputs, schedule, last, n_u
        structure = layout.structure
        self._error_rows = list(error_rows)
        self._contacts = [(c, structure.variables[c.name], schedule.state(c.name)) for c in contacts]
        self._block: tuple | None = None
        self.block: np.ndarray | None = None  # the last one-call command's block (the schedule reads it)
        #: (n_contacts, n_u) the contacts' normal forces as linear functions of ``u`` (None: not linear)
        self.normal_rows = linear_normal_rows(contacts, structure.variables.slices, n_u)
        # from_x's normal forces, followed by the schedule like the block's (no call per contact)
        x_normal_at = [k if c.name in layout.variables else None for k, (c, _, _) in enumerate(self._contacts)]
        self._x_normals = _NormalForces(len(self._contacts), x_normal_at)
        #: where the one-call block holds each contact's normal force (:meth:`block_layout`)
        self.normal_at: list[int | None] = []

    def block_layout(self, n: int, nv: int, n_errors: int, n_contacts: int) -> None:
        """Where the one-call step's block holds each part (``n`` variables, ``nv`` velocities, the task
        errors, one normal force per contact, then two timings); tells the schedule where the normal
        forces are."""
        o = n + nv
        errors = [(name, slice(o + r.start, o + r.stop)) for name, r in self._error_rows]
        variables = self.layout.variables
        forces = [(c.name, variables.get(c.name), c.dim) for c, _, _ in self._contacts]  # None: inactive
        at = o + n_errors
        # the normal forces the schedule records: the active contacts' (as from_x)
        self.normal_at = [at + k if c.name in variables else None for k, (c, _, _) in enumerate(self._contacts)]
        self._block = (n, self.layout.n_tau, o, errors, forces, at + n_contacts)

    def from_block(self, out: np.ndarray, t_start: float, t_qp: float | None = None) -> Command:
        """The command of the one-call step's block ``out`` (copied once); ``t_qp``: the QP's time, µs,
        when the answer came from a binding step's QP (else the block's own timing)."""
        assert self._block is not None, "block_layout first"
        n, p, o, errors_at, forces_at, tail = self._block
        block = out.copy()
        errors = {}
        for name, rows in errors_at:
            errors[name] = block[rows]
        forces = {}
        for name, columns, dim in forces_at:
            forces[name] = block[columns] if columns is not None else np.zeros(dim)
        tau = block[:p]
        self.last.tau = tau
        t_kernel, t_shortcut = block[tail:].tolist()
        timings = {"kernel": t_kernel, "qp": t_shortcut if t_qp is None else t_qp, "total": (_clock() - t_start) * 1e6}
        command = Command(tau, forces, block[n:o], errors, StepStatus.OPTIMAL, _NO_CONFLICT, timings, block[:n], None)
        self.block = block  # the contacts' normal forces, read by the schedule when needed
        self.schedule.latest = self  # read by the schedule when needed (no call)
        return command

    def from_x(
        self,
        x: np.ndarray | None,
        t_start: float,
        t_kernel: tuple[float, float],
        status: StepStatus = StepStatus.OPTIMAL,
        conflict: tuple[Group, ...] = _NO_CONFLICT,
        failure: Failure | None = None,
    ) -> Command:
        """The command of ``x`` (n,) in the layout's active variables, or of no answer (``x`` None: the
        last command, else zero torques); ``t_kernel``: when the kernel started and ended (clock s)."""
        layout, outputs = self.layout, self.outputs
        a0, Bhat = outputs.a0, outputs.Bhat
        if x is not None:
            if layout.all_columns:
                u_full = x
            else:
                u_full = np.zeros(self.n_u)
                u_full[layout.columns] = x
            qdd = a0 + Bhat @ u_full
            if np.isfinite(qdd).all():
                tau = x[: layout.n_tau].copy()
                self.last.tau = tau
            else:  # singular or overflowing dynamics: never hand out NaN
                x, failure = None, Failure.NON_FINITE
        if x is None:
            if self.last.tau is not None:
                tau, status = self.last.tau.copy(), StepStatus.LAST_COMMAND
            else:
                tau, status = np.zeros(layout.n_tau), StepStatus.ZERO_TORQUE
            u_full = np.zeros(self.n_u)
            u_full[: tau.size] = tau
            x = u_full[layout.columns].copy()
            qdd = a0 + Bhat @ u_full
            if not np.isfinite(qdd).all():
                failure, qdd = Failure.NON_FINITE, np.zeros(a0.size)
            failure = failure or Failure.SOLVER
        forces = {contact.name: u_full[columns] for contact, columns, _ in self._contacts}
        rows, schedule = self.normal_rows, self.schedule
        if rows is not None:  # recorded as the block's are: the schedule follows them
            normals = self._x_normals
            np.dot(rows, u_full, out=normals.block)
            schedule.latest = normals  # read by the schedule when needed (no call)
        else:
            for contact, columns, state in self._contacts:
                if state.active:
                    schedule.record(contact.name, contact.normal_force(u_full[columns]))
        errors_all = outputs.errors
        errors = {name: errors_all[rows].copy() for name, rows in self._error_rows}
        t_end = _clock()
        t0, t1 = t_kernel
        timings = {"kernel": (t1 - t0) * 1e6, "qp": (t_end - t1) * 1e6, "total": (t_end - t_start) * 1e6}
        return Command(tau, forces, qdd, errors, status, conflict, timings, x, failure)
