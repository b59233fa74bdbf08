"""Operations of the traced step kernel (issue 27): fewer operations, the same numbers.

The compiled kernel's code size and run time follow its operation count (CasADi's
``n_instructions``), which is deterministic: these tests hold the counts of the IIM and of Talos's
standing step under bounds that the previous forms exceeded (IIM on Talos's two 6D feet 37.0k, the
standing kernel 55.7k; the Delassus block by PV-OSIMr), and check the new forms' numbers against
Pinocchio and the baselines.
"""

from __future__ import annotations

import casadi as ca
import numpy as np
import pinocchio as pin
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.constraint_cases import catalog_constraints
from tests.helpers import assert_close, robot_case
from wbc import tasks
from wbc.algorithms.constraints import resolve
from wbc.algorithms.dynamics import ArticulatedBodies
from wbc.algorithms.iim import InputMatrixMethod, iim
from wbc.algorithms.kinematics import TreeKinematics
from wbc.control.builder import trace_step
from wbc.control.step_context import StepContext
from wbc.robots import synthetic


def _iim_operations(model: wbc.Model, constraints) -> int:
    q = ca.SX.sym("q", model.nq)
    kin = TreeKinematics(model, q)
    B = iim(model, kin, resolve(model, constraints), ArticulatedBodies.compute(model, kin))
    return ca.Function("iim", [q], [B]).n_instructions()


@pytest.mark.parametrize(
    "name,which,bound",
    [
        ("talos", "feet", 31_500),
        ("g1_with_hands", "feet+fingertips", 71_000),
        ("panda", "hand+fingers", 6_100),
        ("allegro", "fingertips", 3_700),
    ],
)
def test_iim_forms_accelerations_only_where_it_pays(name, which, bound):
    """The IIM's forward pass reaches most bodies' parent accelerations through ``Uᵀ S`` couplings
    and columns of inputs outside a path's subtree through its top's acceleration (before: Talos 36,996,
    G1 with hands 82,451, Panda 7,011, Allegro 4,243 operations; now 30,984, 70,500, 5,970, 3,647)."""
    case = robot_case(name)
    assert _iim_operations(case.model, catalog_constraints(case, which)) <= bound


def test_iim_on_a_long_chain_and_a_bushy_tree_equals_the_dense_inverse():
    """Long runs of unformed accelerations (a 40-link chain: the search's window is 16 bodies) and
    many branches: B̂ equals the dense method's ``M⁻¹ [Sᵀ, Jᵀ]`` to 1e-9."""
    rng = np.random.default_rng(2711)
    for model in (synthetic.chain(40), synthetic.random_tree(30, rng, floating_base=True)):
        q = wbc.random_configuration(model, rng)
        frame = model.frames[-1].name
        constraints = [wbc.PointConstraint(frame)]
        B = wbc.eager.inertia_weighted_input_matrix(model, q, constraints, "iim")
        D = wbc.eager.inertia_weighted_input_matrix(model, q, constraints, "dense")
        assert_close(B, D, what=f"{model.name}: iim vs dense")


def test_contact_rows_equal_pinocchio():
    """The step context's contact rows: force block ``J_m M⁻¹ J_mᵀ`` (from B̂'s constraint columns)
    and torque block ``J_m M⁻¹ Sᵀ`` equal those formed with Pinocchio's ``M⁻¹``, at random states,
    to 1e-9 (``J_m``: wbc's motion rows, themselves checked against Pinocchio)."""
    case = robot_case("talos")
    model, spec = case.model, case.spec
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=0.3) for f in spec.feet]
    q_sym, v_sym = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv)
    ctx = StepContext(model, q_sym, v_sym, contacts, InputMatrixMethod.IIM)
    J_sym = ca.vertcat(*[m.jacobian(ctx.kin) for m in ctx._motion])
    rows = ca.Function("rows", [q_sym, v_sym], [ctx._contact_rows[0], J_sym])
    B = model.actuation_matrix()  # Sᵀ (nv, n_actuated)
    rng = np.random.default_rng(2712)
    for i in range(3):
        q = wbc.random_configuration(model, rng)
        A, J = (np.array(x) for x in rows(q, np.zeros(model.nv)))
        Minv = oracle.minverse(case.pin_model, q)
        expected = np.hstack([J @ Minv @ B, J @ Minv @ J.T])  # the wrench contacts' force basis is I
        assert_close(A, expected, what=f"state {i}: contact rows vs J_m M⁻¹ [Sᵀ, J_mᵀ] (Pinocchio's M⁻¹)")


def test_talos_standing_kernel_operations():
    """The anchors' standing controller on Talos (CoM and posture tasks, two 6D feet, torque limits):
    its traced step kernel has at most 47,000 operations (55,658 before this issue's forms)."""
    spec = wbc.robots.load("talos")
    model = spec.model
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=0.3) for f in spec.feet]
    com, posture = tasks.CoMTask(weight=1.0, kp=20.0), tasks.PostureTask(model, weight=1e-3, kp=10.0)
    ctrl = wbc.WholeBodyController(model, [com, posture], contacts, limits=[wbc.TorqueLimit()])
    function, _ = trace_step(model, list(ctrl.contributors), ctrl.contacts, InputMatrixMethod.IIM)
    assert function.n_instructions() <= 47_000


def test_contact_drift_from_the_free_motion_equals_pinocchio():
    """The contacts' drift ``J_m a0 + J̇_m v``, now read from the ABA's body accelerations (no Jacobian
    product): Talos's two 6D sole rows (LOCAL) equal the soles' spatial accelerations in their own
    frames by Pinocchio at ``q̈ = aba(q, v, 0)``, at random states, to 1e-9."""
    case = robot_case("talos")
    model, spec = case.model, case.spec
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=0.3) for f in spec.feet]
    q_sym, v_sym = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv)
    ctx = StepContext(model, q_sym, v_sym, contacts, InputMatrixMethod.IIM)
    drift = ca.Function("drift", [q_sym, v_sym], [ctx._contact_rows[1]])
    data = case.pin_model.createData()
    rng = np.random.default_rng(2713)
    for i in range(3):
        q, v = wbc.random_configuration(model, rng), rng.normal(size=model.nv)
        a0 = pin.aba(case.pin_model, data, q, v, np.zeros(model.nv))
        pin.forwardKinematics(case.pin_model, data, q, v, a0)
        expected = [
            pin.getFrameAcceleration(case.pin_model, data, case.pin_model.getFrameId(f), pin.LOCAL).vector
            for f in spec.feet
        ]
        assert_close(np.array(drift(q, v)).reshape(-1), np.concatenate(expected), what=f"state {i}: contact drift")
