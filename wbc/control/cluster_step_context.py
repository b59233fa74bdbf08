"""The step context of a clustered model: exact dynamics of rotors, transmissions and loops.

A :class:`~wbc.ClusterModel`'s controller takes the state ``(y, v)`` (spanning-tree configuration,
loops closed, and independent velocities; see :mod:`wbc.model.clusters`) and its inputs are the
*motors* (:attr:`~wbc.ClusterModel.motor_joints`: e.g. the two cranks of a parallel ankle, not a
virtual ankle pitch and roll) and the contact forces, ``u = (τ_m, f)``. With ``A_m = Gᵀ E`` the
independent forces per unit motor effort (the rows of each cluster's ``G`` at its motors), the
equations of motion ``M q̈ + h = A_m τ_m + Jᵀ f`` give, exactly,

    q̈ = a₀ + B̂ u,   a₀ = C-ABA(y, v, 0),   B̂ = M⁻¹ [A_m, J_cᵀ Γ] by the clustered IIM.

Contributors see what they see on a tree: ``ctx.model`` is the spanning tree (frames, masses,
gravity), ``ctx.kin`` its kinematics in independent coordinates
(:class:`~wbc.algorithms.clusters.kinematics.IndependentKinematics`: Jacobians ``J G``, drifts at
``ÿ = g``), so every task and contact works unchanged; ``ctx.cluster_model`` is the clustered model.

The contacts' motion rows ``J_c q̈ + J̇_c v = A u + d`` take their matrix from the IIM's own forward
pass (:data:`ContactRows.IIM_FORWARD`: the constraint bodies' accelerations per unit input, ``K_e 𝖺``)
by default; :data:`ContactRows.C_EFPA` computes the force block by C-EFPA and the torque block from
``B̂``'s contact columns (the tree context's scheme). Both are exact; ``benchmarks.cluster_step``
compares them (the forward pass is cheaper: the IIM already carries every input to every body, and
C-EFPA propagates the contact rows up the legs a second time).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from functools import cached_property

import casadi as ca
import numpy as np

from ..algorithms.clusters import dynamics as cluster_dynamics
from ..algorithms.clusters import operational
from ..algorithms.clusters.kinematics import ClusterKinematics, IndependentKinematics
from ..algorithms.constraints import resolve
from ..algorithms.iim import InputMatrixMethod
from ..errors import InputError
from ..model import checks
from ..model.clusters import ClusterModel
from ..model.model import Model
from .step_context import StepContext, Variables

__all__ = ["ClusterStepContext", "ContactRows"]


class ContactRows(enum.Enum):
    """How a clustered context computes the contacts' motion rows (both exact)."""

    IIM_FORWARD = "iim-forward"  #: from the clustered IIM's forward pass (default)
    C_EFPA = "c-efpa"  #: Delassus block by C-EFPA, torque block from B̂'s contact columns


