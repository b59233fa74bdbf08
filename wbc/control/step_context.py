"""What contributors see while the controller traces its kernel: one state's dynamics, shared.

:class:`StepContext` holds the kinematics of the traced state and, computed once for everyone:

* ``a0`` — the free acceleration ``−M⁻¹h`` (ABA with zero inputs);
* ``Bhat`` — ``B̂ = M⁻¹[Sᵀ, J_mᵀΓ]`` (nv, n_u) by the IIM (or a baseline), in the QP's variables:
  the actuator columns, then each contact's force variables (``Γ`` its force basis);
* the contacts' motion rows as functions of the inputs, ``J_m q̈ + J̇_m v = A u + d``, where the
  force block of ``A`` is the Delassus matrix ``J_m M⁻¹ J_mᵀ``, formed from ``B̂``'s constraint
  columns (its upper triangle), and the torque block comes from the actuated rows of ``B̂`` (``M⁻¹``
  is symmetric);
* ``contact_wrenches`` — per contact, its columns and the world wrench about the world origin per
  unit force variable (tasks on the CoM or the momentum use Newton–Euler on these).

Variables: ``u = (τ, f₁, ..., f_k)``, the block :data:`~wbc.control.pieces.TAU` first, then every
declared contact's force variables in declaration order (:class:`Variables`).

The context is chosen from the model's type (:func:`wbc.control.model_context.context_type`): a :class:`~wbc.Model` gets
:class:`StepContext`; a clustered model (:class:`~wbc.ClusterModel`: rotors, transmissions, loops)
gets :class:`~wbc.control.cluster_step_context.ClusterStepContext`, whose inputs are the motors. The
class also says what the controller needs to know of a model: the number and limits of its inputs,
the sizes and checks of its state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import cached_property

import casadi as ca
import numpy as np

from ..algorithms.constraints import ResolvedConstraint, resolve
from ..algorithms.dynamics import ArticulatedBodies, aba_with_accelerations
from ..algorithms.iim import InputMatrixMethod, iim, input_matrix
from ..algorithms.kinematics import TreeKinematics
from ..model import checks
from ..model.model import Model
from ..spatial.algebra import symmetric
from .pieces import TAU

__all__ = ["Variables", "StepContext"]


@dataclasses.dataclass(frozen=True)
class Variables:
    """The blocks of the QP's unknowns ``u``: ``(name, size)`` in order, ``"tau"`` first."""

    blocks: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, n_actuated: int, contacts: Sequence) -> Variables:
        return cls(((TAU, n_actuated),) + tuple((c.name, c.dim) for c in contacts))

    @cached_property
    def slices(self) -> dict[str, slice]:
        out, start = {}, 0
        for name, size in self.blocks:
            out[name] = slice(start, start + size)
            start += size
        return out

    @property
    def n(self) -> int:
        return sum(size for _, size in self.blocks)

    def __getitem__(self, name: str) -> slice:
        return self.slices[name]


