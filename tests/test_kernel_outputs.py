"""Kernel outputs (issue 27): structural zeros, ``out=`` on the numeric dynamics, hot kernels' flags.

wbc's C writer never writes an output entry that is the constant ``+0.0`` (the inertia matrix's
entries between bodies on different branches): every buffer a kernel writes starts zeroed. These
tests show the writes are gone, that every place wbc hands a kernel a buffer (the kernel's own,
the numeric API's fresh result arrays, a batch's new or ``out=`` arrays) still reads exact zeros
there, that results are never shared between calls, and that RNEA, CRBA and the nonlinear effects
are compiled with :data:`~wbc.codegen.HOT_FLAGS`. The numeric dynamics write into a caller's
``out=`` array on both call paths (one C call, Python), and refuse a bad one clearly.
"""

from __future__ import annotations

import pickle

import casadi as ca
import numpy as np
import pytest

import wbc
from wbc.codegen import HOT_FLAGS, BatchKernel, calls, compile_function, emit, model_kernels, trace
from wbc.codegen import algorithm_functions as traced
from wbc.codegen.cache import DEFAULT_FLAGS, find_compiler, flags_of
from wbc.robots import synthetic

needs_compiler = pytest.mark.skipif(find_compiler() is None, reason="no C compiler")


@pytest.fixture(scope="module")
def branched():
    """A floating stem with two branches per side (many structural zeros), its CRBA function and
    three random configurations."""
    model = synthetic.stem_with_branches(2, 2, branch_length=3, floating_base=True)
    rng = np.random.default_rng(27)
    return model, traced.crba_function(model), [wbc.random_configuration(model, rng) for _ in range(3)]


def _structural(model: wbc.Model, q_list) -> np.ndarray:
    """Where the eager inertia matrix is exactly zero at every configuration given."""
    return np.all([wbc.eager.crba(model, q) == 0.0 for q in q_list], axis=0)


def _pollute_heap(shape: tuple[int, ...]) -> None:
    """Allocate and free NaN-filled arrays of ``shape``: a result made by ``np.empty`` would reuse them."""
    for _ in range(50):
        a = np.full(shape, np.nan, order="F")
        del a


def test_constant_plus_zero_outputs_are_never_written():
    """Constant ``+0.0`` entries of a dense output get no store in the C text; other constants and
    computed entries do. (CasADi's SX keeps no ``-0.0`` constant: it reads as ``+0.0``.)"""
    x = ca.SX.sym("x", 2)
    out = ca.densify(ca.SX(3, 2))
    out[0, 0] = x[0] * x[1]
    out[1, 1] = ca.SX(-0.0)
    out[2, 1] = ca.SX(1.5)
    f = ca.Function("h27_zeros", [x], [out])
    assert emit.zero_outputs(f) == [[1, 2, 3, 4]]  # column-major: (1, 0), (2, 0), (0, 1), (1, 1)
    text = "".join(t for _, t in emit.split_source(f).files)
    written = sorted(int(line.split("][")[1].split("]")[0]) for line in text.splitlines() if "res[0][" in line)
    assert written == [0, 5]


@needs_compiler
def test_crba_kernel_skips_its_structural_zeros_and_reads_them_as_zeros(branched, kernel_dir):
    model, function, qs = branched
    structural = _structural(model, qs)
    skipped = emit.zero_outputs(function)[0]
    assert len(skipped) > model.nv  # pairs of joints on different branches
    assert structural.reshape(-1, order="F")[skipped].all()  # only entries that are always zero
    kernel = compile_function(function, directory=kernel_dir)
    for q in qs:
        (M,) = kernel(q)
        np.testing.assert_allclose(M, wbc.eager.crba(model, q), rtol=0, atol=1e-12)
        assert np.all(M[structural] == 0.0)
        dm = kernel.function(q).full()  # CasADi's own call (zeroed outputs) agrees
        assert np.array_equal(dm, M)


@needs_compiler
def test_batch_new_and_out_arrays_read_structural_zeros(branched, kernel_dir):
    model, function, qs = branched
    structural = _structural(model, qs)
    kernel = compile_function(function, directory=kernel_dir)
    batch = BatchKernel(kernel, threads=2)
    Q = np.array(qs)
    singles = np.array([np.array(kernel(q)[0]) for q in qs])
    _pollute_heap((len(qs), model.nv, model.nv))
    (new,) = batch(Q)
    assert np.array_equal(new, singles)
    out = np.swapaxes(np.full((len(qs), model.nv, model.nv), np.nan), 1, 2)  # column-major per state
    batch(Q, out=[out])
    assert np.array_equal(out, singles) and np.all(out[:, structural] == 0.0)


