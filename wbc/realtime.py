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

* **other processes** (opt-in, ``priority``): the calling thread runs under ``SCHED_FIFO`` at that
  priority (1–99, as ``chrt -f``): no ordinary process preempts it any more (measured on a shared
  2-core machine, 20,000 standing steps: 16–17 preempted steps → 1–3, the worst step 4–6.5 ms →
  0.15–0.3 ms). It needs ``CAP_SYS_NICE`` or an ``RLIMIT_RTPRIO`` at least that high (``ulimit -r``,
  ``rtprio`` in /etc/security/limits.conf, ``LimitRTPRIO=`` of a systemd service); else a warning
  (``required=True``: an error). The kernel's real-time throttling
  (``/proc/sys/kernel/sched_rt_runtime_us``, 950,000 µs of each second by default) pauses a
  ``SCHED_FIFO`` thread that runs busy for longer than that: a loop paced at 1 kHz never does; a
  loop that runs back to back for more than 0.95 s (a benchmark, a simulation faster than real
  time) is paused for 50 ms. ``cpu``: the thread is also pinned to that CPU (as ``taskset``).
  On exit, the previous policy, priority and CPUs.

Entering locks the whole process (a Python process with MuJoCo maps about 500 MB: 0.2 s), which
evicts the caches: call :meth:`wbc.WholeBodyController.warm_up` inside the context, right before the
loop's first step. What the system decides stays the system's: CPU isolation (``isolcpus``),
frequency scaling, the real-time throttling.

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
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from .errors import InputError, RealtimeUnavailable, WbcPerformanceWarning

