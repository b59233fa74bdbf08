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
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pinocchio as pin
import pytest

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


def talos_standing(mu: float, com: tuple[float, float], posture: tuple[float, float], **options):
    """Talos on both soles (``SurfaceContact`` with friction ``mu``) with a CoM task and a posture
    task (``(weight, kp)`` each) and their controller (``options`` passed to it), no target set:
    ``(case, com_task, posture_task, controller)``."""
    from wbc import tasks

    case = robot_case("talos")
    model, spec = case.model, case.spec
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=mu) for f in spec.feet]
    com_task = tasks.CoMTask(weight=com[0], kp=com[1])
    posture_task = tasks.PostureTask(model, weight=posture[0], kp=posture[1])
    return case, com_task, posture_task, wbc.WholeBodyController(model, [com_task, posture_task], contacts, **options)


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


def lockstep(first, second, spec, steps: int, seed: int, push: tuple[int, float], single: bool = False):
    """Step two controllers of ``spec``'s robot on one state sequence, from ``spec.q0`` at rest
    (``single``: both first lift their second contact): yields ``(i, q, v, first's command, second's)``;
    the state then follows the second's q̈ for 1 ms, kicked at step ``push[0]`` by a random velocity
    (standard deviation ``push[1]``, m/s or rad/s, drawn with ``seed``)."""
    if single:
        for ctrl in (first, second):
            ctrl.deactivate_contact(ctrl.contacts[1].name)
    model = spec.model
    q, v = spec.q0.copy(), np.zeros(model.nv)
    rng = np.random.default_rng(seed)
    for i in range(steps):
        a, b = first.step(q, v), second.step(q, v)
        yield i, q, v, a, b
        v = v + 1e-3 * b.qdd + (push[1] * rng.standard_normal(model.nv) if i == push[0] else 0.0)
        q = wbc.integrate(model, q, v, 1e-3)


def assert_same_inputs(u, reference, Bhat, what: str, null_tol: float = 1e-8) -> None:
    """``u`` equals ``reference`` (n,) to 1e-9 of the largest input where the accelerations see it,
    and to ``null_tol`` in ``B̂``'s null space: inputs there (the two feet's internal wrench, torques
    that cancel it) move no acceleration, so no task pins them, only the 1e-8 regularization, and the
    two solvers' rounding moves them the most (measured on Talos's 2 levels: 0.8-1.2e-9 of the largest
    input there, about 1e-13 elsewhere; two kernels whose fused multiply-adds differ, about as much)."""
    scale = max(1.0, float(np.abs(reference).max()))
    d = np.asarray(u, float) - reference
    _, sigma, Vt = np.linalg.svd(np.asarray(Bhat, float))
    rank = int(np.sum(sigma > sigma[0] * 1e-12))
    null = Vt[rank:].T  # (n, n - rank): inputs no acceleration sees
    unseen = null @ (null.T @ d)
    assert np.abs(d - unseen).max() <= 1e-9 * scale, f"{what}: where the accelerations see it"
    assert np.abs(unseen).max() <= null_tol * scale, f"{what}: in B̂'s null space"


def assert_builtin_step(fast, ctypes_step, q, v) -> None:
    """``fast.step_objects`` (a compiled shortcut's or levels' one-call step, attached) is a builtin
    taking ``(q, v)``: it answers as the ctypes routine ``ctypes_step(address, q, v)`` (the same
    command, timings aside), refuses a wrong number of arguments with a TypeError, and answers
    NOT_VECTORS (nothing done) for what it does not read in C."""
    from wbc.codegen.builtins import is_builtin
    from wbc.control.shortcut import FEASIBLE, NOT_VECTORS

    assert is_builtin(fast.step_objects)
    assert fast.step_objects(q, v) == FEASIBLE
    out = fast.out.copy()
    assert ctypes_step(fast._ref, q, v) == FEASIBLE
    assert np.array_equal(fast.out[:-2], out[:-2])  # the same command (the timings aside)
    with pytest.raises(TypeError, match="two arguments"):
        fast.step_objects(q)
    assert fast.step_objects(list(q), v) == NOT_VECTORS


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


class ChainJoint(NamedTuple):
    """One joint of :func:`chain_urdf` and the link it carries (SI units)."""

    name: str
    kind: str  # "revolute" or "prismatic"
    link: str
    mass: float
    com_z: float  # the link's centre of mass above the joint
    inertia: tuple[float, float, float]  # principal moments about the centre of mass
    axis: str  # "x y z"
    limit: float  # the position range is ±limit (effort 50, velocity 5)


