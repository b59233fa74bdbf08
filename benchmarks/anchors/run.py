"""The wbc side of the anchors' harness: run an anchor script in its side environment, read its record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

__all__ = ["ANCHORS", "REPOSITORY", "environment", "run_anchor"]

#: The anchors, by the name of their side environment.
ANCHORS = ("tsid", "placo")
#: The repository root (the anchor scripts run from it, as ``-m benchmarks.anchors.<name>_talos``).
REPOSITORY = Path(__file__).resolve().parents[2]


def environment(name: str) -> Path:
    """The Python of anchor ``name``'s side environment (``$WBC_ANCHORS``, default ``~/.cache/wbc-anchors``)."""
    root = Path(os.environ.get("WBC_ANCHORS", Path.home() / ".cache" / "wbc-anchors"))
    return root / name / "bin" / "python"


def run_anchor(name: str, scenario: str, steps: int, lean: float = 0.2, reset: int = 200) -> dict | None:
    """Run anchor ``name`` (:data:`ANCHORS`) on ``scenario`` (:data:`~benchmarks.anchors.scenario.SCENARIOS`)
    for ``steps`` steps; its JSON record, or None (with a message on stderr) when it is not set up
    (``make anchors``) or fails."""
    python = environment(name)
    if not python.exists():
        print(f"anchor {name} not set up (run `make anchors`)", file=sys.stderr)
        return None
    command = [str(python), "-m", f"benchmarks.anchors.{name}_talos", "--scenario", scenario, "--steps", str(steps)]
    command += ["--lean", str(lean), "--reset", str(reset)]
    out = subprocess.run(command, capture_output=True, text=True, check=False, cwd=REPOSITORY)
    if out.returncode != 0:
        print(f"anchor {name} failed:\n{out.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])
