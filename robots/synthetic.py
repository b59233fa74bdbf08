"""Synthetic mechanisms, as URDF text (so Pinocchio can load the very same robot).

* :func:`chain_urdf`: a serial chain of revolute links (the PV-OSIMr paper's Fig. 4 chains);
* :func:`random_tree_urdf`: a random tree with every supported joint type, random placements
  and random physically consistent inertias (for cross-validation);
* :func:`stem_with_branches_urdf`: the PV-OSIMr paper's Fig. 3 mechanism, a stem with branches of
  7 links on either side;
* :func:`with_ball_joints`, :func:`random_ball_tree`: models with spherical (ball) joints, which
  URDF cannot describe, built from the above by turning chosen joints into ball joints.

Link ``i`` is named ``link{i}``, its parent joint ``joint{i}``; branch tips of the stem mechanism
are named ``tip_{side}{k}``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

import wbc

__all__ = [
    "chain_urdf",
    "random_tree_urdf",
    "stem_with_branches_urdf",
    "chain",
    "random_tree",
    "stem_with_branches",
    "with_ball_joints",
    "random_ball_tree",
    "JOINT_KINDS",
]

#: Joint kinds random trees draw from: URDF type plus, for revolute joints, the axis kind.
JOINT_KINDS = ("revolute_x", "revolute_y", "revolute_z", "revolute_unaligned", "continuous", "prismatic", "fixed")


def _fmt(x: Sequence[float]) -> str:
    return " ".join(f"{v:.17g}" for v in x)


def _random_inertia(rng: np.random.Generator) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """Mass, COM, rpy of the principal axes and principal moments of a physically consistent body."""
    mass = rng.uniform(0.2, 3.0)
    com = rng.uniform(-0.1, 0.1, 3)
    # principal moments satisfying the triangle inequality
    a, b = rng.uniform(0.005, 0.05, 2)
    c = rng.uniform(abs(a - b) + 1e-3, a + b)
    return mass, com, rng.uniform(-np.pi, np.pi, 3), np.array([a, b, c])


def _link(name: str, mass: float, com, rpy, moments) -> str:
    ixx, iyy, izz = moments
    return (
        f'  <link name="{name}"><inertial><origin xyz="{_fmt(com)}" rpy="{_fmt(rpy)}"/>'
        f'<mass value="{mass:.17g}"/>'
        f'<inertia ixx="{ixx:.17g}" ixy="0" ixz="0" iyy="{iyy:.17g}" iyz="0" izz="{izz:.17g}"/>'
        f"</inertial></link>\n"
    )


def _joint(name: str, jtype: str, parent: str, child: str, xyz, rpy, axis=None, limits=True) -> str:
    axis_xml = f'<axis xyz="{_fmt(axis)}"/>' if axis is not None else ""
    limit_xml = ""
    if jtype in ("revolute", "prismatic") and limits:
        lo, hi = (-2.5, 2.5) if jtype == "revolute" else (-0.5, 0.5)
        limit_xml = f'<limit lower="{lo}" upper="{hi}" effort="100" velocity="10"/>'
    elif jtype == "continuous":
        limit_xml = '<limit effort="100" velocity="10"/>'
    return (
        f'  <joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{_fmt(xyz)}" rpy="{_fmt(rpy)}"/>{axis_xml}{limit_xml}</joint>\n'
    )


def chain_urdf(n: int, link_length: float = 0.3, axes: str = "zyx", name: str = "chain") -> str:
    """A serial chain of ``n`` revolute links, ``link_length`` m apart, joint axes cycling over ``axes``."""
    if n < 1:
        raise ValueError("a chain needs at least one link")
    unit = {"x": (1, 0, 0), "y": (0, 1, 0), "z": (0, 0, 1)}
    parts = [f'<robot name="{name}">\n', _link("link0", 1.0, (0, 0, 0.05), (0, 0, 0), (0.01, 0.01, 0.01))]
    for i in range(1, n + 1):
        parts.append(_link(f"link{i}", 1.0, (0, 0, link_length / 2), (0, 0, 0), (0.02, 0.02, 0.005)))
        parts.append(
            _joint(
                f"joint{i}",
                "revolute",
                f"link{i - 1}",
                f"link{i}",
                (0, 0, link_length if i > 1 else 0.0),
                (0, 0, 0),
                unit[axes[(i - 1) % len(axes)]],
            )
        )
    parts.append("</robot>\n")
    return "".join(parts)


def random_tree_urdf(
    n: int,
    rng: np.random.Generator | None = None,
    kinds: Sequence[str] = JOINT_KINDS,
    branching: float = 0.5,
    name: str = "random_tree",
) -> str:
    """A random tree of ``n`` links besides the root, with joint kinds drawn from ``kinds``.

    Args:
        branching: probability that a link attaches to a random earlier link rather than to the
            previous one (0: a chain, 1: very bushy).
    """
    rng = rng or np.random.default_rng()
    parts = [f'<robot name="{name}">\n', _link("link0", *_random_inertia(rng))]
    for i in range(1, n + 1):
        parent = int(rng.integers(0, i)) if rng.random() < branching else i - 1
        kind = str(rng.choice(list(kinds)))
        # keep the tree movable: the last link of a fixed run still carries mass
        xyz, rpy = rng.uniform(-0.3, 0.3, 3), rng.uniform(-np.pi, np.pi, 3)
        if kind.startswith("revolute"):
            axis_kind = kind.split("_")[1]
            if axis_kind == "unaligned":
                axis = rng.normal(size=3)
            else:
                axis = {"x": (1.0, 0, 0), "y": (0, 1.0, 0), "z": (0, 0, 1.0)}[axis_kind]
            joint = _joint(f"joint{i}", "revolute", f"link{parent}", f"link{i}", xyz, rpy, axis)
        elif kind == "continuous":
            joint = _joint(f"joint{i}", "continuous", f"link{parent}", f"link{i}", xyz, rpy, rng.normal(size=3))
        elif kind == "prismatic":
            joint = _joint(f"joint{i}", "prismatic", f"link{parent}", f"link{i}", xyz, rpy, rng.normal(size=3))
        elif kind == "fixed":
            joint = _joint(f"joint{i}", "fixed", f"link{parent}", f"link{i}", xyz, rpy)
        else:
            raise ValueError(f"unknown joint kind {kind!r}; known: {JOINT_KINDS}")
        parts.append(_link(f"link{i}", *_random_inertia(rng)))
        parts.append(joint)
    parts.append("</robot>\n")
    return "".join(parts)


def stem_with_branches_urdf(
    stem_length: int, branches_per_side: int, branch_length: int = 7, name: str = "stem"
) -> str:
    """The PV-OSIMr paper's Fig. 3 mechanism.

    A stem of ``stem_length`` revolute links carries at its top ``branches_per_side`` branches on
    either side, each a serial chain of ``branch_length`` links; the last link of branch ``k`` on
    side ``s`` (``l``/``r``) is ``tip_{s}{k}``. With one branch per side the mechanism is a serial
    chain with a branch at each end of the stem, as in the paper's single-branch case.
    """
    if stem_length < 1 or branches_per_side < 1 or branch_length < 1:
        raise ValueError("stem length, branches per side and branch length must be positive")
    axes = [(0, 0, 1.0), (0, 1.0, 0), (1.0, 0, 0)]
    parts = [f'<robot name="{name}">\n', _link("stem0", 2.0, (0, 0, 0.05), (0, 0, 0), (0.02, 0.02, 0.02))]
    for i in range(1, stem_length + 1):
        parts.append(_link(f"stem{i}", 1.0, (0, 0, 0.05), (0, 0, 0), (0.01, 0.01, 0.005)))
        parts.append(
            _joint(f"stem_joint{i}", "revolute", f"stem{i - 1}", f"stem{i}", (0, 0, 0.1), (0, 0, 0), axes[i % 3])
        )
    for side, sign in (("l", 1.0), ("r", -1.0)):
        for k in range(1, branches_per_side + 1):
            # a one-branch mechanism hangs its right branch from the stem's base: a chain with ends
            top = f"stem{stem_length}" if (branches_per_side > 1 or side == "l") else "stem0"
            prev = top
            for b in range(1, branch_length + 1):
                link = f"tip_{side}{k}" if b == branch_length else f"branch_{side}{k}_{b}"
                parts.append(_link(link, 0.5, (0, 0, 0.04), (0, 0, 0), (0.004, 0.004, 0.002)))
                xyz = (0.0, sign * 0.1, 0.02 * k) if b == 1 else (0.0, sign * 0.08, 0.0)
                parts.append(_joint(f"branch_joint_{side}{k}_{b}", "revolute", prev, link, xyz, (0, 0, 0), axes[b % 3]))
                prev = link
    parts.append("</robot>\n")
    return "".join(parts)


def chain(n: int, floating_base: bool = False, **kwargs) -> wbc.Model:
    """A :class:`wbc.Model` of :func:`chain_urdf`."""
    return wbc.load_urdf(chain_urdf(n, **kwargs), floating_base)


def random_tree(n: int, rng: np.random.Generator | None = None, floating_base: bool = False, **kwargs) -> wbc.Model:
    """A :class:`wbc.Model` of :func:`random_tree_urdf`."""
    return wbc.load_urdf(random_tree_urdf(n, rng, **kwargs), floating_base)


def stem_with_branches(
    stem_length: int, branches_per_side: int, branch_length: int = 7, floating_base: bool = False
) -> wbc.Model:
    """A :class:`wbc.Model` of :func:`stem_with_branches_urdf`."""
    return wbc.load_urdf(stem_with_branches_urdf(stem_length, branches_per_side, branch_length), floating_base)


def with_ball_joints(model: wbc.Model, joints: Sequence[str], max_angle: float = np.inf) -> wbc.Model:
    """``model`` with the named joints (revolute, continuous or prismatic) turned into ball joints at
    the same placement (their axis, limits and mimic dropped; effort and velocity limits repeated
    on the three axes), ``max_angle`` (rad) their cone limit, and the q/v layout redone."""
    names = set(joints)
    unknown = names - set(model.joint_names)
    if unknown:
        raise ValueError(f"model {model.name!r} has no joints {sorted(unknown)}")
    out = [model.joints[0]]
    iq = iv = 0
    for j in model.joints[1:]:
        if j.name in names:
            if j.nv != 1:
                raise ValueError(f"joint {j.name!r} is {j.type.value}; only one-axis joints become ball joints")
            j = dataclasses.replace(
                j,
                type=wbc.JointType.SPHERICAL,
                axis=np.zeros(3),
                lower=np.full(4, -np.inf),
                upper=np.full(4, np.inf),
                effort=np.repeat(j.effort, 3),
                velocity=np.repeat(j.velocity, 3),
                mimic=None,
                max_angle=max_angle,
            )
        out.append(dataclasses.replace(j, idx_q=iq, idx_v=iv))
        iq, iv = iq + j.nq, iv + j.nv
    return dataclasses.replace(model, joints=tuple(out))


def random_ball_tree(
    n: int,
    rng: np.random.Generator | None = None,
    floating_base: bool = False,
    fraction: float = 0.4,
    name: str = "ball_tree",
    **kwargs,
) -> wbc.Model:
    """A :func:`random_tree` of ``n`` links in which each one-axis joint becomes a ball joint with
    probability ``fraction`` (at least one does), mixing ball joints with every other joint type."""
    rng = rng or np.random.default_rng()
    model = random_tree(n, rng, floating_base, name=name, **kwargs)
    candidates = [j.name for j in model.joints[1:] if j.nv == 1]
    chosen = [c for c in candidates if rng.random() < fraction] or [str(rng.choice(candidates))]
    return with_ball_joints(model, chosen)
