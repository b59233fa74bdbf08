"""Maximal-coordinate forward dynamics (the lecture notes' recursive KKT solve and the dense baseline)
against independent oracles.

* trees (every catalog robot, random trees with every joint type, ball joints): ``q̈`` equals
  Pinocchio's ``aba`` and ``wbc.aba``; the joint wrenches equal Pinocchio's ``data.f`` after its RNEA
  at that ``q̈`` (compared in the world frame, so that joint-frame conventions cannot hide anything);
* loops: ``q̈`` equals C-ABA and Pinocchio 4's ``constraintDynamics``; the closure wrenches, applied
  to Pinocchio's spanning tree as external forces, make its RNEA give back the applied torques at
  every joint a coupling does not load, and its ``data.f`` equal the joint wrenches;
* structure: the recursion's operation count grows linearly (the dense solve's cubically); the
  compiled kernel and ``wbc.maximal_forward_dynamics`` (compiled on first use) equal the eager
  evaluation (:mod:`wbc.algorithms.maximal.eager`, which the oracle tests use: no compiling); bad
  input gets clear errors.

Every comparison: ``|a − b| <= 1e-9 · max(1, max|b|)``.
"""

from __future__ import annotations

import casadi as ca
import numpy as np
import pinocchio as pin
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.cluster_cases import FAST, PURE_LOOP_ROBOTS, SLOW, case, span_tau, states
from tests.helpers import (
    ROBOT_NAMES,
    TOL_PIN,
    TREE_CASES,
    assert_close,
    ball_tree_params,
    compile_in,
    random_state,
    robot_case,
    tree_case,
)
from wbc.algorithms import clusters as C
from wbc.algorithms.kinematics import TreeKinematics
from wbc.algorithms.maximal import eager
from wbc.codegen import calls, maximal_functions
from wbc.model.clusters import LoopClosure
from wbc.robots import synthetic
from wbc.spatial.algebra import act_force

METHODS = list(wbc.MaximalMethod)  # RECURSIVE (loops where they close), SCHUR (loops at the end), DENSE
TREE_METHODS = [wbc.MaximalMethod.RECURSIVE, wbc.MaximalMethod.DENSE]  # SCHUR = RECURSIVE on a tree


def _world_wrenches(model: wbc.Model, q: np.ndarray, wrenches: np.ndarray) -> np.ndarray:
    """Joint wrenches (njoints − 1, 6), each moved from its joint frame to the world frame."""
    kin = TreeKinematics(model, ca.DM(q))
    return np.array([np.array(act_force(kin.oMi[i], ca.DM(wrenches[i - 1]))).ravel() for i in range(1, model.njoints)])


def _pinocchio_world_forces(pm: pin.Model, pd: pin.Data, q: np.ndarray) -> np.ndarray:
    """Pinocchio's joint forces ``data.f`` (after its RNEA) moved to the world frame."""
    placements = pm.createData()
    pin.forwardKinematics(pm, placements, q)
    return np.array([placements.oMi[i].act(pd.f[i]).vector for i in range(1, pm.njoints)])


def _check_tree(c, n_states: int, seed: int, methods=TREE_METHODS, fext: bool = False) -> None:
    m, pm = c.model, c.pin_model
    pd = pm.createData()
    rng = np.random.default_rng(seed)
    for k in range(n_states):
        q, v, _, tau = random_state(m, rng)
        forces = None
        if fext:
            names = [str(x) for x in rng.choice([f.name for f in m.frames[1:]], size=3, replace=False)]
            forces = {name: 10.0 * rng.normal(size=6) for name in names}
        pf = oracle.external_forces(pm, forces) if forces else None
        expected = pin.aba(pm, pd, q, v, tau, pf) if pf is not None else pin.aba(pm, pd, q, v, tau)
        where = f"{c.name} state {k}"
        assert_close(wbc.aba(m, q, v, tau, forces), expected, TOL_PIN, f"{where}: wbc.aba vs Pinocchio (anchor)")
        for method in methods:
            r = eager.maximal_forward_dynamics(m, q, v, tau, forces, reactions=True, method=method)
            assert_close(r.qdd, expected, TOL_PIN, f"{where} {method.value}: q̈ vs Pinocchio aba")
            if pf is not None:
                pin.rnea(pm, pd, q, v, r.qdd, pf)
            else:
                pin.rnea(pm, pd, q, v, r.qdd)
            assert_close(
                _world_wrenches(m, q, r.joint_wrenches),
                _pinocchio_world_forces(pm, pd, q),
                TOL_PIN,
                f"{where} {method.value}: joint wrenches vs Pinocchio RNEA data.f",
            )
            assert r.closure_wrenches.shape == (0, 6)


