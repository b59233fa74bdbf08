"""The gait sequencer without a simulator: a recording controller, and a robot that tracks its
references exactly (soles on the reference poses, CoM on the reference, each sole loaded by its
nominal share of the weight). The contact switches must follow the timeline: a release ramp of one
double support before each lift-off, the frame task in swing, touchdown at the planned time on the
planned foothold (or earlier when the sole is loaded within the touchdown window)."""

from __future__ import annotations

import numpy as np
import pytest

from wbc.errors import InputError
from wbc.locomotion import (
    CaptureStepPlanner,
    DCMStabilizer,
    Foot,
    FootPhase,
    FootShape,
    Footstep,
    GaitParameters,
    GaitSequencer,
    Sensing,
    StepLimits,
    VelocityCommand,
    plan_from_velocity,
    plan_stand,
    plan_walk,
)
from wbc.locomotion.dcm import dcm_of
from wbc.locomotion.sequencer import RISE_LOAD, TOUCHDOWN_WINDOW

SHAPE = FootShape(0.2, 0.1)
PARAMS = GaitParameters(single_support=0.6, double_support=0.2, initial_double_support=0.8, final_double_support=0.8)
WEIGHT = 500.0
DT = 1e-3


class Recorder:
    """A controller's contact schedule (ramps end on time) and tasks that record what they are given."""

    def __init__(self) -> None:
        self.calls: list = []
        self.release_end: dict = {}
        self.now = 0.0

    def deactivate_contact(self, name, ramp=0.0, start_force=None):
        self.calls.append(("release", self.now, name, ramp))
        self.release_end[name] = self.now + ramp

    def activate_contact(self, name, placement=None, ramp=0.0, ramp_force=None):
        self.calls.append(("enforce", self.now, name, placement, ramp, ramp_force))
        self.release_end.pop(name, None)

    def contact_active(self, name):
        return name not in self.release_end or self.now < self.release_end[name] - DT / 2


class Task:
    def __init__(self) -> None:
        self.weight, self.target = 0.0, None

    def set_weight(self, w):
        self.weight = w

    def set_target(self, *args):
        self.target = args


class Contact:
    def __init__(self, name):
        self.name = name


def sequencer(timeline, limits, planner=None, orientation=None, **options):
    """A recording controller, swing tasks and a sequencer over ``timeline`` (default planner: within
    ``limits``; default orientation task: a recording one)."""
    ctrl, tasks = Recorder(), {f: Task() for f in Foot}
    seq = GaitSequencer(
        ctrl,
        {f: Contact(f.value) for f in Foot},
        tasks,
        Task(),
        Task() if orientation is None else orientation,
        timeline,
        PARAMS,
        SHAPE,
        DCMStabilizer(),
        CaptureStepPlanner(PARAMS, SHAPE, limits) if planner is None else planner,
        WEIGHT,
        0.2,
        10.0,
        **options,
    )
    return ctrl, tasks, seq


def run(early_load_at=None):
    left, right = Footstep(Foot.LEFT, (0.0, 0.1, 0.0)), Footstep(Foot.RIGHT, (0.0, -0.1, 0.0))
    limits = StepLimits(width=0.2, min_width=0.15)
    plan = plan_from_velocity(VelocityCommand(0.2), left, right, 2, PARAMS.step_duration, limits, SHAPE)
    timeline = plan_walk(plan, (0.0, 0.0, 0.8), PARAMS, SHAPE)
    ctrl, tasks, seq = sequencer(timeline, limits)
    phases = []
    for i in range(int((timeline.t_end + 0.2) / DT)):
        t = ctrl.now = i * DT
        ref = timeline.sample(t)
        loads = {f: ref.load[f] * WEIGHT for f in Foot}
        if early_load_at is not None:
            for st in timeline.steps:
                if st.touchdown - early_load_at <= t < st.touchdown:
                    loads[st.foot] = 0.5 * WEIGHT
        soles = {f: ref.feet[f].pose for f in Foot}
        out = seq.update(Sensing(t, ref.com, ref.com_velocity, soles, loads), DT)
        phases.append(out.phase)
    return timeline, ctrl, seq, tasks, phases


