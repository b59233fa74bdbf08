"""Regression tests for the compiled-code defects of issue 17 (items 5, 9-13, kernel parts) and
issue 9's ``sanitize("")``: each reproduces the reported defect and checks the fix.

- a sidecar with non-UTF-8 bytes is rebuilt (item 9);
- a "compiler" that exits 0 without writing (``WBC_CC=true``), or writes garbage or a foreign
  library, is a CompileError and nothing is cached; a cached library that does not load is
  rebuilt (item 10);
- ``WBC_CACHE_DIR`` naming a file, a dangling link or a path under a file is a CompileError naming
  the variable and the path; an unwritable home falls back to a private temporary cache; a
  read-only cache holding the kernel works without writing anything; a read-only cache without it
  falls back; with no usable place at all kernels run in the VM (item 11);
- build directories of killed processes are removed, never those of a live build (item 12);
- kernel arrays have exactly their declared shapes, also for one-joint robots (item 5) and a
  wrongly sized argument is an InputError naming the kernel, the argument and both shapes (item 13);
- the compiler starts while another thread changes the environment (a background compile beside a
  user's threads: exec failed with EFAULT).

Read-only scenarios run in a child process; as root (which ignores permissions) the child runs
without the capabilities that bypass them (``setpriv``), so the operating system itself refuses
the writes."""

from __future__ import annotations

import copy as copy_module
import hashlib
import json
import os
import pickle
import re
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import casadi as ca
import numpy as np
import pytest

import wbc
from tests.helpers import TOL_KERNEL, assert_close
from wbc.codegen import algorithm_functions as traced
from wbc.codegen import cache as kernel_cache
from wbc.robots import synthetic

pytestmark = pytest.mark.usefixtures("no_compile_in_flight")  # (conftest: tests that set WBC_CC)

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _function(n: int = 3) -> ca.Function:
    return traced.aba_function(synthetic.chain(n))


def _expected(n: int = 3) -> np.ndarray:
    m = synthetic.chain(n)
    q, v, tau = _state(m)
    return wbc.aba(m, q, v, tau)


def _state(model):
    rng = np.random.default_rng(70)
    return wbc.random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)


def _check(kernel, n: int = 3) -> None:
    m = synthetic.chain(n)
    q, v, tau = _state(m)
    assert_close(kernel(q, v, tau)[0].copy(), wbc.aba(m, q, v, tau), tol=TOL_KERNEL, what=f"{kernel.backend} kernel")


def _compile(directory, **kwargs):
    return wbc.codegen.compile_function(_function(), directory=directory, **kwargs)


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


# A child process: compile chain(3)'s ABA (into argv[1], or the default location when it is "-")
# and report what happened as JSON.
CHILD = r"""
import json, sys, warnings
import numpy as np
import wbc
from wbc.robots import synthetic

model = synthetic.chain(3)
directory = None if sys.argv[1] == "-" else sys.argv[1]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    kernel = wbc.codegen.compile_function(wbc.codegen.algorithm_functions.aba_function(model), directory=directory)
rng = np.random.default_rng(70)
q, v, tau = wbc.random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
print(json.dumps({
    "backend": kernel.backend,
    "library": None if kernel.library is None else str(kernel.library),
    "compile_seconds": kernel.compile_seconds,
    "qdd": kernel(q, v, tau)[0].tolist(),
    "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
}))
"""


def _env(**changes) -> dict:
    env = dict(os.environ)
    for name in ("WBC_CC", "WBC_CACHE_DIR"):
        env.pop(name, None)
    env.update({k: v for k, v in changes.items() if v is not None})
    for k, v in changes.items():
        if v is None:
            env.pop(k, None)
    return env


