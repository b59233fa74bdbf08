"""A compiled MuJoCo model's equality constraints as clusters of a :class:`ClusterModel`.

Every active equality (``eq_active0``) becomes a constraint, read from the compiled ``eq_data``
(so anchors and ``relpose`` are what MuJoCo computed at ``qpos0``):

* ``connect``: a point loop closure between body1's anchor and the point of body2 that coincides
  with it at ``qpos0`` (or between two sites);
* ``weld``: a frame loop closure: body1's frame moved by the compiled ``relpose`` (where body2's
  anchor is, ``eq_data[3:10]``) against body2's frame moved to the anchor (or two site frames);
* ``joint``: MuJoCo's polynomial ``y₁ − y₁(qpos0) = Σ cₖ (y₂ − y₂(qpos0))ᵏ``, as a
  :class:`PolynomialCoupling` in wbc's absolute coordinates (a locked joint without ``joint2`` as a
  :class:`JointCoupling` without sources);
* ``tendon`` over fixed tendons: ``L₁ − L₁(qpos0) = c₀ + c₁ (L₂ − L₂(qpos0))``, with ``L = Σ coef · y``,
  a linear :class:`JointCoupling` among the tendons' joints.

Equalities sharing joints form one cluster. Its dependent joints are ``joint1`` of the joint
equalities, then, for the other rows, the non-actuated joints deepest in the tree that raise the
rank of the constraint Jacobian at a generic configuration near ``qpos0`` (rows a planar loop leaves
void everywhere are dropped; rows dependent only at a singular ``qpos0`` are kept). MuJoCo's
cluster's motors are its joints the file actuates. MuJoCo's
softness (``solref``, ``solimp``) is not modelled: wbc's constraints are exact. Refused, naming the
equality and why: a spatial tendon, a tendon polynomial beyond degree 1, a loop or coupling through
a free or ball joint, flex equalities.
"""

from __future__ import annotations

import math

import casadi as ca
import numpy as np

from ..errors import ModelError
from ..spatial.algebra import SE3
from .clusters import ClosureKind, Cluster, JointCoupling, LoopClosure, PolynomialCoupling, _closure_rows
from .mjcf import compose, quat_wxyz_matrix
from .model import Frame, FrameKind, JointType, Model

__all__ = ["read_equalities"]

_Item = tuple[set[str], JointCoupling | PolynomialCoupling | LoopClosure, str | None, str]


def _se3(R, p) -> SE3:
    return SE3(np.asarray(R, dtype=float), np.asarray(p, dtype=float).reshape(3, 1))


def _shifted_polynomial(d: np.ndarray, r1: float, r2: float) -> tuple[float, ...]:
    """Coefficients ``c`` of ``y₁ = Σ cₙ y₂ⁿ`` equal to ``y₁ = r₁ + d₀ + Σₖ dₖ (y₂ − r₂)ᵏ``."""
    c = [0.0] * len(d)
    c[0] = r1 + float(d[0])
    for k in range(1, len(d)):
        for n in range(k + 1):
            c[n] += float(d[k]) * math.comb(k, n) * (-r2) ** (k - n)
    return tuple(c)