@pytest.mark.parametrize("name", ROBOT_NAMES)
def test_catalog_robots_against_pinocchio(name):
    """Every catalog robot: q̈ = Pinocchio's aba = wbc.aba and the joint wrenches = Pinocchio's data.f,
    by the recursion at 3 random states and the dense solve at one."""
    c = robot_case(name)
    if wbc.checks.massless_joints(c.model):  # M is singular: both must refuse, clearly
        with pytest.raises(wbc.ModelError, match="move"):
            eager.maximal_forward_dynamics(c.model, wbc.neutral(c.model), np.zeros(c.model.nv), np.zeros(c.model.nv))
        return
    _check_tree(c, 3, seed=1, methods=[wbc.MaximalMethod.RECURSIVE])
    _check_tree(c, 1, seed=2, methods=[wbc.MaximalMethod.DENSE])


@pytest.mark.parametrize("floating_base", [True, False], ids=["floating", "fixed"])
@pytest.mark.parametrize("seed,n", TREE_CASES)
def test_random_trees_against_pinocchio(seed, n, floating_base):
    """Random trees with every joint kind, with external forces on three random frames (and the
    tree recursion of the Schur variant)."""
    _check_tree(tree_case(seed, n, floating_base), 4, seed=seed, methods=METHODS, fext=True)


@pytest.mark.parametrize("build,seed", ball_tree_params(0))
def test_ball_joint_trees_against_pinocchio(build, seed):
    _check_tree(build(), 3, seed=seed)


def test_bushy_tree_and_point_masses():
    """A tree in which most links hang from earlier ones, and one whose leaves are point masses
    (singular body inertias: the recursion's exact augmentation of those bodies)."""
    text = synthetic.random_tree_urdf(16, np.random.default_rng(7), branching=0.9, name="bushy")
    for floating_base in (False, True):
        m = wbc.load_urdf(text, floating_base)
        pm = oracle.build_model(text, floating_base, from_text=True)
        _check_tree(_Case("bushy", m, pm), 3, seed=5)
    point = wbc.load_urdf(_point_mass_chain(), False)
    pm_point = oracle.build_model(_point_mass_chain(), False, from_text=True)
    _check_tree(_Case("point_masses", point, pm_point), 3, seed=6, methods=METHODS)


class _Case:
    def __init__(self, name, model, pin_model):
        self.name, self.model, self.pin_model = name, model, pin_model


def _point_mass_chain() -> str:
    """Three links; the middle one massless, the last a point mass off its axis."""
    link = '<link name="{n}"><inertial><origin xyz="{c}"/><mass value="{m}"/><inertia ixx="{i}" ixy="0" ixz="0" iyy="{i}" iyz="0" izz="{i}"/></inertial></link>'  # noqa: E501
    joint = '<joint name="j{k}" type="revolute"><parent link="{p}"/><child link="{c}"/><origin xyz="{o}"/><axis xyz="{a}"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>'  # noqa: E501
    parts = ['<robot name="point_masses"><link name="base"/>']
    parts.append(link.format(n="l1", c="0.1 0 0", m=1.0, i=0.01))
    parts.append('<link name="l2"/>')
    parts.append(link.format(n="l3", c="0.2 0.1 0", m=0.5, i=0.0))
    parts.append(joint.format(k=1, p="base", c="l1", o="0 0 0", a="0 0 1"))
    parts.append(joint.format(k=2, p="l1", c="l2", o="0.3 0 0", a="0 1 0"))
    parts.append(joint.format(k=3, p="l2", c="l3", o="0 0 0", a="1 0 0"))
    parts.append("</robot>")
    return "".join(parts)


# ------------------------------------------------------------------------------------- loops
def _closure_forces(pm: pin.Model, cm: wbc.ClusterModel, y: np.ndarray, closure_wrenches: np.ndarray):
    """The closure wrenches as Pinocchio external forces on the spanning tree's joints: frame ``b``'s
    body gets the wrench, frame ``a``'s the opposite one at the same point."""
    pd = pm.createData()
    pin.forwardKinematics(pm, pd, y)
    pin.updateFramePlacements(pm, pd)
    fext = pin.StdVec_Force()
    for _ in range(pm.njoints):
        fext.append(pin.Force.Zero())
    closures = [c for cl in cm.clusters for c in cl.constraints if isinstance(c, LoopClosure)]
    for closure, w in zip(closures, closure_wrenches):
        fa, fb = oracle.frame_id(pm, closure.frame_a), oracle.frame_id(pm, closure.frame_b)
        ja, jb = pm.frames[fa].parentJoint, pm.frames[fb].parentJoint
        wb = pin.Force(w)
        fext[jb] += pm.frames[fb].placement.act(wb)
        fext[ja] -= (pd.oMi[ja].inverse() * pd.oMf[fb]).act(wb)
    return fext