def chain_urdf(name: str, joints: Sequence[ChainJoint]) -> str:
    """A URDF chain: a 2 kg link ``base``, then each of ``joints`` carrying its link from the previous one."""
    base = '<mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>'
    parts, parent = [f'<link name="base"><inertial>{base}</inertial></link>'], "base"
    for j in joints:
        ixx, iyy, izz = j.inertia
        parts.append(
            f'<link name="{j.link}"><inertial><origin xyz="0 0 {j.com_z}"/><mass value="{j.mass}"/>'
            f'<inertia ixx="{ixx}" iyy="{iyy}" izz="{izz}" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            f'<joint name="{j.name}" type="{j.kind}"><parent link="{parent}"/><child link="{j.link}"/>'
            f'<axis xyz="{j.axis}"/><limit effort="50" velocity="5" lower="{-j.limit}" upper="{j.limit}"/></joint>'
        )
        parent = j.link
    return f'<robot name="{name}">' + "\n".join(parts) + "</robot>"


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


def random_states(case: Case, rng: np.random.Generator, n: int):
    """``n`` random states of ``case.model`` drawn from ``rng`` (:func:`random_state`): yields
    ``(where, (q, v, a, tau))``, ``where`` naming the case and the state for assertion messages."""
    for i in range(n):
        yield f"{case.name} state {i}", random_state(case.model, rng)


def oracle_cases(robots: Sequence[tuple[str, bool | None]], catalog_seed: int, tree_seed_offset: int) -> list:
    """The cases of a comparison with Pinocchio, as pytest params ``(build, seed)`` (``build()`` gives
    the cached :class:`Case`): the catalog ``robots`` ((name, floating base, None for the robot's
    default)) with ``catalog_seed``; the random trees of :data:`TREE_CASES` (every joint kind,
    unaligned axes), floating and fixed (the root link welded to the world, as Pinocchio's); the
    trees with ball joints of :data:`BALL_TREE_CASES`; a tree's seed is its own + ``tree_seed_offset``."""
    params = [pytest.param(functools.partial(robot_case, n, fb), catalog_seed, id=f"{n}-{fb}") for n, fb in robots]
    for seed, n in TREE_CASES:
        for fb, kind in ((True, "floating"), (False, "fixed")):
            params.append(
                pytest.param(
                    functools.partial(tree_case, seed, n, fb), seed + tree_seed_offset, id=f"tree{seed}_{n}-{kind}"
                )
            )
    return params + ball_tree_params(tree_seed_offset)


def ball_tree_params(seed_offset: int) -> list:
    """pytest params ``(build, seed)`` of the trees with ball joints of :data:`BALL_TREE_CASES`
    (``build()`` gives the cached :class:`Case`), each with its own seed + ``seed_offset``."""
    return [
        pytest.param(functools.partial(ball_tree_case, seed, n, fb), seed + seed_offset, id=f"balltree{seed}_{n}-{fb}")
        for seed, n, fb in BALL_TREE_CASES
    ]


def assert_kernel_matches(kernel, model: wbc.Model, eager, rng: np.random.Generator, shape=None, n: int = 3) -> None:
    """A compiled ``q -> (matrix,)`` kernel's output equals ``eager(q)`` (the uncompiled evaluation)
    to :data:`TOL_KERNEL` at ``n`` random configurations drawn from ``rng``, and has ``shape`` (when given)."""
    for i in range(n):
        q = wbc.random_configuration(model, rng)
        out = kernel(q)[0].copy()
        if shape is not None:
            assert out.shape == shape
        assert_close(out, eager(q), tol=TOL_KERNEL, what=f"state {i}")


def compile_in(function, directory):
    """Compile ``function`` into ``directory``; these tests need a real C compiler."""
    kernel = wbc.codegen.compile_function(function, directory=directory)
    assert kernel.backend == "c", "these tests need a C compiler"
    return kernel


def thread_mismatches(call, arguments: Sequence[tuple], expected: Sequence, rounds: int, same) -> list[int]:
    """Calls ``call(*arguments[k])`` ``rounds`` times on one thread per ``k``, all at once; the
    ``k`` of every call whose result ``same(result, expected[k])`` refuses (another thread's answer,
    or one half-written)."""
    wrong: list[int] = []

    def work(k: int) -> None:
        for _ in range(rounds):
            if not same(call(*arguments[k]), expected[k]):
                wrong.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(arguments))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return wrong


def aba_states(model: wbc.Model, seed: int, n: int = 4) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``n`` random ``(q, v, tau)`` of ``model``."""
    rng = np.random.default_rng(seed)
    return [
        (wbc.random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)) for _ in range(n)
    ]


def close_to_1e12(a: np.ndarray, b: np.ndarray) -> bool:
    return np.allclose(a, b, rtol=1e-12, atol=1e-12)
