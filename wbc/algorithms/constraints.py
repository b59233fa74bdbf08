"""Link constraints: rows ``K`` that act on one body's spatial acceleration.

A constraint on a frame yields ``m`` rows of a frame Jacobian, so a user can check every result
by hand with :func:`wbc.frame_jacobian`:

* :class:`PointConstraint` (3 rows): the linear velocity of a point of the frame's body
  (``offset`` in the frame), in world axes: rows 0-2 of the ``LOCAL_WORLD_ALIGNED`` Jacobian of
  that point (or in the frame's axes with ``reference=LOCAL``). Its force is a 3D force at the
  point in the same axes.
* :class:`WeldConstraint` (6 rows): the ``LOCAL_WORLD_ALIGNED`` Jacobian of the frame; its force
  is a wrench [f; n] at the frame origin, world axes.
* :class:`LinkConstraint` (k rows): ``rows @ J(frame, reference)`` for any ``rows`` (k, 6) and
  ``reference`` LOCAL or LOCAL_WORLD_ALIGNED.

Internally each constraint becomes ``K`` (m, 6): the map from its body's spatial acceleration
in the body's joint frame to the constraint rows (the ``K_i`` of the PV-OSIMr paper); then the
constraint Jacobian is ``K J_body`` and its force acts on the body as ``Kᵀ λ``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import casadi as ca
import numpy as np

from ..errors import InputError
from ..model.model import Model
from ..spatial.lie import skew
from .kinematics import ReferenceFrame, TreeKinematics

__all__ = [
    "PointConstraint",
    "WeldConstraint",
    "LinkConstraint",
    "Constraint",
    "resolve",
    "ResolvedConstraint",
]


@dataclasses.dataclass(frozen=True)
class PointConstraint:
    """3 rows: velocity of the point ``offset`` (m, in ``frame``), in world axes
    (``LOCAL_WORLD_ALIGNED``, default) or in the frame's axes (``LOCAL``)."""

    frame: str
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    reference: ReferenceFrame = ReferenceFrame.LOCAL_WORLD_ALIGNED

    @property
    def dim(self) -> int:
        return 3


@dataclasses.dataclass(frozen=True)
class WeldConstraint:
    """6 rows: the ``LOCAL_WORLD_ALIGNED`` spatial velocity of ``frame``."""

    frame: str

    @property
    def dim(self) -> int:
        return 6


@dataclasses.dataclass(frozen=True, eq=False)
class LinkConstraint:
    """k rows: ``rows`` (k, 6) times the Jacobian of ``frame`` in ``reference``."""

    frame: str
    rows: np.ndarray
    reference: ReferenceFrame = ReferenceFrame.LOCAL

    @property
    def dim(self) -> int:
        return int(np.asarray(self.rows).shape[0])


Constraint = PointConstraint | WeldConstraint | LinkConstraint


