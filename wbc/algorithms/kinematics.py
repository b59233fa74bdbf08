"""Forward kinematics, frame Jacobians and drifts, centre of mass and centroidal momentum.

:class:`TreeKinematics` evaluates the kinematics of one state ``(q, v)`` as CasADi expressions
(numbers with ``DM``, symbols with ``SX``) and answers queries from them, sharing the forward
pass between all quantities, as Pinocchio's ``Data`` does. It is built per evaluation; it is not
model state.

Reference frames (:class:`ReferenceFrame`, Pinocchio's meaning):

* ``LOCAL``: the spatial velocity of the frame expressed in the frame itself;
* ``WORLD``: the spatial velocity of the body expressed in the world frame, its linear part
  being the velocity of the body point that coincides with the world origin;
* ``LOCAL_WORLD_ALIGNED``: the linear velocity of the frame origin and the angular velocity,
  both in world axes.

Drifts are classical accelerations at zero joint acceleration: ``J̇ v = a(q, v, q̈ = 0)``
in the chosen frame, with ``ω × v`` added to the linear part (Pinocchio's
``getFrameClassicalAcceleration``). In ``LOCAL_WORLD_ALIGNED`` this is the exact second derivative
of the frame origin's position and of its orientation.

Glossary: ``liMi`` joint placement in its parent, ``oMi`` joint placement in the world, ``S``
motion subspace, ``vJ`` joint velocity, ``v[i]``/``a[i]`` body velocity / drift acceleration in
the joint frame, ``oI`` inertia in world coordinates, ``Ic`` composite (subtree) inertia.
"""

from __future__ import annotations

import enum
from functools import cached_property

import casadi as ca
import numpy as np

from ..model.joints import joint_transform, motion_subspace
from ..model.model import Model
from ..spatial.algebra import (
    SE3,
    act_force,
    act_inertia,
    act_inv_motion,
    act_motion,
    compose,
    cross_motion,
    first_moment,
    rigid_body_force,
    skew,
)

__all__ = ["ReferenceFrame", "TreeKinematics"]


class ReferenceFrame(enum.Enum):
    """In which frame a Jacobian, velocity or drift is expressed (Pinocchio's meaning)."""

    LOCAL = "local"
    WORLD = "world"
    LOCAL_WORLD_ALIGNED = "local_world_aligned"


def _column(x) -> ca.SX:
    return x if x.shape[1] == 1 else x.T