__all__ = ["RealtimeStatus", "realtime_mode", "sleep_until"]

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
        priority: the ``SCHED_FIFO`` priority the thread runs at (None: its policy left alone).
        cpu: the CPU the thread is pinned to (None: its CPUs left alone).
    """

    frozen_objects: int
    memory_locked: bool
    future_locked: bool
    problems: tuple[str, ...]
    priority: int | None = None
    cpu: int | None = None


@contextmanager
def realtime_mode(
    gc_freeze: bool = True,
    lock_memory: bool = True,
    required: bool = False,
    priority: int | None = None,
    cpu: int | None = None,
) -> Iterator[RealtimeStatus]:
    """The process in real-time mode for the ``with`` block (see :mod:`wbc.realtime`).

    Args:
        gc_freeze: collect once, freeze the survivors, disable automatic garbage collection.
        lock_memory: lock the process's memory (``mlockall``).
        required: raise instead of warning when the memory cannot be locked or the priority not set.
        priority: run the calling thread under ``SCHED_FIFO`` at this priority (1–99; None: leave
            its scheduling alone).
        cpu: pin the calling thread to this CPU (one of ``os.sched_getaffinity(0)``; None: leave it).

    Yields:
        :class:`RealtimeStatus`: what was done, and why not where not.

    Raises:
        InputError: a :func:`realtime_mode` is already active in this process; ``priority`` or
            ``cpu`` not one the system offers.
        RealtimeUnavailable: ``required`` and the memory could not be locked or the priority not
            set (the message says why and what grants it).
    """
    _check_scheduling(priority, cpu)
    if not _one_at_a_time.acquire(blocking=False):
        raise InputError("realtime_mode() is already active in this process (one at a time: it changes the process)")
    try:
        problems: list[str] = []

        def unavailable(problem: str) -> None:
            if required:
                raise RealtimeUnavailable(problem)
            warnings.warn(problem, WbcPerformanceWarning, stacklevel=4)
            problems.append(problem)

        locked = future = False
        if lock_memory:
            locked, future, problem = _lock_memory()
            if problem:
                unavailable(problem)
        previous = _Scheduling.current()
        applied_priority, applied_cpu, problem = previous.apply(priority, cpu)
        if problem:
            try:
                unavailable(problem)
            except RealtimeUnavailable:  # nothing of this context is left behind
                previous.restore()
                if locked:
                    _libc().munlockall()
                raise
        collecting = gc.isenabled()
        frozen = 0
        if gc_freeze:
            gc.collect()
            gc.freeze()
            gc.disable()
            frozen = gc.get_freeze_count()
        try:
            yield RealtimeStatus(frozen, locked, future, tuple(problems), applied_priority, applied_cpu)
        finally:
            if gc_freeze:
                gc.unfreeze()
                if collecting:
                    gc.enable()
            previous.restore()
            if locked:
                _libc().munlockall()
    finally:
        _one_at_a_time.release()


def sleep_until(deadline: float) -> None:
    """Sleep until ``time.perf_counter()`` reads ``deadline`` (s); return at once if it is past (a
    paced loop's wait for its next period)."""
    remaining = deadline - time.perf_counter()
    if remaining > 0:
        time.sleep(remaining)


def _check_scheduling(priority: int | None, cpu: int | None) -> None:
    """Refuse a priority or CPU the system does not offer (InputError naming the range)."""
    if priority is not None:
        if not hasattr(os, "SCHED_FIFO"):
            raise InputError(f"realtime_mode(priority=...): SCHED_FIFO is not available here ({sys.platform})")
        lo, hi = os.sched_get_priority_min(os.SCHED_FIFO), os.sched_get_priority_max(os.SCHED_FIFO)
        if isinstance(priority, bool) or not isinstance(priority, int) or not lo <= priority <= hi:
            raise InputError(
                f"realtime_mode: priority must be an integer in [{lo}, {hi}] (SCHED_FIFO), got {priority!r}"
            )
    if cpu is not None:
        if not hasattr(os, "sched_getaffinity"):
            raise InputError(f"realtime_mode(cpu=...): CPU affinity is not available here ({sys.platform})")
        allowed = sorted(os.sched_getaffinity(0))
        if isinstance(cpu, bool) or not isinstance(cpu, int) or cpu not in allowed:
            raise InputError(f"realtime_mode: cpu must be one of this process's CPUs {allowed}, got {cpu!r}")


@dataclasses.dataclass(frozen=True)
class _Scheduling:
    """The calling thread's scheduling policy, its parameter and its CPUs (to put back on exit)."""

    policy: int | None
    param: object
    cpus: frozenset[int] | None

    @classmethod
    def current(cls) -> _Scheduling:
        if not hasattr(os, "sched_getscheduler"):
            return cls(None, None, None)
        return cls(os.sched_getscheduler(0), os.sched_getparam(0), frozenset(os.sched_getaffinity(0)))

    def apply(self, priority: int | None, cpu: int | None) -> tuple[int | None, int | None, str]:
        """Pin to ``cpu``, then ``SCHED_FIFO`` at ``priority``: (priority set, CPU set, why not: '')."""
        applied_cpu = None
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})  # within the process's own CPUs (checked): always permitted
            applied_cpu = cpu
        if priority is None:
            return None, applied_cpu, ""
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        except PermissionError:
            import resource

            limit = resource.getrlimit(resource.RLIMIT_RTPRIO)[0]
            return (
                None,
                applied_cpu,
                (
                    f"priority not set (SCHED_FIFO {priority}: not permitted; RLIMIT_RTPRIO is {limit}): raise it "
                    "(`ulimit -r`, rtprio in /etc/security/limits.conf, LimitRTPRIO= of a systemd service) or "
                    "grant CAP_SYS_NICE"
                ),
            )
        return priority, applied_cpu, ""

    def restore(self) -> None:
        """Put back what differs (back to a lower priority and the process's CPUs: always permitted)."""
        if self.policy is None:
            return
        if os.sched_getscheduler(0) != self.policy or os.sched_getparam(0) != self.param:
            os.sched_setscheduler(0, self.policy, self.param)  # type: ignore[arg-type]
        if self.cpus is not None and os.sched_getaffinity(0) != self.cpus:
            os.sched_setaffinity(0, self.cpus)


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


def _status_field(field: str) -> str | None:
    """The first word of a field of /proc/self/status (``CapEff``, ``VmSize``), None when unreadable."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return line.split()[1]
    except (OSError, IndexError):
        pass
    return None


def _has_capability(bit: int) -> bool:
    """Whether the process's effective capabilities hold ``bit`` (Linux, from /proc/self/status)."""
    try:
        return bool(int(_status_field("CapEff") or "0", 16) >> bit & 1)
    except ValueError:
        return False


def _status_kib(field: str) -> int:
    """A ``kB`` field of /proc/self/status (``VmSize``, ``VmLck``), 0 when unreadable."""
    try:
        return int(_status_field(field) or "0")
    except ValueError:
        return 0
