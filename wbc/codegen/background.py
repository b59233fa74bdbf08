"""Kernels compiled in a background thread while their first calls run in CasADi's virtual machine.

Compiling a humanoid's large kernels (an ABA, an input matrix) takes seconds; tracing them takes a
fraction of one, and CasADi's SX virtual machine evaluates the traced function in tens to hundreds
of microseconds. :mod:`wbc.codegen.model_kernels` therefore traces on first use, answers from the
virtual machine, and hands the compilation to :func:`submit`: one worker thread compiles the jobs
in the order they came (the C compiler runs in subprocesses, in parallel over a kernel's parts,
without the GIL), and each job's ``done(kernel)`` swaps the compiled kernel in. The virtual machine
and the compiled C run the same operations on the same numbers: the results are the same before
and after the swap (``tests/test_numeric_calls.py`` checks it bit for bit on one function,
``tests/test_numeric_compiled.py`` every function to 1e-12).

- No duplicate compiles: a job whose key is queued or running is not queued again; its ``done``
  is called with the same kernel.
- A failed compile (:class:`~wbc.errors.CompileError`, or anything else raised) leaves the virtual
  machine answering, with a :class:`~wbc.errors.WbcPerformanceWarning` naming the kernel.
- Shutdown: at exit the process waits for the jobs to finish (so the kernels are in the disk cache
  for the next process: a short script does not leave them uncompiled forever); :func:`wait` does
  the same at any time. A forked child restarts the jobs it inherited in its own worker.
- The compiler processes of a background compile run niced (:data:`~wbc.codegen.cache.BACKGROUND_NICENESS`):
  they yield the processors to the user's own threads (a control loop keeps its timing).
- ``WBC_BACKGROUND_COMPILE=0`` turns this off: the first call compiles and waits (the behaviour
  without a C compiler is unchanged: the virtual machine, with a warning).
"""

from __future__ import annotations

import atexit
import os
import threading
import warnings
from collections.abc import Callable
from typing import Any

from ..errors import WbcPerformanceWarning

__all__ = ["enabled", "submit", "wait", "pending", "is_worker"]


def enabled() -> bool:
    """Whether first calls compile in the background (``WBC_BACKGROUND_COMPILE`` is not ``0``)."""
    return os.environ.get("WBC_BACKGROUND_COMPILE", "1") != "0"


class _Job:
    __slots__ = ("build", "done", "key", "label")

    def __init__(self, key: Any, build: Callable[[], Any], done: Callable[[Any], None], label: str) -> None:
        self.key, self.build, self.label = key, build, label
        self.done: list[Callable[[Any], None]] | None = [done]


class _Worker:
    """The queue of compile jobs and the thread that runs them."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.lock = threading.Condition()
        self.queue: list[_Job] = []
        self.running: _Job | None = None
        self.thread: threading.Thread | None = None

    def submit(self, key: Any, build: Callable[[], Any], done: Callable[[Any], None], label: str) -> None:
        with self.lock:
            for job in ([self.running] if self.running is not None else []) + self.queue:
                if job.key == key and job.done is not None:  # None: built, its callbacks taken
                    job.done.append(done)
                    return
            self.queue.append(_Job(key, build, done, label))
            self._start()

    def _start(self) -> None:
        if self.thread is None or not self.thread.is_alive():
            self.thread = threading.Thread(target=self._run, name="wbc-kernel-compiler", daemon=True)
            self.thread.start()

    def _run(self) -> None:
        while True:
            with self.lock:
                if not self.queue:
                    self.thread = None
                    self.lock.notify_all()
                    return
                job = self.running = self.queue.pop(0)
            kernel = None
            try:
                kernel = job.build()
                with self.lock:
                    callbacks, job.done = job.done or [], None
                for done in callbacks:
                    done(kernel)
            except Exception as e:  # the worker must go on: the virtual machine keeps answering
                warnings.warn(
                    f"kernel {job.label} was not compiled in the background ({type(e).__name__}: {e}); it "
                    "keeps running in CasADi's virtual machine",
                    WbcPerformanceWarning,
                    stacklevel=1,
                )
            with self.lock:
                self.running = None
                self.lock.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        with self.lock:
            return self.lock.wait_for(lambda: not self.queue and self.running is None, timeout)

    def pending(self) -> int:
        with self.lock:
            return len(self.queue) + (self.running is not None)

    def after_fork(self) -> None:
        """In a forked child: the parent's worker thread is gone; its jobs restart here."""
        jobs = [j for j in ([self.running] if self.running is not None else []) + self.queue if j.done is not None]
        self._reset()
        if jobs:
            self.queue = jobs
            self._start()


_worker = _Worker()


def submit(key: Any, build: Callable[[], Any], done: Callable[[Any], None], label: str) -> None:
    """Queue ``build()`` (returns a compiled kernel, may raise CompileError) under ``key``;
    ``done(kernel)`` runs in the worker thread once it is built (at once after the job of an
    equal key, queued or running, instead of building it again)."""
    _worker.submit(key, build, done, label)


def wait(timeout: float | None = None) -> bool:
    """Wait until every queued compile is finished and swapped in (True), or ``timeout`` seconds
    passed (False)."""
    return _worker.wait(timeout)


def pending() -> int:
    """How many compiles are queued or running."""
    return _worker.pending()


def is_worker() -> bool:
    """Whether the calling thread is the background compiler (its compiler processes are niced)."""
    return threading.current_thread() is _worker.thread


atexit.register(wait)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_worker.after_fork)
