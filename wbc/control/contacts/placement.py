"""Where the contact frames are: a small kernel ``q → placements``, used by the controller to record
where a contact was placed when it becomes active (:mod:`wbc.control.schedule`)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import casadi as ca

from ...algorithms.kinematics import TreeKinematics
from ...codegen.trace import trace
from ...model.model import Model

__all__ = ["placement_function"]


def placement_function(model: Model, contacts: Sequence) -> ca.Function:
    """``q → P`` (12 k,): per contact, its frame's world position (3,) m and rotation (9,) row-major,
    in the layout of the contact's parameters (:data:`wbc.control.schedule.PLACEMENT`)."""
    frames = [model.frame_id(c.frame) for c in contacts]

    def build(q):
        kin = TreeKinematics(model, q)
        out = []
        for fid in frames:
            M = kin.frame_placement(fid)
            out += [M.p, ca.reshape(M.R.T, 9, 1)]  # column-major of Rᵀ = row-major of R
        return [ca.vertcat(*out) if out else ca.DM.zeros(0, 1)]

    tag = hashlib.sha1(",".join(c.frame for c in contacts).encode()).hexdigest()[:8]
    return trace(f"contact_placements_{model.name}_{tag}", [("q", model.nq)], build, ["placements"])
