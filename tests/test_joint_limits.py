"""Joint position and velocity limits: the bounds' invariants, joint selection, and closed loops in
MuJoCo (its joint ranges disabled, so only the controller keeps the joints inside their limits).

Oracles: MuJoCo integrates the robot (positions, velocities over a run); Pinocchio's RNEA checks
that every step's command and acceleration satisfy the equations of motion.
"""

from __future__ import annotations

import casadi as ca
import numpy as np
import pinocchio as pin
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.helpers import assert_close, eom_residual, robot_case, talos_standing
from wbc import tasks
from wbc.control.limits.joint_position import position_bounds
from wbc.control.limits.joint_velocity import velocity_bounds

mujoco_sim = pytest.importorskip("wbc.sim.mujoco")

DT = 1e-3


# ----------------------------------------------------------------------------- the bounds alone
def _traced_bounds() -> ca.Function:
    """The position and velocity bounds of one joint, traced once (as in the kernel)."""
    x = [ca.SX.sym(n) for n in ("q", "v", "lo", "hi", "margin", "braking", "v_bar", "dt")]
    q, v, lo, hi, margin, braking, v_bar, dt = x
    L, U = position_bounds(q, v, lo + margin, hi - margin, lo, hi, braking, v_bar, dt)
    Lv, Uv = velocity_bounds(v, v_bar, braking, dt)
    return ca.Function("bounds", x, [L, U, Lv, Uv])


_BOUNDS = _traced_bounds()


def _bounds(q, v, lo, hi, margin, braking, v_bar, dt):
    """``(L, U, L_v, U_v)``: position and velocity bounds of one joint."""
    return tuple(float(x) for x in _BOUNDS(q, v, lo, hi, margin, braking, v_bar, dt))


@pytest.mark.parametrize("theta", [0.5, 1.0])
def test_bounds_keep_a_joint_viable_whatever_the_command(theta):
    """One joint, random limits, margins, braking and periods, integrated exactly (θ = ½) or by
    semi-implicit Euler (θ = 1), driven by an adversary that always picks an extreme of the allowed
    interval (or a random point): the interval is never empty, contains an acceleration of magnitude
    ≤ ā, the joint never passes its effective limit by more than ½āΔ², never exceeds its velocity limit."""
    rng = np.random.default_rng(int(theta * 10))
    for _ in range(40):
        lo = rng.uniform(-3, 0)
        hi = lo + rng.uniform(0.05, 4)
        margin = rng.uniform(0, 0.05) * (hi - lo)
        braking, v_bar, dt = rng.uniform(1, 50), rng.uniform(0.2, 8), rng.choice([5e-4, 1e-3, 4e-3])
        q, v = rng.uniform(lo + margin, hi - margin), 0.0
        for _ in range(600):
            L, U, Lv, Uv = _bounds(q, v, lo, hi, margin, braking, v_bar, dt)
            low, up = max(L, Lv), min(U, Uv)
            assert low <= up + 1e-9, "position and velocity bounds intersect"
            assert max(low, -braking) <= min(up, braking) + 1e-9, "the intersection holds an |a| ≤ ā"
            pick = rng.uniform()
            a = up if pick < 0.45 else low if pick < 0.9 else rng.uniform(low, up)
            q, v = q + dt * v + theta * dt * dt * a, v + dt * a
            assert hi - margin - q >= -0.5 * braking * dt * dt - 1e-12, "upper effective limit"
            assert q - lo - margin >= -0.5 * braking * dt * dt - 1e-12, "lower effective limit"
            assert abs(v) <= v_bar + 1e-9, "velocity limit"


def test_a_joint_started_outside_is_brought_back_without_empty_bounds():
    rng = np.random.default_rng(5)
    for _ in range(30):
        lo, hi, margin, braking, v_bar, dt = -1.0, 1.0, 0.01, rng.uniform(2, 30), rng.uniform(0.5, 4), 1e-3
        side = rng.choice([-1.0, 1.0])
        q = side * (1.0 + rng.uniform(0.01, 1.5))
        v = side * rng.uniform(0, 2 * v_bar)  # moving further out, maybe too fast
        inside_at = None
        for k in range(8000):
            L, U, Lv, Uv = _bounds(q, v, lo, hi, margin, braking, v_bar, dt)
            low, up = max(L, Lv), min(U, Uv)
            assert low <= up + 1e-9
            assert max(low, -braking) <= min(up, braking) + 1e-9, "never more than ā is asked for"
            a = up if side > 0 else low  # the adversary pushes outwards as much as allowed
            q, v = q + dt * v + dt * dt * a, v + dt * a
            if inside_at is None and lo <= q <= hi:
                inside_at = k
            if inside_at is not None:
                assert lo - 1e-9 <= q <= hi + 1e-9, "once back inside it stays inside"
        assert inside_at is not None, "the joint returns inside its limits"


