"""The control layer's shape: typed pieces, a new limit in one file, plain task and contact
descriptions, names, ownership, and the QP's groups."""

from __future__ import annotations

import copy
import enum
import inspect
import subprocess
import sys

import casadi as ca
import numpy as np
import pytest

import wbc
from tests.helpers import robot_case
from wbc import tasks
from wbc.control import AccelerationBounds, AccelerationCost, Contributor, Group, Inequality, Kind
from wbc.control.builder import trace_step


# ----------------------------------------------------------------------------- a toy limit, defined here
class ToyKind(enum.Enum):
    """A kind of QP piece the library does not know: the toy limit's own."""

    JOINT_ACCELERATION = "joint_acceleration"


class JointAccelerationLimit(Contributor):
    """``q̈_j ≤ a_max`` on one joint's velocity index ``j``: the rows ``B̂[j] u ≤ a_max − a₀[j]``,
    ``a_max`` a kernel parameter. Everything a new limit needs, in one class."""

    def __init__(self, joint: str, a_max: float) -> None:
        self.joint = joint
        self.name = f"acceleration_{joint}"
        self._a_max = np.array([float(a_max)])

    def check(self, model: wbc.Model) -> None:
        self._index = model.joints[model.joint_id(self.joint)].idx_v

    @property
    def parameter_size(self) -> int:
        return 1

    def parameters(self, runtime) -> np.ndarray:
        return self._a_max

    def set(self, a_max: float) -> None:
        self._a_max[0] = a_max  # in place: the kernel reads this array

    def pieces(self, ctx, p):
        j = self._index
        return [Inequality(ctx.Bhat[j, :], p[0] - ctx.a0[j], Group(ToyKind.JOINT_ACCELERATION, self.name))]


def _panda_posture_controller(limits):
    case = robot_case("panda")
    model, spec = case.model, case.spec
    posture = tasks.PostureTask(model, weight=1.0, kp=400.0)
    ctrl = wbc.WholeBodyController(model, [posture], limits=limits)
    target = spec.q0.copy()
    target[model.joints[model.joint_id("panda_joint2")].idx_q] += 0.5  # far: a large acceleration
    posture.set_target(target)
    return ctrl, model, spec


def test_a_new_limit_is_one_class_and_needs_no_edit_of_the_controller():
    """A limit written in this test file binds in the QP, is reported by its group when it
    conflicts, and its parameter changes without recompiling."""
    limit = JointAccelerationLimit("panda_joint2", a_max=5.0)
    ctrl, model, spec = _panda_posture_controller([wbc.TorqueLimit(), limit])
    j = model.joints[model.joint_id("panda_joint2")].idx_v
    free, _, _ = _panda_posture_controller(None)
    q, v = spec.q0, np.zeros(model.nv)
    assert free.step(q, v).qdd[j] > 20.0, "without the limit the posture task accelerates the joint hard"
    cmd = ctrl.step(q, v)
    assert cmd.status is wbc.StepStatus.OPTIMAL
    assert cmd.qdd[j] <= 5.0 + 1e-6 and cmd.qdd[j] > 4.9, "the limit binds"
    problem = ctrl.build_problem(q, v)
    assert Group(ToyKind.JOINT_ACCELERATION, limit.name) in problem.in_groups
    kernel = ctrl.kernel
    limit.set(2.0)
    cmd = ctrl.step(q, v)
    assert ctrl.kernel is kernel and cmd.qdd[j] <= 2.0 + 1e-6
    # infeasible against the torque limits: the toy group is named in the diagnosis
    limit.set(-1e6)
    cmd = ctrl.step(q, v)
    assert cmd.status is not wbc.StepStatus.OPTIMAL
    assert np.all(np.isfinite(cmd.tau))
    assert {g.kind for g in cmd.conflict} & {ToyKind.JOINT_ACCELERATION, Kind.TORQUE_LIMIT}


