"""The instruction-set flags of compiled code (wbc.codegen.isa): ``-mavx`` only on x86-64 Linux with
AVX, part of every kernel's and the shortcut's flags, and the same bits as the baseline encoding
(no fused multiply-add) on every scalar operation and on a traced step kernel."""

from __future__ import annotations

import subprocess
from pathlib import Path

import casadi as ca
import numpy as np
import pytest

import wbc
from wbc import tasks
from wbc.codegen import DEFAULT_FLAGS, HOT_FLAGS, emit
from wbc.codegen.cache import find_compiler
from wbc.codegen.isa import ISA_FLAGS, isa_flags
from wbc.control import builder
from wbc.control.shortcut_library import FLAGS as SHORTCUT_FLAGS
from wbc.robots import synthetic

from .test_codegen_split import _every_operation, _same_bits

CPUINFO = "processor\t: 0\nflags\t\t: fpu sse sse2 {extra}\nbugs\t\t: none\n"


@pytest.mark.parametrize(
    "machine, system, extra, expected",
    [
        ("x86_64", "linux", "avx avx2 fma", ("-mavx",)),
        ("AMD64", "linux", "avx", ("-mavx",)),
        ("x86_64", "linux", "ssse3 avx512f", ()),  # no plain "avx" flag: not trusted
        ("x86_64", "linux", "", ()),
        ("aarch64", "linux", "avx", ()),
        ("x86_64", "darwin", "avx", ()),
    ],
)
def test_avx_only_on_x86_64_linux_that_reports_it(machine, system, extra, expected):
    cpuinfo = CPUINFO.format(extra=extra)
    assert isa_flags(machine, system, cpuinfo, setting="") == expected


def test_baseline_setting_and_missing_flags_line():
    assert isa_flags("x86_64", "linux", CPUINFO.format(extra="avx"), setting="baseline") == ()
    assert isa_flags("x86_64", "linux", "processor\t: 0\n", setting="") == ()


def test_every_compiled_kind_carries_the_flags():
    """Traced kernels (default and hot) and the hand-written shortcut (and hierarchy) routines."""
    for flags in (DEFAULT_FLAGS, HOT_FLAGS, SHORTCUT_FLAGS):
        assert tuple(flags[len(flags) - len(ISA_FLAGS) :]) == ISA_FLAGS
        assert "-mfma" not in flags and not any(f.startswith("-march") for f in flags)


needs_isa = pytest.mark.skipif(not ISA_FLAGS or find_compiler() is None, reason="no instruction-set flags here")


def _library(function: ca.Function, directory: Path, flags: tuple[str, ...]) -> ca.Function:
    """``function`` split and compiled with ``flags`` (the optimization level and the rest)."""
    directory.mkdir(parents=True)
    sources = []
    for name, text in emit.split_source(function, 200, 2).files:
        (directory / name).write_text(text)
        sources.append(str(directory / name))
    library = directory / f"{function.name()}.so"
    subprocess.run(
        [find_compiler(), *DEFAULT_FLAGS[: -len(ISA_FLAGS)], *flags, *sources, "-o", str(library), "-lm"], check=True
    )
    return ca.external(function.name(), str(library))


def _same_outputs(function: ca.Function, tmp_path: Path, arguments: list[list[np.ndarray]]) -> None:
    """The same bits with and without the instruction-set flags, at the default and the hot
    optimization levels (-O2 would contract products and sums into fused multiply-adds if allowed)."""
    for level, flags in (("default", DEFAULT_FLAGS), ("hot", HOT_FLAGS)):
        baseline = _library(function, tmp_path / level / "baseline", flags[: len(flags) - len(ISA_FLAGS)])
        isa = _library(function, tmp_path / level / "isa", flags)
        for args in arguments:
            for mine, reference in zip(isa(*args), baseline(*args)):
                assert _same_bits(mine.full(), reference.full()), level


@needs_isa
def test_every_operation_same_bits_with_and_without(tmp_path):
    function = _every_operation()
    rng = np.random.default_rng(3)
    arguments = [[rng.normal(size=4) * 3, rng.normal(size=(2, 2)), rng.normal(size=3)] for _ in range(20)]
    _same_outputs(function, tmp_path, arguments)


@needs_isa
def test_a_step_kernel_same_bits_with_and_without(tmp_path):
    """The controller's step kernel of a random floating-base tree with two point contacts: every
    output (B̂, a₀, the Delassus rows, the costs) the same bits in both encodings."""
    model = synthetic.random_tree(8, np.random.default_rng(4), floating_base=True)
    links = [j.link for j in model.joints[1:]]
    contacts = [wbc.PointContact(links[-1], mu=0.5), wbc.PointContact(links[-2], mu=0.5)]
    com = tasks.CoMTask(weight=1.0, kp=20.0)
    posture = tasks.PostureTask(model, weight=1e-3, kp=10.0)
    ctrl = wbc.WholeBodyController(model, [com, posture], contacts)
    function, _ = builder.trace_step(model, ctrl.contributors, contacts, ctrl.input_matrix, 0.0)
    rng = np.random.default_rng(5)
    arguments = []
    for _ in range(5):
        q = wbc.random_configuration(model, rng)
        args = [q, rng.normal(size=model.nv)]
        args += [rng.normal(size=function.nnz_in(i)) for i in range(2, function.n_in())]
        arguments.append(args)
    _same_outputs(function, tmp_path, arguments)