def test_contact_switches_follow_the_timeline():
    timeline, ctrl, seq, tasks, phases = run()
    releases = [c for c in ctrl.calls if c[0] == "release"]
    enforced = [c for c in ctrl.calls if c[0] == "enforce"]
    assert len(releases) == len(enforced) == len(timeline.steps) == 3
    for st, rel, enf, td in zip(timeline.steps, releases, enforced, seq.touchdowns):
        assert rel[2] == enf[2] == st.foot.value
        assert rel[1] == pytest.approx(st.liftoff - PARAMS.double_support, abs=DT)
        assert rel[3] == pytest.approx(PARAMS.double_support, abs=DT)
        assert enf[1] == pytest.approx(st.touchdown, abs=DT)
        assert np.allclose(enf[3], st.footstep.pose, atol=1e-9), "held where it landed: the planned foothold"
        assert enf[4] == 0.2 and enf[5] == pytest.approx(RISE_LOAD * WEIGHT)
        assert not td.early and td.foot is st.foot
        assert np.allclose(td.landed, td.planned, atol=1e-9)
        # in swing from the end of the release ramp to touchdown
        k0, k1 = int(round(st.liftoff / DT)), int(round(st.touchdown / DT))
        assert all(phases[k][st.foot] is FootPhase.SWING for k in range(k0 + 1, k1 - 1))
        assert phases[k1 + 1][st.foot] is FootPhase.STANCE
    assert all(t.weight == 0.0 for t in tasks.values()), "frame tasks off in stance"
    assert not seq.walking


def test_a_loaded_sole_lands_early_within_the_window():
    timeline, ctrl, seq, _, _ = run(early_load_at=0.1)
    assert [td.early for td in seq.touchdowns] == [True] * 3
    for st, td in zip(timeline.steps, seq.touchdowns):
        assert td.t == pytest.approx(st.touchdown - 0.1, abs=1.5 * DT)
    # the mirror of a late touchdown: the other foot's release starts at the planned touchdown, after
    # the early foot's force rise began, and ends after it
    releases = [c for c in ctrl.calls if c[0] == "release"]
    enforced = [c for c in ctrl.calls if c[0] == "enforce"]
    for enf, rel in zip(enforced[:-1], releases[1:]):
        assert rel[1] > enf[1] and rel[1] + rel[3] >= enf[1] + enf[4] - DT / 2
    assert TOUCHDOWN_WINDOW > 0.1 and len(seq.touchdowns) == 3


def test_a_sole_still_above_the_ground_at_touchdown_goes_on_down_and_lands_late():
    """The ground is 3 cm lower than planned under every step: at the planned touchdown the sole is
    above it, so the swing goes on down at LATE_SPEED until the sole is within LATE_HEIGHT of it."""
    from wbc.locomotion.sequencer import LATE_HEIGHT, LATE_SPEED

    drop = 0.03
    left, right = Footstep(Foot.LEFT, (0.0, 0.1, 0.0)), Footstep(Foot.RIGHT, (0.0, -0.1, 0.0))
    limits = StepLimits(width=0.2, min_width=0.15)
    plan = plan_from_velocity(VelocityCommand(0.2), left, right, 1, PARAMS.step_duration, limits, SHAPE)
    timeline = plan_walk(plan, (0.0, 0.0, 0.8), PARAMS, SHAPE)

    def ground(f, pose):  # the surface under a sole: 3 cm below the plan once it has stepped
        fs = Footstep.from_pose(f, pose)
        return Footstep(f, (fs.position[0], fs.position[1], -drop if fs.position[0] > 0.05 else 0.0), fs.yaw)

    ctrl, tasks, seq = sequencer(timeline, limits, foothold=ground)
    soles = {f: timeline.feet0[f].pose for f in Foot}
    for i in range(int((timeline.steps[0].touchdown + 0.4) / DT)):
        t = ctrl.now = i * DT
        ref = timeline.sample(t)
        for f in Foot:  # the sole follows its frame task's target (the swing, then the late descent)
            if seq.phase[f] is FootPhase.SWING and tasks[f].target is not None:
                soles[f] = tasks[f].target[0]
        seq.update(Sensing(t, ref.com, ref.com_velocity, dict(soles), {f: 0.0 for f in Foot}), DT)
        if seq.touchdowns:
            break
    step, td = timeline.steps[0], seq.touchdowns[0]
    expected = (drop - LATE_HEIGHT) / LATE_SPEED
    assert td.late == pytest.approx(expected, abs=2 * DT) and td.t == pytest.approx(
        step.touchdown + expected, abs=2 * DT
    )
    assert td.foothold.position[2] == -drop, "held on the lower ground"
    enforce = next(c for c in ctrl.calls if c[0] == "enforce")
    assert enforce[3][2, 3] == -drop


