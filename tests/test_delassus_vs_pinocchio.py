"""The Delassus matrix ``K M⁻¹ Kᵀ`` by every method (PV-OSIMr, PV-OSIM, EFPA, LTL-OSIM, dense)
against Pinocchio (``J M⁻¹ Jᵀ`` with Pinocchio's Jacobians and ``computeMinverse``; on Talos also
Pinocchio's own ``computeDelassusMatrix``) and against each other, to 1e-9 at random states, on
catalog robots and random trees; the compiled kernels against the eager API to 1e-12; and the
errors of bad constraint sets.

The eager API runs on CasADi DM numbers and the dense method costs about a second per call on
Talos (four on G1 with hands), so on the humanoids it runs on the first states only."""

from __future__ import annotations

import functools

import numpy as np
import pinocchio as pin
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.constraint_cases import catalog_constraints, constrained_states, constraint_tree_params, random_constraints
from tests.helpers import Case, assert_close, assert_kernel_matches, ball_tree_params, compile_in, robot_case, tree_case
from wbc.algorithms.delassus import DelassusMethod
from wbc.codegen import algorithm_functions as traced

RF = wbc.ReferenceFrame
N_STATES = 5

#: (robot, constraint set, number of states on which the dense method runs too)
CATALOG = [
    ("talos", "feet", 2),
    ("talos", "corners", 2),
    ("talos", "feet+hands", 2),
    ("g1_with_hands", "feet+fingertips", 1),
    ("allegro", "fingertips", N_STATES),
    ("panda", "hand+fingers", N_STATES),
]


def _check_delassus(case: Case, constraints_at, seed: int, dense_states: int = N_STATES) -> None:
    """Every method against Pinocchio's ``J M⁻¹ Jᵀ`` and against PV-OSIMr at :data:`N_STATES` random
    configurations; ``constraints_at(rng)`` gives each state's constraint set."""
    m = case.model
    for i, where, constraints, q, J in constrained_states(case, constraints_at, seed, N_STATES):
        expected = J @ oracle.minverse(case.pin_model, q) @ J.T
        results = {}
        for method in DelassusMethod:
            if method is DelassusMethod.DENSE and i >= dense_states:
                continue
            D = wbc.eager.delassus(m, q, constraints, method)
            np.testing.assert_array_equal(D, D.T, err_msg=f"{where}: {method} is not symmetric")
            assert_close(D, expected, what=f"{where}: {method} vs Pinocchio J M⁻¹ Jᵀ")
            results[method] = D
        for method, D in results.items():
            assert_close(D, results[DelassusMethod.PV_OSIMR], what=f"{where}: {method} vs pv-osimr")


@pytest.mark.parametrize("name,which,dense_states", CATALOG, ids=[f"{n}-{w}" for n, w, _ in CATALOG])
def test_catalog_delassus_vs_pinocchio(name, which, dense_states):
    """Talos (sole welds; 8 sole corners; feet and grippers), G1 with hands (feet and fingertips),
    Allegro (fingertips), Panda (hand and fingers): every method equals Pinocchio's J M⁻¹ Jᵀ and
    PV-OSIMr's result to 1e-9 at 5 random states, and is exactly symmetric."""
    case = robot_case(name)
    constraints = catalog_constraints(case, which)
    _check_delassus(case, lambda rng: constraints, seed=300 + len(constraints), dense_states=dense_states)


@pytest.mark.parametrize("build,seed", constraint_tree_params(310))
def test_random_tree_delassus_vs_pinocchio(build, seed):
    """Random trees (every joint type), a fresh random constraint set at each of 5 states: three
    constraints on the deepest body, one on the root body, one on an ancestor, one anywhere, mixing
    points (world-aligned and local), welds and link constraints (random rows, local and
    world-aligned). Every method equals Pinocchio's J M⁻¹ Jᵀ and PV-OSIMr's result."""
    case = build()
    _check_delassus(case, functools.partial(random_constraints, case.model), seed=seed)


@pytest.mark.parametrize("build,seed", ball_tree_params(320))
def test_ball_joint_tree_delassus_vs_pinocchio(build, seed):
    """The same on random trees with ball joints (``JointModelSpherical``) among the other types:
    every method (PV-OSIMr, PV-OSIM, EFPA, LTL, dense) equals Pinocchio's J M⁻¹ Jᵀ."""
    case = build()
    _check_delassus(case, functools.partial(random_constraints, case.model), seed=seed)


# ------------------------------------------------------------------ Pinocchio's computeDelassusMatrix
def _pin_delassus(case: Case, q: np.ndarray, constraints) -> np.ndarray:
    """Pinocchio's ``computeDelassusMatrix`` for welds (CONTACT_6D) and points (CONTACT_3D), each
    expressed in its LOCAL frame (the frame's placement, moved to the point)."""
    pm = case.pin_model
    pd = pm.createData()
    models = pin.StdVec_RigidConstraintModel()
    for c in constraints:
        frame = pm.frames[case.pin_frame(c.frame)]
        if isinstance(c, wbc.WeldConstraint):
            kind, placement = pin.ContactType.CONTACT_6D, frame.placement
        else:
            kind = pin.ContactType.CONTACT_3D
            placement = frame.placement * pin.SE3(np.eye(3), np.asarray(c.offset, dtype=float))
        models.append(pin.RigidConstraintModel(kind, pm, frame.parentJoint, placement, pin.LOCAL))
    datas = pin.StdVec_RigidConstraintData()
    for model in models:
        datas.append(model.createData())
    pin.initConstraintDynamics(pm, pd, models, datas)
    return pin.computeDelassusMatrix(pm, pd, q, models, datas, 0.0)


