"""Trace once, compile, call cheaply.

An algorithm written against CasADi's matrix API is traced with ``SX`` symbols into a
``casadi.Function`` (:mod:`.trace`), written as C in parts of a few hundred operations over
several files (:mod:`.emit`: compilers are superlinear in a function's size) and compiled in
parallel by the system C compiler into a shared library kept in an on-disk cache (:mod:`.cache`),
then loaded and evaluated through ``Function.buffer()`` into preallocated numpy arrays
(:mod:`.kernel`). :mod:`.index` finds a kernel by a fingerprint of what it is traced from
(:mod:`.fingerprint`), without tracing. :mod:`.algorithm_functions` has ready-made traced
functions for the classical algorithms, :mod:`.cluster_functions` for clustered models (loops
and transmissions), :mod:`.maximal_functions` for maximal-coordinate dynamics (and its compiled
numeric call). :mod:`.model_kernels` keeps the kernels of the compiled numeric API
(:mod:`wbc.numeric`) per model (first calls answered by CasADi's VM while :mod:`.background`
compiles), :mod:`.calls` is their per-call path (one C call, :mod:`.builtins`). :mod:`.batch` evaluates a
compiled kernel over a batch of states per call, in parallel threads (:class:`BatchKernel`).
"""

from __future__ import annotations

from . import algorithm_functions, background, cluster_functions, maximal_functions
from .batch import BatchKernel, available_threads
from .cache import DEFAULT_FLAGS, HOT_FLAGS, STEP_FLAGS, cache_dir, find_compiler
from .kernel import Kernel, compile_function
from .trace import TracedFunction, sanitize, trace

__all__ = [
    "Kernel",
    "BatchKernel",
    "available_threads",
    "trace",
    "TracedFunction",
    "compile_function",
    "sanitize",
    "cache_dir",
    "find_compiler",
    "DEFAULT_FLAGS",
    "HOT_FLAGS",
    "STEP_FLAGS",
    "algorithm_functions",
    "cluster_functions",
    "maximal_functions",
    "background",
]
