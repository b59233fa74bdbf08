"""C-RNEA and C-ABA against independent oracles.

* Pinocchio's spanning-tree dynamics (CRBA, RNEA, frame Jacobians, classical accelerations) with the
  declared loop constraints rebuilt on Pinocchio's side, through the KKT system (forward) and the
  split of the spanning forces into loop forces and independent forces (inverse);
* Pinocchio's mimic joints where a gear is exactly a mimic (rotor = N · link);
* Pinocchio 4's ``constraintDynamics`` with the loop closures as constraint models;
* internal: C-ABA inverts C-RNEA; a model without clusters gives the tree algorithms' results.

Every comparison: ``|a − b| <= 1e-9 · max(1, max|b|)`` at 20 random consistent states per robot.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import casadi as ca
import numpy as np
import pinocchio as pin
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.cluster_cases import FAST, PURE_LOOP_ROBOTS, SLOW, case, evaluate, span_tau, states
from tests.helpers import TOL_PIN, assert_close
from wbc.algorithms import clusters as C
from wbc.algorithms import dynamics as D
from wbc.codegen import cluster_functions as ck
from wbc.robots import synthetic

ALL = [*FAST, *SLOW]  # all fast enough (traced once, evaluated in the VM)


@pytest.mark.parametrize("name", ALL)
def test_c_rnea_and_c_aba_against_pinocchio_kkt(name):
    c = case(name)
    cm = c.model
    rnea, aba = ck.c_rnea_function(cm), ck.c_aba_function(cm)
    for y, v, a, tau in states(cm):
        yd = cm.spanning_velocity(y, v)
        (tau_w,) = evaluate(rnea, y, v, a)
        assert_close(tau_w, oracle.kkt_inverse_dynamics(c.pm, cm, y, yd, a), TOL_PIN, f"{name} C-RNEA")
        (qdd,) = evaluate(aba, y, v, tau)
        ydd = oracle.kkt_forward_dynamics(c.pm, cm, y, yd, span_tau(cm, tau))
        assert_close(qdd, ydd[cm.independent_v_indices], TOL_PIN, f"{name} C-ABA")
        (back,) = evaluate(rnea, y, v, qdd)
        assert_close(back, tau, TOL_PIN, f"{name} C-RNEA(C-ABA)")


def _mimic_urdf(cm) -> str:
    """The spanning tree's URDF with each geared rotor written as a Pinocchio mimic joint."""
    root = ET.fromstring(cm.urdf)
    joints = {j.get("name"): j for j in root.findall("joint")}
    for cl in cm.clusters:
        for coupling in cl.constraints:
            (src, ratio), *rest = coupling.sources
            assert not rest
            ET.SubElement(joints[coupling.joint], "mimic", {"joint": src, "multiplier": repr(ratio)})
    return ET.tostring(root, encoding="unicode")


@pytest.mark.parametrize("name", ["geared_chain", "mini_cheetah", "jvrc1_rotors"])
def test_geared_robots_against_pinocchio_mimic_joints(name):
    """A rotor turning N times its link is exactly a Pinocchio mimic joint: RNEA and CRBA of the
    mimic model are the independent-coordinate dynamics (Pinocchio's ABA rejects mimic joints)."""
    cm = case(name).model
    text = _mimic_urdf(cm)
    if cm.floating_base:
        pm = pin.buildModelFromXML(text, pin.JointModelFreeFlyer(), mimic=True)
    else:
        pm = pin.buildModelFromXML(text, mimic=True)
    assert pm.nv == cm.nv
    # Pinocchio's mimic model keeps the non-mimic joints in tree order, as the independent layout
    order = [cm.joint_names.index(pm.names[i]) for i in range(1, pm.njoints) if pm.names[i] in cm.joint_names]
    if cm.floating_base:
        order = [0, 1, 2, 3, 4, 5] + [6 + k - 1 for k in order[1:]]
    qorder = [0, 1, 2, 3, 4, 5, 6] + [7 + k - 6 for k in order[6:]] if cm.floating_base else order
    rnea, aba = ck.c_rnea_function(cm), ck.c_aba_function(cm)
    for y, v, a, tau in states(cm):
        q = cm.independent_configuration(y)
        (tau_w,) = evaluate(rnea, y, v, a)
        tau_p = pin.rnea(pm, pm.createData(), q[qorder], v[order], a[order])
        assert_close(tau_w[order], tau_p, TOL_PIN, f"{name} C-RNEA vs mimic RNEA")
        M = oracle.symmetrized(pin.crba(pm, pm.createData(), q[qorder]))
        h = pin.nonLinearEffects(pm, pm.createData(), q[qorder], v[order])
        (qdd,) = evaluate(aba, y, v, tau)
        assert_close(qdd[order], np.linalg.solve(M, tau[order] - h), TOL_PIN, f"{name} C-ABA vs mimic")


