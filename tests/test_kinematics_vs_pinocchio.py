"""Frame kinematics against Pinocchio at 20 random states per robot: placements, Jacobians in the
three reference frames, spatial velocities and classical-acceleration drifts; then internal
cross-checks of Jacobians and drifts against finite differences along ``wbc.integrate``."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.helpers import (
    BALL_TREE_CASES,
    assert_close,
    ball_tree_case,
    oracle_cases,
    random_state,
    random_states,
    tree_case,
)

N_STATES = 20
RF = wbc.ReferenceFrame
oracle.REFERENCE = {RF.LOCAL: pin.LOCAL, RF.WORLD: pin.WORLD, RF.LOCAL_WORLD_ALIGNED: pin.LOCAL_WORLD_ALIGNED}

# Catalog robots in their default base, plus a floating arm.
ROBOTS = [("talos", None), ("g1", None), ("g1_with_hands", None), ("panda", None), ("allegro", None), ("panda", True)]


def _robot_frames(case, n_random: int = 3) -> list[str]:
    """The catalog's feet, hands and fingertips plus a few frames drawn at random (seeded)."""
    spec = case.spec
    named = list(spec.feet + spec.hands + spec.fingertips)
    rng = np.random.default_rng(len(case.model.frames))
    others = [f.name for f in case.model.frames[1:] if f.name not in named]
    return named + [str(x) for x in rng.choice(others, size=n_random, replace=False)]


def _frames_per_state(frames: list[str], k: int, i: int) -> list[str]:
    """``k`` frames for state ``i``, cycling so that the states cover every frame."""
    return [frames[(k * i + j) % len(frames)] for j in range(k)]


def _check_frames(case, frames: list[str], per_state: int, seed: int) -> None:
    m, pm = case.model, case.pin_model
    pd = pm.createData()
    for i, (state, (q, v, _, _)) in enumerate(random_states(case, np.random.default_rng(seed), N_STATES)):
        pin.computeJointJacobians(pm, pd, q)
        pin.forwardKinematics(pm, pd, q, v, 0 * v)
        pin.updateFramePlacements(pm, pd)
        for name in _frames_per_state(frames, per_state, i):
            fid = case.pin_frame(name)
            where = f"{state} frame {name!r}"
            assert_close(wbc.eager.frame_placement(m, q, name), pd.oMf[fid].homogeneous, what=f"{where} placement")
            ref = list(RF)[i % 3]  # velocities: one reference per state (J v = velocity is checked below)
            assert_close(
                wbc.eager.frame_velocity(m, q, v, name, ref),
                pin.getFrameVelocity(pm, pd, fid, oracle.REFERENCE[ref]).vector,
                what=f"{where} velocity {ref.name}",
            )
            for ref, pref in oracle.REFERENCE.items():
                assert_close(
                    wbc.eager.frame_jacobian(m, q, name, ref),
                    pin.getFrameJacobian(pm, pd, fid, pref),
                    what=f"{where} Jacobian {ref.name}",
                )
                assert_close(
                    wbc.eager.frame_drift(m, q, v, name, ref),
                    pin.getFrameClassicalAcceleration(pm, pd, fid, pref).vector,
                    what=f"{where} drift {ref.name}",
                )


@pytest.mark.parametrize("build,seed", oracle_cases(ROBOTS, catalog_seed=10, tree_seed_offset=0))
def test_frames_vs_pinocchio(build, seed):
    """Placements, Jacobians, velocities and drifts (LOCAL, WORLD, LOCAL_WORLD_ALIGNED) equal
    Pinocchio's to 1e-9 at 20 random states (2 frames per state, cycling): on catalog robots the
    feet, hands, fingertips and random frames; on random trees (every joint type, unaligned axes)
    and trees with ball joints (``JointModelSpherical``) (nearly) all frames."""
    case = build()
    frames = _robot_frames(case) if case.spec is not None else [f.name for f in case.model.frames]
    _check_frames(case, frames, per_state=2, seed=seed)


# ----------------------------------------------------------------------------- finite differences
def _tree_for_fd():
    return tree_case(4, 10, True)


def _fd_models():
    """The finite-difference trees: a floating random tree and one with ball joints."""
    return [_tree_for_fd().model, ball_tree_case(*BALL_TREE_CASES[1]).model]


def test_jacobians_vs_finite_differences():
    """Every frame's LOCAL_WORLD_ALIGNED Jacobian column k equals the central difference of the frame
    placement along ``integrate(q, ±ε e_k)`` (position: dp/dε, rotation: log(R₊R₋ᵀ)/2ε); the LOCAL and
    WORLD Jacobians are its change of frame. Central differences are exact to O(ε²) (measured 3e-11)."""
    for m in _fd_models():
        _check_jacobians_by_finite_differences(m)


