"""The control step is safe to use: threads, masked arrays, nothing lazy after compile(), and the
compiled routines' C (warning-free, its ABI checked when it is loaded)."""

from __future__ import annotations

import ctypes
import subprocess
import sys
import threading

import numpy as np
import pytest

import wbc
from wbc import robots, tasks
from wbc.codegen.cache import find_compiler
from wbc.control import controller as controller_module
from wbc.control import shortcut_library as library_module
from wbc.control.shortcut import FEASIBLE, CompiledShortcut
from wbc.control.shortcut_library import python_include, shortcut_library


def _talos():
    spec = robots.load("talos")
    contacts = [wbc.SurfaceContact(f, spec.sole.length, spec.sole.width, mu=0.3) for f in spec.feet]
    com = tasks.CoMTask(weight=1.0, kp=20.0)
    posture = tasks.PostureTask(spec.model, weight=1e-3, kp=10.0)
    ctrl = wbc.WholeBodyController(spec.model, [com, posture], contacts, limits=[wbc.TorqueLimit()])
    com.set_target(wbc.center_of_mass(spec.model, spec.q0))
    posture.set_target(spec.q0)
    return ctrl, spec


def test_concurrent_steps_on_one_controller_receive_their_own_commands():
    """Two threads step one controller at two different states: each receives the command of its own
    state, every time (the steps are serialized; before, 1 to 4 % of the commands were the other
    thread's)."""
    ctrl, spec = _talos()
    model = spec.model
    rng = np.random.default_rng(0)
    states = [(spec.q0, 0.01 * rng.standard_normal(model.nv)) for _ in range(2)]
    ctrl.step(*states[0])  # places the feet
    expected = [ctrl.step(q, v).u.copy() for q, v in states]
    assert not np.array_equal(expected[0], expected[1])
    for q, v in states:  # the minimizer under the equalities answers (no warm start: one answer per state)
        ctrl.step(q, v)
        assert ctrl._plan.shortcut(ctrl.regularization) == FEASIBLE
    wrong = [0, 0]
    steps = 600

    def run(k: int) -> None:
        q, v = states[k]
        for _ in range(steps):
            if not np.array_equal(ctrl.step(q, v).u, expected[k]):
                wrong[k] += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert wrong == [0, 0]


@pytest.mark.parametrize("which", ["q", "v"])
def test_masked_arrays_are_refused(which):
    """A numpy masked array's masked entries hold no value: the step refuses it (before, its data was
    used as if valid), on the one-call path and on the general one."""
    ctrl, spec = _talos()
    q, v = spec.q0.copy(), np.zeros(spec.model.nv)
    ctrl.step(q, v)
    for plain in (True, False):
        if not plain:
            ctrl.deactivate_contact(ctrl.contacts[1].name)  # another layout: not the one-call step
        mask = np.zeros(q.size if which == "q" else v.size, dtype=bool)
        mask[-1] = True
        masked = np.ma.masked_array(q if which == "q" else v, mask=mask)
        args = (masked, v) if which == "q" else (q, masked)
        with pytest.raises(wbc.InputError, match=f"{which} is a numpy masked array"):
            ctrl.step(*args)
        assert ctrl.step(q, v).status is wbc.StepStatus.OPTIMAL


def test_compile_prepares_every_step(monkeypatch):
    """After compile(), no step builds anything: no layout, no compiled shortcut, no library, also
    when a foot is released and put back (every activation set's plan is prepared)."""
    ctrl, spec = _talos()
    ctrl.compile()

    def built(*_, **__):
        raise AssertionError("built during a step")

    monkeypatch.setattr(controller_module, "Layout", built)
    monkeypatch.setattr(CompiledShortcut, "__init__", built)
    monkeypatch.setattr(controller_module, "compile_step", built)
    q, v = spec.q0.copy(), np.zeros(spec.model.nv)
    foot = ctrl.contacts[1].name
    for i in range(8):
        if i == 3:
            ctrl.deactivate_contact(foot)
        if i == 6:
            ctrl.activate_contact(foot)
        assert ctrl.step(q, v).status is wbc.StepStatus.OPTIMAL
    assert ctrl._plan.one_call


@pytest.mark.skipif(find_compiler() is None, reason="no C compiler")
@pytest.mark.parametrize("with_python", [True, False])
@pytest.mark.parametrize("files", [("shortcut.c",), ("shortcut.c", "hierarchy.c")], ids=["shortcut", "hierarchy"])
def test_the_step_c_compiles_without_warnings(with_python, files, tmp_path):
    """``shortcut.c`` (and ``hierarchy.c``, built appended to it) compile under ``-Wall -Wextra
    -Werror``, with CPython's headers and without."""
    from importlib import resources

    package = resources.files("wbc.control")
    source = tmp_path / "step.c"
    source.write_text("\n".join(package.joinpath(name).read_text() for name in files))
    flags = ["-Wall", "-Wextra", "-Werror", "-fsyntax-only"]
    if with_python:
        include = python_include()
        if include is None:
            pytest.skip("no CPython headers")
        flags += ["-DWBC_WITH_PYTHON", f"-I{include}"]
    out = subprocess.run([find_compiler(), *flags, str(source)], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr


@pytest.mark.skipif(find_compiler() is None, reason="no C compiler")
def test_a_library_of_another_abi_is_refused(monkeypatch):
    """The library exports its struct's size, fields and offsets and its return codes: a declaration
    on the Python side that differs from them is refused at load, naming what differs."""
    library = shortcut_library()
    assert library is not None and library.step_objects is not None  # CPython's headers are here
    lib = ctypes.CDLL(str(library.path))
    library_module._check_abi(lib, library.path)  # as declared: accepted
    fields = list(library_module.ShortcutData._fields_)
    fields[0], fields[1] = fields[1], (fields[0][0], ctypes.c_double)  # "k" moved and widened

    class Other(ctypes.Structure):
        _fields_ = fields

    monkeypatch.setattr(library_module, "ShortcutData", Other)
    with pytest.raises(
        wbc.CompileError, match=r"differs from ShortcutData .* from field 'k' on \(C offset 0, here 8\)"
    ):
        library_module._check_abi(lib, library.path)
    monkeypatch.undo()
    codes = {c.name: int(c) for c in library_module.Code}
    codes["FAILED"], codes["BAD_INPUT"] = codes["BAD_INPUT"], codes["FAILED"]
    monkeypatch.setattr(library_module, "Code", library_module.enum.IntEnum("Code", codes))
    with pytest.raises(wbc.CompileError, match="return codes"):
        library_module._check_abi(lib, library.path)


def test_a_dropped_controller_is_freed_at_once():
    """No reference cycle keeps a controller (and its loaded libraries) alive until the garbage
    collector runs: a library rebuilt later at the same path must not find the old one loaded."""
    import gc
    import weakref

    ctrl, spec = _talos()
    ctrl.step(spec.q0, np.zeros(spec.model.nv))
    shortcuts = {id(p.shortcut): p.shortcut for p in ctrl._plans.values() if p.shortcut is not None}
    assert shortcuts and all(s.attached for s in shortcuts.values())
    refs = [weakref.ref(ctrl)] + [weakref.ref(s) for s in shortcuts.values()]
    refs += [weakref.ref(s._kernel_library) for s in shortcuts.values()]  # the kernel's library, opened again
    del shortcuts
    enabled = gc.isenabled()
    gc.disable()
    try:
        del ctrl
        assert [r() for r in refs] == [None] * len(refs)
    finally:
        if enabled:
            gc.enable()