#: Broken pieces a contributor may return (from its parameter ``p``) and the error that names it.
BROKEN_PIECES = {
    "inequality of the wrong width": (
        lambda p: Inequality(ca.DM.ones(1, 3), 0.0, Group(ToyKind.JOINT_ACCELERATION, "x")),
        r"columns",
    ),
    "bounds out of range": (
        lambda p: AccelerationBounds((0, 99), -p[0] * ca.DM.ones(2), p[0] * ca.DM.ones(2), Group(Kind.TASK, "x")),
        r"rows \[0, 99\] of q̈, which has 9",
    ),
    "bounds of the wrong size": (
        lambda p: AccelerationBounds((0, 1), p[0], p[0] * ca.DM.ones(2), Group(Kind.TASK, "x")),
        r"expected 2 entries",
    ),
    "cost out of range": (
        lambda p: AccelerationCost((3, 9), p[0] * ca.DM.ones(2), ca.DM.zeros(2), Group(Kind.TASK, "x")),
        r"cost on rows \[3, 9\] of q̈, which has 9",
    ),
    "cost of the wrong size": (
        lambda p: AccelerationCost((0, 1), p[0] * ca.DM.ones(2), ca.DM.zeros(3), Group(Kind.TASK, "x")),
        r"expected 2 entries, got shape \(3, 1\)",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN_PIECES))
def test_pieces_of_the_wrong_type_or_size_name_their_contributor(case):
    piece, message = BROKEN_PIECES[case]

    class Broken(JointAccelerationLimit):
        def pieces(self, ctx, p):
            return [piece(p)]

    ctrl, *_ = _panda_posture_controller([Broken("panda_joint2", 1.0)])
    with pytest.raises(wbc.InputError, match="acceleration_panda_joint2.*" + message):
        ctrl.compile()


def test_the_kernel_reads_parameters_in_place_and_groups_every_row():
    """Talos standing: every inequality row and bound has a typed group naming its contributor."""
    case = robot_case("talos")
    model, spec = case.model, case.spec
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width) for f in spec.feet]
    ctrl = wbc.WholeBodyController(model, [tasks.CoMTask(kp=10.0)], contacts)
    problem = ctrl.build_problem(spec.q0, np.zeros(model.nv))
    kinds = {(g.kind, g.name) for g in problem.in_groups}
    for f in spec.feet:
        for kind in (Kind.FRICTION, Kind.CENTER_OF_PRESSURE, Kind.NORMAL_FORCE):
            assert (kind, f) in kinds
    assert set(problem.eq_groups) == {Group(Kind.CONTACT, f) for f in spec.feet}
    assert problem.bound_groups[: model.n_actuated] == [Group(Kind.TORQUE_LIMIT, "torque_limit")] * model.n_actuated
    assert str(Group(Kind.FRICTION, "left_sole_link")) == "friction:left_sole_link"


def test_tasks_and_contacts_are_never_written_to():
    case = robot_case("talos")
    model, spec = case.model, case.spec
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width) for f in spec.feet]
    com = tasks.CoMTask(kp=10.0)
    com.set_target_from_configuration(model, spec.q0)
    ctrl = wbc.WholeBodyController(model, [com], contacts)
    before = (com.target.copy(), com.kp.copy(), com.weight.copy(), [copy.deepcopy(vars(c)) for c in contacts])
    ctrl.deactivate_contact(contacts[1].name, ramp=0.003)
    for _ in range(5):
        ctrl.step(spec.q0, np.zeros(model.nv))
    ctrl.activate_contact(contacts[1].name)
    ctrl.step(spec.q0, np.zeros(model.nv))
    np.testing.assert_array_equal(com.target, before[0])
    np.testing.assert_array_equal(com.kp, before[1])
    np.testing.assert_array_equal(com.weight, before[2])
    for c, state in zip(contacts, before[3]):
        assert vars(c).keys() == state.keys()
        for key, value in state.items():
            assert np.array_equal(vars(c)[key], value), (c.name, key)


def test_a_task_serves_one_controller_at_a_time():
    model = robot_case("panda").model
    task = tasks.FrameTask("panda_hand_tcp", kp=10.0)
    first = wbc.WholeBodyController(model, [task])
    with pytest.raises(wbc.InputError, match="another controller"):
        wbc.WholeBodyController(model, [task])
    first.remove_task(task)
    second = wbc.WholeBodyController(model, [task])
    assert second.tasks == (task,)


