"""A workspace: one state's kinematics and articulated-body quantities, computed lazily, shared.

For users who write their own kernels (as Pinocchio's ``Data`` for one state): build it from
CasADi symbols (``SX``) to trace, or from numbers (``DM``) to evaluate, and ask it for any quantity;
everything it computes once (placements, velocities, articulated-body inertias) is reused::

    q, v = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv)
    ws = Workspace(model, q, v)
    J = ws.frame_jacobian("left_sole_link", ReferenceFrame.LOCAL_WORLD_ALIGNED)   # (6, nv)
    a0 = ws.free_acceleration()                                                  # (nv, 1)
    Bhat = ws.input_matrix([WeldConstraint("left_sole_link")])                   # (nv, n_act + 6)
    f = wbc.codegen.compile_function(wbc.codegen.trace(...))                     # as usual

RNEA, CRBA and ABA run on their own kinematics of the equivalent model with cheaper joint frames
(:func:`wbc.model.reframe.reframed`: the same joint-space results, fewer operations traced) rather
than on the shared one; the articulated-body quantities the IIM and the Delassus algorithms share
are computed on the shared kinematics.

The same methods back :mod:`wbc.eager` (numbers, uncompiled), the kernels of the compiled numeric
API :mod:`wbc.numeric` and :mod:`wbc.symbolic` (CasADi in, CasADi out). Frames are given by name
or index; external forces ``fext`` as ``{frame name: wrench}``, each wrench ``[f; n]`` (N, N m)
acting on the frame's body, expressed in the frame (LOCAL) about its origin.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cached_property

import casadi as ca

from ..errors import InputError
from ..model import checks
from ..model.model import Model
from ..spatial.algebra import SE3, act_force
from . import dynamics
from .constraints import Constraint, resolve
from .delassus import DelassusMethod, delassus_matrix
from .iim import InputMatrixMethod, input_matrix
from .kinematics import ReferenceFrame, TreeKinematics

__all__ = ["Workspace", "body_forces"]


def body_forces(
    model: Model,
    fext: Mapping[str, object] | None,
    frame_index: Callable[[str], int],
    wrench: Callable[[str, object], object] = lambda name, w: w,
) -> dict[int, object] | None:
    """External forces ``{frame: LOCAL wrench (6,)}`` as spatial forces on the bodies, in their joint
    frames (``{joint: force (6, 1)}``, summed per body; none on the ground), or ``None`` without forces.

    Args:
        frame_index: a frame's index from its key (raising on an unknown frame).
        wrench: ``(frame key, wrench)`` -> the wrench to use (e.g. checked and converted).
    """
    fext = checks.external_forces(fext)
    if fext is None:
        return None
    out: dict[int, object] = {}
    for name, w in fext.items():
        f = model.frames[frame_index(name)]
        body_force = act_force(f.placement, wrench(name, w))
        out[f.joint] = out[f.joint] + body_force if f.joint in out else body_force
    out.pop(0, None)  # a force on the ground does nothing
    return out


class Workspace:
    """The kinematics and articulated-body quantities of ``model`` at ``q`` (nq, 1) and ``v`` (nv, 1)
    (``v`` may be omitted for position-level quantities). Inputs are CasADi column vectors."""

    def __init__(self, model: Model, q, v=None) -> None:
        self.model = model
        self.kinematics = TreeKinematics(model, q, v)

    @property
    def q(self):
        return self.kinematics.q

    @property
    def v(self):
        if self.kinematics.v is None:
            raise InputError("this quantity needs a velocity: build the Workspace with v")
        return self.kinematics.v

    @cached_property
    def bodies(self) -> dynamics.ArticulatedBodies:
        """Articulated-body inertias and their factors (configuration only), shared by the ABA, the
        IIM and the Delassus algorithms.

        Raises:
            ModelError: the model has joints that move no mass (:func:`wbc.checks.massless_joints`).
        """
        checks.invertible_dynamics(self.model, "the articulated-body algorithm")
        return dynamics.ArticulatedBodies.compute(self.model, self.kinematics)

    def frame(self, frame: str | int) -> int:
        """The index of ``frame`` (a name or an index)."""
        if isinstance(frame, str):
            return self.model.frame_id(frame)
        if isinstance(frame, int) and not isinstance(frame, bool):
            if not 0 <= frame < len(self.model.frames):
                raise InputError(
                    f"frame index {frame} out of range (model {self.model.name!r} has {len(self.model.frames)} frames)"
                )
            return frame
        raise InputError(f"a frame is a name or an index, got {frame!r}")

    def external_forces(self, fext: Mapping[str, object] | None) -> dict[int, object] | None:
        """``{frame: LOCAL wrench (6,)}`` as spatial forces on the bodies, in their joint frames."""
        return body_forces(self.model, fext, self.frame)

    # ----------------------------------------------------------------------------- kinematics
    def frame_placement(self, frame: str | int) -> SE3:
        """The world placement of ``frame``."""
        return self.kinematics.frame_placement(self.frame(frame))

    def frame_jacobian(self, frame: str | int, reference: ReferenceFrame = ReferenceFrame.LOCAL):
        """The Jacobian (6, nv) of ``frame`` in ``reference`` (rows [linear; angular])."""
        return self.kinematics.frame_jacobian(self.frame(frame), _reference(reference))

    def frame_velocity(self, frame: str | int, reference: ReferenceFrame = ReferenceFrame.LOCAL):
        """The spatial velocity (6, 1) of ``frame`` in ``reference``."""
        return self.kinematics.frame_velocity(self.frame(frame), _reference(reference))

    def frame_drift(self, frame: str | int, reference: ReferenceFrame = ReferenceFrame.LOCAL):
        """The classical acceleration drift ``J̇ v`` (6, 1) of ``frame`` in ``reference``."""
        return self.kinematics.frame_drift(self.frame(frame), _reference(reference))

    def center_of_mass(self):
        """Position (3, 1) of the centre of mass in the world, m."""
        return self.kinematics.center_of_mass()

    def com_jacobian(self):
        """Jacobian (3, nv) of the centre of mass, world axes."""
        return self.kinematics.com_jacobian()

    def com_velocity(self):
        """Velocity (3, 1) of the centre of mass, world axes, m/s."""
        return self.kinematics.com_velocity()

    def com_drift(self):
        """CoM acceleration (3, 1) at zero joint acceleration, world axes, m/s²."""
        return self.kinematics.com_drift()

    def centroidal_map(self):
        """Centroidal momentum matrix (6, nv): [linear; angular] momentum about the CoM, world axes."""
        return self.kinematics.centroidal_map()

    def centroidal_drift(self):
        """``Ȧ_g v`` (6, 1): centroidal momentum rate at zero joint acceleration (no gravity)."""
        return self.kinematics.centroidal_drift()

    def centroidal_momentum(self):
        """Centroidal momentum (6, 1) about the CoM, world axes."""
        return self.kinematics.centroidal_momentum()

    # ----------------------------------------------------------------------------- dynamics
    def rnea(self, a, fext: Mapping[str, object] | None = None):
        """Inverse dynamics ``τ = M a + h − Σ Jᵀ fext`` (nv, 1)."""
        return dynamics.rnea(self.model, self.q, self.v, a, self.external_forces(fext))

    def nonlinear_effects(self):
        """``h(q, v)`` (nv, 1): Coriolis, centrifugal and gravity terms."""
        return dynamics.nonlinear_effects(self.model, self.q, self.v)

    def crba(self):
        """The joint-space inertia matrix ``M(q)`` (nv, nv)."""
        return dynamics.crba(self.model, self.q)

    def aba(self, tau, fext: Mapping[str, object] | None = None):
        """Forward dynamics ``q̈`` (nv, 1) with ``M q̈ + h = τ + Σ Jᵀ fext``.

        Raises:
            ModelError: the model has joints that move no mass (then ``M`` is singular).
        """
        checks.invertible_dynamics(self.model, "forward dynamics (ABA)")
        return dynamics.aba(self.model, self.q, self.v, tau, self.external_forces(fext))

    def free_acceleration(self):
        """``a₀ = −M⁻¹ h`` (nv, 1): the acceleration with zero inputs."""
        return self.aba(ca.DM.zeros(self.model.nv, 1))

    def input_matrix(self, constraints: Sequence[Constraint] = (), method=InputMatrixMethod.IIM):
        """``B̂ = M⁻¹ [Sᵀ, Kᵀ]`` (nv, n_actuated + m) by ``method`` (an :class:`InputMatrixMethod`).

        Raises:
            ModelError: the model has joints that move no mass (then ``M`` is singular).
        """
        checks.invertible_dynamics(self.model, "the inertia-weighted input matrix")
        return input_matrix(self.model, self.kinematics, resolve(self.model, constraints), method)

    def delassus(self, constraints: Sequence[Constraint], method=DelassusMethod.PV_OSIMR):
        """The Delassus matrix ``K M⁻¹ Kᵀ`` (m, m) of ``constraints`` by ``method`` (a :class:`DelassusMethod`).

        Raises:
            ModelError: the model has joints that move no mass (then ``M`` is singular).
        """
        method = checks.option(DelassusMethod, method, "method")
        checks.invertible_dynamics(self.model, "the Delassus matrix")
        resolved = resolve(self.model, constraints)
        recursive = method in (DelassusMethod.PV_OSIMR, DelassusMethod.PV_OSIM, DelassusMethod.EFPA)
        return delassus_matrix(self.model, self.kinematics, resolved, method, self.bodies if recursive else None)


def _reference(reference) -> ReferenceFrame:
    if not isinstance(reference, ReferenceFrame):
        raise InputError(
            f"reference must be a wbc.ReferenceFrame (LOCAL, WORLD or LOCAL_WORLD_ALIGNED), got {reference!r}"
        )
    return reference
