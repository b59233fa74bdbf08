"""Kernels found by fingerprint without tracing (wbc.codegen.index, wbc.codegen.fingerprint,
builder.compile_step): the same controller built again loads its kernel without tracing and gets
the same structure and the same outputs; every structural change (a task added, a weight, a gain,
a priority, a contact's friction, another robot, another method or tolerance, wbc's source)
misses; contributors from outside wbc are never fingerprinted; broken indexes are ignored."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest

import wbc
from wbc import tasks
from wbc.codegen import fingerprint as fp
from wbc.codegen.cache import find_compiler
from wbc.control import builder
from wbc.robots import synthetic

pytestmark = pytest.mark.skipif(find_compiler() is None, reason="no C compiler")


def _model(bodies: int = 5, seed: int = 3) -> wbc.Model:
    return synthetic.random_tree(bodies, np.random.default_rng(seed), floating_base=True)


def _controller(model=None, weight=10.0, kp=100.0, mu=0.7, extra_task=False, **options):
    model = model if model is not None else _model()
    links = [j.link for j in model.joints[1:]]
    contacts = [wbc.PointContact(links[-1], mu=mu), wbc.PointContact(links[-2], mu=0.7)]
    task_list = [tasks.CoMTask(weight=weight, kp=kp), tasks.PostureTask(model, weight=1e-2, kp=30.0)]
    if extra_task:
        task_list.append(tasks.PositionTask(links[0], weight=1.0, kp=10.0))
    return wbc.WholeBodyController(model, task_list, contacts, **options)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WBC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _same_structure(a: builder.Structure, b: builder.Structure) -> None:
    for field in dataclasses.fields(builder.Structure):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, np.ndarray):
            assert x.dtype.kind == y.dtype.kind and np.array_equal(x, y), field.name
        else:
            assert x == y, field.name


def test_the_same_controller_again_is_loaded_without_tracing(cache, traces):
    """A second, separately built but identical controller loads the indexed kernel (no trace,
    nothing compiled), with an equal Structure, and steps to the same torques bit for bit."""
    first = _controller()
    k1 = first.compile()
    assert traces[0] == 1 and k1.compile_seconds > 0
    assert len(list(cache.glob("index-step-*.json"))) == 1
    assert len(list(cache.glob("index-placements-*.json"))) == 1
    assert all(p.stat().st_mode & 0o444 == 0o444 for p in cache.glob("index-*.json"))
    second = _controller()
    k2 = second.compile()
    assert traces[0] == 1, "the identical controller was traced again"
    assert k2.library == k1.library and k2.compile_seconds == 0
    assert k2.n_instructions == k1.n_instructions and k2.output_shapes == k1.output_shapes
    assert k2.input_names == k1.input_names
    _same_structure(second._structure, first._structure)
    q = wbc.neutral(first.model)
    v = np.zeros(first.model.nv)
    for ctrl in (first, second):
        ctrl.tasks[0].set_target_from_configuration(ctrl.model, q)
        ctrl.tasks[1].set_target_from_configuration(ctrl.model, q)
    out1 = first.step(q, v)
    out2 = second.step(q, v)
    assert np.array_equal(out1.tau, out2.tau) and np.array_equal(out1.qdd, out2.qdd)


@pytest.mark.parametrize(
    "change",
    [
        {"extra_task": True},
        {"weight": 11.0},
        {"kp": 50.0},
        {"mu": 0.5},
        "other tree",
        "larger tree",
        {"input_matrix": "dense"},
        "priority",
        "tolerance",
        "source",
    ],
    ids=lambda c: c.replace(" ", "_") if isinstance(c, str) else next(iter(c)),
)
def test_any_structural_change_misses(change, cache, traces, monkeypatch):
    """Each change of what the trace reads gives another fingerprint: the kernel is traced anew."""
    _controller().compile()
    assert traces[0] == 1
    if change == "priority":
        ctrl = _controller()
        ctrl.tasks[1].set_priority(1)
    elif change == "tolerance":
        ctrl = _controller()
        monkeypatch.setattr(type(ctrl.solver), "unconstrained_tolerance", ctrl.solver.unconstrained_tolerance + 1e-9)
    elif change == "source":
        ctrl = _controller()
        monkeypatch.setattr(fp, "_source", [("0" * 64, {})])
    elif change == "other tree":
        ctrl = _controller(model=_model(seed=4))
    elif change == "larger tree":
        ctrl = _controller(model=_model(bodies=6))
    else:
        ctrl = _controller(**change)
    ctrl.compile()
    assert traces[0] == 2


def test_fingerprint_is_by_value_and_refuses_what_it_cannot_see():
    """Equal objects give equal fingerprints; a changed array entry, a foreign class or a callable
    give another one or None."""
    model = _model()
    a = tasks.CoMTask(weight=1.0)
    b = tasks.CoMTask(weight=1.0)
    assert fp.fingerprint(model, [a]) == fp.fingerprint(_model(), [b]) is not None
    b.set_weight(np.array([1.0, 1.0, 1.0 + 1e-15]))
    assert fp.fingerprint(model, [a]) != fp.fingerprint(model, [b])
    assert fp.fingerprint(0.0) != fp.fingerprint(-0.0)
    assert fp.fingerprint(1) != fp.fingerprint(1.0) != fp.fingerprint(True)

    class Foreign(tasks.CoMTask):  # defined outside wbc: its code is not hashed
        pass

    assert fp.fingerprint(model, [Foreign()]) is None
    c = tasks.CoMTask()
    c.callback = lambda: 0  # type: ignore[attr-defined]
    assert fp.fingerprint(c) is None
    cyclic = tasks.CoMTask()
    cyclic.me = cyclic  # type: ignore[attr-defined]
    assert fp.fingerprint(cyclic) is not None


def test_foreign_contributor_is_always_traced(cache, traces):
    """A controller with a task class defined outside wbc is traced on every build (no index)."""

    class MyCoM(tasks.CoMTask):
        pass

    model = _model()
    links = [j.link for j in model.joints[1:]]
    for _ in range(2):
        ctrl = wbc.WholeBodyController(
            model, [MyCoM(weight=1.0), tasks.PostureTask(model)], [wbc.PointContact(links[-1])]
        )
        ctrl.compile()
    assert traces[0] == 2
    assert list(cache.glob("index-step-*.json")) == []


@pytest.mark.parametrize("damage", ["garbage", "other key", "missing library", "library bytes", "bad stem"])
def test_damaged_index_is_ignored(damage, cache, traces):
    """An index that does not read, records another key, names a missing or modified library or an
    unsafe name is not used: the kernel is traced (and the index rewritten)."""
    _controller().compile()
    [index] = cache.glob("index-step-*.json")
    record = json.loads(index.read_text())
    library = cache / f"{record['library']}.so"
    if damage == "garbage":
        index.write_text("{not json")
    elif damage == "other key":
        record["key"] = "0" * 64
        index.write_text(json.dumps(record))
    elif damage == "missing library":
        library.unlink()
    elif damage == "library bytes":
        library.write_bytes(library.read_bytes() + b"\0")
    else:
        record["library"] = "../" + record["library"]
        index.write_text(json.dumps(record))
    ctrl = _controller()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ctrl.compile()
    said = [str(w.message) for w in caught if issubclass(w.category, wbc.WbcSecurityWarning)]
    if damage in ("garbage", "bad stem"):  # a record that does not read, or names a path out of the cache
        assert len(said) == 1 and index.name in said[0] and "traced again" in said[0], said
    assert traces[0] == 2
    q = wbc.neutral(ctrl.model)
    ctrl.tasks[0].set_target_from_configuration(ctrl.model, q)
    assert np.all(np.isfinite(ctrl.step(q, np.zeros(ctrl.model.nv)).tau))


def test_no_index_is_written_when_sources_changed(cache, traces, monkeypatch):
    """If wbc's source files changed since import (the running code may not be the hashed code),
    no index is written."""
    monkeypatch.setattr(fp, "sources_unchanged", lambda: False)
    monkeypatch.setattr(wbc.codegen.index, "sources_unchanged", lambda: False)
    _controller().compile()
    assert list(cache.glob("index-*.json")) == []
    _controller().compile()
    assert traces[0] == 2


def test_structure_record_round_trip():
    """The structure of a controller with joint limits, a hierarchy and surface contacts reads back
    equal from its JSON record."""
    ctrl = _controller(extra_task=True)
    ctrl.tasks[2].set_priority(1)
    _, structure = builder.trace_step(ctrl.model, ctrl.contributors, ctrl.contacts, ctrl.input_matrix, 1e-9)
    record = json.loads(json.dumps(builder._structure_record(structure)))
    _same_structure(builder._structure_from_record(record), structure)
    assert builder._structure_from_record({"variables": 3}) is None


def test_paths_fingerprint_as_text_and_names_are_checked():
    """Paths are fingerprinted by their text; a function whose names are not C identifiers is not
    split (Unsupported: CasADi's generator writes it)."""
    from pathlib import Path

    import casadi as ca

    from wbc.codegen import emit

    assert fp.fingerprint(Path("/a/b")) == fp.fingerprint(Path("/a/b")) != fp.fingerprint(Path("/a/c"))
    x = ca.SX.sym("x")
    with pytest.raises(emit.Unsupported, match="C identifier"):
        emit.SplitPlan(ca.Function("f", [x], [2 * x], ["x y"], ["o"]))


def test_an_open_fallback_directory_is_not_read(tmp_path, monkeypatch):
    """The private fallback directory is consulted for indexes only when owned by this user and
    closed to others (else anyone could plant an index there)."""
    from wbc.codegen import index

    open_dir = tmp_path / "open"
    open_dir.mkdir(mode=0o777)
    open_dir.chmod(0o777)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setattr(index, "_fallback_path", lambda: open_dir)
    assert index._places(tmp_path / "cache") == [tmp_path / "cache"]
    monkeypatch.setattr(index, "_fallback_path", lambda: private)
    assert index._places(tmp_path / "cache") == [tmp_path / "cache", private]


CHILD = r"""
import sys
import numpy as np
import wbc
from wbc import tasks
from wbc.control import builder
from wbc.robots import synthetic

calls = []
original = builder.trace_step
builder.trace_step = lambda *a, **k: calls.append(1) or original(*a, **k)
model = synthetic.random_tree(5, np.random.default_rng(3), floating_base=True)
links = [j.link for j in model.joints[1:]]
contacts = [wbc.PointContact(links[-1], mu=0.7), wbc.PointContact(links[-2], mu=0.7)]
ctrl = wbc.WholeBodyController(
    model, [tasks.CoMTask(weight=10.0, kp=100.0), tasks.PostureTask(model, weight=1e-2, kp=30.0)], contacts
)
kernel = ctrl.compile()
q = wbc.neutral(model)
ctrl.tasks[0].set_target_from_configuration(model, q)
ctrl.tasks[1].set_target_from_configuration(model, q)
print(len(calls), kernel.library, ctrl.step(q, np.zeros(model.nv)).tau.tobytes().hex())
"""


def test_a_new_process_finds_the_index(cache, traces):
    """The fingerprint is the same in another process (no ids, no hash randomization): a child
    process building the same controller loads the indexed kernel without tracing, and steps to
    the same torques as this process."""
    import os
    import subprocess
    import sys

    ctrl = _controller()
    kernel = ctrl.compile()
    q = wbc.neutral(ctrl.model)
    ctrl.tasks[0].set_target_from_configuration(ctrl.model, q)
    ctrl.tasks[1].set_target_from_configuration(ctrl.model, q)
    tau = ctrl.step(q, np.zeros(ctrl.model.nv)).tau
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    calls, library, child_tau = out.stdout.split()
    assert calls == "0" and library == str(kernel.library)
    assert child_tau == tau.tobytes().hex()


def test_the_index_can_be_turned_off(cache, traces, monkeypatch):
    """WBC_KERNEL_INDEX=0: no index is written or read (every build traces)."""
    _controller().compile()
    assert traces[0] == 1
    monkeypatch.setenv("WBC_KERNEL_INDEX", "0")
    _controller().compile()
    assert traces[0] == 2
    for index in cache.glob("index-*.json"):
        index.unlink()
    _controller().compile()
    assert list(cache.glob("index-*.json")) == [] and traces[0] == 3