def test_default_names_come_from_class_and_frame():
    model = robot_case("panda").model
    assert tasks.CoMTask().name == "com"
    assert tasks.FrameTask("panda_hand_tcp").name == "frame_panda_hand_tcp"
    assert tasks.PositionTask("panda_link7").name == "position_panda_link7"
    assert tasks.OrientationTask("panda_link7").name == "orientation_panda_link7"
    assert tasks.PostureTask(model).name == "posture"
    assert tasks.MomentumTask().name == "angular_momentum" and tasks.MomentumTask(linear=True).name == "momentum"
    assert tasks.CoMTask().name == tasks.CoMTask().name, "no process-wide counter"
    with pytest.raises(wbc.InputError, match="already in the controller"):
        wbc.WholeBodyController(model, [tasks.CoMTask(), tasks.CoMTask()])


def test_a_task_computes_its_sizes_lazily():
    """A subclass may set what its sizes depend on after ``super().__init__``."""

    class Offset(tasks.PositionTask):
        def __init__(self, frame):
            super().__init__(frame, kp=5.0)
            self.extra = 0  # set after the base initializer

        @property
        def target_size(self):
            return 3 + self.extra

    task = Offset("panda_link7")
    assert task.parameter_size == 3 + 5 * 3
    task.set_target([0.1, 0.2, 0.3])
    np.testing.assert_array_equal(task.target, [0.1, 0.2, 0.3])


@pytest.mark.filterwarnings("ignore::wbc.TaskWarning")  # gains 0 on purpose: the error alone is read
@pytest.mark.parametrize("make", ["com", "frame", "position", "orientation", "posture", "momentum"])
def test_set_target_from_configuration_zeroes_the_error(make):
    case = robot_case("talos")
    model, spec = case.model, case.spec
    rng = np.random.default_rng(3)
    q = wbc.integrate(model, spec.q0, rng.normal(size=model.nv) * 0.1)
    task = {
        "com": lambda: tasks.CoMTask(),
        "frame": lambda: tasks.FrameTask(spec.hands[0]),
        "position": lambda: tasks.PositionTask(spec.hands[0], offset=(0.0, 0.0, 0.1)),
        "orientation": lambda: tasks.OrientationTask(spec.hands[0]),
        "posture": lambda: tasks.PostureTask(model),
        "momentum": lambda: tasks.MomentumTask(linear=True),
    }[make]()
    task.set_target_from_configuration(model, q)
    ctrl = wbc.WholeBodyController(model, [task])
    cmd = ctrl.step(q, np.zeros(model.nv))
    assert np.abs(cmd.task_errors[task.name]).max() < 1e-12


def test_orientation_targets_must_be_rotations():
    task = tasks.OrientationTask("panda_link7")
    with pytest.raises(wbc.InputError, match="determinant"):
        task.set_target(-np.eye(3))


def test_options_are_enums_resolved_once():
    model = robot_case("panda").model
    ctrl = wbc.WholeBodyController(model, [], solver=wbc.Solver.QUADPROG, input_matrix=wbc.InputMatrixMethod.DENSE)
    assert ctrl.solver.name == "quadprog" and ctrl.input_matrix is wbc.InputMatrixMethod.DENSE
    assert wbc.WholeBodyController(model, [], input_matrix="eufm").input_matrix is wbc.InputMatrixMethod.EUFM
    with pytest.raises(wbc.InputError, match="InputMatrixMethod"):
        wbc.WholeBodyController(model, [], input_matrix="banana")
    with pytest.raises(TypeError):
        wbc.SurfaceContact("x", 0.2, 0.1, model="corners")  # the force model is a class now


def test_a_missing_backend_names_its_extra(monkeypatch):
    import importlib

    real = importlib.import_module

    def without_quadprog(name, *args):
        if name == "quadprog":
            raise ImportError("No module named 'quadprog'")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", without_quadprog)
    with pytest.raises(wbc.MissingDependency, match=r"wbc\[quadprog\]"):
        wbc.control.make_solver("quadprog")


@pytest.mark.parametrize(
    "value",
    [
        {"dt": 0.0},
        {"dt": float("nan")},
        {"soft_contact_weight": -1.0},
        {"feasibility_tolerance": float("nan")},
        {"regularization": 0.0},
    ],
)
def test_bad_controller_parameters_are_refused(value):
    model = robot_case("panda").model
    name = next(iter(value))
    with pytest.raises(wbc.InputError, match=name):
        wbc.WholeBodyController(model, [], **value)


