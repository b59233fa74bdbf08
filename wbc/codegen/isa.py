"""The instruction-set flags of this machine's compiled code: ``-mavx`` where the processor has AVX.

The traced kernels are long straight-line scalar code (the Talos step kernel: 56k operations, about
650 kB of machine code), and in a control loop their cost is mostly fetching that code again (the
loop's other work evicts it from the caches between steps). AVX's three-operand (VEX) encoding of
the same scalar instructions needs no register copies before each operation: the step kernel's code
is 17 % smaller (655 -> 545 kB) and runs in 0.70-0.74x the time in the standing benchmark's loop
(Talos, same run, alternated with two ``-Og`` builds; issue 27). ``-O1`` or ``-O2`` with ``-mavx``
were slower than ``-Og -mavx`` there.

Exactness. ``-mavx`` alone enables no fused multiply-add (that is ``-mfma``, deliberately absent:
a contracted ``a * b + c`` rounds once, not twice), so every operation is the same IEEE operation as
in the SSE2 encoding and the results are the same bits.

Portability. The flag is added only on an x86-64 Linux machine whose kernel reports ``avx`` in
``/proc/cpuinfo`` (it does only when the operating system saves the AVX registers). The flags are
part of every cached library's key (:mod:`wbc.codegen.cache`), so a machine without AVX sharing a
cache directory computes other keys and never loads an AVX library. Set ``WBC_KERNEL_ISA=baseline``
to build without it (also to use a read-only cache built without it: its keys lack the flag).
"""

from __future__ import annotations

import os
import platform
import sys

__all__ = ["isa_flags", "ISA_FLAGS"]

_X86_64 = frozenset({"x86_64", "amd64"})


def _cpu_flags(cpuinfo: str) -> set[str]:
    """The processor feature flags of the first ``flags`` line of ``/proc/cpuinfo``'s text."""
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            return set(value.split())
    return set()


def isa_flags(
    machine: str | None = None,
    system: str | None = None,
    cpuinfo: str | None = None,
    setting: str | None = None,
) -> tuple[str, ...]:
    """``("-mavx",)`` on an x86-64 Linux machine whose processor (and kernel) has AVX, else ``()``.

    Args:
        machine: ``platform.machine()`` (default this machine's).
        system: ``sys.platform`` (default this interpreter's).
        cpuinfo: the text of ``/proc/cpuinfo`` (default read, on Linux).
        setting: ``$WBC_KERNEL_ISA`` (default read): ``"baseline"`` gives ``()``; anything else
            (unset) detects.
    """
    setting = os.environ.get("WBC_KERNEL_ISA", "") if setting is None else setting
    machine = platform.machine() if machine is None else machine
    system = sys.platform if system is None else system
    if setting == "baseline" or machine.lower() not in _X86_64 or not system.startswith("linux"):
        return ()
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
                cpuinfo = f.read()
        except OSError:
            return ()
    return ("-mavx",) if "avx" in _cpu_flags(cpuinfo) else ()


#: This machine's flags (:func:`isa_flags`), read once when wbc is imported.
ISA_FLAGS: tuple[str, ...] = isa_flags()
