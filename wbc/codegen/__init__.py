"""Trace once, compile, call cheaply.

An algorithm written against CasADi's matrix API is traced with ``SX`` symbols into a
``casadi.Function`` (:mod:`.trace`), generated as C and compiled by the system C compiler into a
shared library kept in an on-disk cache (:mod:`.cache`), then loaded and evaluated through
``Function.buffer()`` into preallocated numpy arrays (:mod:`.kernel`). :mod:`.kernels` has
ready-made traced functions for the classical algorithms, :mod:`.cluster_kernels` for clustered
models (loops and transmissions).
"""

from __future__ import annotations

from . import cluster_kernels, kernels
from .cache import DEFAULT_FLAGS, cache_dir, find_compiler
from .kernel import Kernel, compile_function
from .trace import TracedFunction, sanitize, trace

__all__ = [
    "Kernel",
    "trace",
    "TracedFunction",
    "compile_function",
    "sanitize",
    "cache_dir",
    "find_compiler",
    "DEFAULT_FLAGS",
    "kernels",
    "cluster_kernels",
]