def _unprivileged() -> list[str]:
    """A command prefix under which file permissions apply (root ignores them otherwise)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot make a directory read-only for the child")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner"]


def _run_child(directory, env=None, unprivileged=False) -> dict:
    cmd = (_unprivileged() if unprivileged else []) + [sys.executable, "-c", CHILD, str(directory)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env or _env(), timeout=180)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _read_only(path: Path) -> None:
    for p in [path, *path.rglob("*")]:
        p.chmod(p.stat().st_mode & ~0o222)


def _writable(path: Path) -> None:
    for p in [path, *path.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)


# ----------------------------------------------------------------------------- item 9: sidecars
@pytest.mark.parametrize(
    "content",
    [b"\xff\xfe\x80 not utf-8", b"\xff" * 100_000, "KEY \xff\xfe".encode("latin-1"), b"\x00\x00"],
    ids=["bytes", "large", "key-then-bytes", "nul"],
)
def test_non_utf8_sidecar_is_rebuilt(content, tmp_path):
    """A sidecar holding non-UTF-8 bytes (issue 17 #9: UnicodeDecodeError on every run) makes the
    library be rebuilt, after which it is a cache hit again."""
    first = _compile(tmp_path)
    sidecar = first.library.with_suffix(".sha256")
    key = sidecar.read_text().split()[0]
    sidecar.write_bytes(content.replace(b"KEY", key.encode()))
    kernel = _compile(tmp_path)
    assert kernel.compile_seconds > 0 and kernel.library == first.library
    _check(kernel)
    assert sidecar.read_text().split()[0] == key
    assert _compile(tmp_path).compile_seconds == 0


# ----------------------------------------------------------------------------- item 10: compiler output
def test_compiler_that_writes_nothing_is_a_compile_error(tmp_path, monkeypatch):
    """WBC_CC=true (exits 0, writes nothing; issue 17 #10 cached a 0-byte library) is a
    CompileError naming the compiler; nothing is cached or left behind, and a real compiler then
    builds normally."""
    assert shutil.which("true")
    monkeypatch.setenv("WBC_CC", "true")
    with pytest.raises(wbc.CompileError, match=r"exited 0 but wrote no library.*WBC_CC"):
        _compile(tmp_path)
    assert [n for n in _names(tmp_path) if not n.endswith(".lock")] == []
    monkeypatch.delenv("WBC_CC")
    kernel = _compile(tmp_path)
    assert kernel.backend == "c" and kernel.compile_seconds > 0
    _check(kernel)


@pytest.mark.parametrize("what", ["garbage", "foreign library"])
def test_compiler_that_writes_an_unusable_library_is_a_compile_error(what, tmp_path):
    """A 'compiler' that exits 0 after writing garbage, or a valid library of another function,
    is a CompileError: what it produced is loaded and checked before anything is published."""
    if what == "garbage":
        body = 'for a; do [ "$prev" = -o ] && out=$a; prev=$a; done; echo "not a library" > "$out"\n'
    else:
        other = wbc.codegen.compile_function(traced.rnea_function(synthetic.chain(3)), directory=tmp_path / "o")
        body = f'for a; do [ "$prev" = -o ] && out=$a; prev=$a; done; cp {other.library} "$out"\n'
    compiler = _script(tmp_path / "fakecc", body)
    cache = tmp_path / "cache"
    with pytest.raises(wbc.CompileError, match=r"produced an unusable library"):
        _compile(cache, compiler=compiler)
    assert [n for n in _names(cache) if not n.endswith(".lock")] == []


def test_cached_library_that_does_not_load_is_rebuilt(tmp_path):
    """The state issue 17 #10 left behind (a 0-byte library whose sidecar records its digest, so
    every run failed to load it) heals: a library with a matching sidecar that does not load is
    rebuilt. Also for garbage bytes with a matching digest."""
    cache = tmp_path / "cache"
    library = Path(_run_child(cache)["library"])
    sidecar = library.with_suffix(".sha256")
    key = sidecar.read_text().split()[0]
    for content in (b"", b"\x7fELF but not really" * 50):
        library.write_bytes(content)
        sidecar.write_text(f"{key} {hashlib.sha256(content).hexdigest()}\n")
        # in a fresh process (this one may have the published library mapped already)
        result = _run_child(cache)
        assert result["backend"] == "c" and result["compile_seconds"] > 0, content[:20]
        assert_close(np.array(result["qdd"]), _expected(), tol=TOL_KERNEL, what="rebuilt kernel")
        assert library.stat().st_size > 1000


# ----------------------------------------------------------------------------- item 11: locations
@pytest.mark.parametrize("kind", ["file", "dangling symlink", "under a file", "symlink to a file"])
def test_cache_dir_that_is_not_a_directory_names_the_variable(kind, tmp_path, monkeypatch):
    """WBC_CACHE_DIR naming a file, a dangling symbolic link, a path under a file or a link to a
    file (issue 17 #11: FileExistsError) is a CompileError naming the variable and the path."""
    (tmp_path / "afile").write_text("x")
    path = {
        "file": tmp_path / "afile",
        "dangling symlink": tmp_path / "link",
        "under a file": tmp_path / "afile" / "kernels",
        "symlink to a file": tmp_path / "link",
    }[kind]
    if kind == "dangling symlink":
        path.symlink_to(tmp_path / "nowhere")
    elif kind == "symlink to a file":
        path.symlink_to(tmp_path / "afile")
    monkeypatch.setenv("WBC_CACHE_DIR", str(path))
    with pytest.raises(wbc.CompileError) as info:
        wbc.codegen.compile_function(_function())
    message = str(info.value)
    assert "WBC_CACHE_DIR" in message and str(path) in message, message
    if kind == "dangling symlink":
        assert "symbolic link" in message and "nowhere" in message
        assert not (tmp_path / "nowhere").exists()
    else:
        assert "not a directory" in message.lower(), message
    assert (tmp_path / "afile").read_text() == "x"


def test_directory_argument_that_is_a_file_is_named(tmp_path):
    """The same through ``directory=``: the message names the argument."""
    (tmp_path / "afile").write_text("x")
    with pytest.raises(wbc.CompileError, match=r"directory=.*afile.* not a directory"):
        _compile(tmp_path / "afile")


def test_symlink_to_a_directory_is_a_fine_cache(tmp_path, monkeypatch):
    """A link to a directory is used as the directory it points to."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.setenv("WBC_CACHE_DIR", str(tmp_path / "link"))
    kernel = wbc.codegen.compile_function(_function())
    _check(kernel)
    assert kernel.library.name in _names(tmp_path / "real")


def test_unwritable_home_falls_back_to_a_private_temporary_cache(tmp_path):
    """No WBC_CACHE_DIR and a home directory that cannot be written (issue 17 #11:
    PermissionError): kernels are compiled into $TMPDIR/wbc-kernels-<uid> (private) with one
    WbcPerformanceWarning naming both places, and the next process finds them there."""
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    _read_only(home)
    try:
        env = _env(HOME=str(home), TMPDIR=str(tmp), WBC_CACHE_DIR=None)
        first = _run_child("-", env=env, unprivileged=True)
        fallback = tmp / f"wbc-kernels-{os.getuid()}"
        assert first["backend"] == "c" and Path(first["library"]).parent == fallback
        assert stat.S_IMODE(fallback.stat().st_mode) == 0o700
        [warning] = first["warnings"]
        assert warning.startswith("WbcPerformanceWarning") and str(home) in warning and str(fallback) in warning
        assert_close(np.array(first["qdd"]), _expected(), tol=TOL_KERNEL, what="fallback kernel")
        second = _run_child("-", env=env, unprivileged=True)
        assert second["compile_seconds"] == 0 and second["library"] == first["library"]
        assert not list(home.iterdir())
    finally:
        _writable(home)


@pytest.mark.parametrize("with_lock_file", [True, False])
def test_read_only_cache_holding_the_kernel_is_used_as_it_is(with_lock_file, tmp_path):
    """A prebuilt cache made read-only (issue 17 #11: failed on its lock file) serves its kernel
    to a process that cannot write there: no compile, no warning, nothing written."""
    cache = tmp_path / "cache"
    built = _run_child(cache)
    if not with_lock_file:
        for lock in cache.glob("*.lock"):
            lock.unlink()
    before = _names(cache)
    _read_only(cache)
    try:
        result = _run_child(cache, env=_env(TMPDIR=str(tmp_path)), unprivileged=True)
    finally:
        _writable(cache)
    assert result["backend"] == "c" and result["compile_seconds"] == 0 and result["warnings"] == []
    assert result["library"] == built["library"]
    assert _names(cache) == before
    assert not (tmp_path / f"wbc-kernels-{os.getuid()}").exists()
    assert_close(np.array(result["qdd"]), _expected(), tol=TOL_KERNEL, what="read-only cache")


def test_read_only_cache_without_the_kernel_falls_back(tmp_path):
    """A read-only cache that lacks the kernel: compiled into the private temporary cache, with a
    warning naming the read-only place; the read-only cache is left as it was."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (tmp_path / "t").mkdir()
    (cache / "unrelated.txt").write_text("x")
    _read_only(cache)
    try:
        result = _run_child(cache, env=_env(TMPDIR=str(tmp_path / "t")), unprivileged=True)
    finally:
        _writable(cache)
    assert result["backend"] == "c" and Path(result["library"]).parent == tmp_path / "t" / f"wbc-kernels-{os.getuid()}"
    assert str(cache) in result["warnings"][0]
    assert _names(cache) == ["unrelated.txt"]
    assert_close(np.array(result["qdd"]), _expected(), tol=TOL_KERNEL, what="fallback kernel")


@pytest.mark.parametrize("squat", ["open to others", "symlink"])
def test_nowhere_to_write_runs_in_the_vm(squat, tmp_path):
    """A read-only cache without the kernel and a fallback directory that is not private (open to
    others, or a link someone else planted): the fallback is refused (never load a library others
    could have written) and the kernel runs in the VM, with a warning, with the same numbers."""
    cache, tmp = tmp_path / "cache", tmp_path / "tmp"
    cache.mkdir()
    tmp.mkdir()
    fallback = tmp / f"wbc-kernels-{os.getuid()}"
    if squat == "symlink":
        (tmp / "elsewhere").mkdir(mode=0o700)
        fallback.symlink_to(tmp / "elsewhere")
    else:
        fallback.mkdir()
        fallback.chmod(0o777)
    _read_only(cache)
    try:
        result = _run_child(cache, env=_env(TMPDIR=str(tmp)), unprivileged=True)
    finally:
        _writable(cache)
    assert result["backend"] == "sx-vm" and result["library"] is None
    assert any("virtual machine" in w and str(fallback) in w for w in result["warnings"]), result["warnings"]
    assert_close(np.array(result["qdd"]), _expected(), tol=TOL_KERNEL, what="VM kernel")


def test_cache_dir_without_a_home(monkeypatch):
    """With no home directory at all, the default cache is the private temporary one."""

    def no_home():
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("WBC_CACHE_DIR", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert wbc.codegen.cache_dir().name == f"wbc-kernels-{os.getuid()}"
    monkeypatch.setattr(Path, "home", staticmethod(lambda: Path("~")))  # what 3.11 returns then
    assert wbc.codegen.cache_dir().is_absolute()


# ----------------------------------------------------------------------------- item 12: stale builds
def _slow_compiler(tmp_path: Path) -> str:
    """A compiler that, when WBC_TEST_SLOW names a file, creates it and waits for ``<file>.go``
    (at most two minutes) before compiling; same --version as cc, so the same cache key either way."""
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc
    wait = (
        'if [ -n "$WBC_TEST_SLOW" ] && [ "$1" != --version ]; then touch "$WBC_TEST_SLOW"; i=0\n'
        '  while [ ! -e "$WBC_TEST_SLOW.go" ] && [ $i -lt 2400 ]; do sleep 0.05; i=$((i+1)); done\nfi\n'
    )
    return _script(tmp_path / "slowcc", f'{wait}exec {cc} "$@"\n')


def _start_slow_build(tmp_path: Path, cache: Path, compiler: str, n: int = 3):
    code = (
        "import sys, wbc\nfrom wbc.robots import synthetic\n"
        "from wbc.codegen import algorithm_functions\n"
        f"wbc.codegen.compile_function(algorithm_functions.aba_function(synthetic.chain({n})), "
        f"directory=sys.argv[1], compiler={compiler!r})\n"
    )
    mark = tmp_path / f"compiling{n}"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(cache)],
        env=_env(WBC_TEST_SLOW=str(mark)),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while not mark.exists():
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "the slow build did not start"
        time.sleep(0.02)
    return proc


def _builds(cache: Path) -> list[str]:
    return [n for n in _names(cache) if n.startswith(".build-")]


def test_build_of_a_killed_process_is_cleaned(tmp_path):
    """A process killed while compiling (issue 17 #12: its .build-* file stayed forever) leaves a
    build directory that the next compile of that kernel removes (and builds normally)."""
    cache = tmp_path / "cache"
    compiler = _slow_compiler(tmp_path)
    proc = _start_slow_build(tmp_path, cache, compiler)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert len(_builds(cache)) == 1
    kernel = _compile(cache, compiler=compiler)
    assert kernel.compile_seconds > 0
    _check(kernel)
    assert _builds(cache) == []


def test_stale_builds_of_other_kernels_are_cleaned_but_never_a_live_one(tmp_path):
    """While process A compiles kernel chain(4) (slowly), this process compiles chain(3) into the
    same cache: A's build directory is left alone and A finishes with a correct kernel; the
    leftovers of a killed build of chain(5) are removed, and so is a day-old build file of an
    older layout (a fresh one is kept: its builder may be alive)."""
    cache = tmp_path / "cache"
    compiler = _slow_compiler(tmp_path)
    dead = _start_slow_build(tmp_path, cache, compiler, n=5)
    os.killpg(dead.pid, signal.SIGKILL)
    dead.wait(timeout=30)
    [dead_build] = _builds(cache)
    old, recent = cache / ".build-abc123.so", cache / ".build-def456.so"
    old.write_bytes(b"partial")
    recent.write_bytes(b"partial")
    os.utime(old, (time.time() - 2 * 86400,) * 2)

    live = _start_slow_build(tmp_path, cache, compiler, n=4)
    try:
        [live_build] = [b for b in _builds(cache) if b not in (dead_build, old.name, recent.name)]
        kernel = _compile(cache, compiler=compiler)
        _check(kernel)
        assert sorted(_builds(cache)) == sorted([live_build, recent.name])
        (tmp_path / "compiling4.go").touch()  # let A compile
    finally:
        if live.poll() is None:
            try:
                _, err = live.communicate(timeout=150)
            except subprocess.TimeoutExpired:
                os.killpg(live.pid, signal.SIGKILL)
                raise
    assert live.returncode == 0, err
    assert sorted(_builds(cache)) == [recent.name]
    kernel4 = wbc.codegen.compile_function(_function(4), directory=cache, compiler=compiler)
    assert kernel4.compile_seconds == 0  # A published it
    _check(kernel4, 4)


# ----------------------------------------------------------------------------- item 5: shapes
def test_one_joint_robot_kernels_keep_matrix_shapes(tmp_path):
    """For a one-joint robot (issue 17 #5: a one-column output came back 1-D) every kernel of
    wbc.codegen.algorithm_functions returns the shape of the eager function: M (1, 1), J (6, 1), B̂ (1, 1), Λ⁻¹ (1, 1),
    qdd and a0 (1,), with the same numbers."""
    m = synthetic.chain(1)
    q, v, tau = np.array([0.4]), np.array([-0.7]), np.array([0.3])
    frame = m.frames[-1].name
    ref = wbc.ReferenceFrame.LOCAL_WORLD_ALIGNED
    point = [wbc.PointConstraint(frame, (0.1, 0.0, 0.2))]
    one_row = [wbc.PointConstraint(frame)]  # 3 rows
    cases = [
        (traced.aba_function(m), (q, v, tau), [wbc.aba(m, q, v, tau)]),
        (traced.rnea_function(m), (q, v, tau), [wbc.rnea(m, q, v, tau)]),
        (traced.crba_function(m), (q,), [wbc.crba(m, q)]),
        (traced.nonlinear_effects_function(m), (q, v), [wbc.nonlinear_effects(m, q, v)]),
        (traced.frame_jacobians_function(m, [frame], ref), (q,), [wbc.frame_jacobian(m, q, frame, ref)]),
        (traced.input_matrix_function(m), (q,), [wbc.inertia_weighted_input_matrix(m, q)]),
        (traced.delassus_function(m, point), (q,), [wbc.delassus(m, q, point)]),
        (traced.input_matrix_function(m, one_row), (q,), [wbc.inertia_weighted_input_matrix(m, q, one_row)]),
        (
            traced.free_acceleration_and_input_matrix_function(m),
            (q, v),
            [wbc.free_acceleration(m, q, v), wbc.inertia_weighted_input_matrix(m, q)],
        ),
    ]
    for function, args, expected in cases:
        kernel = wbc.codegen.compile_function(function, directory=tmp_path)
        outputs = kernel(*args)
        assert [o.shape for o in outputs] == [np.shape(e) for e in expected] == kernel.output_shapes, kernel.name
        for o, e in zip(outputs, expected):
            assert_close(o, e, tol=TOL_KERNEL, what=kernel.name)


def test_declared_shapes_are_kept_exactly(tmp_path):
    """trace's declarations are the kernel's shapes: a (3, 1) matrix output stays (3, 1), a (1, 3)
    one (1, 3), a (1, 1) one (1, 1), a vector of one entry (1,); a (2, 1) matrix input is (2, 1); an
    output declared by name only is a vector when it has one column (the documented default)."""

    def build(x, A, s):
        return [A * s, A.T, s, ca.vertcat(x, s), A, ca.horzcat(A, A)]

    f = wbc.codegen.trace(
        "shapes",
        [("x", 2), ("A", (2, 1)), ("s", 1)],
        build,
        [("As", (2, 1)), ("At", (1, 2)), ("s1", (1, 1)), ("xs", 3), "A_undeclared", "AA"],
    )
    assert isinstance(f, ca.Function)
    assert f.input_shapes == ((2,), (2, 1), (1,))
    for copy in (pickle.loads(pickle.dumps(f)), copy_module.deepcopy(f)):
        assert isinstance(copy, wbc.codegen.TracedFunction) and str(copy) == str(f)
        assert (copy.input_shapes, copy.output_shapes) == (f.input_shapes, f.output_shapes)
    kernel = wbc.codegen.compile_function(f, directory=tmp_path)
    assert [i.shape for i in kernel.inputs] == [(2,), (2, 1), (1,)]
    out = kernel(np.array([1.0, 2.0]), np.array([[3.0], [4.0]]), 2.0)
    assert [o.shape for o in out] == [(2, 1), (1, 2), (1, 1), (3,), (2,), (2, 2)]
    assert_close(out[0], np.array([[6.0], [8.0]]), tol=0, what="A*s")
    assert_close(out[1], np.array([[3.0, 4.0]]), tol=0, what="A.T")
    assert_close(out[3], np.array([1.0, 2.0, 2.0]), tol=0, what="[x; s]")
    assert_close(out[5], np.array([[3.0, 3.0], [4.0, 4.0]]), tol=0, what="[A, A]")
    # the VM kernel has the same shapes
    vm = wbc.codegen.Kernel(f, f, "sx-vm")
    assert [o.shape for o in vm(np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([2.0]))] == [o.shape for o in out]
    # a plain casadi.Function: columns are vectors, other matrices keep (rows, cols)
    x = ca.SX.sym("x", 2)
    plain = wbc.codegen.compile_function(ca.Function("wbc_plain", [x], [x, x.T, x @ x.T]), directory=tmp_path)
    assert [o.shape for o in plain(np.ones(2))] == [(2,), (1, 2), (2, 2)]


def test_bound_matrix_input_keeps_its_shape(tmp_path):
    """bind_input on a matrix input: the kernel reads the array column-major and ``inputs`` keeps
    the declared shape as a view of it."""
    f = wbc.codegen.trace("bind", [("A", (2, 3))], lambda A: [A @ ca.DM([1.0, 10.0, 100.0])], [("y", 2)])
    kernel = wbc.codegen.compile_function(f, directory=tmp_path)
    storage = np.zeros(6)
    kernel.bind_input(0, storage)
    assert kernel.inputs[0].shape == (2, 3) and np.shares_memory(kernel.inputs[0], storage)
    kernel.inputs[0][:] = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert_close(kernel.run()[0], np.array([321.0, 654.0]), tol=0, what="bound input")


def test_kernel_call_is_one_c_call_that_follows_bound_inputs(tmp_path):
    """A compiled kernel's call with float64 arrays of the inputs' shapes is one C call (a builtin,
    made by the first call); after bind_input it reads the new storage (a call made before would
    write into the array the input no longer reads); the returned list is the kernel's outputs."""
    f = wbc.codegen.trace("cbind", [("x", 3), ("A", (2, 3))], lambda x, A: [A @ x, x * 2], [("y", 2), ("z", 3)])
    kernel = wbc.codegen.compile_function(f, directory=tmp_path)
    A = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    out = kernel(np.ones(3), A)
    assert out is kernel.outputs and wbc.codegen.builtins.is_builtin(kernel._c_call)
    assert_close(out[0], A @ np.ones(3), tol=0, what="C call")
    storage = np.zeros(3)
    kernel.bind_input(0, storage)
    assert_close(kernel(np.array([1.0, 2.0, 3.0]), A)[1], np.array([2.0, 4.0, 6.0]), tol=0, what="bound, called")
    assert_close(storage, np.array([1.0, 2.0, 3.0]), tol=0, what="the bound storage")
    assert_close(kernel(np.ones(3), np.ascontiguousarray(A))[0], A @ np.ones(3), tol=0, what="row-major matrix")


def test_trace_checks_its_declarations():
    """A declared output size that differs from the traced expression is a CompileError naming it;
    a malformed size is an InputError; a wrong number of outputs is a CompileError."""
    with pytest.raises(wbc.CompileError, match=r"output 'y' is 2x1, declared \(1, 2\)"):
        wbc.codegen.trace("t", [("x", 2)], lambda x: [x], [("y", (1, 2))])
    with pytest.raises(wbc.CompileError, match=r"1 outputs, 2 declared"):
        wbc.codegen.trace("t", [("x", 2)], lambda x: [x], ["a", "b"])
    for size in (-1, (2,), (2, -1), 2.0, True, "2"):
        with pytest.raises(wbc.InputError, match=r"input 'x'"):
            wbc.codegen.trace("t", [("x", size)], lambda x: [x])


# ----------------------------------------------------------------------------- item 13: wrong arguments
@pytest.fixture(scope="module")
def aba_kernel(tmp_path_factory):
    return wbc.codegen.compile_function(_function(), directory=tmp_path_factory.mktemp("kernels"))


@pytest.mark.parametrize(
    "q, got",
    [
        (np.zeros(2), r"\(2,\)"),
        (np.zeros(4), r"\(4,\)"),
        (np.zeros((3, 3)), r"\(3, 3\)"),
        (0.0, r"\(\)"),
        ([[0.1, 0.2], [0.3, 0.4]], r"\(2, 2\)"),
        (np.zeros(3, dtype=complex), "complex"),
        (np.array(["a", "b", "c"]), "<U1"),
        (None, "object"),
    ],
    ids=["short", "long", "matrix", "scalar", "nested list", "complex", "strings", "None"],
)
def test_wrong_argument_is_an_input_error_naming_it(aba_kernel, q, got):
    """A kernel called with a wrong size (issue 17 #13: a bare numpy reshape error) or with
    non-real values raises InputError naming the kernel, the argument, the expected shape and what
    it got; the kernel still works afterwards."""
    v = np.zeros(3)
    with pytest.raises(wbc.InputError) as info:
        aba_kernel(q, v, v)
    message = str(info.value)
    assert aba_kernel.name in message and "'q'" in message and "(3,)" in message, message
    assert re.search(got, message), message
    _check(aba_kernel)


def test_accepted_argument_forms(aba_kernel, tmp_path):
    """A vector may come as a column or a row or a list; a one-column matrix as a vector; a
    one-entry input as a scalar. A transposed matrix is refused (never silently reshuffled)."""
    m = synthetic.chain(3)
    q, v, tau = _state(m)
    expected = wbc.aba(m, q, v, tau)
    strided, big_endian = np.repeat(v, 2)[::2], tau.astype(">f8")  # refused by the memoryview path
    for args in [
        (q[:, None], v[None, :], list(tau)),
        (q, v.reshape(3, 1), tau.reshape(1, 3)),
        (q, strided, big_endian),
    ]:
        assert_close(aba_kernel(*args)[0], expected, tol=TOL_KERNEL, what="vector forms")
    f = wbc.codegen.trace("mat", [("A", (2, 3)), ("B", (3, 1)), ("s", (1, 1))], lambda A, B, s: [A @ B * s], [("y", 2)])
    kernel = wbc.codegen.compile_function(f, directory=tmp_path)
    A = np.arange(6.0).reshape(2, 3)
    assert_close(kernel(A, np.ones(3), 2.0)[0], A @ np.ones(3) * 2, tol=0, what="matrix forms")
    assert_close(kernel(A, np.ones(3, dtype=int), 2)[0], A @ np.ones(3) * 2, tol=0, what="integers")
    with pytest.raises(wbc.InputError, match=r"input 'A' must .* shape \(2, 3\), got shape \(3, 2\)"):
        kernel(A.T, np.ones(3), 2.0)
    with pytest.raises(TypeError, match=r"takes 3 inputs"):
        kernel(A, np.ones(3))


# ----------------------------------------------------------------------------- issue 9: sanitize("")
@pytest.mark.parametrize("prefix", ["wbc_", ""])
def test_sanitize_empty_and_underscore_only_names(prefix):
    """sanitize('') (issue 9: gave 'wbc__<hash>', which CasADi rejects) and every name with nothing
    left once cleaned give a valid CasADi function name without '__', usable by trace."""
    for name in ["", "_", "__", "-", ".", "é", "名前", "🤖", "\x00"]:
        s = wbc.codegen.sanitize(name, prefix)
        assert IDENTIFIER.match(s) and "__" not in s and s[0].isalpha(), (name, s)
        ca.Function(s, [ca.SX.sym("x")], [ca.SX.sym("x") * 0])  # CasADi accepts it
    f = wbc.codegen.trace("", [("", 1)], lambda x: [x], ["-"])
    assert IDENTIFIER.match(f.name()) and IDENTIFIER.match(f.name_in(0)) and IDENTIFIER.match(f.name_out(0))


def test_sanitize_hashed_looking_names_stay_distinct():
    """Kept names never look like hashed ones: '' vs its own hash digits, 'x_<hash>' and the like
    stay distinct (they collided before: sanitize('da39a3ee') == sanitize('') once '' was fixed
    naively)."""
    s = wbc.codegen.sanitize
    h = hashlib.sha1(b"").hexdigest()[:8]
    names = ["", h, f"x_{h}", f"x{h}", f"a_{h}", "a b", f"a_b_{hashlib.sha1(b'a b').hexdigest()[:8]}", "_", "a_b"]
    for prefix in ("wbc_", ""):
        results = [s(n, prefix) for n in names]
        assert len(set(results)) == len(names), list(zip(names, results))
    assert s("talos") == "wbc_talos" and s("q", "") == "q"


def test_kernel_names_and_warnings_in_process(tmp_path):
    """compile_function emits no warning on a normal compile and a cache hit."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _compile(tmp_path)
        _compile(tmp_path)


def test_the_compiler_starts_while_another_thread_changes_the_environment():
    """The compiler's processes get a copy of the environment: started from a thread while another
    thread set and removed variables, ``exec`` failed with EFAULT ("Bad address") in about one spawn
    of four (a background compile's warning in one CI run: the kernel left in the virtual machine)."""
    true = shutil.which("true")
    if true is None:
        pytest.skip("no `true` program")
    failures: list[BaseException] = []

    def spawn() -> None:
        for _ in range(120):
            try:
                kernel_cache._run([true], "true")
            except BaseException as e:  # reported below, whatever it is
                failures.append(e)

    spawner = threading.Thread(target=spawn)
    names = [f"WBC_TEST_ENV_RACE_{i}" for i in range(40)]
    try:
        spawner.start()
        i = 0
        while spawner.is_alive():
            os.environ[names[i % 40]] = "x" * (i % 97)
            if i % 3 == 0:
                os.environ.pop(names[(i * 7) % 40], None)
            i += 1
        spawner.join()
    finally:
        for name in names:
            os.environ.pop(name, None)
    assert not failures, failures[:3]
