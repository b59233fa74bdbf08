"""The kernel cache and the compile path: cache hits, concurrent builds from several processes,
corrupt or foreign libraries (detected through the .sha256 sidecar and rebuilt, never loaded), no C
compiler (CasADi VM fallback with one warning), a failing compiler, and name sanitizing.

Every test compiles a small function (a 3-link chain's ABA, well under a second) into its own
temporary directory, so nothing touches the user's cache."""

from __future__ import annotations

import hashlib
import json
import keyword
import os
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path

import casadi as ca
import numpy as np
import pytest

import wbc
from tests.helpers import TOL_KERNEL, assert_close
from wbc.codegen import algorithm_functions as traced
from wbc.robots import synthetic

pytestmark = pytest.mark.usefixtures("no_compile_in_flight")  # (conftest: tests that set WBC_CC)

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _model(n: int = 3) -> wbc.Model:
    return synthetic.chain(n)


def _function(n: int = 3) -> ca.Function:
    return traced.aba_function(_model(n))


def _state(model):
    rng = np.random.default_rng(70)
    return wbc.random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)


def _check_results(kernel, n: int = 3) -> None:
    m = _model(n)
    q, v, tau = _state(m)
    assert_close(kernel(q, v, tau)[0].copy(), wbc.aba(m, q, v, tau), tol=TOL_KERNEL, what=f"{kernel.backend} kernel")


