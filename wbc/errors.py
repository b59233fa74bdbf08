"""The exception hierarchy of wbc.

Every error wbc raises on purpose derives from :class:`WbcError`, so a caller can catch all of
them at once; the subclasses say which kind of input was wrong. Errors about the shape or value
of an argument (wrong size, NaN) also derive from :class:`ValueError`, so code written against
numpy conventions catches them too.
"""

from __future__ import annotations

__all__ = [
    "WbcError",
    "ModelError",
    "FrameError",
    "InputError",
    "CompileError",
    "MissingDependency",
    "SimulationDiverged",
    "NotCopyableError",
    "RealtimeUnavailable",
    "ModelWarning",
    "WbcPerformanceWarning",
    "WbcSecurityWarning",
    "TaskWarning",
]


class WbcError(Exception):
    """Base class of every error raised by wbc on purpose."""


class ModelError(WbcError):
    """A robot description is malformed or physically inconsistent (names the file and element)."""


class FrameError(WbcError, KeyError):
    """A frame name that the model does not have."""

    def __str__(self) -> str:  # KeyError would quote the message; keep it readable
        return str(self.args[0]) if self.args else ""


class InputError(WbcError, ValueError):
    """A state, input or parameter of the wrong size, with non-finite values or out of its domain."""


class CompileError(WbcError):
    """Generating or compiling a kernel failed (the compiler's message is attached)."""


class MissingDependency(WbcError, ImportError):
    """An optional dependency is not installed; the message names the extra that provides it
    (e.g. ``pip install 'wbc[proxqp]'``)."""


class SimulationDiverged(WbcError):
    """A simulation met a non-finite or huge position, velocity or acceleration (an unstable
    simulation, e.g. gains too stiff for the time step). The state is left as it was, for
    inspection; MuJoCo's automatic reset is disabled so a robot never silently jumps back."""


class ModelWarning(UserWarning):
    """A robot description was accepted after a documented repair (e.g. an inertia that was not
    positive semi-definite by rounding, projected); the message names the element."""


class WbcPerformanceWarning(UserWarning):
    """wbc works, but slower than it could (e.g. no C compiler: kernels run in CasADi's VM)."""


class WbcSecurityWarning(UserWarning):
    """wbc refused a file or directory others could have written (a shared kernel cache, a mesh
    outside the robot's package) and did without it; the message names it (docs/security.md)."""


class TaskWarning(UserWarning):
    """A task will not do what its settings suggest (no gains: its target is never tracked); the
    message names the task."""


class NotCopyableError(WbcError, TypeError):
    """An object that cannot be copied or pickled (a controller: it holds loaded compiled kernels,
    their buffers and solver state); the message says what to do instead."""


class RealtimeUnavailable(WbcError):
    """What :func:`wbc.realtime_mode` was required to do is not permitted here (locking the process's
    memory); the message says why and what grants it."""