@pytest.mark.parametrize("build", PURE_LOOP_ROBOTS)
def test_c_aba_against_constraint_dynamics(build):
    """Pinocchio 4's constraintDynamics with the loop closures as constraint models (pure loops:
    couplings are no Pinocchio constraint models, the KKT test covers them)."""
    cm = build().model
    pm = oracle.cluster_model(cm)
    models = oracle.loop_constraint_models(pm, cm)
    aba = ck.c_aba_function(cm)
    for y, v, _, tau in states(cm):
        yd = cm.spanning_velocity(y, v)
        (qdd,) = evaluate(aba, y, v, tau)
        # a planar loop has a void row: the proximal iterations (μ > 0) of Pinocchio handle it
        prox = pin.ProximalSettings(1e-14, 1e-10, 500)
        ydd = oracle.constraint_dynamics_call(pm, models, y, yd, span_tau(cm, tau), prox)()
        assert_close(qdd, ydd[cm.independent_v_indices], TOL_PIN, f"{cm.name} C-ABA vs constraintDynamics")


@pytest.mark.parametrize("floating_base", [False, True])
def test_without_clusters_the_tree_algorithms(floating_base):
    text = synthetic.random_tree_urdf(10, np.random.default_rng(3))
    tree = wbc.load_urdf(text, floating_base)
    cm = wbc.ClusterModel(tree)
    assert cm.nv == tree.nv and cm.nq == tree.nq
    rng = np.random.default_rng(4)
    for _ in range(5):
        q = wbc.random_configuration(tree, rng)
        v, a, tau = rng.normal(size=(3, tree.nv))
        args = [ca.DM(x) for x in (q, v, tau)]
        assert_close(np.array(C.aba(cm, *args)).ravel(), np.array(D.aba(tree, *args)).ravel(), 1e-12, "C-ABA = ABA")
        args = [ca.DM(x) for x in (q, v, a)]
        assert_close(np.array(C.rnea(cm, *args)).ravel(), np.array(D.rnea(tree, *args)).ravel(), 1e-12, "C-RNEA")


def test_eager_equals_traced():
    cm = case("tello").model
    y, v, _, tau = states(cm, 1)[0]
    eager = np.array(C.aba(cm, ca.DM(y), ca.DM(v), ca.DM(tau))).ravel()
    (traced,) = evaluate(ck.c_aba_function(cm), y, v, tau)
    assert_close(eager, traced, 1e-12, "eager vs traced C-ABA")


def test_compiled_c_aba(kernel_dir):
    cm = case("belt_chain").model
    kernel = wbc.codegen.compile_function(ck.c_aba_function(cm), directory=kernel_dir)
    for y, v, _, tau in states(cm, 3):
        (qdd,) = kernel(y, v, tau)
        (ref,) = evaluate(ck.c_aba_function(cm), y, v, tau)
        assert_close(qdd, ref, 1e-12, "compiled C-ABA")
