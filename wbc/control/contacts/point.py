"""A point contact: a 3D force in world axes at a point of a frame."""

from __future__ import annotations

import math
from collections.abc import Sequence

import casadi as ca
import numpy as np

from ...algorithms.constraints import PointConstraint
from ...algorithms.kinematics import TreeKinematics
from ...errors import InputError
from ...spatial.lie import skew
from ..pieces import Inequality, Kind
from .base import DEFAULT_CONTACT_KP, Contact, friction_pyramid

__all__ = ["PointContact"]


class PointContact(Contact):
    """A point contact: 3D force in world axes at ``offset`` (m) of ``frame``.

    Args:
        normal: contact normal in world axes (default up).
        facets: number of faces of the friction pyramid (≥ 3).
        frame, mu, min_normal_force, max_normal_force, active, name, kp, kd: see :class:`Contact`.

    Equality: the point's acceleration (3 rows, world axes) is ``−K_p (p − p₀) − K_d ṗ``, ``p₀`` where
    the point was placed: zero while it stays there.
    """

    dim = 3
    equality_dim = 3

    def __init__(
        self,
        frame: str,
        offset: Sequence[float] = (0.0, 0.0, 0.0),
        mu: float = 0.7,
        normal: Sequence[float] = (0.0, 0.0, 1.0),
        facets: int = 4,
        min_normal_force: float = 0.0,
        max_normal_force: float = math.inf,
        active: bool = True,
        name: str | None = None,
        kp: float = DEFAULT_CONTACT_KP,
        kd: float | None = None,
    ) -> None:
        super().__init__(frame, mu, min_normal_force, max_normal_force, active, name, kp, kd)
        try:
            n = np.asarray(normal, float)
            off = np.asarray(offset, float)
        except (TypeError, ValueError):
            raise InputError(f"contact {frame!r}: normal and offset must be 3-vectors of numbers") from None
        if n.shape != (3,) or not np.all(np.isfinite(n)) or np.linalg.norm(n) < 1e-9:
            raise InputError(f"contact {frame!r}: normal must be a non-zero 3-vector, got {normal!r}")
        if off.shape != (3,) or not np.all(np.isfinite(off)):
            raise InputError(f"contact {frame!r}: offset must be 3 finite numbers, got {offset!r}")
        if not isinstance(facets, int) or facets < 3:
            raise InputError(f"contact {frame!r}: a friction pyramid needs at least 3 facets, got {facets!r}")
        self.offset = tuple(float(x) for x in off)
        self.normal = n / np.linalg.norm(n)
        self.facets = facets

    def motion_constraint(self):
        return PointConstraint(self.frame, self.offset)

    def force_basis(self) -> np.ndarray:
        return np.eye(3)

    def pose_error(self, kin: TreeKinematics, position, rotation):
        """``p − p₀`` (3, 1), m, world axes: the point now minus the point of the placed frame."""
        model = kin.model
        f = model.frames[model.frame_id(self.frame)]
        oMi = kin.oMi[f.joint]
        offset = np.asarray(self.offset).reshape(3, 1)
        point = oMi.p + ca.mtimes(oMi.R, f.placement.R @ offset + f.placement.p)
        return point - (position + ca.mtimes(rotation, ca.DM(offset)))

    def wrench_map(self, kin: TreeKinematics):
        model = kin.model
        f = model.frames[model.frame_id(self.frame)]
        oMi = kin.oMi[f.joint]
        point = f.placement.R @ np.asarray(self.offset).reshape(3, 1) + f.placement.p
        p = oMi.p + ca.mtimes(oMi.R, point)
        return ca.vertcat(ca.DM.eye(3), skew(p))

    def force_inequalities(self, fmin, fmax) -> list[Inequality]:
        n = self.normal[None, :]
        pyramid = friction_pyramid(self.mu, self.facets, self.normal)
        return [
            Inequality(pyramid, np.zeros(self.facets), self._group(Kind.FRICTION), variables=self.name),
            Inequality(
                np.vstack([-n, n]), ca.vertcat(-fmin, fmax), self._group(Kind.NORMAL_FORCE), variables=self.name
            ),
        ]

    def normal_force(self, f: np.ndarray) -> float:
        return float(self.normal @ f)