# ----------------------------------------------------------------------------- which joints
_INERTIAL = '<inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>'
_URDF = f"""<robot name="mixed">
  <link name="base">{_INERTIAL}</link><link name="a">{_INERTIAL}</link><link name="b">{_INERTIAL}</link>
  <link name="c">{_INERTIAL}</link><link name="d">{_INERTIAL}</link>
  <joint name="revolute" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="10" velocity="2"/></joint>
  <joint name="continuous" type="continuous"><parent link="a"/><child link="b"/><axis xyz="0 1 0"/>
    <limit effort="10" velocity="3"/></joint>
  <joint name="slider" type="prismatic"><parent link="b"/><child link="c"/><axis xyz="1 0 0"/>
    <limit lower="0" upper="0.2" effort="10" velocity="0.5"/></joint>
  <joint name="free_spin" type="revolute"><parent link="c"/><child link="d"/><axis xyz="1 0 0"/></joint>
</robot>"""


def test_continuous_joints_and_joints_without_urdf_limits_get_none():
    model = wbc.load_urdf(_URDF)
    ctrl = wbc.WholeBodyController(model, [tasks.PostureTask(model, kp=1.0)])
    position, velocity = ctrl.limits[1], ctrl.limits[2]
    assert isinstance(position, wbc.JointPositionLimit) and isinstance(velocity, wbc.JointVelocityLimit)
    assert [j.name for j in position.joints] == ["revolute", "slider"]
    assert [j.name for j in velocity.joints] == ["revolute", "continuous", "slider"]
    lower, upper = position.effective_limits
    assert np.allclose(lower, [-0.99, 0.01]) and np.allclose(upper, [0.99, 0.19])
    assert np.allclose(velocity.limit, 0.95 * np.array([2.0, 3.0, 0.5]))
    problem = ctrl.build_problem(wbc.neutral(model), np.zeros(model.nv))
    kinds = [g.kind for g in problem.in_groups]
    assert kinds.count(wbc.Kind.JOINT_POSITION_LIMIT) == 4 and kinds.count(wbc.Kind.JOINT_VELOCITY_LIMIT) == 6


@pytest.mark.parametrize(
    ("limit", "message"),
    [
        (lambda: wbc.JointPositionLimit(["continuous"]), "no position limits"),
        (lambda: wbc.JointPositionLimit(["free_spin"]), "no position limits"),
        (lambda: wbc.JointPositionLimit(["nope"]), "no joint 'nope'"),
        (lambda: wbc.JointVelocityLimit(["free_spin"]), "no velocity limit"),
        (lambda: wbc.JointPositionLimit(margin=-0.1), "margin"),
        (lambda: wbc.JointPositionLimit(braking=0.0), "braking"),
        (lambda: wbc.JointPositionLimit(["revolute", "revolute"]), "named twice"),
        (lambda: wbc.JointVelocityLimit(margin=1.0), "margin"),
    ],
)
def test_bad_joint_limits_are_refused_with_their_joint_named(limit, message):
    model = wbc.load_urdf(_URDF)
    with pytest.raises(wbc.InputError, match=message):
        wbc.WholeBodyController(model, [], limits=[limit()])


def test_margin_and_braking_change_without_recompiling():
    case = robot_case("panda")
    model, spec = case.model, case.spec
    posture = tasks.PostureTask(model, weight=1.0, kp=400.0)
    ctrl = wbc.WholeBodyController(model, [posture])
    target = spec.q0.copy()
    j = model.joints[model.joint_id("panda_joint4")]
    target[j.idx_q] = 0.5
    posture.set_target(target)
    q, v = spec.q0.copy(), np.zeros(model.nv)
    q[j.idx_q], v[j.idx_v] = j.upper[0] - 0.03, 0.5  # 3 cm from the limit, moving towards it (viable)
    ctrl.step(q, v)
    kernel = ctrl.kernel
    position = ctrl.limits[1]
    v_bar = 0.95 * j.velocity[0]
    seen = []
    for margin, braking in ((0.01, 10.0), (0.015, 10.0), (0.015, 12.0)):
        position.set_margin(margin)
        position.set_braking(braking)
        qdd = ctrl.step(q, v).qdd[j.idx_v]
        _, upper, _, _ = _bounds(q[j.idx_q], 0.5, j.lower[0], j.upper[0], margin, braking, v_bar, DT)
        assert 0 < upper < 150, "the bound binds (the posture asks for ~200 rad/s²)"
        assert abs(qdd - upper) < 1e-6 * abs(upper), (margin, braking, qdd, upper)
        seen.append(qdd)
    assert seen[1] < seen[0] and seen[2] > seen[1], "a wider margin brakes earlier, a stronger braking later"
    assert ctrl.kernel is kernel


