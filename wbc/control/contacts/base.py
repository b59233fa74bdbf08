"""What every contact is: a contributor with force variables and a no-acceleration equality.

**Contact stabilisation.** The equality holds the contact frame's acceleration (its motion rows)
at ``a* = −K_p e − K_d ν``: ``e`` the pose error of the frame from where it was placed (kept by the
controller's schedule, :mod:`wbc.control.schedule`), ``ν`` its velocity in the same rows. A foot
that has not moved gets ``a* = 0``, the plain no-acceleration contact; a foot that slipped, tilted
or lifted (it unloads under a push, and an unloaded foot held at zero acceleration keeps whatever
velocity it had: it drifts) is brought back. ``K_p = K_d = 0`` gives the plain contact.

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

from ...algorithms.constraints import resolve
from ...algorithms.kinematics import TreeKinematics
from ...errors import InputError
from ...model.model import Model
from ..contributor import Contributor, Runtime
from ..pieces import Equality, Group, Inequality, Kind, Piece
from ..schedule import FMAX, FMIN, KD, KP, PARAMETER_SIZE, POSITION, ROTATION, feedback_gains

if TYPE_CHECKING:
    from ..step_context import StepContext

__all__ = ["Contact", "friction_pyramid", "DEFAULT_CONTACT_KP"]

#: Default stiffness of the contact pose feedback, 1/s² (damping ``2 √kp``, critical): a 1 mm error
#: asks for 1 m/s². In the balance demo's lateral pushes (Talos in MuJoCo, 0.1 s) the first push that
#: slips ≥ 1 cm went from 225 N (no feedback) to 475 (100), 550 (1000) and 575 N (3000); stiffer gains
#: also amplify velocity noise on hardware, so the library default stays at 1000.
DEFAULT_CONTACT_KP = 1000.0


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
        kp: stiffness of the pose feedback, 1/s² (≥ 0; see the module docstring).
        kd: its damping, 1/s (≥ 0; default ``2 √kp``, critical damping).

    Kernel parameters (read from the controller's schedule, :mod:`wbc.control.schedule`): the normal
    force bounds now, the gains and where the contact frame was placed.
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
        kp: float = DEFAULT_CONTACT_KP,
        kd: float | None = None,
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
        self.kp, self.kd = feedback_gains(frame, kp, kd)

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

    @abc.abstractmethod
    def pose_error(self, kin: TreeKinematics, position, rotation):
        """``e`` (equality_dim, 1): the error of the contact frame's pose at the traced state from its
        placement (``position`` (3, 1) m, ``rotation`` (3, 3), world), in the motion rows' coordinates
        (its time derivative is the rows' velocity to first order); zero at the placement (traced)."""

    def check(self, model: Model) -> None:
        """Raise :class:`~wbc.errors.FrameError` if the frame is unknown to ``model``."""
        model.frame_id(self.frame)

    # ----------------------------------------------------------------------------- as a contributor
    @property
    def parameter_size(self) -> int:
        return PARAMETER_SIZE

    def parameters(self, runtime: Runtime) -> np.ndarray:
        return runtime.contacts.parameters(self.name)

    def is_active(self, runtime: Runtime) -> bool:
        return runtime.contacts.is_active(self.name)

    def pieces(self, ctx: StepContext, p) -> list[Piece]:
        A, drift = ctx.contact_acceleration(self)
        return [
            Equality(A, self.desired_acceleration(ctx, p) - drift, Group(Kind.CONTACT, self.name)),
            *self.force_inequalities(p[FMIN], p[FMAX]),
        ]

    def desired_acceleration(self, ctx: StepContext, p):
        """``a* = −K_p e − K_d ν`` (equality_dim, 1): the motion rows' acceleration the equality asks
        for, from the pose error ``e`` (:meth:`pose_error`) and the rows' velocity ``ν = J_m v`` (traced;
        ``p`` the contact's parameters)."""
        kin = ctx.kin
        assert kin.v is not None  # a step context always traces a velocity
        (motion,) = resolve(ctx.model, [self.motion_constraint()])
        velocity = ca.mtimes(motion.jacobian(kin), kin.v)
        rotation = ca.reshape(p[ROTATION], 3, 3).T  # row-major in the parameters
        error = self.pose_error(kin, p[POSITION], rotation)
        return -p[KP] * error - p[KD] * velocity

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
        return f"{type(self).__name__}({self.frame!r}, mu={self.mu}, kp={self.kp}, kd={self.kd})"
