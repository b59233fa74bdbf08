"""Replays a person can watch: a self-contained ``replay.html`` of a run (meshcat's viewer, offline).

Needs the ``viz`` extra (``pip install 'wbc[viz]'``, meshcat); ``import wbc`` never imports this
package. :class:`Replay` records states, contact forces and pushes and writes the page;
:func:`contact_arrows` turns a controller's contact forces into arrows; :mod:`wbc.viz.visuals`
reads what the robot looks like from its URDF.
"""

from __future__ import annotations

from .arrows import contact_arrows
from .replay import Arrow, Replay
from .visuals import LinkVisuals, Shape, Visual, read_visuals, resolve_mesh

__all__ = ["Replay", "Arrow", "contact_arrows", "read_visuals", "resolve_mesh", "LinkVisuals", "Visual", "Shape"]
