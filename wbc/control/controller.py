"""``WholeBodyController``: tasks and contacts in, joint torques out, one QP in ``u = (τ, f)`` per step.

One compiled kernel evaluates, from ``(q, v)`` and the tasks' parameters (references, gains,
weights):

* the free acceleration ``a₀`` and ``B̂ = M⁻¹ [Sᵀ, J_mᵀ]`` by the IIM (``J_m`` the contacts' motion
  constraints), expressed in each contact's force variables (``B̂_f = B̂_m Γ``);
* the contact block ``J_m M⁻¹ J_mᵀ`` by PV-OSIMr, and ``J_m M⁻¹ Sᵀ`` from the actuated rows of
  ``B̂_m`` (``M⁻¹`` is symmetric), giving the contact equalities ``A_eq u = −(J_m a₀ + J̇_m v)``;
* every task's weighted rows ``A u ≈ b``.

Then numpy assembles the QP of the active contacts (:class:`~wbc.qp.QPProblem`) and a solver
solves it. ``q̈ = a₀ + B̂ u`` holds exactly by construction: the equations of motion are never
QP constraints.

Failure is never NaN. If the QP has no solution, the step names the conflicting constraint
group (``"torque_limits"``, ``"friction"``, ``"normal_force"`` or ``"contacts"``) and falls back, in
order, to: (1) the same QP with the contact equalities turned into a stiff cost term (friction,
CoP and torque limits stay hard; always feasible when zero force and zero torque are), (2) the
last good command, (3) zero torques. :attr:`Command.status` says which was applied.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import time
from collections.abc import Sequence

import casadi as ca
import numpy as np

from ..algorithms.constraints import resolve
from ..algorithms.delassus import pv_osimr
from ..algorithms.dynamics import ArticulatedBodies, aba
from ..algorithms.iim import METHODS as IIM_METHODS
from ..algorithms.iim import iim
from ..algorithms.iim import input_matrix as compute_input_matrix
from ..algorithms.kinematics import TreeKinematics
from ..codegen import Kernel, compile_function, trace
from ..errors import InputError
from ..model import checks
from ..model.model import Model
from ..spatial.lie import skew
from .contacts import Contact, SurfaceContact
from .qp import (
    DEFAULT_SOLVER,
    QPProblem,
    QPSolver,
    equality_constrained_least_squares,
    least_squares_by_elimination,
    make_solver,
)
from .task import Task, TaskContext

__all__ = ["WholeBodyController", "Command", "StepStatus"]


class StepStatus(enum.Enum):
    """What a step applied."""

    OPTIMAL = "optimal"  #: the QP was solved as posed
    SOFT_CONTACTS = "soft_contacts"  #: infeasible; solved with contact equalities as a stiff cost
    LAST_COMMAND = "last_command"  #: infeasible and the fallback failed: previous command repeated
    ZERO_TORQUE = "zero_torque"  #: nothing else available


@dataclasses.dataclass
class Command:
    """The result of one control step.

    Attributes:
        tau: joint torques (n_actuated,), N m / N, in ``model.actuated`` order.
        forces: contact name -> its force variables (zeros for inactive contacts): a world-axis
            force (3,) for a point contact; a sole-frame wrench (6,) or four sole-frame corner
            forces (12,) for a surface contact.
        qdd: the acceleration ``a₀ + B̂ u`` (nv,) the command produces (exact dynamics).
        task_errors: task name -> error ``e`` (dim,).
        status: a :class:`StepStatus`.
        conflict: the constraint groups found in conflict when the QP was infeasible, else ().
        timings: microseconds spent in the ``kernel`` (input checks included), in the ``qp`` (assembly
            and solution) and in ``total``.
        u: the inputs ``(τ, f of the active contacts)`` the QP returned.
    """

    tau: np.ndarray
    forces: dict
    qdd: np.ndarray
    task_errors: dict
    status: StepStatus
    conflict: tuple
    timings: dict
    u: np.ndarray


@dataclasses.dataclass
class _Layout:
    """The QP structure for one set of contact states."""

    key: tuple
    columns: np.ndarray  # input columns of the active variables
    rows: np.ndarray  # equality rows of the active contacts
    all_columns: bool
    all_rows: bool
    eliminable: bool  # every active contact's force variables are its motion rows (Γ = I)
    C: np.ndarray  # [G; I; −I] over the finite bounds: every inequality as C u ≤ d
    d: np.ndarray
    G: np.ndarray
    h: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    variables: dict
    eq_groups: list
    in_groups: list


class WholeBodyController:
    """Operational-space whole-body controller whose QP unknowns are the inputs ``u = (τ, f)``.

    Args:
        model: the robot.
        tasks: :class:`~wbc.task.Task` objects (see the ``tasks`` package).
        contacts: :class:`~wbc.contacts.PointContact` / :class:`~wbc.contacts.SurfaceContact`.
        solver: a solver name (``"daqp"``, ``"proxqp"``, ``"quadprog"``, ``"osqp"``, ``"qpsolvers:<name>"``)
            or a :class:`~wbc.qp.QPSolver`.
        regularization: relative weight ``ε`` of the term ``ε/2 Σᵢ Hᵢᵢ uᵢ²`` (plus a 1e-12 floor)
            that keeps the QP strictly convex; relative, because torques (N m) and forces (N) live
            on very different scales.
        dt: control period, s (drives contact force ramps).
        torque_limit: (n_actuated,) symmetric torque bounds, N m; default the model's effort
            limits (unbounded where the URDF gives none).
        soft_contact_weight: weight of the contact equalities in the infeasibility fallback.
        feasibility_tolerance: largest constraint violation (m/s², N) accepted from a solver.
        input_matrix: how the kernel computes ``B̂``: ``"iim"`` (default) or a baseline, ``"dense"``
            (CRBA + LDLᵀ) or ``"eufm"`` (unit force method), for comparisons.
        check_inputs: validate ``q``/``v`` each step (sizes, finiteness, unit quaternions).
    """

    def __init__(
        self,
        model: Model,
        tasks: Sequence[Task] = (),
        contacts: Sequence[Contact] = (),
        solver: str | QPSolver = DEFAULT_SOLVER,
        regularization: float = 1e-8,
        dt: float = 1e-3,
        torque_limit: np.ndarray | None = None,
        soft_contact_weight: float = 1e4,
        feasibility_tolerance: float = 1e-4,
        input_matrix: str = "iim",
        check_inputs: bool = True,
    ) -> None:
        self.model = model
        self._tasks: list[Task] = []
        self.contacts: tuple[Contact, ...] = tuple(contacts)
        names = [c.name for c in self.contacts]
        if len(set(names)) != len(names):
            raise InputError(f"contacts must have distinct names, got {names}")
        for c in self.contacts:
            c.check(model)
        self.solver = make_solver(solver) if isinstance(solver, str) else solver
        if not regularization > 0:
            raise InputError(f"regularization must be > 0, got {regularization}")
        self.regularization = float(regularization)
        self.dt = float(dt)
        limit = (
            model.effort_limit
            if torque_limit is None
            else checks.vector(torque_limit, model.n_actuated, "torque_limit")
        )
        if np.any(limit < 0):
            raise InputError("torque limits must be >= 0")
        self.torque_limit = np.asarray(limit, float).copy()
        self.soft_contact_weight = float(soft_contact_weight)
        self.feasibility_tolerance = float(feasibility_tolerance)
        if input_matrix not in IIM_METHODS:
            raise InputError(f"input_matrix must be one of {IIM_METHODS}, got {input_matrix!r}")
        self.input_matrix = input_matrix
        self.check_inputs = check_inputs
        self.time = 0.0
        self.kernel: Kernel | None = None
        self._cached_layout: _Layout | None = None
        self._last_tau: np.ndarray | None = None
        self._n_act = model.n_actuated
        self._force_cols: list[slice] = []
        col = self._n_act
        for c in self.contacts:
            self._force_cols.append(slice(col, col + c.dim))
            col += c.dim
        self.n_u = col
        self._eq_rows: list[slice] = []
        row = 0
        for c in self.contacts:
            self._eq_rows.append(slice(row, row + c.equality_dim))
            row += c.equality_dim
        self._n_eq = row
        for t in tasks:
            self.add_task(t)

    # ----------------------------------------------------------------------------- tasks
    @property
    def tasks(self) -> tuple[Task, ...]:
        return tuple(self._tasks)

    def add_task(self, task: Task) -> None:
        """Add a task (the kernel is recompiled, from the disk cache if it was built before)."""
        if not isinstance(task, Task):
            raise InputError(f"expected a wbc Task, got {type(task).__name__}")
        if any(t.name == task.name for t in self._tasks):
            raise InputError(f"a task named {task.name!r} is already in the controller")
        task.check(self.model)
        self._tasks.append(task)
        self.kernel = None

    def remove_task(self, task: Task) -> None:
        """Remove a task (recompiles)."""
        if task not in self._tasks:
            raise InputError(f"task {getattr(task, 'name', task)!r} is not in the controller")
        self._tasks.remove(task)
        task._unbind()
        self.kernel = None

    # ----------------------------------------------------------------------------- kernel
    def compile(self) -> Kernel:
        """Trace and compile the control kernel (cached on disk by content); done lazily by ``step``.

        The tasks' parameters then live in the kernel's parameter buffer: setting a target or a
        gain writes straight into what the next step reads.
        """
        sizes = [t.parameter_size for t in self._tasks]
        self.kernel = compile_function(self._trace(sizes))
        params = self.kernel.inputs[2]
        offset = 0
        for t, size in zip(self._tasks, sizes):
            t._bind(params[offset : offset + size])
            offset += size
        return self.kernel

    def _trace(self, sizes: list[int]) -> ca.Function:
        model = self.model
        motion = resolve(model, [c.motion_constraint() for c in self.contacts])
        gammas = [self._gamma(c) for c in self.contacts]

        def build(q, v, p):
            kin = TreeKinematics(model, q, v)
            bodies = ArticulatedBodies.compute(model, kin)
            a0 = aba(model, q, v, ca.SX.zeros(model.nv, 1), kin=kin, bodies=bodies)
            if self.input_matrix == "iim":
                Bm = iim(model, kin, motion, bodies)  # (nv, n_act + Σ equality_dim)
            else:
                Bm = compute_input_matrix(model, kin, motion, self.input_matrix)
            n_act = self._n_act
            blocks = [Bm[:, 0:n_act]]
            col = n_act
            for c, G in zip(self.contacts, gammas):
                blocks.append(ca.mtimes(Bm[:, col : col + c.equality_dim], G))
                col += c.equality_dim
            Bhat = ca.horzcat(*blocks)
            outputs_eq = []
            if self.contacts:
                delassus = pv_osimr(model, kin, motion, bodies)
                act = model.actuated_v_indices.tolist()
                A_tau = Bm[act, n_act:].T  # J_m M⁻¹ Sᵀ from symmetry
                A_f = ca.mtimes(delassus, ca.diagcat(*[ca.DM(G) for G in gammas]))
                A_eq = ca.horzcat(A_tau, A_f)
                drift = ca.vertcat(*[ca.mtimes(c.jacobian(kin), a0) + c.drift(kin) for c in motion])
                outputs_eq = [A_eq, -drift]
            else:
                outputs_eq = [ca.DM.zeros(0, self.n_u), ca.DM.zeros(0, 1)]
            wrenches = [(self._force_cols[k], c.wrench_map(kin)) for k, c in enumerate(self.contacts)]
            ctx = TaskContext(model, kin, a0, Bhat, self.n_u, wrenches)
            rows_A, rows_b, errors = [], [], []
            offset = 0
            for t, size in zip(self._tasks, sizes):
                r = t.rows(ctx, p[offset : offset + size])
                rows_A.append(r.A)
                rows_b.append(r.b)
                errors.append(r.error)
                offset += size
            A = ca.vertcat(*rows_A) if rows_A else ca.DM.zeros(0, self.n_u)
            b = ca.vertcat(*rows_b) if rows_b else ca.DM.zeros(0, 1)
            e = ca.vertcat(*errors) if errors else ca.DM.zeros(0, 1)
            return [A, b, *outputs_eq, a0, Bhat, e]

        tag = "_".join(
            [type(t).__name__ for t in self._tasks] + [type(c).__name__ for c in self.contacts] + [self.input_matrix]
        )
        return trace(
            f"step_{model.name}_{len(self._tasks)}t_{len(self.contacts)}c_{hashlib.sha1(tag.encode()).hexdigest()[:8]}",
            [("q", model.nq), ("v", model.nv), ("p", int(sum(sizes)))],
            build,
            ["A", "b", "A_eq", "b_eq", "a0", "Bhat", "errors"],
        )

    @staticmethod
    def _gamma(contact: Contact) -> np.ndarray:
        """``Γ`` (equality_dim, dim): motion-constraint force basis -> force variables."""
        if isinstance(contact, SurfaceContact) and contact.model == "corners":
            G = np.zeros((6, 12))
            for k, c in enumerate(contact.corners()):
                G[0:3, 3 * k : 3 * k + 3] = np.eye(3)
                G[3:6, 3 * k : 3 * k + 3] = np.array(ca.DM(skew(c)))
            return G
        return np.eye(contact.equality_dim)

    # ----------------------------------------------------------------------------- the step
    def _layout(self) -> _Layout:
        """The QP's structure for the current contact states (rebuilt only when they change)."""
        key = tuple((c.active, c.current_min_normal_force(), c.current_max_normal_force()) for c in self.contacts)
        if self._cached_layout is not None and self._cached_layout.key == key:
            return self._cached_layout
        cols = [np.arange(self._n_act)]
        eq_rows, G_blocks, h_parts, in_groups, eq_groups = [], [], [], [], []
        variables = {"tau": slice(0, self._n_act)}
        n = self._n_act
        for k, c in enumerate(self.contacts):
            if not c.active:
                continue
            cs, es = self._force_cols[k], self._eq_rows[k]
            cols.append(np.arange(cs.start, cs.stop))
            eq_rows.append(np.arange(es.start, es.stop))
            variables[c.name] = slice(n, n + c.dim)
            eq_groups += [c.name] * c.equality_dim
            G, h, groups = c.inequalities()
            G_blocks.append((n, G))
            h_parts.append(h)
            in_groups += [f"{g}:{c.name}" for g in groups]
            n += c.dim
        G = np.zeros((sum(Gb.shape[0] for _, Gb in G_blocks), n))
        row = 0
        for start, Gb in G_blocks:
            G[row : row + Gb.shape[0], start : start + Gb.shape[1]] = Gb
            row += Gb.shape[0]
        lb, ub = np.full(n, -np.inf), np.full(n, np.inf)
        lb[: self._n_act], ub[: self._n_act] = -self.torque_limit, self.torque_limit
        columns = np.concatenate(cols)
        rows = np.concatenate(eq_rows) if eq_rows else np.zeros(0, dtype=int)
        eliminable = bool(rows.size) and all(c.dim == c.equality_dim for c in self.contacts if c.active)
        h = np.concatenate(h_parts) if h_parts else np.zeros(0)
        upper, lower = np.isfinite(ub), np.isfinite(lb)
        eye = np.eye(n)
        tol = self.solver.unconstrained_tolerance
        C = np.vstack([G, eye[upper], -eye[lower]])
        d = np.concatenate([h, ub[upper], -lb[lower]]) + tol
        self._cached_layout = _Layout(
            key,
            columns,
            rows,
            n == self.n_u,
            rows.size == self._n_eq,
            eliminable,
            C,
            d,
            G,
            h,
            lb,
            ub,
            variables,
            eq_groups,
            in_groups,
        )
        return self._cached_layout

    def _evaluate(self, q, v) -> tuple:
        """Run the kernel at ``(q, v)``; returns its output buffers (overwritten by the next run)."""
        if self.kernel is None:
            self.compile()
        if self.check_inputs:
            q = checks.configuration(self.model, q)
            v = checks.velocity(self.model, v)
        inputs = self.kernel.inputs
        np.copyto(inputs[0], q)
        np.copyto(inputs[1], v)
        return self.kernel.run()

    def _cost_and_equalities(self, layout: _Layout, outputs: Sequence[np.ndarray]) -> tuple:
        """``(A, b, r, A_eq, b_eq)`` of the active variables, views of the kernel buffers where possible."""
        A_all, b, A_eq_all, b_eq_all = outputs[0:4]
        A = A_all if layout.all_columns else A_all[:, layout.columns]
        r = self.regularization * np.einsum("ij,ij->j", A, A) + 1e-12
        if layout.all_columns and layout.all_rows:
            return A, b, r, A_eq_all, b_eq_all
        return A, b, r, A_eq_all[np.ix_(layout.rows, layout.columns)], b_eq_all[layout.rows]

    def _shortcut(self, layout: _Layout, outputs: Sequence[np.ndarray]) -> np.ndarray | None:
        """The minimizer under the contact equalities alone if it satisfies every inequality and
        bound (then it solves the QP), else None; see :mod:`wbc.qp`."""
        if not layout.eliminable:
            x = equality_constrained_least_squares(*self._cost_and_equalities(layout, outputs))
        else:
            A_all, b, A_eq_all, b_eq_all = outputs[0:4]
            if layout.all_columns and layout.all_rows:
                A, A_eq, b_eq = A_all, A_eq_all, b_eq_all
            else:
                A, A_eq, b_eq = (
                    A_all[:, layout.columns],
                    A_eq_all[np.ix_(layout.rows, layout.columns)],
                    b_eq_all[layout.rows],
                )
            p = self._n_act
            solution = least_squares_by_elimination(
                A[:, :p], A[:, p:], b, A_eq[:, :p], A_eq[:, p:], b_eq, self.regularization
            )
            x = None if solution is None else np.concatenate(solution)
        if x is None or (layout.C @ x > layout.d).any():
            return None
        return x

    def _assemble(self, layout: _Layout, outputs: Sequence[np.ndarray]) -> QPProblem:
        A, b, r, A_eq, b_eq = (np.array(x) for x in self._cost_and_equalities(layout, outputs))
        return QPProblem(
            A,
            b,
            r,
            A_eq,
            b_eq,
            layout.G,
            layout.h,
            layout.lb,
            layout.ub,
            layout.variables,
            layout.eq_groups,
            layout.in_groups,
        )

    def build_problem(self, q, v) -> QPProblem:
        """Evaluate the kernel at ``(q, v)`` and assemble this step's QP, for inspection.

        Does not advance the controller's clock.
        """
        for c in self.contacts:
            c._advance(self.time)
        return self._assemble(self._layout(), self._evaluate(q, v))

    def step(self, q, v) -> Command:
        """One control step at state ``(q, v)``: returns the :class:`Command` to apply."""
        t_start = time.perf_counter()
        for c in self.contacts:
            c._advance(self.time)
        layout = self._layout()
        t0 = time.perf_counter()
        outputs = self._evaluate(q, v)
        t1 = time.perf_counter()
        status, conflict, x = StepStatus.OPTIMAL, (), None
        solver = self.solver
        if solver.try_unconstrained:  # straight from the kernel's buffers: no QP object needed
            x = self._shortcut(layout, outputs)
        if x is None:
            problem = self._assemble(layout, outputs)
            x = self._solve(problem, shortcut=False)
            if x is None:
                conflict = self._diagnose(problem)
                x = self._solve(problem.soften_equalities(self.soft_contact_weight))
                status = StepStatus.SOFT_CONTACTS
                solver.reset()
        t_end = time.perf_counter()
        n_active = layout.columns.size
        a0, Bhat, errors_all = outputs[4:7]
        u_full = np.zeros(self.n_u)
        if x is None:
            if self._last_tau is not None:
                tau, status = self._last_tau.copy(), StepStatus.LAST_COMMAND
            else:
                tau, status = np.zeros(self._n_act), StepStatus.ZERO_TORQUE
            u_full[: self._n_act] = tau
            x = np.concatenate([tau, np.zeros(n_active - self._n_act)])
        else:
            u_full[layout.columns] = x
            tau = x[: self._n_act].copy()
            self._last_tau = tau
        qdd = a0 + Bhat @ u_full
        forces = {}
        for k, c in enumerate(self.contacts):
            f = u_full[self._force_cols[k]]
            forces[c.name] = f
            if c.active:
                c.last_normal_force = c.normal_force(f)
        errors, offset = {}, 0
        for t in self._tasks:
            errors[t.name] = errors_all[offset : offset + t.dim].copy()
            offset += t.dim
        self.time += self.dt
        timings = {"kernel": (t1 - t0) * 1e6, "qp": (t_end - t1) * 1e6, "total": (t_end - t_start) * 1e6}
        return Command(tau, forces, qdd, errors, status, conflict, timings, x)

    def _solve(self, problem: QPProblem, shortcut: bool | None = None) -> np.ndarray | None:
        try:
            sol = self.solver.solve(problem, shortcut)
        except (ValueError, RuntimeError, ArithmeticError):
            self.solver.reset()
            return None
        if not sol.found or sol.x is None or not np.isfinite(sol.x).all():
            return None
        if not sol.unconstrained and problem.violation(sol.x) > self.feasibility_tolerance:
            return None  # the shortcut's solution is feasible by construction; check the backends'
        return sol.x

    def _diagnose(self, problem: QPProblem) -> tuple:
        """The smallest group of constraints whose removal makes ``problem`` feasible."""
        candidates = (
            (("torque_limits",), ("torque_limits",)),
            (("friction", "cop"), ("friction",)),
            (("normal_force",), ("normal_force",)),
            (("friction", "cop", "torque_limits"), ("friction", "torque_limits")),
        )
        self.solver.reset()
        found: tuple = ("contacts",)
        for removed, named in candidates:
            if self._solve(problem.without(*removed)) is not None:
                found = named
                break
        self.solver.reset()
        return found
