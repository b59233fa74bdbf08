"""The per-call path of the compiled numeric API (``wbc/codegen/numeric_call.c``) and the first calls
answered by CasADi's virtual machine while the kernel compiles in the background
(:mod:`wbc.codegen.background`).

- A compiled kernel is called in one C call (a builtin function); anything unusual (lists, other
  dtypes, strides, C-ordered matrices, wrong shapes, NaN, a quaternion off the unit sphere, an
  overflow) takes the slow path and gives the eager API's answer or error.
- First calls: the virtual machine answers at once, the compiled kernel replaces it, bit for bit
  the same numbers; one compile per kernel however many models or threads ask; a failed compile
  warns and the virtual machine keeps answering; ``WBC_BACKGROUND_COMPILE=0`` compiles at once.
"""

from __future__ import annotations

import ctypes
import subprocess
import threading
import warnings
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

import wbc
from tests.helpers import TOL_KERNEL, aba_states, assert_close, close_to_1e12, thread_mismatches
from wbc.codegen import background, builtins, calls, model_kernels
from wbc.codegen.cache import find_compiler
from wbc.control import target_call
from wbc.errors import CompileError
from wbc.robots import synthetic

pytestmark = pytest.mark.usefixtures("no_compile_in_flight")  # (conftest: tests that set WBC_CC)

needs_compiler = pytest.mark.skipif(find_compiler() is None, reason="no C compiler")


def _compiled(call) -> bool:
    return calls.compiled_path(call) and calls.kernel_of(call).backend == "c"


@pytest.fixture
def floating():
    """A floating chain, its kernels compiled (the background compiles finished)."""
    model = synthetic.chain(4, floating_base=True)
    q = wbc.random_configuration(model, np.random.default_rng(5))
    v = np.random.default_rng(6).normal(size=model.nv)
    wbc.aba(model, q, v, v)
    wbc.frame_jacobian(model, q, model.frames[-1].name)
    frame = model.frames[-1].name
    wbc.rnea(model, q, v, v, {frame: np.ones(6), 1: np.ones(6)})
    background.wait()
    return model, q, v


@needs_compiler
def test_compiled_kernels_take_one_c_call(floating):
    model = floating[0]
    kernels = model_kernels.kernels_of(model)
    assert _compiled(kernels.aba)
    assert all(_compiled(c) for c in kernels.frames.values())
    assert kernels.forces and all(_compiled(c) for c in kernels.forces.values())


@needs_compiler
def test_unusual_arguments_are_converted_or_refused_like_the_eager_api(floating):
    model, q, v = floating
    expected = wbc.eager.aba(model, q, v, v)
    assert_close(wbc.aba(model, q, v, v), expected, TOL_KERNEL)
    wide = np.zeros((2, model.nv))
    wide[0] = v
    for args in (
        (list(q), v.tolist(), v),  # lists
        (q, v[:, None], v[None, :]),  # a column and a row: flattened
        (q, wide[0], wide[0]),  # a row of a matrix: contiguous
        (q, np.repeat(v, 2)[::2], v),  # strided
        (np.asfortranarray(q), v, v),
    ):
        assert_close(wbc.aba(model, *args), wbc.eager.aba(model, *args), TOL_KERNEL)
    assert_close(wbc.aba(model, q, v.astype(np.float32), v), wbc.eager.aba(model, q, v.astype(np.float32), v), 1e-6)
    assert_close(wbc.aba(model, q, np.zeros(model.nv, dtype=int), v), wbc.eager.aba(model, q, 0 * v, v), TOL_KERNEL)
    for bad, match in (
        ((q[:-1], v, v), r"q must have shape|q has"),
        ((q, np.zeros((2, model.nv)), v), r"v must have shape"),
        ((q, v, np.full(model.nv, np.nan)), r"tau has non-finite entries"),
        ((q, v, "tau"), r"tau"),
    ):
        with pytest.raises(wbc.InputError, match=match):
            wbc.aba(model, *bad)
    off = q.copy()
    off[3:7] *= 2.0
    with pytest.raises(wbc.InputError, match="norm 2"):
        wbc.aba(model, off, v, v)


@needs_compiler
def test_an_overflowing_but_finite_input_is_computed(floating):
    model, q, v = floating
    tau = np.full(model.nv, 1e200)
    assert_close(wbc.aba(model, q, v, tau), wbc.eager.aba(model, q, v, tau), TOL_KERNEL)


