"""Shared cases of the clustered-model tests: robots with transmissions and loops, their
Pinocchio spanning trees, random consistent states, and traced functions evaluated in CasADi's VM."""

from __future__ import annotations

import dataclasses
import functools

import casadi as ca
import numpy as np
import pinocchio as pin
import pytest

from benchmarks import pinocchio_adapter as oracle
from wbc import robots

#: Robots of the fast tests, and of the slow ones.
FAST = ("geared_chain", "belt_chain", "four_bar", "mini_cheetah", "tello")
SLOW = ("mit_humanoid", "jvrc1_rotors", "g1_parallel_ankle", "tello+armature", "four_bar+armature")
#: Builders of the loop robots without rotors (couplings are no Pinocchio constraint models), whose
#: loop closures Pinocchio 4's ``constraintDynamics`` takes as constraint models, as pytest params.
PURE_LOOP_ROBOTS = [
    pytest.param(lambda: robots.clustered.four_bar(geared=False), id="four_bar"),
    pytest.param(lambda: robots.clustered.g1_parallel_ankle(geared=False), id="g1_parallel_ankle"),
]
#: Random states per robot (the issue asks for at least 20).
N_STATES = 20


@dataclasses.dataclass(frozen=True)
class ClusterCase:
    name: str
    robot: robots.RobotSpec
    pm: pin.Model

    @property
    def model(self):
        return self.robot.model


@functools.cache
def case(name: str) -> ClusterCase:
    """A robot of :mod:`wbc.robots.clustered`; ``"<name>+armature"`` adds a random joint armature
    (MuJoCo's approximate rotor model) to every spanning-tree joint."""
    base, _, extra = name.partition("+")
    robot = robots.load(base)
    if extra == "armature":
        cm = robot.model
        arm = np.random.default_rng(7).uniform(0.0, 0.05, cm.tree.nv)
        robot = dataclasses.replace(robot, model=dataclasses.replace(cm, armature=arm))
    return ClusterCase(name, robot, oracle.cluster_model(robot.model))


def states(cm, n: int = N_STATES, seed: int = 0):
    """``n`` random ``(y, v, a, tau)``: consistent spanning configurations, independent vectors."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        y = cm.random_configuration(rng, scale=0.5)
        out.append((y, rng.normal(size=cm.nv), rng.normal(size=cm.nv), rng.normal(size=cm.nv)))
    return out


def evaluate(function: ca.Function, *args) -> list[np.ndarray]:
    """A traced function evaluated in CasADi's VM, outputs as numpy."""
    res = function(*[ca.DM(np.asarray(a, dtype=float)) for a in args])
    res = res if isinstance(res, (list, tuple)) else [res]
    return [np.array(r, dtype=float).squeeze(-1) if r.shape[1] == 1 else np.array(r, dtype=float) for r in res]


def span_tau(cm, tau: np.ndarray) -> np.ndarray:
    """Spanning-tree generalized forces that project to ``tau``: ``tau`` on the independent joints."""
    out = np.zeros(cm.tree.nv)
    out[cm.independent_v_indices] = tau
    return out
