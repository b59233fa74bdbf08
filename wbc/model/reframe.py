"""An equivalent model whose joint frames make the traced recursions cheaper.

A revolute or prismatic joint's frame may be rotated about the joint's axis and moved along it
without changing the joint's motion: such a change ``T = (C, t a)`` (``C`` a rotation about the
axis ``a``, ``t`` in metres) commutes with every rotation about the axis and every translation
along it. The equivalent model re-expresses each such body in its joint frame times ``T``: joint
placements ``T_parent⁻¹ · placement · T``, inertias and attached frames in the new frame. The same
``q``, ``v`` then give the same motion of every body, the same ``M(q)``, ``h(q, v)``, ``τ``, ``q̈``
(joint-space quantities do not depend on the frames bodies are expressed in), and every named
frame keeps its world placement.

What is chosen, per joint, from the constants of its placement and its children's:

* ``C``: a placement rotation of a child that is a rotation about this joint's axis followed by
  one about the child's own axis (G1's hip roll: ``Rot_y(-10°)`` after a hip pitch about y) is
  moved into this joint's frame, where it merges into this joint's angle
  (:func:`wbc.model.joints.joint_transform`), and the child's placement keeps only the rotation
  about its own axis (merged into its angle in turn): the child's transform then has the zeros of
  an axis rotation instead of a product of two rotations;
* ``t``: the shift along the axis that zeroes one coordinate of a placement translation (the
  inbound one or a child's), chosen greedily from the root down, each edge weighted by the size of
  the subtree whose transforms cross it: every zero of a translation drops terms of every
  cross product ``p × x`` the recursions form with it.

Free-flyers, ball joints and the universe keep their frames. :func:`reframed` caches the result per
model (held weakly).

Glossary: ``T`` the new joint frame in the original one; ``C`` its rotation; ``t`` its shift along
the axis; ``R0``, ``p0`` a joint placement's rotation and translation.
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import NamedTuple

import casadi as ca
import numpy as np

from ..spatial.algebra import SE3, act_inv_force, act_inv_inertia
from .model import Frame, Joint, JointType, Model

__all__ = ["Reframed", "reframed"]

_REVOLUTE = (JointType.REVOLUTE, JointType.REVOLUTE_UNBOUNDED)
_MOVABLE = (*_REVOLUTE, JointType.PRISMATIC)

#: Below this (m, or a rotation matrix entry), a coordinate is taken as zero: rounding only.
_ZERO = 1e-15


class Reframed(NamedTuple):
    """An equivalent model and, per joint, its new joint frame in the original one.

    Attributes:
        model: the equivalent model (same joints, order, layout, limits and frame names).
        frames: ``T_i`` (numpy ``SE3``), joint ``i``'s new frame in its original one.
    """

    model: Model
    frames: tuple[SE3, ...]

    def force_in_new_frame(self, joint: int, force):
        """A spatial force (6, 1) on joint ``joint``'s body, given in its original frame, in the new one."""
        T = self.frames[joint]
        if np.array_equal(T.R, np.eye(3)) and not np.any(T.p):
            return force
        return act_inv_force(T, force)


_cache: weakref.WeakKeyDictionary[Model, Reframed] = weakref.WeakKeyDictionary()


def reframed(model: Model) -> Reframed:
    """The equivalent model of ``model`` with cheaper joint frames (see the module docstring), cached."""
    found = _cache.get(model)
    if found is None:
        found = _build(model)
        _cache[model] = found
    return found


def _rot(axis: np.ndarray, c: float, s: float) -> np.ndarray:
    K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return c * np.eye(3) + s * K + (1.0 - c) * np.outer(axis, axis)


def _is_about(R: np.ndarray, axis: np.ndarray) -> bool:
    """Whether the rotation ``R`` is a rotation about ``axis`` (the identity included)."""
    return bool(np.max(np.abs(R @ axis - axis)) <= _ZERO * 10)


def _parent_turn(a_p: np.ndarray, R0: np.ndarray, a: np.ndarray) -> tuple[float, float] | None:
    """``(cos φ, sin φ)`` such that ``Rot(a_p, -φ) R0`` is a rotation about ``a``, when ``R0`` is not
    one already and such a ``φ`` exists, else None."""
    if _is_about(R0, a):
        return None
    b = R0 @ a
    u, w = a - (a_p @ a) * a_p, b - (a_p @ b) * a_p
    nu, nw = np.linalg.norm(u), np.linalg.norm(w)
    if nu < 1e-9 or nw < 1e-9 or abs(a_p @ a - a_p @ b) > 1e-12:
        return None
    u, w = u / nu, w / nw
    c, s = float(u @ w), float(a_p @ np.cross(u, w))
    if not _is_about(_rot(a_p, c, -s) @ R0, a):
        return None
    return c, s


def _is_permutation(R: np.ndarray) -> bool:
    """Whether ``R`` has only entries 0 and ±1 (a signed permutation: as cheap as the identity traced)."""
    return bool(np.all((np.abs(R) < _ZERO * 10) | (np.abs(np.abs(R) - 1.0) < _ZERO * 10)))


