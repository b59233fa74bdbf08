"""Reference configurations from SRDF ``<group_state>`` elements (Pinocchio's
``loadReferenceConfigurations``: listed joints take the given values, the others stay neutral)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

import wbc
from wbc.errors import ModelError


def reference_configuration(model: wbc.Model, srdf: Path, state: str) -> np.ndarray:
    """The configuration (nq,) called ``state`` in ``srdf``.

    Raises:
        ModelError: the file is unreadable, has no such state, or a value has the wrong size.
    """
    try:
        root = ET.parse(srdf).getroot()
    except (OSError, ET.ParseError) as e:
        raise ModelError(f"{srdf}: cannot read SRDF: {e}") from None
    q = wbc.neutral(model)
    for gs in root.iter("group_state"):
        if gs.get("name") != state:
            continue
        for j in gs.iter("joint"):
            name = j.get("name", "")
            if name not in model.joint_names:
                continue  # states may list joints a reduced model does not have
            joint = model.joints[model.joint_id(name)]
            values = np.array([float(x) for x in j.get("value", "").split()])
            if joint.type is wbc.JointType.REVOLUTE_UNBOUNDED and values.size == 1:
                values = np.array([np.cos(values[0]), np.sin(values[0])])
            if values.size != joint.nq:
                raise ModelError(
                    f"{srdf}: state {state!r} gives {values.size} values for joint {name!r} (nq={joint.nq})"
                )
            q[joint.idx_q : joint.idx_q + joint.nq] = values
        return q
    raise ModelError(f"{srdf}: no group_state named {state!r}")
