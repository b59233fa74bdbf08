"""Where the cells run: a ``concurrent.futures`` executor from an existing engine.

* :attr:`Engine.LOCAL`: worker processes on this machine (``ProcessPoolExecutor``, started with
  ``spawn``: a clean interpreter per worker, no forked threads or file handles).
* :attr:`Engine.DASK`: a Dask ``distributed`` cluster: the one whose scheduler is at ``address``
  (``tcp://host:8786``), or, without one, a ``LocalCluster`` of ``workers`` worker processes
  started on this machine (one thread each). The ``dask`` extra: ``pip install 'wbc[dask]'``.
* :attr:`Engine.RAY`: Ray, ``ray.init(address)`` (a running cluster, or ``"auto"``), or without
  one a local Ray with ``workers`` processors. The ``ray`` extra: ``pip install 'wbc[ray]'``.

Every engine ships the cell function and the cell to a worker by pickling (by reference to its
module for module-level functions: the workers must be able to import it, as with any of these
engines). A worker compiles a kernel once, through the on-disk kernel cache (shared by the
processes of one machine; each machine of a cluster fills its own).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import enum
import multiprocessing
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import InputError, MissingDependency

__all__ = ["Engine", "open_executor"]


class Engine(enum.Enum):
    """The engine a sweep runs on."""

    LOCAL = "local"
    DASK = "dask"
    RAY = "ray"


def _positive(workers: int) -> int:
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputError(f"workers must be a positive integer, got {workers!r}")
    return workers


@contextlib.contextmanager
def open_executor(engine: Engine | str, workers: int = 1, address: str | None = None) -> Iterator[cf.Executor]:
    """A ``concurrent.futures.Executor`` on ``engine``, shut down (with anything it started) on exit.

    Args:
        engine: :class:`Engine` (or its name).
        workers: worker processes to start (local processes, a Dask ``LocalCluster``, a local Ray).
        address: a running cluster's address (Dask scheduler ``tcp://host:port``, Ray ``host:port`` or
            ``"auto"``); then nothing is started and ``workers`` is not used. Not for ``local``.

    Raises:
        InputError: an unknown engine, ``workers`` < 1, or an address for the local engine.
        MissingDependency: the engine's package is not installed (names the extra).
    """
    try:
        kind = engine if isinstance(engine, Engine) else Engine(engine)
    except ValueError:
        raise InputError(f"unknown sweep engine {engine!r}; known: {', '.join(e.value for e in Engine)}") from None
    workers = _positive(workers)
    if kind is Engine.LOCAL:
        if address is not None:
            raise InputError("the local engine takes no address (use engine='dask' or 'ray' for a cluster)")
        with cf.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            yield pool
    elif kind is Engine.DASK:
        with _dask(workers, address) as executor:
            yield executor
    else:
        with _ray(workers, address) as executor:
            yield executor


@contextlib.contextmanager
def _dask(workers: int, address: str | None) -> Iterator[cf.Executor]:
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise MissingDependency(
            "engine 'dask' needs Dask's distributed scheduler: pip install 'wbc[dask]' (dask, distributed)"
        ) from None
    with contextlib.ExitStack() as stack:
        if address is None:
            cluster = stack.enter_context(
                LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
            )
            client = stack.enter_context(Client(cluster))
        else:
            client = stack.enter_context(Client(address))
        executor = client.get_executor(pure=False)
        try:
            yield executor
        finally:
            executor.shutdown(wait=True)


class RayExecutor(cf.Executor):
    """``concurrent.futures`` over Ray tasks: ``submit`` runs ``fn(*args)`` as a Ray task (one processor)."""

    def __init__(self) -> None:
        import ray

        self._ray = ray
        self._remote = ray.remote(num_cpus=1)(_call)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future:
        return self._remote.remote(fn, args, kwargs).future()


def _call(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    return fn(*args, **kwargs)


@contextlib.contextmanager
def _ray(workers: int, address: str | None) -> Iterator[cf.Executor]:
    try:
        import ray
    except ImportError:
        raise MissingDependency("engine 'ray' needs Ray: pip install 'wbc[ray]'") from None
    started = not ray.is_initialized()
    if started:
        if address is None:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=address, log_to_driver=False)
    executor = RayExecutor()
    try:
        yield executor
    finally:
        executor.shutdown(wait=True)
        if started:
            ray.shutdown()
