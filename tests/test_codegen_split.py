"""The split C writer (wbc.codegen.emit): the same results as CasADi's own generated code, bit for
bit, whatever the part size; null input pointers behave as in CasADi's code; functions it
cannot write fall back to CasADi's generator; a kernel split over several files builds through the
cache (parallel compile, link) and matches the SX virtual machine."""

from __future__ import annotations

import subprocess
from pathlib import Path

import casadi as ca
import numpy as np
import pytest

import wbc
from wbc.codegen import algorithm_functions as traced
from wbc.codegen import emit
from wbc.codegen.cache import find_compiler
from wbc.robots import synthetic

FLAGS = ["-O1", "-fPIC", "-shared", "-fno-math-errno"]


def _every_operation() -> ca.Function:
    """An SX function using every scalar operation the writer handles, with constants of every
    kind (negative, tiny, huge, infinite, NaN), a sparse output and an input used by no output."""
    x = ca.SX.sym("x", 4)
    p = ca.SX.sym("p", 2, 2)
    unused = ca.SX.sym("unused", 3)
    a, b, c, d = x[0], x[1], x[2], x[3]
    e = [
        ca.sin(a) * p[1, 0] + 2.5,
        b / c,
        ca.fmax(a, p[0, 0]),
        ca.fmin(a, b),
        ca.if_else(a > 0, b, -c),
        ca.if_else(a <= b, c, d),
        a * a,
        ca.constpow(b, 3),
        ca.fabs(b),
        ca.sign(a),
        ca.sign(a - a),
        ca.atan2(a, b),
        ca.sqrt(ca.fabs(c)),
        ca.fabs(a) ** b,
        2 * a,
        1 / d,
        -1.5 * c,
        ca.logic_and(a, b),
        ca.logic_or(a - a, b),
        ca.logic_not(a),
        a >= b,
        a == b,
        a != b,
        ca.floor(a),
        ca.ceil(b),
        ca.fmod(a, b),
        ca.copysign(a, b),
        ca.exp(a),
        ca.log(ca.fabs(b)),
        ca.cos(c),
        ca.tan(d),
        ca.asin(ca.sin(a)),
        ca.acos(ca.cos(a)),
        ca.atan(b),
        ca.sinh(a),
        ca.cosh(a),
        ca.tanh(a),
        ca.asinh(a),
        ca.acosh(1 + a * a),
        ca.atanh(ca.tanh(a)),
        ca.erf(a),
        ca.hypot(a, b),
        ca.log1p(ca.fabs(a)),
        ca.expm1(a),
        ca.remainder(a, b),
        a * 1e-300 * 1e-10,
        b * 1.7976931348623157e308,
        ca.SX(np.inf),
        -ca.SX(np.inf),
        ca.SX(np.nan),
        ca.SX(0.1),
        ca.SX(-0.0) * a,
        ca.mtimes(p, x[:2])[0] + ca.mtimes(p.T, x[2:])[1],
    ]
    sparse = ca.SX(3, 2)
    sparse[0, 1] = a * b
    sparse[2, 0] = c
    return ca.Function("every_op", [x, p, unused], [ca.vertcat(*e), sparse])


