"""The contact activation schedule: which contacts are enforced, where each was placed, force-limit
ramps, last forces.

Contacts are plain descriptions; their state over time lives here, in the controller. A contact
declared to a controller is always in its compiled kernel; activating or releasing it changes
which rows and variables the QP has, never the kernel. ``deactivate(name, ramp=T)`` first ramps
the contact's maximum normal force linearly to zero over ``T`` seconds (the contact stays
enforced meanwhile, so its force does not jump), then releases it. Symmetrically,
``activate(name, ramp=T, ramp_force=F)`` enforces the contact at once but lets its maximum normal
force rise linearly from zero to ``F`` over ``T`` seconds before its own limit applies (a foot
landing takes its load progressively, so the commanded force does not jump at touchdown).

**Placements.** Each contact holds its frame toward where it was placed (the pose feedback of
:class:`~wbc.control.contacts.Contact`). The placement is set when the contact becomes active:
given with the activation, or else measured at the first step that enforces it (the controller
calls :meth:`ContactSchedule.place` with the contact frame's placement at that step's state, so
the feedback is zero until the foot moves).

**Kernel parameters.** Every contact reads one array of :data:`PARAMETER_SIZE` entries, updated in
place (:data:`FMIN`, :data:`FMAX`, :data:`KP`, :data:`KD`, :data:`POSITION`, :data:`ROTATION`):
the normal-force bounds now (N), the pose-feedback gains (1/s², 1/s) and the placement of the
contact frame (world position, m, and rotation matrix, row-major). The arrays are the rows of one
table, so that the placements measured at one state (the placements kernel's output, one row per
contact) are recorded with one write (:meth:`ContactSchedule.place_measured`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InputError

__all__ = [
    "ContactSchedule",
    "ContactState",
    "ScheduleSnapshot",
    "PARAMETER_SIZE",
    "FMIN",
    "FMAX",
    "KP",
    "KD",
    "POSITION",
    "ROTATION",
    "PLACEMENT",
]

#: Layout of a contact's kernel parameters: minimum and maximum normal force now (N), pose-feedback
#: stiffness (1/s²) and damping (1/s), placement of the contact frame: position (3,) m, rotation (3, 3)
#: row-major.
FMIN, FMAX, KP, KD = 0, 1, 2, 3
POSITION = slice(4, 7)
ROTATION = slice(7, 16)
PLACEMENT = slice(4, 16)
PARAMETER_SIZE = 16


@dataclasses.dataclass
class ContactState:
    """The runtime state of one contact.

    Attributes:
        active: whether the contact is enforced.
        min_normal_force, max_normal_force: its normal-force limits outside a ramp, N.
        ramp: ``(start time, duration, starting maximum force)`` of a release in progress, or None.
        rise: ``(start time, duration, final maximum force)`` of an activation ramp in progress, or None.
        last_normal_force: the normal force of the last command that enforced it, N.
        placed: whether :attr:`placement` is set (False: measured at the next step that enforces it).
        parameters: the contact's kernel parameters (:data:`PARAMETER_SIZE`,), updated in place.
    """

    active: bool
    min_normal_force: float
    max_normal_force: float
    ramp: tuple[float, float, float] | None = None
    rise: tuple[float, float, float] | None = None
    last_normal_force: float = 0.0
    placed: bool = False
    parameters: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(PARAMETER_SIZE))

    def __post_init__(self) -> None:
        if self.parameters.shape != (PARAMETER_SIZE,):
            raise InputError(f"contact parameters must have {PARAMETER_SIZE} entries, got {self.parameters.shape}")

    @property
    def bounds(self) -> np.ndarray:
        """``[minimum, maximum]`` normal force now, N (a view of :attr:`parameters`)."""
        return self.parameters[FMIN : FMAX + 1]

    @property
    def kp(self) -> float:
        """Pose-feedback stiffness, 1/s²."""
        return float(self.parameters[KP])

    @property
    def kd(self) -> float:
        """Pose-feedback damping, 1/s."""
        return float(self.parameters[KD])

    @property
    def placement(self) -> np.ndarray:
        """Where the contact frame was placed: a homogeneous transform (4, 4) in the world (a copy)."""
        T = np.eye(4)
        T[0:3, 0:3] = self.parameters[ROTATION].reshape(3, 3)
        T[0:3, 3] = self.parameters[POSITION]
        return T

    def copy(self) -> ContactState:
        """An independent copy (its own parameter array)."""
        return dataclasses.replace(self, parameters=self.parameters.copy())


def _placement(name: str, placement) -> np.ndarray:
    """``[p (3), R (9, row-major)]`` of a homogeneous transform (4, 4); InputError if it is not one."""
    try:
        T = np.asarray(placement, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"contact {name!r}: placement must be a (4, 4) homogeneous transform") from None
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise InputError(f"contact {name!r}: placement must be a finite (4, 4) homogeneous transform, got {T.shape}")
    R = T[0:3, 0:3]
    if np.abs(R.T @ R - np.eye(3)).max() > 1e-6 or np.linalg.det(R) < 0 or np.abs(T[3] - [0, 0, 0, 1]).max() > 0:
        raise InputError(f"contact {name!r}: placement's rotation block is not a rotation matrix")
    return np.concatenate([T[0:3, 3], R.reshape(9)])


@dataclasses.dataclass(frozen=True)
class ScheduleSnapshot:
    """What a :class:`ContactSchedule` holds at one time (:meth:`ContactSchedule.snapshot`): copies of
    the contacts' states, the clock (s), the flags of work in progress and the version."""

    states: dict[str, ContactState]
    time: float
    any_ramp: bool
    any_pending: bool
    version: int


