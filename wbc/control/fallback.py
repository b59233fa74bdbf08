"""What a step applies when its QP cannot be solved as posed: never NaN, always a command.

:class:`FallbackPolicy` solves a step's QP and, if the solver finds no solution, (1) names the
constraint groups in conflict (:meth:`FallbackPolicy.diagnose`), then (2) solves the same QP with
its equalities (the contacts' no-acceleration rows) turned into a stiff cost, every inequality and
bound kept hard: always feasible when zero force and zero torque are. If that fails too the
controller repeats its last good command, else applies zero torques (:class:`StepStatus`).

Every solution a backend returns is checked (finite, constraint violation within
``feasibility_tolerance``) before it is accepted.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools

import numpy as np

from ..model import checks
from .pieces import Group
from .qp import QPProblem
from .solvers import QPSolver

__all__ = ["StepStatus", "Failure", "FallbackPolicy", "Outcome"]


class StepStatus(enum.Enum):
    """What a step applied."""

    OPTIMAL = "optimal"  #: the QP was solved as posed
    SOFT_CONTACTS = "soft_contacts"  #: infeasible; solved with the equalities as a stiff cost
    LAST_COMMAND = "last_command"  #: infeasible and the fallback failed: the previous command repeated
    ZERO_TORQUE = "zero_torque"  #: nothing else available


class Failure(enum.Enum):
    """Why a step could not apply the QP's solution as posed (``Command.failure``; None when it did)."""

    INFEASIBLE = "infeasible"  #: the QP has no solution as posed; ``Command.conflict`` names the groups
    NON_FINITE = "non_finite"  #: the dynamics or the QP data were not finite (singular model, huge state)
    SOLVER = "solver"  #: the backend failed or returned no valid solution of a feasible-looking problem


@dataclasses.dataclass(frozen=True)
class Outcome:
    """A solved (or not) step: ``x`` (n,) or None, the status, and the groups found in conflict."""

    x: np.ndarray | None
    status: StepStatus
    conflict: tuple[Group, ...] = ()
    failure: Failure | None = None


class FallbackPolicy:
    """How a step solves its QP and what it does when it cannot.

    Args:
        soft_contact_weight: weight of the equalities turned into cost rows in the fallback.
        feasibility_tolerance: largest constraint violation (problem units: m/s², N, N m) accepted
            from a backend.
        max_diagnosis_solves: bound on the QPs solved to name a conflict (keeps the worst case bounded).
    """

    def __init__(
        self, soft_contact_weight: float = 1e4, feasibility_tolerance: float = 1e-4, max_diagnosis_solves: int = 24
    ) -> None:
        self.soft_contact_weight = checks.positive(soft_contact_weight, "soft_contact_weight")
        self.feasibility_tolerance = checks.positive(feasibility_tolerance, "feasibility_tolerance")
        self.max_diagnosis_solves = int(max_diagnosis_solves)

    def solve(self, problem: QPProblem, solver: QPSolver) -> Outcome:
        """Solve ``problem`` as posed, else diagnose and solve it with soft equalities (the minimizer
        under the equalities was tried before: the step's units)."""
        if not problem.is_finite():
            return Outcome(None, StepStatus.ZERO_TORQUE, failure=Failure.NON_FINITE)  # the caller picks the command
        x = self.accepted(problem, solver, shortcut=False)
        if x is not None:
            return Outcome(x, StepStatus.OPTIMAL)
        conflict = self.diagnose(problem, solver)
        x = self.accepted(problem.soften_equalities(self.soft_contact_weight), solver)
        solver.reset()
        return Outcome(x, StepStatus.SOFT_CONTACTS, conflict, Failure.INFEASIBLE if conflict else Failure.SOLVER)

    def accepted(self, problem: QPProblem, solver: QPSolver, shortcut: bool | None = None) -> np.ndarray | None:
        """The solver's solution if it is finite and feasible to tolerance, else None."""
        try:
            sol = solver.solve(problem, shortcut)
        except (ValueError, RuntimeError, ArithmeticError):
            solver.reset()
            return None
        if not sol.found or sol.x is None or not np.isfinite(sol.x).all():
            return None
        if problem.violation(sol.x) > self.feasibility_tolerance:
            return None
        return sol.x

    def diagnose(self, problem: QPProblem, solver: QPSolver) -> tuple[Group, ...]:
        """The smallest set of constraint groups found whose removal makes ``problem`` feasible: one
        inequality or bound group, else all the groups of one kind, else of two kinds, else the
        equalities (at most ``max_diagnosis_solves`` QPs)."""
        solver.reset()
        groups = list(dict.fromkeys(g for g in [*problem.in_groups, *problem.bound_groups] if g is not None))
        kinds = problem.kinds
        candidates: list[tuple] = [(g,) for g in groups]
        candidates += [tuple(g for g in groups if g.kind is k) for k in kinds]
        candidates += [tuple(g for g in groups if g.kind in pair) for pair in itertools.combinations(kinds, 2)]
        found: tuple[Group, ...] = tuple(dict.fromkeys(problem.eq_groups))
        for removed in candidates[: self.max_diagnosis_solves]:
            if self.accepted(problem.without(*removed), solver, shortcut=False) is not None:
                found = removed
                break
        solver.reset()
        return found
