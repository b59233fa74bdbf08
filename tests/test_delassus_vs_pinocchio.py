"""The Delassus matrix ``K M⁻¹ Kᵀ`` by every method (PV-OSIMr, PV-OSIM, EFPA, LTL-OSIM, dense)
against Pinocchio (``J M⁻¹ Jᵀ`` with Pinocchio's Jacobians and ``computeMinverse``; on Talos also
Pinocchio's own ``computeDelassusMatrix``) and against each other, to 1e-9 at random states, on
catalog robots and random trees; the compiled kernels against the eager API to 1e-12; and the
errors of bad constraint sets.

The eager API runs on CasADi DM numbers and the dense method costs about a second per call on
Talos (four on G1 with hands), so on the humanoids it runs on the first states only."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import wbc
from conftest import (
    TOL_KERNEL,
    CONSTRAINT_TREES,
    Case,
    assert_close,
    constraint_tree_case,
    catalog_constraints,
    pin_constraint_jacobian,
    pin_minverse,
    random_constraints,
    robot_case,
    tree_case,
)
from wbc.delassus import METHODS

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
    rng = np.random.default_rng(seed)
    for i in range(N_STATES):
        constraints = constraints_at(rng)
        q = wbc.random_configuration(m, rng)
        J = pin_constraint_jacobian(case, q, constraints)
        expected = J @ pin_minverse(case, q) @ J.T
        where = f"{case.name} state {i} ({len(constraints)} constraints, {J.shape[0]} rows)"
        results = {}
        for method in METHODS:
            if method == "dense" and i >= dense_states:
                continue
            D = wbc.delassus(m, q, constraints, method)
            np.testing.assert_array_equal(D, D.T, err_msg=f"{where}: {method} is not symmetric")
            assert_close(D, expected, what=f"{where}: {method} vs Pinocchio J M⁻¹ Jᵀ")
            results[method] = D
        for method, D in results.items():
            assert_close(D, results["pv-osimr"], what=f"{where}: {method} vs pv-osimr")


@pytest.mark.parametrize("name,which,dense_states", CATALOG, ids=[f"{n}-{w}" for n, w, _ in CATALOG])
def test_catalog_delassus_vs_pinocchio(name, which, dense_states):
    """Talos (sole welds; 8 sole corners; feet and grippers), G1 with hands (feet and fingertips),
    Allegro (fingertips), Panda (hand and fingers): every method equals Pinocchio's J M⁻¹ Jᵀ and
    PV-OSIMr's result to 1e-9 at 5 random states, and is exactly symmetric."""
    case = robot_case(name)
    constraints = catalog_constraints(case, which)
    _check_delassus(case, lambda rng: constraints, seed=300 + len(constraints), dense_states=dense_states)


@pytest.mark.parametrize("floating_base", [True, False], ids=["floating", "fixed"])
@pytest.mark.parametrize("kind,seed,n", CONSTRAINT_TREES, ids=[f"{k}{s}_{n}" for k, s, n in CONSTRAINT_TREES])
def test_random_tree_delassus_vs_pinocchio(kind, seed, n, floating_base):
    """Random trees (every joint type), a fresh random constraint set at each of 5 states: three
    constraints on the deepest body, one on the root body, one on an ancestor, one anywhere, mixing
    points (world-aligned and local), welds and link constraints (random rows, local and
    world-aligned). Every method equals Pinocchio's J M⁻¹ Jᵀ and PV-OSIMr's result."""
    case = constraint_tree_case(kind, seed, n, floating_base)
    _check_delassus(case, lambda rng: random_constraints(case.model, rng), seed=310 + seed + 7 * floating_base)


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
        for method in ("pv-osimr", "pv-osim", "efpa", "ltl"):
            assert_close(wbc.delassus(m, q, local, method), expected,
                         what=f"{where}: {method} (LOCAL rows) vs pin.computeDelassusMatrix")
        R = _world_rotation(case, q, constraints)
        assert_close(wbc.delassus(m, q, constraints), R @ expected @ R.T,
                     what=f"{where}: world-aligned constraints vs rotated pin.computeDelassusMatrix")


def test_constraint_order_and_repeats():
    """Rows and columns follow the constraints in the order given, whatever the bodies' order in the
    tree, and a constraint given twice yields the same rows twice (a singular matrix); on Talos with
    a hand point, both feet and the hand point again, against Pinocchio."""
    case = robot_case("talos")
    m, spec = case.model, case.spec
    constraints = [wbc.PointConstraint(spec.hands[1], (0.0, 0.0, -0.1)), wbc.WeldConstraint(spec.feet[1]),
                   wbc.WeldConstraint(spec.feet[0]), wbc.PointConstraint(spec.hands[1], (0.0, 0.0, -0.1))]
    q = wbc.random_configuration(m, np.random.default_rng(321))
    J = pin_constraint_jacobian(case, q, constraints)
    expected = J @ pin_minverse(case, q) @ J.T
    for method in ("pv-osimr", "pv-osim", "efpa"):
        D = wbc.delassus(m, q, constraints, method)
        assert_close(D, expected, what=f"{method} vs Pinocchio")
        assert_close(D[:3], D[-3:], tol=1e-12, what=f"{method}: the rows of a repeated constraint")


# ------------------------------------------------------------------ compiled kernels
@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory):
    """A fresh kernel cache for this module (the tests never touch the user's cache)."""
    return tmp_path_factory.mktemp("kernels")


def _compile(function, directory):
    kernel = wbc.kernels.compile_kernel(function, directory=directory)
    assert kernel.backend == "c", "these tests need a C compiler"
    return kernel


