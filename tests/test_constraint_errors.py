"""Bad constraint sets, for both constraint-based entry points: B̂ (IIM) and the Delassus matrix.

Each case must raise a clear wbc error naming the culprit, eagerly and when tracing a kernel.
"""

from __future__ import annotations

import numpy as np
import pytest

import wbc
from tests.helpers import robot_case
from wbc.codegen import algorithm_functions as traced

ENTRY_POINTS = {
    "input_matrix": (wbc.inertia_weighted_input_matrix, traced.input_matrix_function, "iim", "eufm"),
    "delassus": (wbc.delassus, traced.delassus_function, "pv-osimr", "pv-osimr"),
}


@pytest.fixture(scope="module")
def panda():
    case = robot_case("panda")
    return case.model, case.spec.q0


@pytest.fixture(params=list(ENTRY_POINTS))
def entry(request):
    return ENTRY_POINTS[request.param]


def test_empty_constraint_set():
    """The Delassus matrix needs a constraint; B̂ of none is M⁻¹Sᵀ (tested against Pinocchio elsewhere)."""
    case = robot_case("panda")
    m, q = case.model, case.spec.q0
    with pytest.raises(wbc.InputError, match="at least one constraint"):
        wbc.delassus(m, q, [])
    with pytest.raises(wbc.InputError, match="at least one constraint"):
        traced.delassus_function(m, [])
    assert wbc.inertia_weighted_input_matrix(m, q, []).shape == (m.nv, m.n_actuated)


def test_unknown_frame_is_a_frame_error(panda, entry):
    """A constraint on an unknown frame is a FrameError naming it (with a suggestion)."""
    m, q = panda
    eager, kernel, _, _ = entry
    for c in (
        wbc.PointConstraint("panda_hand_tpc"),
        wbc.WeldConstraint("panda_hand_tpc"),
        wbc.LinkConstraint("panda_hand_tpc", np.eye(6)),
    ):
        with pytest.raises(wbc.FrameError, match=r"panda_hand_tpc.*panda_hand_tcp"):
            eager(m, q, [wbc.WeldConstraint("panda_hand"), c])
        with pytest.raises(wbc.FrameError, match="panda_hand_tpc"):
            kernel(m, [c])
    with pytest.raises(wbc.FrameError, match="panda_hand_tpc"):
        traced.free_acceleration_and_input_matrix_function(m, [wbc.WeldConstraint("panda_hand_tpc")])


def test_unknown_method_is_an_input_error(panda, entry):
    """An unknown method is an InputError listing the known ones, eagerly and when tracing."""
    m, q = panda
    eager, kernel, _, listed = entry
    constraints = [wbc.WeldConstraint("panda_hand")]
    with pytest.raises(wbc.InputError, match=listed):
        eager(m, q, constraints, "banana")
    with pytest.raises(wbc.InputError, match=listed):
        kernel(m, constraints, "banana")


@pytest.mark.parametrize("name,frame", [("talos", "universe"), ("panda", "universe"), ("panda", "panda_link0")])
def test_frame_fixed_to_the_world_is_an_input_error(name, frame, entry):
    """A constraint on a frame that cannot move (the universe, a fixed-base robot's root link) is
    an InputError naming the frame."""
    case = robot_case(name)
    m, q = case.model, case.spec.q0
    eager = entry[0]
    assert m.frames[m.frame_id(frame)].joint == 0
    for c in (wbc.PointConstraint(frame), wbc.WeldConstraint(frame), wbc.LinkConstraint(frame, np.eye(6))):
        with pytest.raises(wbc.InputError, match=f"'{frame}'.*fixed to the world"):
            eager(m, q, [wbc.WeldConstraint(case.spec.hands[0]), c])


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
def test_malformed_link_constraint_rows_are_an_input_error(panda, entry, rows):
    """A LinkConstraint whose rows are not a finite (k, 6) matrix is an InputError naming the frame."""
    m, q = panda
    with pytest.raises(wbc.InputError, match="panda_hand"):
        entry[0](m, q, [wbc.LinkConstraint("panda_hand", rows)])


@pytest.mark.parametrize(
    "bad",
    ["panda_hand", None, ("panda_hand", (0, 0, 0)), {"frame": "panda_hand"}, wbc.PointContact("panda_hand")],
    ids=["str", "None", "tuple", "dict", "PointContact"],
)
def test_non_constraint_is_an_input_error(panda, entry, bad):
    """Anything but Point/Weld/LinkConstraint objects in the set is an InputError naming its type."""
    m, q = panda
    with pytest.raises(wbc.InputError, match=type(bad).__name__):
        entry[0](m, q, [wbc.WeldConstraint("panda_hand"), bad])


def test_single_constraint_instead_of_a_list(panda, entry):
    m, q = panda
    with pytest.raises(wbc.InputError, match="list"):
        entry[0](m, q, wbc.WeldConstraint("panda_hand"))
