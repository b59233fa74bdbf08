"""Trust in the kernel cache (issue 24, docs/security.md): a library or an index is used only when
nobody but this user (or root) can have written it; wbc creates private directories and 0644 files
whatever the umask; an index entry's digest covers the library, the record and the QP structure,
and a structure that does not fit its kernel is traced again.

The planted library's constructor writes a marker file: the marker existing means the planted
code ran in the process loading the cache (the issue's code execution as root)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import wbc
from tests.helpers import TOL_KERNEL, assert_close
from wbc import tasks
from wbc.codegen import algorithm_functions as traced
from wbc.codegen import cache as cache_module
from wbc.codegen import index as index_module
from wbc.codegen.cache import find_compiler
from wbc.codegen.trust import untrusted_directory, untrusted_file
from wbc.errors import WbcSecurityWarning
from wbc.robots import synthetic

pytestmark = pytest.mark.skipif(find_compiler() is None, reason="no C compiler")

PLANTED = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen(MARKER, "w");
    if (f) { fputs("planted code ran\n", f); fclose(f); }
}
"""


def _function():
    return traced.aba_function(synthetic.chain(3))


def _check(kernel) -> None:
    m = synthetic.chain(3)
    rng = np.random.default_rng(70)
    q, v, tau = wbc.random_configuration(m, rng), rng.normal(size=m.nv), rng.normal(size=m.nv)
    assert_close(kernel(q, v, tau)[0].copy(), wbc.aba(m, q, v, tau), tol=TOL_KERNEL, what="kernel")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _plant(directory: Path, genuine: Path, marker: Path) -> Path:
    """Put a library whose constructor writes ``marker`` under the name of the ``genuine`` kernel
    library in ``directory``, with a sidecar recording the genuine key and the planted bytes (what
    anyone can compute). Returns the planted library."""
    source = directory.parent / "planted.c"
    source.write_text(PLANTED)
    planted = directory / genuine.name
    subprocess.run(
        [find_compiler(), "-shared", "-fPIC", f'-DMARKER="{marker}"', str(source), "-o", str(planted)], check=True
    )
    key = genuine.with_suffix(".sha256").read_text().split()[0]
    planted.with_suffix(".sha256").write_text(f"{key} {_sha256(planted)}\n")
    return planted


@pytest.fixture
def private_fallback(tmp_path, monkeypatch):
    """The private fallback cache, inside this test's directory."""
    fallback = tmp_path / "fallback"
    monkeypatch.setattr(cache_module, "_fallback_path", lambda: fallback)
    monkeypatch.setattr(index_module, "_fallback_path", lambda: fallback)
    return fallback


def _genuine(tmp_path: Path) -> Path:
    return wbc.codegen.compile_function(_function(), directory=tmp_path / "genuine").library


@pytest.mark.parametrize("opening", ["world-writable", "group-writable", "open parent", "open library"])
def test_planted_library_in_an_open_cache_never_runs(opening, tmp_path, private_fallback):
    """As root, a cache directory (or a directory above it, or the library itself) others can write,
    holding a planted library with a matching sidecar: the planted library is never loaded (its
    constructor does not run), the kernel is built in the private fallback with a
    WbcSecurityWarning naming the open place, and it computes the right numbers."""
    genuine = _genuine(tmp_path)
    parent = tmp_path / "lab"
    shared = parent / "cache"
    shared.mkdir(parents=True)
    marker = tmp_path / "marker"
    planted = _plant(shared, genuine, marker)
    mode = {"world-writable": 0o777, "group-writable": 0o775}.get(opening, 0o755)
    shared.chmod(mode)
    if opening == "open parent":
        parent.chmod(0o777)
    if opening == "open library":  # in a private directory: not loaded, rebuilt in its place
        planted.chmod(0o666)
        kernel = wbc.codegen.compile_function(_function(), directory=shared)
        assert kernel.library == planted and kernel.compile_seconds > 0, "rebuilt over the open file"
        assert stat.S_IMODE(planted.stat().st_mode) == 0o644
    else:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kernel = wbc.codegen.compile_function(_function(), directory=shared)
        assert not marker.exists(), "the planted library's constructor ran"
        open_place = parent if opening == "open parent" else shared
        assert any(w.category is WbcSecurityWarning and str(open_place) in str(w.message) for w in caught), caught
        assert kernel.library.parent == private_fallback
        assert _sha256(planted) != _sha256(kernel.library)
    assert not marker.exists(), "the planted library's constructor ran"
    assert kernel.backend == "c"
    _check(kernel)


def test_sticky_open_ancestor_is_fine_but_an_open_cache_is_not(tmp_path):
    """An ancestor others can write with the sticky bit (as /tmp) is trusted; the cache directory
    itself never is when others can write it, sticky or not; a link to a private directory is."""
    top = tmp_path / "top"
    (top / "cache").mkdir(parents=True)
    top.chmod(0o1777)
    assert untrusted_directory(top / "cache") is None
    (top / "cache").chmod(0o1777)
    assert "written by others" in untrusted_directory(top / "cache")
    (tmp_path / "private").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "private")
    assert untrusted_directory(tmp_path / "link") is None
    (tmp_path / "private").chmod(0o777)
    assert untrusted_directory(tmp_path / "link") is not None
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert "not a regular file" in untrusted_file(fifo)


