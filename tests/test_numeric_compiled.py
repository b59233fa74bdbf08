"""The compiled numeric API (``wbc.aba``, ...): every function equals its eager twin (``wbc.eager``)
to 1e-12 and Pinocchio to 1e-9, on Panda and Talos at a random configuration and on the G1 with
parallel ankles (clusters); kernels are memoized per model, bounded, freed with the model, found
on disk by a new process without tracing, and shared safely between threads.

The cases (arguments, Pinocchio's equivalent call) are the benchmark's (``benchmarks.numeric``), so
what is timed there is what is checked here.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import weakref

import numpy as np
import pytest

import wbc
from benchmarks import numeric as bench
from tests.helpers import TOL_KERNEL, TOL_PIN, aba_states, assert_close, close_to_1e12, thread_mismatches
from wbc.codegen import background, calls, model_kernels
from wbc.codegen.cache import find_compiler
from wbc.robots import clustered, synthetic


@pytest.fixture(scope="module", params=["panda", pytest.param("talos", marks=pytest.mark.slow)])
def tree_cases(request):
    return {c.function: c for c in bench.tree_cases(request.param, seed=7)}


def test_the_benchmark_times_every_function():
    assert {*bench.TREE_FUNCTIONS, *bench.CLUSTER_FUNCTIONS} - {"rnea (fext)"} == set(wbc.numeric.__all__)


@pytest.fixture(scope="module")
def cluster_cases():
    """A floating four-bar without rotors: the smallest loop (its eager algorithms are checked
    against Pinocchio in the cluster tests)."""
    robot = clustered.four_bar(floating_base=True, geared=False)
    return {c.function: c for c in bench.cluster_cases(with_pinocchio=False, seed=7, robot=robot)}


@pytest.mark.parametrize("function", bench.TREE_FUNCTIONS)
def test_compiled_equals_eager_and_pinocchio(tree_cases, function):
    """The first call (CasADi's virtual machine while the kernel compiles, or the kernel the cache
    had) and the compiled kernel's call, once the background compile is in."""
    case = tree_cases[function]
    ours = _compiled_equals_eager_and_first_call(case, function)
    assert case.pinocchio is not None
    assert_close(ours, case.convert(case.pinocchio()), TOL_PIN, f"{function} vs Pinocchio")
    again = case.wbc()
    assert again is not ours and np.array_equal(again, ours)  # a new array each call, same numbers


def _compiled_equals_eager_and_first_call(case, function: str) -> np.ndarray:
    """The compiled kernel's result, once the background compile is in, after checking it is in
    place and equals the eager result and the first call's (the VM's, or the cache's kernel)."""
    first = case.wbc()
    assert background.wait(600)
    ours = case.wbc()
    assert _all_compiled(case.model), f"{function}: the compiled kernel is not in place"
    assert_close(ours, case.eager(), TOL_KERNEL, f"{function} compiled vs eager")
    assert_close(first, ours, TOL_KERNEL, f"{function} first call vs compiled")
    return ours


def _all_compiled(model) -> bool:
    """Whether every kernel built for ``model`` so far runs as compiled C (none left in CasADi's
    virtual machine: without a C compiler, whether none is)."""
    kernels = model_kernels.kernels_of(model)
    found = [getattr(kernels, name) for name in model_kernels._ALL_NAMES]
    found = [c for c in found if not isinstance(c, model_kernels._FirstUse)]
    for table in (kernels.frames, kernels.constrained, kernels.forces):
        found += list(table.values())
    backend = "c" if find_compiler() is not None else "sx-vm"
    kernels_found = [calls.kernel_of(c) for c in found if calls.compiled_path(c) or hasattr(c, "kernel")]
    return bool(kernels_found) and all(k.backend == backend for k in kernels_found)


@pytest.mark.parametrize("function", bench.CLUSTER_FUNCTIONS)
def test_cluster_functions_compiled_equal_eager(cluster_cases, function):
    _compiled_equals_eager_and_first_call(cluster_cases[function], function)