def _check_loops(name: str, n_states: int, methods=METHODS) -> None:
    c = case(name)
    cm, pm = c.model, c.pm
    pd = pm.createData()
    coupled = set()
    for info in cm.infos:
        if info.declared is not None and any(not isinstance(x, LoopClosure) for x in info.declared.constraints):
            coupled.update(cm.spanning_v_indices(cm.infos.index(info)))
    free = np.setdiff1d(np.arange(cm.tree.nv), sorted(coupled))
    for k, (y, v, _, tau) in enumerate(states(cm, n_states, seed=3)):
        expected = np.array(C.aba(cm, ca.DM(y), ca.DM(v), ca.DM(tau))).ravel()
        yd = cm.spanning_velocity(y, v)
        for method in methods:
            where = f"{name} state {k} {method.value}"
            r = eager.maximal_forward_dynamics(cm, y, v, tau, reactions=True, method=method)
            assert_close(r.qdd, expected, TOL_PIN, f"{where}: q̈ vs C-ABA")
            ydd = oracle.kkt_forward_dynamics(pm, cm, y, yd, span_tau(cm, tau))  # the spanning ÿ, Pinocchio's KKT
            assert_close(r.qdd, ydd[cm.independent_v_indices], TOL_PIN, f"{where}: q̈ vs Pinocchio's KKT")
            fext = _closure_forces(pm, cm, y, r.closure_wrenches)
            tau_pin = pin.rnea(pm, pd, y, yd, ydd, fext)
            assert_close(
                tau_pin[free], span_tau(cm, tau)[free], TOL_PIN, f"{where}: Pinocchio RNEA with the closure wrenches"
            )
            assert_close(
                _world_wrenches(cm.tree, y, r.joint_wrenches),
                _pinocchio_world_forces(pm, pd, y),
                TOL_PIN,
                f"{where}: joint wrenches vs Pinocchio RNEA data.f",
            )


@pytest.mark.parametrize("name", FAST)
def test_loop_robots_against_c_aba_and_pinocchio(name):
    """Loops and couplings: q̈ = C-ABA = Pinocchio's KKT; closure wrenches and joint wrenches = what
    Pinocchio's RNEA needs and gives at that acceleration."""
    _check_loops(name, 3)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in SLOW if "+" not in n])
def test_large_loop_robots_against_c_aba_and_pinocchio(name):
    _check_loops(name, 3)


def test_g1_parallel_ankle_against_c_aba_and_pinocchio():
    """The loop robot of the issue, in the default run: recursion at 2 states, the dense solve at one."""
    _check_loops("g1_parallel_ankle", 2, [wbc.MaximalMethod.RECURSIVE])
    _check_loops("g1_parallel_ankle", 1, [wbc.MaximalMethod.DENSE])


@pytest.mark.parametrize("build", PURE_LOOP_ROBOTS)
def test_loops_against_constraint_dynamics(build):
    """Pinocchio 4's constraintDynamics with the loop closures as its constraint models."""
    cm = build().model
    pm = oracle.cluster_model(cm)
    models = oracle.loop_constraint_models(pm, cm)
    for y, v, _, tau in states(cm, 4, seed=5):
        yd = cm.spanning_velocity(y, v)
        prox = pin.ProximalSettings(1e-14, 1e-10, 500)  # a planar loop's void row needs μ > 0
        ydd = oracle.constraint_dynamics_call(pm, models, y, yd, span_tau(cm, tau), prox)()
        for method in METHODS:
            qdd = eager.maximal_forward_dynamics(cm, y, v, tau, method=method)
            assert_close(qdd, ydd[cm.independent_v_indices], TOL_PIN, f"{cm.name} {method.value} vs constraintDynamics")


