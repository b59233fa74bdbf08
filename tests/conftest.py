"""Fixtures shared by the test modules (helpers live in :mod:`tests.helpers`)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory):
    """A fresh kernel cache for a test module (the tests never touch the user's cache)."""
    return tmp_path_factory.mktemp("kernels")
