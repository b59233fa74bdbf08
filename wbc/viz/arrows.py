"""Contact forces as arrows: where each force acts and what it is, in world axes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..control.contacts import Contact, PointContact
from ..control.contacts.surface import RectangularContact
from ..errors import InputError
from ..model.model import Model
from ..numeric import frame_placement

__all__ = ["contact_arrows"]


def contact_arrows(
    model: Model, q, contacts: Sequence[Contact], forces: Mapping[str, np.ndarray]
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{contact name: (point (3,), force (3,))}``, world axes (m, N), of a command's contact forces.

    A point contact's force acts at its point (``frame`` ⊕ ``offset``), in world axes already; a
    sole's (``SurfaceContact``, ``SurfaceCornersContact``) is its resultant force, rotated from the
    sole axes, acting at its centre of pressure. Contacts missing from ``forces`` are skipped.

    Args:
        model: the robot; q: its configuration (nq,).
        contacts: the controller's contacts (``controller.contacts``).
        forces: ``command.forces`` ({contact name: force variables}).
    """
    out = {}
    for contact in contacts:
        if contact.name not in forces:
            continue
        f = np.asarray(forces[contact.name], dtype=float)
        T = frame_placement(model, q, contact.frame)
        R, p = T[:3, :3], T[:3, 3]
        if isinstance(contact, PointContact):
            out[contact.name] = (p + R @ np.asarray(contact.offset), f[:3].copy())
        elif isinstance(contact, RectangularContact):
            wrench = contact.force_basis() @ f  # sole axes, about the sole centre
            cop = contact.center_of_pressure(f)
            out[contact.name] = (p + R @ np.array([cop[0], cop[1], 0.0]), R @ wrench[:3])
        else:
            raise InputError(f"contact_arrows: no arrow for a {type(contact).__name__} (contact {contact.name!r})")
    return out