def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _libraries(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.so") if not p.name.startswith("."))


# A child process: compile chain(n)'s ABA into a directory (optionally after a start barrier) and
# report what happened as JSON.
CHILD = r"""
import json, os, sys, time, warnings
import numpy as np
import wbc
from wbc.robots import synthetic

directory, n, ready, go, count = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
model = synthetic.chain(n)
function = wbc.codegen.algorithm_functions.aba_function(model)
if ready:
    open(ready, "w").close()
    while not os.path.exists(go):
        time.sleep(0.001)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    kernels = [wbc.codegen.compile_function(function, directory=directory) for _ in range(count)]
rng = np.random.default_rng(70)
q, v, tau = wbc.random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
print(json.dumps({
    "library": [None if k.library is None else str(k.library) for k in kernels],
    "backend": [k.backend for k in kernels],
    "compile_seconds": [k.compile_seconds for k in kernels],
    "qdd": kernels[0](q, v, tau)[0].tolist(),
    "warnings": [w.category.__name__ for w in caught],
}))
"""


def _child_cmd(directory, n=3, ready="", go="", count=1):
    return [sys.executable, "-c", CHILD, str(directory), str(n), str(ready), str(go), str(count)]


def _run_child(directory, n=3, count=1, env=None) -> dict:
    proc = subprocess.run(_child_cmd(directory, n, count=count), capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _env(**changes) -> dict:
    env = dict(os.environ)
    env.pop("WBC_CC", None)
    env.update(changes)
    return env


# ----------------------------------------------------------------------------- cache hits
def test_cache_hit(tmp_path):
    """The second compile of the same function reuses the library: compile_seconds == 0, same file,
    and the sidecar holds the library's SHA-256."""
    first = wbc.codegen.compile_function(_function(), directory=tmp_path)
    assert first.backend == "c" and first.compile_seconds > 0
    second = wbc.codegen.compile_function(_function(), directory=tmp_path)
    assert second.compile_seconds == 0
    assert second.library == first.library and first.library.parent == tmp_path
    assert _libraries(tmp_path) == [first.library]
    key, digest = first.library.with_suffix(".sha256").read_text().split()
    assert digest == _sha256(first.library)
    assert first.library.name.startswith(f"{_function().name()}-{key[:24]}")
    _check_results(first)
    _check_results(second)


def test_cache_hit_across_processes(tmp_path):
    """A library built by another process is reused (the key is deterministic)."""
    built = _run_child(tmp_path)
    assert built["compile_seconds"][0] > 0
    kernel = wbc.codegen.compile_function(_function(), directory=tmp_path)
    assert kernel.compile_seconds == 0 and str(kernel.library) == built["library"][0]
    _check_results(kernel)


def test_distinct_functions_get_distinct_libraries(tmp_path):
    """Different functions (or the same name with different bodies) never share a library."""
    a = wbc.codegen.compile_function(_function(3), directory=tmp_path)
    b = wbc.codegen.compile_function(_function(4), directory=tmp_path)
    c = wbc.codegen.compile_function(traced.rnea_function(_model(3)), directory=tmp_path)
    assert len({a.library, b.library, c.library}) == 3
    _check_results(a, 3)
    _check_results(b, 4)


def test_cache_dir_from_environment(tmp_path, monkeypatch):
    """Without ``directory=``, kernels go to $WBC_CACHE_DIR."""
    monkeypatch.setenv("WBC_CACHE_DIR", str(tmp_path / "cache"))
    assert wbc.codegen.cache_dir() == tmp_path / "cache"
    kernel = wbc.codegen.compile_function(_function())
    assert kernel.library.parent == tmp_path / "cache"
    _check_results(kernel)


def test_flags_are_part_of_the_key(tmp_path):
    """Other compiler flags give another library (and still the same numbers)."""
    a = wbc.codegen.compile_function(_function(), directory=tmp_path)
    b = wbc.codegen.compile_function(_function(), directory=tmp_path, flags=("-O0", "-fPIC", "-shared"))
    assert a.library != b.library and b.compile_seconds > 0
    _check_results(b)


# ----------------------------------------------------------------------------- concurrency
def test_concurrent_builds(tmp_path):
    """Four processes compiling the same function into the same fresh directory at once all succeed
    with correct results; the library is built exactly once and no temporary file is left."""
    n_proc = 4
    go = tmp_path / "go"
    cache = tmp_path / "cache"
    procs = []
    for i in range(n_proc):
        cmd = _child_cmd(cache, ready=tmp_path / f"ready{i}", go=go)
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()))
    try:
        deadline = time.monotonic() + 120
        while not all((tmp_path / f"ready{i}").exists() for i in range(n_proc)):
            assert time.monotonic() < deadline, "children did not start"
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs if p.poll() is not None]
            time.sleep(0.005)
        go.touch()  # release them together
        results = []
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    m = _model()
    q, v, tau = _state(m)
    expected = wbc.aba(m, q, v, tau)
    for r in results:
        assert r["backend"] == ["c"]
        assert_close(np.array(r["qdd"]), expected, tol=TOL_KERNEL, what="concurrently built kernel")
    assert len({r["library"][0] for r in results}) == 1
    assert sum(r["compile_seconds"][0] > 0 for r in results) == 1, [r["compile_seconds"] for r in results]
    libs = _libraries(cache)
    assert [str(p) for p in libs] == [results[0]["library"][0]]
    assert not [p.name for p in cache.iterdir() if p.name.startswith(".build-")]
    _key, digest = libs[0].with_suffix(".sha256").read_text().split()
    assert digest == _sha256(libs[0])