@needs_compiler
def test_numeric_crba_results_are_fresh_arrays_with_exact_zeros(branched, monkeypatch):
    monkeypatch.setenv("WBC_BACKGROUND_COMPILE", "0")  # the compiled call, not the VM's
    model, _, qs = branched
    structural = _structural(model, qs)
    results = []
    for q in qs:
        _pollute_heap((model.nv, model.nv))
        results.append(wbc.crba(model, q))
    for q, M in zip(qs, results):  # each still holds its own configuration's matrix
        np.testing.assert_allclose(M, wbc.eager.crba(model, q), rtol=0, atol=1e-12)
        assert np.all(M[structural] == 0.0)
    assert not any(np.shares_memory(a, b) for k, a in enumerate(results) for b in results[k + 1 :])
    results[0][:] = np.nan  # writing into a result changes no later one
    assert np.all(wbc.crba(model, qs[0])[structural] == 0.0)


def test_hot_functions_and_their_flags(branched):
    model, function, _ = branched
    assert HOT_FLAGS != DEFAULT_FLAGS and "-O2" in HOT_FLAGS
    assert function.hot and flags_of(function) == HOT_FLAGS
    for make in (traced.rnea_function, traced.nonlinear_effects_function, traced.aba_function, traced.crba_function):
        assert make(model).hot and flags_of(make(model)) == HOT_FLAGS
    assert all(model_kernels._TREE_FUNCTIONS[name].hot for name in ("rnea", "nonlinear_effects", "crba", "aba"))
    assert pickle.loads(pickle.dumps(function)).hot
    cold = trace("h27_cold", [("x", 2)], lambda x: [2 * x])
    assert not cold.hot and flags_of(cold) == DEFAULT_FLAGS


@pytest.mark.parametrize("compiled", [True, False], ids=["one-c-call", "python-path"])
def test_numeric_dynamics_write_into_out(branched, compiled, monkeypatch):
    """``out=`` gets the result (also over garbage), is returned, and stays the caller's: the next
    call without ``out=`` returns a new array; a bad ``out`` is an InputError saying what is wrong."""
    monkeypatch.setenv("WBC_BACKGROUND_COMPILE", "0")
    if not compiled:
        monkeypatch.setattr(calls, "_definition", lambda: None)  # the Python path (no C call)
    model = synthetic.stem_with_branches(2, 2, branch_length=3, floating_base=True)  # fresh kernels
    _, _, qs = branched
    rng = np.random.default_rng(3)
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    q = qs[0]
    assert calls.compiled_path(model_kernels.kernels_of(model).function("crba")) == (compiled and _has_cc())
    cases = [
        (wbc.crba, (q,), (model.nv, model.nv)),
        (wbc.rnea, (q, v, a), (model.nv,)),
        (wbc.aba, (q, v, a), (model.nv,)),
        (wbc.nonlinear_effects, (q, v), (model.nv,)),
        (wbc.free_acceleration, (q, v), (model.nv,)),
    ]
    for function, args, shape in cases:
        out = np.full(shape, np.nan, order="F")
        assert function(model, *args, out=out) is out
        expected = getattr(wbc.eager, function.__name__)(model, *args)
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
        fresh = function(model, *args)
        assert fresh is not out and not np.shares_memory(fresh, out)
        for bad, why in [
            (np.zeros(shape[::-1] + (1,)), "shape"),
            (np.zeros(shape, dtype=np.float32), "float64"),
            (np.zeros(shape, order="F").T if len(shape) == 2 else np.zeros(2 * shape[0])[::2], "Fortran-contiguous"),
            ([0.0] * shape[0], "numpy array"),
        ]:
            with pytest.raises(wbc.InputError, match=why):
                function(model, *args, out=bad)
    frame = model.frames[-1].name
    out = np.full(model.nv, np.nan)
    assert wbc.rnea(model, q, v, a, {frame: np.ones(6)}, out=out) is out
    np.testing.assert_allclose(out, wbc.rnea(model, q, v, a, {frame: np.ones(6)}), rtol=0, atol=0)


def _has_cc() -> bool:
    return find_compiler() is not None