def _rotation_cost(R: np.ndarray, joint: Joint) -> int:
    """0 for a placement rotation that costs nothing traced (about a revolute joint's own axis: merged
    into its angle; a signed permutation), else 1."""
    if _is_permutation(R) or (joint.type in _REVOLUTE and _is_about(R, np.asarray(joint.axis, dtype=float))):
        return 0
    return 1


def _nonzeros(p: np.ndarray) -> int:
    return int(np.count_nonzero(np.abs(p) > _ZERO))


def _build(model: Model) -> Reframed:
    n = model.njoints
    joints = model.joints
    movable = [j.type in _MOVABLE for j in joints]
    axis = [np.asarray(j.axis, dtype=float) for j in joints]
    children: list[list[int]] = [[] for _ in range(n)]
    for i in range(1, n):
        children[joints[i].parent].append(i)
    size = [1] * n
    for i in range(n - 1, 0, -1):
        size[joints[i].parent] += size[i]
    R0 = [np.asarray(j.placement.R, dtype=float) for j in joints]
    p0 = [np.asarray(j.placement.p, dtype=float).reshape(3) for j in joints]

    # rotations about the own axis: the one that leaves the cheapest placement rotations (its own and
    # its children's), among the turns its children's placements want
    C = [np.eye(3) for _ in range(n)]
    for i in range(1, n):
        if joints[i].type not in _REVOLUTE:
            continue
        candidates = [np.eye(3)]
        for k in children[i]:
            if joints[k].type in _REVOLUTE:
                turn = _parent_turn(axis[i], R0[k], axis[k])
                if turn is not None:
                    candidates.append(_rot(axis[i], *turn))
            if not _is_about(R0[k], axis[k]) and _is_about(R0[k], axis[i]) and not _is_permutation(R0[k]):
                candidates.append(R0[k])  # a turn about this axis: the child's placement becomes the identity

        def rotation_cost(C_i: np.ndarray, i: int = i) -> int:
            own = _rotation_cost(C[joints[i].parent].T @ R0[i] @ C_i, joints[i])
            return own + sum(_rotation_cost(C_i.T @ R0[k], joints[k]) for k in children[i])

        C[i] = min(candidates, key=rotation_cost)  # the first (identity) on ties

    # the edges with the rotations chosen: p' = base + t_child u - t_parent a_parent
    base = [C[joints[i].parent].T @ p0[i] if i > 0 else np.zeros(3) for i in range(n)]
    u = [C[joints[i].parent].T @ R0[i] @ axis[i] if i > 0 else np.zeros(3) for i in range(n)]
    t = [0.0] * n

    def killing(direction: np.ndarray, residual: np.ndarray) -> list[float]:
        """Shifts along ``direction`` that zero one coordinate of ``residual``."""
        return [
            float(-residual[k] / direction[k])
            for k in range(3)
            if abs(direction[k]) > 1e-9 and abs(residual[k]) > _ZERO
        ]

    def best_child(k: int, t_i: float, a_i: np.ndarray) -> int:
        r = base[k] - t_i * a_i
        options = [0.0] + (killing(u[k], r) if movable[k] else [])
        return min(_nonzeros(r + s * u[k]) for s in options)

    for i in range(1, n):
        if not movable[i]:
            continue
        pa = joints[i].parent
        inbound = base[i] - t[pa] * axis[pa]
        options = [0.0, *killing(u[i], inbound)]
        for k in children[i]:
            options += [float(s) for s in killing(axis[i], -base[k])]

        def translation_cost(s: float, i: int = i, inbound: np.ndarray = inbound) -> float:
            own = size[i] * _nonzeros(inbound + s * u[i])
            return own + sum(size[k] * best_child(k, s, axis[i]) for k in children[i])

        t[i] = min(options, key=lambda s: (translation_cost(s), abs(s)))

    T = [SE3(C[i], (t[i] * axis[i]).reshape(3, 1)) for i in range(n)]
    new_joints: list[Joint] = [joints[0]]
    for i in range(1, n):
        pa = joints[i].parent
        R = C[pa].T @ R0[i] @ C[i]
        R[np.abs(R) < _ZERO] = 0.0
        p = base[i] + t[i] * u[i] - t[pa] * axis[pa]
        p[np.abs(p) < _ZERO] = 0.0
        new_joints.append(dataclasses.replace(joints[i], placement=SE3(R, p.reshape(3, 1))))
    inertias = []
    for i, I in enumerate(model.inertias):
        moved = np.array(act_inv_inertia(T[i], ca.DM(I))) if i > 0 else np.asarray(I)
        inertias.append((moved + moved.T) / 2)
    frames = []
    for f in model.frames:
        Tj = T[f.joint]
        R = Tj.R.T @ np.asarray(f.placement.R, dtype=float)
        p = Tj.R.T @ (np.asarray(f.placement.p, dtype=float).reshape(3, 1) - Tj.p)
        frames.append(Frame(f.name, f.kind, f.joint, SE3(R, p)))
    new = Model(
        model.name, tuple(new_joints), tuple(inertias), tuple(frames), model.actuated, model.gravity, model.source
    )
    return Reframed(new, tuple(T))