class _Reader:
    def __init__(self, m, where: str, tree: Model, body_frames: dict[int, tuple[int, SE3]]) -> None:
        import mujoco

        self.m, self.where, self.tree, self.body_frames, self.mujoco = m, where, tree, body_frames, mujoco
        self.frames: list[Frame] = []

    def name(self, objtype, i: int, kind: str) -> str:
        return self.mujoco.mj_id2name(self.m, objtype, i) or f"{kind}{i}"

    def joint(self, k: int, label: str) -> str:
        """The wbc name of MuJoCo joint ``k``, which must be a hinge or a slide."""
        j = self.tree.joints[k + 1]
        if j.type not in (JointType.REVOLUTE, JointType.PRISMATIC):
            raise ModelError(
                f"{self.where}: {label} couples joint {j.name!r} ({j.type.value}); "
                "couplings hold hinge and slide joints"
            )
        return j.name

    def items(self) -> list[_Item]:
        m, eq = self.m, self.mujoco.mjtEq
        out: list[_Item] = []
        for e in range(m.neq):
            if not m.eq_active0[e]:
                continue
            name = self.name(self.mujoco.mjtObj.mjOBJ_EQUALITY, e, "equality")
            kind = int(m.eq_type[e])
            label = f"equality {name!r}"
            if kind == int(eq.mjEQ_JOINT):
                out.append(self._joint(e, label))
            elif kind == int(eq.mjEQ_TENDON):
                out.append(self._tendon(e, label))
            elif kind in (int(eq.mjEQ_CONNECT), int(eq.mjEQ_WELD)):
                out.append(self._closure(e, name, label, kind == int(eq.mjEQ_WELD)))
            else:
                kind_name = eq(kind).name.removeprefix("mjEQ_").lower()
                raise ModelError(f"{self.where}: {label} is a {kind_name} equality, which wbc cannot represent")
        return out

    def _joint(self, e: int, label: str) -> _Item:
        m = self.m
        j1, j2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
        n1 = self.joint(j1, label)
        r1 = float(m.qpos0[m.jnt_qposadr[j1]])
        d = np.array(m.eq_data[e][:5], dtype=float)
        if j2 < 0:
            return {n1}, JointCoupling(n1, (), r1 + float(d[0])), n1, label
        n2 = self.joint(j2, label)
        r2 = float(m.qpos0[m.jnt_qposadr[j2]])
        return {n1, n2}, PolynomialCoupling(n1, n2, _shifted_polynomial(d, r1, r2)), n1, label

    def _fixed_tendon(self, t: int, label: str) -> dict[str, float]:
        m, obj = self.m, self.mujoco.mjtObj
        adr, num = int(m.tendon_adr[t]), int(m.tendon_num[t])
        tendon = self.name(obj.mjOBJ_TENDON, t, "tendon")
        out: dict[str, float] = {}
        for w in range(adr, adr + num):
            if int(m.wrap_type[w]) != int(self.mujoco.mjtWrap.mjWRAP_JOINT):
                raise ModelError(
                    f"{self.where}: {label} holds the spatial tendon {tendon!r}, whose length is not a linear "
                    "function of joint coordinates; wbc represents equalities of fixed tendons only"
                )
            n = self.joint(int(m.wrap_objid[w]), label)
            out[n] = out.get(n, 0.0) + float(m.wrap_prm[w])
        return out

    def _tendon(self, e: int, label: str) -> _Item:
        m = self.m
        t1, t2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
        d = np.array(m.eq_data[e][:5], dtype=float)
        coef = self._fixed_tendon(t1, label)
        rhs = float(m.tendon_length0[t1]) + float(d[0])  # Σ coef y = rhs
        if t2 >= 0:
            if np.any(d[2:] != 0.0):
                raise ModelError(
                    f"{self.where}: {label}: a tendon polynomial of degree > 1 couples several joints "
                    "non-linearly, which wbc cannot represent"
                )
            for n, c in self._fixed_tendon(t2, label).items():
                coef[n] = coef.get(n, 0.0) - float(d[1]) * c
            rhs -= float(d[1]) * float(m.tendon_length0[t2])
        coef = {n: c for n, c in coef.items() if c != 0.0}
        if not coef:
            raise ModelError(f"{self.where}: {label}: its tendons' coefficients cancel; it constrains nothing")
        # the row, scaled by the coefficient of largest magnitude (deepest joint on ties)
        lead = max(coef, key=lambda n: (abs(coef[n]), self.tree.joint_id(n)))
        sources = tuple((n, -c / coef[lead]) for n, c in coef.items() if n != lead)
        return set(coef), JointCoupling(lead, sources, rhs / coef[lead]), None, label

    def _closure(self, e: int, name: str, label: str, weld: bool) -> _Item:
        m, obj = self.m, self.mujoco.mjtObj
        o1, o2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
        d = np.array(m.eq_data[e], dtype=float)
        if int(m.eq_objtype[e]) == int(obj.mjOBJ_SITE):
            (j1, Fa), (j2, Fb) = self._site(o1), self._site(o2)
        else:
            (j1, M1), (j2, M2) = self.body_frames[o1], self.body_frames[o2]
            if weld:
                R_rel = quat_wxyz_matrix(d[6:10])
                Fa = compose(M1, _se3(R_rel, d[3:6]))  # (the compiler has put the anchor in d[3:6])
                Fb = compose(M2, _se3(np.eye(3), d[0:3]))
            else:
                Fa = compose(M1, _se3(np.eye(3), d[0:3]))
                Fb = compose(M2, _se3(np.eye(3), d[3:6]))
        fa, fb = f"{name}_a", f"{name}_b"
        self.frames += [Frame(fa, FrameKind.OP, j1, Fa), Frame(fb, FrameKind.OP, j2, Fb)]
        tree = self.tree
        path1, path2 = tree.support(j1), tree.support(j2)
        n = 0
        while n < min(len(path1), len(path2)) and path1[n] == path2[n]:
            n += 1
        for j in path1[n:] + path2[n:]:
            if tree.joints[j].type not in (JointType.REVOLUTE, JointType.PRISMATIC):
                raise ModelError(
                    f"{self.where}: {label}: the loop goes through joint {tree.joints[j].name!r} "
                    f"({tree.joints[j].type.value}); loops may only contain hinge and slide joints"
                )
        joints = {tree.joints[j].name for j in path1[n:] + path2[n:]}
        if not joints:
            raise ModelError(f"{self.where}: {label} joins two frames of one rigid body; it constrains nothing")
        kind = ClosureKind.WELD if weld else ClosureKind.POINT
        return joints, LoopClosure(fa, fb, kind), None, label

    def _site(self, s: int) -> tuple[int, SE3]:
        m = self.m
        joint, in_joint = self.body_frames[int(m.site_bodyid[s])]
        return joint, compose(in_joint, _se3(quat_wxyz_matrix(m.site_quat[s]), m.site_pos[s]))


