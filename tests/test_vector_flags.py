"""The vector flags of compiled code (wbc.codegen.cache.vector_flags: ``-mavx`` where the processor
has AVX): part of every traced kernel's and the shortcut's flags, off with ``WBC_VECTOR_FLAGS=0``,
and the same bits as the baseline encoding (no fused multiply-add) on every scalar operation and on
a traced step kernel, at the default and the hot optimization levels."""

from __future__ import annotations

import subprocess
from pathlib import Path

import casadi as ca
import numpy as np
import pytest

import wbc
from wbc import tasks
from wbc.codegen import DEFAULT_FLAGS, HOT_FLAGS, emit
from wbc.codegen.cache import find_compiler, vector_flags
from wbc.control import builder
from wbc.control.shortcut_library import FLAGS as SHORTCUT_FLAGS
from wbc.robots import synthetic

from .test_codegen_split import _every_operation, _same_bits

VECTOR_FLAGS = vector_flags()


def test_switched_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("WBC_VECTOR_FLAGS", "0")
    assert vector_flags() == ()
    monkeypatch.setenv("WBC_VECTOR_FLAGS", "1")
    assert vector_flags() == VECTOR_FLAGS


def test_every_compiled_kind_carries_the_flags():
    """Traced kernels (default and hot) and the hand-written shortcut (and hierarchy) routines."""
    for flags in (DEFAULT_FLAGS, HOT_FLAGS, SHORTCUT_FLAGS):
        assert tuple(flags[len(flags) - len(VECTOR_FLAGS) :]) == VECTOR_FLAGS
        assert "-mfma" not in flags and not any(f.startswith("-march") for f in flags)


needs_vector_flags = pytest.mark.skipif(not VECTOR_FLAGS or find_compiler() is None, reason="no vector flags here")


def _library(function: ca.Function, directory: Path, flags: tuple[str, ...]) -> ca.Function:
    """``function`` split and compiled with ``flags`` (the optimization level and the rest)."""
    directory.mkdir(parents=True)
    sources = []
    for name, text in emit.split_source(function, 200, 2).files:
        (directory / name).write_text(text)
        sources.append(str(directory / name))
    library = directory / f"{function.name()}.so"
    subprocess.run(
        [find_compiler(), *DEFAULT_FLAGS[: -len(VECTOR_FLAGS)], *flags, *sources, "-o", str(library), "-lm"], check=True
    )
    return ca.external(function.name(), str(library))


def _same_outputs(function: ca.Function, tmp_path: Path, arguments: list[list[np.ndarray]]) -> None:
    """The same bits with and without the instruction-set flags, at the default and the hot
    optimization levels (-O2 would contract products and sums into fused multiply-adds if allowed)."""
    for level, flags in (("default", DEFAULT_FLAGS), ("hot", HOT_FLAGS)):
        baseline = _library(function, tmp_path / level / "baseline", flags[: len(flags) - len(VECTOR_FLAGS)])
        vector = _library(function, tmp_path / level / "vector", flags)
        for args in arguments:
            for mine, reference in zip(vector(*args), baseline(*args)):
                assert _same_bits(mine.full(), reference.full()), level


@needs_vector_flags
def test_every_operation_same_bits_with_and_without(tmp_path):
    function = _every_operation()
    rng = np.random.default_rng(3)
    arguments = [[rng.normal(size=4) * 3, rng.normal(size=(2, 2)), rng.normal(size=3)] for _ in range(20)]
    _same_outputs(function, tmp_path, arguments)


@needs_vector_flags
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