def _local_twin(c):
    """The same rows in the constraint's own frame: Pinocchio's convention for contacts."""
    if isinstance(c, wbc.WeldConstraint):
        return wbc.LinkConstraint(c.frame, np.eye(6), RF.LOCAL)
    return wbc.PointConstraint(c.frame, c.offset, RF.LOCAL)


def _world_rotation(case: Case, q: np.ndarray, constraints) -> np.ndarray:
    """Block-diagonal rotation from each constraint's frame axes to world axes (diag(R, R) for welds)."""
    pm = case.pin_model
    pd = pm.createData()
    pin.framesForwardKinematics(pm, pd, q)
    blocks = []
    for c in constraints:
        R = pd.oMf[case.pin_frame(c.frame)].rotation
        blocks += [R, R] if isinstance(c, wbc.WeldConstraint) else [R]
    out = np.zeros((3 * len(blocks), 3 * len(blocks)))
    for k, R in enumerate(blocks):
        out[3 * k : 3 * k + 3, 3 * k : 3 * k + 3] = R
    return out


@pytest.mark.parametrize("which", ["feet", "corners", "feet+hands"])
def test_talos_delassus_vs_pinocchio_compute_delassus_matrix(which):
    """Pinocchio's computeDelassusMatrix (contacts in their LOCAL frames, 6D rows ordered
    [linear; angular]) equals wbc's Delassus matrix of the same rows in LOCAL frames
    (``LinkConstraint(frame, I₆, LOCAL)``, ``PointConstraint(..., reference=LOCAL)``) by every
    recursive method, and, rotated blockwise into world axes, that of the default world-aligned
    welds and points; at 3 random states."""
    case = robot_case("talos")
    m = case.model
    constraints = catalog_constraints(case, which)
    local = [_local_twin(c) for c in constraints]
    rng = np.random.default_rng(320)
    for i in range(3):
        q = wbc.random_configuration(m, rng)
        expected = _pin_delassus(case, q, constraints)
        where = f"talos {which} state {i}"
        for method in (DelassusMethod.PV_OSIMR, DelassusMethod.PV_OSIM, DelassusMethod.EFPA, DelassusMethod.LTL):
            assert_close(
                wbc.eager.delassus(m, q, local, method),
                expected,
                what=f"{where}: {method} (LOCAL rows) vs pin.computeDelassusMatrix",
            )
        R = _world_rotation(case, q, constraints)
        assert_close(
            wbc.eager.delassus(m, q, constraints),
            R @ expected @ R.T,
            what=f"{where}: world-aligned constraints vs rotated pin.computeDelassusMatrix",
        )


def test_constraint_order_and_repeats():
    """Rows and columns follow the constraints in the order given, whatever the bodies' order in the
    tree, and a constraint given twice yields the same rows twice (a singular matrix); on Talos with
    a hand point, both feet and the hand point again, against Pinocchio."""
    case = robot_case("talos")
    m, spec = case.model, case.spec
    constraints = [
        wbc.PointConstraint(spec.hands[1], (0.0, 0.0, -0.1)),
        wbc.WeldConstraint(spec.feet[1]),
        wbc.WeldConstraint(spec.feet[0]),
        wbc.PointConstraint(spec.hands[1], (0.0, 0.0, -0.1)),
    ]
    q = wbc.random_configuration(m, np.random.default_rng(321))
    J = oracle.constraint_jacobian(case.pin_model, q, constraints)
    expected = J @ oracle.minverse(case.pin_model, q) @ J.T
    for method in (DelassusMethod.PV_OSIMR, DelassusMethod.PV_OSIM, DelassusMethod.EFPA):
        D = wbc.eager.delassus(m, q, constraints, method)
        assert_close(D, expected, what=f"{method} vs Pinocchio")
        assert_close(D[:3], D[-3:], tol=1e-12, what=f"{method}: the rows of a repeated constraint")


# ------------------------------------------------------------------ compiled kernels
def test_talos_corners_delassus_kernel(kernel_dir):
    """The compiled PV-OSIMr kernel of Talos' 8 sole corners equals wbc.delassus to 1e-12 at 3
    random states (a (24, 24) matrix, input ``q``, output ``delassus``)."""
    case = robot_case("talos")
    m = case.model
    constraints = catalog_constraints(case, "corners")
    kernel = compile_in(traced.delassus_function(m, constraints, "pv-osimr"), kernel_dir)
    assert kernel.input_names == ["q"] and kernel.output_names == ["delassus"]
    eager = functools.partial(wbc.eager.delassus, m, constraints=constraints, method="pv-osimr")
    assert_kernel_matches(kernel, m, eager, np.random.default_rng(330), shape=(24, 24))


def test_random_tree_delassus_kernel(kernel_dir):
    """The compiled PV-OSIMr kernel of a random constraint set (every kind) on a small floating
    tree equals wbc.delassus to 1e-12 at 3 random states."""
    m = tree_case(1, 6, True).model
    rng = np.random.default_rng(331)
    constraints = random_constraints(m, rng)
    kernel = compile_in(traced.delassus_function(m, constraints, "pv-osimr"), kernel_dir)
    assert_kernel_matches(kernel, m, functools.partial(wbc.eager.delassus, m, constraints=constraints), rng)
