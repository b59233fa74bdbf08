"""A model crosses process boundaries and is shared by copies: pickle rebuilds it through its
constructor (same joints, frames, inertias, lookups, dynamics), ``copy``/``deepcopy`` return the same
immutable object, and tasks holding a model can be copied and pickled."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import numpy as np
import pytest

import wbc
from wbc import robots, tasks


def _same(a, b) -> bool:
    """Field by field, arrays by value (dataclasses holding arrays have no usable ``==``)."""
    if dataclasses.is_dataclass(a):
        return type(a) is type(b) and all(_same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.mark.parametrize("name", ["panda", "talos"])
def test_pickled_model_equals_the_original(name):
    spec = robots.load(name)
    model = pickle.loads(pickle.dumps(spec.model))
    assert model is not spec.model
    assert _same(model.joints, spec.model.joints) and _same(model.frames, spec.model.frames)
    assert model.actuated == spec.model.actuated and model.source == spec.model.source
    for a, b in zip(model.inertias, spec.model.inertias, strict=True):
        assert np.array_equal(a, b) and not a.flags.writeable
    assert not model.gravity.flags.writeable
    assert [model.frame_id(f.name) for f in model.frames] == [spec.model.frame_id(f.name) for f in model.frames]
    assert [model.joint_id(j.name) for j in model.joints] == list(range(model.njoints))
    rng = np.random.default_rng(0)
    q, v = wbc.random_configuration(model, rng), rng.standard_normal(model.nv)
    assert np.array_equal(wbc.eager.crba(model, q), wbc.eager.crba(spec.model, q))
    assert np.array_equal(wbc.eager.rnea(model, q, v, v), wbc.eager.rnea(spec.model, q, v, v))


def test_copies_share_the_immutable_model():
    model = robots.load("panda").model
    assert copy.copy(model) is model and copy.deepcopy(model) is model


def test_a_task_holding_a_model_copies_and_pickles():
    spec = robots.load("panda")
    posture = tasks.PostureTask(spec.model, kp=10.0)
    posture.set_target(spec.q0)
    for other in (copy.deepcopy(posture), pickle.loads(pickle.dumps(posture))):
        assert isinstance(other, tasks.PostureTask)
        other.set_target(spec.q0)  # usable after the copy
