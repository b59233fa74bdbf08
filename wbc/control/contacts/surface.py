"""Rectangular sole contacts: one 6D wrench (:class:`SurfaceContact`) or four corner forces
(:class:`SurfaceCornersContact`).

The sole lies in the frame's xy plane, centred on its origin (length along x, width along y), the
normal along z. Both classes describe the same set of wrenches (the rectangle's contact wrench
cone with inscribed corner pyramids) and the same equality (the frame does not accelerate, 6 rows);
the wrench form has 6 variables instead of 12 and lets the controller eliminate the contact
equalities through the Delassus matrix, so it is the default.
"""

from __future__ import annotations

import math

import casadi as ca
import numpy as np

from ...algorithms.constraints import LinkConstraint
from ...algorithms.kinematics import ReferenceFrame, TreeKinematics
from ...errors import InputError
from ...spatial.lie import log6, skew
from ..pieces import Inequality, Kind
from .base import DEFAULT_CONTACT_KP, Contact, friction_pyramid

__all__ = ["RectangularContact", "SurfaceContact", "SurfaceCornersContact"]

#: Below this normal force (N) a centre of pressure is undefined; it is reported at the sole centre.
_NO_LOAD = 1e-9


class RectangularContact(Contact):
    """A rectangular sole on ``frame`` (origin at the sole centre, z the normal).

    Args:
        length: sole extent along the frame's x axis, m.
        width: sole extent along its y axis, m.
        frame, mu, min_normal_force, max_normal_force, active, name, kp, kd: see :class:`Contact`.

    Equality: the sole frame's spatial acceleration in its own axes (6 rows, ``[linear; angular]``) is
    ``−K_p log₆(M₀⁻¹ M) − K_d ν``, ``M₀`` where the sole was placed, ``ν`` its twist in its own axes.
    """

    equality_dim = 6

    def __init__(
        self,
        frame: str,
        length: float,
        width: float,
        mu: float = 0.7,
        min_normal_force: float = 0.0,
        max_normal_force: float = math.inf,
        active: bool = True,
        name: str | None = None,
        kp: float = DEFAULT_CONTACT_KP,
        kd: float | None = None,
    ) -> None:
        super().__init__(frame, mu, min_normal_force, max_normal_force, active, name, kp, kd)
        if not all(isinstance(x, (int, float)) and math.isfinite(x) and x > 0 for x in (length, width)):
            raise InputError(f"contact {frame!r}: length and width must be positive, got {length!r}, {width!r}")
        self.length, self.width = float(length), float(width)

    def corners(self) -> np.ndarray:
        """The four corners (4, 3) in the frame: (−x, −y), (−x, +y), (+x, −y), (+x, +y)."""
        hx, hy = self.length / 2, self.width / 2
        return np.array([[-hx, -hy, 0.0], [-hx, hy, 0.0], [hx, -hy, 0.0], [hx, hy, 0.0]])

    def motion_constraint(self):
        return LinkConstraint(self.frame, np.eye(6), ReferenceFrame.LOCAL)

    def pose_error(self, kin: TreeKinematics, position, rotation):
        """``log₆(M₀⁻¹ M)`` (6, 1) ``[linear m; angular rad]``: the sole frame's placement ``M`` relative to
        its placement ``M₀``, in its own axes (its derivative is the sole's twist to first order)."""
        M = kin.frame_placement(kin.model.frame_id(self.frame))
        return log6(ca.mtimes(rotation.T, M.R), ca.mtimes(rotation.T, M.p - position))

    def _local_to_world(self, kin: TreeKinematics):
        """The force transform (6, 6) from the sole frame to world axes about the world origin."""
        model = kin.model
        fr = model.frames[model.frame_id(self.frame)]
        oMi = kin.oMi[fr.joint]
        R = ca.mtimes(oMi.R, fr.placement.R)
        p = oMi.p + ca.mtimes(oMi.R, fr.placement.p)
        Z = ca.DM.zeros(3, 3)
        return ca.vertcat(ca.horzcat(R, Z), ca.horzcat(ca.mtimes(skew(p), R), R))

    def wrench_map(self, kin: TreeKinematics):
        return ca.mtimes(self._local_to_world(kin), ca.DM(self.force_basis()))

    def center_of_pressure(self, f: np.ndarray) -> np.ndarray:
        """The centre of pressure (2,) in the sole frame (x, y), m, of the force variables ``f``;
        the sole centre when the normal force is below 1e-9 N."""
        raise NotImplementedError