def _grounded_four_bar() -> wbc.ClusterModel:
    """A planar four-bar whose loop runs through the ground: crank, coupler and rocker in a chain from
    the base, the rocker's tip pinned to a point of the base (2 rows: the plane's)."""
    link = (
        '<link name="{n}"><inertial><origin xyz="{c}"/><mass value="{m}"/><inertia ixx="0.001" ixy="0" '
        'ixz="0" iyy="0.002" iyz="0" izz="0.001"/></inertial></link>'
    )
    joint = (
        '<joint name="{n}" type="revolute"><parent link="{p}"/><child link="{c}"/><origin xyz="{o}"/>'
        '<axis xyz="0 1 0"/><limit lower="-0.6" upper="0.6" effort="1" velocity="1"/></joint>'
    )
    frame = (
        '<link name="{n}"/><joint name="{n}_fixed" type="fixed"><parent link="{p}"/><child link="{n}"/>'
        '<origin xyz="{o}"/></joint>'
    )
    text = "".join(
        [
            '<robot name="grounded_four_bar"><link name="base"/>',
            link.format(n="crank", c="0.05 0 0", m=0.5),
            link.format(n="coupler", c="0.12 0 0", m=0.3),
            link.format(n="rocker", c="0 0 -0.05", m=0.4),
            joint.format(n="crank_joint", p="base", c="crank", o="0 0 0"),
            joint.format(n="coupler_joint", p="crank", c="coupler", o="0.1 0 0"),
            joint.format(n="rocker_joint", p="coupler", c="rocker", o="0.25 0 0"),
            frame.format(n="rocker_tip", p="rocker", o="0 0 -0.1"),
            frame.format(n="ground_pin", p="base", o="0.35 0 -0.1"),
            "</robot>",
        ]
    )
    closure = LoopClosure("rocker_tip", "ground_pin", wbc.ClosureKind.POINT, (0, 2))
    cluster = wbc.Cluster("bar", ("crank_joint", "coupler_joint", "rocker_joint"), ("crank_joint",), (closure,))
    return wbc.ClusterModel(wbc.load_urdf(text, False), (cluster,), urdf=text)


def test_a_loop_through_the_ground():
    """A loop closed on a frame of the ground: the recursion closes it at the ground, not at the body
    it touches (where nothing below would hold its rows); q̈ = C-ABA = Pinocchio's KKT, and the closure
    wrench is what Pinocchio's RNEA needs."""
    cm = _grounded_four_bar()
    pm = oracle.cluster_model(cm)
    pd = pm.createData()
    for y, v, _, tau in states(cm, 3, seed=11):
        yd = cm.spanning_velocity(y, v)
        ydd = oracle.kkt_forward_dynamics(pm, cm, y, yd, span_tau(cm, tau))
        expected = np.array(C.aba(cm, ca.DM(y), ca.DM(v), ca.DM(tau))).ravel()
        for method in METHODS:
            r = eager.maximal_forward_dynamics(cm, y, v, tau, reactions=True, method=method)
            assert_close(r.qdd, expected, TOL_PIN, f"{method.value}: q̈ vs C-ABA")
            assert_close(r.qdd, ydd[cm.independent_v_indices], TOL_PIN, f"{method.value}: q̈ vs Pinocchio's KKT")
            tau_pin = pin.rnea(pm, pd, y, yd, ydd, _closure_forces(pm, cm, y, r.closure_wrenches))
            assert_close(tau_pin, span_tau(cm, tau), TOL_PIN, f"{method.value}: closure wrench through RNEA")


def test_ball_joints_in_a_cluster_model():
    """Ball joints next to loops (single-joint clusters of a cluster model)."""
    from tests.helpers import BALL_CLUSTER_CASES, ball_cluster_model

    for name, balls in BALL_CLUSTER_CASES.items():
        cm = ball_cluster_model(name, balls)
        for y, v, _, tau in states(cm, 2, seed=8):
            expected = np.array(C.aba(cm, ca.DM(y), ca.DM(v), ca.DM(tau))).ravel()
            assert_close(eager.maximal_forward_dynamics(cm, y, v, tau), expected, TOL_PIN, f"{cm.name} vs C-ABA")


