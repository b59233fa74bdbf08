"""The baselines: projected (``Gᵀ H G``) and Lagrange (KKT) methods equal the cluster algorithms;
the approximate model is the independent tree with armature, checked against Pinocchio's own
armature on the same tree (CRBA, RNEA and ABA of ``pinocchio.Model.armature``)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import casadi as ca
import numpy as np
import pinocchio as pin
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.cluster_cases import case, evaluate, states
from tests.helpers import TOL_PIN, assert_close
from wbc.algorithms.clusters import baselines as bl
from wbc.codegen import cluster_functions as ck

NAMES = ["geared_chain", "belt_chain", "mini_cheetah", "tello", "mit_humanoid", "g1_parallel_ankle"]


@pytest.mark.parametrize("name", [*NAMES, "four_bar"])
def test_projected_and_lagrange_equal_the_cluster_algorithms(name):
    cm = case(name).model
    f = {m: ck.c_aba_function(cm, m) for m in ("cluster", "projected", "lagrange")}
    r = {m: ck.c_rnea_function(cm, m) for m in ("cluster", "projected")}
    cons = [wbc.PointConstraint(fr, o) for fr, o in case(name).robot.contacts]
    d = {m: ck.c_efpa_function(cm, cons, m) for m in ("cluster", "projected")}
    for y, v, a, tau in states(cm, 5):
        (ref,) = evaluate(f["cluster"], y, v, tau)
        for m in ("projected", "lagrange"):
            assert_close(evaluate(f[m], y, v, tau)[0], ref, TOL_PIN, f"{name} {m} ABA")
        assert_close(evaluate(r["projected"], y, v, a)[0], evaluate(r["cluster"], y, v, a)[0], TOL_PIN, "RNEA")
        assert_close(evaluate(d["projected"], y)[0], evaluate(d["cluster"], y)[0], TOL_PIN, "EFPA")


@pytest.mark.parametrize("name", NAMES)
def test_approximate_model_against_pinocchio_armature(name):
    cm = case(name).model
    am = bl.ApproximateModel.build(cm)
    assert am.model.nv == cm.nv
    pm = oracle.build_model(ET.tostring(_urdf_root(am), encoding="unicode"), cm.floating_base, from_text=True)
    pm.armature = np.asarray(am.armature, dtype=float)
    aba, rnea = ck.c_aba_function(cm, "approximate"), ck.c_rnea_function(cm, "approximate")
    inv = np.argsort(am.order)
    for y, v, a, tau in states(cm, 5):
        q = np.array(ca.DM(am.configuration(ca.DM(y)))).ravel()
        vm, am_, tm = v[am.order], a[am.order], tau[am.order]
        (t,) = evaluate(rnea, y, v, a)
        M = oracle.symmetrized(pin.crba(pm, pm.createData(), q))
        h = pin.nonLinearEffects(pm, pm.createData(), q, vm)
        assert_close(t, (M @ am_ + h)[inv], TOL_PIN, f"{name} approximate RNEA")
        (qdd,) = evaluate(aba, y, v, tau)
        assert_close(qdd, pin.aba(pm, pm.createData(), q, vm, tm)[inv], TOL_PIN, f"{name} approximate ABA")


def _urdf_root(am):
    """The approximate model's URDF (the spanning tree without the dependent bodies)."""
    root = ET.fromstring(am.cluster_model.urdf)
    keep = {j.link for j in am.model.joints} | {f.name for f in am.model.frames}
    for joint in list(root.findall("joint")):
        if joint.find("child").get("link") not in keep:
            root.remove(joint)
    for link in list(root.findall("link")):
        if link.get("name") not in keep:
            root.remove(link)
    return root


def test_armature_is_the_reflected_rotor_inertia():
    """Geared chain: armature_j = N_j² I_rotor,j exactly (the rotor's spin inertia about its axis)."""
    cm = case("geared_chain").model
    am = bl.ApproximateModel.build(cm)
    for k, c in enumerate(cm.infos):
        (coupling,) = c.declared.constraints
        ((_, ratio),) = coupling.sources
        rotor = cm.tree.joints[cm.tree.joint_id(coupling.joint)]
        spin = rotor.axis @ cm.tree.inertias[cm.tree.joint_id(coupling.joint)][3:6, 3:6] @ rotor.axis
        assert am.armature[list(am.order).index(k)] == pytest.approx(ratio**2 * spin, rel=1e-14)


def test_approximate_model_errors():
    with pytest.raises(wbc.ModelError, match="hangs from a dependent body"):
        bl.ApproximateModel.build(case("four_bar").model)
    with pytest.raises(wbc.InputError, match="unknown method"):
        ck.c_aba_function(case("four_bar").model, "nope")