class SurfaceContact(RectangularContact):
    """A rectangular sole whose force is one wrench ``[f; τ]`` (6,) at the sole centre, sole axes,
    constrained by the exact contact wrench cone of the rectangle (Caron, Pham, Nakamura 2015)."""

    dim = 6

    def force_basis(self) -> np.ndarray:
        return np.eye(6)

    def force_inequalities(self, fmin, fmax) -> list[Inequality]:
        mu = self.mu * math.cos(math.pi / 4)  # corner pyramids inscribed in the Coulomb cone
        X, Y = self.length / 2, self.width / 2
        friction = [[-1, 0, -mu, 0, 0, 0], [1, 0, -mu, 0, 0, 0], [0, -1, -mu, 0, 0, 0], [0, 1, -mu, 0, 0, 0]]
        s = mu * (X + Y)
        for a in (-1, 1):
            for b in (-1, 1):
                # τz ≥ −μ(X+Y) fz + |Y fx − μ τx| + |X fy − μ τy|  (both signs of each absolute value)
                friction.append([a * Y, b * X, -s, -a * mu, -b * mu, -1])
                # τz ≤ μ(X+Y) fz − |Y fx + μ τx| − |X fy + μ τy|
                friction.append([a * Y, b * X, -s, a * mu, b * mu, 1])
        cop = [[0, 0, -Y, -1, 0, 0], [0, 0, -Y, 1, 0, 0], [0, 0, -X, 0, -1, 0], [0, 0, -X, 0, 1, 0]]
        normal = [[0, 0, -1.0, 0, 0, 0], [0, 0, 1.0, 0, 0, 0]]
        return [
            Inequality(np.array(friction, float), np.zeros(12), self._group(Kind.FRICTION), variables=self.name),
            Inequality(np.array(cop, float), np.zeros(4), self._group(Kind.CENTER_OF_PRESSURE), variables=self.name),
            Inequality(np.array(normal), ca.vertcat(-fmin, fmax), self._group(Kind.NORMAL_FORCE), variables=self.name),
        ]

    def normal_force(self, f: np.ndarray) -> float:
        return float(f[2])

    def center_of_pressure(self, f: np.ndarray) -> np.ndarray:
        fz = float(f[2])
        if fz < _NO_LOAD:
            return np.zeros(2)
        return np.array([-f[4] / fz, f[3] / fz])


class SurfaceCornersContact(RectangularContact):
    """A rectangular sole whose force is four corner forces (12,), sole axes, one inscribed friction
    pyramid each."""

    dim = 12

    def force_basis(self) -> np.ndarray:
        G = np.zeros((6, 12))
        for k, c in enumerate(self.corners()):
            G[0:3, 3 * k : 3 * k + 3] = np.eye(3)
            G[3:6, 3 * k : 3 * k + 3] = skew(c)
        return G

    def force_inequalities(self, fmin, fmax) -> list[Inequality]:
        C = friction_pyramid(self.mu, 4, np.array([0.0, 0.0, 1.0]))
        friction, unilateral = np.zeros((16, 12)), np.zeros((4, 12))
        for k in range(4):
            friction[4 * k : 4 * k + 4, 3 * k : 3 * k + 3] = C
            unilateral[k, 3 * k + 2] = -1.0  # each corner pushes
        total = np.zeros((1, 12))
        total[0, 2::3] = 1.0
        return [
            Inequality(friction, np.zeros(16), self._group(Kind.FRICTION), variables=self.name),
            Inequality(
                np.vstack([unilateral, -total, total]),
                ca.vertcat(ca.DM.zeros(4, 1), -fmin, fmax),
                self._group(Kind.NORMAL_FORCE),
                variables=self.name,
            ),
        ]

    def normal_force(self, f: np.ndarray) -> float:
        return float(np.sum(f[2::3]))

    def center_of_pressure(self, f: np.ndarray) -> np.ndarray:
        fz = np.asarray(f, float)[2::3]
        total = float(fz.sum())
        if total < _NO_LOAD:
            return np.zeros(2)
        return fz @ self.corners()[:, 0:2] / total