@dataclasses.dataclass(frozen=True)
class ResolvedConstraint:
    """A constraint checked against a model: its frame index, body (joint) and row count."""

    constraint: Constraint
    frame: int
    joint: int
    dim: int

    def local_matrix(self, kin: TreeKinematics):
        """``K`` (dim, 6): rows in terms of the body's spatial acceleration in its joint frame."""
        model = kin.model
        f = model.frames[self.frame]
        R = kin.oMi[f.joint].R
        c = self.constraint
        if isinstance(c, PointConstraint):
            point = f.placement.R @ np.asarray(c.offset, float).reshape(3, 1) + f.placement.p
            if c.reference is ReferenceFrame.LOCAL:
                Rf = ca.DM(f.placement.R.T)
                return ca.horzcat(Rf, -ca.mtimes(Rf, skew(point)))
            return ca.horzcat(R, -ca.mtimes(R, skew(point)))
        lwa = ca.vertcat(ca.horzcat(R, -ca.mtimes(R, skew(f.placement.p))), ca.horzcat(ca.DM.zeros(3, 3), R))
        if isinstance(c, WeldConstraint):
            return lwa
        rows = ca.DM(np.asarray(c.rows, float))
        if c.reference is ReferenceFrame.LOCAL_WORLD_ALIGNED:
            return ca.mtimes(rows, lwa)
        Rf, pf = f.placement.R, f.placement.p  # LOCAL: motion transform from the joint frame to the frame
        local = np.zeros((6, 6))
        local[0:3, 0:3] = Rf.T
        local[0:3, 3:6] = -Rf.T @ np.array(ca.DM(skew(pf)))
        local[3:6, 3:6] = Rf.T
        return ca.mtimes(rows, ca.DM(local))

    def aligned_rows(self, kin: TreeKinematics):
        """``G`` (dim, 6) with ``K = G · diag(R, R)``: the rows in terms of the body's spatial
        acceleration at its joint origin in world axes (``R`` the body's world rotation).

        Sparse for points and welds (``G = [I, −[c]×]`` with ``c`` the world-axis lever arm), which
        lets several constraints on one body share a 6D wrench basis cheaply.
        """
        model = kin.model
        f = model.frames[self.frame]
        R = kin.oMi[f.joint].R
        c = self.constraint
        if isinstance(c, PointConstraint) and c.reference is ReferenceFrame.LOCAL_WORLD_ALIGNED:
            point = f.placement.R @ np.asarray(c.offset, float).reshape(3, 1) + f.placement.p
            return ca.horzcat(ca.DM.eye(3), -skew(ca.mtimes(R, point)))
        weld = ca.vertcat(
            ca.horzcat(ca.DM.eye(3), -skew(ca.mtimes(R, f.placement.p))), ca.horzcat(ca.DM.zeros(3, 3), ca.DM.eye(3))
        )
        if isinstance(c, WeldConstraint):
            return weld
        if isinstance(c, LinkConstraint) and c.reference is ReferenceFrame.LOCAL_WORLD_ALIGNED:
            return ca.mtimes(ca.DM(np.asarray(c.rows, float)), weld)
        # LOCAL points and LOCAL rows: K = G diag(R, R), so G = K diag(Rᵀ, Rᵀ)
        return ca.mtimes(self.local_matrix(kin), ca.diagcat(R.T, R.T))

    def drift(self, kin: TreeKinematics, acceleration=None):
        """``d/dt(K J v) − K J q̈`` (dim, 1): the constraint-row acceleration at zero joint acceleration.

        Exact for every kind: the classical acceleration of a point in world axes (LWA points), the
        spatial acceleration in the frame (LOCAL rows), and so on. Given the body's spatial
        ``acceleration`` (6, 1) in its joint frame at some ``q̈``, the rows' acceleration
        ``K J q̈ + drift`` at that ``q̈`` instead (no Jacobian product).
        """
        model = kin.model
        f = model.frames[self.frame]
        v = kin.velocities[f.joint]
        a = kin.drift_accelerations[f.joint] if acceleration is None else acceleration
        w, al = v[3:6], a[3:6]
        c = self.constraint
        if isinstance(c, LinkConstraint) and c.reference is ReferenceFrame.LOCAL:
            return ca.mtimes(self.local_matrix(kin), a)
        R = kin.oMi[f.joint].R
        if isinstance(c, PointConstraint):
            point = ca.DM(f.placement.R @ np.asarray(c.offset, float).reshape(3, 1) + f.placement.p)
            vp = v[0:3] + ca.cross(w, point)
            acc = a[0:3] + ca.cross(al, point) + ca.cross(w, vp)  # classical, body axes
            if c.reference is ReferenceFrame.LOCAL:  # d/dt of the velocity in the (rotating) frame's axes
                return ca.mtimes(ca.DM(f.placement.R.T), acc - ca.cross(w, vp))
            return ca.mtimes(R, acc)
        pf = ca.DM(f.placement.p)
        vp = v[0:3] + ca.cross(w, pf)
        lwa = ca.vertcat(ca.mtimes(R, a[0:3] + ca.cross(al, pf) + ca.cross(w, vp)), ca.mtimes(R, al))
        if isinstance(c, WeldConstraint):
            return lwa
        return ca.mtimes(ca.DM(np.asarray(c.rows, float)), lwa)

    def jacobian(self, kin: TreeKinematics):
        """The constraint Jacobian (dim, nv) = ``K J_body`` (``J_body`` the LOCAL Jacobian of the body)."""
        return ca.mtimes(self.local_matrix(kin), kin.joint_jacobian_local(self.joint))


def _as_float_array(x) -> np.ndarray | None:
    """``x`` as a float array, or None when it is not numeric (text, ragged lists, ...)."""
    try:
        return np.asarray(x, float)
    except (TypeError, ValueError):
        return None


def resolve(model: Model, constraints: Sequence[Constraint]) -> list[ResolvedConstraint]:
    """Check ``constraints`` against ``model``.

    Raises:
        FrameError: an unknown frame.
        InputError: not a constraint, a malformed ``rows`` matrix or ``offset``, an unsupported
            reference, or a frame fixed to the world (its rows would be zero).
    """
    if isinstance(constraints, (PointConstraint, WeldConstraint, LinkConstraint)):
        raise InputError("constraints must be a list of constraints; wrap a single one as [constraint]")
    out = []
    for k, c in enumerate(constraints):
        if not isinstance(c, (PointConstraint, WeldConstraint, LinkConstraint)):
            raise InputError(
                f"constraint {k} is a {type(c).__name__}, expected PointConstraint, WeldConstraint or LinkConstraint"
            )
        fid = model.frame_id(c.frame)
        joint = model.frames[fid].joint
        if joint == 0:
            raise InputError(f"constraint {k} is on frame {c.frame!r}, which is fixed to the world: it cannot move")
        if isinstance(c, PointConstraint):
            off = _as_float_array(c.offset)
            if off is None or off.shape != (3,) or not np.all(np.isfinite(off)):
                raise InputError(f"constraint {k} ({c.frame!r}): offset must be 3 finite numbers, got {c.offset!r}")
        if isinstance(c, (PointConstraint, LinkConstraint)) and c.reference not in (
            ReferenceFrame.LOCAL,
            ReferenceFrame.LOCAL_WORLD_ALIGNED,
        ):
            raise InputError(f"constraint {k} ({c.frame!r}): reference must be LOCAL or LOCAL_WORLD_ALIGNED")
        if isinstance(c, LinkConstraint):
            rows = _as_float_array(c.rows)
            if rows is None:
                raise InputError(f"constraint {k} ({c.frame!r}): rows must be a finite (k, 6) matrix, got {c.rows!r}")
            if rows.ndim != 2 or rows.shape[1] != 6 or rows.shape[0] < 1 or not np.all(np.isfinite(rows)):
                raise InputError(
                    f"constraint {k} ({c.frame!r}): rows must be a finite (k, 6) matrix, got shape {rows.shape}"
                )
        out.append(ResolvedConstraint(c, fid, joint, c.dim))
    return out
