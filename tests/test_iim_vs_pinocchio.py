"""The inertia-weighted input matrix ``B̂ = M⁻¹ [Sᵀ, Jᵀ]`` by every method (IIM, eUFM, dense)
against Pinocchio (``computeMinverse`` and Pinocchio's constraint Jacobians) and against each
other, to 1e-9 at random states, on catalog robots and random trees; its internal structure (the
constraint rows of ``J B̂`` are the Delassus matrix, the torque block is symmetric); the free
acceleration against ABA; the compiled kernels against the eager API to 1e-12; and the errors of
bad constraint sets.

The eager API runs on CasADi DM numbers: the dense method costs 1-2 s per call on Talos (7 on G1
with hands) and the eUFM (m + 1 ABAs) 5 s, so they run on the first states or cases only."""

from __future__ import annotations

import functools

import numpy as np
import pinocchio as pin
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.constraint_cases import catalog_constraints, constrained_states, constraint_tree_params, random_constraints
from tests.helpers import (
    TOL_KERNEL,
    Case,
    assert_close,
    assert_kernel_matches,
    ball_tree_params,
    compile_in,
    robot_case,
    tree_case,
)
from wbc.codegen import algorithm_functions as traced

RF = wbc.ReferenceFrame
N_STATES = 5

#: (robot, constraint set, states on which the dense method runs too, states on which the eUFM runs)
CATALOG = [
    ("talos", "feet", 2, 1),
    ("talos", "corners", 2, 0),
    ("talos", "feet+hands", 2, 0),
    ("g1_with_hands", "feet+fingertips", 1, 0),
    ("allegro", "fingertips", N_STATES, 2),
    ("panda", "hand+fingers", N_STATES, 2),
]


def _with_actuation(case: Case, joints) -> Case:
    """The case with only ``joints`` actuated (Pinocchio's model is the same)."""
    return Case(
        f"{case.name}-{len(joints)}-actuated", case.model.with_actuation(joints), case.pin_model, case.spec, case.urdf
    )


def _check_input_matrix(
    case: Case, constraints_at, seed: int, dense_states: int = N_STATES, eufm_states: int = 0, n_states: int = N_STATES
) -> None:
    """At ``n_states`` random configurations (``constraints_at(rng)`` giving each state's set):

    * the IIM (and, on the first states, the dense method and the eUFM) equals Pinocchio's
      ``M⁻¹ [Sᵀ, Jᵀ]``, and the IIM's result;
    * the constraint rows of ``J B̂`` are PV-OSIMr's Delassus matrix, and ``J B̂_τ = (S B̂_λ)ᵀ``;
    * the torque block ``S B̂_τ = S M⁻¹ Sᵀ`` is symmetric.
    """
    m = case.model
    S = m.actuation_matrix()
    act = m.actuated_v_indices
    n_act = m.n_actuated
    for i, where, constraints, q, J in constrained_states(case, constraints_at, seed, n_states):
        expected = oracle.minverse(case.pin_model, q) @ np.hstack([S, J.T])
        B = wbc.eager.inertia_weighted_input_matrix(m, q, constraints, "iim")
        assert B.shape == (m.nv, n_act + J.shape[0]), where
        assert_close(B, expected, what=f"{where}: iim vs Pinocchio M⁻¹ [Sᵀ, Jᵀ]")
        assert_close(B[act, :n_act], B[act, :n_act].T, tol=TOL_KERNEL, what=f"{where}: symmetry of S M⁻¹ Sᵀ")
        if constraints:
            D = wbc.eager.delassus(m, q, constraints, "pv-osimr")
            assert_close(J @ B[:, n_act:], D, what=f"{where}: J B̂_λ vs pv-osimr")
            assert_close(J @ B[:, :n_act], B[act, n_act:].T, what=f"{where}: J B̂_τ vs (S B̂_λ)ᵀ")
        others = ["dense"] * (i < dense_states) + ["eufm"] * (i < eufm_states)
        for method in others:
            Bm = wbc.eager.inertia_weighted_input_matrix(m, q, constraints, method)
            assert_close(Bm, expected, what=f"{where}: {method} vs Pinocchio M⁻¹ [Sᵀ, Jᵀ]")
            assert_close(Bm, B, what=f"{where}: {method} vs iim")


