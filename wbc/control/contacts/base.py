"""What every contact is: a contributor with force variables and a no-acceleration equality.

Friction pyramids are *inscribed* in the Coulomb cone: ``n`` facets, each at distance
``μ cos(π/n)`` (for ``n = 4``: ``|f_t| ≤ μ/√2 f_n`` per tangent axis), so a force the QP accepts
never slips in reality.
"""

from __future__ import annotations

import abc
import math
from typing import TYPE_CHECKING

import casadi as ca
import numpy as np

from ...algorithms.kinematics import TreeKinematics
from ...errors import InputError
from ...model.model import Model
from ..contributor import Contributor, Runtime
from ..pieces import Equality, Group, Inequality, Kind, Piece

if TYPE_CHECKING:
    from ..context import StepContext

__all__ = ["Contact", "friction_pyramid"]


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


class Contact(Contributor):
    """Common description of contacts.

    Args:
        frame: the contact frame's name.
        mu: friction coefficient (≥ 0; 0 allows normal forces only).
        min_normal_force: lower bound of the total normal force while enforced, N (≥ 0).
        max_normal_force: upper bound of the total normal force, N (may be inf).
        active: whether the contact is enforced from the first step.
        name: the contact's name (default: the frame's); it names the force variables.

    Kernel parameters: ``[minimum, maximum]`` normal force now, from the controller's schedule.
    """

    #: number of force variables
    dim: int = 0
    #: number of no-acceleration rows
    equality_dim: int = 0

    def __init__(
        self,
        frame: str,
        mu: float,
        min_normal_force: float,
        max_normal_force: float,
        active: bool,
        name: str | None = None,
    ) -> None:
        if not isinstance(frame, str) or not frame:
            raise InputError(f"a contact frame must be a frame name, got {frame!r}")
        if not (isinstance(mu, (int, float)) and math.isfinite(mu) and mu >= 0):
            raise InputError(f"contact {frame!r}: friction coefficient must be finite and >= 0, got {mu!r}")
        if not (0 <= min_normal_force <= max_normal_force) or math.isnan(max_normal_force):
            raise InputError(
                f"contact {frame!r}: need 0 <= min_normal_force <= max_normal_force, "
                f"got {min_normal_force}, {max_normal_force}"
            )
        self.frame = frame
        self.name = name if name is not None else frame
        self.mu = float(mu)
        self.min_normal_force = float(min_normal_force)
        self.max_normal_force = float(max_normal_force)
        self.initially_active = bool(active)

    # ----------------------------------------------------------------------------- the description
    @abc.abstractmethod
    def motion_constraint(self):
        """The link constraint whose rows must not accelerate (:mod:`wbc.algorithms.constraints`)."""

    @abc.abstractmethod
    def force_basis(self) -> np.ndarray:
        """``Γ`` (equality_dim, dim): the force variables in the motion rows' force basis (``Jᵀ Γ f``
        are the generalized forces of ``f``); the identity when the variables are those forces."""

    @abc.abstractmethod
    def wrench_map(self, kin: TreeKinematics):
        """``W`` (6, dim): world wrench about the world origin per unit force variable (traced)."""

    @abc.abstractmethod
    def force_inequalities(self, fmin, fmax) -> list[Inequality]:
        """Friction, centre-of-pressure and normal-force rows over this contact's variables, the normal
        force between ``fmin`` and ``fmax`` (N; may be symbolic)."""

    @abc.abstractmethod
    def normal_force(self, f: np.ndarray) -> float:
        """Total normal force (N) of the force variables ``f`` (dim,)."""

    def check(self, model: Model) -> None:
        """Raise :class:`~wbc.errors.FrameError` if the frame is unknown to ``model``."""
        model.frame_id(self.frame)

    # ----------------------------------------------------------------------------- as a contributor
    @property
    def parameter_size(self) -> int:
        return 2

    def parameters(self, runtime: Runtime) -> np.ndarray:
        return runtime.contacts.normal_force_bounds(self.name)

    def is_active(self, runtime: Runtime) -> bool:
        return runtime.contacts.is_active(self.name)

    def pieces(self, ctx: StepContext, p) -> list[Piece]:
        A, drift = ctx.contact_acceleration(self)
        return [Equality(A, -drift, Group(Kind.CONTACT, self.name)), *self.force_inequalities(p[0], p[1])]

    def inequalities(self, fmin: float | None = None, fmax: float | None = None):
        """``(G, h, groups)``: this contact's inequalities over its own variables as numbers, with the
        normal force between ``fmin`` and ``fmax`` (default its own limits)."""
        fmin = self.min_normal_force if fmin is None else fmin
        fmax = self.max_normal_force if fmax is None else fmax
        pieces = self.force_inequalities(fmin, fmax)
        G = np.vstack([np.array(ca.DM(pc.G), dtype=float) for pc in pieces])
        h = np.concatenate([np.array(ca.DM(pc.h), dtype=float).reshape(-1) for pc in pieces])
        groups = [pc.group for pc in pieces for _ in range(np.array(ca.DM(pc.h)).size)]
        return G, h, groups

    def _group(self, kind: Kind) -> Group:
        return Group(kind, self.name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.frame!r}, mu={self.mu})"
