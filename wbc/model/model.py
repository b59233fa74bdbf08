"""The immutable kinematic-tree model.

A :class:`Model` describes a robot as Pinocchio does when it builds the same URDF: joint 0 is the
universe, joints ``1..njoints-1`` are in depth-first order with ``parent[i] < i``, each joint
moves one body (the link it carries plus every link welded to it by fixed joints), and
configuration / velocity vectors are laid out joint after joint (``idx_q``, ``idx_v``).

The model holds no state: algorithms take it and the state ``(q, v)`` as arguments. Its numpy
arrays are read-only. Joint types and frame kinds are enums, not strings.

Configuration layout per joint type (Pinocchio's):
  ========================  ====  ====  ==========================================
  type                      nq    nv    q
  ========================  ====  ====  ==========================================
  FREE_FLYER                7     6     ``[x, y, z, qx, qy, qz, qw]``; v is [linear, angular]
                                        in the joint (base) frame
  REVOLUTE                  1     1     angle (rad)
  REVOLUTE_UNBOUNDED        2     1     ``[cos θ, sin θ]`` (URDF ``continuous``)
  PRISMATIC                 1     1     displacement (m)
  SPHERICAL                 4     3     unit quaternion ``[qx, qy, qz, qw]`` of the child frame in
                                        the joint frame (a ball joint); v is the angular velocity
                                        in the child (joint) frame, Pinocchio's ``JointModelSpherical``
  ========================  ====  ====  ==========================================
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np

from ..errors import FrameError, ModelError
from ..spatial.algebra import SE3

__all__ = ["JointType", "FrameKind", "Joint", "Frame", "Mimic", "Model"]


class JointType(enum.Enum):
    """Kinds of joints a model can hold (fixed joints are merged away by the loader)."""

    UNIVERSE = "universe"
    FREE_FLYER = "free_flyer"
    REVOLUTE = "revolute"
    REVOLUTE_UNBOUNDED = "revolute_unbounded"
    PRISMATIC = "prismatic"
    SPHERICAL = "spherical"

    @property
    def nq(self) -> int:
        return _NQ_NV[self][0]

    @property
    def nv(self) -> int:
        return _NQ_NV[self][1]


_NQ_NV = {
    JointType.UNIVERSE: (0, 0),
    JointType.FREE_FLYER: (7, 6),
    JointType.REVOLUTE: (1, 1),
    JointType.REVOLUTE_UNBOUNDED: (2, 1),
    JointType.PRISMATIC: (1, 1),
    JointType.SPHERICAL: (4, 3),
}


class FrameKind(enum.Enum):
    """What a frame marks: a joint, a body (URDF link), a fixed joint, or a user-added point."""

    JOINT = "joint"
    FIXED_JOINT = "fixed_joint"
    BODY = "body"
    OP = "op"


@dataclasses.dataclass(frozen=True)
class Mimic:
    """URDF ``<mimic>`` information, kept for reference: wbc treats the joint as independent
    (as Pinocchio's ``buildModelFromUrdf`` does by default)."""

    joint: str
    multiplier: float
    offset: float


@dataclasses.dataclass(frozen=True)
class Joint:
    """One joint of the tree and the body it moves.

    Attributes:
        name: the URDF joint name (``"universe"`` for joint 0, ``"root_joint"`` for a free-flyer).
        type: its :class:`JointType`.
        parent: index of the parent joint (``-1`` for the universe).
        placement: joint frame in the parent joint frame at zero joint motion.
        axis: unit axis (3,) in the joint frame for revolute and prismatic joints, else zeros.
        idx_q, nq, idx_v, nv: slice of the joint in ``q`` and ``v``.
        lower, upper: position limits (nq,) in rad or m (±inf when unbounded; always ±inf for the
            quaternion entries of free-flyers and ball joints).
        effort: effort limits (nv,) in N m or N (inf when unknown).
        velocity: velocity limits (nv,) in rad/s or m/s (inf when unknown).
        link: name of the URDF link the joint carries.
        mimic: URDF mimic information, or None.
        max_angle: a ball joint's limit, rad: the largest rotation angle of its child frame from
            the joint frame (a cone on the rotation, MuJoCo's ball-joint ``range``); ``inf`` when
            unlimited and for every other joint type.
    """

    name: str
    type: JointType
    parent: int
    placement: SE3
    axis: np.ndarray
    idx_q: int
    idx_v: int
    lower: np.ndarray
    upper: np.ndarray
    effort: np.ndarray
    velocity: np.ndarray
    link: str
    mimic: Mimic | None = None
    max_angle: float = math.inf

    @property
    def nq(self) -> int:
        return self.type.nq

    @property
    def nv(self) -> int:
        return self.type.nv


@dataclasses.dataclass(frozen=True)
class Frame:
    """A named frame rigidly attached to a joint's body.

    Attributes:
        name: URDF link or joint name (or a user name for OP frames).
        kind: what it marks.
        joint: index of the joint whose body carries it.
        placement: the frame in that joint's frame.
    """

    name: str
    kind: FrameKind
    joint: int
    placement: SE3


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.flags.writeable = False
    return a


@dataclasses.dataclass(frozen=True, eq=False)
class Model:
    """An immutable kinematic tree (see the module docstring for the layout).

    Build one with :func:`wbc.load_urdf`; the constructor checks consistency but assumes the
    joints are already in depth-first order.

    Attributes:
        name: robot name.
        joints: joints ``0..njoints-1``; joint 0 is the universe.
        inertias: spatial inertia (6, 6) of the body moved by each joint, in the joint frame
            (index 0, the universe, is whatever was welded to the ground).
        frames: every named frame.
        actuated: indices of the joints driven by actuators (default: all but a free-flyer root).
        gravity: gravity acceleration (3,), m/s², in the world frame.
        source: the file the model came from (or ``"<string>"``).
    """

    name: str
    joints: tuple[Joint, ...]
    inertias: tuple[np.ndarray, ...]
    frames: tuple[Frame, ...]
    actuated: tuple[int, ...]
    gravity: np.ndarray = dataclasses.field(default_factory=lambda: _readonly(np.array([0.0, 0.0, -9.81])))
    source: str = "<string>"
    _frame_index: Mapping[str, int] = dataclasses.field(init=False, repr=False)
    _joint_index: Mapping[str, int] = dataclasses.field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.joints or self.joints[0].type is not JointType.UNIVERSE:
            raise ModelError(f"{self.source}: joint 0 must be the universe")
        if len(self.inertias) != len(self.joints):
            raise ModelError(f"{self.source}: {len(self.inertias)} inertias for {len(self.joints)} joints")
        iq = iv = 0
        for i, j in enumerate(self.joints[1:], start=1):
            if not 0 <= j.parent < i:
                raise ModelError(f"{self.source}: joint {j.name!r} has parent {j.parent}, expected < {i}")
            if j.idx_q != iq or j.idx_v != iv:
                raise ModelError(f"{self.source}: joint {j.name!r} is not laid out contiguously in q/v")
            iq, iv = iq + j.nq, iv + j.nv
            if j.type is JointType.SPHERICAL:
                if not (isinstance(j.max_angle, (int, float)) and j.max_angle > 0.0):
                    raise ModelError(
                        f"{self.source}: ball joint {j.name!r} has max_angle {j.max_angle!r}; it must be a positive "
                        "angle in rad (inf when unlimited)"
                    )
            elif j.max_angle != math.inf:
                raise ModelError(
                    f"{self.source}: joint {j.name!r} is {j.type.value}; only ball joints have a max_angle"
                )
        for a in self.actuated:
            if not 0 < a < len(self.joints):
                raise ModelError(f"{self.source}: actuated joint index {a} out of range")
        frame_index: dict[str, int] = {}
        for k, f in enumerate(self.frames):
            frame_index.setdefault(f.name, k)  # first one wins, as Pinocchio's getFrameId
        object.__setattr__(self, "_frame_index", MappingProxyType(frame_index))
        object.__setattr__(self, "_joint_index", MappingProxyType({j.name: i for i, j in enumerate(self.joints)}))
        object.__setattr__(self, "gravity", _readonly(self.gravity))
        object.__setattr__(self, "inertias", tuple(_readonly(I) for I in self.inertias))

    # ----------------------------------------------------------------------------- sizes
    @property
    def njoints(self) -> int:
        """Number of joints, the universe included (Pinocchio's ``njoints``)."""
        return len(self.joints)

    @property
    def nq(self) -> int:
        """Size of the configuration vector."""
        last = self.joints[-1]
        return last.idx_q + last.nq

    @property
    def nv(self) -> int:
        """Size of the velocity vector."""
        last = self.joints[-1]
        return last.idx_v + last.nv

    @property
    def floating_base(self) -> bool:
        """True when joint 1 is a free-flyer."""
        return len(self.joints) > 1 and self.joints[1].type is JointType.FREE_FLYER

    @property
    def parents(self) -> tuple[int, ...]:
        """Parent joint index of each joint (``-1`` for the universe)."""
        return tuple(j.parent for j in self.joints)

    # ----------------------------------------------------------------------------- names
    @property
    def frame_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.frames)

    @property
    def joint_names(self) -> tuple[str, ...]:
        return tuple(j.name for j in self.joints)

    def frame_id(self, name: str) -> int:
        """Index of the frame called ``name``; :class:`FrameError` (with suggestions) if unknown."""
        if not isinstance(name, str):
            raise FrameError(f"frame name must be a string, got {type(name).__name__}")
        return self._lookup(self._frame_index, name, "frame", FrameError)

    def has_frame(self, name: str) -> bool:
        return name in self._frame_index

    def joint_id(self, name: str) -> int:
        """Index of the joint called ``name``; :class:`ModelError` if unknown."""
        return self._lookup(self._joint_index, name, "joint", ModelError)

    def _lookup(self, index: Mapping[str, int], name: str, what: str, error: type[Exception]) -> int:
        """``index[name]``, or ``error`` naming the ``what`` (frame, joint) and the closest names."""
        try:
            return index[name]
        except KeyError:
            close = difflib.get_close_matches(name, index.keys(), n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise error(f"model {self.name!r} has no {what} {name!r}{hint}") from None

    # ----------------------------------------------------------------------------- actuation
    @property
    def actuated_joint_names(self) -> tuple[str, ...]:
        return tuple(self.joints[i].name for i in self.actuated)

    @property
    def actuated_v_indices(self) -> np.ndarray:
        """Indices in ``v`` of the actuated degrees of freedom, in model order, (n_actuated,)."""
        idx = [self.joints[i].idx_v + k for i in self.actuated for k in range(self.joints[i].nv)]
        out = np.array(idx, dtype=int)
        out.flags.writeable = False
        return out

    @property
    def n_actuated(self) -> int:
        return sum(self.joints[i].nv for i in self.actuated)

    def actuation_matrix(self) -> np.ndarray:
        """Sᵀ (nv, n_actuated): maps actuator efforts to generalized forces."""
        S = np.zeros((self.nv, self.n_actuated))
        S[self.actuated_v_indices, np.arange(self.n_actuated)] = 1.0
        return S

    @property
    def effort_limit(self) -> np.ndarray:
        """Effort limits of the actuated degrees of freedom (n_actuated,), N m or N."""
        return _readonly(np.concatenate([self.joints[i].effort for i in self.actuated] or [np.zeros(0)]))

    @property
    def velocity_limit(self) -> np.ndarray:
        """Velocity limits of all degrees of freedom (nv,), rad/s or m/s."""
        return _readonly(np.concatenate([j.velocity for j in self.joints[1:]] or [np.zeros(0)]))

    @property
    def lower_position_limit(self) -> np.ndarray:
        """Lower configuration limits (nq,)."""
        return _readonly(np.concatenate([j.lower for j in self.joints[1:]] or [np.zeros(0)]))

    @property
    def upper_position_limit(self) -> np.ndarray:
        """Upper configuration limits (nq,)."""
        return _readonly(np.concatenate([j.upper for j in self.joints[1:]] or [np.zeros(0)]))

    def with_actuation(self, joint_names: Sequence[str]) -> Model:
        """A copy of the model in which exactly ``joint_names`` are actuated (kept in model order)."""
        ids = sorted({self.joint_id(n) for n in joint_names})
        for i in ids:
            if i == 0:
                raise ModelError("the universe cannot be actuated")
        return dataclasses.replace(self, actuated=tuple(ids))

    def add_frame(self, name: str, parent_frame: str, placement: SE3) -> Model:
        """A copy of the model with an extra ``OP`` frame ``name`` at ``placement`` in ``parent_frame``.

        Raises:
            ModelError: a frame called ``name`` already exists.
        """
        if name in self._frame_index:
            raise ModelError(f"model {self.name!r} already has a frame {name!r}")
        parent = self.frames[self.frame_id(parent_frame)]
        R = np.asarray(parent.placement.R, float) @ np.asarray(placement.R, float)
        p = np.asarray(parent.placement.p, float).reshape(3, 1) + np.asarray(parent.placement.R, float) @ np.asarray(
            placement.p, float
        ).reshape(3, 1)
        frame = Frame(name, FrameKind.OP, parent.joint, SE3(R, p))
        return dataclasses.replace(self, frames=self.frames + (frame,))

    # ----------------------------------------------------------------------------- tree
    @property
    def total_mass(self) -> float:
        """Mass of all moving bodies, kg."""
        return float(sum(I[0, 0] for I in self.inertias[1:]))

    def children(self, i: int) -> tuple[int, ...]:
        """Joints whose parent is ``i``."""
        return tuple(k for k, j in enumerate(self.joints) if j.parent == i)

    def support(self, i: int) -> tuple[int, ...]:
        """Joints from joint 1 down to ``i`` (the path from the root), ``i`` included."""
        path = []
        while i > 0:
            path.append(i)
            i = self.joints[i].parent
        return tuple(reversed(path))

    def subtree(self, i: int) -> tuple[int, ...]:
        """Joint ``i`` and all its descendants, in model order."""
        out = [i]
        inside = {i}
        for k in range(i + 1, self.njoints):
            if self.joints[k].parent in inside:
                inside.add(k)
                out.append(k)
        return tuple(out)

    def __repr__(self) -> str:
        return (
            f"Model({self.name!r}, nq={self.nq}, nv={self.nv}, njoints={self.njoints}, "
            f"nframes={len(self.frames)}, floating_base={self.floating_base})"
        )