def read_equalities(
    m, where: str, tree: Model, body_frames: dict[int, tuple[int, SE3]], actuated
) -> tuple[Model, list[Cluster]]:
    """The tree with the loop closures' frames added, and the clusters of ``m``'s equalities.

    Raises:
        ModelError: an equality wbc cannot represent, or redundant or inconsistent constraints (named).
    """
    reader = _Reader(m, where, tree, body_frames)
    items = reader.items()
    if not items:
        return tree, []
    groups: list[tuple[set[str], list]] = []
    for joints, c, forced, label in items:
        merged = [g for g in groups if g[0] & joints]
        new_joints, members = set(joints), [(c, forced, label)]
        for g in merged:
            new_joints |= g[0]
            members = g[1] + members
            groups.remove(g)
        groups.append((new_joints, members))
    full = Model(
        tree.name, tree.joints, tree.inertias, tree.frames + tuple(reader.frames), tree.actuated, tree.gravity, where
    )
    y0 = _wbc_configuration(m, full)
    clusters = [
        _cluster(full, where, f"equality_cluster{n}", joints, members, actuated, y0)
        for n, (joints, members) in enumerate(sorted(groups, key=lambda g: min(full.joint_id(j) for j in g[0])))
    ]
    return full, clusters


def _wbc_configuration(m, tree: Model) -> np.ndarray:
    """``qpos0`` in wbc's layout (quaternions x y z w)."""
    y = np.array(m.qpos0, dtype=float)
    for j in tree.joints[1:]:
        if j.type in (JointType.FREE_FLYER, JointType.SPHERICAL):
            s = j.idx_q + (3 if j.type is JointType.FREE_FLYER else 0)
            y[s : s + 4] = np.roll(np.array(m.qpos0[s : s + 4]), -1)
    return y