@pytest.mark.parametrize("name,which,dense_states,eufm_states", CATALOG, ids=[f"{n}-{w}" for n, w, _, _ in CATALOG])
def test_catalog_input_matrix_vs_pinocchio(name, which, dense_states, eufm_states):
    """Talos (sole welds; 8 sole corners; feet and grippers), G1 with hands (feet and fingertips),
    Allegro (fingertips), Panda (hand and fingers): the IIM equals Pinocchio's M⁻¹ [Sᵀ, Jᵀ] at 5
    random states, the dense method and the eUFM (on fewer states) equal both; J B̂ gives the
    Delassus matrix; the torque block is symmetric."""
    case = robot_case(name)
    constraints = catalog_constraints(case, which)
    _check_input_matrix(
        case, lambda rng: constraints, seed=200 + len(constraints), dense_states=dense_states, eufm_states=eufm_states
    )


@pytest.mark.parametrize("build,seed", constraint_tree_params(210))
def test_random_tree_input_matrix_vs_pinocchio(build, seed):
    """Random trees (every joint type), a fresh random constraint set at each of 5 states: three
    constraints on the deepest body (more than six rows on one body, usually), one on the root body,
    one on an ancestor, one anywhere, mixing points (world-aligned and local), welds and link
    constraints (random rows, local and world-aligned). The eUFM runs on the first state."""
    case = build()
    _check_input_matrix(case, functools.partial(random_constraints, case.model), seed=seed, eufm_states=1)