class StepContext:
    """The traced state's dynamics, shared by all contributors (see the module docstring).

    Attributes:
        model: the robot.
        kin: its kinematics at the traced ``(q, v)`` (``kin.q``, ``kin.v``).
        contacts: every declared contact, in variable order.
        variables: the QP's variable blocks.
        n_u: number of QP variables.
    """

    # ----------------------------------------------------------------------------- the model's inputs and state
    @classmethod
    def input_count(cls, model: Model) -> int:
        """Number of actuator inputs (the ``"tau"`` block): the actuated degrees of freedom."""
        return model.n_actuated

    @classmethod
    def input_limit(cls, model: Model) -> np.ndarray:
        """Default effort limits of the inputs (input_count,), N m or N (inf where unknown)."""
        return np.array(model.effort_limit, dtype=float)

    @classmethod
    def input_names(cls, model: Model) -> tuple[str, ...]:
        """Names of the inputs, in order."""
        return model.actuated_joint_names

    @classmethod
    def state_sizes(cls, model: Model) -> tuple[int, int]:
        """Sizes of the step's state ``(q, v)``."""
        return model.nq, model.nv

    @classmethod
    def kinematic_tree(cls, model: Model) -> Model:
        """The tree whose configuration the state's ``q`` is (frames, placements): the model itself."""
        return model

    @classmethod
    def check_configuration(cls, model: Model, q) -> np.ndarray:
        """The state's ``q`` checked (size, finiteness, unit quaternions)."""
        return checks.configuration(model, q)

    @classmethod
    def check_state(cls, model: Model, q, v) -> tuple[np.ndarray, np.ndarray]:
        """``(q, v)`` checked (sizes, finiteness, unit quaternions)."""
        return cls.check_configuration(model, q), checks.velocity(model, v)

    # ----------------------------------------------------------------------------- traced quantities
    def __init__(self, model: Model, q, v, contacts: Sequence, method: InputMatrixMethod) -> None:
        self.model = model
        self.kin = TreeKinematics(model, q, v)
        self.contacts = tuple(contacts)
        self.variables = Variables.of(model.n_actuated, contacts)
        self.n_u = self.variables.n
        self._method = method
        self._motion: list[ResolvedConstraint] = resolve(model, [c.motion_constraint() for c in self.contacts])

    @cached_property
    def bodies(self) -> ArticulatedBodies:
        """The articulated-body quantities of the state, shared by the ABA and the IIM."""
        return ArticulatedBodies.compute(self.model, self.kin)

    @cached_property
    def _free_motion(self) -> tuple:
        """``(a0, acc)``: the free acceleration and every body's spatial acceleration under it, gravity
        included as the world's upward acceleration (:func:`~wbc.algorithms.dynamics.aba_with_accelerations`)."""
        zero = ca.DM.zeros(self.model.nv, 1)
        return aba_with_accelerations(self.model, self.kin, self.bodies, zero)

    @cached_property
    def a0(self):
        """Free acceleration ``−M⁻¹h`` (nv, 1)."""
        return self._free_motion[0]

    def _free_body_acceleration(self, joint: int):
        """Body ``joint``'s spatial acceleration (6, 1) in its joint frame under ``q̈ = a0``, gravity not
        included (the ABA's, less the world's ``[−g; 0]`` moved to the body: ``[Rᵀ g; 0]`` added)."""
        g = ca.mtimes(self.kin.oMi[joint].R.T, ca.DM(np.asarray(self.model.gravity, dtype=float).reshape(3, 1)))
        return self._free_motion[1][joint] + ca.vertcat(g, ca.DM.zeros(3, 1))

    @cached_property
    def _motion_input_matrix(self):
        """``M⁻¹[Sᵀ, J_mᵀ]`` (nv, n_actuated + Σ equality_dim)."""
        if self._method is InputMatrixMethod.IIM:
            return iim(self.model, self.kin, self._motion, self.bodies)
        return input_matrix(self.model, self.kin, self._motion, self._method)

    @property
    def _n_inputs(self) -> int:
        """The actuators: the columns of ``B̂`` before the contacts' force variables."""
        return self.model.n_actuated

    @cached_property
    def Bhat(self):
        """``B̂`` (nv, n_u) in the QP's variables (inputs, then each contact's force variables)."""
        Bm, n_in = self._motion_input_matrix, self._n_inputs
        blocks, col = [Bm[:, 0:n_in]], n_in
        for c in self.contacts:
            blocks.append(ca.mtimes(Bm[:, col : col + c.equality_dim], ca.DM(c.force_basis())))
            col += c.equality_dim
        return ca.horzcat(*blocks)

    @cached_property
    def _contact_rows(self):
        """``(A, d)``: all contacts' motion-row accelerations ``A u + d``, (Σ equality_dim, n_u), (·, 1)."""
        if not self.contacts:
            return ca.DM.zeros(0, self.n_u), ca.DM.zeros(0, 1)
        Bm, n_act = self._motion_input_matrix, self.model.n_actuated
        J = ca.vertcat(*[m.jacobian(self.kin) for m in self._motion])
        # J_m M⁻¹ J_mᵀ from B̂'s constraint columns, its upper triangle only (Talos on two 6D feet: 2.5k
        # operations, PV-OSIMr's 4.2k; the two agree to rounding, tests/test_iim_vs_pinocchio.py)
        delassus = symmetric(ca.mtimes(J, Bm[:, n_act:]))
        A_tau = Bm[self.model.actuated_v_indices.tolist(), n_act:].T  # J_m M⁻¹ Sᵀ, by symmetry of M⁻¹
        A_f = ca.mtimes(delassus, ca.diagcat(*[ca.DM(c.force_basis()) for c in self.contacts]))
        # J_m a0 + J̇_m v: the rows' acceleration from the ABA's body acceleration (no Jacobian product)
        drift = ca.vertcat(*[m.drift(self.kin, self._free_body_acceleration(m.joint)) for m in self._motion])
        return ca.horzcat(A_tau, A_f), drift

    def contact_acceleration(self, contact) -> tuple:
        """``(A, d)`` with the acceleration of ``contact``'s motion rows ``= A u + d``,
        (equality_dim, n_u) and (equality_dim, 1)."""
        A, d = self._contact_rows
        start = 0
        for c in self.contacts:
            if c is contact:
                rows = slice(start, start + c.equality_dim)
                return A[rows, :], d[rows]
            start += c.equality_dim
        raise KeyError(f"contact {contact.name!r} is not declared to this controller")

    @cached_property
    def contact_wrenches(self) -> list[tuple[slice, object]]:
        """Per contact: ``(columns, W)``, ``W`` (6, dim) the world wrench about the world origin per unit
        force variable."""
        return [(self.variables[c.name], c.wrench_map(self.kin)) for c in self.contacts]

    def columns(self, name: str) -> slice:
        """The columns of variable block ``name`` in ``u``."""
        return self.variables[name]
