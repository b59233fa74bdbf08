"""The wbc modules one control step enters, in order (a ``sys.setprofile`` tracer).

An *entry* is a call of a Python function of a ``wbc`` module from code of another module (the
caller's module differs from the callee's; the step itself, called from here, is the first). A step
whose data flow is a straight pipeline enters each module once: ``entries == len(set(entries))``;
a unit that calls back into a module already left (a helper of the controller, a per-contact loop
bouncing between modules) enters it again. Calls within a module and C functions are not entries.

Scenarios (Talos, the anchors' controller of :mod:`benchmarks.controller`; the traced step is a
steady one, after ``--warm`` untraced steps at the same state):

* ``standing``: two feet, the CoM target at the initial CoM (the minimizer is the answer);
* ``binding``: the CoM target 0.2 m to the left (the centre-of-pressure bounds bind: a QP);
* ``single_support``: the left foot released (a lifted foot: the layout's gathered rows);
* ``two_levels``: CoM above pelvis orientation and posture (two priority levels);
* ``touchdown``: single support, then the left foot set down (the traced step is the first of the
  new plan: the schedule reads the previous plan's last normal forces in its tick);
* ``first_step``: standing, the first step after ``compile()`` (no warm step);
* ``numpy_levels``: the two levels answered in numpy (the levels' one-call step disabled, as when a
  level binds: the hierarchy on the layout's selection, made once).

``python -m benchmarks.step_modules`` prints one JSON line per scenario: the entries in order, their
count and the number of modules.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

import wbc

__all__ = ["SCENARIOS", "modules_entered", "scenario", "main"]

#: The scenarios by name, in the order they are printed.
SCENARIOS = ("standing", "binding", "single_support", "two_levels", "touchdown", "first_step", "numpy_levels")


def modules_entered(step: Callable[[], Any], package: str = "wbc") -> list[str]:
    """The modules of ``package`` that ``step()`` enters, in order (one name per entry).

    Args:
        step: the call to trace (e.g. ``lambda: controller.step(q, v)``).
        package: only modules of this package count.
    """
    prefix = package + "."
    entries: list[str] = []

    def profile(frame, event: str, arg: object) -> None:
        if event != "call":
            return
        name = frame.f_globals.get("__name__", "")
        if not name.startswith(prefix):
            return
        back = frame.f_back
        if back is None or back.f_globals.get("__name__", "") != name:
            entries.append(name)

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        step()
    finally:
        sys.setprofile(previous)
    return entries


def scenario(name: str) -> tuple[wbc.WholeBodyController, np.ndarray, np.ndarray]:
    """A compiled controller in scenario ``name`` (:data:`SCENARIOS`) and the state it steps at."""
    from benchmarks.controller import build

    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}; one of {', '.join(SCENARIOS)}")
    levels = 2 if name in ("two_levels", "numpy_levels") else 0
    ctrl, spec, com, _ = build(wbc.Solver.DAQP.value, "wrench", levels=levels)
    model = spec.model
    q, v = spec.q0.copy(), np.zeros(model.nv)
    if name == "binding":
        com.set_target(wbc.center_of_mass(model, q) + np.array([0.0, 0.2, 0.0]))
    if name in ("single_support", "touchdown"):
        ctrl.deactivate_contact(ctrl.contacts[0].name)
    if name == "numpy_levels":  # the levels' one-call step disabled: every step takes the numpy hierarchy
        ctrl._attach = lambda layout, fast, writer: False  # type: ignore[method-assign]
        ctrl._prepare_plans()
    return ctrl, q, v


def trace(name: str, warm: int = 5) -> list[str]:
    """The modules the traced step of scenario ``name`` enters, after ``warm`` untraced steps (none
    for ``first_step``; for ``touchdown`` the foot is set down after them)."""
    ctrl, q, v = scenario(name)
    for _ in range(0 if name == "first_step" else warm):
        ctrl.step(q, v)
    if name == "touchdown":
        ctrl.activate_contact(ctrl.contacts[0].name)
    return modules_entered(lambda: ctrl.step(q, v))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenarios", nargs="*", help=f"some of {', '.join(SCENARIOS)} (default all)")
    parser.add_argument("--warm", type=int, default=5, help="untraced steps before the traced one")
    args = parser.parse_args(argv)
    for name in args.scenarios or SCENARIOS:
        entries = trace(name, args.warm)
        short = [e.removeprefix("wbc.control.").removeprefix("wbc.") for e in entries]
        record = {"scenario": name, "entries": len(entries), "modules": len(set(entries)), "path": " › ".join(short)}
        print(json.dumps(record, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