class TreeKinematics:
    """Kinematic quantities of ``model`` at configuration ``q`` (nq,) and velocity ``v`` (nv,).

    Everything is computed lazily and cached on first use. ``v`` may be omitted when only
    position-level quantities (placements, Jacobians, CoM) are needed.
    """

    def __init__(self, model: Model, q, v=None) -> None:
        self.model = model
        self.q = _column(q)
        self.v = None if v is None else _column(v)
        self.S = [np.zeros((6, 0))] + [motion_subspace(j) for j in model.joints[1:]]

    # ----------------------------------------------------------------------------- positions
    @cached_property
    def liMi(self) -> list[SE3]:
        """Placement of each joint frame in its parent joint frame."""
        m = self.model
        out: list[SE3] = [SE3(np.eye(3), np.zeros((3, 1)))]
        for j in m.joints[1:]:
            out.append(joint_transform(j, self.q[j.idx_q : j.idx_q + j.nq]))
        return out

    @cached_property
    def oMi(self) -> list[SE3]:
        """Placement of each joint frame in the world."""
        out: list[SE3] = [self.liMi[0]]
        for i, j in enumerate(self.model.joints[1:], start=1):
            out.append(self.liMi[i] if j.parent == 0 else compose(out[j.parent], self.liMi[i]))
        return out

    def frame_placement(self, frame: int) -> SE3:
        """World placement of frame ``frame`` (an index)."""
        f = self.model.frames[frame]
        return compose(self.oMi[f.joint], f.placement)

    # ----------------------------------------------------------------------------- velocities
    def _vj(self, i: int):
        j = self.model.joints[i]
        return ca.mtimes(self.S[i], self.v[j.idx_v : j.idx_v + j.nv])

    @cached_property
    def velocities(self) -> list:
        """Spatial velocity of each body in its joint frame, (6, 1) each."""
        if self.v is None:
            raise ValueError("TreeKinematics was built without a velocity")
        out = [ca.DM.zeros(6, 1)]
        for i, j in enumerate(self.model.joints[1:], start=1):
            vi = self._vj(i)
            if j.parent > 0:
                vi = act_inv_motion(self.liMi[i], out[j.parent]) + vi
            out.append(vi)
        return out

    @cached_property
    def drift_accelerations(self) -> list:
        """Spatial acceleration of each body at zero joint acceleration, no gravity, (6, 1) each."""
        out = [ca.DM.zeros(6, 1)]
        for i, j in enumerate(self.model.joints[1:], start=1):
            ci = cross_motion(self.velocities[i], self._vj(i))
            out.append(ci if j.parent == 0 else act_inv_motion(self.liMi[i], out[j.parent]) + ci)
        return out

    # ----------------------------------------------------------------------------- Jacobians
    def joint_jacobian_world(self, joint: int) -> ca.SX:
        """WORLD Jacobian (6, nv) of joint ``joint``'s body: columns of its supporting joints."""
        m = self.model
        cols = {}
        for k in m.support(joint):
            cols[k] = act_motion(self.oMi[k], self.S[k])
        return self._assemble(cols)

    def joint_jacobian_local(self, joint: int) -> ca.SX:
        """LOCAL Jacobian (6, nv) of joint ``joint``'s body, in its joint frame."""
        oMi = self.oMi[joint]
        cols = {k: act_inv_motion(oMi, act_motion(self.oMi[k], self.S[k])) for k in self.model.support(joint)}
        return self._assemble(cols)

    def _assemble(self, cols: dict[int, ca.SX]) -> ca.SX:
        m = self.model
        blocks = []
        for k, j in enumerate(m.joints[1:], start=1):
            blocks.append(cols[k] if k in cols else ca.DM.zeros(6, j.nv))
        return ca.horzcat(*blocks) if blocks else ca.DM.zeros(6, 0)

    def frame_jacobian(self, frame: int, reference: ReferenceFrame) -> ca.SX:
        """Jacobian (6, nv) of frame ``frame`` in ``reference`` (see the module docstring)."""
        f = self.model.frames[frame]
        if reference is ReferenceFrame.WORLD:
            return self.joint_jacobian_world(f.joint)
        oMf = self.frame_placement(frame)
        cols = {k: act_motion(self.oMi[k], self.S[k]) for k in self.model.support(f.joint)}
        if reference is ReferenceFrame.LOCAL:
            cols = {k: act_inv_motion(oMf, c) for k, c in cols.items()}
        elif reference is ReferenceFrame.LOCAL_WORLD_ALIGNED:
            P = skew(oMf.p)
            cols = {k: ca.vertcat(c[0:3, :] - ca.mtimes(P, c[3:6, :]), c[3:6, :]) for k, c in cols.items()}
        else:
            raise TypeError(f"reference must be a ReferenceFrame, got {reference!r}")
        return self._assemble(cols)

    def frame_velocity(self, frame: int, reference: ReferenceFrame) -> ca.SX:
        """Spatial velocity (6,) of frame ``frame`` in ``reference``."""
        f = self.model.frames[frame]
        v_local = act_inv_motion(f.placement, self.velocities[f.joint])
        return self._express(frame, v_local, reference)

    def frame_drift(self, frame: int, reference: ReferenceFrame) -> ca.SX:
        """Classical acceleration drift ``J̇ v`` (6,) of frame ``frame`` in ``reference``."""
        f = self.model.frames[frame]
        v_local = act_inv_motion(f.placement, self.velocities[f.joint])
        a_local = act_inv_motion(f.placement, self.drift_accelerations[f.joint])
        v = self._express(frame, v_local, reference)
        a = self._express(frame, a_local, reference)
        return ca.vertcat(a[0:3] + ca.cross(v[3:6], v[0:3]), a[3:6])

    def _express(self, frame: int, m_local, reference: ReferenceFrame):
        if reference is ReferenceFrame.LOCAL:
            return m_local
        oMf = self.frame_placement(frame)
        if reference is ReferenceFrame.WORLD:
            return act_motion(oMf, m_local)
        if reference is ReferenceFrame.LOCAL_WORLD_ALIGNED:
            return ca.vertcat(ca.mtimes(oMf.R, m_local[0:3]), ca.mtimes(oMf.R, m_local[3:6]))
        raise TypeError(f"reference must be a ReferenceFrame, got {reference!r}")

    # ----------------------------------------------------------------------------- centre of mass
    @cached_property
    def _subtree_mass(self) -> list[float]:
        m = self.model
        # The universe's inertia (links welded to the ground) never moves: left out, as in Pinocchio.
        mass = [0.0] + [float(I[0, 0]) for I in m.inertias[1:]]
        for i in range(m.njoints - 1, 0, -1):
            mass[m.joints[i].parent] += mass[i]
        return mass

    @cached_property
    def _subtree_mcom(self) -> list:
        """Σ m c over each subtree, world coordinates (3, 1)."""
        m = self.model
        out = [ca.DM.zeros(3, 1)]  # the universe's inertia is left out (see _subtree_mass)
        for i in range(1, m.njoints):
            I = m.inertias[i]
            mass = I[0, 0]
            if mass > 0.0:
                c_local = first_moment(I)
                oMi = self.oMi[i]
                out.append(ca.mtimes(oMi.R, c_local) + mass * oMi.p)
            else:
                out.append(ca.DM.zeros(3, 1))
        for i in range(m.njoints - 1, 0, -1):
            p = m.joints[i].parent
            out[p] = out[p] + out[i]
        return out

    @property
    def total_mass(self) -> float:
        return self._subtree_mass[0]

    def center_of_mass(self) -> ca.SX:
        """Position (3,) of the centre of mass in the world, m."""
        return self._subtree_mcom[0] / self.total_mass

    def com_jacobian(self) -> ca.SX:
        """Jacobian (3, nv) of the centre of mass, world axes."""
        m = self.model
        cols = {}
        for k in range(1, m.njoints):
            s = act_motion(self.oMi[k], self.S[k])
            cols[k] = self._subtree_mass[k] * s[0:3, :] - ca.mtimes(skew(self._subtree_mcom[k]), s[3:6, :])
        J = self._assemble({k: ca.vertcat(c, ca.DM.zeros(3, c.shape[1])) for k, c in cols.items()})
        return J[0:3, :] / self.total_mass

    def com_velocity(self) -> ca.SX:
        """Velocity (3,) of the centre of mass, world axes, m/s (the linear momentum over the mass)."""
        return self.centroidal_momentum()[0:3] / self.total_mass

    def com_drift(self) -> ca.SX:
        """Acceleration (3,) of the centre of mass at zero joint acceleration, world axes."""
        m = self.model
        acc = ca.DM.zeros(3, 1)
        for i in range(1, m.njoints):
            I = m.inertias[i]
            mass = I[0, 0]
            if mass <= 0.0:
                continue
            c = first_moment(I) / mass
            v, a = self.velocities[i], self.drift_accelerations[i]
            w = v[3:6]
            vc = v[0:3] + ca.cross(w, ca.DM(c))
            ac = a[0:3] + ca.cross(a[3:6], ca.DM(c)) + ca.cross(w, vc)
            acc = acc + mass * ca.mtimes(self.oMi[i].R, ac)
        return acc / self.total_mass

    # ----------------------------------------------------------------------------- momentum
    @cached_property
    def oI(self) -> list:
        """Inertia of each body in world coordinates, (6, 6)."""
        return [
            act_inertia(self.oMi[i], I) if np.any(I) else ca.DM.zeros(6, 6) for i, I in enumerate(self.model.inertias)
        ]

    def _to_com(self, F):
        """Move force(s) ``F`` (6, k) at the world origin to the centre of mass, world axes."""
        c = self.center_of_mass()
        return ca.vertcat(F[0:3, :], F[3:6, :] - ca.mtimes(skew(c), F[0:3, :]))

    def centroidal_map(self) -> ca.SX:
        """Centroidal momentum matrix ``A_g`` (6, nv): [linear; angular] momentum about the CoM,
        world axes (Pinocchio's ``computeCentroidalMap``).

        Each subtree's inertia is summed in the world frame as its mass ``M``, first moment ``h``
        (3,) and rotational inertia ``I₀`` (3, 3) about the world origin (cheaper than 6×6 spatial
        inertias); a joint's column is the momentum of its subtree moving with the joint's motion
        ``[v; ω]`` (world axes, about the origin): ``[M v − h × ω; I₀ ω + h × v]``, then moved to the CoM.
        """
        m = self.model
        mass = [float(I[0, 0]) for I in m.inertias]
        h: list = [ca.DM.zeros(3, 1) for _ in range(m.njoints)]
        I0: list = [ca.DM.zeros(3, 3) for _ in range(m.njoints)]
        for i in range(1, m.njoints):
            I = m.inertias[i]
            if not np.any(I):
                continue
            R, p = self.oMi[i].R, self.oMi[i].p
            if mass[i] > 0.0:
                c = first_moment(I) / mass[i]
                Ic = I[3:6, 3:6] - mass[i] * (float((c.T @ c)[0, 0]) * np.eye(3) - c @ c.T)  # about the CoM, local axes
                hw = mass[i] * (ca.mtimes(R, c) + p)
                h[i] = hw
                I0[i] = _symmetric(ca.mtimes(ca.mtimes(R, Ic), R.T) + ca.mtimes(skew(hw), skew(hw).T) / mass[i])
            else:
                I0[i] = _symmetric(ca.mtimes(ca.mtimes(R, I[3:6, 3:6]), R.T))
        for i in range(m.njoints - 1, 0, -1):
            j = m.joints[i].parent
            mass[j] += mass[i]
            h[j] = h[j] + h[i]
            I0[j] = I0[j] + I0[i]
        cols = {}
        for k in range(1, m.njoints):
            s = act_motion(self.oMi[k], self.S[k])
            v, w = s[0:3, :], s[3:6, :]
            hx = skew(h[k])
            cols[k] = self._to_com(ca.vertcat(mass[k] * v - ca.mtimes(hx, w), ca.mtimes(I0[k], w) + ca.mtimes(hx, v)))
        return self._assemble(cols)

    def centroidal_drift(self) -> ca.SX:
        """``Ȧ_g v`` (6,): rate of centroidal momentum at zero joint acceleration (no gravity)."""
        m = self.model
        hdot = ca.DM.zeros(6, 1)
        for i in range(1, m.njoints):
            if not np.any(m.inertias[i]):
                continue
            I = m.inertias[i]
            v, a = self.velocities[i], self.drift_accelerations[i]
            f_local = rigid_body_force(I, v, a)
            hdot = hdot + act_force(self.oMi[i], f_local)
        return self._to_com(hdot)

    def centroidal_momentum(self) -> ca.SX:
        """Centroidal momentum (6,) about the CoM, world axes."""
        m = self.model
        h = ca.DM.zeros(6, 1)
        for i in range(1, m.njoints):
            if np.any(m.inertias[i]):
                h = h + act_force(self.oMi[i], ca.mtimes(m.inertias[i], self.velocities[i]))
        return self._to_com(h)


def _symmetric(X):
    """The symmetric matrix of ``X``'s upper triangle: the lower one is never computed (traced,
    its operations are dropped)."""
    return ca.triu2symm(ca.triu(X))