def late_walk(drop: float, n_steps: int = 3):
    """A walk whose footholds (past x = 0.05 m) are ``drop`` m lower than planned: every swing lands
    late, its sole following its frame task's target. Returns the plan, the recorder, the sequencer
    and the phases at each step."""
    left, right = Footstep(Foot.LEFT, (0.0, 0.1, 0.0)), Footstep(Foot.RIGHT, (0.0, -0.1, 0.0))
    limits = StepLimits(width=0.2, min_width=0.15)
    plan = plan_from_velocity(VelocityCommand(0.2), left, right, n_steps, PARAMS.step_duration, limits, SHAPE)
    timeline = plan_walk(plan, (0.0, 0.0, 0.8), PARAMS, SHAPE)

    def ground(f, pose):
        fs = Footstep.from_pose(f, pose)
        return Footstep(f, (fs.position[0], fs.position[1], -drop if fs.position[0] > 0.05 else 0.0), fs.yaw)

    ctrl, tasks, seq = sequencer(timeline, limits, foothold=ground)
    soles = {f: timeline.feet0[f].pose for f in Foot}
    phases = []
    for i in range(int((timeline.t_end + 1.0) / DT)):
        t = ctrl.now = i * DT
        ref = seq.timeline.sample(t)
        for f in Foot:
            if seq.phase[f] is FootPhase.SWING and tasks[f].target is not None:
                soles[f] = tasks[f].target[0]
        phases.append(seq.update(Sensing(t, ref.com, ref.com_velocity, dict(soles), {f: 0.0 for f in Foot}), DT).phase)
    return timeline, ctrl, seq, phases


def test_a_late_touchdown_delays_the_rest_of_the_plan():
    """Issue 28: after a late touchdown the other foot's release started at once, its ramp shortened by
    the lateness, its force bound ramping down while the landed foot's was still rising (the QP was
    infeasible). The rest of the plan now starts from the actual touchdown: each release starts with
    the landed foot's rise and lasts as long, every step lifts off and lands late by the summed
    lateness so far, and each swing keeps its duration."""
    from wbc.locomotion.sequencer import LATE_HEIGHT, LATE_SPEED

    drop = 0.03
    timeline, ctrl, seq, _ = late_walk(drop)
    lateness = (drop - LATE_HEIGHT) / LATE_SPEED  # 0.13 s, less than the double support
    assert len(seq.touchdowns) == len(timeline.steps) == 4
    assert all(td.late == pytest.approx(lateness, abs=2 * DT) for td in seq.touchdowns)
    releases = [c for c in ctrl.calls if c[0] == "release"]
    enforced = [c for c in ctrl.calls if c[0] == "enforce"]
    rise = enforced[0][4]
    for enf, rel in zip(enforced[:-1], releases[1:]):  # each landing, then the other foot's release
        assert rel[2] != enf[2]
        assert rel[1] >= enf[1] - DT / 2, "the other foot's release starts no sooner than the landing"
        assert rel[1] + rel[3] >= enf[1] + rise - DT, "its force bound reaches zero no sooner than the rise ends"
        assert rel[3] == pytest.approx(PARAMS.double_support, abs=1.5 * DT)
    delay = 0.0
    for st, td, rel in zip(timeline.steps, seq.touchdowns, releases):
        assert rel[1] + rel[3] == pytest.approx(st.liftoff + delay, abs=1.5 * DT), "lifted off late by the delay"
        delay += td.late
        assert td.t == pytest.approx(st.touchdown + delay, abs=1.5 * DT), "landed late by the summed lateness"
    assert seq.timeline.steps == () or seq.timeline.t0 > timeline.steps[-1].touchdown
    assert not seq.walking