@pytest.mark.slow
def test_cluster_aba_compiled_equals_pinocchio_constraint_dynamics():
    """The G1 with parallel ankles (rotor-free): C-ABA against constraintDynamics with its loops."""
    case = {c.function: c for c in bench.cluster_cases(seed=7)}["cluster_aba"]
    assert_close(case.wbc(), case.convert(case.pinocchio()), TOL_PIN, "cluster_aba vs Pinocchio")


def test_cluster_configuration_must_close_the_loops(cluster_cases):
    cm = cluster_cases["cluster_aba"].model
    y = cm.random_configuration(np.random.default_rng(3), scale=0.5)
    y_open = y.copy()
    y_open[-2:] += 0.1  # the rocker moved alone: the loop opens
    assert np.max(np.abs(cm.loop_residual(y_open))) > 1e-6
    zero = np.zeros(cm.nv)
    wbc.cluster_aba(cm, y, zero, zero)  # closed: fine
    with pytest.raises(wbc.InputError, match="does not close the loops"):
        wbc.cluster_aba(cm, y_open, zero, zero)
    with pytest.raises(wbc.InputError, match=r"wbc\.Model"):
        wbc.frame_placement(cm, y, 0)
    with pytest.raises(wbc.InputError, match="ClusterModel"):
        wbc.cluster_aba(cm.tree, y, zero, zero)


@pytest.fixture
def chain():
    return synthetic.chain(4)


def test_calls_check_inputs_like_the_eager_api(chain):
    """Bad values are caught inside the kernel; the error is the eager API's, naming the argument."""
    q, v = wbc.neutral(chain), np.zeros(chain.nv)
    wbc.aba(chain, q, v, v)
    for bad, match in (
        ((np.full(chain.nq, np.nan), v, v), r"q has non-finite entries"),
        ((q, np.full(chain.nv, np.inf), v), r"v has non-finite entries"),
        ((q, v, np.zeros(chain.nv + 1)), r"tau must have shape"),
        ((q, v, [0.0] * 2), r"tau must have shape"),
    ):
        with pytest.raises(wbc.InputError, match=match):
            wbc.aba(chain, *bad)
    np.testing.assert_array_equal(wbc.aba(chain, list(q), v.tolist(), v), wbc.aba(chain, q, v, v))  # converted
    floating = synthetic.chain(3, floating_base=True)
    qf = wbc.neutral(floating)
    qf[3:7] = [0.0, 0.0, 0.0, 2.0]  # a quaternion of norm 2
    with pytest.raises(wbc.InputError, match="norm 2; it must be 1"):
        wbc.crba(floating, qf)


def test_a_huge_but_finite_state_is_computed_not_refused(chain):
    """The in-kernel check overflows on 1e200 (its sum of squares is inf): the eager checks then
    accept the input and the computed result is returned."""
    q, v = wbc.neutral(chain), np.zeros(chain.nv)
    tau = np.full(chain.nv, 1e200)
    assert_close(wbc.aba(chain, q, v, tau), wbc.eager.aba(chain, q, v, tau), TOL_KERNEL)


def test_kernels_are_memoized_and_freed_with_the_model():
    model = synthetic.chain(3)
    q = wbc.neutral(model)
    first = wbc.center_of_mass(model, q)
    background.wait()  # a kernel compiling in the background is held until it is swapped in
    kernels = model_kernels.kernels_of(model)
    call = kernels.center_of_mass
    wbc.center_of_mass(model, q)
    assert kernels.center_of_mass is call  # built once
    np.testing.assert_array_equal(wbc.center_of_mass(model, q), first)
    dead_kernel, dead_entry, dead_model = weakref.ref(calls.kernel_of(call)), weakref.ref(kernels), weakref.ref(model)
    del model, kernels, call
    gc.collect()
    assert dead_model() is None
    assert dead_entry() is None  # the registry let go of the model's kernels
    assert dead_kernel() is None


