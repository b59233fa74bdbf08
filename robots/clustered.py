"""Robots with actuator transmissions and kinematic loops (the cluster paper's experiments).

Each builder returns a :class:`~wbc.robots.RobotSpec` (the catalog's one record of a robot, loaded by
name with :func:`wbc.robots.load`) whose model is a :class:`wbc.ClusterModel`: its spanning tree holds
every rotor, crank and rod as a real body; ``q0`` is a spanning configuration with the loops closed
(standing, for legged robots); ``contacts`` are the contact points the operational-space experiments
use; legged robots have sole frames.

Sources of the numbers (every parameter below is one of these):

* ``[grbda]`` the cluster paper's own robot models, ROAM-Lab-ND/generalized_rbda (MIT licence),
  ``include/grbda/Robots/{MiniCheetah,MIT_Humanoid,Tello,JVRC1_Humanoid}.hpp`` and
  ``src/Robots/SerialChains/*``: masses, centres of mass, inertias, joint and rotor locations, gear
  and belt ratios, rotor inertias. Frames are simplified where noted ("-like" robots): joint
  frames are axis-aligned translations unless stated, rotors are coaxial with their joint.
* ``[jvrc]`` the JVRC-1 URDF of the ``jvrc-description`` PyPI package (links, joints, inertias).
* ``[erd]`` the Unitree G1 URDF of example-robot-data (``g1_29dof_rev_1_0.urdf``).
* ``[plausible]`` values chosen here, of the order of the real robots' (stated at each use).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

import wbc
from wbc.model.clusters import ClosureKind, ClusterModel, LoopClosure
from wbc.model.transmissions import Rotor, Transmission, build_cluster_model
from wbc.spatial.algebra import SE3

from .catalog import RobotSpec, Sole, robots_dir

__all__ = [
    "geared_chain",
    "belt_chain",
    "four_bar",
    "rod_chain",
    "mini_cheetah",
    "mit_humanoid",
    "tello",
    "jvrc1",
    "g1_parallel_ankle",
    "BUILDERS",
]


def _robot(name, model: ClusterModel, y0, contacts=(), feet=(), sole: Sole | None = None) -> RobotSpec:
    """The catalog record of a robot with transmissions (no URDF file: built here)."""
    return RobotSpec(name, model, None, y0, tuple(feet), sole, contacts=tuple(contacts))


# ------------------------------------------------------------------------------------ URDF text
def _f(x) -> str:
    return " ".join(f"{float(v):.17g}" for v in np.asarray(x, dtype=float).reshape(-1))


class _Urdf:
    """A small URDF writer (links with inertia, joints, fixed frames)."""

    def __init__(self, name: str) -> None:
        self.parts = [f'<robot name="{name}">']

    def link(self, name, mass=0.0, com=(0, 0, 0), inertia=None):
        if mass == 0.0 and inertia is None:
            self.parts.append(f'<link name="{name}"/>')
            return
        I = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=float)
        self.parts.append(
            f'<link name="{name}"><inertial><origin xyz="{_f(com)}"/><mass value="{mass:.17g}"/>'
            f'<inertia ixx="{I[0, 0]:.17g}" ixy="{I[0, 1]:.17g}" ixz="{I[0, 2]:.17g}" iyy="{I[1, 1]:.17g}" '
            f'iyz="{I[1, 2]:.17g}" izz="{I[2, 2]:.17g}"/></inertial></link>'
        )

    def joint(self, name, parent, child, xyz=(0, 0, 0), rpy=(0, 0, 0), axis=(0, 0, 1), lower=-2.5, upper=2.5):
        self.parts.append(
            f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{_f(xyz)}" rpy="{_f(rpy)}"/><axis xyz="{_f(axis)}"/>'
            f'<limit lower="{lower}" upper="{upper}" effort="100" velocity="30"/></joint>'
        )

    def frame(self, name, parent, xyz=(0, 0, 0), rpy=(0, 0, 0)):
        self.link(name)
        self.parts.append(
            f'<joint name="{name}_fixed" type="fixed"><parent link="{parent}"/><child link="{name}"/>'
            f'<origin xyz="{_f(xyz)}" rpy="{_f(rpy)}"/></joint>'
        )

    def _frame_text(self, name, parent, xyz=(0, 0, 0)) -> str:
        self.frame(name, parent, xyz)
        return "\n".join(self.parts[-2:])

    def text(self) -> str:
        return "\n".join(self.parts + ["</robot>"])


def _Rx(t):
    return np.array([[1, 0, 0], [0, math.cos(t), -math.sin(t)], [0, math.sin(t), math.cos(t)]])


def _Ry(t):
    return np.array([[math.cos(t), 0, math.sin(t)], [0, 1, 0], [-math.sin(t), 0, math.cos(t)]])


def _Rz(t):
    return np.array([[math.cos(t), -math.sin(t), 0], [math.sin(t), math.cos(t), 0], [0, 0, 1]])


#: Rotation taking a rotor's spin axis (z) onto each joint axis.
_SPIN = {"x": _Ry(math.pi / 2), "y": _Rx(-math.pi / 2), "z": np.eye(3)}
_AXIS = {"x": (1, 0, 0), "y": (0, 1, 0), "z": (0, 0, 1)}


def _rotor(spin_inertia: np.ndarray, mass: float, p, axis: str, parent: str | None = None, R=None) -> Rotor:
    """A rotor whose z axis is aligned with joint ``axis`` at ``p`` in its mounting link."""
    Rm = _SPIN[axis] if R is None else R @ _SPIN[axis]
    return Rotor(np.asarray(spin_inertia, dtype=float), mass, SE3(Rm, np.asarray(p, dtype=float).reshape(3, 1)), parent)


def _geared(joint: str, ratio: float, rotor: Rotor, name: str | None = None) -> Transmission:
    return Transmission.geared(
        joint, ratio, rotor.inertia, rotor.placement, rotor_mass=rotor.mass, rotor_parent=rotor.parent, name=name
    )


def _random_inertia(rng):
    mass = rng.uniform(0.5, 2.0)
    com = rng.uniform(-0.1, 0.1, 3)
    a, b = rng.uniform(0.005, 0.05, 2)
    c = rng.uniform(abs(a - b) + 1e-3, a + b)
    R = _Rz(rng.uniform(-3, 3)) @ _Ry(rng.uniform(-3, 3)) @ _Rx(rng.uniform(-3, 3))
    return mass, com, R @ np.diag([a, b, c]) @ R.T


def _mirror_y(com, inertia):
    """A body mirrored through the xz plane (the other side of a robot)."""
    F = np.diag([1.0, -1.0, 1.0])
    return F @ np.asarray(com, dtype=float), F @ np.asarray(inertia, dtype=float) @ F


def _contact_points(model: ClusterModel, contacts) -> tuple:
    for f, _ in contacts:
        model.tree.frame_id(f)
    return tuple((f, tuple(float(x) for x in o)) for f, o in contacts)


# ------------------------------------------------------------------------------------ serial chains
def geared_chain(n: int = 12, seed: int = 0) -> RobotSpec:
    """A chain of ``n`` links, each driven by a geared rotor mounted on the previous link ("GT").

    Random link placements, axes and inertias as [grbda]'s ``RevoluteChainWithRotor`` random model;
    rotors: spin inertia 1e-5-1e-4 kg m², 0.05 kg, gear ratios 5-10 [plausible]. Contact points: one
    per link at a random offset (the last one is the end-effector).
    """
    rng = np.random.default_rng(seed)
    u = _Urdf(f"geared_chain_{n}")
    u.link("link0", 1.0, (0, 0, 0), np.eye(3) * 0.01)
    transmissions, contacts = [], []
    for i in range(1, n + 1):
        m, com, I = _random_inertia(rng)
        u.link(f"link{i}", m, com, I)
        axis = "xyz"[int(rng.integers(3))]
        rpy = rng.uniform(-0.5, 0.5, 3)
        u.joint(f"joint{i}", f"link{i - 1}", f"link{i}", (0.0, 0.0, 0.25 if i > 1 else 0.0), rpy, _AXIS[axis])
        R = _Rz(rpy[2]) @ _Ry(rpy[1]) @ _Rx(rpy[0])
        spin = rng.uniform(1e-5, 1e-4)
        rotor = _rotor(np.diag([spin / 2, spin / 2, spin]), 0.05, (0.05, 0.0, 0.25 if i > 1 else 0.0), axis, None, R)
        transmissions.append(_geared(f"joint{i}", rng.uniform(5, 10), rotor))
        contacts.append((f"link{i}", tuple(rng.uniform(-0.1, 0.1, 3))))
    cm = build_cluster_model(u.text(), transmissions, floating_base=False)
    return _robot(f"geared_chain_{n}", cm, cm.neutral(), _contact_points(cm, contacts[-1:]))


def belt_chain(n: int = 12, seed: int = 0) -> RobotSpec:
    """A chain of ``n`` links (even) driven in pairs by parallel belts ("PBT"): both rotors of a
    pair sit on the link before it, as [grbda]'s ``RevolutePairChainWithRotor``; belt ratios 1-3,
    gear ratios 5-10, rotors as :func:`geared_chain` [plausible]."""
    if n % 2:
        raise ValueError("a belt chain has an even number of links")
    rng = np.random.default_rng(seed)
    u = _Urdf(f"belt_chain_{n}")
    u.link("link0", 1.0, (0, 0, 0), np.eye(3) * 0.01)
    transmissions, contacts = [], []
    for pair in range(n // 2):
        a, b = 2 * pair + 1, 2 * pair + 2
        rotors = []
        axes = []
        for i in (a, b):
            m, com, I = _random_inertia(rng)
            u.link(f"link{i}", m, com, I)
            axis = "xyz"[int(rng.integers(3))]
            axes.append(axis)
            rpy = rng.uniform(-0.5, 0.5, 3)
            u.joint(f"joint{i}", f"link{i - 1}", f"link{i}", (0.0, 0.0, 0.25 if i > 1 else 0.0), rpy, _AXIS[axis])
            spin = rng.uniform(1e-5, 1e-4)
            p = (0.05 * (1 + i - a), 0.0, 0.25 if a > 1 else 0.0)
            rotors.append(_rotor(np.diag([spin / 2, spin / 2, spin]), 0.05, p, axis, f"link{a - 1}"))
            contacts.append((f"link{i}", tuple(rng.uniform(-0.1, 0.1, 3))))
        belts = [[rng.uniform(1, 3)], [rng.uniform(1, 3), rng.uniform(1, 3)]]
        transmissions.append(
            Transmission.parallel_belt(
                (f"joint{a}", f"joint{b}"), rng.uniform(5, 10, 2), belts, rotors, name=f"pair{pair}"
            )
        )
    cm = build_cluster_model(u.text(), transmissions, floating_base=False)
    return _robot(f"belt_chain_{n}", cm, cm.neutral(), _contact_points(cm, contacts[-1:]))


def four_bar(floating_base: bool = False, geared: bool = True) -> RobotSpec:
    """A planar four-bar (crank, coupler, rocker; a geared rotor on the crank) on a base [plausible]:
    the smallest implicit loop, with a closure whose out-of-plane row is void (rows x, z)."""
    u = _Urdf("four_bar")
    u.link("base", 2.0, (0, 0, 0), np.diag([0.02, 0.02, 0.02]))
    u.link("crank", 0.5, (0.05, 0, 0), np.diag([0.001, 0.002, 0.001]))
    u.link("coupler", 0.3, (0.12, 0, 0), np.diag([0.001, 0.003, 0.002]))
    u.link("rocker", 0.4, (0, 0, 0.08), np.diag([0.002, 0.002, 0.001]))
    u.link("tool", 0.2, (0.05, 0, 0), np.diag([0.0005, 0.0005, 0.0005]))
    u.joint("crank_joint", "base", "crank", (0, 0, 0), (0, 0, 0), (0, 1, 0))
    u.joint("coupler_joint", "crank", "coupler", (0.1, 0, 0), (0, 0, 0), (0, 1, 0))
    u.joint("rocker_joint", "base", "rocker", (0.25, 0, 0), (0, 0, 0), (0, 1, 0))
    u.joint("tool_joint", "rocker", "tool", (0, 0, 0.16), (0, 0, 0), (1, 0, 0))
    u.frame("coupler_tip", "coupler", (0.25, 0, 0))
    u.frame("rocker_pin", "rocker", (0, 0, 0.1))
    rotor = _rotor(np.diag([2e-5, 2e-5, 5e-5]), 0.07, (0, 0, 0), "y", "base")
    closure = LoopClosure("coupler_tip", "rocker_pin", ClosureKind.POINT, (0, 2))
    t = Transmission(
        "four_bar",
        ("crank_joint",),
        (rotor,) if geared else (),
        ("crank_joint",),
        np.array([[6.0]]) if geared else None,
        extra_joints=("coupler_joint", "rocker_joint"),
        independent=("crank_joint",),
        closures=(closure,),
    )
    cm = build_cluster_model(u.text(), [t], floating_base=floating_base)
    y0 = cm.spanning_configuration(np.concatenate([[0, 0, 0, 0, 0, 0, 1] if floating_base else [], [0.2, 0.0]]))
    return _robot("four_bar", cm, y0, (("tool", (0.1, 0.0, 0.0)), ("coupler", (0.1, 0.0, 0.0))))


def rod_chain(n: int = 24, rods: int = 4, seed: int = 0) -> RobotSpec:
    """A planar chain of ``n`` links (revolute about y, 0.2 m apart along x, random inertias as
    :func:`geared_chain`, limits ±0.3 rad) braced by ``rods`` spatial rods [plausible]: rod ``r`` has a crank on link
    ``2r`` (revolute about y), a massless cross and a rod (a universal joint at the crank tip), and
    its end is held by a point closure (3 rows) on link ``2r + 2``, as each rod of G1's parallel
    ankle. Each rod's cluster is chain joints ``2r + 1, 2r + 2`` (independent) and its three rod
    joints (dependent): ``3 · rods`` loop-closure rows at the same ``n``, for cost-against-loops
    experiments. Needs ``2 · rods ≤ n``.
    """
    if not 0 <= 2 * rods <= n:
        raise ValueError(f"a chain of {n} links holds at most {n // 2} rods, not {rods}")
    rng = np.random.default_rng(seed)
    step, crank, h_pivot, h_end = 0.2, 0.08, 0.06, 0.02
    u = _Urdf(f"rod_chain_{n}_{rods}")
    u.link("link0", 2.0, (0, 0, 0), np.eye(3) * 0.02)
    for i in range(1, n + 1):
        m, com, I = _random_inertia(rng)
        u.link(f"link{i}", m, com, I)
        u.joint(
            f"joint{i}",
            f"link{i - 1}",
            f"link{i}",
            (step if i > 1 else 0.0, 0.0, 0.0),
            axis=(0, 1, 0),
            lower=-0.3,
            upper=0.3,
        )
    clusters = []
    for r in range(rods):
        p, tag = 2 * r, f"rod{r}"
        pivot = np.array([0.05, 0.0, h_pivot])
        tip = pivot + np.array([0.0, 0.0, crank])  # the crank stands across the rod: mid-range
        gap = step * ((p + 1) - max(p - 1, 0))  # link p + 2's origin from link p's, at zero configuration
        end = np.array([gap + 0.05, 0.0, h_end]) - tip  # the anchor on link p + 2, from the tip
        u.link(f"{tag}_crank", 0.05, (0, 0, crank / 2), np.diag([1e-5, 1e-5, 2e-6]))
        u.joint(f"{tag}_crank_joint", f"link{p}", f"{tag}_crank", pivot, axis=(0, 1, 0))
        u.link(f"{tag}_cross")
        u.joint(f"{tag}_u1", f"{tag}_crank", f"{tag}_cross", (0, 0, crank), axis=(1, 0, 0))
        u.link(f"{tag}_rod", 0.05, end / 2, np.diag([1e-4, 1e-4, 1e-6]))
        u.joint(f"{tag}_u2", f"{tag}_cross", f"{tag}_rod", (0, 0, 0), axis=(0, 1, 0))
        u.frame(f"{tag}_end", f"{tag}_rod", end)
        u.frame(f"{tag}_anchor", f"link{p + 2}", (0.05, 0.0, h_end))
        chain = (f"joint{p + 1}", f"joint{p + 2}")
        clusters.append(
            wbc.Cluster(
                tag,
                chain + (f"{tag}_crank_joint", f"{tag}_u1", f"{tag}_u2"),
                chain,
                (LoopClosure(f"{tag}_end", f"{tag}_anchor", ClosureKind.POINT),),
            )
        )
    text = u.text()
    cm = ClusterModel(wbc.load_urdf(text, False), tuple(clusters), name=f"rod_chain_{n}_{rods}", urdf=text)
    return _robot(cm.name, cm, cm.neutral(), (("link" + str(n), (0.1, 0.0, 0.0)),))


# ------------------------------------------------------------------------------------ Mini Cheetah
def mini_cheetah() -> RobotSpec:
    """A Mini-Cheetah-like quadruped: 4 legs (ab/ad x, hip y, knee y), each joint with a geared rotor;
    the knee rotor sits on the hip (thigh) link at the knee [grbda MiniCheetah.hpp: masses, inertias,
    locations, ratios 6/6/9.33, rotor 0.055 kg, diag(33, 33, 63)e-6 kg m²]. Frames are translations
    (no π rotation of the hip frame as in [grbda])."""
    u = _Urdf("mini_cheetah")
    u.link("body", 3.3, (0, 0, 0), np.diag([11253, 36203, 42673]) * 1e-6)
    rotor_I = np.diag([33, 33, 63]) * 1e-6
    abad_I = np.array([[381, 58, 0.45], [58, 560, 0.95], [0.45, 0.95, 444]]) * 1e-6
    hip_I = np.array([[1983, 245, 13], [245, 2103, 1.5], [13, 1.5, 408]]) * 1e-6
    knee_I = np.diag([245.0, 248.0, 6.0]) * 1e-6
    transmissions, contacts = [], []
    for leg, (sx, sy) in {"FR": (1, -1), "FL": (1, 1), "HR": (-1, -1), "HL": (-1, 1)}.items():

        def side(com, inertia, sy=sy):
            return _mirror_y(com, inertia) if sy < 0 else (np.asarray(com, float), inertia)

        c, I = side((0, 0.036, 0), abad_I)
        u.link(f"{leg}_abad", 0.54, c, I)
        u.joint(f"{leg}_abad_joint", "body", f"{leg}_abad", (0.19 * sx, 0.049 * sy, 0), axis=(1, 0, 0))
        c, I = side((0, 0.016, -0.02), hip_I)
        u.link(f"{leg}_hip", 0.634, c, I)
        u.joint(f"{leg}_hip_joint", f"{leg}_abad", f"{leg}_hip", (0, 0.062 * sy, 0), axis=(0, 1, 0))
        u.link(f"{leg}_knee", 0.064, (0, 0, -0.061), knee_I)
        u.joint(f"{leg}_knee_joint", f"{leg}_hip", f"{leg}_knee", (0, 0, -0.209), axis=(0, 1, 0))
        u.frame(f"{leg}_foot", f"{leg}_knee", (0, -0.004 * sy, -0.195))
        transmissions += [
            _geared(f"{leg}_abad_joint", 6.0, _rotor(rotor_I, 0.055, (0.125 * sx, 0.049 * sy, 0), "x", "body")),
            _geared(f"{leg}_hip_joint", 6.0, _rotor(rotor_I, 0.055, (0, 0.04 * sy, 0), "y", f"{leg}_abad")),
            _geared(f"{leg}_knee_joint", 9.33, _rotor(rotor_I, 0.055, (0, -0.004 * sy, 0), "y", f"{leg}_hip")),
        ]
        contacts.append((f"{leg}_foot", (0.0, 0.0, 0.0)))
    cm = build_cluster_model(u.text(), transmissions, floating_base=True)
    q = np.zeros(cm.nq)
    q[2], q[6] = 0.3, 1.0
    for k, name in enumerate(cm.joint_names[1:]):
        q[7 + k] = {"abad": 0.0, "hip": -0.8, "knee": 1.6}[name.split("_")[1]]
    return _robot(
        "mini_cheetah", cm, cm.spanning_configuration(q), _contact_points(cm, contacts), tuple(c for c, _ in contacts)
    )


# ------------------------------------------------------------------------------------ MIT Humanoid
_MIT = {
    # [grbda MIT_Humanoid.hpp]: mass (kg), COM (m), rotational inertia (kg m²) of the left side
    "torso": (
        8.52,
        (0.009896, 0.004771, 0.100522),
        [[0.172699, 0.001419, 0.004023], [0.001419, 0.105949, -0.001672], [0.004023, -0.001672, 0.091906]],
    ),
    "hip_rz": (
        0.84563,
        (-0.064842, -0.000036, -0.063090),
        [[0.0015373, 0.0000011, 0.0005578], [0.0000011, 0.0014252, 0.0000024], [0.0005578, 0.0000024, 0.0012028]],
    ),
    "hip_rx": (
        1.20868,
        (0.067232, -0.013018, 0.0001831),
        [[0.0017535, -0.0000063, -0.000080], [-0.0000063, 0.003338, -0.000013], [-0.000080, -0.000013, 0.0019927]],
    ),
    "hip_ry": (
        2.64093,
        (0.0132054, 0.0269864, -0.096021),
        [[0.0243761, 0.0000996, 0.0006548], [0.0000996, 0.0259015, 0.0026713], [0.0006548, 0.0026713, 0.0038929]],
    ),
    "knee": (
        0.35435,
        (0.00528, 0.0014762, -0.13201),
        [[0.003051, 0.0, 0.0000873], [0.0, 0.003033, 0.0000393], [0.0000873, 0.0000393, 0.0002529]],
    ),
    "ankle": (
        0.280951,
        (0.022623, 0.0, -0.012826),
        [[0.0000842, 0.0, -0.0000488], [0.0, 0.0007959, 0.0], [-0.0000488, 0.0, 0.0007681]],
    ),
    "shoulder_ry": (
        0.788506,
        (0.009265, 0.052623, -0.0001249),
        [[0.0013678, 0.0000266, 0.0000021], [0.0000266, 0.0007392, -0.0000012], [0.0000021, -0.0000012, 0.000884]],
    ),
    "shoulder_rx": (
        0.80125,
        (0.0006041, 0.0001221, -0.082361),
        [[0.0011524, 0.0000007, 0.0000396], [0.0000007, 0.0011921, 0.0000014], [0.0000396, 0.0000014, 0.0012386]],
    ),
    "shoulder_rz": (
        0.905588,
        (0.0001703, -0.016797, -0.060),
        [[0.0012713, 0.000001, -0.000008], [0.000001, 0.0017477, -0.0000225], [-0.000008, -0.0000225, 0.0008191]],
    ),
    "elbow": (
        0.34839,
        (-0.0059578, 0.000111, -0.0426735),
        [[0.001570, 0.0000002, 0.0000335], [0.0000002, 0.0016167, 0.000003], [0.0000335, 0.000003, 0.0000619]],
    ),
}
_MIT_SMALL_ROTOR = (0.05, np.diag([1.084e-4, 1.084e-4, 1.6841e-4]))  # [grbda]: kg, kg m² (spin about z)
_MIT_LARGE_ROTOR = (0.1, np.diag([3.443e-4, 3.443e-4, 5.548e-4]))


def mit_humanoid(gear_scale: float = 1.0) -> RobotSpec:
    """An MIT-Humanoid-like biped (24 DoF): geared rotors on the hips and arms, the knee and ankle
    driven by parallel belts from rotors on the thigh (hip_ry link) [grbda MIT_Humanoid.hpp:
    every mass, inertia, location, rotor, gear ratio 6 (elbow 9) and belt ratios knee (2), ankle
    (2, 1)]. The right side is the mirror image of the left, as in [grbda]. Sole: 0.15 x 0.06 m
    under the ankle link (toe 0.1 m, heel 0.05 m, height 0.041 m [grbda]; width [plausible]).
    ``gear_scale`` multiplies every gear ratio (belt ratios unchanged), for sweeps."""
    u = _Urdf("mit_humanoid")
    m, c, I = _MIT["torso"]
    u.link("torso", m, c, I)
    transmissions, contacts, feet = [], [], []
    hip_rz_pitch, hip_rx_pitch = -0.174533, 0.436332
    hip_ry_pitch = -(hip_rx_pitch + hip_rz_pitch)
    for side, sy in (("right", -1.0), ("left", 1.0)):

        def body(name, key, parent, xyz, pitch, axis, rotor, rotor_xyz, ratio, side=side, sy=sy):
            mass, com, inertia = _MIT[key]
            if sy < 0:
                com, inertia = _mirror_y(com, np.array(inertia))
            u.link(f"{side}_{name}_link", mass, com, inertia)
            p = (xyz[0], sy * abs(xyz[1]) if xyz[1] else 0.0, xyz[2])
            u.joint(f"{side}_{name}", parent, f"{side}_{name}_link", p, (0, pitch, 0), _AXIS[axis])
            if rotor is not None:
                rp = (rotor_xyz[0], sy * abs(rotor_xyz[1]) if rotor_xyz[1] else 0.0, rotor_xyz[2])
                transmissions.append(
                    _geared(
                        f"{side}_{name}", ratio * gear_scale, _rotor(rotor[1], rotor[0], rp, axis, parent, _Ry(pitch))
                    )
                )

        # leg: locations as [grbda] (y of the right side as given there, left mirrored)
        body(
            "hip_rz",
            "hip_rz",
            "torso",
            (-0.00565, 0.082, -0.05735),
            hip_rz_pitch,
            "z",
            _MIT_SMALL_ROTOR,
            (-0.00842837, 0.082, -0.041593),
            6.0,
        )
        body(
            "hip_rx",
            "hip_rx",
            f"{side}_hip_rz_link",
            (-0.06435, 0.0, -0.07499),
            hip_rx_pitch,
            "x",
            _MIT_SMALL_ROTOR,
            (-0.0827, 0.0, -0.066436),
            6.0,
        )
        body(
            "hip_ry",
            "hip_ry",
            f"{side}_hip_rx_link",
            (0.071, 0.0018375, 0.0),
            hip_ry_pitch,
            "y",
            _MIT_LARGE_ROTOR,
            (0.071, 0.024, 0.0),
            6.0,
        )
        body("knee", "knee", f"{side}_hip_ry_link", (0.0, 0.0, -0.267), 0.0, "y", None, None, None)
        body("ankle", "ankle", f"{side}_knee_link", (0.0, 0.0, -0.2785), 0.0, "y", None, None, None)
        thigh = f"{side}_hip_ry_link"
        knee_rotor = _rotor(_MIT_LARGE_ROTOR[1], _MIT_LARGE_ROTOR[0], (0.013, sy * 0.0497, -0.0178), "y", thigh)
        ankle_rotor = _rotor(_MIT_SMALL_ROTOR[1], _MIT_SMALL_ROTOR[0], (0.01563, sy * 0.0454, -0.13354), "y", thigh)
        transmissions.append(
            Transmission.parallel_belt(
                (f"{side}_knee", f"{side}_ankle"),
                (6.0 * gear_scale, 6.0 * gear_scale),
                ((2.0,), (2.0, 1.0)),
                (knee_rotor, ankle_rotor),
                f"{side}_knee_ankle",
            )
        )
        contacts += [(f"{side}_ankle_link", (0.1, 0.0, -0.041)), (f"{side}_ankle_link", (-0.05, 0.0, -0.041))]
        u.frame(f"{side}_sole", f"{side}_ankle_link", (0.025, 0.0, -0.041))
        feet.append(f"{side}_sole")
        # arm
        body(
            "shoulder_ry",
            "shoulder_ry",
            "torso",
            (0.01346, 0.17608, 0.24657),
            0.0,
            "y",
            _MIT_SMALL_ROTOR,
            (0.01346, 0.16, 0.24657),
            6.0,
        )
        body(
            "shoulder_rx",
            "shoulder_rx",
            f"{side}_shoulder_ry_link",
            (0.0, 0.0575, 0.0),
            0.0,
            "x",
            _MIT_SMALL_ROTOR,
            (0.0, 0.0575, 0.0),
            6.0,
        )
        body(
            "shoulder_rz",
            "shoulder_rz",
            f"{side}_shoulder_rx_link",
            (0.0, 0.0, -0.1025),
            0.0,
            "z",
            _MIT_SMALL_ROTOR,
            (0.0, 0.0, -0.1025),
            6.0,
        )
        body(
            "elbow",
            "elbow",
            f"{side}_shoulder_rz_link",
            (0.0, 0.0, -0.1455),
            0.0,
            "y",
            _MIT_SMALL_ROTOR,
            (0.0, 0.0325, -0.06),
            9.0,
        )
    cm = build_cluster_model(u.text(), transmissions, floating_base=True)
    q = np.zeros(cm.nq)
    q[6] = 1.0
    for k, name in enumerate(cm.joint_names[1:]):
        q[7 + k] = {"hip_ry": -0.4, "knee": 0.8, "ankle": -0.4, "elbow": 0.5}.get(name.split("_", 1)[1], 0.0)
    y = _stand(cm, cm.spanning_configuration(q), feet)
    return _robot("mit_humanoid", cm, y, _contact_points(cm, contacts), tuple(feet), Sole(0.15, 0.06))


def _stand(cm: ClusterModel, y: np.ndarray, feet) -> np.ndarray:
    """Shift the free-flyer height so that the lowest sole is at z = 0."""
    y = y.copy()
    low = min(wbc.eager.frame_placement(cm.tree, y, f)[2, 3] for f in feet)
    y[2] -= low
    return y


# ------------------------------------------------------------------------------------ Tello
def tello() -> RobotSpec:
    """A Tello-like biped (torso and two legs): per leg a geared hip clamp (yaw), a hip differential
    (two rotors on the clamp drive gimbal roll and thigh pitch, ``N (q_roll ± q_pitch)``), a geared
    knee and a four-bar ankle whose crank is driven, through the knee axis, by a rotor on the thigh.

    Masses, inertias, locations, rotor and gear ratio 6 from [grbda Tello.hpp]; Tello's linkage
    differentials are replaced by a bevel differential at the hip and a belt plus four-bar at the
    knee-ankle; the crank (20 g, 30 mm) and rod (20 g) are [plausible]."""
    u = _Urdf("tello")
    u.link(
        "torso",
        2.3008,
        (0.0073, -0.0013, -0.0023),
        [[0.0366, 0.0, -0.0006], [0.0, 0.0142, -0.0002], [-0.0006, -0.0002, 0.0291]],
    )
    rotor_I = np.diag([2.5984e-5, 2.5984e-5, 5.1512e-5])
    rm = 0.07
    transmissions, contacts, feet = [], [], []
    for side, sy in (("left", 1.0), ("right", -1.0)):
        clamp, gimbal, thigh, shin, foot = (f"{side}_{n}" for n in ("hip_clamp", "gimbal", "thigh", "shin", "foot"))
        u.link(
            clamp, 1.3289, (-0.0010, 0.0, -0.0069), [[0.0032, 0.0, 0.0001], [0.0, 0.0033, 0.0], [0.0001, 0.0, 0.0027]]
        )
        u.joint(f"{clamp}_joint", "torso", clamp, (0.0, sy * 0.126, -0.087), axis=(0, 0, 1))
        transmissions.append(
            _geared(f"{clamp}_joint", 6.0, _rotor(rotor_I, rm, (0.0, sy * 0.126, -0.026), "z", "torso"))
        )
        u.link(gimbal, 0.4433, (-0.0027, 0.0, 0.0258), np.diag([0.0018, 0.0017, 0.0015]))
        u.joint(f"{gimbal}_joint", clamp, gimbal, (0.0, 0.0, -0.1425), axis=(1, 0, 0))
        u.link(
            thigh,
            1.5424,
            (0.003, -0.0001, -0.0323),
            [[0.0103, 0.0, -0.0005], [0.0, 0.0097, 0.0], [-0.0005, 0.0, 0.0027]],
        )
        u.joint(f"{thigh}_joint", gimbal, thigh, (0.0, 0.0, 0.0), axis=(0, 1, 0))
        hip_rotors = [_rotor(rotor_I, rm, (0.0, s * 0.04, -0.1425), "y", clamp) for s in (1.0, -1.0)]
        transmissions.append(
            Transmission.differential(
                (f"{gimbal}_joint", f"{thigh}_joint"), 6.0, hip_rotors, f"{side}_hip_differential"
            )
        )
        u.link(
            shin,
            0.3072,
            (0.0047, -0.0003, -0.1043),
            [[0.0054, 0.0, -0.0002], [0.0, 0.0054, 0.0], [-0.0002, 0.0, 0.0001]],
        )
        u.joint(f"{shin}_joint", thigh, shin, (0.0, 0.0, -0.2268), axis=(0, 1, 0))
        u.link(
            foot,
            0.1025,
            (0.0042, 0.0, -0.0251),
            np.array([[0.094, 0.0, -0.0038], [0.0, 0.1773, 0.0], [-0.0038, 0.0, 0.0901]]) * 1e-3,
        )
        u.joint(f"{foot}_joint", shin, foot, (0.0, 0.0, -0.26), axis=(0, 1, 0))
        # four-bar: crank behind the knee, rod down to a lever behind the ankle
        u.link(f"{side}_crank", 0.02, (-0.015, 0.0, 0.0), np.diag([2e-6, 6e-6, 6e-6]))
        u.joint(f"{side}_crank_joint", shin, f"{side}_crank", (-0.03, 0.0, -0.03), axis=(0, 1, 0), lower=-3, upper=3)
        u.frame(f"{side}_crank_tip", f"{side}_crank", (-0.03, 0.0, 0.0))
        rod = np.array([0.03, 0.0, -0.23])
        u.link(f"{side}_rod", 0.02, rod / 2, np.diag([9e-5, 9e-5, 1e-6]))
        u.joint(
            f"{side}_rod_joint", f"{side}_crank", f"{side}_rod", (-0.03, 0.0, 0.0), axis=(0, 1, 0), lower=-3, upper=3
        )
        u.frame(f"{side}_rod_end", f"{side}_rod", rod)
        u.frame(f"{side}_foot_lever", foot, (-0.03, 0.0, 0.0))
        knee_rotor = _rotor(rotor_I, rm, (0.0, sy * 0.02655, -0.2268), "y", thigh)
        ankle_rotor = _rotor(rotor_I, rm, (0.0, -sy * 0.02655, -0.2268), "y", thigh)
        transmissions.append(
            Transmission(
                f"{side}_knee_ankle",
                (f"{shin}_joint", f"{side}_crank_joint"),
                (knee_rotor, ankle_rotor),
                (f"{shin}_joint", f"{shin}_joint"),
                np.array([[6.0, 0.0], [6.0, 6.0]]),  # the ankle rotor's belt runs over the knee axis
                extra_joints=(f"{side}_rod_joint", f"{foot}_joint"),
                independent=(f"{shin}_joint", f"{foot}_joint"),
                closures=(LoopClosure(f"{side}_rod_end", f"{side}_foot_lever", ClosureKind.POINT, (0, 2)),),
            )
        )
        u.frame(f"{side}_sole", foot, (0.025, 0.0, -0.041))
        feet.append(f"{side}_sole")
        contacts += [(foot, (0.1, 0.0, -0.041)), (foot, (-0.05, 0.0, -0.041))]
    cm = build_cluster_model(u.text(), transmissions, floating_base=True)
    q = np.zeros(cm.nq)
    q[6] = 1.0
    for k, name in enumerate(cm.joint_names[1:]):
        q[7 + k] = {"thigh_joint": -0.4, "shin_joint": 0.8, "foot_joint": -0.4}.get(name.split("_", 1)[1], 0.0)
    y = _stand(cm, cm.spanning_configuration(q), feet)
    return _robot("tello", cm, y, _contact_points(cm, contacts), tuple(feet), Sole(0.15, 0.05))


# ------------------------------------------------------------------------------------ JVRC-1
def _jvrc_urdf() -> Path:
    try:
        import jvrc_description
    except ImportError:  # pragma: no cover - depends on the extras installed
        raise wbc.ModelError("JVRC-1 needs the jvrc-description package (the 'robots' extra)") from None
    return Path(jvrc_description.__file__).parent / "urdf" / "jvrc1.urdf"


_JVRC_FINGERS = ("UTHUMB", "LTHUMB", "UINDEX", "LINDEX", "ULITTLE", "LLITTLE")


def jvrc1() -> RobotSpec:
    """JVRC-1 [jvrc] with its 12 finger joints fixed (38 DoF with the floating base, as in the
    paper) and a geared rotor on each of its 32 joints: ratio 6, 0.07 kg, diag(2e-5, 2e-5, 5e-5)
    kg m² [grbda JVRC1_Humanoid.hpp], coaxial with the joint, on the joint's parent link."""
    root = ET.fromstring(_jvrc_urdf().read_text())
    for j in root.findall("joint"):
        if any(j.get("name", "").endswith(f) for f in _JVRC_FINGERS) and j.get("type") == "revolute":
            j.set("type", "fixed")
    text = ET.tostring(root, encoding="unicode")
    rotor_I = np.diag([2e-5, 2e-5, 5e-5])
    joints = [j.get("name") for j in root.findall("joint") if j.get("type") == "revolute"]
    transmissions = [Transmission.geared(j, 6.0, rotor_I, rotor_mass=0.07) for j in joints]
    cm = build_cluster_model(text, transmissions, floating_base=True)
    feet = ("R_ANKLE_P_S", "L_ANKLE_P_S")
    q = np.zeros(cm.nq)
    q[6] = 1.0
    y = _stand(cm, cm.spanning_configuration(q), feet)
    contacts = tuple((f, (0.0, 0.0, 0.0)) for f in feet)
    return _robot("jvrc1_rotors", cm, y, _contact_points(cm, contacts), feet, Sole(0.2, 0.1))


