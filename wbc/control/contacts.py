"""Contacts: force variables, no-acceleration equalities, friction cones and force limits.

Two kinds:

* :class:`PointContact`: a 3D force at a point of a frame, in world axes, with a friction pyramid
  about a world ``normal``. Equality: the point does not accelerate (3 rows).
* :class:`SurfaceContact`: a rectangular sole (length along the frame's x, width along its y,
  normal along its z; the frame origin is the sole centre). Equality: the frame does not
  accelerate (6 rows, whatever the force parametrisation: full row rank). Forces, in the frame's
  axes, either as one wrench at the origin (``"wrench"``, 6 variables, constrained by the exact
  contact wrench cone of the rectangle, Caron et al. 2015) or as four corner forces
  (``"corners"``, 12 variables, one pyramid each). Both describe the same set of wrenches; the
  wrench form has half the variables and fewer inequalities, which makes the QP faster (see the
  README's controller section for the measurement), so it is the default.

Friction pyramids are *inscribed* in the Coulomb cone: ``n`` facets, each at distance
``μ cos(π/n)`` (for ``n = 4``: ``|f_t| ≤ μ/√2 f_n`` per tangent axis), so a force the QP accepts never
slips in reality.

Activation: every contact declared to a controller is in its compiled kernel; :meth:`Contact.activate`
and :meth:`Contact.deactivate` switch it per step without recompiling. ``deactivate(ramp=T)``
first ramps the maximum normal force down to zero over ``T`` seconds (the contact stays
enforced meanwhile) so forces do not jump, then releases the contact.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import casadi as ca
import numpy as np

from ..algorithms.constraints import LinkConstraint, PointConstraint
from ..algorithms.kinematics import ReferenceFrame, TreeKinematics
from ..errors import InputError
from ..model.model import Model
from ..spatial.lie import skew

__all__ = ["Contact", "PointContact", "SurfaceContact", "friction_pyramid"]


def friction_pyramid(mu: float, facets: int, normal: np.ndarray) -> np.ndarray:
    """Rows ``C`` (facets, 3) with ``C f ≤ 0`` the inscribed friction pyramid about unit ``normal``."""
    n = np.asarray(normal, float) / np.linalg.norm(normal)
    t1 = np.cross(n, [1.0, 0.0, 0.0])
    if np.linalg.norm(t1) < 1e-6:
        t1 = np.cross(n, [0.0, 1.0, 0.0])
    t1 /= np.linalg.norm(t1)
    t2 = np.cross(n, t1)
    rows = []
    for k in range(facets):
        a = 2.0 * math.pi * k / facets
        rows.append(math.cos(a) * t1 + math.sin(a) * t2 - mu * math.cos(math.pi / facets) * n)
    return np.array(rows)


class Contact:
    """Common state of contacts: activation, force-limit ramp, friction.

    Args:
        frame: the contact frame's name.
        mu: friction coefficient (> 0; 0 allows normal forces only).
        min_normal_force: lower bound of the total normal force while active, N (≥ 0).
        max_normal_force: upper bound of the total normal force, N.
        active: whether the contact starts active.
    """

    dim: int = 0
    equality_dim: int = 0

    def __init__(self, frame: str, mu: float, min_normal_force: float, max_normal_force: float, active: bool) -> None:
        if not (math.isfinite(mu) and mu >= 0):
            raise InputError(f"contact {frame!r}: friction coefficient must be finite and >= 0, got {mu}")
        if not (0 <= min_normal_force <= max_normal_force):
            raise InputError(
                f"contact {frame!r}: need 0 <= min_normal_force <= max_normal_force, "
                f"got {min_normal_force}, {max_normal_force}"
            )
        self.frame = frame
        self.name = frame
        self.mu = float(mu)
        self.min_normal_force = float(min_normal_force)
        self.max_normal_force = float(max_normal_force)
        self._active = active
        self._ramp: tuple[float, float, float] | None = None  # (start time, duration, starting max force)
        self._time = 0.0

    # ----------------------------------------------------------------------------- activation
    @property
    def active(self) -> bool:
        return self._active

    def activate(self) -> None:
        """Enforce the contact from the next step on."""
        self._active = True
        self._ramp = None

    def deactivate(self, ramp: float = 0.0, start_force: float | None = None) -> None:
        """Release the contact, after ramping its maximum normal force to zero over ``ramp`` s.

        Args:
            start_force: where the ramp starts, N; default the contact's maximum normal force, or
                the last normal force applied when that is unbounded.
        """
        if ramp < 0 or not math.isfinite(ramp):
            raise InputError(f"contact {self.name!r}: ramp must be a finite duration >= 0, got {ramp}")
        if ramp == 0.0:
            self._active = False
            self._ramp = None
            return
        f0 = start_force if start_force is not None else self.max_normal_force
        if not math.isfinite(f0):
            f0 = max(getattr(self, "last_normal_force", 0.0), 0.0)
        self._ramp = (self._time, ramp, f0)

    def _advance(self, t: float) -> None:
        """Move the contact's clock to ``t`` (s); ends a finished ramp."""
        self._time = t
        if self._ramp is not None and t >= self._ramp[0] + self._ramp[1]:
            self._active = False
            self._ramp = None

    def current_max_normal_force(self) -> float:
        if self._ramp is None:
            return self.max_normal_force
        t0, T, f0 = self._ramp
        return max(0.0, f0 * (1.0 - (self._time - t0) / T))

    def current_min_normal_force(self) -> float:
        return 0.0 if self._ramp is not None else self.min_normal_force

    # ----------------------------------------------------------------------------- model side
    def force_constraints(self) -> list:
        """Constraints whose rows define the force variables (their ``Kᵀ`` are the input columns)."""
        raise NotImplementedError

    def motion_constraint(self):
        """The constraint whose rows must not accelerate."""
        raise NotImplementedError

    def wrench_map(self, kin: TreeKinematics):
        """``W`` (6, dim): world wrench about the world origin per unit force variable (traced)."""
        raise NotImplementedError

    def inequalities(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """``(G, h, groups)``: ``G f ≤ h`` over this contact's variables, with a group name per row
        (``"friction"`` or ``"normal_force"``) for infeasibility reports."""
        raise NotImplementedError

    def normal_force(self, f: np.ndarray) -> float:
        """Total normal force (N) of the force variables ``f`` (dim,)."""
        raise NotImplementedError

    def check(self, model: Model) -> None:
        """Raise :class:`~wbc.errors.FrameError` if the frame is unknown to ``model``."""
        model.frame_id(self.frame)


class PointContact(Contact):
    """A point contact: 3D force in world axes at ``offset`` (m) of ``frame``.

    Args:
        normal: contact normal in world axes (default up).
        facets: number of faces of the friction pyramid (≥ 3).
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
    ) -> None:
        super().__init__(frame, mu, min_normal_force, max_normal_force, active)
        n = np.asarray(normal, float)
        if n.shape != (3,) or not np.all(np.isfinite(n)) or np.linalg.norm(n) < 1e-9:
            raise InputError(f"contact {frame!r}: normal must be a non-zero 3-vector, got {normal!r}")
        if facets < 3:
            raise InputError(f"contact {frame!r}: a friction pyramid needs at least 3 facets, got {facets}")
        self.offset = tuple(float(x) for x in offset)
        self.normal = n / np.linalg.norm(n)
        self.facets = int(facets)

    def force_constraints(self) -> list:
        return [PointConstraint(self.frame, self.offset)]

    def motion_constraint(self):
        return PointConstraint(self.frame, self.offset)

    def wrench_map(self, kin: TreeKinematics):
        model = kin.model
        f = model.frames[model.frame_id(self.frame)]
        oMi = kin.oMi[f.joint]
        point = f.placement.R @ np.asarray(self.offset).reshape(3, 1) + f.placement.p
        p = oMi.p + ca.mtimes(oMi.R, point)
        return ca.vertcat(ca.DM.eye(3), skew(p))

    def inequalities(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        G = [friction_pyramid(self.mu, self.facets, self.normal), -self.normal[None, :]]
        h = [np.zeros(self.facets), [-self.current_min_normal_force()]]
        groups = ["friction"] * self.facets + ["normal_force"]
        fmax = self.current_max_normal_force()
        if math.isfinite(fmax):
            G.append(self.normal[None, :])
            h.append([fmax])
            groups.append("normal_force")
        return np.vstack(G), np.concatenate(h), groups

    def normal_force(self, f: np.ndarray) -> float:
        return float(self.normal @ f)


class SurfaceContact(Contact):
    """A rectangular sole contact on ``frame`` (origin at the sole centre, z the normal).

    Args:
        length: sole extent along the frame's x axis, m.
        width: sole extent along its y axis, m.
        model: ``"wrench"`` (6 variables, exact contact wrench cone) or ``"corners"`` (4 × 3D forces).
    """

    def __init__(
        self,
        frame: str,
        length: float,
        width: float,
        mu: float = 0.7,
        model: str = "wrench",
        min_normal_force: float = 0.0,
        max_normal_force: float = math.inf,
        active: bool = True,
    ) -> None:
        super().__init__(frame, mu, min_normal_force, max_normal_force, active)
        if not (length > 0 and width > 0 and math.isfinite(length) and math.isfinite(width)):
            raise InputError(f"contact {frame!r}: length and width must be positive, got {length}, {width}")
        if model not in ("wrench", "corners"):
            raise InputError(f"contact {frame!r}: model must be 'wrench' or 'corners', got {model!r}")
        self.length, self.width, self.model = float(length), float(width), model
        self.dim = 6 if model == "wrench" else 12
        self.equality_dim = 6

    def corners(self) -> np.ndarray:
        """The four corners (4, 3) in the frame."""
        hx, hy = self.length / 2, self.width / 2
        return np.array([[-hx, -hy, 0.0], [-hx, hy, 0.0], [hx, -hy, 0.0], [hx, hy, 0.0]])

    def force_constraints(self) -> list:
        if self.model == "wrench":
            return [LinkConstraint(self.frame, np.eye(6), ReferenceFrame.LOCAL)]
        return [PointConstraint(self.frame, tuple(c), ReferenceFrame.LOCAL) for c in self.corners()]

    def motion_constraint(self):
        return LinkConstraint(self.frame, np.eye(6), ReferenceFrame.LOCAL)

    def wrench_map(self, kin: TreeKinematics):
        model = kin.model
        fr = model.frames[model.frame_id(self.frame)]
        oMi = kin.oMi[fr.joint]
        R = ca.mtimes(oMi.R, fr.placement.R)
        p = oMi.p + ca.mtimes(oMi.R, fr.placement.p)
        Z = ca.DM.zeros(3, 3)
        local_to_world = ca.vertcat(ca.horzcat(R, Z), ca.horzcat(ca.mtimes(skew(p), R), R))
        if self.model == "wrench":
            return local_to_world
        cols = []
        for c in self.corners():
            cols.append(ca.mtimes(local_to_world, ca.vertcat(ca.DM.eye(3), skew(c))))
        return ca.horzcat(*cols)

    def inequalities(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        mu = self.mu * math.cos(math.pi / 4)  # corner pyramids inscribed in the Coulomb cone
        fmin, fmax = self.current_min_normal_force(), self.current_max_normal_force()
        if self.model == "corners":
            G, h, groups = [], [], []
            C = friction_pyramid(self.mu, 4, np.array([0.0, 0.0, 1.0]))
            for k in range(4):
                block = np.zeros((5, 12))
                block[0:4, 3 * k : 3 * k + 3] = C
                block[4, 3 * k + 2] = -1.0  # each corner pushes
                G.append(block)
                h.append(np.zeros(5))
                groups += ["friction"] * 4 + ["normal_force"]
            total = np.zeros((1, 12))
            total[0, 2::3] = 1.0
            G.append(-total)
            h.append([-fmin])
            groups.append("normal_force")
            if math.isfinite(fmax):
                G.append(total)
                h.append([fmax])
                groups.append("normal_force")
            return np.vstack(G), np.concatenate(h), groups
        X, Y = self.length / 2, self.width / 2
        # Contact wrench cone of a rectangle with corner pyramids (Caron, Pham, Nakamura 2015),
        # wrench w = (fx, fy, fz, tx, ty, tz) at the sole centre, sole axes.
        rows = [
            [-1, 0, -mu, 0, 0, 0],
            [1, 0, -mu, 0, 0, 0],
            [0, -1, -mu, 0, 0, 0],
            [0, 1, -mu, 0, 0, 0],
            [0, 0, -Y, -1, 0, 0],
            [0, 0, -Y, 1, 0, 0],
            [0, 0, -X, 0, -1, 0],
            [0, 0, -X, 0, 1, 0],
        ]
        groups = ["friction"] * 4 + ["cop"] * 4
        s = mu * (X + Y)
        for a in (-1, 1):
            for b in (-1, 1):
                # τz ≥ −μ(X+Y) fz + |Y fx − μ τx| + |X fy − μ τy|  (both signs of each absolute value)
                rows.append([a * Y, b * X, -s, -a * mu, -b * mu, -1])
                # τz ≤ μ(X+Y) fz − |Y fx + μ τx| − |X fy + μ τy|
                rows.append([a * Y, b * X, -s, a * mu, b * mu, 1])
                groups += ["friction", "friction"]
        G = [np.array(rows, float)]
        h = [np.zeros(len(rows))]
        G.append(np.array([[0, 0, -1.0, 0, 0, 0]]))
        h.append([-fmin])
        groups.append("normal_force")
        if math.isfinite(fmax):
            G.append(np.array([[0, 0, 1.0, 0, 0, 0]]))
            h.append([fmax])
            groups.append("normal_force")
        return np.vstack(G), np.concatenate(h), groups

    def normal_force(self, f: np.ndarray) -> float:
        return float(f[2]) if self.model == "wrench" else float(np.sum(f[2::3]))