# ----------------------------------------------------------------------------- corrupt libraries
def _corrupt(kind: str, library: Path, tmp_path: Path) -> None:
    data = library.read_bytes()
    if kind == "truncated":
        library.write_bytes(data[: len(data) // 2])
    elif kind == "empty":
        library.write_bytes(b"")
    elif kind == "flipped bytes":  # same size, a few bytes changed in the middle
        mid = len(data) // 2
        library.write_bytes(data[:mid] + bytes(b ^ 0xFF for b in data[mid : mid + 16]) + data[mid + 16 :])
    elif kind == "garbage":
        library.write_bytes(b"#!/bin/sh\necho not a library\n" * 100)
    elif kind == "foreign library":  # a valid shared library of another kernel
        other = _run_child(tmp_path / "other", n=4)
        library.write_bytes(Path(other["library"][0]).read_bytes())
    elif kind == "deleted":
        library.unlink()
    else:
        raise ValueError(kind)


@pytest.mark.parametrize("kind", ["truncated", "empty", "flipped bytes", "garbage", "foreign library", "deleted"])
def test_corrupt_library_is_rebuilt_not_loaded(kind, tmp_path, monkeypatch):
    """A library whose bytes no longer match its sidecar is rebuilt (compile_seconds > 0) before
    anything is loaded: every file casadi.external opens hashes to the sidecar's digest."""
    cache = tmp_path / "cache"
    built = _run_child(cache)  # built in another process, so this one never mapped the file
    library = Path(built["library"][0])
    _corrupt(kind, library, tmp_path)
    bad_digest = _sha256(library) if library.exists() else None

    loaded = []
    real_external = ca.external

    def spy(name, path, *args):
        loaded.append(_sha256(Path(path)))
        return real_external(name, path, *args)

    monkeypatch.setattr(ca, "external", spy)
    kernel = wbc.codegen.compile_function(_function(), directory=cache)
    assert kernel.compile_seconds > 0, "the corrupt library was not rebuilt"
    assert kernel.library == library
    _, digest = library.with_suffix(".sha256").read_text().split()
    # loaded twice: the fresh build is checked before it is published, then the published copy
    assert loaded == [digest, digest] and digest != bad_digest
    _check_results(kernel)
    # and the rebuilt library is a cache hit again
    assert wbc.codegen.compile_function(_function(), directory=cache).compile_seconds == 0


def test_corrupt_sidecar_triggers_rebuild(tmp_path):
    """A sidecar that is missing or unreadable as 'key digest' makes the library be rebuilt."""
    cache = tmp_path / "cache"
    library = Path(_run_child(cache)["library"][0])
    for content in (None, "", "nonsense", "a b c"):
        sidecar = library.with_suffix(".sha256")
        if content is None:
            sidecar.unlink()
        else:
            sidecar.write_text(content)
        kernel = wbc.codegen.compile_function(_function(), directory=cache)
        assert kernel.compile_seconds > 0, repr(content)
        _check_results(kernel)


# ----------------------------------------------------------------------------- no compiler
@pytest.mark.parametrize("value", ["", "no-such-compiler-wbc-test"])
def test_no_compiler_falls_back_to_the_vm(value, tmp_path, monkeypatch):
    """WBC_CC="" (or a missing compiler) makes find_compiler() return None; kernels then run in
    CasADi's SX VM (backend "sx-vm", no library, nothing written) with the same results."""
    monkeypatch.setenv("WBC_CC", value)
    assert wbc.codegen.find_compiler() is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wbc.WbcPerformanceWarning)
        kernel = wbc.codegen.compile_function(_function(), directory=tmp_path / "cache")
    assert kernel.backend == "sx-vm" and kernel.library is None
    assert not (tmp_path / "cache").exists()
    _check_results(kernel)


def test_no_compiler_warns_once_per_process(tmp_path):
    """In a fresh process without a compiler, two compiles emit exactly one WbcPerformanceWarning and
    give the compiled kernel's numbers."""
    vm = _run_child(tmp_path / "vm", count=2, env=_env(WBC_CC=""))
    assert vm["backend"] == ["sx-vm", "sx-vm"] and vm["library"] == [None, None]
    assert vm["warnings"].count("WbcPerformanceWarning") == 1, vm["warnings"]
    compiled = _run_child(tmp_path / "c")
    assert compiled["warnings"] == []
    assert_close(np.array(vm["qdd"]), np.array(compiled["qdd"]), tol=TOL_KERNEL, what="VM vs compiled")


def test_compiler_from_environment(monkeypatch):
    """WBC_CC names the compiler (resolved on PATH)."""
    import shutil

    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "these tests need a C compiler"
    monkeypatch.setenv("WBC_CC", os.path.basename(cc))
    assert wbc.codegen.find_compiler() == shutil.which(os.path.basename(cc))


def test_failing_compiler_raises_compile_error(tmp_path):
    """A compiler that fails gives a CompileError with its command, and leaves no library behind."""
    import shutil

    false = shutil.which("false")
    assert false
    with pytest.raises(wbc.CompileError, match=r"compiling .* failed"):
        wbc.codegen.compile_function(_function(), directory=tmp_path, compiler=false)
    assert _libraries(tmp_path) == []
    assert not list(tmp_path.glob(".build-*")) and not list(tmp_path.glob("*.sha256"))
    # a working compiler afterwards builds normally
    _check_results(wbc.codegen.compile_function(_function(), directory=tmp_path))


# ----------------------------------------------------------------------------- names
HOSTILE = [
    "talos",
    "aba_talos_39_38",
    "with space",
    "tab\tand\nnewline",
    'double"quote',
    "single'quote",
    "semi;colon",
    "back\\slash",
    "forward/slash",
    "../../etc/passwd",
    "..",
    ".",
    "",
    "_",
    "___",
    "-",
    "9starts_with_digit",
    "é",
    "ü",
    "名前",
    "🤖",
    "émoji🤖robot",
    "x" * 300,
    "y" * 48,
    "y" * 49,
    "a b",
    "a-b",
    "a.b",
    "a__b",
    "a_b_",
    "_a_b",
    "int",
    "$(rm -rf ~)",
    "`id`",
    "a\x00b",
    "null\x00",
]


@pytest.mark.parametrize("prefix", ["wbc_", ""])
def test_sanitize_gives_c_identifiers(prefix):
    """Hostile names become C identifiers (and file-name stems) of at most 64 characters, without
    '__', starting with the prefix or a letter; clean names keep their text."""
    for name in HOSTILE:
        s = wbc.codegen.sanitize(name, prefix)
        assert IDENTIFIER.match(s), (name, s)
        assert "__" not in s, (name, s)  # CasADi rejects '__' in function names
        assert len(s) <= 64, (name, s)
        assert s.isascii()
        assert s.startswith(prefix) or s.startswith("x" + prefix), (name, s)
        assert s == wbc.codegen.sanitize(name, prefix)  # deterministic
        if prefix:
            assert not keyword.iskeyword(s) and s not in {"int", "double", "void", "return"}
    assert wbc.codegen.sanitize("aba_talos_39_38") == "wbc_aba_talos_39_38"
    assert wbc.codegen.sanitize("q", "") == "q"


@pytest.mark.parametrize("prefix", ["wbc_", ""])
def test_sanitize_distinct_hostile_names_stay_distinct(prefix):
    """Distinct hostile names (including ones that clean up alike: 'a b', 'a-b', 'a_b', 'a__b', ...,
    and long names sharing their first 300 characters) give distinct results."""
    names = HOSTILE + ["a_b", "x" * 300 + "1", "x" * 300 + "2", "a/b", "a b ", " a b"]
    results = {}
    for name in names:
        s = wbc.codegen.sanitize(name, prefix)
        assert s not in results, f"{name!r} and {results[s]!r} both sanitize to {s!r}"
        results[s] = name


def test_sanitize_is_injective_when_the_prefix_is_already_there():
    """The docstring's promise, 'distinct inputs ... get distinct results', also for a name that
    already carries the prefix ('a_b' vs 'wbc_a_b') or the digit guard ('1x' vs 'x1x', prefix '')."""
    s = wbc.codegen.sanitize
    assert s("a_b") != s("wbc_a_b"), f"sanitize('a_b') == sanitize('wbc_a_b') == {s('a_b')!r}"
    assert s("1x", "") != s("x1x", ""), f"sanitize('1x', '') == sanitize('x1x', '') == {s('1x', '')!r}"


def test_hostile_model_name_reaches_no_path(tmp_path):
    """A model whose name is a path traversal with quotes and spaces compiles into the cache directory
    under a sanitized file name, and works."""
    import dataclasses

    model = dataclasses.replace(_model(), name='../../ evil "name"; rm -rf ~ 名前')
    kernel = wbc.codegen.compile_function(traced.aba_function(model), directory=tmp_path)
    assert kernel.library.parent == tmp_path
    assert IDENTIFIER.match(kernel.name)
    assert re.match(r"^[A-Za-z0-9_]+-[0-9a-f]{24}\.so$", kernel.library.name), kernel.library.name
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == sorted(
        kernel.library.with_suffix(s).name for s in (".lock", ".sha256", ".so")
    )
    _check_results(kernel)


def test_sanitize_truncation_never_leaves_a_double_underscore():
    """A long name cut right after an underscore stays a valid CasADi function name (regression)."""
    name = "delassus_pvosim_8c30_g1_29dof_with_hand_rev_1_0_50_49"
    clean = wbc.codegen.sanitize(name)
    assert "__" not in clean
    wbc.codegen.trace(name, [("q", 1)], lambda q: [q])  # CasADi rejects '__' in names