class ContactSchedule:
    """Activation, placements and force limits of the contacts of one controller, advanced by its clock."""

    def __init__(self, contacts: Sequence) -> None:
        self._states = {}
        # every contact's kernel parameters, one row each (each state's array is its row: a view), so that
        # the placements measured at one state are recorded with one write (:meth:`place_measured`)
        self._table = np.zeros((len(contacts), PARAMETER_SIZE))
        for k, c in enumerate(contacts):
            s = ContactState(c.initially_active, c.min_normal_force, c.max_normal_force, parameters=self._table[k])
            s.parameters[:] = (c.min_normal_force, c.max_normal_force, c.kp, c.kd, *np.zeros(3), *np.eye(3).reshape(9))
            self._states[c.name] = s
        self._time = 0.0
        self._any_ramp = False
        #: whether some active contact may await a placement (exact after :meth:`tick`): the step then
        #: measures the contact frames' placements first and hands them to :meth:`tick`
        self.awaiting_placement = any(s.active for s in self._states.values())
        self.version = 0  # incremented whenever a contact is activated or released
        #: every contact's ``active``, in contact order (the step's activation set, read without a call)
        self.activation: tuple[bool, ...] = ()
        self._switched(0)
        #: the source of the last command's normal forces, set by the command writers (an assignment, no
        #: call): ``source.block[i]`` for the ``i`` of ``source.normal_at`` (one per contact, in order;
        #: None: that contact's is kept), read into the states only when one is read or written, or
        #: None (read already). The :meth:`tick` that finds another source than the previous tick did
        #: reads the previous source's last command (the contacts the new source leaves out keep that
        #: force): a switch of plan needs no call of its own, and nothing is done per step.
        self.latest: Any = None
        self._seen: Any = None  # the source :meth:`tick` found last

    def snapshot(self) -> ScheduleSnapshot:
        """A copy of everything the schedule holds (the last command's normal forces read first), for
        :meth:`restore`."""
        self._flush()
        states = {name: s.copy() for name, s in self._states.items()}
        return ScheduleSnapshot(states, self._time, self._any_ramp, self.awaiting_placement, self.version)

    def restore(self, snapshot: ScheduleSnapshot) -> None:
        """Put back what :meth:`snapshot` saved (into the same parameter arrays: the kernel reads them in
        place) and forget the last command's source (:attr:`latest`): what happened since is forgotten."""
        for name, saved in snapshot.states.items():
            s = self._states[name]
            parameters = s.parameters
            parameters[:] = saved.parameters
            for field in dataclasses.fields(ContactState):
                if field.name != "parameters":
                    setattr(s, field.name, getattr(saved, field.name))
        self._time, self._any_ramp, self.awaiting_placement = snapshot.time, snapshot.any_ramp, snapshot.any_pending
        self._switched(snapshot.version - self.version)
        self.latest = self._seen = None

    def _switched(self, change: int = 1) -> None:
        """A contact was activated or released: the version moves by ``change``, :attr:`activation` follows."""
        self.version += change
        self.activation = tuple([s.active for s in self._states.values()])

    def forget(self) -> None:
        """Forget the last command's source without reading it (its commands were not applied)."""
        self.latest = self._seen = None

    def _flush(self) -> None:
        """Read the last command's normal forces into the states; the source is then read."""
        source, seen = self.latest, self._seen
        if source is not None:
            self.latest = self._seen = None
            if seen is not None and seen is not source:  # the plan switched since the last tick
                self._read(seen)
            self._read(source)

    def _read(self, source: Any) -> None:
        block = source.block
        if block is not None:
            for s, i in zip(self._states.values(), source.normal_at):
                if i is not None:
                    s.last_normal_force = float(block[i])

    def tick(self, t: float, measured: np.ndarray | None = None) -> None:
        """The step's one call: move the clock to ``t`` (s); when something is in progress, ramps
        progress (:meth:`advance`) and the contacts awaiting a placement are placed where ``measured``
        puts them (:meth:`place_measured`; ``measured`` is given when :attr:`awaiting_placement`). When
        the source of the last command's normal forces (:attr:`latest`) changed (the plan switched),
        the previous source's last command is read."""
        latest = self.latest
        if latest is not self._seen:  # the last command came from another plan's writer than the one before
            if self._seen is not None:  # that one's last command: the contacts the new source leaves out keep it
                self._read(self._seen)
            self._seen = latest
        if not (self._any_ramp or self.awaiting_placement):
            self._time = t
            return
        self.advance(t)
        if measured is not None and self.awaiting_placement:
            self.place_measured(measured)

    def state(self, name: str) -> ContactState:
        """The state of contact ``name``; :class:`InputError` naming the known contacts if unknown."""
        self._flush()
        try:
            return self._states[name]
        except KeyError:
            raise InputError(f"no contact named {name!r}; the controller has {sorted(self._states)}") from None

    def is_active(self, name: str) -> bool:
        """Whether contact ``name`` is enforced (without reading the last command's normal forces: a
        sequencer may ask at every step)."""
        s = self._states.get(name)
        return self.state(name).active if s is None else s.active  # state(): InputError naming the contacts

    def activate(self, name: str, placement=None, ramp: float = 0.0, ramp_force: float | None = None) -> None:
        """Enforce contact ``name`` from the next step on (cancels a release in progress).

        Args:
            placement: where its frame is placed, a homogeneous transform (4, 4) in the world; default
                the frame's placement measured at the next step.
            ramp: the maximum normal force rises linearly from zero to ``ramp_force`` over ``ramp`` s
                (the first step that enforces the contact allows ``ramp_force dt / ramp``), then the
                contact's own limits apply; 0: its limits at once.
            ramp_force: where the rise ends, N; default the contact's maximum normal force (which must
                then be finite).
        """
        s = self.state(name)
        if not (math.isfinite(ramp) and ramp >= 0):
            raise InputError(f"contact {name!r}: ramp must be a finite duration >= 0, got {ramp}")
        if ramp > 0:
            f1 = s.max_normal_force if ramp_force is None else ramp_force
            if not (math.isfinite(f1) and f1 > 0):
                raise InputError(
                    f"contact {name!r}: an activation ramp needs a finite ramp_force > 0 (N), got {f1!r}"
                    + (
                        " (the contact's maximum normal force is unbounded: give ramp_force)"
                        if ramp_force is None
                        else ""
                    )
                )
        if placement is not None:
            s.parameters[PLACEMENT] = _placement(name, placement)
        s.active, s.ramp, s.rise, s.placed = True, None, None, placement is not None
        self._switched()
        s.bounds[:] = (s.min_normal_force, s.max_normal_force)
        if ramp > 0:
            s.rise = (self._time, float(ramp), float(f1))
            s.bounds[:] = (0.0, 0.0)
            self._any_ramp = True
        self.awaiting_placement = self.awaiting_placement or not s.placed

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
        s.rise = None
        if ramp == 0.0:
            s.active, s.ramp = False, None
            s.bounds[:] = (s.min_normal_force, s.max_normal_force)
            self._switched()
            return
        f0 = start_force if start_force is not None else s.max_normal_force
        if not math.isfinite(f0):
            f0 = max(s.last_normal_force, 0.0)
        s.ramp = (self._time, ramp, f0)
        s.bounds[:] = (0.0, f0)
        self._any_ramp = True

    def set_gains(self, name: str, kp: float, kd: float | None = None) -> None:
        """Pose-feedback gains of contact ``name``: stiffness ``kp`` (1/s²), damping ``kd`` (1/s,
        default ``2 √kp``); applied from the next step, without recompiling."""
        s = self.state(name)
        kp, kd = feedback_gains(name, kp, kd)
        s.parameters[KP], s.parameters[KD] = kp, kd

    @property
    def pending(self) -> list[str]:
        """The active contacts whose placement is to be measured at this step (usually none)."""
        if not self.awaiting_placement:
            return []
        names = [name for name, s in self._states.items() if s.active and not s.placed]
        self.awaiting_placement = bool(names)
        return names

    def place(self, name: str, position: np.ndarray, rotation: np.ndarray) -> None:
        """Record where contact ``name``'s frame is placed: ``position`` (3,) m and ``rotation`` (9,)
        row-major, in the world."""
        s = self._states[name]
        s.parameters[POSITION] = position
        s.parameters[ROTATION] = rotation
        s.placed = True

    def place_measured(self, measured: np.ndarray) -> None:
        """Place every contact pending a placement (:attr:`pending`) where ``measured`` puts it.

        Args:
            measured: (n_contacts, 12): row ``k`` is contact ``k``'s frame placement (position (3,) m,
                rotation (9,) row-major, in the world), in the schedule's contact order; a row that is
                not finite leaves its contact pending (measured again at the next step).
        """
        states = self._states.values()
        # the common case, every contact placed at once (the first step), checked with two C calls
        # (Σ x² finite: every entry finite; a huge entry whose square overflows takes the exact way below)
        if math.isfinite(np.vdot(measured, measured)) and all([s.active and not s.placed for s in states]):
            self._table[:, PLACEMENT] = measured
            for s in states:
                s.placed = True
            self.awaiting_placement = False
            return
        for s, row in zip(states, measured):
            if s.active and not s.placed and np.isfinite(row).all():
                s.parameters[PLACEMENT] = row
                s.placed = True
        self.awaiting_placement = any([s.active and not s.placed for s in states])

    def advance(self, t: float) -> None:
        """Move the clock to ``t`` (s): ramps progress, finished releases release their contact,
        finished rises hand over to the contact's own limits."""
        self._time = t
        for s in self._ramping:  # the bounds written into the parameters by index (run at every step of a ramp)
            parameters = s.parameters
            if s.rise is not None:
                t0, duration, f1 = s.rise
                if t >= t0 + duration:
                    s.rise = None
                    parameters[FMIN], parameters[FMAX] = s.min_normal_force, s.max_normal_force
                else:
                    high = max(0.0, f1 * (t - t0) / duration)
                    parameters[FMIN], parameters[FMAX] = min(s.min_normal_force, high), high
                continue
            t0, duration, f0 = s.ramp or (0.0, 0.0, 0.0)
            if t >= t0 + duration:
                s.active, s.ramp = False, None
                self._switched()
                parameters[FMIN], parameters[FMAX] = s.min_normal_force, s.max_normal_force
            else:
                parameters[FMAX] = max(0.0, f0 * (1.0 - (t - t0) / duration))

    @property
    def _ramping(self) -> list[ContactState]:
        if not self._any_ramp:
            return []
        ramping = [s for s in self._states.values() if s.ramp is not None or s.rise is not None]
        self._any_ramp = bool(ramping)
        return ramping

    def parameters(self, name: str) -> np.ndarray:
        """The kernel parameters of contact ``name`` (:data:`PARAMETER_SIZE`,): the array its kernel
        input is bound to (updated in place)."""
        return self._states[name].parameters

    def record(self, name: str, normal_force: float) -> None:
        """Remember the normal force a command gave contact ``name``."""
        self._flush()
        self._states[name].last_normal_force = normal_force


def feedback_gains(name: str, kp, kd=None) -> tuple[float, float]:
    """Checked pose-feedback gains ``(kp, kd)``: finite and ≥ 0, ``kd`` default ``2 √kp`` (critical
    damping); InputError naming contact ``name`` otherwise."""
    try:
        kp = float(kp)
        kd = 2.0 * math.sqrt(kp) if kd is None and kp >= 0 else float(kd if kd is not None else math.nan)
    except (TypeError, ValueError):
        raise InputError(f"contact {name!r}: gains must be numbers, got kp={kp!r}, kd={kd!r}") from None
    if not (math.isfinite(kp) and kp >= 0 and math.isfinite(kd) and kd >= 0):
        raise InputError(f"contact {name!r}: gains must be finite and >= 0, got kp={kp!r}, kd={kd!r}")
    return kp, kd