# ------------------------------------------------------------------------------------ G1 with parallel ankles
#: Geometry of the G1-like parallel ankle [plausible, of the order of Unitree's]: crank pivots
#: 0.2 m above the ankle pitch axis, ±0.025 m apart; crank arms 0.04 m pointing backwards; rods to
#: points 0.04 m behind and 0.02 m below the ankle roll axis; crank 0.05 kg, rod 0.03 kg; each
#: crank driven by a rotor (ratio 10, spin inertia 6e-5 kg m²) on the knee link.
_G1_ANKLE = {"height": 0.2, "half_width": 0.025, "crank": 0.04, "behind": 0.04, "below": 0.02, "ratio": 10.0}


#: Geared rotors of the G1-like humanoid's other leg and waist joints (``joint_rotors=True``):
#: (gear ratio, rotor spin inertia kg m²) [plausible]: the reflected inertias N² I_r are 0.0102 and
#: 0.0251 kg m², the order of Unitree's published armature values for G1's two leg motor sizes.
_G1_ROTORS = {
    "hip_pitch_joint": (14.3, 4.98e-5),
    "hip_roll_joint": (22.5, 4.96e-5),
    "hip_yaw_joint": (14.3, 4.98e-5),
    "knee_joint": (22.5, 4.96e-5),
}
_G1_WAIST_ROTOR = ("waist_yaw_joint", 14.3, 4.98e-5)