def test_an_on_time_walk_is_not_re_timed():
    timeline, _, seq, _ = late_walk(drop=0.0)
    assert [td.late for td in seq.touchdowns] == [0.0] * 4
    assert seq.timeline is timeline


def test_a_delayed_timeline_is_the_plan_shifted_in_time():
    """:meth:`GaitTimeline.delayed` (a crouched gait: its CoM height, the DCM, the ZMP, the feet)."""
    params = GaitParameters(
        single_support=0.6, double_support=0.2, initial_double_support=0.8, final_double_support=0.8, crouch=0.04
    )
    left, right = Footstep(Foot.LEFT, (0.0, 0.1, 0.0)), Footstep(Foot.RIGHT, (0.0, -0.1, 0.0))
    limits = StepLimits(width=0.2, min_width=0.15)
    plan = plan_from_velocity(VelocityCommand(0.2, 0.05, 0.1), left, right, 4, params.step_duration, limits, SHAPE)
    timeline = plan_walk(plan, (0.01, 0.0, 0.8), params, SHAPE)
    since, delay = timeline.steps[1].touchdown, 0.137
    later = timeline.delayed(since, delay)
    assert len(later.steps) == len(timeline.steps) - 2 and later.t0 == pytest.approx(since + delay)
    for tau in (0.0, 0.05, 0.2, 0.5, 0.93, 1.4, 2.0, 3.5):
        a, b = timeline.sample(since + tau), later.sample(since + delay + tau)
        for key in ("com", "com_velocity", "com_acceleration", "dcm", "zmp"):
            assert np.allclose(getattr(a, key), getattr(b, key), atol=1e-9), (key, tau)
        for f in Foot:
            assert a.feet[f].state is b.feet[f].state
            assert np.allclose(a.feet[f].pose, b.feet[f].pose, atol=1e-9), (f, tau)
            assert np.allclose(a.feet[f].velocity, b.feet[f].velocity, atol=1e-9), (f, tau)
        assert a.heading == pytest.approx(b.heading, abs=1e-12)
    mid = 0.5 * (timeline.steps[2].liftoff + timeline.steps[2].touchdown)
    with pytest.raises(InputError, match="in a swing"):
        timeline.delayed(mid, 0.1)
    with pytest.raises(InputError, match="delay"):
        timeline.delayed(since, -0.1)
    with pytest.raises(InputError, match="crouching"):
        timeline.delayed(0.1, 0.1)


def test_a_delayed_timeline_stands_where_the_foot_landed():
    left, right = Footstep(Foot.LEFT, (0.0, 0.1, 0.0)), Footstep(Foot.RIGHT, (0.0, -0.1, 0.0))
    limits = StepLimits(width=0.2, min_width=0.15)
    plan = plan_from_velocity(VelocityCommand(0.2), left, right, 3, PARAMS.step_duration, limits, SHAPE)
    timeline = plan_walk(plan, (0.0, 0.0, 0.8), PARAMS, SHAPE)
    first = timeline.steps[0]
    landed = first.footstep.moved((0.02, -0.01, -0.03))
    later = timeline.delayed(first.touchdown, 0.1, landed)
    assert later.footholds_at(later.t0)[first.foot] == landed
    again = next(k for k, st in enumerate(later.steps) if st.foot is first.foot)
    start = later.swings[again].state(later.steps[again].liftoff).position
    assert np.allclose(start, landed.position, atol=1e-12), "its next swing starts where it landed"
    with pytest.raises(InputError, match="landed"):
        timeline.delayed(first.touchdown, 0.1, "left")