def _cluster(tree: Model, where: str, cname: str, joint_names: set[str], members, actuated, y_tree) -> Cluster:
    joints = sorted(tree.joint_id(j) for j in joint_names)
    pos = {j: i for i, j in enumerate(joints)}
    ys = ca.SX.sym("y", len(joints))
    # a generic configuration near qpos0: rows void everywhere (a planar loop's) drop out, rows that
    # are dependent only at a singular qpos0 (a straight chain) stay
    y0 = np.array([y_tree[tree.joints[j].idx_q] for j in joints])
    y0 = y0 + np.random.default_rng(0).normal(0.0, 0.3, y0.size)
    forced: list[str] = []
    constraints = []
    rows_all: list[np.ndarray] = []
    for c, dep, label in members:
        if isinstance(c, LoopClosure):
            rows = _closure_rows(tree, c, joints, pos, ys, cname)
            K = np.array(ca.DM(ca.Function("k", [ys], [ca.jacobian(ca.vertcat(*rows), ys)])(y0)))
            keep = _independent_rows(K, rows_all)
            if not keep:
                raise ModelError(f"{where}: {label}: the closure constrains nothing")
            rows_all += [K[r] for r in keep]
            constraints.append(LoopClosure(c.frame_a, c.frame_b, c.kind, tuple(keep)))
            continue
        r = np.zeros(len(joints))
        if isinstance(c, PolynomialCoupling):
            r[pos[tree.joint_id(c.joint)]] = 1.0
            y_src = y0[pos[tree.joint_id(c.source)]]
            slope = sum(k * ck * y_src ** (k - 1) for k, ck in enumerate(c.coefficients) if k)
            r[pos[tree.joint_id(c.source)]] -= slope
        else:
            r[pos[tree.joint_id(c.joint)]] = 1.0
            for src, ratio in c.sources:
                r[pos[tree.joint_id(src)]] -= ratio
        if dep is not None:
            if dep in forced:
                raise ModelError(f"{where}: {label}: joint {dep!r} is joint1 of two joint equalities")
            forced.append(dep)
        if _rank(np.array(rows_all + [r])) == len(rows_all):
            raise ModelError(f"{where}: {label} repeats constraints already imposed on its joints")
        rows_all.append(r)
        constraints.append(c)
    K = np.array(rows_all)
    # dependent joints: joint1 of the joint equalities, then non-actuated and deepest first
    dep = [pos[tree.joint_id(d)] for d in forced]
    order = sorted(range(len(joints)), key=lambda i: (joints[i] in actuated, -joints[i]))
    for i in order:
        if len(dep) == K.shape[0]:
            break
        if i not in dep and _rank(K[:, dep + [i]]) > _rank(K[:, dep]):
            dep.append(i)
    if len(dep) != K.shape[0] or _rank(K[:, dep]) < len(dep):
        raise ModelError(f"{where}: equality cluster {sorted(joint_names)} has redundant or inconsistent constraints")
    independent = tuple(tree.joints[joints[i]].name for i in range(len(joints)) if i not in dep)
    motors = tuple(tree.joints[j].name for j in joints if j in actuated)  # the file's actuated joints
    return Cluster(cname, tuple(tree.joints[j].name for j in joints), independent, tuple(constraints), motors)


def _rank(A: np.ndarray) -> int:
    return 0 if A.size == 0 else int(np.linalg.matrix_rank(A, tol=1e-9))


def _independent_rows(K: np.ndarray, previous: list) -> list[int]:
    """Rows of ``K`` that raise the rank of ``previous + rows`` (void rows of planar loops dropped)."""
    keep = []
    base = list(previous)
    for r in range(K.shape[0]):
        if _rank(np.array(base + [K[r]])) > _rank(np.array(base)):
            keep.append(r)
            base.append(K[r])
    return keep
