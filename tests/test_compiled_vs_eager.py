"""Compiled kernels (generated C) give the eager API's numbers to 1e-12: ABA, RNEA, CRBA and frame
Jacobians on Talos, every kernel kind on a random floating tree and on a tree with ball joints. A
handful of kernels only: compiling one costs seconds on Talos."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import wbc
from benchmarks import pinocchio_adapter as oracle
from tests.constraint_cases import random_constraints
from tests.helpers import (
    BALL_TREE_CASES,
    TOL_KERNEL,
    assert_close,
    ball_tree_case,
    compile_in,
    random_state,
    robot_case,
    tree_case,
)
from wbc.codegen import algorithm_functions as traced

RF = wbc.ReferenceFrame
N_STATES = 4


def _states(model, seed):
    rng = np.random.default_rng(seed)
    return [random_state(model, rng) for _ in range(N_STATES)]


@pytest.fixture(scope="module")
def talos():
    return robot_case("talos").model


def test_talos_aba_kernel(talos, kernel_dir):
    """The compiled ABA equals wbc.aba at random states (τ on every degree of freedom)."""
    kernel = compile_in(traced.aba_function(talos), kernel_dir)
    assert kernel.input_names == ["q", "v", "tau"] and kernel.output_names == ["qdd"]
    for q, v, _, tau in _states(talos, 40):
        qdd = kernel(q, v, tau)[0].copy()
        assert_close(qdd, wbc.aba(talos, q, v, tau), tol=TOL_KERNEL, what="ABA kernel")


def test_talos_rnea_kernel(talos, kernel_dir):
    """The compiled RNEA equals wbc.rnea at random states."""
    kernel = compile_in(traced.rnea_function(talos), kernel_dir)
    for q, v, a, _ in _states(talos, 41):
        assert_close(kernel(q, v, a)[0].copy(), wbc.rnea(talos, q, v, a), tol=TOL_KERNEL, what="RNEA kernel")


def test_talos_crba_kernel(talos, kernel_dir):
    """The compiled CRBA equals wbc.crba (a full symmetric (nv, nv) matrix) at random states."""
    kernel = compile_in(traced.crba_function(talos), kernel_dir)
    for q, _, _, _ in _states(talos, 42):
        M = kernel(q)[0].copy()
        assert M.shape == (talos.nv, talos.nv)
        np.testing.assert_array_equal(M, M.T)
        assert_close(M, wbc.crba(talos, q), tol=TOL_KERNEL, what="CRBA kernel")


def test_talos_frame_jacobians_kernel(talos, kernel_dir):
    """The compiled Jacobians of the feet and hands (LOCAL_WORLD_ALIGNED) equal wbc.frame_jacobian."""
    spec = robot_case("talos").spec
    frames = list(spec.feet + spec.hands)
    kernel = compile_in(traced.frame_jacobians_function(talos, frames, RF.LOCAL_WORLD_ALIGNED), kernel_dir)
    for q, _, _, _ in _states(talos, 43)[:2]:
        out = [J.copy() for J in kernel(q)]
        assert len(out) == len(frames)
        for name, J in zip(frames, out):
            assert_close(
                J,
                wbc.frame_jacobian(talos, q, name, RF.LOCAL_WORLD_ALIGNED),
                tol=TOL_KERNEL,
                what=f"Jacobian kernel, {name}",
            )


def test_kernel_outputs_are_reused_buffers(talos, kernel_dir):
    """A kernel returns its own buffers: the next call overwrites them (hence the copies above)."""
    kernel = compile_in(traced.rnea_function(talos), kernel_dir)
    (q, v, a, _), (q2, v2, a2, _) = _states(talos, 44)[:2]
    first = kernel(q, v, a)[0]
    kept = first.copy()
    second = kernel(q2, v2, a2)[0]
    assert second is first
    assert not np.allclose(first, kept)


def test_random_tree_kernels(kernel_dir):
    """On a random floating tree with every joint type, the ABA, RNEA, CRBA, nonlinear-effects and
    Jacobian kernels (all three reference frames) equal the eager API."""
    m = tree_case(2, 12, True).model
    frames = [f.name for f in m.frames[1::4]]
    aba = compile_in(traced.aba_function(m), kernel_dir)
    rnea = compile_in(traced.rnea_function(m), kernel_dir)
    crba = compile_in(traced.crba_function(m), kernel_dir)
    nle = compile_in(traced.nonlinear_effects_function(m), kernel_dir)
    jacs = {ref: compile_in(traced.frame_jacobians_function(m, frames, ref), kernel_dir) for ref in RF}
    for q, v, a, tau in _states(m, 45):
        assert_close(aba(q, v, tau)[0].copy(), wbc.aba(m, q, v, tau), tol=TOL_KERNEL, what="ABA")
        assert_close(rnea(q, v, a)[0].copy(), wbc.rnea(m, q, v, a), tol=TOL_KERNEL, what="RNEA")
        assert_close(crba(q)[0].copy(), wbc.crba(m, q), tol=TOL_KERNEL, what="CRBA")
        assert_close(nle(q, v)[0].copy(), wbc.nonlinear_effects(m, q, v), tol=TOL_KERNEL, what="h")
        for ref, kernel in jacs.items():
            for name, J in zip(frames, kernel(q)):
                assert_close(
                    J.copy(), wbc.frame_jacobian(m, q, name, ref), tol=TOL_KERNEL, what=f"Jacobian {ref.name} {name}"
                )


def test_ball_joint_tree_kernels(kernel_dir):
    """On a floating tree with ball joints (quaternion inputs, three-DoF blocks), every kernel kind
    (ABA, RNEA, CRBA, h, Jacobians in the three frames, PV-OSIMr Delassus, IIM, the combined
    ``(a0, Bhat)``) equals the eager API to 1e-12, and Pinocchio to 1e-9."""
    case = ball_tree_case(*BALL_TREE_CASES[1])
    m, pm = case.model, case.pin_model
    pd = pm.createData()
    frames = [f.name for f in m.frames[1::4]]
    constraints = random_constraints(m, np.random.default_rng(46))
    aba = compile_in(traced.aba_function(m), kernel_dir)
    rnea = compile_in(traced.rnea_function(m), kernel_dir)
    crba = compile_in(traced.crba_function(m), kernel_dir)
    nle = compile_in(traced.nonlinear_effects_function(m), kernel_dir)
    jacs = {ref: compile_in(traced.frame_jacobians_function(m, frames, ref), kernel_dir) for ref in RF}
    delassus = compile_in(traced.delassus_function(m, constraints), kernel_dir)
    bhat = compile_in(traced.input_matrix_function(m, constraints), kernel_dir)
    both = compile_in(traced.free_acceleration_and_input_matrix_function(m, constraints), kernel_dir)
    for q, v, a, tau in _states(m, 47):
        qdd = aba(q, v, tau)[0].copy()
        assert_close(qdd, wbc.aba(m, q, v, tau), tol=TOL_KERNEL, what="ABA")
        assert_close(qdd, pin.aba(pm, pd, q, v, tau), what="ABA vs Pinocchio")
        assert_close(rnea(q, v, a)[0].copy(), wbc.rnea(m, q, v, a), tol=TOL_KERNEL, what="RNEA")
        M = crba(q)[0].copy()
        assert_close(M, wbc.crba(m, q), tol=TOL_KERNEL, what="CRBA")
        assert_close(M, oracle.symmetrized(pin.crba(pm, pd, q)), what="CRBA vs Pinocchio")
        assert_close(nle(q, v)[0].copy(), wbc.nonlinear_effects(m, q, v), tol=TOL_KERNEL, what="h")
        for ref, kernel in jacs.items():
            for name, J in zip(frames, kernel(q)):
                assert_close(
                    J.copy(), wbc.frame_jacobian(m, q, name, ref), tol=TOL_KERNEL, what=f"Jacobian {ref.name} {name}"
                )
        J = oracle.constraint_jacobian(pm, q, constraints)
        Minv = oracle.minverse(pm, q)
        D = delassus(q)[0].copy()
        assert_close(D, wbc.delassus(m, q, constraints), tol=TOL_KERNEL, what="Delassus")
        assert_close(D, J @ Minv @ J.T, what="Delassus vs Pinocchio")
        B = bhat(q)[0].copy()
        assert_close(B, wbc.inertia_weighted_input_matrix(m, q, constraints), tol=TOL_KERNEL, what="IIM")
        assert_close(B, Minv @ np.hstack([m.actuation_matrix(), J.T]), what="IIM vs Pinocchio")
        a0, B2 = (x.copy() for x in both(q, v))
        assert_close(a0.reshape(-1), wbc.free_acceleration(m, q, v), tol=TOL_KERNEL, what="a0")
        assert_close(B2, B, tol=TOL_KERNEL, what="combined kernel's Bhat")


def test_kernel_rejects_wrong_number_of_inputs(kernel_dir):
    """Calling a kernel with the wrong number of arguments is a TypeError naming its inputs."""
    m = tree_case(1, 6, False).model
    kernel = compile_in(traced.aba_function(m), kernel_dir)
    with pytest.raises(TypeError, match="tau"):
        kernel(np.zeros(m.nq), np.zeros(m.nv))
