"""Clustered models: a spanning tree plus local loop constraints (the cluster paper).

A robot whose motors drive joints through gears, belts, differentials or rods is not a kinematic
tree of independent joints. Its bodies still form a *spanning tree* (the :class:`~wbc.model.Model`
``tree``: links, rotors, cranks, rods, every body with its own joint), but some of the spanning
tree's coordinates ``y`` are not independent: within a *cluster* (the bodies of one local loop)
they obey constraints ``r(y_c) = 0``. A cluster's *independent coordinates* ``q_c`` are a subset of
its spanning coordinates; the others follow from them:

* explicitly, through joint couplings (a rotor turning ``N`` times its link, belts, differentials,
  MuJoCo's polynomial ``<equality joint>``): ``y = φ(q)`` in closed form;
* implicitly, through loop closures between two frames (a four-bar, the rods of a parallel ankle):
  ``r(y) = 0`` is solved numerically for the dependent coordinates.

Either way the velocities are ``ẏ = G(y) q̇`` with ``G = ∂y/∂q`` and the accelerations
``ÿ = G q̈ + g(y, ẏ)``, where, with ``K = ∂r/∂y`` split into independent and dependent columns,
``G = [I; −K_d⁻¹ K_i]`` and ``g = [0; −K_d⁻¹ K̇ ẏ]`` (rows in the cluster's joint order).

Conventions of :class:`ClusterModel` (the state the algorithms take):

* positions: the *spanning-tree configuration* ``y`` (``tree.nq``), satisfying the constraints
  (build one with :meth:`ClusterModel.spanning_configuration` from independent coordinates);
* velocities, accelerations, generalized forces: *independent* vectors (``nv``), cluster after
  cluster in tree order, each cluster's independent joints in tree order. A joint in no declared
  cluster is a cluster of its own, so a model without declarations has the tree's own layout.

Glossary: ``y`` spanning coordinates, ``q`` independent coordinates, ``r`` loop residual, ``K``
its Jacobian ``∂r/∂y``, ``G`` explicit constraint Jacobian, ``g`` its bias ``Ġ q̇``, ``Λ(i)``
the *output body* of body ``i`` (its nearest ancestor outside its cluster).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
from collections.abc import Mapping, Sequence
from functools import cached_property

import casadi as ca
import numpy as np

from ..errors import InputError, ModelError
from ..spatial.algebra import SE3, compose
from . import checks
from .configuration import neutral as tree_neutral
from .configuration import random_configuration as tree_random
from .joints import joint_transform
from .model import JointType, Model

__all__ = [
    "ClosureKind",
    "JointCoupling",
    "PolynomialCoupling",
    "LoopClosure",
    "Cluster",
    "ClusterInfo",
    "ClusterModel",
    "LOOP_TOLERANCE",
    "closed_configuration",
]

#: Residual tolerance of the position solve (relative to the loop's size, metres or radians).
SOLVE_TOLERANCE = 1e-13
#: How far a spanning configuration given to an algorithm may be from closing its loops.
LOOP_TOLERANCE = 1e-8


class ClosureKind(enum.Enum):
    """What a loop closure makes coincide: two points (3 rows) or two frames (6 rows)."""

    POINT = "point"
    WELD = "weld"


@dataclasses.dataclass(frozen=True)
class JointCoupling:
    """``y[joint] = offset + Σ ratio · y[source]``: a gear, belt or differential (linear, explicit).

    Attributes:
        joint: the dependent joint (e.g. a rotor).
        sources: ``(joint name, ratio)`` pairs (rad/rad or m/rad).
        offset: constant term, rad or m.
    """

    joint: str
    sources: tuple[tuple[str, float], ...]
    offset: float = 0.0


@dataclasses.dataclass(frozen=True)
class PolynomialCoupling:
    """``y[joint] = Σₖ cₖ y[source]ᵏ``: MuJoCo's ``<equality joint polycoef>`` (explicit).

    Attributes:
        joint: the dependent joint (MuJoCo's ``joint1``).
        source: the joint it follows (MuJoCo's ``joint2``).
        coefficients: ``(c0, c1, ...)``.
    """

    joint: str
    source: str
    coefficients: tuple[float, ...]


@dataclasses.dataclass(frozen=True)
class LoopClosure:
    """Two frames of the spanning tree that the mechanism keeps together (an implicit loop).

    The residual is ``R_aᵀ (p_a − p_b)`` (frame ``a``'s axes) for ``POINT`` and, for ``WELD``, also
    the relative rotation ``½ vee(R_aᵀ R_b − R_bᵀ R_a)``; ``rows`` selects some of them (e.g. the
    two in-plane rows of a planar four-bar, whose third row is void).

    Attributes:
        frame_a, frame_b: frame names; the joints between them and their closest common ancestor
            body must all belong to the cluster.
        kind: :class:`ClosureKind`.
        rows: indices into the residual (0-2 position, 3-5 rotation), or None for all.
    """

    frame_a: str
    frame_b: str
    kind: ClosureKind = ClosureKind.POINT
    rows: tuple[int, ...] | None = None


Constraint = JointCoupling | PolynomialCoupling | LoopClosure


@dataclasses.dataclass(frozen=True)
class Cluster:
    """A declared cluster: spanning-tree joints, which of them are independent, their constraints.

    Attributes:
        name: cluster name.
        joints: names of the tree joints (one degree of freedom each) whose bodies form the cluster.
        independent: the independent coordinates among ``joints``.
        constraints: one residual row per dependent joint in total.
        actuated: the joints among ``joints`` driven by motors, whose efforts (N m or N, at the
            joint: a gearbox's output) are a controller's inputs, e.g. the two cranks of a parallel
            ankle; None for the independent joints.
    """

    name: str
    joints: tuple[str, ...]
    independent: tuple[str, ...]
    constraints: tuple[Constraint, ...]
    actuated: tuple[str, ...] | None = None


@dataclasses.dataclass(frozen=True, eq=False)
class ClusterInfo:
    """A cluster as the algorithms see it (computed by :class:`ClusterModel`).

    Attributes:
        name: cluster name (the joint's name for a single-joint cluster).
        joints: tree joint indices, ascending (regular numbering).
        independent: positions within ``joints`` of the independent coordinates.
        parent: index of the parent cluster, -1 for the world.
        output: ``Λ(i)`` for each joint of ``joints`` (a tree joint index, 0 for the world).
        idx_q, nq, idx_v, nv: slice of the cluster in the independent ``q`` and ``v``.
        G: constant ``G`` (ny, nv) when the constraints are linear (or the cluster trivial), else None.
        residual: ``r(y_c)`` as a CasADi function of the cluster's spanning coordinates, or None.
        jacobian: ``K(y_c)``, or None.
        bias: ``K̇ ẏ`` as a function of ``(y_c, ẏ_c)``, or None.
        declared: the :class:`Cluster` it came from, or None for a single free joint.
        motors: positions within ``joints`` of the motor joints (:attr:`Cluster.actuated`; a single
            joint is its own motor when the tree actuates it, with one input per degree of freedom:
            three for a ball joint).
    """

    name: str
    joints: tuple[int, ...]
    independent: tuple[int, ...]
    parent: int
    output: tuple[int, ...]
    idx_q: int
    nq: int
    idx_v: int
    nv: int
    G: np.ndarray | None
    residual: ca.Function | None
    jacobian: ca.Function | None
    bias: ca.Function | None
    declared: Cluster | None
    motors: tuple[int, ...] = ()

    @property
    def trivial(self) -> bool:
        """A single joint and no constraint (an ordinary tree joint)."""
        return self.declared is None

    @property
    def motor_rows(self) -> tuple[int, ...]:
        """Rows of ``G`` (the cluster's spanning velocities) driven by its motors, one per input: the
        degrees of freedom of a single joint (three for a ball joint), else the motor joints (a
        declared cluster's joints have one degree of freedom each)."""
        if self.trivial:
            return tuple(range(self.nv)) if self.motors else ()
        return self.motors

    @property
    def dependent(self) -> tuple[int, ...]:
        return tuple(k for k in range(len(self.joints)) if k not in self.independent)

    @property
    def explicit(self) -> bool:
        """``G`` is constant (trivial clusters and linear couplings)."""
        return self.G is not None

    def loop_functions(self) -> tuple[ca.Function, ca.Function, ca.Function]:
        """``(residual, jacobian, bias)`` of a declared cluster.

        Raises:
            ModelError: the cluster is a single free joint (it has no constraint).
        """
        if self.residual is None or self.jacobian is None or self.bias is None:
            raise ModelError(f"cluster {self.name!r} is a single joint without constraints")
        return self.residual, self.jacobian, self.bias


def _readonly(a) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.flags.writeable = False
    return a


@dataclasses.dataclass(frozen=True, eq=False)
class ClusterModel:
    """A spanning tree with clusters of loop-constrained bodies (immutable).

    Attributes:
        tree: the spanning-tree model (every body, rotors and rods included).
        clusters: the declared clusters.
        name: model name (default: the tree's).
        urdf: the spanning tree's URDF text when it was built from one (for oracles), else None.
        armature: diagonal joint-space inertia (tree.nv,) added to the spanning tree's (MuJoCo's
            joint ``armature``: an approximate rotor model chosen by the user), kg m² or kg; None for none.
        infos: every cluster, declared or single-joint, in topological order (computed).
    """

    tree: Model
    clusters: tuple[Cluster, ...] = ()
    name: str = ""
    urdf: str | None = None
    armature: np.ndarray | None = None
    infos: tuple[ClusterInfo, ...] = dataclasses.field(init=False, repr=False)
    _joint_cluster: tuple[int, ...] = dataclasses.field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.tree, Model):
            raise ModelError(f"tree must be a wbc.Model, got {type(self.tree).__name__}")
        object.__setattr__(self, "clusters", tuple(self.clusters))
        if not self.name:
            object.__setattr__(self, "name", self.tree.name)
        if self.armature is not None:
            arm = np.asarray(self.armature, dtype=float).reshape(-1)
            if arm.shape != (self.tree.nv,) or not np.all(np.isfinite(arm)) or np.any(arm < 0):
                raise ModelError(
                    f"model {self.name!r}: armature must be {self.tree.nv} finite non-negative numbers "
                    f"(shape {arm.shape})"
                )
            object.__setattr__(self, "armature", _readonly(arm) if np.any(arm) else None)
        infos, owner = _resolve(self.tree, self.clusters)
        object.__setattr__(self, "infos", infos)
        object.__setattr__(self, "_joint_cluster", owner)
        self._check_reference()

    # ----------------------------------------------------------------------------- sizes
    @property
    def nq(self) -> int:
        """Size of the independent configuration."""
        return sum(c.nq for c in self.infos)

    @property
    def nv(self) -> int:
        """Number of independent degrees of freedom."""
        return sum(c.nv for c in self.infos)

    @property
    def floating_base(self) -> bool:
        return self.tree.floating_base

    def cluster_of(self, joint: int) -> int:
        """Index (in :attr:`infos`) of the cluster holding tree joint ``joint``."""
        return self._joint_cluster[joint]

    @cached_property
    def independent_joints(self) -> tuple[int, ...]:
        """Tree joint of each independent coordinate block, in layout order."""
        return tuple(c.joints[k] for c in self.infos for k in c.independent)

    @cached_property
    def independent_v_indices(self) -> np.ndarray:
        """Where each independent velocity sits in the tree's velocity (nv,)."""
        idx = [self.tree.joints[j].idx_v + k for j in self.independent_joints for k in range(self.tree.joints[j].nv)]
        return _readonly_int(idx)

    @cached_property
    def independent_q_indices(self) -> np.ndarray:
        """Where each independent configuration entry sits in the tree's configuration (nq,)."""
        idx = [self.tree.joints[j].idx_q + k for j in self.independent_joints for k in range(self.tree.joints[j].nq)]
        return _readonly_int(idx)

    @property
    def joint_names(self) -> tuple[str, ...]:
        """Names of the independent joints, in layout order."""
        return tuple(self.tree.joints[j].name for j in self.independent_joints)

    @property
    def n_actuated(self) -> int:
        """Independent degrees of freedom driven by actuators (all but a free-flyer's)."""
        return self.nv - (6 if self.floating_base else 0)

    @cached_property
    def actuated_v_indices(self) -> np.ndarray:
        """Indices in ``v`` of the actuated independent degrees of freedom."""
        return _readonly_int(range(6 if self.floating_base else 0, self.nv))

    @cached_property
    def motor_joints(self) -> tuple[int, ...]:
        """Tree joint of each motor, cluster after cluster in layout order (a ball joint is one motor
        joint with three inputs)."""
        return tuple(c.joints[k] for c in self.infos for k in c.motors)

    @property
    def n_motors(self) -> int:
        """Number of motor inputs (a controller's inputs): one per motor degree of freedom."""
        return sum(len(c.motor_rows) for c in self.infos)

    @cached_property
    def motor_names(self) -> tuple[str, ...]:
        """Names of the motor inputs, in input order: the joint's name, ``name[k]`` for the ``k``-th
        axis of a multi-DoF joint (a ball joint's angular velocity axes in its child frame)."""
        names = []
        for j in self.motor_joints:
            joint = self.tree.joints[j]
            names += [joint.name] if joint.nv == 1 else [f"{joint.name}[{k}]" for k in range(joint.nv)]
        return tuple(names)

    @cached_property
    def motor_effort_limit(self) -> np.ndarray:
        """Effort limits of the motor inputs (n_motors,), N m or N, from their joints (inf when unknown)."""
        return _readonly([float(e) for j in self.motor_joints for e in self.tree.joints[j].effort])

    def frame_id(self, name: str) -> int:
        """Index of frame ``name`` in the spanning tree; :class:`~wbc.errors.FrameError` if unknown."""
        return self.tree.frame_id(name)

    def motor_block(self, k: int, y):
        """``G_kᵀ E_k`` (nv_k, n_motors_k): cluster ``k``'s independent forces per unit motor effort at
        ``y`` (CasADi): the rows of its ``G`` at its motor joints, transposed."""
        c = self.infos[k]
        G = self.G_block(k, y)
        return G[list(c.motor_rows), :].T

    def motor_map(self, y) -> np.ndarray:
        """``Gᵀ E`` (nv, n_motors): independent generalized forces per unit motor effort at ``y``."""
        y = checks.configuration(self.tree, y, "y")
        out = np.zeros((self.nv, self.n_motors))
        col = 0
        for k, c in enumerate(self.infos):
            if c.motors:
                n = len(c.motor_rows)
                out[c.idx_v : c.idx_v + c.nv, col : col + n] = _numbers(self.motor_block(k, ca.DM(y)))
                col += n
        return out

    def actuation_matrix(self) -> np.ndarray:
        """``Sᵀ`` (nv, n_actuated): independent generalized forces from actuated-coordinate efforts."""
        S = np.zeros((self.nv, self.n_actuated))
        S[self.actuated_v_indices, np.arange(self.n_actuated)] = 1.0
        return S

    # ----------------------------------------------------------------------------- G, g (CasADi)
    def cluster_coordinates(self, k: int, y):
        """The spanning coordinates (ny,) of cluster ``k``'s joints taken from a tree configuration."""
        joints = [self.tree.joints[j] for j in self.infos[k].joints]
        return ca.vertcat(*[y[j.idx_q : j.idx_q + j.nq] for j in joints])

    def cluster_velocities(self, k: int, yd):
        """The spanning velocities of cluster ``k``'s joints taken from a tree velocity."""
        joints = [self.tree.joints[j] for j in self.infos[k].joints]
        return ca.vertcat(*[yd[j.idx_v : j.idx_v + j.nv] for j in joints])

    def G_block(self, k: int, y):
        """``G`` (ny_c, nv_c) of cluster ``k`` at spanning configuration ``y`` (CasADi)."""
        c = self.infos[k]
        if c.G is not None:
            return ca.DM(c.G)
        _, jacobian, _ = c.loop_functions()
        K = jacobian(self.cluster_coordinates(k, y))
        ind, dep = list(c.independent), list(c.dependent)
        Gd = -ca.solve(K[:, dep], K[:, ind])
        return _interleave(ca.DM.eye(len(ind)), Gd, ind, dep)

    def g_block(self, k: int, y, yd):
        """``g = Ġ q̇`` (ny_c, 1) of cluster ``k`` at ``(y, ẏ)``, ``ẏ`` a tree velocity (CasADi)."""
        c = self.infos[k]
        if c.G is not None:
            return None
        _, jacobian, bias = c.loop_functions()
        yc = self.cluster_coordinates(k, y)
        K = jacobian(yc)
        b = bias(yc, self.cluster_velocities(k, yd))
        ind, dep = list(c.independent), list(c.dependent)
        gd = -ca.solve(K[:, dep], b)
        return _interleave(ca.DM.zeros(len(ind), 1), gd, ind, dep)

    # ----------------------------------------------------------------------------- numpy helpers
    def independent_configuration(self, y) -> np.ndarray:
        """The independent coordinates (nq,) read from a spanning configuration ``y`` (tree.nq)."""
        y = checks.configuration(self.tree, y, "y")
        return y[self.independent_q_indices].copy()

    def spanning_configuration(self, q, guess=None) -> np.ndarray:
        """The spanning configuration ``y = φ(q)`` (tree.nq) of independent coordinates ``q`` (nq,).

        Dependent coordinates of implicit loops are found by Newton's method from ``guess`` (a
        spanning configuration; default the tree's neutral one), to ``SOLVE_TOLERANCE``.

        Raises:
            InputError: wrong sizes, or a loop that cannot be closed from ``guess`` (named).
        """
        q = checks.vector(q, self.nq, "q")
        y = tree_neutral(self.tree) if guess is None else checks.vector(guess, self.tree.nq, "guess").copy()
        y[self.independent_q_indices] = q
        y = checks.configuration(self.tree, y, "y")
        for k, c in enumerate(self.infos):
            if not c.trivial:
                self._close(k, y)
        return y

    def _close(self, k: int, y: np.ndarray) -> None:
        """Solve cluster ``k``'s residual for its dependent coordinates in place."""
        c = self.infos[k]
        qidx = np.array([self.tree.joints[j].idx_q for j in c.joints])
        dep = list(c.dependent)
        residual, jacobian, _ = c.loop_functions()
        scale = 1.0
        for _ in range(60):
            yc = y[qidx]
            r = _numbers(residual(yc)).reshape(-1)
            if np.max(np.abs(r), initial=0.0) <= SOLVE_TOLERANCE * scale:
                return
            K = _numbers(jacobian(yc))
            step, *_ = np.linalg.lstsq(K[:, dep], r, rcond=None)
            big = np.max(np.abs(step), initial=0.0)
            if big > 0.5 and not c.explicit:  # damped far from the solution: stay on the branch of the guess
                step *= 0.5 / big
            y[qidx[dep]] -= step
            if not np.all(np.isfinite(y)):
                break
        r = _numbers(residual(y[qidx])).reshape(-1)
        if np.max(np.abs(r), initial=0.0) > 1e-11:
            raise InputError(
                f"cluster {c.name!r}: the loop could not be closed from this configuration "
                f"(residual {np.max(np.abs(r)):.3g}); it may be out of the mechanism's range"
            )

    def spanning_velocity(self, y, v) -> np.ndarray:
        """``ẏ = G(y) v`` (tree.nv) from independent velocities ``v`` (nv,)."""
        y = checks.configuration(self.tree, y, "y")
        v = checks.vector(v, self.nv, "v")
        G = np.array(ca.DM(self.G_matrix(ca.DM(y))), dtype=float)
        return G @ v

    def actuator_map(self, y, joints: Sequence[str]) -> np.ndarray:
        """``Gᵀ E`` (nv, len(joints)): independent generalized forces per unit effort (N m or N)
        applied at spanning-tree ``joints`` (motors driving rotors, cranks, ...), at ``y``.

        E.g. a geared rotor's column holds its gear ratio on its link; a parallel ankle's crank
        motors map to the ankle pitch and roll through the loop's ``G``.
        """
        y = checks.configuration(self.tree, y, "y")
        G = np.array(ca.DM(self.G_matrix(ca.DM(y))), dtype=float)
        cols = []
        for name in joints:
            j = self.tree.joints[self.tree.joint_id(name)]
            if j.nv != 1:
                raise ModelError(f"actuator joint {name!r} must have one degree of freedom")
            cols.append(G[j.idx_v])
        return np.array(cols).T.reshape(self.nv, len(cols))

    def G_matrix(self, y):
        """The whole ``G`` (tree.nv, nv) at ``y`` (CasADi), block structure explicit."""
        like = y
        G = ca.SX(self.tree.nv, self.nv) if isinstance(like, ca.SX) else ca.DM(self.tree.nv, self.nv)
        for k, c in enumerate(self.infos):
            rows = self.spanning_v_indices(k)
            G[rows, list(range(c.idx_v, c.idx_v + c.nv))] = self.G_block(k, y)
        return G

    def g_vector(self, y, yd):
        """The whole ``g`` (tree.nv, 1) at ``(y, ẏ)`` (CasADi)."""
        g = ca.SX(self.tree.nv, 1) if isinstance(y, ca.SX) else ca.DM(self.tree.nv, 1)
        for k in range(len(self.infos)):
            gk = self.g_block(k, y, yd)
            if gk is not None:
                g[self.spanning_v_indices(k), 0] = gk
        return g

    def spanning_v_indices(self, k: int) -> list[int]:
        """Tree velocity indices of cluster ``k``'s joints, in its joint order."""
        out: list[int] = []
        for j in self.infos[k].joints:
            jt = self.tree.joints[j]
            out.extend(range(jt.idx_v, jt.idx_v + jt.nv))
        return out

    def loop_residual(self, y) -> np.ndarray:
        """Every cluster's residual ``r(y)`` stacked (numpy), for checks."""
        y = checks.configuration(self.tree, y, "y")
        parts = []
        for k, c in enumerate(self.infos):
            if c.residual is not None:
                parts.append(np.array(c.residual(np.array(ca.DM(self.cluster_coordinates(k, ca.DM(y)))))).reshape(-1))
        return np.concatenate(parts) if parts else np.zeros(0)

    def neutral(self) -> np.ndarray:
        """A spanning configuration (tree.nq) at zero independent coordinates (loops closed)."""
        return self.spanning_configuration(tree_neutral(self.tree)[self.independent_q_indices])

    def random_configuration(self, rng: np.random.Generator | None = None, scale: float = 1.0) -> np.ndarray:
        """A random spanning configuration (tree.nq): random independent coordinates within the
        joint limits (loops: within ``scale`` times their limits around zero), loops closed."""
        rng = rng or np.random.default_rng()
        q = tree_random(self.tree, rng)[self.independent_q_indices]
        if any(not c.explicit for c in self.infos):
            q_loop = q.copy()
            for c in self.infos:
                if not c.explicit:
                    for k in c.independent:
                        j = self.tree.joints[c.joints[k]]
                        lo, hi = j.lower[0], j.upper[0]
                        lo = lo if np.isfinite(lo) else -1.0
                        hi = hi if np.isfinite(hi) else 1.0
                        pos = self._q_position(c.joints[k])
                        q_loop[pos] = rng.uniform(lo * scale, hi * scale) if lo < 0 < hi else rng.uniform(lo, hi)
            q = q_loop
        return self.spanning_configuration(q)

    def _q_position(self, joint: int) -> int:
        off = 0
        for j in self.independent_joints:
            if j == joint:
                return off
            off += self.tree.joints[j].nq
        raise KeyError(joint)

    def _check_reference(self) -> None:
        """Close every implicit loop at the neutral configuration and check ``K_d`` is invertible."""
        implicit = [k for k, c in enumerate(self.infos) if not c.trivial]
        if not implicit:
            return
        try:
            y = self.neutral()
        except InputError as e:
            raise ModelError(f"model {self.name!r}: {e}") from None
        for k in implicit:
            c = self.infos[k]
            _, jacobian, _ = c.loop_functions()
            K = _numbers(jacobian(np.array(ca.DM(self.cluster_coordinates(k, ca.DM(y))))))
            Kd = K[:, list(c.dependent)]
            s = np.linalg.svd(Kd, compute_uv=False)
            if s.size and s[-1] <= 1e-9 * max(1.0, s[0]):
                raise ModelError(
                    f"cluster {c.name!r}: its constraints do not determine the dependent joints "
                    f"{[self.tree.joints[c.joints[i]].name for i in c.dependent]} (singular at the neutral "
                    "configuration): check the rows of its loop closures and couplings"
                )

    def __repr__(self) -> str:
        n = sum(1 for c in self.infos if not c.trivial)
        return (
            f"ClusterModel({self.name!r}, nq={self.nq}, nv={self.nv}, tree nv={self.tree.nv}, "
            f"clusters={n}, floating_base={self.floating_base})"
        )


def _numbers(x) -> np.ndarray:
    """A CasADi result (DM) as a float numpy array."""
    return np.array(ca.DM(x), dtype=np.float64)


def _readonly_int(idx) -> np.ndarray:
    out = np.array(list(idx), dtype=int)
    out.flags.writeable = False
    return out


def _interleave(top, bottom, ind: list[int], dep: list[int]):
    """Rows of ``top`` at positions ``ind`` and of ``bottom`` at ``dep``."""
    n = len(ind) + len(dep)
    rows: list = [None] * n
    for r, k in enumerate(ind):
        rows[k] = top[r, :]
    for r, k in enumerate(dep):
        rows[k] = bottom[r, :]
    return ca.vertcat(*rows)


# ------------------------------------------------------------------------------------- resolution
def _resolve(tree: Model, clusters: Sequence[Cluster]) -> tuple[tuple[ClusterInfo, ...], tuple[int, ...]]:
    owner_decl: dict[int, int] = {}
    for d, cl in enumerate(clusters):
        if not isinstance(cl, Cluster):
            raise ModelError(f"cluster {d} is a {type(cl).__name__}, expected wbc.Cluster")
        if not cl.joints:
            raise ModelError(f"cluster {cl.name!r} has no joints")
        for name in cl.joints:
            j = _joint(tree, name, cl.name)
            if j in owner_decl:
                raise ModelError(
                    f"joint {name!r} is in clusters {clusters[owner_decl[j]].name!r} and {cl.name!r}; a joint "
                    "belongs to one cluster"
                )
            jt = tree.joints[j]
            if jt.type not in (JointType.REVOLUTE, JointType.PRISMATIC):
                raise ModelError(
                    f"cluster {cl.name!r}: joint {name!r} is {jt.type.value}; "
                    "clusters hold revolute or prismatic joints"
                )
            owner_decl[j] = d
        for name in cl.independent:
            if name not in cl.joints:
                raise ModelError(f"cluster {cl.name!r}: independent joint {name!r} is not one of its joints")
        if len(set(cl.independent)) != len(cl.independent):
            raise ModelError(f"cluster {cl.name!r}: an independent joint is listed twice")
    # every tree joint: a declared cluster or its own
    groups: list[tuple[int, Cluster | None, tuple[int, ...]]] = []
    seen_decl: set[int] = set()
    for j in range(1, tree.njoints):
        if j in owner_decl:
            d = owner_decl[j]
            if d in seen_decl:
                continue
            seen_decl.add(d)
            joints = tuple(sorted(_joint(tree, n, clusters[d].name) for n in clusters[d].joints))
            groups.append((joints[0], clusters[d], joints))
        else:
            groups.append((j, None, (j,)))
    groups.sort(key=lambda g: g[0])
    owner = [-1] * tree.njoints
    for k, (_, _, joints) in enumerate(groups):
        for j in joints:
            owner[j] = k
    infos: list[ClusterInfo] = []
    iq = iv = 0
    for _, decl, joints in groups:
        members = set(joints)
        outputs = []
        parents = set()
        for j in joints:
            o = tree.joints[j].parent
            while o in members:
                o = tree.joints[o].parent
            outputs.append(o)
            parents.add(-1 if o == 0 else owner[o])
        name = decl.name if decl is not None else tree.joints[joints[0]].name
        if len(parents) != 1:
            raise ModelError(
                f"cluster {name!r}: its bodies hang from several clusters "
                f"({sorted(infos[p].name if p >= 0 else 'world' for p in parents)}); a cluster's outside "
                "parents must all belong to one cluster"
            )
        parent = parents.pop()
        if decl is None:
            jt = tree.joints[joints[0]]
            info = ClusterInfo(
                name,
                joints,
                (0,),
                parent,
                tuple(outputs),
                iq,
                jt.nq,
                iv,
                jt.nv,
                _readonly(np.eye(jt.nv)),
                None,
                None,
                None,
                None,
                (0,) if joints[0] in tree.actuated and jt.type is not JointType.FREE_FLYER else (),
            )
        else:
            info = _declared_info(tree, decl, joints, parent, tuple(outputs), iq, iv)
        infos.append(info)
        iq += info.nq
        iv += info.nv
    return tuple(infos), tuple(owner)


def _joint(tree: Model, name: str, cluster: str) -> int:
    if not isinstance(name, str):
        raise ModelError(f"cluster {cluster!r}: joint names must be strings, got {name!r}")
    try:
        return tree.joint_id(name)
    except ModelError as e:
        raise ModelError(f"cluster {cluster!r}: {e}") from None


def _declared_info(
    tree: Model, decl: Cluster, joints: tuple[int, ...], parent: int, outputs: tuple[int, ...], iq: int, iv: int
) -> ClusterInfo:
    pos = {j: k for k, j in enumerate(joints)}
    independent = tuple(sorted(pos[_joint(tree, n, decl.name)] for n in decl.independent))
    n_dep = len(joints) - len(independent)
    ys = ca.SX.sym("y", len(joints))
    rows = []
    linear = True
    for c in decl.constraints:
        if isinstance(c, JointCoupling):
            dep = _member(tree, c.joint, pos, decl.name)
            expr = ys[dep] - float(c.offset)
            for src, ratio in c.sources:
                expr = expr - float(ratio) * ys[_member(tree, src, pos, decl.name)]
            rows.append(expr)
        elif isinstance(c, PolynomialCoupling):
            dep = _member(tree, c.joint, pos, decl.name)
            y_src = ys[_member(tree, c.source, pos, decl.name)]
            coeffs = [float(x) for x in c.coefficients]
            if not coeffs:
                raise ModelError(f"cluster {decl.name!r}: coupling of {c.joint!r} has no coefficients")
            expr = ys[dep]
            for p, coef in enumerate(coeffs):
                if coef != 0.0:
                    expr = expr - coef * y_src**p
            linear = linear and all(x == 0.0 for x in coeffs[2:])
            rows.append(expr)
        elif isinstance(c, LoopClosure):
            linear = False
            rows.extend(_closure_rows(tree, c, joints, pos, ys, decl.name))
        else:
            raise ModelError(f"cluster {decl.name!r}: unknown constraint {type(c).__name__}")
    if len(rows) != n_dep:
        raise ModelError(
            f"cluster {decl.name!r}: {len(joints)} joints, {len(independent)} independent, so {n_dep} "
            f"constraint rows are needed; its constraints give {len(rows)}"
        )
    r = ca.vertcat(*rows) if rows else ca.SX(0, 1)
    yd = ca.SX.sym("yd", len(joints))
    K = ca.jacobian(r, ys)
    Kdot_yd = ca.mtimes(ca.jacobian(ca.mtimes(K, yd), ys), yd)
    tag = f"cluster_{hashlib.sha1(decl.name.encode()).hexdigest()[:10]}"  # deterministic, C-safe
    residual = ca.Function(f"{tag}_r", [ys], [r])
    jacobian = ca.Function(f"{tag}_K", [ys], [K])
    bias = ca.Function(f"{tag}_Kdot", [ys, yd], [Kdot_yd])
    G = None
    if linear:
        Kn = np.array(ca.DM(jacobian(np.zeros(len(joints)))), dtype=float)
        ind, dep_cols = list(independent), [k for k in range(len(joints)) if k not in independent]
        Kd = Kn[:, dep_cols]
        if n_dep and np.linalg.matrix_rank(Kd) < n_dep:
            names = [tree.joints[joints[k]].name for k in dep_cols]
            raise ModelError(f"cluster {decl.name!r}: its couplings do not determine the dependent joints {names}")
        G = np.zeros((len(joints), len(independent)))
        G[ind, :] = np.eye(len(independent))
        if n_dep:
            G[dep_cols, :] = -np.linalg.solve(Kd, Kn[:, ind])
        G = _readonly(G)
    nv = len(independent)
    if decl.actuated is None:
        motors = independent
    else:
        for name in decl.actuated:
            _member(tree, name, pos, decl.name)
        if len(set(decl.actuated)) != len(decl.actuated):
            raise ModelError(f"cluster {decl.name!r}: an actuated joint is listed twice")
        motors = tuple(sorted(pos[_joint(tree, n, decl.name)] for n in decl.actuated))
    return ClusterInfo(
        decl.name, joints, independent, parent, outputs, iq, nv, iv, nv, G, residual, jacobian, bias, decl, motors
    )


def _member(tree: Model, name: str, pos: Mapping[int, int], cluster: str) -> int:
    j = _joint(tree, name, cluster)
    if j not in pos:
        raise ModelError(f"cluster {cluster!r}: constraint names joint {name!r}, which is not in the cluster")
    return pos[j]


def _closure_rows(tree: Model, c: LoopClosure, joints, pos, ys, cluster: str) -> list:
    fa, fb = tree.frames[_frame(tree, c.frame_a, cluster)], tree.frames[_frame(tree, c.frame_b, cluster)]
    path_a, path_b = tree.support(fa.joint), tree.support(fb.joint)
    n = 0
    while n < min(len(path_a), len(path_b)) and path_a[n] == path_b[n]:
        n += 1
    chain_a, chain_b = path_a[n:], path_b[n:]  # below the closest common ancestor body
    for j in chain_a + chain_b:
        if j not in pos:
            raise ModelError(
                f"cluster {cluster!r}: loop closure {c.frame_a!r}-{c.frame_b!r} goes through joint "
                f"{tree.joints[j].name!r}, which is not in the cluster"
            )
    if not chain_a and not chain_b:
        raise ModelError(f"cluster {cluster!r}: loop closure {c.frame_a!r}-{c.frame_b!r} joins two frames of one body")

    def placement(chain, frame):
        M = SE3(np.eye(3), np.zeros((3, 1)))
        for j in chain:
            M = compose(M, joint_transform(tree.joints[j], ys[pos[j]]))
        return compose(M, frame.placement)

    Ma, Mb = placement(chain_a, fa), placement(chain_b, fb)
    pos_rows = ca.mtimes(Ma.R.T, Mb.p - Ma.p) * -1
    full = [pos_rows[i] for i in range(3)]
    if c.kind is ClosureKind.WELD:
        Rr = ca.mtimes(Ma.R.T, Mb.R)
        A = (Rr - Rr.T) / 2
        full += [A[2, 1], A[0, 2], A[1, 0]]
    elif c.kind is not ClosureKind.POINT:
        raise ModelError(f"cluster {cluster!r}: loop closure kind must be a ClosureKind, got {c.kind!r}")
    rows = tuple(range(len(full))) if c.rows is None else tuple(c.rows)
    for r in rows:
        if not isinstance(r, (int, np.integer)) or not 0 <= r < len(full):
            raise ModelError(f"cluster {cluster!r}: loop closure row {r!r} is out of range 0..{len(full) - 1}")
    return [full[r] for r in rows]


def _frame(tree: Model, name: str, cluster: str) -> int:
    try:
        return tree.frame_id(name)
    except Exception as e:  # FrameError
        raise ModelError(f"cluster {cluster!r}: {e}") from None


def closed_configuration(cm: ClusterModel, y, name: str = "y") -> np.ndarray:
    """``y`` checked as a spanning configuration of ``cm`` (tree.nq,): valid for the tree and closing
    every loop within :data:`LOOP_TOLERANCE`; an :class:`~wbc.errors.InputError` naming ``name``
    otherwise (it suggests ``cm.spanning_configuration(q)``)."""
    if not isinstance(cm, ClusterModel):
        raise InputError(f"model must be a wbc.ClusterModel, got {type(cm).__name__}")
    try:
        y = checks.configuration(cm.tree, y, name)
    except InputError as e:
        raise InputError(
            f"{e}: a ClusterModel's positions are a configuration of its spanning tree ({cm.tree.nq} numbers); "
            f"build it with cm.spanning_configuration(...) from the {cm.nq} independent coordinates"
        ) from None
    r = cm.loop_residual(y)
    if r.size and np.max(np.abs(r)) > LOOP_TOLERANCE:
        raise InputError(
            f"{name} does not close the loops of {cm.name!r} (residual {np.max(np.abs(r)):.3g}); "
            "use cm.spanning_configuration(q)"
        )
    return y
