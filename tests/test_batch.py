"""Batched kernels (:class:`wbc.codegen.BatchKernel`): a batched call equals N single calls bit for bit.

The oracle is the kernel itself, called once per state (whose agreement with Pinocchio the dynamics
tests establish); the batch must reproduce it exactly, with any thread count, shared (unbatched)
inputs, matrix inputs and outputs, and through the CasADi ``map`` fallback.
"""

from __future__ import annotations

import functools
import warnings

import casadi as ca
import numpy as np
import pytest

import wbc
from tests.helpers import compile_in, robot_case
from wbc import tasks
from wbc.codegen import BatchKernel, Kernel, trace
from wbc.codegen import algorithm_functions as traced
from wbc.errors import InputError, WbcPerformanceWarning

N = 23  # not a multiple of the thread counts: uneven chunks


def states(model: wbc.Model, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    q = np.array([wbc.random_configuration(model, rng) for _ in range(n)])
    return q, rng.normal(size=(n, model.nv)), 10.0 * rng.normal(size=(n, model.nv))


def single_calls(kernel: Kernel, *args: np.ndarray) -> list[np.ndarray]:
    """Each output stacked over the states, from one ``kernel(...)`` call per state."""
    n = args[0].shape[0]
    rows = [[np.array(o) for o in kernel(*(a[i] for a in args))] for i in range(n)]
    return [np.stack([r[k] for r in rows]) for k in range(len(rows[0]))]


@functools.cache
def talos():
    return robot_case("talos")


@pytest.fixture(scope="module")
def talos_kernels(kernel_dir):
    model = talos().model
    return {
        "aba": compile_in(traced.aba_function(model), kernel_dir),
        "rnea": compile_in(traced.rnea_function(model), kernel_dir),
        "crba": compile_in(traced.crba_function(model), kernel_dir),
    }


@pytest.mark.parametrize("threads", [1, 2, 5])
@pytest.mark.parametrize("quantity", ["aba", "rnea"])
def test_batched_dynamics_equal_single_calls_bitwise(talos_kernels, quantity, threads):
    kernel = talos_kernels[quantity]
    q, v, x = states(talos().model, N)
    batch = BatchKernel(kernel, threads=threads)
    assert batch.backend == "c-threads"
    (got,) = batch(q, v, x)
    (want,) = single_calls(kernel, q, v, x)
    assert got.shape == (N, talos().model.nv)
    np.testing.assert_array_equal(got, want)


def test_batched_matrix_output_equals_single_calls(talos_kernels):
    """CRBA's (nv, nv) output: each state's matrix, as the single call returns it."""
    kernel = talos_kernels["crba"]
    q, _, _ = states(talos().model, N, seed=1)
    (got,) = BatchKernel(kernel, threads=2)(q)
    (want,) = single_calls(kernel, q)
    nv = talos().model.nv
    assert got.shape == (N, nv, nv)
    np.testing.assert_array_equal(got, want)


def test_shared_inputs_and_out_arrays(talos_kernels):
    """An input given without the batch axis is shared by every state; ``out=`` is written in place."""
    kernel = talos_kernels["rnea"]
    model = talos().model
    q, v, _ = states(model, N, seed=2)
    a = np.linspace(-1.0, 1.0, model.nv)
    batch = BatchKernel(kernel, threads=2)
    out = np.full((N, model.nv), np.nan)
    (got,) = batch(q, v, a, out=[out])
    assert got is out
    (want,) = single_calls(kernel, q, v, np.broadcast_to(a, (N, model.nv)))
    np.testing.assert_array_equal(out, want)


def test_controller_kernel_batched_equals_single_calls():
    """The controller's kernel (task rows, contact rows, B̂, ...) over a batch of states, with its
    bound parameter inputs (gains, targets, contact placements) shared by every state."""
    case = talos()
    spec, model = case.spec, case.model
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=0.5, kp=10.0) for f in spec.feet]
    com = tasks.CoMTask(weight=1.0, kp=20.0)
    com.set_target_from_configuration(model, spec.q0)
    posture = tasks.PostureTask(model, weight=1e-3, kp=10.0)
    ctrl = wbc.WholeBodyController(model, [com, posture], contacts)
    ctrl.step(spec.q0, np.zeros(model.nv))  # contact placements set
    kernel = ctrl.kernel
    assert kernel is not None
    q, v, _ = states(model, 7, seed=3)
    parameters = [np.array(p) for p in kernel.inputs[2:]]
    before = [np.array(p) for p in kernel.inputs]
    got = BatchKernel(kernel, threads=2)(q, v, *parameters)
    for p, b in zip(kernel.inputs, before):  # the controller's own buffers are left alone
        np.testing.assert_array_equal(p, b)
    reference = Kernel(kernel.function, kernel.function, "c", kernel.library, n_instructions=0)  # own buffers
    for i in range(q.shape[0]):
        single = reference(q[i], v[i], *parameters)
        for k, (g, s) in enumerate(zip(got, single)):
            np.testing.assert_array_equal(g[i].reshape(-1, order="F"), s.reshape(-1, order="F"), err_msg=f"output {k}")