def g1_parallel_ankle(floating_base: bool = True, geared: bool = True, joint_rotors: bool = False) -> RobotSpec:
    """A G1-like humanoid [erd] whose ankle pitch and roll are driven by two cranks on the knee
    link through two rods (universal joint at the crank, ball joint at the foot: a 3D loop
    closure each), each crank geared to a rotor. Independent coordinates: the URDF's ankle pitch
    and roll joints (so the joint names are G1's); the motors act on the cranks, see
    :func:`wbc.model.transmissions` and the cluster's actuator map. Sole frames as the catalog's
    ``g1`` (``left_sole``, ``right_sole``). With ``joint_rotors`` the hips, knees and waist yaw are
    geared too, each through a coaxial rotor on its parent link (:data:`_G1_ROTORS`)."""
    urdf = robots_dir() / "g1_description" / "urdf" / "g1_29dof_rev_1_0.urdf"
    if not urdf.exists():
        raise wbc.ModelError(f"{urdf}: not found (install the 'robots' extra: example-robot-data)")
    text = urdf.read_text()
    tree = wbc.load_urdf(text, False)
    G = _G1_ANKLE
    parts, transmissions, feet = [], [], []
    for side in ("left", "right"):
        knee, roll = f"{side}_knee_link", f"{side}_ankle_roll_link"
        pitch_j = tree.joints[tree.joint_id(f"{side}_ankle_pitch_joint")]
        roll_j = tree.joints[tree.joint_id(f"{side}_ankle_roll_joint")]
        p_pitch = np.asarray(pitch_j.placement.p, float).reshape(3)  # in the knee link, rotation identity
        p_roll = p_pitch + np.asarray(pitch_j.placement.R, float) @ np.asarray(roll_j.placement.p, float).reshape(3)
        u = _Urdf("x")
        closures, extra = [], []
        rotors = []
        for k, s in enumerate((1.0, -1.0)):
            tag = f"{side}_ankle_rod{k}"
            pivot = p_pitch + np.array([0.0, s * G["half_width"], G["height"]])
            tip = pivot + np.array([-G["crank"], 0.0, 0.0])
            foot_pt = p_roll + np.array([-G["behind"], s * G["half_width"], -G["below"]])
            u.link(f"{tag}_crank", 0.05, (-G["crank"] / 2, 0, 0), np.diag([2e-6, 1e-5, 1e-5]))
            u.joint(f"{tag}_crank_joint", knee, f"{tag}_crank", pivot, axis=(0, 1, 0), lower=-3, upper=3)
            u.link(f"{tag}_cross")
            u.joint(f"{tag}_u1", f"{tag}_crank", f"{tag}_cross", (-G["crank"], 0, 0), axis=(1, 0, 0), lower=-3, upper=3)
            d = foot_pt - tip
            u.link(f"{tag}_rod", 0.03, d / 2, np.diag([1e-4, 1e-4, 1e-6]))
            u.joint(f"{tag}_u2", f"{tag}_cross", f"{tag}_rod", (0, 0, 0), axis=(0, 1, 0), lower=-3, upper=3)
            u.frame(f"{tag}_end", f"{tag}_rod", d)
            # the ball joint's point on the foot (ankle roll link), at the zero configuration
            u.frame(f"{tag}_ball", roll, np.asarray(roll_j.placement.R, float).T @ (foot_pt - p_roll))
            closures.append(LoopClosure(f"{tag}_end", f"{tag}_ball", ClosureKind.POINT))
            extra += [f"{tag}_crank_joint", f"{tag}_u1", f"{tag}_u2"]
            rotors.append(_rotor(np.diag([3e-5, 3e-5, 6e-5]), 0.0, pivot, "y", knee))
        parts.append("\n".join(u.parts[1:]))
        transmissions.append(
            Transmission(
                f"{side}_ankle",
                (f"{side}_ankle_rod0_crank_joint", f"{side}_ankle_rod1_crank_joint"),
                tuple(rotors) if geared else (),
                (f"{side}_ankle_rod0_crank_joint", f"{side}_ankle_rod1_crank_joint"),
                np.diag([G["ratio"], G["ratio"]]) if geared else None,
                extra_joints=tuple(e for e in extra if not e.endswith("crank_joint"))
                + (f"{side}_ankle_pitch_joint", f"{side}_ankle_roll_joint"),
                independent=(f"{side}_ankle_pitch_joint", f"{side}_ankle_roll_joint"),
                closures=tuple(closures),
            )
        )
        sole = np.array([0.035, 0.0, -0.035])  # the catalog's g1 sole offset
        parts.append(_Urdf("x")._frame_text(f"{side}_sole", roll, sole))
        feet.append(f"{side}_sole")
    if joint_rotors:
        for side in ("left", "right"):
            for joint, (ratio, spin) in _G1_ROTORS.items():
                transmissions.append(Transmission.geared(f"{side}_{joint}", ratio, spin))  # a disc on the axis
        joint, ratio, spin = _G1_WAIST_ROTOR
        transmissions.append(Transmission.geared(joint, ratio, spin))
    text = text.replace("</robot>", "\n".join(parts) + "\n</robot>")
    cm = build_cluster_model(text, transmissions, floating_base=floating_base, name="g1_parallel_ankle")
    q = np.zeros(cm.nq)
    if floating_base:
        q[6] = 1.0
    names = cm.joint_names[1:] if floating_base else cm.joint_names
    for k, name in enumerate(names):
        off = k + (7 if floating_base else 0)
        q[off] = {"hip_pitch_joint": -0.3, "knee_joint": 0.6, "ankle_pitch_joint": -0.3}.get(
            name.split("_", 1)[-1], 0.0
        )
    y = cm.spanning_configuration(q)
    if floating_base:
        y = _stand(cm, y, feet)
    contacts = tuple((f, tuple(c)) for f in feet for c in Sole(0.17, 0.06).corners())
    return _robot("g1_parallel_ankle", cm, y, contacts, tuple(feet), Sole(0.17, 0.06))


#: The catalog names of these robots (:func:`wbc.robots.load`) and their builders (default arguments).
BUILDERS = {
    "geared_chain": geared_chain,
    "belt_chain": belt_chain,
    "four_bar": four_bar,
    "mini_cheetah": mini_cheetah,
    "mit_humanoid": mit_humanoid,
    "tello": tello,
    "jvrc1_rotors": jvrc1,
    "g1_parallel_ankle": g1_parallel_ankle,
}
