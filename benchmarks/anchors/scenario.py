"""What the anchors and wbc run: the Talos scenarios, their command line and the timing record.

Loaded in the anchors' side environments (numpy only, no wbc): keep it free of other imports.

Scenarios (1 ms steps, the state integrated from the command's q̈ as
``v_mean = v + dt/2 q̈``, ``q ← q ⊕ dt v_mean``, or by the anchor's own integrator):

* ``standing``: the CoM held where it starts;
* ``lean``: the CoM target :data:`LEAN` m to the left of the start (0.2: the centre-of-pressure
  bounds bind), the robot put back in ``half_sitting`` at rest every ``reset`` steps;
* ``priorities``: standing with the CoM task a hard constraint (the level above the weighted
  posture): the two-level problem every anchor can pose.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

SCENARIOS = ("standing", "lean", "priorities")
LEAN = 0.2  # m to the left
RESET = 200  # steps between resets of the lean scenario
DT = 1e-3
MU = 0.3
COM_WEIGHT, COM_KP = 1.0, 20.0
POSTURE_WEIGHT, POSTURE_KP = 1e-3, 10.0
CONTACT_KP = 10.0
SOLE_LENGTH, SOLE_WIDTH = 0.2, 0.13  # the anchors' sole (x, y), m


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The anchor scripts' command line: ``--scenario``, ``--steps``, ``--lean``, ``--reset``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenario", choices=SCENARIOS, default="standing")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--lean", type=float, default=LEAN)
    parser.add_argument("--reset", type=int, default=RESET)
    return parser.parse_args(argv)


def percentiles(t_us: np.ndarray) -> dict:
    """p50, p99, p99.9, max, min and the first step (µs, rounded) of per-step times ``t_us`` (T,)."""
    t = np.asarray(t_us, dtype=float)
    r = lambda x: round(float(x), 1)  # noqa: E731
    return {
        "step_us_median": r(np.median(t)),
        "step_us_p99": r(np.percentile(t, 99)),
        "step_us_p999": r(np.percentile(t, 99.9)),
        "step_us_max": r(t.max()),
        "step_us_min": r(t.min()),
        "first_step_us": r(t[0]),
    }


def emit(record: dict) -> None:
    """Print the record as one JSON line (the last line of the script's output)."""
    sys.stdout.write(json.dumps(record) + "\n")