def test_structure_keeps_constant_rows_out_of_the_kernel():
    """Friction cones are numbers: they stay in the structure; the kernel outputs only traced rows."""
    case = robot_case("talos")
    model, spec = case.model, case.spec
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width) for f in spec.feet]
    _, structure = trace_step(model, list(contacts), contacts, wbc.InputMatrixMethod.IIM)
    assert structure.traced_rows.size == 0 and np.abs(structure.G_constant).max() > 0


# ----------------------------------------------------------------------------- one numeric and one symbolic API
def test_numeric_and_symbolic_apis_have_the_same_names_and_signatures():
    """Same names and parameters; the numeric dynamics alone also take a keyword-only ``out=``."""
    assert set(wbc.numeric.__all__) <= set(wbc.symbolic.__all__)
    with_out = {"rnea", "nonlinear_effects", "crba", "aba", "free_acceleration"}
    for name in wbc.numeric.__all__:
        ours, theirs = getattr(wbc.numeric, name), getattr(wbc.symbolic, name)
        params = inspect.signature(ours).parameters
        extra = [p for p in params if params[p].kind is inspect.Parameter.KEYWORD_ONLY]
        assert extra == (["out"] if name in with_out else []), name
        assert [p for p in params if p not in extra] == list(inspect.signature(theirs).parameters), name


def test_symbolic_api_traced_equals_numeric_api():
    case = robot_case("talos")
    model, spec = case.model, case.spec
    rng = np.random.default_rng(4)
    q = wbc.random_configuration(model, rng, scale=0.3)
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    qs, vs, as_ = ca.SX.sym("q", model.nq), ca.SX.sym("v", model.nv), ca.SX.sym("a", model.nv)
    frame = spec.feet[0]
    corners = [wbc.PointConstraint(frame, tuple(c)) for c in spec.sole.corners()]
    cases = {
        "rnea": ((qs, vs, as_), (q, v, a)),
        "aba": ((qs, vs, as_), (q, v, a)),
        "crba": ((qs,), (q,)),
        "frame_placement": ((qs, frame), (q, frame)),
        "frame_jacobian": (
            (qs, frame, wbc.ReferenceFrame.LOCAL_WORLD_ALIGNED),
            (q, frame, wbc.ReferenceFrame.LOCAL_WORLD_ALIGNED),
        ),
        "frame_drift": ((qs, vs, frame), (q, v, frame)),
        "center_of_mass": ((qs,), (q,)),
        "centroidal_momentum": ((qs, vs), (q, v)),
        "delassus": ((qs, corners), (q, corners)),
    }
    for name, (symbolic_args, numeric_args) in cases.items():
        expression = getattr(wbc.symbolic, name)(model, *symbolic_args)
        inputs = [x for x in (qs, vs, as_) if any(x is s for s in symbolic_args)]
        f = ca.Function(name, inputs, [expression])
        values = [{id(qs): q, id(vs): v, id(as_): a}[id(x)] for x in inputs]
        got = np.array(f(*values)).reshape(np.shape(getattr(wbc.numeric, name)(model, *numeric_args)))
        np.testing.assert_allclose(got, getattr(wbc, name)(model, *numeric_args), atol=1e-10, err_msg=name)


def test_workspace_shares_one_state():
    case = robot_case("talos")
    model, spec = case.model, case.spec
    rng = np.random.default_rng(5)
    q, v = wbc.random_configuration(model, rng, scale=0.3), rng.normal(size=model.nv)
    ws = wbc.Workspace(model, ca.DM(q), ca.DM(v))
    np.testing.assert_allclose(np.array(ws.free_acceleration()).ravel(), wbc.free_acceleration(model, q, v), atol=1e-10)
    np.testing.assert_allclose(np.array(ws.crba()), wbc.crba(model, q), atol=1e-10)
    B = np.array(ws.input_matrix([wbc.WeldConstraint(spec.feet[0])]))
    np.testing.assert_allclose(
        B, wbc.inertia_weighted_input_matrix(model, q, [wbc.WeldConstraint(spec.feet[0])]), atol=1e-9
    )