def test_limit_rows_are_rows_of_bhat_read_outside_the_kernel():
    """The position and velocity limits' rows are ±rows of ``B̂ = M⁻¹Sᵀ``: the kernel outputs none of
    them (its ``G`` is empty; they were a copy of ``B̂``'s rows), the QP takes them from its ``B̂`` output
    (equal to Pinocchio's ``M⁻¹``, right-hand sides ``U − a₀``, ``a₀ − L`` with Pinocchio's ABA), and in
    a binding state the step gives the full QP's answer and holds the bound (the rows read in C, on the
    one-call path: tests/test_shortcut.py)."""
    case = robot_case("panda")
    model, spec = case.model, case.spec
    posture = tasks.PostureTask(model, weight=1.0, kp=400.0)
    ctrl = wbc.WholeBodyController(model, [posture])
    ctrl.compile()
    j = model.joints[model.joint_id("panda_joint4")]
    target = spec.q0.copy()
    target[j.idx_q] = 0.5
    posture.set_target(target)
    q, v = spec.q0.copy(), np.zeros(model.nv)
    q[j.idx_q], v[j.idx_v] = j.upper[0] - 0.03, 0.5  # moving towards the limit: the position bound binds
    position, velocity = ctrl.limits[1], ctrl.limits[2]
    assert isinstance(position, wbc.JointPositionLimit) and isinstance(velocity, wbc.JointVelocityLimit)
    outputs = dict(zip(ctrl.kernel.output_names, ctrl.kernel.output_shapes))
    assert outputs["G"][0] == 0, "no limit row is copied inside the kernel"
    problem = ctrl.build_problem(q, v)
    Minv_S = oracle.minverse(case.pin_model, q) @ model.actuation_matrix()
    a0 = pin.aba(case.pin_model, case.pin_model.createData(), q, v, np.zeros(model.nv))
    v_bar = 0.95 * np.array([x.velocity[0] for x in position.joints])
    for limit, kind in ((position, wbc.Kind.JOINT_POSITION_LIMIT), (velocity, wbc.Kind.JOINT_VELOCITY_LIMIT)):
        rows = [i for i, g in enumerate(problem.in_groups) if g.kind is kind]
        idx = limit.indices
        n = idx.size
        assert len(rows) == 2 * n
        assert_close(problem.G[rows], np.vstack([Minv_S[idx], -Minv_S[idx]]), 1e-9, "limit rows vs Pinocchio's M⁻¹")
        if limit is position:
            urdf = [(x.lower[0], x.upper[0]) for x in position.joints]
            bounds = [_bounds(q[i], v[k], *urdf[m], 0.01, 10.0, v_bar[m], DT)[:2]
                      for m, (i, k) in enumerate(zip(position.q_indices, idx))]  # fmt: skip
        else:
            bounds = [_bounds(0.0, v[k], -1.0, 1.0, 0.25, 10.0, velocity.limit[m], DT)[2:] for m, k in enumerate(idx)]
        L, U = np.array(bounds).T
        assert_close(problem.h[rows], np.concatenate([U - a0[idx], a0[idx] - L]), 1e-9, "their right-hand sides")
    _, expected = _full_qp(ctrl, problem)
    cmd = ctrl.step(q, v)
    assert cmd.status is wbc.StepStatus.OPTIMAL  # no contact: the minimizer breaks the bound, then the QP
    assert_close(cmd.u, expected, 1e-9, "the step vs the full QP")
    _, upper, _, _ = _bounds(q[j.idx_q], 0.5, j.lower[0], j.upper[0], 0.01, 10.0, 0.95 * j.velocity[0], DT)
    assert abs(cmd.qdd[j.idx_v] - upper) < 1e-6 * abs(upper), "the bound binds, and holds"


def _full_qp(ctrl, problem):
    """``problem`` solved as posed (no shortcut, no working set)."""
    outcome = ctrl.fallback.solve(problem, ctrl.solver)
    assert outcome.status is wbc.StepStatus.OPTIMAL
    return problem, outcome.x


