"""Which joints a joint limit applies to, and the parameters every joint limit shares.

A joint limit acts on the acceleration ``q̈_j = a₀_j + B̂_j u`` of single-degree-of-freedom joints
(revolute and prismatic; continuous joints have no position limits). :func:`select_joints`
resolves a user's choice against a model and :func:`state_indices` says where the chosen joints sit
in the controller's state (on a clustered model: the independent coordinates, positions in the
spanning configuration ``y`` and velocities in the independent ``v``; a joint whose motion a loop or
transmission determines has no limit of its own there); :class:`JointLimitParameters` lays out the kernel
parameters of such a limit (the control period first, then per-joint blocks) in one array that the
compiled kernel reads in place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ...errors import InputError
from ...model.clusters import ClusterModel
from ...model.model import Joint, JointType, Model

__all__ = ["select_joints", "state_indices", "JointLimitParameters", "positive_per_joint", "joint_velocities"]

_ONE_DOF = (JointType.REVOLUTE, JointType.PRISMATIC, JointType.REVOLUTE_UNBOUNDED)


def _candidates(model: Model | ClusterModel) -> tuple[Model, list[Joint]]:
    """``(tree, joints)``: the kinematic tree and the joints whose coordinates the state holds and
    the inputs move (a tree's actuated joints; a clustered model's independent joints but a free-flyer)."""
    if isinstance(model, ClusterModel):
        tree = model.tree
        independent = [tree.joints[j] for j in model.independent_joints]
        return tree, [j for j in independent if j.type is not JointType.FREE_FLYER]
    return model, [model.joints[i] for i in model.actuated]


def state_indices(model: Model | ClusterModel, joints: Sequence[Joint]) -> tuple[np.ndarray, np.ndarray]:
    """``(q_indices, v_indices)`` (n,): where ``joints`` (1-dof) sit in the controller's state
    ``(q, v)`` — for a clustered model ``q`` is the spanning configuration ``y`` and ``v`` the
    independent velocity."""
    q_idx = np.array([j.idx_q for j in joints], dtype=int)
    if not isinstance(model, ClusterModel):
        return q_idx, np.array([j.idx_v for j in joints], dtype=int)
    offset, where = 0, {}
    for j in model.independent_joints:
        where[j] = offset
        offset += model.tree.joints[j].nv
    return q_idx, np.array([where[model.tree.joint_id(j.name)] for j in joints], dtype=int)


def select_joints(
    model: Model | ClusterModel, names: Sequence[str] | None, has_limit: Callable[[Joint], bool], what: str, owner: str
) -> list[Joint]:
    """The joints a limit applies to, in model order.

    Args:
        names: joint names; None: every actuated joint for which ``has_limit`` holds (the others are
            skipped: continuous joints, joints whose URDF gives no such limit).
        has_limit: whether a joint has the limit in question.
        what: the limit's description for messages (e.g. ``"position limits"``).
        owner: the limit's name for messages.

    Raises:
        InputError: an unknown joint, a joint with more than one degree of freedom, or a named joint
            without the limit.
    """
    tree, candidates = _candidates(model)
    if names is None:
        return [j for j in candidates if j.type in _ONE_DOF and has_limit(j)]
    if isinstance(names, str):
        names = [names]
    out = []
    for name in names:
        if not isinstance(name, str):
            raise InputError(f"{owner}: joint names must be strings, got {name!r}")
        if name not in tree.joint_names:
            raise InputError(f"{owner}: model {model.name!r} has no joint {name!r}")
        joint = tree.joints[tree.joint_id(name)]
        if isinstance(model, ClusterModel) and all(c.name != name for c in candidates):
            raise InputError(
                f"{owner}: joint {name!r} of clustered model {model.name!r} is not an independent coordinate "
                f"(its loop or transmission determines it); limit one of {[j.name for j in candidates]}"
            )
        if joint.type not in _ONE_DOF:
            raise InputError(f"{owner}: joint {name!r} is a {joint.type.value} joint; only 1-dof joints have {what}")
        if not has_limit(joint):
            raise InputError(f"{owner}: joint {name!r} has no {what} in model {model.name!r}")
        out.append(joint)
    if len({j.name for j in out}) != len(out):
        raise InputError(f"{owner}: a joint is named twice in {list(names)}")
    if isinstance(model, ClusterModel):
        order = {j.name: k for k, j in enumerate(candidates)}
        return sorted(out, key=lambda j: order[j.name])
    return sorted(out, key=lambda j: j.idx_v)


def positive_per_joint(value, n: int, what: str, owner: str, allow_zero: bool = False) -> np.ndarray:
    """``value`` as (n,) finite numbers > 0 (or ≥ 0), a scalar broadcast; InputError otherwise."""
    try:
        arr = np.array(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise InputError(f"{owner}: {what} must be numbers, got {value!r}") from None
    if arr.size == 1:
        arr = np.full(n, float(arr[0]))
    low_ok = arr >= 0 if allow_zero else arr > 0
    if arr.shape != (n,) or not np.all(np.isfinite(arr)) or not np.all(low_ok):
        bound = ">= 0" if allow_zero else "> 0"
        raise InputError(f"{owner}: {what} must be a finite number {bound} or {n} of them, got {value!r}")
    return arr


class JointLimitParameters:
    """The kernel parameters of a joint limit: ``[dt, block₀ (n), block₁ (n), ..., extra]``.

    ``dt`` (s) is the controller's period, written when the controller binds the array; the blocks
    are per-joint values, ``extra`` trailing values the limit lays out itself (e.g. per ball joint).
    The array is allocated once per model and updated in place (empty without joints or extras).
    """

    def __init__(self, n_joints: int, n_blocks: int, extra: int = 0) -> None:
        self.n = n_joints
        self.n_blocks = n_blocks
        self.array = np.zeros(1 + n_blocks * n_joints + extra) if (n_joints or extra) else np.zeros(0)

    def block(self, k: int) -> np.ndarray:
        """A view of block ``k`` (n,)."""
        return self.array[1 + k * self.n : 1 + (k + 1) * self.n]

    @property
    def extra(self) -> np.ndarray:
        """A view of the trailing values."""
        return self.array[1 + self.n_blocks * self.n :]

    def set_dt(self, dt: float) -> None:
        if self.array.size:
            self.array[0] = dt

    @staticmethod
    def split(p, n: int, n_blocks: int) -> tuple:
        """``(dt, [block₀, ...])`` of the traced parameter vector ``p`` (1 + n_blocks n, 1)."""
        return p[0], [p[1 + k * n : 1 + (k + 1) * n] for k in range(n_blocks)]


def joint_velocities(ctx):
    """The traced velocity ``v`` (nv, 1) of a step context (the control kernel always has one)."""
    v = ctx.kin.v
    if v is None:
        raise InputError("joint limits need the state's velocity; the kinematics were built without it")
    return v