# ------------------------------------------------------------------------------------- structure
def test_recursion_is_linear_and_dense_cubic():
    """Operation counts (deterministic): the recursion's per-link cost is constant along chains of
    16 to 64 links (doubling the chain at most 2.1x the operations); each rod of ``rod_chain`` (a
    local loop, 3 rows) costs the recursion the same (4 rods cost 2x 2 rods, within 10 %), where one
    Schur complement at the end costs more per rod the more rods there are (over 1.3x); the dense solve grows
    faster than the square of the KKT size (doubling 3 -> 6 links costs more than 5x; a cube is 8x)."""
    ops = {n: maximal_functions.maximal_function(synthetic.chain(n)).n_instructions() for n in (16, 32, 64)}
    assert ops[32] / ops[16] < 2.1 and ops[64] / ops[32] < 2.1, ops
    for method, linear in ((wbc.MaximalMethod.RECURSIVE, True), (wbc.MaximalMethod.SCHUR, False)):
        rods = {
            k: maximal_functions.maximal_function(wbc.robots.clustered.rod_chain(12, k).model, method).n_instructions()
            for k in (0, 2, 6)
        }
        growth = (rods[6] - rods[0]) / (3 * (rods[2] - rods[0]))
        assert (growth < 1.15) if linear else (growth > 1.5), (method, rods)
    dense = {
        n: maximal_functions.maximal_function(synthetic.chain(n), wbc.MaximalMethod.DENSE).n_instructions()
        for n in (3, 6)
    }
    assert dense[6] / dense[3] > 5.0, dense


def test_compiled_kernel_equals_eager(tmp_path):
    """The compiled kernel (reactions included) gives the eager API's numbers, on a loop robot."""
    cm = case("four_bar").model
    kernel = compile_in(maximal_functions.maximal_function(cm, reactions=True), tmp_path)
    for y, v, _, tau in states(cm, 3, seed=9):
        qdd, wrenches, closures = kernel(y, v, tau)
        r = eager.maximal_forward_dynamics(cm, y, v, tau, reactions=True)
        assert_close(qdd, r.qdd, 1e-12, "compiled q̈")
        assert_close(wrenches, r.joint_wrenches, 1e-12, "compiled joint wrenches")
        assert_close(closures, r.closure_wrenches, 1e-12, "compiled closure wrenches")


def test_public_api_is_compiled_and_equals_eager():
    """``wbc.maximal_forward_dynamics``: one compiled kernel per (model, method, reactions, forces),
    the eager numbers to 1e-12 (tree with external forces, a loop robot), the same errors."""
    c = tree_case(1, 6, True)
    m = c.model
    rng = np.random.default_rng(12)
    q, v, _, tau = random_state(m, rng)
    fext = {m.frames[4].name: rng.normal(size=6), m.frames[-1].name: rng.normal(size=6)}
    for method in (wbc.MaximalMethod.RECURSIVE, wbc.MaximalMethod.SCHUR):
        for forces in (None, fext):
            r = wbc.maximal_forward_dynamics(m, q, v, tau, forces, reactions=True, method=method)
            e = eager.maximal_forward_dynamics(m, q, v, tau, forces, reactions=True, method=method)
            for got, want, what in zip(r, e, ("q̈", "joint wrenches", "closure wrenches")):
                assert_close(got, want, 1e-12, f"compiled {method.value} {what}")
    call = maximal_functions.compiled_call(m, wbc.MaximalMethod.RECURSIVE, False, False)
    assert calls.kernel_of(call).backend == "c" and calls.compiled_path(call)
    assert maximal_functions.compiled_call(m, wbc.MaximalMethod.RECURSIVE, False, False) is call  # memoized
    cm = case("four_bar").model
    y, v, _, tau = states(cm, 1, seed=13)[0]
    r = wbc.maximal_forward_dynamics(cm, y, v, tau, reactions=True)
    e = eager.maximal_forward_dynamics(cm, y, v, tau, reactions=True)
    assert_close(r.qdd, e.qdd, 1e-12, "four-bar q̈")
    assert_close(r.closure_wrenches, e.closure_wrenches, 1e-12, "four-bar closure wrenches")
    bad_q = q.copy()
    bad_q[0] = np.nan
    with pytest.raises(wbc.InputError, match="q"):
        wbc.maximal_forward_dynamics(m, bad_q, np.zeros(m.nv), np.zeros(m.nv))
    with pytest.raises(wbc.InputError, match="fext"):
        wbc.maximal_forward_dynamics(m, q, np.zeros(m.nv), np.zeros(m.nv), {m.frames[4].name: np.full(6, np.nan)})
    y_open = y.copy()
    y_open[np.setdiff1d(np.arange(cm.tree.nq), cm.independent_q_indices)[0]] += 0.3
    with pytest.raises(wbc.InputError, match="does not close the loops"):
        wbc.maximal_forward_dynamics(cm, y_open, np.zeros(cm.nv), np.zeros(cm.nv))