def matrix_function() -> ca.Function:
    """A small function with a matrix input and a matrix output: ``(A (3, 2), x (2,)) -> (A x, A Aᵀ sin)``."""
    return trace(
        "batch_matrix_probe",
        [("A", (3, 2)), ("x", 2)],
        lambda A, x: [A @ x, ca.sin(A @ A.T)],
        [("y", 3), ("S", (3, 3))],
    )


def test_matrix_inputs_compiled_and_map_fallback(kernel_dir):
    """Matrix inputs are read as (N, rows, cols); the CasADi map fallback (a kernel in the VM)
    gives the same numbers as the C driver, bit for bit (the split C writer reproduces the VM's
    operations exactly)."""
    function = matrix_function()
    kernel = compile_in(function, kernel_dir)
    rng = np.random.default_rng(4)
    A, x = rng.normal(size=(N, 3, 2)), rng.normal(size=(N, 2))
    y, S = BatchKernel(kernel, threads=3)(A, x)
    want_y, want_S = single_calls(kernel, A, x)
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(S, want_S)
    np.testing.assert_allclose(y, np.einsum("nij,nj->ni", A, x), rtol=1e-14, atol=1e-14)
    vm = Kernel(function, function, "sx-vm")
    with pytest.warns(WbcPerformanceWarning, match="Function.map"):
        fallback = BatchKernel(vm, threads=2)
    assert fallback.backend == "casadi-map"
    y2, S2 = fallback(A, x[0])  # x shared
    want_y2, want_S2 = single_calls(kernel, A, np.broadcast_to(x[0], (N, 2)))
    np.testing.assert_array_equal(y2, want_y2)
    np.testing.assert_array_equal(S2, want_S2)


def test_bad_batches_are_clear_errors(talos_kernels):
    kernel = talos_kernels["aba"]
    model = talos().model
    q, v, tau = states(model, 4)
    batch = BatchKernel(kernel, threads=2)
    with pytest.raises(InputError, match=r"input 'v' must be \(N, \*\(38,\)\)"):
        batch(q, v[:, :5], tau)
    with pytest.raises(InputError, match="3 states where the earlier inputs have 4"):
        batch(q, v[:3], tau)
    with pytest.raises(InputError, match="no input has a batch axis"):
        batch(q[0], v[0], tau[0])
    with pytest.raises(InputError, match="not real numbers"):
        batch(q, v, [["a"] * model.nv] * 4)
    with pytest.raises(TypeError, match="takes 3 inputs"):
        batch(q, v)
    with pytest.raises(InputError, match="out\\[0\\]"):
        batch(q, v, tau, out=[np.zeros((3, model.nv))])
    with pytest.raises(InputError, match="threads must be a positive integer"):
        batch(q, v, tau, threads=0)
    with pytest.raises(InputError, match=r"takes a wbc\.codegen\.Kernel"):
        BatchKernel(kernel.function)  # type: ignore[arg-type]
    (empty,) = batch(q[:0], v[:0], tau[:0])
    assert empty.shape == (0, model.nv)


def test_no_warning_on_the_compiled_path(talos_kernels):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BatchKernel(talos_kernels["aba"])