class ClusterStepContext(StepContext):
    """The traced state's clustered dynamics, shared by all contributors (see the module docstring).

    Attributes:
        cluster_model: the clustered model.
        model: its spanning tree (what contributors look frames and masses up in).
        kin: the spanning tree's kinematics in independent coordinates.
        cluster_kin: the clustered kinematics (``G``, ``g``, the tree's own kinematics).
        contacts, variables, n_u: as :class:`~wbc.control.step_context.StepContext`.
    """

    # ----------------------------------------------------------------------------- the model's inputs and state
    @classmethod
    def input_count(cls, model: ClusterModel) -> int:  # type: ignore[override]
        """Number of motors."""
        return model.n_motors

    @classmethod
    def input_limit(cls, model: ClusterModel) -> np.ndarray:  # type: ignore[override]
        """The motors' effort limits (n_motors,), N m or N."""
        return np.array(model.motor_effort_limit, dtype=float)

    @classmethod
    def input_names(cls, model: ClusterModel) -> tuple[str, ...]:  # type: ignore[override]
        return model.motor_names

    @classmethod
    def state_sizes(cls, model: ClusterModel) -> tuple[int, int]:  # type: ignore[override]
        """``(tree.nq, nv)``: the spanning configuration ``y`` and the independent velocity."""
        return model.tree.nq, model.nv

    @classmethod
    def kinematic_tree(cls, model: ClusterModel) -> Model:  # type: ignore[override]
        """The spanning tree: ``y`` is its configuration."""
        return model.tree

    @classmethod
    def check_configuration(cls, model: ClusterModel, q) -> np.ndarray:  # type: ignore[override]
        """The spanning configuration ``y`` checked (size, finiteness, unit quaternions)."""
        return checks.configuration(model.tree, q, "y")

    @classmethod
    def check_state(cls, model: ClusterModel, q, v) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[override]
        """``(y, v)`` checked: sizes, finiteness, unit quaternions of ``y`` (its loops are not
        re-checked each step: a simulator closes them only to its constraint tolerance)."""
        return cls.check_configuration(model, q), checks.vector(v, model.nv, "v")

    # ----------------------------------------------------------------------------- traced quantities
    def __init__(
        self,
        model: ClusterModel,
        q,
        v,
        contacts: Sequence,
        method: InputMatrixMethod,
        contact_rows: ContactRows = ContactRows.IIM_FORWARD,
    ) -> None:
        if method is not InputMatrixMethod.IIM:
            raise InputError(
                f"a clustered model's B̂ comes from the clustered IIM; input_matrix={method.value!r} is not available"
            )
        self.cluster_model = model
        self.model = model.tree
        self.cluster_kin = ClusterKinematics(model, q, v)
        self.kin = IndependentKinematics(self.cluster_kin)
        self.contacts = tuple(contacts)
        self.variables = Variables.of(model.n_motors, contacts)
        self.n_u = self.variables.n
        self._method = method
        self._contact_rows_method = contact_rows
        self._motion = resolve(model.tree, [c.motion_constraint() for c in self.contacts])

    @cached_property
    def bodies(self) -> cluster_dynamics.ClusterArticulatedBodies:  # type: ignore[override]
        """The articulated-cluster quantities of the state (C-ABA, clustered IIM, C-EFPA)."""
        return cluster_dynamics.ClusterArticulatedBodies.compute(self.cluster_model, self.cluster_kin)

    @cached_property
    def a0(self):
        """Free acceleration (nv, 1) by C-ABA with zero inputs."""
        cm = self.cluster_model
        zero = ca.DM.zeros(cm.nv, 1)
        return cluster_dynamics.aba(cm, None, None, zero, kin=self.cluster_kin, bodies=self.bodies)

    @cached_property
    def _motor_pass(self):
        """``(M⁻¹[A_m, J_mᵀ], J_m M⁻¹[A_m, J_mᵀ])`` from one clustered IIM pass."""
        return operational.motor_iim(self.cluster_model, self.cluster_kin, self._motion, self.bodies)

    @cached_property
    def _motion_input_matrix(self):
        return self._motor_pass[0]

    @property
    def _n_inputs(self) -> int:
        """The motors: the columns of ``B̂`` before the contacts' force variables."""
        return self.cluster_model.n_motors

    def _motor_map(self):
        """``A_m = Gᵀ E`` (nv, n_motors), traced, block structure explicit."""
        cm = self.cluster_model
        A = ca.SX(cm.nv, cm.n_motors)
        col = 0
        for k, c in enumerate(cm.infos):
            if c.motors:
                block = ca.DM.eye(c.nv) if c.trivial else self.cluster_kin.G[k][list(c.motor_rows), :].T
                A[c.idx_v : c.idx_v + c.nv, col : col + len(c.motor_rows)] = block
                col += len(c.motor_rows)
        return A

    @cached_property
    def _contact_rows(self):
        """``(A, d)``: all contacts' motion-row accelerations ``A u + d``, (Σ equality_dim, n_u), (·, 1)."""
        if not self.contacts:
            return ca.DM.zeros(0, self.n_u), ca.DM.zeros(0, 1)
        cm, n_m = self.cluster_model, self.cluster_model.n_motors
        basis = ca.diagcat(*[ca.DM(c.force_basis()) for c in self.contacts])
        if self._contact_rows_method is ContactRows.IIM_FORWARD:
            JB = self._motor_pass[1]
            A_tau, delassus = JB[:, 0:n_m], JB[:, n_m:]
        else:
            Bm = self._motion_input_matrix
            A_tau = ca.mtimes(Bm[:, n_m:].T, self._motor_map())  # J M⁻¹ Gᵀ E, by symmetry of M⁻¹
            delassus = operational.efpa(cm, self.cluster_kin, self._motion, self.bodies)
        A_f = ca.mtimes(delassus, basis)
        drift = ca.vertcat(*[ca.mtimes(m.jacobian(self.kin), self.a0) + m.drift(self.kin) for m in self._motion])
        return ca.horzcat(A_tau, A_f), drift