# ----------------------------------------------------------------------------- closed loops in MuJoCo
def _panda_loop(q0, v0, target, steps, kp=400.0):
    """Panda in MuJoCo (no joint ranges) under a posture task towards ``target``; returns the
    positions, velocities, statuses and the worst RNEA residual of the run."""
    case = robot_case("panda")
    model = case.model
    posture = tasks.PostureTask(model, weight=1.0, kp=kp)
    ctrl = wbc.WholeBodyController(model, [posture])
    posture.set_target(target)
    sim = mujoco_sim.MujocoSim(model, position_limits=False)
    sim.reset(q0, v0)
    qs, vs, ok, rnea = [], [], [], 0.0
    for _ in range(steps):
        q, v = sim.get_state()
        cmd = ctrl.step(q, v)
        rnea = max(rnea, eom_residual(case, q, v, cmd))
        sim.set_torques(cmd.tau)
        sim.step()
        qs.append(q)
        vs.append(v)
        ok.append(cmd.status is wbc.StepStatus.OPTIMAL)
    q, v = sim.get_state()
    return np.array(qs + [q]), np.array(vs + [v]), np.array(ok), rnea


def test_panda_in_mujoco_never_passes_its_limits_under_infeasible_posture_targets():
    """Random starts inside the limits (random velocities too), random posture targets up to 1 rad
    beyond the limits, 0.5 s each, MuJoCo integrating: no joint passes its limit by more than 1e-3,
    no velocity exceeds its limit, every step is solved and satisfies Pinocchio's RNEA."""
    case = robot_case("panda")
    model = case.model
    lo, hi = model.lower_position_limit, model.upper_position_limit
    v_max = model.velocity_limit
    rng = np.random.default_rng(11)
    worst_position, worst_velocity = -np.inf, -np.inf
    for _ in range(4):
        q0 = rng.uniform(lo + 0.05 * (hi - lo), hi - 0.05 * (hi - lo))
        v0 = rng.uniform(-0.2, 0.2, model.nv) * v_max
        beyond = rng.uniform(0, 1.0, model.nq) * np.minimum(1.0, hi - lo)  # up to 1 rad (a range for fingers)
        target = np.where(rng.uniform(size=model.nq) < 0.5, hi + beyond, lo - beyond)
        qs, vs, ok, rnea = _panda_loop(q0, v0, target, 500)
        worst_position = max(worst_position, float(np.max(np.maximum(qs - hi, lo - qs))))
        worst_velocity = max(worst_velocity, float(np.max(np.abs(vs) - v_max)))
        assert ok.all(), "every step solved"
        assert rnea < 1e-9, f"RNEA residual {rnea:.2e}"
    assert worst_position <= 1e-3, f"a joint passed its limit by {worst_position:.2e} rad"
    assert worst_velocity <= 0.0, f"a velocity exceeded its limit by {worst_velocity:.2e}"


@pytest.mark.parametrize(("joint", "side"), [("panda_joint4", +1), ("panda_joint2", -1), ("panda_finger_joint1", +1)])
def test_panda_started_outside_a_limit_returns_inside_with_every_step_solved(joint, side):
    """Started 0.3 rad (1 cm for the finger) outside a limit and moving further out, with the posture
    pulling outwards: every step is solved, the joint is back inside within a second and stays."""
    case = robot_case("panda")
    model, spec = case.model, case.spec
    j = model.joints[model.joint_id(joint)]
    beyond = 0.01 if j.type is wbc.JointType.PRISMATIC else 0.3
    limit = j.upper[0] if side > 0 else j.lower[0]
    q0, v0 = spec.q0.copy(), np.zeros(model.nv)
    q0[j.idx_q] = limit + side * beyond
    v0[j.idx_v] = side * 0.2 * j.velocity[0]
    target = spec.q0.copy()
    target[j.idx_q] = limit + side * 2 * beyond
    qs, _, ok, rnea = _panda_loop(q0, v0, target, 1500)
    assert ok.all(), "every step solved"
    assert rnea < 1e-9
    x = side * (qs[:, j.idx_q] - limit)  # > 0 outside
    inside = np.flatnonzero(x <= 0)
    assert inside.size and inside[0] < 1000, "back inside within a second"
    assert x[inside[0] :].max() <= 1e-9, "and stays inside"