def _other_user() -> tuple[int, int, str]:
    """A fresh user (useradd, as root), removed at the end of the test."""
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("needs root and useradd to create another user")
    name = f"wbct{os.getpid() % 100000}"
    proc = subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], capture_output=True)
    if proc.returncode not in (0, 9):  # 9: exists already
        pytest.skip(f"useradd failed: {proc.stderr.decode(errors='replace')}")
    import pwd

    entry = pwd.getpwnam(name)
    return entry.pw_uid, entry.pw_gid, name


@pytest.fixture
def other_user():
    uid, gid, name = _other_user()
    yield uid, gid
    subprocess.run(["userdel", name], capture_output=True)


def test_a_cache_another_user_owns_is_not_loaded_by_root(tmp_path, private_fallback, other_user):
    """Another (real, just created) user owns a cache directory closed to everyone else (0755) and
    has planted a library there: root pointed at that cache does not load it (that user could have
    put anything there), builds privately with a WbcSecurityWarning naming the owner."""
    uid, gid = other_user
    genuine = _genuine(tmp_path)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    marker = tmp_path / "marker"
    planted = _plant(theirs, genuine, marker)
    for path in (theirs, planted, planted.with_suffix(".sha256")):
        os.chown(path, uid, gid)
    theirs.chmod(0o755)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel = wbc.codegen.compile_function(_function(), directory=theirs)
    assert not marker.exists(), "the other user's library ran as root"
    assert any(w.category is WbcSecurityWarning and f"owner uid {uid}" in str(w.message) for w in caught)
    assert kernel.library.parent == private_fallback
    _check(kernel)


