"""Shared helpers of the tests (the fixtures are in conftest.py).

* cached loading of catalog robots and of random synthetic trees, with the matching Pinocchio
  model built from the very same URDF (file or text);
* :func:`assert_close`, the one closeness criterion used against Pinocchio and between the
  compiled and eager paths: ``|a - b| <= tol * max(1, max|b|)``;
* conversions between wbc's and Pinocchio's conventions (external forces, infinite limits).

Pinocchio is only an oracle here; wbc never imports it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin

import wbc
from benchmarks import pinocchio_adapter as oracle
from wbc import robots
from wbc.locomotion import FootShape
from wbc.robots import synthetic

#: Tolerance against Pinocchio (DESIGN.md §6).
TOL_PIN = 1e-9
#: Tolerance between compiled kernels and the eager API.
TOL_KERNEL = 1e-12

ROBOT_NAMES = robots.names(robots.RobotKind.TREE)
#: The sole of the locomotion tests (a Talos-sized rectangle), m.
FOOT_SHAPE = FootShape(0.2, 0.13)
#: Random synthetic trees used across the files: (seed, number of links).
TREE_CASES = ((1, 6), (2, 12), (3, 20))


def eom_residual(case, q, v, cmd, contacts=()) -> float:
    """max |M q̈ + h − Sᵀτ − Σ Jᵀf| of a step's command with Pinocchio, relative to max(1, |M q̈ + h|)
    (``contacts``: the controller's, whose forces ``cmd.forces`` holds)."""
    model, pm = case.model, case.pin_model
    data = pm.createData()
    generalized = np.zeros(model.nv)
    generalized[model.actuated_v_indices] = cmd.tau
    if contacts:
        pin.computeJointJacobians(pm, data, q)
        pin.updateFramePlacements(pm, data)
    for c in contacts:
        J = pin.getFrameJacobian(pm, data, case.pin_frame(c.frame), pin.LOCAL)
        generalized += J.T @ (c.force_basis() @ cmd.forces[c.name])
    lhs = pin.rnea(pm, data, q, v, cmd.qdd)
    return float(np.abs(lhs - generalized).max() / max(1.0, np.abs(lhs).max()))


def run_demo(script: str, args: list[str], out, timeout: float) -> tuple[dict, subprocess.CompletedProcess]:
    """Run ``demos/<script>`` with ``args`` writing into ``out`` (quietly): its ``summary.json`` and
    the finished process (its output captured)."""
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve().parents[1] / "demos" / script), *args]
        + ["--out", str(out), "--quiet"],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((Path(out) / "summary.json").read_text()), done


def assert_close(actual, expected, tol: float = TOL_PIN, what: str = "") -> None:
    """``|actual - expected| <= tol * max(1, max|expected|)`` entry-wise, with a readable failure."""
    a = np.asarray(actual, dtype=float)
    b = np.asarray(expected, dtype=float)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    assert np.all(np.isfinite(a)), f"{what}: non-finite values"
    scale = max(1.0, float(np.max(np.abs(b)))) if b.size else 1.0
    err = float(np.max(np.abs(a - b))) if a.size else 0.0
    if err > tol * scale:
        idx = np.unravel_index(int(np.argmax(np.abs(a - b))), a.shape)
        raise AssertionError(
            f"{what}: max |difference| {err:.3e} > {tol:.0e} x {scale:.3g} "
            f"(at {tuple(int(i) for i in idx)}: {a[idx]!r} vs {b[idx]!r})"
        )


@dataclasses.dataclass(frozen=True)
class Case:
    """A wbc model and the Pinocchio model of the same robot.

    Attributes:
        name: test id.
        model: the wbc model.
        pin_model: the Pinocchio model (with the catalog's OP frames added, so that every frame
            the tests query exists in both).
        spec: the catalog entry, or None for synthetic trees.
        urdf: the URDF file path or text.
    """

    name: str
    model: wbc.Model
    pin_model: pin.Model
    spec: robots.RobotSpec | None
    urdf: object

    def pin_frame(self, name: str) -> int:
        fid = self.pin_model.getFrameId(name)
        assert fid < self.pin_model.nframes, f"Pinocchio model of {self.name} has no frame {name!r}"
        return fid


@functools.cache
def robot_case(name: str, floating_base: bool | None = None) -> Case:
    """Catalog robot ``name`` and its Pinocchio twin (cached per process)."""
    spec = robots.load(name, floating_base=floating_base)
    fb = spec.model.floating_base
    pm = oracle.catalog_model(spec)
    return Case(f"{name}-{'floating' if fb else 'fixed'}", spec.model, pm, spec, spec.urdf)


@functools.cache
def tree_urdf(seed: int, n: int) -> str:
    """A random tree of ``n`` links (all joint kinds) drawn with ``seed``."""
    return synthetic.random_tree_urdf(n, np.random.default_rng(seed), name=f"tree_{seed}_{n}")


@functools.cache
def tree_case(seed: int, n: int, floating_base: bool) -> Case:
    """A random tree and its Pinocchio twin, both built from the same URDF text."""
    text = tree_urdf(seed, n)
    model = wbc.load_urdf(text, floating_base)
    pm = oracle.build_model(text, floating_base, from_text=True)
    return Case(f"tree{seed}_{n}-{'floating' if floating_base else 'fixed'}", model, pm, None, text)


#: Random trees with ball joints mixed with every other joint type: (seed, links, floating base).
BALL_TREE_CASES = ((11, 8, False), (12, 12, True), (13, 20, True), (14, 16, False))


@functools.cache
def ball_tree_case(seed: int, n: int, floating_base: bool) -> Case:
    """A random tree with ball joints (:func:`wbc.robots.synthetic.random_ball_tree`) and its
    Pinocchio twin (``JointModelSpherical``), built from the wbc model (URDF has no ball joints)."""
    model = synthetic.random_ball_tree(n, np.random.default_rng(seed), floating_base, name=f"ball_tree_{seed}_{n}")
    name = f"balltree{seed}_{n}-{'floating' if floating_base else 'fixed'}"
    return Case(name, model, oracle.from_wbc(model), None, None)


def ball_cluster_model(name: str, balls: tuple[str, ...]) -> wbc.ClusterModel:
    """A transmissions robot whose spanning tree has ``balls`` turned into ball joints (single-joint
    clusters among the declared loops and gears)."""
    cm = robots.load(name).model
    tree = synthetic.with_ball_joints(cm.tree, balls)
    return wbc.ClusterModel(tree, cm.clusters, name=f"{cm.name}_balls")


BALL_CLUSTER_CASES = {
    "four_bar": ("tool_joint",),  # a ball joint hanging from a loop
    "g1_parallel_ankle": ("waist_roll_joint", "left_hip_roll_joint", "right_shoulder_roll_joint"),
}


def random_state(model: wbc.Model, rng: np.random.Generator):
    """A random configuration and three random velocity-sized vectors (v, a, tau)."""
    q = wbc.random_configuration(model, rng)
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv), rng.normal(size=model.nv)


# ------------------------------------------------------------------ constraints (IIM, Delassus)
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


def compile_in(function, directory):
    """Compile ``function`` into ``directory``; these tests need a real C compiler."""
    kernel = wbc.codegen.compile_function(function, directory=directory)
    assert kernel.backend == "c", "these tests need a C compiler"
    return kernel