@pytest.mark.parametrize("culprit", ["position", "velocity"])
def test_infeasible_limits_are_named_and_the_fallback_is_finite(culprit):
    """Torque limits too weak to bring back a joint started outside its position limit, or to brake a
    joint moving faster than its velocity limit: the diagnosis names that joint limit's group alone,
    and the fallback command is finite."""
    case = robot_case("panda")
    model, spec = case.model, case.spec
    posture = tasks.PostureTask(model, weight=1.0, kp=10.0)
    q, v = spec.q0.copy(), np.zeros(model.nv)
    if culprit == "position":
        j = model.joints[model.joint_id("panda_joint2")]
        q[j.idx_q] = j.upper[0] + 0.2
        expected = wbc.Group(wbc.Kind.JOINT_POSITION_LIMIT, "joint_position_limit")
    else:  # the vertical first joint: gravity does not brake it
        j = model.joints[model.joint_id("panda_joint1")]
        v[j.idx_v] = 1.2 * j.velocity[0]
        expected = wbc.Group(wbc.Kind.JOINT_VELOCITY_LIMIT, "joint_velocity_limit")
    for finger in ("panda_finger_joint1", "panda_finger_joint2"):  # off their limits: gravity moves them
        q[model.joints[model.joint_id(finger)].idx_q] = 0.02
    limits = [wbc.TorqueLimit(np.full(model.n_actuated, 1e-3)), wbc.JointPositionLimit(), wbc.JointVelocityLimit()]
    ctrl = wbc.WholeBodyController(model, [posture], limits=limits)
    posture.set_target(spec.q0)
    cmd = ctrl.step(q, v)
    assert cmd.status is wbc.StepStatus.ZERO_TORQUE  # no contact to soften, no command before
    assert cmd.conflict == (expected,), cmd.conflict
    assert np.all(np.isfinite(cmd.tau)) and np.all(np.isfinite(cmd.qdd))


def test_posture_target_within_limits_keeps_a_standing_step_off_the_bounds():
    """Talos's grippers rest at their URDF upper limit in ``half_sitting``, inside the position
    limit's margin band, where the joint may not move up: a posture target there binds the bound at
    every step (the QP runs); ``within_limits`` moves it to the effective limit, and the same step's
    unconstrained minimizer is feasible (the compiled shortcut answers). Other joints are untouched,
    the argument is not written to, and a wrong size is refused."""
    from wbc.codegen.cache import find_compiler
    from wbc.control.shortcut import FEASIBLE, INFEASIBLE

    if find_compiler() is None:
        pytest.skip("no C compiler: the numpy path runs")
    case, com, posture, ctrl = talos_standing(mu=0.7, com=(10.0, 100.0), posture=(1e-2, 30.0))
    model, spec = case.model, case.spec
    q0 = spec.q0.copy()
    target = ctrl.within_limits(q0)
    assert np.array_equal(q0, spec.q0)
    (limit,) = [c for c in ctrl.limits if isinstance(c, wbc.JointPositionLimit)]
    _, upper = limit.effective_limits
    moved = np.flatnonzero(target != q0)
    grippers = [j.idx_q for j in model.joints if j.name in ("gripper_left_joint", "gripper_right_joint")]
    assert sorted(moved.tolist()) == sorted(grippers)
    k = [limit.q_indices.tolist().index(i) for i in grippers]
    assert np.all(target[grippers] < upper[k]) and np.all(upper[k] < spec.q0[grippers])
    assert np.array_equal(target, limit.inside(q0))

    q, v = spec.q0.copy(), np.zeros(model.nv)
    q[grippers] = -1e-3  # where gravity and the simulator leave them, in the band
    com.set_target(wbc.center_of_mass(model, q))
    codes = {}
    for name, posture_target in (("q0", spec.q0), ("within limits", target)):
        posture.set_target(posture_target)
        cmd = ctrl.step(q, v)
        assert cmd.status is wbc.StepStatus.OPTIMAL
        codes[name] = ctrl._plan.shortcut(ctrl.regularization)
    assert codes == {"q0": INFEASIBLE, "within limits": FEASIBLE}
    with pytest.raises(wbc.InputError, match="q"):
        ctrl.within_limits(np.zeros(3))


@pytest.mark.parametrize("limit", [wbc.JointPositionLimit, wbc.JointVelocityLimit])
def test_both_joint_limits_refuse_a_non_positive_control_period_by_name(limit):
    """The parameters shared by the two joint limits (wbc.control.limits.joint_limit.JointLimit):
    the control period is checked for both (the velocity limit used to write 0 s into its kernel)."""
    from wbc.control.contributor import Runtime

    model = robot_case("panda").model
    lim = limit(name="mine")
    lim.check(model)
    assert lim.parameters(Runtime(1e-3, 0.0, None))[0] == 1e-3
    with pytest.raises(wbc.InputError, match=r"mine: the control period must be > 0, got 0.0"):
        lim.parameters(Runtime(0.0, 0.0, None))
