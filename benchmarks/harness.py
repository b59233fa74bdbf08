"""The timing harness every benchmark uses (the machines are shared and noisy).

All sides of a comparison are timed in interleaved rounds, the order rotating from round to round,
each round one block of back-to-back calls per side; the garbage collector is off while timing.
A side's figure is the median over rounds of its per-block mean (µs). :func:`relative_spread` of
the per-round ratios says how far the machine's drift moved a ratio (above ~0.1: rerun).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable, Sequence
from itertools import repeat
from typing import Any

__all__ = [
    "Record",
    "time_block",
    "calls_per_block",
    "interleaved_blocks",
    "interleaved_medians",
    "relative_spread",
    "median",
    "time_sides",
    "bind",
    "loglog_slope",
]

#: One JSON line of a benchmark's output.
Record = dict[str, Any]
Call = Callable[[], object]


def time_block(call: Call, calls: int) -> float:
    """Mean time per call of ``calls`` back-to-back calls, µs."""
    loop = repeat(None, calls)
    t0 = time.perf_counter_ns()
    for _ in loop:
        call()
    return (time.perf_counter_ns() - t0) / calls / 1e3


def calls_per_block(call: Call, block_ms: float) -> int:
    """How many calls fill about ``block_ms`` (at least 5, at most 20 000)."""
    call()
    per_call_us = min(time_block(call, 5) for _ in range(3))
    return max(5, min(20000, int(block_ms * 1e3 / max(per_call_us, 1e-3))))


def interleaved_blocks(
    sides: dict[str, Call], rounds: int, calls: int | dict[str, int], warmup: int = 0
) -> dict[str, list[float]]:
    """Per-block mean time per call (µs) of each side over ``rounds``; sides alternate, order rotating.

    Args:
        calls: calls per block, one number for every side or one per side.
        warmup: calls of each side before timing.
    """
    names = list(sides)
    per_side = calls if isinstance(calls, dict) else {n: calls for n in names}
    samples: dict[str, list[float]] = {n: [] for n in names}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for name in names:
            if warmup:
                time_block(sides[name], warmup)
        for r in range(rounds):
            k = r % len(names)
            for name in names[k:] + names[:k]:
                samples[name].append(time_block(sides[name], per_side[name]))
    finally:
        if gc_was_enabled:
            gc.enable()
    return samples


def interleaved_medians(sides: dict[str, Call], rounds: int, block_ms: float) -> dict[str, float]:
    """Median over ``rounds`` of each side's per-block mean (µs), blocks sized to about ``block_ms``."""
    calls = {n: calls_per_block(c, block_ms) for n, c in sides.items()}
    return {n: statistics.median(s) for n, s in interleaved_blocks(sides, rounds, calls).items()}


def median(samples: Sequence[float]) -> float:
    return float(statistics.median(samples))


def relative_spread(samples: Sequence[float]) -> float:
    """Interquartile range over median of ``samples`` (0 with fewer than two)."""
    if len(samples) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return (q3 - q1) / statistics.median(samples)


def choice_list(text: str, known: Sequence[str], what: str) -> list[str]:
    """The comma-separated names of ``text``, each one of ``known`` (an argparse type: refuses an
    empty list or an unknown name, naming ``what`` and the known names)."""
    chosen = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in chosen if n not in known]
    if not chosen or unknown:
        raise argparse.ArgumentTypeError(f"unknown {what}(s) {unknown or text!r}; known: {', '.join(known)}")
    return chosen


def time_sides(sides: dict[str, Call], rounds: int, block_ms: float) -> dict[str, tuple[float, float]]:
    """``{side: (median µs, relative spread)}`` of interleaved blocks sized to about ``block_ms``."""
    calls = {n: calls_per_block(c, block_ms) for n, c in sides.items()}
    samples = interleaved_blocks(sides, rounds, calls)
    return {n: (median(s), relative_spread(s)) for n, s in samples.items()}


def bind(kernel: Any, *args: Any) -> Call:
    """Copy ``args`` into a compiled kernel's input buffers once; returns its ``run`` (no copies per call)."""
    import numpy as np

    for dst, src in zip(kernel.inputs, args):
        np.copyto(dst, np.reshape(src, dst.shape))
    return kernel.run


def loglog_slope(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of log(y) against log(x)."""
    import numpy as np

    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])
