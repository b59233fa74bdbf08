"""Real-time mode for a control loop in CPython: ``with wbc.realtime_mode(): ...`` around the loop.

Besides its own work, a 1 kHz loop in CPython pays for what the process does behind its back; the
context removes what a library can, opt-in, for the loop's duration, and says what it could not do:

* **the garbage collector**: a collection starts at whichever allocation crosses its threshold, inside
  some step, and walks every tracked object (hundreds of µs with MuJoCo and a logging loop). On entry
  the objects alive are collected once and frozen (:func:`gc.freeze`: never examined again), and
  automatic collection is disabled. Memory is still reclaimed by reference counting; only reference
  cycles wait (wbc's step makes none: tested). On exit: unfrozen, re-enabled if it was.
* **page faults**: memory locked with ``mlockall(MCL_CURRENT | MCL_FUTURE)``: every page the process
  maps is made resident now and stays so (never paged out, never faulted in a step); pages mapped
  later are made resident when mapped. Locking needs the ``CAP_IPC_LOCK`` capability or a
  ``RLIMIT_MEMLOCK`` above the process's size (``ulimit -l``, ``memlock`` in
  ``/etc/security/limits.conf``, ``LimitMEMLOCK=`` of a systemd service); without them nothing is
  locked and a :class:`~wbc.errors.WbcPerformanceWarning` says why (``required=True``: a
  :class:`~wbc.errors.RealtimeUnavailable` instead). Without the capability and with a finite limit,
  only the pages mapped now are locked (``MCL_FUTURE`` would make every later allocation past the
  limit fail). On exit: unlocked.

Entering locks the whole process (a Python process with MuJoCo maps about 500 MB: 0.2 s), which
evicts the caches: call :meth:`wbc.WholeBodyController.warm_up` inside the context, right before the
loop's first step. What the system decides stays the system's: CPU isolation (``isolcpus``,
``taskset``), scheduling priority (``chrt``), frequency scaling.

One context at a time per process (what it changes is the process's); entering a second raises
:class:`~wbc.errors.InputError`.
"""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import gc
import os
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from .errors import InputError, RealtimeUnavailable, WbcPerformanceWarning

__all__ = ["RealtimeStatus", "realtime_mode"]

#: ``mlockall`` flags (Linux, <sys/mman.h>).
MCL_CURRENT, MCL_FUTURE = 1, 2
#: The capability that lifts the locked-memory limit (<linux/capability.h>).
CAP_IPC_LOCK = 14

_one_at_a_time = threading.Lock()


@dataclasses.dataclass(frozen=True)
class RealtimeStatus:
    """What :func:`realtime_mode` did on entry.

    Attributes:
        frozen_objects: objects the garbage collector froze (0: the collector was left alone).
        memory_locked: whether the process's memory is locked.
        future_locked: whether pages mapped later are locked too (``MCL_FUTURE``).
        problems: why something asked for was not done (empty when everything was).
    """

    frozen_objects: int
    memory_locked: bool
    future_locked: bool
    problems: tuple[str, ...]


@contextmanager
def realtime_mode(gc_freeze: bool = True, lock_memory: bool = True, required: bool = False) -> Iterator[RealtimeStatus]:
    """The process in real-time mode for the ``with`` block (see :mod:`wbc.realtime`).

    Args:
        gc_freeze: collect once, freeze the survivors, disable automatic garbage collection.
        lock_memory: lock the process's memory (``mlockall``).
        required: raise instead of warning when the memory cannot be locked.

    Yields:
        :class:`RealtimeStatus`: what was done, and why not where not.

    Raises:
        InputError: a :func:`realtime_mode` is already active in this process.
        RealtimeUnavailable: ``required`` and the memory could not be locked (the message says why and
            what grants it).
    """
    if not _one_at_a_time.acquire(blocking=False):
        raise InputError("realtime_mode() is already active in this process (one at a time: it changes the process)")
    try:
        problems: list[str] = []
        locked = future = False
        if lock_memory:
            locked, future, problem = _lock_memory()
            if problem:
                if required:
                    raise RealtimeUnavailable(problem)
                warnings.warn(problem, WbcPerformanceWarning, stacklevel=3)
                problems.append(problem)
        collecting = gc.isenabled()
        frozen = 0
        if gc_freeze:
            gc.collect()
            gc.freeze()
            gc.disable()
            frozen = gc.get_freeze_count()
        try:
            yield RealtimeStatus(frozen, locked, future, tuple(problems))
        finally:
            if gc_freeze:
                gc.unfreeze()
                if collecting:
                    gc.enable()
            if locked:
                _libc().munlockall()
    finally:
        _one_at_a_time.release()


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _lock_memory() -> tuple[bool, bool, str]:
    """``mlockall`` where permitted: (locked, future pages locked too, why not: '' when locked)."""
    if not sys.platform.startswith("linux"):
        return False, False, f"memory not locked: mlockall is Linux only (here: {sys.platform})"
    import resource

    limit = resource.getrlimit(resource.RLIMIT_MEMLOCK)[0]
    unlimited = limit == resource.RLIM_INFINITY or _has_capability(CAP_IPC_LOCK)
    flags = MCL_CURRENT | MCL_FUTURE if unlimited else MCL_CURRENT
    libc = _libc()
    if libc.mlockall(flags) == 0:
        return True, unlimited, ""
    code = ctypes.get_errno()
    mapped = _status_kib("VmSize")
    if code in (errno.ENOMEM, errno.EPERM):
        what = "not permitted" if code == errno.EPERM else "over the limit"
        return (
            False,
            False,
            (
                f"memory not locked ({what}: mlockall {errno.errorcode[code]}): the process maps "
                f"{mapped / 1024:.0f} MiB, RLIMIT_MEMLOCK is {limit / 2**20:.0f} MiB; raise it (`ulimit -l unlimited`, "
                "memlock in /etc/security/limits.conf, LimitMEMLOCK= of a systemd service) or grant CAP_IPC_LOCK"
            ),
        )
    return False, False, f"memory not locked: mlockall failed ({os.strerror(code)})"


def _has_capability(bit: int) -> bool:
    """Whether the process's effective capabilities hold ``bit`` (Linux, from /proc/self/status)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> bit & 1)
    except (OSError, ValueError):
        pass
    return False


def _status_kib(field: str) -> int:
    """A ``kB`` field of /proc/self/status (``VmSize``, ``VmLck``), 0 when unreadable."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0