def _compile(files: list[tuple[str, str]], directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    sources = []
    for file_name, text in files:
        (directory / file_name).write_text(text)
        sources.append(str(directory / file_name))
    library = directory / f"{name}.so"
    subprocess.run([find_compiler(), *FLAGS, *sources, "-o", str(library), "-lm"], check=True)
    return library


def _casadi_library(function: ca.Function, directory: Path) -> ca.Function:
    generator = ca.CodeGenerator(f"{function.name()}.c", {"with_header": False})
    generator.add(function)
    library = _compile([(f"{function.name()}.c", generator.dump())], directory / "casadi", function.name())
    return ca.external(function.name(), str(library))


def _split_library(function: ca.Function, directory: Path, part_ops: int, per_file: int = 2) -> ca.Function:
    split = emit.split_source(function, part_ops, per_file)
    library = _compile(list(split.files), directory / f"split{part_ops}", function.name())
    return ca.external(function.name(), str(library))


def _same_bits(a, b) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


needs_compiler = pytest.mark.skipif(find_compiler() is None, reason="no C compiler")


@needs_compiler
@pytest.mark.parametrize("part_ops", [1, 3, 17, 10_000])
def test_every_operation_is_bit_for_bit_casadis_code(part_ops, tmp_path):
    """On random inputs (and on special values: zeros, negatives, infinities), the split library's
    outputs have the bits of CasADi's generated code's (NaNs included), for parts of 1 operation
    (every value crosses a part) up to one part."""
    function = _every_operation()
    theirs = _casadi_library(function, tmp_path)
    ours = _split_library(function, tmp_path, part_ops)
    rng = np.random.default_rng(part_ops)
    cases = [rng.normal(size=4) * 3 for _ in range(20)] + [np.zeros(4), np.array([-1.0, 0.0, np.inf, -2.0])]
    for x in cases:
        args = [x, rng.normal(size=(2, 2)), rng.normal(size=3)]
        for mine, reference, vm in zip(ours(*args), theirs(*args), function(*args)):
            assert _same_bits(mine.full(), reference.full()), (x, mine, reference)
            # CasADi's VM evaluates the same operations with the same C library: equal (NaN where NaN)
            assert np.array_equal(mine.full(), vm.full(), equal_nan=True)


@needs_compiler
def test_slots_are_reused_and_values_cross_parts(tmp_path):
    """A long chain of dependent values split in parts of 5 operations: few work slots (reused once
    no later part reads them), and the result is the VM's exactly."""
    x = ca.SX.sym("x", 3)
    y = x
    for k in range(60):
        y = ca.vertcat(y[1] * 0.5 + ca.sin(y[2]), y[2] - y[0] / 3, y[0] + k)
    function = ca.Function("chain_values", [x], [y])
    split = emit.split_source(function, 5, 3)
    assert split.parts > 30 and 0 < split.slots <= 12  # not one per crossing value (hundreds)
    library = _compile(list(split.files), tmp_path, function.name())
    ours = ca.external(function.name(), str(library))
    x0 = np.array([0.3, -0.2, 1.1])
    assert _same_bits(ours(x0).full(), function(x0).full())


@needs_compiler
def test_missing_inputs_read_zeros(tmp_path):
    """Through CasADi's generic call with inputs left empty (null input pointers) the split
    library reads zeros, exactly like CasADi's code."""
    function = _every_operation()
    theirs = _casadi_library(function, tmp_path)
    ours = _split_library(function, tmp_path, 7)
    x = np.array([0.4, -1.3, 2.0, 0.7])
    for mine, reference in zip(ours(x, ca.DM(), ca.DM()), theirs(x, ca.DM(), ca.DM())):
        assert _same_bits(mine.full(), reference.full())


def test_unsupported_functions_are_refused_and_fall_back(tmp_path):
    """An MX function is not split (Unsupported); compile_function still compiles it through
    CasADi's generator and it evaluates correctly."""
    x = ca.MX.sym("x", 2)
    function = ca.Function("mx_fn", [x], [ca.sin(x) * 2])
    with pytest.raises(emit.Unsupported):
        emit.split_source(function)
    if find_compiler() is None:
        return
    kernel = wbc.codegen.compile_function(function, directory=tmp_path)
    assert kernel.backend == "c"
    x0 = np.array([0.3, -0.4])
    np.testing.assert_array_equal(kernel(x0)[0], np.sin(x0) * 2)


@needs_compiler
def test_multi_file_kernel_through_the_cache_matches_the_vm(tmp_path, monkeypatch):
    """The balance controller's kernel of a small floating tree with two point contacts, split into
    parts of 400 operations (tens of files compiled in parallel, then linked) through the cache:
    every output equals the SX VM's bit for bit on random states and parameters; a second compile
    is a cache hit."""
    monkeypatch.setattr(wbc.codegen.cache, "DEFAULT_PART_OPS", 400)
    monkeypatch.setattr(wbc.codegen.cache, "PARTS_PER_FILE", 2)
    from wbc import tasks
    from wbc.control.builder import trace_step

    model = synthetic.random_tree(6, np.random.default_rng(3), floating_base=True)
    links = [j.link for j in model.joints[1:]]
    contacts = [wbc.PointContact(links[-1], mu=0.7), wbc.PointContact(links[-2], mu=0.7)]
    ctrl = wbc.WholeBodyController(model, [tasks.CoMTask(weight=10.0, kp=100.0), tasks.PostureTask(model)], contacts)
    function, _ = trace_step(model, ctrl.contributors, ctrl.contacts, ctrl.input_matrix, 1e-9)
    split = emit.split_source(function, 400, 2)
    assert len(split.files) >= 3, "the test should exercise several files"
    kernel = wbc.codegen.compile_function(function, directory=tmp_path)
    assert kernel.backend == "c" and kernel.compile_seconds > 0
    rng = np.random.default_rng(5)
    for _ in range(5):
        args = [rng.normal(size=s) for s in kernel.input_shapes]
        args[0] = wbc.random_configuration(model, rng)
        compiled = [o.copy() for o in kernel(*args)]
        vm = function(*args)
        for name, mine, reference in zip(kernel.output_names, compiled, vm):
            expected = np.asarray(reference.full()).reshape(mine.shape, order="F")
            assert _same_bits(mine, expected), name
    again = wbc.codegen.compile_function(function, directory=tmp_path)
    assert again.compile_seconds == 0 and again.library == kernel.library


@needs_compiler
def test_one_failing_file_of_many_is_a_compile_error(tmp_path, monkeypatch):
    """When the compiler fails on one of several files, compile_function raises a CompileError
    naming that file and its output, and leaves no library, sidecar or build directory."""
    monkeypatch.setattr(wbc.codegen.cache, "DEFAULT_PART_OPS", 20)
    monkeypatch.setattr(wbc.codegen.cache, "PARTS_PER_FILE", 1)
    script = tmp_path / "failcc"
    script.write_text(
        f'#!/bin/sh\ncase "$*" in *_2.c*) echo "broken on purpose" >&2; exit 1;; esac\nexec {find_compiler()} "$@"\n'
    )
    script.chmod(0o755)
    function = traced.aba_function(synthetic.chain(3))
    cache = tmp_path / "cache"
    with pytest.raises(wbc.CompileError, match=r"(?s)compiling \S+_2\.c failed.*broken on purpose"):
        wbc.codegen.compile_function(function, directory=cache, compiler=str(script))
    assert not list(cache.glob("*.so")) and not list(cache.glob("*.sha256")) and not list(cache.glob(".build-*"))
    kernel = wbc.codegen.compile_function(function, directory=cache)
    assert kernel.backend == "c"
