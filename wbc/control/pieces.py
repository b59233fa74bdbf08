"""Typed pieces of the control QP, and the groups that name them.

Every contributor to the QP (a task, a contact, a limit) returns a list of pieces when the
controller traces its kernel; the builder only stacks them. A piece is one of:

* :class:`Cost` — weighted least-squares rows ``A u ≈ b`` (minimize ``½‖A u − b‖²``);
* :class:`Equality` — rows ``A u = b``;
* :class:`Inequality` — rows ``G u ≤ h``;
* :class:`Bounds` — ``lower ≤ u[block] ≤ upper`` on one variable block (solvers treat these natively);
* :class:`AccelerationBounds` — ``lower ≤ q̈[indices] ≤ upper`` on rows of ``q̈ = a₀ + B̂u`` (joint
  limits): their matrix rows are rows of ``B̂``, which the kernel outputs anyway, so they are taken
  from its ``Bhat`` output where the QP is assembled instead of being copied inside the kernel;
* :class:`AccelerationCost` — weighted rows ``scale ⊙ (q̈[indices] − target)`` (a posture task's rows:
  a task whose Jacobian selects joints): their matrix ``diag(scale) B̂[indices]`` is assembled from the
  kernel's ``Bhat`` output where the cost is used; the kernel outputs only ``scale`` and the targets.

Matrices are CasADi expressions of the kernel inputs (``q``, ``v`` and the contributors'
parameters; constants fold away). A piece spans every QP variable (``variables=None``, width
``n_u``) or one named variable block (``variables="left_sole"``: the columns of that contact's
forces; ``"tau"``: the actuator efforts), whichever is natural; the builder places it.

Each piece carries a :class:`Group` — a kind and a name, e.g. ``Group(Kind.FRICTION, "left_sole")``
— which the QP keeps row by row (:class:`~wbc.control.qp.QPProblem`), so a user can inspect a
problem and an infeasibility diagnosis can name the constraints in conflict. The kind is any enum
member: the built-in :class:`Kind` or a new contributor's own enum.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

__all__ = [
    "Kind",
    "Group",
    "Cost",
    "Equality",
    "Inequality",
    "Bounds",
    "AccelerationBounds",
    "AccelerationCost",
    "Piece",
    "TAU",
]

#: The name of the variable block of the actuator efforts (the first block of ``u``).
TAU = "tau"


class Kind(enum.Enum):
    """The built-in kinds of QP pieces."""

    TASK = "task"  #: a task's weighted rows
    CONTACT = "contact"  #: a contact's no-acceleration (or pose-servo) equalities
    FRICTION = "friction"  #: friction pyramids / the contact wrench cone's friction part
    CENTER_OF_PRESSURE = "cop"  #: centre-of-pressure bounds of a surface contact
    NORMAL_FORCE = "normal_force"  #: unilaterality and the normal-force limits of a contact
    TORQUE_LIMIT = "torque_limit"  #: actuator effort limits
    JOINT_POSITION_LIMIT = "joint_position_limit"  #: joint position limits (as acceleration bounds)
    JOINT_VELOCITY_LIMIT = "joint_velocity_limit"  #: joint velocity limits (as acceleration bounds)
    SELF_COLLISION = "self_collision"  #: distance between primitives attached to links


@dataclasses.dataclass(frozen=True)
class Group:
    """What a block of QP rows is: a ``kind`` (an enum member) and the ``name`` of its contributor."""

    kind: enum.Enum
    name: str = ""

    def __str__(self) -> str:
        value = getattr(self.kind, "value", self.kind)
        return f"{value}:{self.name}" if self.name else str(value)


@dataclasses.dataclass(frozen=True)
class Cost:
    """Weighted rows ``A u ≈ b`` (k, width), (k,); ``error`` (optional, (k,)) is reported every step
    (a task's error ``e``); ``priority`` is the rows' level in a strict hierarchy (0 the highest;
    rows of one level are weighted against each other, levels are solved lexicographically, see
    :mod:`wbc.control.hierarchy`)."""

    A: Any
    b: Any
    group: Group
    variables: str | None = None
    error: Any = None
    priority: int = 0


@dataclasses.dataclass(frozen=True)
class Equality:
    """Rows ``A u = b`` (k, width), (k,)."""

    A: Any
    b: Any
    group: Group
    variables: str | None = None


@dataclasses.dataclass(frozen=True)
class Inequality:
    """Rows ``G u ≤ h`` (k, width), (k,)."""

    G: Any
    h: Any
    group: Group
    variables: str | None = None


@dataclasses.dataclass(frozen=True)
class Bounds:
    """``lower ≤ u[variables] ≤ upper`` on one variable block, (size,) each (±inf where unbounded)."""

    lower: Any
    upper: Any
    group: Group
    variables: str = TAU


@dataclasses.dataclass(frozen=True)
class AccelerationBounds:
    """``lower ≤ q̈[indices] ≤ upper`` with ``q̈ = a₀ + B̂u``: the inequality rows
    ``B̂[indices] u ≤ upper − a₀[indices]`` then ``−B̂[indices] u ≤ a₀[indices] − lower`` (2k rows).

    ``indices`` (k,) are rows of ``B̂`` (velocity indices, fixed when traced); ``lower``, ``upper``
    (k,) are expressions. The rows' matrix is not traced: wherever the QP's inequality rows are
    assembled it is read from the kernel's ``B̂`` output (no copy of ``B̂``'s rows in the kernel).
    """

    indices: tuple[int, ...]
    lower: Any
    upper: Any
    group: Group


@dataclasses.dataclass(frozen=True)
class AccelerationCost:
    """Weighted rows ``scale ⊙ (q̈[indices] − target)`` with ``q̈ = a₀ + B̂u``: the cost rows
    ``diag(scale) B̂[indices] u ≈ scale ⊙ (target − a₀[indices])`` (k rows).

    ``indices`` (k,) are rows of ``B̂`` (velocity indices, fixed when traced); ``scale`` (k,) (the
    square roots of the weights) and ``target`` (k,) (the desired accelerations) are expressions;
    ``error`` and ``priority`` as for :class:`Cost`. The rows' matrix is not traced: the kernel
    outputs ``scale`` (its ``scale`` output) and the right-hand sides, and the rows are assembled from
    its ``B̂`` output wherever the cost is used (no copy of ``B̂``'s rows in the kernel).
    """

    indices: tuple[int, ...]
    scale: Any
    target: Any
    group: Group
    error: Any = None
    priority: int = 0


Piece = Cost | Equality | Inequality | Bounds | AccelerationBounds | AccelerationCost