@pytest.mark.parametrize("build,seed", ball_tree_params(230))
def test_ball_joint_tree_input_matrix_vs_pinocchio(build, seed):
    """Random trees with ball joints (three-DoF actuated blocks, ``JointModelSpherical``) among the
    other types, random constraint sets: IIM, dense and (first state) eUFM equal Pinocchio's
    M⁻¹ [Sᵀ, Jᵀ]; then the same with a random half of the joints actuated (ball joints among both)."""
    case = build()
    draw = functools.partial(random_constraints, case.model)
    _check_input_matrix(case, draw, seed=seed, eufm_states=1)
    names = [case.model.joints[i].name for i in case.model.actuated]
    half = [str(x) for x in np.random.default_rng(seed + 1).choice(names, size=len(names) // 2, replace=False)]
    partial = _with_actuation(case, half)
    _check_input_matrix(partial, functools.partial(random_constraints, partial.model), seed=seed + 2, n_states=2)


def test_partial_actuation_vs_pinocchio():
    """Only some joints actuated (Sᵀ selects them in model order): Talos with its legs only (feet
    welded, a point on a gripper), a random tree with a random half of its joints, and one with no
    actuator at all (B̂ = M⁻¹ Jᵀ)."""
    talos = robot_case("talos")
    legs = [j.name for j in talos.model.joints if "leg" in j.name]
    case = _with_actuation(talos, legs)
    constraints = catalog_constraints(talos, "feet") + [wbc.PointConstraint(talos.spec.hands[0], (0.0, 0.0, -0.1))]
    _check_input_matrix(case, lambda rng: constraints, seed=220, dense_states=1, n_states=3)
    tree = tree_case(3, 20, True)
    names = [tree.model.joints[i].name for i in tree.model.actuated]
    half = [str(x) for x in np.random.default_rng(221).choice(names, size=len(names) // 2, replace=False)]
    for case in (_with_actuation(tree, half), _with_actuation(tree, [])):
        draw = functools.partial(random_constraints, case.model)
        _check_input_matrix(case, draw, seed=222, n_states=3, eufm_states=1)


@pytest.mark.parametrize("name", ["talos", "panda", "tree"])
def test_no_constraint_gives_inverse_inertia_times_actuation(name):
    """Without constraints B̂ = M⁻¹ Sᵀ (nv, n_actuated): the IIM at 2 states, the dense method and
    the eUFM at one (not on Talos, where they are slow); with no actuator either, an (nv, 0) matrix."""
    case = tree_case(2, 12, False) if name == "tree" else robot_case(name)
    m = case.model
    rng = np.random.default_rng(230)
    for i in range(2):
        q = wbc.random_configuration(m, rng)
        expected = oracle.minverse(case.pin_model, q) @ m.actuation_matrix()
        methods = ("iim",) if i > 0 or name == "talos" else ("iim", "dense", "eufm")
        for method in methods:
            assert_close(
                wbc.eager.inertia_weighted_input_matrix(m, q, [], method), expected, what=f"{case.name} {method}"
            )
    assert wbc.eager.inertia_weighted_input_matrix(m.with_actuation([]), q).shape == (m.nv, 0)


def test_local_point_constraints():
    """Points with ``reference=LOCAL`` (the velocity of the point in the frame's axes) on Panda: one
    on a finger, and three on the hand (more than six rows on one body, so the IIM's wrench basis):
    every method equals Pinocchio."""
    case = robot_case("panda")
    m = case.model
    q = wbc.random_configuration(m, np.random.default_rng(240))
    cases = {
        "one point": [wbc.PointConstraint("panda_leftfinger", (0.0, 0.01, 0.04), RF.LOCAL)],
        "three points on one body": [
            wbc.PointConstraint("panda_hand", (0.0, 0.0, 0.1 * k), RF.LOCAL) for k in range(3)
        ],
    }
    for label, constraints in cases.items():
        J = oracle.constraint_jacobian(case.pin_model, q, constraints)
        expected = oracle.minverse(case.pin_model, q) @ np.hstack([m.actuation_matrix(), J.T])
        for method in ("iim", "dense", "eufm"):
            B = wbc.eager.inertia_weighted_input_matrix(m, q, constraints, method)
            assert_close(B, expected, what=f"{label}: {method} vs Pinocchio")


@pytest.mark.parametrize("name", ["talos", "g1_with_hands", "panda", "tree-floating", "tree-fixed"])
def test_free_acceleration(name):
    """a₀ = −M⁻¹ h equals wbc.aba and Pinocchio's aba with zero torque at 3 random states."""
    case = tree_case(2, 12, name.endswith("floating")) if name.startswith("tree") else robot_case(name)
    m, pm = case.model, case.pin_model
    pd = pm.createData()
    rng = np.random.default_rng(250)
    zero = np.zeros(m.nv)
    for i in range(3):
        q, v = wbc.random_configuration(m, rng), rng.normal(size=m.nv)
        a0 = wbc.eager.free_acceleration(m, q, v)
        assert a0.shape == (m.nv,)
        assert_close(a0, wbc.eager.aba(m, q, v, zero), what=f"{case.name} state {i}: vs wbc.aba")
        assert_close(a0, pin.aba(pm, pd, q, v, zero), what=f"{case.name} state {i}: vs pin.aba")


# ------------------------------------------------------------------ compiled kernels
def test_talos_corners_input_matrix_kernel(kernel_dir):
    """The compiled IIM kernel for Talos' 8 sole corners equals the eager IIM to 1e-12 at 3 random
    states (a (38, 32 + 24) matrix, input ``q``, output ``Bhat``)."""
    case = robot_case("talos")
    m = case.model
    constraints = catalog_constraints(case, "corners")
    kernel = compile_in(traced.input_matrix_function(m, constraints, "iim"), kernel_dir)
    assert kernel.input_names == ["q"] and kernel.output_names == ["Bhat"]
    eager = functools.partial(wbc.eager.inertia_weighted_input_matrix, m, constraints=constraints)
    assert_kernel_matches(kernel, m, eager, np.random.default_rng(260), shape=(m.nv, m.n_actuated + 24))


def test_random_tree_input_matrix_kernels(kernel_dir):
    """On a small floating tree with a random constraint set (every kind), the compiled IIM kernel
    and the combined ``(q, v) -> (a0, Bhat)`` kernel equal wbc.inertia_weighted_input_matrix and
    wbc.free_acceleration to 1e-12 at 3 random states."""
    m = tree_case(1, 6, True).model
    rng = np.random.default_rng(261)
    constraints = random_constraints(m, rng)
    bhat = compile_in(traced.input_matrix_function(m, constraints, "iim"), kernel_dir)
    both = compile_in(traced.free_acceleration_and_input_matrix_function(m, constraints), kernel_dir)
    assert both.input_names == ["q", "v"] and both.output_names == ["a0", "Bhat"]
    for i in range(3):
        q, v = wbc.random_configuration(m, rng), rng.normal(size=m.nv)
        expected = wbc.eager.inertia_weighted_input_matrix(m, q, constraints)
        assert_close(bhat(q)[0].copy(), expected, tol=TOL_KERNEL, what=f"state {i}: IIM kernel")
        a0, B = (x.copy() for x in both(q, v))
        assert_close(a0.reshape(-1), wbc.eager.free_acceleration(m, q, v), tol=TOL_KERNEL, what=f"state {i}: a0")
        assert_close(B, expected, tol=TOL_KERNEL, what=f"state {i}: combined kernel's Bhat")
