"""Shared fixtures and helpers of the foundation tests.

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
from typing import Optional

import numpy as np
import pinocchio as pin

import robots
import wbc
from robots import synthetic

#: Tolerance against Pinocchio (DESIGN.md §6).
TOL_PIN = 1e-9
#: Tolerance between compiled kernels and the eager API.
TOL_KERNEL = 1e-12

ROBOT_NAMES = robots.names()
#: Random synthetic trees used across the files: (seed, number of links).
TREE_CASES = ((1, 6), (2, 12), (3, 20))


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


def pin_limit(x) -> np.ndarray:
    """Pinocchio's limits with its ±max-double sentinels turned into ±inf."""
    x = np.array(x, dtype=float)
    x[x >= 1e308] = np.inf
    x[x <= -1e308] = -np.inf
    return x


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
    spec: Optional[robots.RobotSpec]
    urdf: object

    def pin_frame(self, name: str) -> int:
        fid = self.pin_model.getFrameId(name)
        assert fid < self.pin_model.nframes, f"Pinocchio model of {self.name} has no frame {name!r}"
        return fid


def build_pin_model(urdf, floating_base: bool, from_text: bool = False) -> pin.Model:
    """The Pinocchio model of a URDF file (or text), with a free-flyer root when ``floating_base``."""
    if from_text:
        return pin.buildModelFromXML(urdf, pin.JointModelFreeFlyer()) if floating_base else pin.buildModelFromXML(urdf)
    path = str(urdf)
    return pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating_base else pin.buildModelFromUrdf(path)


@functools.lru_cache(maxsize=None)
def robot_case(name: str, floating_base: Optional[bool] = None) -> Case:
    """Catalog robot ``name`` and its Pinocchio twin (cached per process)."""
    spec = robots.load(name, floating_base=floating_base)
    fb = spec.model.floating_base
    pm = build_pin_model(spec.urdf, fb)
    # The catalog's extra frames, built from the catalog's own numbers on Pinocchio's side.
    for fname, parent, offset in spec.extra_frames:
        pf = pm.frames[pm.getFrameId(parent)]
        placement = pf.placement * pin.SE3(np.eye(3), np.array(offset, dtype=float))
        pm.addFrame(pin.Frame(fname, pf.parentJoint, pm.getFrameId(parent), placement, pin.FrameType.OP_FRAME))
    return Case(f"{name}-{'floating' if fb else 'fixed'}", spec.model, pm, spec, spec.urdf)


@functools.lru_cache(maxsize=None)
def tree_urdf(seed: int, n: int) -> str:
    """A random tree of ``n`` links (all joint kinds) drawn with ``seed``."""
    return synthetic.random_tree_urdf(n, np.random.default_rng(seed), name=f"tree_{seed}_{n}")


@functools.lru_cache(maxsize=None)
def tree_case(seed: int, n: int, floating_base: bool) -> Case:
    """A random tree and its Pinocchio twin, both built from the same URDF text."""
    text = tree_urdf(seed, n)
    model = wbc.load_urdf(text, floating_base)
    pm = build_pin_model(text, floating_base, from_text=True)
    return Case(f"tree{seed}_{n}-{'floating' if floating_base else 'fixed'}", model, pm, None, text)


def random_state(model: wbc.Model, rng: np.random.Generator):
    """A random configuration and three random velocity-sized vectors (v, a, tau)."""
    q = wbc.random_configuration(model, rng)
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv), rng.normal(size=model.nv)


def pin_fext(case: Case, fext: dict[str, np.ndarray]) -> pin.StdVec_Force:
    """wbc's ``{frame: LOCAL wrench [f; n]}`` as Pinocchio's per-joint forces in the joint frames."""
    pm = case.pin_model
    out = [pin.Force.Zero() for _ in range(pm.njoints)]
    for name, w in fext.items():
        frame = pm.frames[case.pin_frame(name)]
        out[frame.parentJoint] = out[frame.parentJoint] + frame.placement.act(pin.Force(np.asarray(w, dtype=float)))
    forces = pin.StdVec_Force()
    for f in out:
        forces.append(f)
    return forces


def symmetrized(M: np.ndarray) -> np.ndarray:
    """A symmetric matrix from the upper triangle of ``M`` (Pinocchio's CRBA fills only that)."""
    return np.triu(M) + np.triu(M, 1).T
