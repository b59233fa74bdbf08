"""Fixtures shared by the test modules (helpers live in :mod:`tests.helpers`)."""

from __future__ import annotations

import pytest

from wbc.codegen import background
from wbc.control import builder


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory):
    """A fresh kernel cache for a test module (the tests never touch the user's cache)."""
    return tmp_path_factory.mktemp("kernels")


@pytest.fixture
def traces(monkeypatch):
    """Counts the step kernel's traces (``[n]``) while the test runs."""
    count = [0]
    original = builder.trace_step

    def counted(*args, **kwargs):
        count[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(builder, "trace_step", counted)
    return count


@pytest.fixture
def no_compile_in_flight():
    """Waits for the background compiles earlier tests started (the numeric API's first calls): a
    test that sets its own compiler (``WBC_CC``) must not have them pick it up."""
    assert background.wait(600)
