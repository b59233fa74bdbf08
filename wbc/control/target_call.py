"""A task's ``set_target`` in one C call (``target_call.c``, next to this module).

A task describes what its ``set_target`` does with its positional arguments as a
:class:`TargetLayout` (:meth:`~wbc.control.task.Task._target_layout`): for each argument its shape
and which of its entries go where in the staging buffer (target, ẋ_ref, ẍ_ref), whether ``None``
means zeros, and the checks of the staged target (a rotation, unit quaternions). :func:`target_call`
turns that into a builtin function (:mod:`wbc.codegen.builtins`) that gathers, checks and commits
with the GIL held, and calls the task's Python ``set_target`` for anything else (which converts,
decides borderline cases, or raises the error naming the task and the argument). The task installs
it as its own ``set_target`` after its first successful Python call (:meth:`Task._commit`), only
when none of the methods involved is overridden outside wbc.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from ..codegen import builtins

__all__ = ["TargetArgument", "TargetLayout", "target_call"]

_ARGS = 3  # WBC_TARGET_ARGS
_MAX_UNIT = 64  # WBC_MAX_UNIT
_P = ctypes.c_void_p


class TargetArgument(NamedTuple):
    """One positional argument of ``set_target``: its ``shape`` ((n,) or (rows, cols)); the
    ``(row, col)`` of each entry kept, staged at ``offset + k`` (col 0 for a vector); whether
    ``None`` stands for zeros; whether it is a (4, 4) transform whose last row must be (0, 0, 0, 1)
    (anything else goes to the Python ``set_target``)."""

    shape: tuple[int, ...]
    entries: Sequence[tuple[int, int]]
    offset: int
    none_ok: bool = False
    homogeneous: bool = False


class TargetLayout(NamedTuple):
    """What ``set_target`` does: its arguments (at most 3), the staged offset of a rotation's 9
    columns to check (or None), and the staged ``[start, stop)`` of each unit part."""

    arguments: Sequence[TargetArgument]
    rotation: int | None = None
    unit_parts: Sequence[tuple[int, int]] = ()


class _TargetData(ctypes.Structure):
    """``wbc_target`` of ``target_call.c``."""

    _fields_ = [
        ("n_args", ctypes.c_int),
        ("ndim", ctypes.c_int * _ARGS),
        ("rows", ctypes.c_ssize_t * _ARGS),
        ("cols", ctypes.c_ssize_t * _ARGS),
        ("none_ok", ctypes.c_int * _ARGS),
        ("count", ctypes.c_int * _ARGS),
        ("row_of", _P * _ARGS),
        ("col_of", _P * _ARGS),
        ("dst", _P * _ARGS),
        ("stage", _P),
        ("zero_at", _P),
        ("n_zero", ctypes.c_int),
        ("n_stage", ctypes.c_int),
        ("live", _P),
        ("rotation", ctypes.c_int),
        ("n_unit", ctypes.c_int),
        ("unit_start", ctypes.c_int * _MAX_UNIT),
        ("unit_stop", ctypes.c_int * _MAX_UNIT),
        ("unit_tolerance", ctypes.c_double),
        ("none", _P),
        ("homogeneous", ctypes.c_int * _ARGS),
    ]


def _definition() -> int | None:
    found = builtins.definitions(
        "wbc.control",
        "target_call.c",
        "wbc_target_call",
        ("wbc_target_definition",),
        "wbc_target_size",
        ctypes.sizeof(_TargetData),
    )
    return None if found is None else found[0]


def target_call(
    layout: TargetLayout, stage: np.ndarray, live: np.ndarray, slow: Callable, unit_tolerance: float = 0.0
) -> Callable | None:
    """The one-C-call ``set_target`` of ``layout`` staging into ``stage`` (float64, contiguous) and
    committing into ``live`` (as many entries, contiguous), ``slow`` (the Python ``set_target``)
    for anything else; None when the C path is unavailable or the layout does not fit it."""
    arguments = list(layout.arguments)
    units = list(layout.unit_parts)
    n = stage.size
    if not (1 <= len(arguments) <= _ARGS and len(units) <= _MAX_UNIT and live.size == n):
        return None
    if not (stage.dtype == live.dtype == np.float64 and stage.flags.c_contiguous and live.flags.c_contiguous):
        return None
    definition = _definition()
    if definition is None:
        return None
    data = _TargetData(n_args=len(arguments), n_stage=n, rotation=-1 if layout.rotation is None else layout.rotation)
    data.stage, data.live, data.none = stage.ctypes.data, live.ctypes.data, id(None)
    fed = np.zeros(n, dtype=bool)
    keep: list = []
    for k, a in enumerate(arguments):
        if len(a.shape) not in (1, 2) or not a.entries or a.offset < 0 or a.offset + len(a.entries) > n:
            return None
        rows = np.array([e[0] for e in a.entries], dtype=np.intc)
        cols = np.array([e[1] for e in a.entries], dtype=np.intc)
        keep += [rows, cols]
        data.ndim[k], data.rows[k] = len(a.shape), a.shape[0]
        data.cols[k] = a.shape[1] if len(a.shape) == 2 else 1
        if a.homogeneous and tuple(a.shape) != (4, 4):
            return None
        data.none_ok[k], data.count[k] = int(a.none_ok), len(a.entries)
        data.homogeneous[k] = int(a.homogeneous)
        data.row_of[k], data.col_of[k] = rows.ctypes.data, cols.ctypes.data
        data.dst[k] = stage.ctypes.data + 8 * a.offset
        fed[a.offset : a.offset + len(a.entries)] = True
    zero_at = np.flatnonzero(~fed).astype(np.intc)
    data.zero_at, data.n_zero = zero_at.ctypes.data, zero_at.size
    data.n_unit, data.unit_tolerance = len(units), unit_tolerance
    for u, (start, stop) in enumerate(units):
        data.unit_start[u], data.unit_stop[u] = start, stop
    return builtins.new_builtin(definition, (ctypes.addressof(data), slow, data, stage, live, zero_at, *keep))