class GainTask(Task):
    """An orientation task with gains (per axis), recording each change."""

    def __init__(self) -> None:
        super().__init__()
        self.kp, self.kd = np.full(3, 100.0), np.full(3, 20.0)
        self.changes: list = []
        self.now = 0.0  # the test's clock, s

    def set_gains(self, kp, kd=None):
        self.kp, self.kd = np.array(kp, float), np.array(kd, float)
        self.changes.append((round(self.now, 3), self.kp[2], self.kd[2]))


LEFT, RIGHT = Footstep(Foot.LEFT, (0.0, 0.1, 0.0)), Footstep(Foot.RIGHT, (0.0, -0.1, 0.0))
CROSSING_LIMITS = StepLimits(width=0.2, min_width=0.15, max_forward=0.45, max_cross=0.2)


def pushed_toward_the_right_foot(duration, orientation=None, offset=None, each=None, **options):
    """Standing on :data:`LEFT` and :data:`RIGHT`, the DCM put 9 cm beyond the right sole's centre at
    1 s (a push toward the right foot): the sequencer plans a recovery step of the left foot across
    (crossover steps allowed, landing turned 0.8 rad toe in, no closing step). The robot tracks the
    reference exactly, its CoM ``offset`` (3,) from it while the crossing swings; ``each(t, com,
    velocity, sequencer)`` after every control step. Returns ``(controller, sequencer)``."""
    planner = CaptureStepPlanner(PARAMS, SHAPE, CROSSING_LIMITS, transfer=0.05, cross_yaw=0.8, close_crossing=False)
    timeline = plan_stand({Foot.LEFT: LEFT, Foot.RIGHT: RIGHT}, (0.0, 0.0, 0.8), PARAMS, SHAPE)
    ctrl, _, seq = sequencer(
        timeline, CROSSING_LIMITS, planner, orientation, recover=True, recovery_tolerance=0.1, **options
    )
    for i in range(int(duration / DT)):
        t = ctrl.now = i * DT
        if orientation is not None:
            orientation.now = t
        ref = seq.timeline.sample(t)
        com, velocity = ref.com, ref.com_velocity
        if abs(t - 1.0) < DT / 2:
            com, velocity = np.array([0.0, -0.05, 0.8]), np.array([0.0, -0.4, 0.0])
        elif offset is not None and seq.recoveries and not seq.touchdowns:
            com = com + offset
        soles = {f: ref.feet[f].pose for f in Foot}
        seq.update(Sensing(t, com, velocity, soles, {f: ref.load[f] * WEIGHT for f in Foot}), DT)
        if each is not None:
            each(t, com, velocity, seq)
    return ctrl, seq