def test_talos_corners_delassus_kernel(kernel_dir):
    """The compiled PV-OSIMr kernel of Talos' 8 sole corners equals wbc.delassus to 1e-12 at 3
    random states (a (24, 24) matrix, input ``q``, output ``delassus``)."""
    case = robot_case("talos")
    m = case.model
    constraints = catalog_constraints(case, "corners")
    kernel = _compile(wbc.kernels.delassus_function(m, constraints, "pv-osimr"), kernel_dir)
    assert kernel.input_names == ["q"] and kernel.output_names == ["delassus"]
    rng = np.random.default_rng(330)
    for i in range(3):
        q = wbc.random_configuration(m, rng)
        D = kernel(q)[0].copy()
        assert D.shape == (24, 24)
        assert_close(D, wbc.delassus(m, q, constraints, "pv-osimr"), tol=TOL_KERNEL, what=f"state {i}")


def test_random_tree_delassus_kernel(kernel_dir):
    """The compiled PV-OSIMr kernel of a random constraint set (every kind) on a small floating
    tree equals wbc.delassus to 1e-12 at 3 random states."""
    m = tree_case(1, 6, True).model
    rng = np.random.default_rng(331)
    constraints = random_constraints(m, rng)
    kernel = _compile(wbc.kernels.delassus_function(m, constraints, "pv-osimr"), kernel_dir)
    for i in range(3):
        q = wbc.random_configuration(m, rng)
        assert_close(kernel(q)[0].copy(), wbc.delassus(m, q, constraints, "pv-osimr"), tol=TOL_KERNEL,
                     what=f"state {i}")


# ------------------------------------------------------------------ errors
@pytest.fixture(scope="module")
def panda():
    case = robot_case("panda")
    return case.model, case.spec.q0


def test_empty_constraint_set_is_an_input_error(panda):
    """The Delassus matrix of no constraint is an InputError, eagerly and when tracing a kernel."""
    m, q = panda
    with pytest.raises(wbc.InputError, match="at least one constraint"):
        wbc.delassus(m, q, [])
    with pytest.raises(wbc.InputError, match="at least one constraint"):
        wbc.kernels.delassus_function(m, [])


def test_unknown_frame_is_a_frame_error(panda):
    """A constraint on an unknown frame is a FrameError naming it (with a suggestion)."""
    m, q = panda
    for c in (wbc.PointConstraint("panda_hand_tpc"), wbc.WeldConstraint("panda_hand_tpc"),
              wbc.LinkConstraint("panda_hand_tpc", np.eye(6))):
        with pytest.raises(wbc.FrameError, match="panda_hand_tpc.*panda_hand_tcp"):
            wbc.delassus(m, q, [wbc.WeldConstraint("panda_hand"), c])
        with pytest.raises(wbc.FrameError, match="panda_hand_tpc"):
            wbc.kernels.delassus_function(m, [c])


def test_unknown_method_is_an_input_error(panda):
    """An unknown method is an InputError listing the known ones, eagerly and when tracing."""
    m, q = panda
    constraints = [wbc.WeldConstraint("panda_hand")]
    with pytest.raises(wbc.InputError, match="pv-osimr"):
        wbc.delassus(m, q, constraints, "osim")
    with pytest.raises(wbc.InputError, match="pv-osimr"):
        wbc.kernels.delassus_function(m, constraints, "osim")


@pytest.mark.parametrize("name,frame", [("talos", "universe"), ("panda", "universe"), ("panda", "panda_link0")])
def test_frame_fixed_to_the_world_is_an_input_error(name, frame):
    """A constraint on a frame that cannot move (the universe, a fixed-base robot's root link) is
    an InputError naming the frame."""
    case = robot_case(name)
    m, q = case.model, case.spec.q0
    assert m.frames[m.frame_id(frame)].joint == 0
    for c in (wbc.PointConstraint(frame), wbc.WeldConstraint(frame), wbc.LinkConstraint(frame, np.eye(6))):
        with pytest.raises(wbc.InputError, match=f"'{frame}'.*fixed to the world"):
            wbc.delassus(m, q, [wbc.WeldConstraint(case.spec.hands[0]), c])


MALFORMED_ROWS = {
    "vector": np.ones(6),
    "5 columns": np.ones((2, 5)),
    "7 columns": np.ones((1, 7)),
    "no row": np.zeros((0, 6)),
    "3D array": np.ones((2, 6, 1)),
    "NaN": np.full((1, 6), np.nan),
    "inf": np.full((2, 6), np.inf),
    "None": None,
    "ragged list": [[1.0, 0, 0, 0, 0, 0], [1.0]],
    "text": "identity",
}


@pytest.mark.parametrize("rows", list(MALFORMED_ROWS.values()), ids=list(MALFORMED_ROWS))
def test_malformed_link_constraint_rows_are_an_input_error(panda, rows):
    """A LinkConstraint whose rows are not a finite (k, 6) matrix is an InputError naming the frame."""
    m, q = panda
    with pytest.raises(wbc.InputError, match="panda_hand"):
        wbc.delassus(m, q, [wbc.LinkConstraint("panda_hand", rows)])


@pytest.mark.parametrize("bad", ["panda_hand", None, ("panda_hand", (0, 0, 0)), {"frame": "panda_hand"},
                                 wbc.PointContact("panda_hand")],
                         ids=["str", "None", "tuple", "dict", "PointContact"])
def test_non_constraint_is_an_input_error(panda, bad):
    """Anything but Point/Weld/LinkConstraint objects in the set is an InputError naming its type."""
    m, q = panda
    with pytest.raises(wbc.InputError, match=type(bad).__name__):
        wbc.delassus(m, q, [wbc.WeldConstraint("panda_hand"), bad])
