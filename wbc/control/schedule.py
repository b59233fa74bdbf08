"""The contact activation schedule: which contacts are enforced, force-limit ramps, last forces.

Contacts are plain descriptions; their state over time lives here, in the controller. A contact
declared to a controller is always in its compiled kernel; activating or releasing it changes
which rows and variables the QP has, never the kernel. ``deactivate(name, ramp=T)`` first ramps
the contact's maximum normal force linearly to zero over ``T`` seconds (the contact stays
enforced meanwhile, so its force does not jump), then releases it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from ..errors import InputError

__all__ = ["ContactSchedule", "ContactState"]


@dataclasses.dataclass
class ContactState:
    """The runtime state of one contact.

    Attributes:
        active: whether the contact is enforced.
        min_normal_force, max_normal_force: its normal-force limits outside a ramp, N.
        ramp: ``(start time, duration, starting maximum force)`` of a release in progress, or None.
        last_normal_force: the normal force of the last command that enforced it, N.
    """

    active: bool
    min_normal_force: float
    max_normal_force: float
    ramp: tuple[float, float, float] | None = None
    last_normal_force: float = 0.0
    #: ``[minimum, maximum]`` normal force now, N: the contact's kernel parameters (updated in place)
    bounds: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(2))

    def __post_init__(self) -> None:
        self.bounds[:] = (self.min_normal_force, self.max_normal_force)


class ContactSchedule:
    """Activation and force limits of the contacts of one controller, advanced by its clock."""

    def __init__(self, contacts: Sequence) -> None:
        self._states = {
            c.name: ContactState(c.initially_active, c.min_normal_force, c.max_normal_force) for c in contacts
        }
        self._time = 0.0
        self._any_ramp = False

    def state(self, name: str) -> ContactState:
        """The state of contact ``name``; :class:`InputError` naming the known contacts if unknown."""
        try:
            return self._states[name]
        except KeyError:
            raise InputError(f"no contact named {name!r}; the controller has {sorted(self._states)}") from None

    def is_active(self, name: str) -> bool:
        return self._states[name].active

    def activate(self, name: str) -> None:
        """Enforce contact ``name`` from the next step on (cancels a ramp in progress)."""
        s = self.state(name)
        s.active, s.ramp = True, None
        s.bounds[:] = (s.min_normal_force, s.max_normal_force)

    def deactivate(self, name: str, ramp: float = 0.0, start_force: float | None = None) -> None:
        """Release contact ``name``, after ramping its maximum normal force to zero over ``ramp`` s.

        Args:
            start_force: where the ramp starts, N; default the contact's maximum normal force, or the
                last normal force applied when that is unbounded.
        """
        s = self.state(name)
        if not (math.isfinite(ramp) and ramp >= 0):
            raise InputError(f"contact {name!r}: ramp must be a finite duration >= 0, got {ramp}")
        if start_force is not None and not (math.isfinite(start_force) and start_force >= 0):
            raise InputError(f"contact {name!r}: start_force must be finite and >= 0, got {start_force}")
        if ramp == 0.0:
            s.active, s.ramp = False, None
            return
        f0 = start_force if start_force is not None else s.max_normal_force
        if not math.isfinite(f0):
            f0 = max(s.last_normal_force, 0.0)
        s.ramp = (self._time, ramp, f0)
        s.bounds[:] = (0.0, f0)
        self._any_ramp = True

    def advance(self, t: float) -> None:
        """Move the clock to ``t`` (s): ramps progress, finished ones release their contact."""
        self._time = t
        for s in self._ramping:
            t0, duration, f0 = s.ramp or (0.0, 0.0, 0.0)
            if t >= t0 + duration:
                s.active, s.ramp = False, None
                s.bounds[:] = (s.min_normal_force, s.max_normal_force)
            else:
                s.bounds[1] = max(0.0, f0 * (1.0 - (t - t0) / duration))

    @property
    def _ramping(self) -> list[ContactState]:
        if not self._any_ramp:
            return []
        ramping = [s for s in self._states.values() if s.ramp is not None]
        self._any_ramp = bool(ramping)
        return ramping

    def normal_force_bounds(self, name: str) -> np.ndarray:
        """``[minimum, maximum]`` normal force of contact ``name`` now, N (the maximum follows a ramp):
        the array the contact's kernel parameters are read from."""
        return self._states[name].bounds

    def record(self, name: str, normal_force: float) -> None:
        """Remember the normal force a command gave contact ``name``."""
        self._states[name].last_normal_force = normal_force
