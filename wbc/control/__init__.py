"""The control layer: tasks, contacts and limits contribute typed pieces to one QP in the inputs
``u = (τ, f)``, which the controller builds and solves every step.

* :mod:`.pieces` — the typed pieces (Cost, Equality, Inequality, Bounds) and their groups;
* :mod:`.contributor` — what every contributor is; :mod:`.task` — the task interface;
* :mod:`.contacts` — point and rectangular contacts;
* :mod:`.limits` — torque, joint position and velocity limits, self-collision avoidance;
* :mod:`.hierarchy` — the lexicographic solve of a strict task hierarchy;
* :mod:`.step_context` — the traced dynamics contributors share (a₀, B̂, contact rows);
* :mod:`.builder` — stacks pieces into the kernel and selects each step's active rows;
* :mod:`.qp`, :mod:`.solvers` — the problem, its exact reductions, the backends;
* :mod:`.schedule`, :mod:`.fallback`, :mod:`.controller` — contact activation, infeasibility, the step.
"""

from __future__ import annotations

from . import limits, pieces
from .command import Command
from .contacts import Contact, PointContact, RectangularContact, SurfaceContact, SurfaceCornersContact
from .contributor import Contributor, Runtime
from .controller import WholeBodyController
from .fallback import Failure, StepStatus
from .limits import *  # the names of limits.__all__
from .pieces import *  # the names of pieces.__all__
from .qp import QPProblem
from .solvers import QPSolver, Solver, make_solver
from .task import Task

__all__ = [
    "WholeBodyController",
    "Command",
    "StepStatus",
    "Failure",
    "Contributor",
    "Runtime",
    "Task",
    "Contact",
    "PointContact",
    "RectangularContact",
    "SurfaceContact",
    "SurfaceCornersContact",
    "QPProblem",
    "QPSolver",
    "Solver",
    "make_solver",
]
__all__ += pieces.__all__ + limits.__all__
