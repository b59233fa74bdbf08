"""Constraint sets and constrained cases of the IIM and Delassus tests (against Pinocchio): the
catalog robots' contact sets, random trees with random constraint sets of every kind, and the
random states at which they are compared (with Pinocchio's constraint Jacobian)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.helpers import TREE_CASES, Case, tree_case
from wbc.robots import synthetic


def catalog_constraints(case: Case, which: str) -> list:
    """The constraint sets the IIM and Delassus tests use on catalog robots.

    ``which``: ``"feet"`` (6D welds of both soles), ``"corners"`` (3D points at the 4 sole
    corners of each foot), ``"feet+hands"`` (welds), ``"feet+fingertips"`` (sole welds and a 3D
    point per fingertip), ``"fingertips"`` (points), ``"hand+fingers"`` (a weld of the hand and a
    point 4 cm along each finger frame's z axis).
    """
    spec = case.spec
    if which == "feet":
        return [wbc.WeldConstraint(f) for f in spec.feet]
    if which == "corners":
        return [wbc.PointConstraint(f, tuple(corner)) for f in spec.feet for corner in spec.sole.corners()]
    if which == "feet+hands":
        return [wbc.WeldConstraint(f) for f in spec.feet + spec.hands]
    if which == "feet+fingertips":
        return [wbc.WeldConstraint(f) for f in spec.feet] + [wbc.PointConstraint(f) for f in spec.fingertips]
    if which == "fingertips":
        return [wbc.PointConstraint(f) for f in spec.fingertips]
    if which == "hand+fingers":
        return [wbc.WeldConstraint(spec.hands[0])] + [wbc.PointConstraint(f, (0.0, 0.0, 0.04)) for f in spec.fingertips]
    raise ValueError(f"unknown constraint set {which!r}")


#: Random trees of the IIM and Delassus tests: (kind, seed, links), ``"tree"`` for :func:`tree_case`,
#: ``"bushy"`` for a tree in which most links hang from a random earlier link (many branching links).
CONSTRAINT_TREES = [("tree", seed, n) for seed, n in TREE_CASES] + [("bushy", 7, 16)]


def constrained_states(case: Case, constraints_at, seed: int, n: int):
    """``n`` random configurations of ``case`` with a constraint set each (``constraints_at(rng)``,
    drawn before the configuration) and Pinocchio's constraint Jacobian there: yields
    ``(i, where, constraints, q, J)``, ``where`` naming the case, the state and the rows."""
    rng = np.random.default_rng(seed)
    for i in range(n):
        constraints = constraints_at(rng)
        q = wbc.random_configuration(case.model, rng)
        J = oracle.constraint_jacobian(case.pin_model, q, constraints)
        yield i, f"{case.name} state {i} ({len(constraints)} constraints, {J.shape[0]} rows)", constraints, q, J


@functools.cache
def constraint_tree_case(kind: str, seed: int, n: int, floating_base: bool) -> Case:
    """A tree of :data:`CONSTRAINT_TREES` and its Pinocchio twin."""
    if kind == "tree":
        return tree_case(seed, n, floating_base)
    text = synthetic.random_tree_urdf(n, np.random.default_rng(seed), branching=0.9, name=f"{kind}_{seed}_{n}")
    model = wbc.load_urdf(text, floating_base)
    pm = oracle.build_model(text, floating_base, from_text=True)
    return Case(f"{kind}{seed}_{n}-{'floating' if floating_base else 'fixed'}", model, pm, None, text)


#: Constraint kinds :func:`random_constraints` draws from.
CONSTRAINT_KINDS = ("point", "point_local", "weld", "rows_local", "rows_aligned")


def _random_constraint(kind: str, frame: str, rng: np.random.Generator):
    RF = wbc.ReferenceFrame
    if kind in ("point", "point_local"):
        offset = tuple(float(x) for x in rng.uniform(-0.2, 0.2, 3))
        return wbc.PointConstraint(frame, offset, RF.LOCAL if kind == "point_local" else RF.LOCAL_WORLD_ALIGNED)
    if kind == "weld":
        return wbc.WeldConstraint(frame)
    rows = rng.normal(size=(int(rng.integers(1, 7)), 6))
    return wbc.LinkConstraint(frame, rows, RF.LOCAL if kind == "rows_local" else RF.LOCAL_WORLD_ALIGNED)


def random_constraints(model: wbc.Model, rng: np.random.Generator) -> list:
    """A random constraint set on a tree's moving bodies, in random order, with every kind of
    :data:`CONSTRAINT_KINDS`: three constraints on the deepest body (frames drawn with
    replacement, so sometimes the same frame twice), one on the root body (the free-flyer's, or
    the first moving body of a fixed base), one on an ancestor of the deepest body, one anywhere."""
    frames: dict[int, list[str]] = {}
    for f in model.frames:
        if f.joint > 0:
            frames.setdefault(f.joint, []).append(f.name)
    bodies = sorted(frames)
    deepest = max(bodies, key=lambda b: (len(model.support(b)), b))
    ancestors = [a for a in model.support(deepest)[:-1] if a in frames]
    picks = [deepest, deepest, deepest, bodies[0]]
    if ancestors:
        picks.append(int(rng.choice(ancestors)))
    picks.append(int(rng.choice(bodies)))
    kinds = [str(k) for k in rng.permutation(CONSTRAINT_KINDS)]
    kinds += [str(k) for k in rng.choice(CONSTRAINT_KINDS, len(picks))]
    constraints = [_random_constraint(kinds[k], str(rng.choice(frames[b])), rng) for k, b in enumerate(picks)]
    return [constraints[k] for k in rng.permutation(len(constraints))]


def constraint_tree_params(seed_base: int) -> list:
    """pytest params ``(build, seed)`` of the trees of :data:`CONSTRAINT_TREES`, floating and fixed
    (``build()`` gives the cached :class:`~tests.helpers.Case`), each with the seed
    ``seed_base + its seed + 7 * floating``."""
    return [
        pytest.param(
            functools.partial(constraint_tree_case, kind, seed, n, fb),
            seed_base + seed + 7 * fb,
            id=f"{kind}{seed}_{n}-{'floating' if fb else 'fixed'}",
        )
        for kind, seed, n in CONSTRAINT_TREES
        for fb in (True, False)
    ]
