"""The robots added for issue 15, proven against Pinocchio like the others, with what a controller
needs.

Solo12, ANYmal C, Go2 (point feet), Romeo (fingers locked), TIAGo (wheels and hand locked, antenna
inertias projected), JVRC-1 (``jvrc-description``), iCub (``icub-models``). Pinocchio's twin is
built from the same file, reduced by ``buildReducedModel`` where the catalog locks joints
(:func:`benchmarks.pinocchio_adapter.catalog_model`). At random states: foot and hand placements,
Jacobians and drifts in the three references; M, h, RNEA, ABA with external forces on the feet;
CoM, centroidal map and drift; B̂ = M⁻¹[Sᵀ, Jᵀ] (IIM) for the foot contacts and their Delassus
matrix (PV-OSIMr). The layout (joint order, frames, limits, inertias) is checked for every catalog
robot by ``test_model_layout``. Then: ``q0`` stands (feet on the ground, contact frames level for
soles, CoM over the support polygon), and a controller holds it (one step, forces balance gravity).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.helpers import assert_close, random_state, robot_case
from wbc import robots, tasks

NEW = ("solo12", "anymal_c", "go2", "romeo", "tiago", "jvrc1", "icub")
N_STATES = 3
RF = wbc.ReferenceFrame


def _contacts(spec):
    if spec.foot_radius is not None:
        return [wbc.PointConstraint(f) for f in spec.feet]
    return [wbc.WeldConstraint(f) for f in spec.feet] or [wbc.WeldConstraint(spec.hands[0])]


@pytest.mark.parametrize("name", NEW)
def test_kinematics_and_dynamics_vs_pinocchio(name):
    case = robot_case(name)
    m, pm, spec = case.model, case.pin_model, case.spec
    pd = pm.createData()
    rng = np.random.default_rng(sum(map(ord, name)))
    frames = list(spec.feet + spec.hands)
    assert frames and all(m.has_frame(f) for f in frames)
    for i in range(N_STATES):
        q, v, a, tau = random_state(m, rng)
        where = f"{name} state {i}"
        pin.computeJointJacobians(pm, pd, q)
        pin.forwardKinematics(pm, pd, q, v, 0 * v)
        pin.updateFramePlacements(pm, pd)
        for f in frames:
            fid = case.pin_frame(f)
            assert_close(wbc.eager.frame_placement(m, q, f), pd.oMf[fid].homogeneous, what=f"{where} {f} placement")
            for ref, pref in oracle.REFERENCE.items():
                J = pin.getFrameJacobian(pm, pd, fid, pref)
                assert_close(wbc.eager.frame_jacobian(m, q, f, ref), J, what=f"{where} {f} J {ref.name}")
                drift = pin.getFrameClassicalAcceleration(pm, pd, fid, pref).vector
                assert_close(wbc.eager.frame_drift(m, q, v, f, ref), drift, what=f"{where} {f} drift {ref.name}")
        M = wbc.eager.crba(m, q)
        assert_close(M, oracle.symmetrized(pin.crba(pm, pd, q)), what=f"{where} M")
        assert_close(wbc.eager.nonlinear_effects(m, q, v), pin.nonLinearEffects(pm, pd, q, v), what=f"{where} h")
        fext = {f: 20.0 * rng.normal(size=6) for f in frames}
        pf = oracle.external_forces(pm, fext)
        assert_close(wbc.eager.rnea(m, q, v, a, fext), pin.rnea(pm, pd, q, v, a, pf), what=f"{where} RNEA")
        assert_close(wbc.eager.aba(m, q, v, tau, fext), pin.aba(pm, pd, q, v, tau, pf), what=f"{where} ABA")
        assert_close(wbc.eager.center_of_mass(m, q), pin.centerOfMass(pm, pd, q), what=f"{where} CoM")
        assert_close(wbc.eager.centroidal_map(m, q), pin.computeCentroidalMap(pm, pd, q), what=f"{where} A_g")
        pin.computeCentroidalMomentumTimeVariation(pm, pd, q, v, 0 * v)
        assert_close(wbc.eager.centroidal_drift(m, q, v), pd.dhg.vector, what=f"{where} A_g drift")
        constraints = _contacts(spec)
        J = oracle.constraint_jacobian(pm, q, constraints)
        Minv = oracle.minverse(pm, q)
        B = wbc.eager.inertia_weighted_input_matrix(m, q, constraints)
        assert_close(B, Minv @ np.hstack([m.actuation_matrix(), J.T]), what=f"{where} B̂ (IIM)")
        assert_close(wbc.eager.delassus(m, q, constraints), J @ Minv @ J.T, what=f"{where} Delassus (PV-OSIMr)")


@pytest.mark.parametrize("name", NEW)
def test_default_posture_stands(name):
    """Feet on the ground (sole frames level, point feet with their spheres touching), the CoM over
    the support polygon; arms and TIAGo: a posture inside the joint limits."""
    spec = robots.load(name)
    m, q0 = spec.model, spec.q0
    inside = (q0 >= m.lower_position_limit - 1e-9) & (q0 <= m.upper_position_limit + 1e-9)
    assert inside.all(), [m.joints[k].name for k in range(1, m.njoints) if not inside[m.joints[k].idx_q]]
    if not spec.feet:
        return
    feet = np.array([wbc.eager.frame_placement(m, q0, f) for f in spec.feet])
    height = spec.foot_radius or 0.0
    assert np.allclose(feet[:, 2, 3], height, atol=2e-3), feet[:, 2, 3]
    if spec.sole is not None:
        assert np.allclose(feet[:, 2, 2], 1.0, atol=1e-3), "soles are level"
        points = np.vstack([(T[:3, :3] @ spec.sole.corners().T).T + T[:3, 3] for T in feet])
    else:
        points = feet[:, :3, 3]
    com = wbc.eager.center_of_mass(m, q0)
    lo, hi = points[:, :2].min(0), points[:, :2].max(0)
    margin = 0.25 * (hi - lo)
    assert np.all(com[:2] > lo + margin) and np.all(com[:2] < hi - margin), (com, lo, hi)


def _standing_controller(spec):
    m = spec.model
    if spec.foot_radius is not None:
        contacts = [wbc.PointContact(f, mu=0.8) for f in spec.feet]
    else:
        contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=0.8) for f in spec.feet]
    com = tasks.CoMTask(weight=10.0, kp=100.0)
    base = tasks.OrientationTask(m.joints[1].link, weight=1.0, kp=100.0)
    posture = tasks.PostureTask(m, weight=1e-2, kp=30.0)
    com.set_target_from_configuration(m, spec.q0)
    base.set_target_from_configuration(m, spec.q0)
    posture.set_target(spec.q0)
    return wbc.WholeBodyController(m, [com, base, posture], contacts)


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=() if n == "solo12" else pytest.mark.slow) for n in NEW if n != "tiago"]
)
def test_a_controller_holds_the_default_posture(name):
    """One step at rest: OPTIMAL, the contact forces carry the weight and the accelerations vanish
    (the posture is an equilibrium the controller can hold). Compiles a kernel per robot (slow but
    for Solo12)."""
    spec = robots.load(name)
    controller = _standing_controller(spec)
    cmd = controller.step(spec.q0, np.zeros(spec.model.nv))
    assert cmd.status is wbc.StepStatus.OPTIMAL, (cmd.status, cmd.failure)
    fz = sum(float(f[2]) for f in cmd.forces.values())  # point forces (3,) or sole wrenches [f; n] (6,)
    weight = spec.model.total_mass * 9.81
    assert fz == pytest.approx(weight, rel=1e-3)
    assert np.abs(cmd.qdd).max() < 1e-2


def test_one_registry_for_every_robot():
    """One catalog, one record: the URDF robots and the robots with transmissions are loaded by name
    into a RobotSpec (a tree's model, or a ClusterModel whose q0 is a spanning configuration)."""
    tree, clustered = robots.names(robots.RobotKind.TREE), robots.names(robots.RobotKind.CLUSTERED)
    assert robots.names() == (*tree, *clustered) and not set(tree) & set(clustered)
    assert {"talos", "jvrc1"} <= set(tree) and {"tello", "jvrc1_rotors", "four_bar"} <= set(clustered)
    tello = robots.load("tello")
    assert isinstance(tello, robots.RobotSpec) and isinstance(tello.model, wbc.ClusterModel)
    assert tello.urdf is None and tello.q0.shape == (tello.model.tree.nq,) and tello.feet and tello.contacts
    assert robots.load("four_bar", floating_base=True).model.floating_base
    with pytest.raises(wbc.ModelError, match="one base only"):
        robots.load("tello", floating_base=False)
    with pytest.raises(wbc.ModelError, match=r"no robot 'atlas'.*tello"):
        robots.load("atlas")