def test_symbolic_dense_solve_agrees():
    """The traced dense solve (CasADi's symbolic QR, what the dense baseline compiles) agrees with
    the recursion on a small floating tree."""
    c = tree_case(1, 6, True)
    f = maximal_functions.maximal_function(c.model, wbc.MaximalMethod.DENSE)
    rng = np.random.default_rng(4)
    for _ in range(3):
        q, v, _, tau = random_state(c.model, rng)
        assert_close(
            np.array(f(q, v, tau)).ravel(), eager.maximal_forward_dynamics(c.model, q, v, tau), TOL_PIN, "dense"
        )


# ------------------------------------------------------------------------------------- errors
def test_bad_input_gets_clear_errors():
    m = tree_case(1, 6, False).model
    q, v, tau = wbc.neutral(m), np.zeros(m.nv), np.zeros(m.nv)
    with pytest.raises(wbc.InputError, match="method must be one of"):
        eager.maximal_forward_dynamics(m, q, v, tau, method="sparse")
    with pytest.raises(wbc.InputError, match="tau"):
        eager.maximal_forward_dynamics(m, q, v, np.zeros(m.nv + 1))
    with pytest.raises(wbc.InputError, match="model must be"):
        eager.maximal_forward_dynamics("talos", q, v, tau)
    with pytest.raises(wbc.FrameError):
        eager.maximal_forward_dynamics(m, q, v, tau, fext={"nowhere": np.zeros(6)})
    for method in ("recursive", "dense"):  # one wrench without its frame: named, not numpy's truth value
        with pytest.raises(wbc.InputError, match=r"fext must be a mapping .* got ndarray"):
            wbc.maximal_forward_dynamics(m, q, v, tau, np.zeros(6), method=method)
    cm = case("four_bar").model
    y = cm.neutral()
    y_open = y.copy()
    y_open[cm.tree.joints[cm.independent_joints[-1]].idx_q] += 0.3  # a dependent joint moved
    bad = np.setdiff1d(np.arange(cm.tree.nq), cm.independent_q_indices)
    y_open = y.copy()
    y_open[bad[0]] += 0.3
    with pytest.raises(wbc.InputError, match="does not close the loops"):
        eager.maximal_forward_dynamics(cm, y_open, np.zeros(cm.nv), np.zeros(cm.nv))
    armed = case("four_bar+armature").model
    with pytest.raises(wbc.ModelError, match="armature"):
        eager.maximal_forward_dynamics(armed, armed.neutral(), np.zeros(armed.nv), np.zeros(armed.nv))


def test_fill_in_of_the_kkt_factorization():
    """Trees factor without fill in the notes' order (leaves to root, body then joint); loop rows
    fill only their own rows and columns, a constant amount per rod when each loop is eliminated
    at its common ancestor, more and more when all come last (their fill reaches the root); the
    naive order fills even a chain. The block sizes match the assembled KKT."""
    from wbc.algorithms.maximal import maximal_system
    from wbc.algorithms.maximal.dense import kkt_offsets
    from wbc.algorithms.maximal.structure import Ordering, fill_in, patterns

    for model in (synthetic.chain(10), tree_case(2, 12, True).model):
        for order in (Ordering.RECURSIVE, Ordering.SCHUR):
            f = fill_in(model, order)
            assert f.fill == 0 and f.loop_fill == 0, f
        assert fill_in(model, Ordering.NATURAL).fill > 0
    fills, schur = [], []
    for rods in (1, 2, 4):
        cm = wbc.robots.clustered.rod_chain(12, rods).model
        f = fill_in(cm, Ordering.RECURSIVE)
        assert f.fill == f.loop_fill > 0, f
        fills.append(f.fill)
        schur.append(fill_in(cm, Ordering.SCHUR).fill)
        y = cm.neutral()
        system = maximal_system(cm, ca.DM(y), ca.DM.zeros(cm.nv, 1), ca.DM.zeros(cm.nv, 1))
        assert kkt_offsets(system)[3] == f.size == 6 * (cm.tree.njoints - 1) + 5 * (cm.tree.njoints - 1) + 3 * rods
        A, L, _ = patterns(cm, Ordering.RECURSIVE)
        assert not np.any(A & ~L), "the factor keeps every nonzero of the matrix"
    assert fills[0] < fills[1] < fills[2]
    assert fills[2] - fills[1] < 1.1 * 2 * (fills[1] - fills[0]), fills  # a rod's fill stays inside its loop
    assert schur[2] - schur[1] > 1.5 * 2 * (schur[1] - schur[0]), schur  # loops last: it reaches the root