def _check_jacobians_by_finite_differences(m) -> None:
    rng = np.random.default_rng(5)
    eps = 1e-5
    for _ in range(3):
        q = wbc.random_configuration(m, rng)
        steps = []
        for k in range(m.nv):
            e = np.zeros(m.nv)
            e[k] = eps
            steps.append((wbc.integrate(m, q, e), wbc.integrate(m, q, -e)))
        for f in m.frames[1::2]:
            J = wbc.eager.frame_jacobian(m, q, f.name, RF.LOCAL_WORLD_ALIGNED)
            fd = np.zeros((6, m.nv))
            for k, (qp, qm) in enumerate(steps):
                Tp, Tm = wbc.eager.frame_placement(m, qp, f.name), wbc.eager.frame_placement(m, qm, f.name)
                fd[0:3, k] = (Tp[0:3, 3] - Tm[0:3, 3]) / (2 * eps)
                fd[3:6, k] = pin.log3(Tp[0:3, 0:3] @ Tm[0:3, 0:3].T) / (2 * eps)
            assert_close(J, fd, tol=1e-9, what=f"LWA Jacobian of {f.name} vs finite differences")
            T = wbc.eager.frame_placement(m, q, f.name)
            R, p = T[0:3, 0:3], T[0:3, 3]
            local = wbc.eager.frame_jacobian(m, q, f.name, RF.LOCAL)
            assert_close(local, np.vstack([R.T @ J[0:3], R.T @ J[3:6]]), tol=1e-12, what=f"LOCAL of {f.name}")
            world = wbc.eager.frame_jacobian(m, q, f.name, RF.WORLD)
            assert_close(
                world, np.vstack([J[0:3] + np.cross(p, J[3:6], axis=0), J[3:6]]), tol=1e-12, what=f"WORLD of {f.name}"
            )


def test_velocity_is_jacobian_times_v():
    """frame_velocity(q, v) = J(q) v in every reference frame (a check independent of Pinocchio)."""
    m = _tree_for_fd().model
    rng = np.random.default_rng(6)
    q, v, _, _ = random_state(m, rng)
    for f in m.frames[::3]:
        for ref in RF:
            assert_close(
                wbc.eager.frame_velocity(m, q, v, f.name, ref),
                wbc.eager.frame_jacobian(m, q, f.name, ref) @ v,
                tol=1e-12,
                what=f"{f.name} {ref.name}",
            )


def test_drift_vs_finite_differences():
    """The LOCAL_WORLD_ALIGNED drift J̇v is the time derivative of the frame's (origin velocity, angular
    velocity) along the zero-acceleration motion q(t) = integrate(q, v t) (central differences, O(h²))."""
    rng = np.random.default_rng(7)
    h = 1e-5
    for m in _fd_models():
        for _ in range(2):
            q, v, _, _ = random_state(m, rng)
            qp, qm = wbc.integrate(m, q, v, h), wbc.integrate(m, q, v, -h)
            for f in m.frames[2::3]:
                ref = RF.LOCAL_WORLD_ALIGNED
                fd = (
                    wbc.eager.frame_velocity(m, qp, v, f.name, ref) - wbc.eager.frame_velocity(m, qm, v, f.name, ref)
                ) / (2 * h)
                assert_close(
                    wbc.eager.frame_drift(m, q, v, f.name, ref), fd, tol=1e-8, what=f"{m.name} drift of {f.name}"
                )


def test_com_jacobian_vs_finite_differences():
    """The CoM Jacobian's column k is the central difference of the CoM along integrate(q, ±ε e_k)."""
    for m in [tree_case(4, 10, fb).model for fb in (True, False)] + [ball_tree_case(*BALL_TREE_CASES[0]).model]:
        q = wbc.random_configuration(m, np.random.default_rng(8))
        eps = 1e-5
        fd = np.zeros((3, m.nv))
        for k in range(m.nv):
            e = np.zeros(m.nv)
            e[k] = eps
            fd[:, k] = (
                wbc.eager.center_of_mass(m, wbc.integrate(m, q, e))
                - wbc.eager.center_of_mass(m, wbc.integrate(m, q, -e))
            ) / (2 * eps)
        assert_close(wbc.eager.com_jacobian(m, q), fd, tol=1e-9, what=f"CoM Jacobian of {m.name}")
