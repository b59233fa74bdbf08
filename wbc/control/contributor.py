"""What every contributor to the control QP is: a task, a contact or a limit.

A contributor checks itself against the model, declares the kernel parameters it reads (targets,
gains, limits: inputs of the compiled kernel, so changing them never recompiles), supplies their
values each step, and returns its typed pieces (:mod:`wbc.control.pieces`) when the controller
traces the kernel. Adding a new kind of limit is one new subclass in one new file.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .pieces import Piece

if TYPE_CHECKING:
    from ..model.model import Model
    from .schedule import ContactSchedule
    from .step_context import StepContext

__all__ = ["Contributor", "Runtime"]

_NO_PARAMETERS = np.zeros(0)


@dataclasses.dataclass
class Runtime:
    """What a step knows besides the state: the control period ``dt`` (s), the controller's clock
    ``time`` (s) and its contact schedule."""

    dt: float
    time: float
    contacts: ContactSchedule


class Contributor(abc.ABC):
    """Base class of tasks, contacts and limits.

    Attributes:
        name: a readable name, unique among the controller's contributors of the same kind.
    """

    name: str

    def check(self, model: Model) -> None:  # noqa: B027 - optional hook
        """Raise a clear error if this contributor does not fit ``model`` (unknown frame, size...)."""

    @property
    def parameter_size(self) -> int:
        """Number of kernel parameters this contributor reads (its slice of the parameter vector)."""
        return 0

    def parameters(self, runtime: Runtime) -> np.ndarray:
        """The array (parameter_size,) float64 holding its kernel parameters.

        It must be the same array at every call, updated in place when a value changes: the
        controller binds it to the compiled kernel, which reads it directly every step (no copy).
        """
        return _NO_PARAMETERS

    def is_active(self, runtime: Runtime) -> bool:
        """Whether its pieces (and, for a contact, its variables) are in this step's QP."""
        return True

    @abc.abstractmethod
    def pieces(self, ctx: StepContext, p) -> Sequence[Piece]:
        """Its pieces, as CasADi expressions of the kernel inputs (``p`` its parameters, (parameter_size, 1))."""