# ----------------------------------------------------------------------------- packaging
def test_installed_namespaces_work_from_any_directory(tmp_path):
    """``wbc.tasks`` and ``wbc.robots`` import from an unrelated directory; nothing called ``tasks`` or
    ``robots`` is installed at the top level."""
    code = (
        "import importlib.util, wbc, wbc.tasks, wbc.robots\n"
        "assert importlib.util.find_spec('tasks') is None, 'a top-level tasks package is installed'\n"
        "assert importlib.util.find_spec('robots') is None, 'a top-level robots package is installed'\n"
        "print(wbc.tasks.CoMTask.__module__, wbc.robots.load.__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["wbc.tasks.com", "wbc.robots.catalog"]


def test_the_task_of_the_architecture_guide_works():
    """docs/architecture.md's HeightTask, as written there: its error and its acceleration rows."""
    from wbc.algorithms.kinematics import ReferenceFrame
    from wbc.control import Task

    class HeightTask(Task):
        def __init__(self, frame, weight=1.0, kp=0.0, kd=None, name=None):
            self.frame = frame
            super().__init__(1, weight, kp, kd, name)

        def default_name(self):
            return f"height_{self.frame}"

        @property
        def target_size(self):
            return 1

        def set_target(self, z):
            self._set_target_parameters([z])

        def measure(self, ctx):
            J = ctx.kin.frame_jacobian(ctx.model.frame_id(self.frame), ReferenceFrame.LOCAL_WORLD_ALIGNED)[2:3, :]
            drift = ctx.kin.frame_drift(ctx.model.frame_id(self.frame), ReferenceFrame.LOCAL_WORLD_ALIGNED)[2]
            return J, drift, ca.mtimes(J, ctx.kin.v)

        def error(self, ctx, target):
            return target - ctx.kin.frame_placement(ctx.model.frame_id(self.frame)).p[2]

    case = robot_case("panda")
    model, spec = case.model, case.spec
    task = HeightTask("panda_hand_tcp", kp=50.0)
    z = wbc.frame_placement(model, spec.q0, "panda_hand_tcp")[2, 3]
    task.set_target(z + 0.01)
    ctrl = wbc.WholeBodyController(model, [task])
    v = np.zeros(model.nv)
    cmd = ctrl.step(spec.q0, v)
    assert task.name == "height_panda_hand_tcp"
    assert abs(cmd.task_errors[task.name][0] - 0.01) < 1e-12
    J = wbc.frame_jacobian(model, spec.q0, "panda_hand_tcp", wbc.ReferenceFrame.LOCAL_WORLD_ALIGNED)[2]
    assert abs(J @ cmd.qdd - 50.0 * 0.01) < 1e-6, "the task's acceleration is obtained (one task, redundant arm)"


def test_the_top_level_exports_the_whole_numeric_api():
    assert set(wbc.numeric.__all__) <= set(wbc.__all__)
    for name in wbc.numeric.__all__:
        assert getattr(wbc, name) is getattr(wbc.numeric, name)


def test_every_subpackage_is_packaged():
    """pyproject's explicit package list names every package directory (a non-editable install would
    silently miss one otherwise)."""
    import pathlib

    import tomllib

    root = pathlib.Path(__file__).resolve().parents[1]
    listed = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(root).parts) for p in (root / "wbc").rglob("__init__.py")}
    found |= {"wbc.tasks", "wbc.robots"}
    assert found <= listed, f"not packaged: {sorted(found - listed)}"


def test_package_data_is_tracked_by_git():
    """Every file pyproject ships as package data is in git (a file the .gitignore hides, such as a
    hand-written C source under the ``*.c`` rule, is missing from every fresh clone)."""
    import pathlib
    import shutil
    import subprocess

    import tomllib

    root = pathlib.Path(__file__).resolve().parents[1]
    git = shutil.which("git")
    if git is None or not (root / ".git").exists():
        pytest.skip("not a git checkout")
    data = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["wbc"]
    files = [f"wbc/{name}" for name in data]
    ignored = subprocess.run([git, "check-ignore", "--no-index", *files], cwd=root, capture_output=True, text=True)
    assert ignored.stdout.split() == [], f"package data hidden by .gitignore: {ignored.stdout.split()}"
    for f in files:
        assert (root / f).is_file(), f"package data {f} is missing"