def test_a_user_does_not_load_from_a_cache_root_left_open(tmp_path, other_user):
    """The other user as the victim: a cache directory root made world-writable, with a planted
    library: a process of that user does not load it (run as that user; skipped when this Python
    cannot run as another user, e.g. installed under a private home)."""
    uid, gid = other_user
    base = Path(os.path.realpath(os.environ.get("TMPDIR", "/tmp"))) / f"wbc-trust-{os.getpid()}"
    base.mkdir(mode=0o755)
    try:
        base.chmod(0o755)
        try:
            probe = subprocess.run(
                [sys.executable, "-c", "import wbc"],
                preexec_fn=lambda: (os.setgid(gid), os.setuid(uid)),
                capture_output=True,
                cwd=str(base),
            )
            failure = probe.stderr.decode(errors="replace")[-200:] if probe.returncode != 0 else None
        except OSError as e:
            failure = str(e)
        if failure is not None:
            pytest.skip(f"this Python cannot run as uid {uid}: {failure}")
        genuine = _genuine(tmp_path)
        shared = base / "cache"
        shared.mkdir()
        marker = base / "marker"
        _plant(shared, genuine, marker)
        shared.chmod(0o777)
        base.chmod(0o777 | stat.S_ISVTX)
        child = (
            "import warnings, wbc\nfrom wbc.robots import synthetic\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    f = wbc.codegen.algorithm_functions.aba_function(synthetic.chain(3))\n"
            f"    k = wbc.codegen.compile_function(f, directory={str(shared)!r})\n"
            "print(k.library, [str(x.message) for x in w])\n"
        )
        env = dict(os.environ, HOME=str(base), TMPDIR=str(base))
        env.pop("WBC_CACHE_DIR", None)
        proc = subprocess.run(
            [sys.executable, "-c", child],
            preexec_fn=lambda: (os.setgid(gid), os.setuid(uid)),
            capture_output=True,
            text=True,
            env=env,
            cwd=str(base),
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        assert not marker.exists(), "root's open cache ran a planted library as the user"
        assert "written by others" in proc.stdout and str(shared) not in proc.stdout.split()[0]
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_umask_000_still_gives_private_directories_and_0644_files(tmp_path, monkeypatch):
    """Under umask 000 (the issue: a world-writable cache), every directory wbc creates for the cache
    is 0700 and every file it publishes (library, sidecar, lock, index) 0644."""
    cache = tmp_path / "a" / "b" / "cache"
    monkeypatch.setenv("WBC_CACHE_DIR", str(cache))
    old = os.umask(0)
    try:
        ctrl = _controller()
        ctrl.compile()
        wbc.codegen.compile_function(_function())
    finally:
        os.umask(old)
    for directory in (tmp_path / "a", tmp_path / "a" / "b", cache):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    files = [p for p in cache.iterdir() if not p.name.startswith(".")]
    suffixes = {p.suffix for p in files}
    assert {".so", ".sha256", ".lock", ".json"} <= suffixes <= {".so", ".sha256", ".lock", ".json", ".txt"}  # memos
    for p in files:
        assert stat.S_IMODE(p.stat().st_mode) == 0o644, p


# ----------------------------------------------------------------------------- the index entry
def _controller():
    model = synthetic.random_tree(5, np.random.default_rng(3), floating_base=True)
    links = [j.link for j in model.joints[1:]]
    contacts = [wbc.PointContact(links[-1], mu=0.7), wbc.PointContact(links[-2], mu=0.7)]
    return wbc.WholeBodyController(
        model, [tasks.CoMTask(weight=10.0, kp=100.0), tasks.PostureTask(model, weight=1e-2, kp=30.0)], contacts
    )


def _step(ctrl):
    q = wbc.neutral(ctrl.model)
    ctrl.tasks[0].set_target_from_configuration(ctrl.model, q)
    ctrl.tasks[1].set_target_from_configuration(ctrl.model, q)
    return ctrl.step(q, np.zeros(ctrl.model.nv))


def _index(cache: Path) -> tuple[Path, dict]:
    [path] = cache.glob("index-step-*.json")
    return path, json.loads(path.read_text())


def test_negated_friction_rows_in_the_index_are_refused(tmp_path, monkeypatch, traces):
    """The issue's tampered index: G_constant (the friction cone rows) negated. The entry's digest
    no longer matches: the index is refused with a WbcSecurityWarning, the kernel traced again,
    and the step gives the same torques and contact forces as the untouched controller (before:
    OPTIMAL with every contact force 0 and tens of N m of torque error)."""
    monkeypatch.setenv("WBC_CACHE_DIR", str(tmp_path / "cache"))
    reference = _step(_controller())
    path, record = _index(tmp_path / "cache")
    shape, values = record["extra"]["G_constant"]
    assert any(values), "the controller has constant friction rows"
    record["extra"]["G_constant"] = [shape, [-x for x in values]]
    path.write_text(json.dumps(record))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = _step(_controller())
    forces = np.concatenate(list(out.forces.values()))
    assert np.allclose(forces, np.concatenate(list(reference.forces.values())), rtol=1e-9, atol=1e-9)
    assert np.allclose(out.tau, reference.tau, rtol=1e-9, atol=1e-9)
    assert np.linalg.norm(forces) > 1.0
    assert traces[0] == 2
    assert any(w.category is WbcSecurityWarning and "digest" in str(w.message) for w in caught)


@pytest.mark.parametrize("change", ["variables", "traced rows", "rows", "G shape", "posture rows", "cost rows"])
def test_a_structure_that_does_not_fit_is_traced_again(change, tmp_path, monkeypatch, traces):
    """An index whose structure was changed and re-digested (what the digest cannot catch: written
    by another wbc, or edited by its owner) is checked against the loaded kernel and the
    controller: a misfit is traced again with a warning, never a raw IndexError."""
    monkeypatch.setenv("WBC_CACHE_DIR", str(tmp_path / "cache"))
    reference = _step(_controller())
    path, record = _index(tmp_path / "cache")
    s = record["extra"]
    if change == "variables":
        s["variables"] = [[name, size + 1] for name, size in s["variables"]]
    elif change == "traced rows":
        s["traced_rows"] = [*s["traced_rows"], 10**6]
    elif change == "rows":
        s["costs"][-1][2] += 5
    elif change == "posture rows":  # the posture's rows of B̂ index past B̂
        traced, rows, index = s["cost_rows"]
        assert rows, "the posture's cost rows are rows of B̂"
        s["cost_rows"] = [traced, rows, [10**6 for _ in index]]
    elif change == "cost rows":  # a posture row said to be traced: the kernel's A has fewer rows
        traced, rows, index = s["cost_rows"]
        s["cost_rows"] = [sorted([*traced, rows[0]]), rows[1:], index[1:]]
    else:
        shape, values = s["G_constant"]
        s["G_constant"] = [[shape[0] - 1, shape[1]], values[: (shape[0] - 1) * shape[1]]]
    library = tmp_path / "cache" / f"{record['library']}.so"
    record["digest"] = index_module.entry_digest(record, _sha256(library))
    path.write_text(json.dumps(record))
    with pytest.warns(WbcSecurityWarning, match="not used"):
        out = _step(_controller())
    assert traces[0] == 2
    assert np.allclose(out.tau, reference.tau, rtol=1e-9, atol=1e-9)


def test_an_open_index_file_is_not_read(tmp_path, monkeypatch, traces):
    """An index file others can write (in a private cache) is not read."""
    monkeypatch.setenv("WBC_CACHE_DIR", str(tmp_path / "cache"))
    _step(_controller())
    path, _ = _index(tmp_path / "cache")
    path.chmod(0o666)
    with pytest.warns(WbcSecurityWarning, match="written by others"):
        _step(_controller())
    assert traces[0] == 2