def test_external_forces_one_kernel_per_frame_set(floating):
    """Up to MAX_WRENCHES frames: the wrenches are the kernel's inputs (a non-finite one is named);
    beyond, they are mapped to body forces for a (6, njoints) matrix input (column-major on the
    C path, a C-ordered one converted)."""
    model, q, v = floating
    rng = np.random.default_rng(8)
    names = [f.name for f in model.frames]
    few = {names[-1]: rng.normal(size=6), names[2]: rng.normal(size=6).tolist()}
    many = {name: rng.normal(size=6) for name in names[: model_kernels.MAX_WRENCHES + 1]}
    for fext in (few, many, {len(names) - 1: few[names[-1]]}):
        assert_close(wbc.rnea(model, q, v, v, fext), wbc.eager.rnea(model, q, v, v, fext), TOL_KERNEL)
        assert_close(wbc.aba(model, q, v, v, fext), wbc.eager.aba(model, q, v, v, fext), TOL_KERNEL)
    kernels = model_kernels.kernels_of(model)
    assert ("rnea", names[-1], names[2]) in kernels.forces
    with pytest.raises(wbc.InputError, match=rf"fext\['{names[2]}'\] has non-finite"):
        wbc.rnea(model, q, v, v, {names[-1]: np.zeros(6), names[2]: np.full(6, np.nan)})
    with pytest.raises(wbc.InputError, match=rf"fext\['{names[3]}'\] has non-finite"):
        wbc.aba(model, q, v, v, {**many, names[3]: np.full(6, np.inf)})
    with pytest.raises(wbc.InputError, match=r"fext\['.*'\] must have shape \(6,\)"):
        wbc.rnea(model, q, v, v, {names[-1]: np.zeros(5)})
    with pytest.raises(wbc.FrameError):
        wbc.rnea(model, q, v, v, {"no such frame": np.zeros(6)})
    with pytest.raises(wbc.InputError, match="mapping"):
        wbc.rnea(model, q, v, v, [np.zeros(6)])
    background.wait()
    call = kernels.function("rnea_fext")
    F = kernels.body_forces(many)
    want = call(q, v, v, F)
    np.testing.assert_array_equal(call(q, v, v, np.ascontiguousarray(F)), want)


@needs_compiler
def test_results_are_new_arrays_in_the_kernels_layout(floating):
    model, q, _ = floating
    frame = model.frames[-1].name
    a = wbc.frame_jacobian(model, q, frame)
    b = wbc.frame_jacobian(model, q, frame)
    assert a is not b and not np.shares_memory(a, b)
    a[:] = 0.0
    assert np.any(wbc.frame_jacobian(model, q, frame) != 0.0)
    assert b.shape == (6, model.nv) and b.dtype == np.float64


@needs_compiler
def test_threads_get_their_own_large_results():
    """A result of more than 500 entries: numpy's own copy of it would release the GIL, and another
    thread's call would overwrite the output half-copied; the C call fills a new array instead."""
    model = synthetic.chain(40)  # crba: 1600 entries
    rng = np.random.default_rng(8)
    qs = [wbc.random_configuration(model, rng) for _ in range(4)]
    wbc.crba(model, qs[0])
    assert background.wait(120)
    assert _compiled(model_kernels.kernels_of(model).crba)
    expected = [wbc.crba(model, q) for q in qs]
    wrong = thread_mismatches(lambda q: wbc.crba(model, q), [(q,) for q in qs], expected, 5000, np.array_equal)
    assert not wrong, f"{len(wrong)} results of other threads' calls"