def test_frame_kernels_are_bounded_and_reachable_by_name_or_index(monkeypatch):
    monkeypatch.setattr(model_kernels, "MAX_KEYS", 4)
    model = synthetic.chain(4)
    q = wbc.random_configuration(model, np.random.default_rng(0))
    for k in range(len(model.frames)):
        np.testing.assert_array_equal(
            wbc.frame_placement(model, q, k), wbc.eager.frame_placement(model, q, model.frames[k].name)
        )
        assert len(model_kernels.kernels_of(model).frames) <= 4
    by_name = wbc.frame_jacobian(model, q, model.frames[-1].name)
    np.testing.assert_array_equal(wbc.frame_jacobian(model, q, len(model.frames) - 1), by_name)


def test_constraint_kernels_are_keyed_by_value():
    model = synthetic.chain(4)
    q = wbc.random_configuration(model, np.random.default_rng(1))
    frame = model.frames[-1].name
    rows = np.eye(6)[:2]
    a = wbc.delassus(model, q, [wbc.LinkConstraint(frame, rows.copy())])
    kernels = model_kernels.kernels_of(model)
    n = len(kernels.constrained)
    b = wbc.delassus(model, q, [wbc.LinkConstraint(frame, rows.copy())])  # another object, same value
    assert len(kernels.constrained) == n
    np.testing.assert_array_equal(a, b)
    c = wbc.delassus(model, q, [wbc.LinkConstraint(frame, np.eye(6)[2:4])])  # another value
    assert_close(c, wbc.eager.delassus(model, q, [wbc.LinkConstraint(frame, np.eye(6)[2:4])]), TOL_KERNEL)
    d = wbc.delassus(model, q, [wbc.PointConstraint(frame)], "efpa")  # a method given by value
    assert_close(d, wbc.eager.delassus(model, q, [wbc.PointConstraint(frame)], "efpa"), TOL_KERNEL)


def test_threads_calling_one_model_get_their_own_results():
    model = synthetic.chain(5)
    states = aba_states(model, seed=2)
    expected = [wbc.eager.aba(model, *s) for s in states]
    wbc.aba(model, *states[0])
    assert not thread_mismatches(lambda *s: wbc.aba(model, *s), states, expected, 300, close_to_1e12)


def test_a_new_process_loads_the_kernels_without_tracing(tmp_path):
    """A second process finds the kernel through the fingerprint index: nothing is traced."""
    code = (
        "import json, sys, numpy as np, wbc\n"
        "from wbc.codegen import model_kernels\n"
        "from wbc.robots import synthetic\n"
        "if sys.argv[1] == 'second':\n"
        "    def refuse(*a, **k):\n"
        "        raise AssertionError('traced')\n"
        "    model_kernels.trace = refuse\n"
        "m = synthetic.chain(4)\n"
        "q = wbc.neutral(m)\n"
        "out = [wbc.aba(m, q, np.zeros(m.nv), np.ones(m.nv)).tolist(), wbc.frame_jacobian(m, q, 2).tolist()]\n"
        "print(json.dumps(out))\n"
    )
    env = dict(os.environ, WBC_CACHE_DIR=str(tmp_path / "cache"))
    runs = [
        subprocess.run([sys.executable, "-c", code, which], env=env, capture_output=True, text=True, check=False)
        for which in ("first", "second")
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert json.loads(runs[0].stdout) == json.loads(runs[1].stdout)


def test_a_short_script_leaves_its_kernels_compiled_at_exit(tmp_path):
    """A script that calls ``wbc.rnea`` once and ends: the kernel compiling in the background is
    finished by the exit hook and cached (Talos's RNEA is several C files, compiled at once as
    processes: a thread pool refused work once the interpreter was shutting down, so every run of
    such a script warned and compiled it again)."""
    code = (
        "import numpy as np, wbc\n"
        "from wbc import robots\n"
        "talos = robots.load('talos')\n"
        "wbc.rnea(talos.model, talos.q0, np.zeros(talos.model.nv), np.zeros(talos.model.nv))\n"
    )
    cache = tmp_path / "cache"
    env = dict(os.environ, WBC_CACHE_DIR=str(cache), PYTHONWARNINGS="always")
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert "was not compiled" not in run.stderr, run.stderr
    assert list(cache.glob("wbc_wbc_rnea_talos-*.so")), sorted(p.name for p in cache.iterdir())
