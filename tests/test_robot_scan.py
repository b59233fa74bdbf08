"""Every URDF of example-robot-data, fixed and floating base, loaded as a new user would (issue 15).

For each variant: wbc loads it (warnings allowed: they name projected inertias) and matches
Pinocchio on the same file (layout, every frame placement, M, RNEA and, when no joint is massless,
ABA, at a random state, to 1e-9); the joints that wbc finds massless are exactly what makes
Pinocchio's M singular (as many zero eigenvalues as massless joints, and M positive definite
otherwise). Refused: only files whose inertias are wrong beyond rounding (:data:`REFUSED`, with the
reason) and files Pinocchio cannot load either. The whole scan takes about 15 s on 2 cores.

``python -m tests.test_robot_scan`` prints the count.
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.helpers import TOL_PIN
from wbc import robots

ROOT = robots.robots_dir()
FILES = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.urdf"))
#: Files wbc refuses on purpose, with the pattern of the reason (Pinocchio loads them as they are).
REFUSED = {
    # the trunk's rotational inertia has principal moments (-0.021, 0.052, 0.099) kg m²: 10% of its
    # body's scale, not rounding (the LAAS variant of the file; romeo.urdf and romeo_small.urdf load)
    "romeo_description/urdf/romeo_laas_small.urdf": r"link 'body' inertia is not positive semi-definite.*beyond",
}


@dataclasses.dataclass
class Outcome:
    """What happened to one variant."""

    file: str
    floating_base: bool
    status: str  # "matched", "refused", "refused by both" (Pinocchio fails too)
    reason: str = ""
    warnings: int = 0
    massless: tuple[str, ...] = ()
    errors: dict[str, float] = dataclasses.field(default_factory=dict)
    zero_eigenvalues: int = 0


def scan(file: str, floating_base: bool) -> Outcome:
    """Load ``file`` with wbc and Pinocchio and compare them."""
    path = ROOT / file
    try:
        pm = oracle.build_model(path, floating_base)
    except (RuntimeError, ValueError) as e:
        pm, pin_error = None, str(e)
    try:
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always", wbc.ModelWarning)
            model = wbc.load_urdf(path, floating_base)
    except wbc.ModelError as e:
        status = "refused" if pm is not None else "refused by both"
        return Outcome(file, floating_base, status, str(e).replace(str(path), file))
    if pm is None:
        return Outcome(file, floating_base, "loaded, Pinocchio fails", pin_error)
    out = Outcome(file, floating_base, "matched", warnings=len(record))
    out.massless = wbc.checks.massless_joints(model)
    rng = np.random.default_rng(len(file))
    out.errors = oracle.oracle_errors(model, pm, rng, dynamics=not out.massless)
    q = wbc.random_configuration(model, rng)
    M = oracle.symmetrized(pin.crba(pm, pm.createData(), q))
    eig = np.linalg.eigvalsh(M)
    out.zero_eigenvalues = int(np.sum(eig <= 1e-13 * eig[-1])) if eig.size else 0
    if max(out.errors.values()) > TOL_PIN or out.zero_eigenvalues != len(out.massless):
        out.status = "mismatch"
    return out


def _check(outcome: Outcome) -> None:
    if outcome.file in REFUSED:
        assert outcome.status == "refused", outcome
        assert re.search(REFUSED[outcome.file], outcome.reason), outcome.reason
        return
    if outcome.status == "refused by both":
        return
    assert outcome.status == "matched", outcome


VARIANTS = [(f, fb) for f in FILES for fb in (False, True)]


@pytest.mark.parametrize(
    ("file", "floating_base"), VARIANTS, ids=[f"{Path(f).stem}-{'floating' if fb else 'fixed'}" for f, fb in VARIANTS]
)
def test_variant(file, floating_base):
    _check(scan(file, floating_base))


def test_the_scan_sees_every_file():
    assert len(FILES) >= 69 and set(REFUSED) <= set(FILES)


def main() -> None:
    outcomes = [scan(f, fb) for f, fb in VARIANTS]
    by_status: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_status.setdefault(o.status, []).append(o)
    print(f"{len(outcomes)} variants ({len(FILES)} files, fixed and floating base)")
    for status, items in sorted(by_status.items()):
        print(f"  {status}: {len(items)}")
    matched = by_status.get("matched", [])
    for label, group in (("all", matched), ("no projected inertia", [o for o in matched if not o.warnings])):
        worst = {k: max(o.errors.get(k, 0.0) for o in group) for k in ("placements", "M", "rnea", "aba")}
        print(f"  largest relative errors vs Pinocchio ({label}):", {k: f"{v:.1e}" for k, v in worst.items()})
    print("  with projected inertias:", sorted({o.file for o in matched if o.warnings}))
    print("  with massless joints:", sorted({(o.file, len(o.massless)) for o in matched if o.massless}))
    for o in outcomes:
        if o.status != "matched":
            print(f"  {o.status}: {o.file} ({'floating' if o.floating_base else 'fixed'}): {o.reason[:200]}")


if __name__ == "__main__":
    main()