@needs_compiler
@pytest.mark.parametrize(
    ("package", "source", "definition", "size_symbol", "layout"),
    [
        ("wbc.codegen", "numeric_call.c", "wbc_numeric_definition", "wbc_numeric_call_size", calls._CallData),
        ("wbc.control", "target_call.c", "wbc_target_definition", "wbc_target_size", target_call._TargetData),
    ],
)
def test_the_c_sources_compile_without_warnings(tmp_path, package, source, definition, size_symbol, layout):
    """The hand-written C under ``-Wall -Wextra -Werror``, with the data layout the Python side expects."""
    path = resources.files(package).joinpath(source)
    header = Path(str(resources.files("wbc.codegen").joinpath(builtins.STABLE_ABI_HEADER)))
    out = tmp_path / "routine.so"
    run = subprocess.run(
        [
            find_compiler(),
            *builtins.FLAGS,
            "-Wall",
            "-Wextra",
            "-Werror",
            f"-I{header.parent}",
            str(path),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert builtins.load(out, (definition,), size_symbol, ctypes.sizeof(layout))[0] != 0


# ------------------------------------------------------------------------------ background compiles
@needs_compiler
def test_first_calls_answer_from_the_virtual_machine_then_the_compiled_kernel(tmp_path, monkeypatch):
    monkeypatch.setenv("WBC_CACHE_DIR", str(tmp_path))
    gate = threading.Event()
    build = model_kernels.build_indexed
    built = []

    def slow_build(*args, **kwargs):
        gate.wait(60)
        built.append(args[0])
        return build(*args, **kwargs)

    monkeypatch.setattr(model_kernels, "build_indexed", slow_build)
    model = synthetic.chain(5)
    twin = synthetic.chain(5)  # another object, the same model: the same kernel
    q = wbc.random_configuration(model, np.random.default_rng(1))
    early = wbc.crba(model, q)
    kernels = model_kernels.kernels_of(model)
    assert calls.kernel_of(kernels.crba).backend == "sx-vm"
    assert_close(early, wbc.eager.crba(model, q), TOL_KERNEL)
    np.testing.assert_array_equal(wbc.crba(twin, q), early)
    gate.set()
    assert background.wait(120)
    assert built == ["numeric_crba"]  # once for both models
    assert _compiled(kernels.crba) and _compiled(model_kernels.kernels_of(twin).crba)
    np.testing.assert_array_equal(wbc.crba(model, q), early)  # bit for bit


@needs_compiler
def test_threads_calling_while_the_kernel_is_swapped_in_get_their_own_results(tmp_path, monkeypatch):
    monkeypatch.setenv("WBC_CACHE_DIR", str(tmp_path))
    model = synthetic.chain(6)
    states = aba_states(model, seed=3)
    expected = [wbc.eager.aba(model, *s) for s in states]
    first = wbc.aba(model, *states[0])  # the virtual machine; the compile starts
    wrong = thread_mismatches(lambda *s: wbc.aba(model, *s), states, expected, 400, close_to_1e12)
    assert background.wait(120)
    assert not wrong
    np.testing.assert_array_equal(wbc.aba(model, *states[0]), first)


@needs_compiler
def test_a_failed_background_compile_warns_and_the_virtual_machine_keeps_answering(tmp_path, monkeypatch):
    monkeypatch.setenv("WBC_CACHE_DIR", str(tmp_path))

    def broken(*args, **kwargs):
        raise CompileError("broken on purpose")

    monkeypatch.setattr(model_kernels, "build_indexed", broken)
    model = synthetic.chain(3)
    q = wbc.random_configuration(model, np.random.default_rng(4))
    with pytest.warns(wbc.WbcPerformanceWarning, match="broken on purpose"):
        wbc.com_jacobian(model, q)
        assert background.wait(60)
    assert calls.kernel_of(model_kernels.kernels_of(model).com_jacobian).backend == "sx-vm"
    assert_close(wbc.com_jacobian(model, q), wbc.eager.com_jacobian(model, q), TOL_KERNEL)


@needs_compiler
def test_background_compiles_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("WBC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("WBC_BACKGROUND_COMPILE", "0")
    model = synthetic.chain(3)
    wbc.center_of_mass(model, wbc.neutral(model))
    assert background.pending() == 0
    assert _compiled(model_kernels.kernels_of(model).center_of_mass)


def test_without_a_compiler_the_virtual_machine_answers(tmp_path, monkeypatch):
    monkeypatch.setenv("WBC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("WBC_CC", "")
    model = synthetic.chain(3)
    q = wbc.neutral(model)
    with warnings.catch_warnings():  # a performance warning, once per process
        warnings.simplefilter("ignore", wbc.WbcPerformanceWarning)
        got = wbc.com_velocity(model, q, np.ones(model.nv))
    assert background.pending() == 0
    call = model_kernels.kernels_of(model).com_velocity
    assert not calls.compiled_path(call) and calls.kernel_of(call).backend == "sx-vm"
    assert_close(got, wbc.eager.com_velocity(model, q, np.ones(model.nv)), TOL_KERNEL)


def test_the_worker_runs_jobs_once_and_in_order():
    worker = background._Worker()
    order, done = [], []
    gate = threading.Event()

    def job(name):
        def build():
            gate.wait(30)
            order.append(name)
            return name

        return build

    worker.submit("a", job("a"), done.append, "a")
    worker.submit("b", job("b"), done.append, "b")
    worker.submit("a", job("a again"), done.append, "a")  # queued or running: not built again
    gate.set()
    assert worker.wait(30)
    assert order == ["a", "b"]
    assert sorted(done) == ["a", "a", "b"]
    assert worker.pending() == 0


def test_a_forked_child_restarts_the_jobs_it_inherited():
    worker = background._Worker()
    job = background._Job("k", lambda: "built", lambda kernel: None, "k")
    worker.queue.append(job)  # queued, never started here
    worker.after_fork()
    assert worker.wait(30)
    assert worker.pending() == 0