def test_a_crossover_recovery_turns_the_pelvis_yaw_compliant_and_loads_its_landing_at_once():
    """Standing, pushed toward the right foot: the left foot crosses (a recovery step the sequencer
    plans itself). While it swings and ``crossing_yaw_hold`` s after it lands, the orientation's yaw
    gains are ``crossing_yaw_gains`` (roll and pitch untouched), then the task's own again; its
    touchdown is loaded over ``recovery_rise``, not ``rise``."""
    orientation = GainTask()
    gains = []
    ctrl, seq = pushed_toward_the_right_foot(
        3.0,
        orientation,
        each=lambda t, com, velocity, seq: gains.append((seq.crossing, orientation.kp.copy(), orientation.kd.copy())),
        recovery_rise=0.01,
        crossing_yaw_gains=(4.0, 3.0),
        crossing_yaw_hold=0.5,
    )
    assert [r["foot"] for r in seq.recoveries] == ["left"] and len(seq.touchdowns) == 1
    landing = seq.touchdowns[0]
    assert landing.landed[1] < RIGHT.position[1] and landing.landed[2] == pytest.approx(-0.8), "across, toe in"
    swing = [k for k, g in enumerate(gains) if g[0] is Foot.LEFT]
    assert swing and swing[-1] == pytest.approx(landing.t / DT, abs=1), "crossing until it lands"
    for k, (_, kp, kd) in enumerate(gains):
        compliant = swing[0] <= k < landing.t / DT + 0.5 / DT
        assert (kp[2], kd[2]) == ((4.0, 3.0) if compliant else (100.0, 20.0)), f"{k * DT:.3f} s"
        assert np.all(kp[0:2] == 100.0) and np.all(kd[0:2] == 20.0)
    assert len(orientation.changes) == 2, "set only when it changes"
    enforce = [c for c in ctrl.calls if c[0] == "enforce"]
    assert [c[2] for c in enforce] == ["left"] and enforce[0][4] == 0.01, "loaded at once"


def test_standing_crossed_the_other_foot_steps_beside_the_crossed_one():
    """``uncross=(delay, transfer)``: ``delay`` s after a crossover step landed, still crossed, the
    other foot lifts after ``transfer`` s and lands beside the crossed foot at the planner's nominal
    width, in that foot's frame (turned as it is); without ``uncross`` the robot stays crossed."""
    landings = {
        uncross: pushed_toward_the_right_foot(4.0, uncross=uncross)[1].touchdowns for uncross in (None, (0.3, 0.2))
    }
    (crossing,) = landings[None]
    assert crossing.foot is Foot.LEFT and crossing.landed[1] < RIGHT.position[1], "stays crossed"
    first, beside = landings[(0.3, 0.2)]
    assert first.landed == pytest.approx(crossing.landed)
    crossed = Footstep(Foot.LEFT, (*first.landed[0:2], 0.0), first.landed[2])
    expected = crossed.to_world((0.0, -0.2, 0.0))
    assert beside.foot is Foot.RIGHT and beside.planned[0:2] == pytest.approx(expected[0:2], abs=1e-9)
    assert beside.planned[2] == pytest.approx(crossed.yaw), "turned as the crossed foot"
    assert beside.t == pytest.approx(first.t + 0.3 + 0.2 + PARAMS.single_support, abs=2 * DT)


def test_a_crossing_that_ends_the_plan_restarts_the_standing_plan_from_the_measured_state():
    """``replan_crossed``: when a crossover step lands and no step follows, the plan from there on is
    :func:`~wbc.locomotion.plan_from_state` at the touchdown (its DCM the measured one, no steps);
    without it the recovery plan made before the step goes on (its DCM where that plan put it)."""
    after = {}
    for replan in (False, True):
        landed: list = []

        def first_after_landing(t, com, velocity, seq, landed=landed):
            if seq.touchdowns and not landed:
                landed.append((t, com, velocity, seq.timeline))

        offset = np.array([0.02, -0.03, 0.0])  # the measured CoM off the plan's while the crossing swings
        pushed_toward_the_right_foot(2.5, offset=offset, each=first_after_landing, replan_crossed=replan)
        after[replan] = landed[0]
    t_old, _, _, kept = after[False]
    assert kept.t0 < t_old and kept.steps, "the recovery plan goes on"
    t, com, velocity, fresh = after[True]
    assert fresh.t0 == pytest.approx(t) and not fresh.steps
    measured = dcm_of(com, velocity, fresh.omega)
    assert fresh.evaluate(t)["dcm"][0][0:2] == pytest.approx(measured[0:2], abs=1e-6), "from the measured DCM"
    assert np.linalg.norm(kept.evaluate(t)["dcm"][0][0:2] - measured[0:2]) > 0.02, "the old plan's is elsewhere"
