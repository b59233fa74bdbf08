"""Limits: contributors of hard constraints that are neither tasks nor contacts.

Each limit is one file with one :class:`~wbc.control.contributor.Contributor` subclass returning
:class:`~wbc.control.pieces.Bounds` or :class:`~wbc.control.pieces.Inequality` pieces; a new kind of
limit needs no edit of the controller or of the QP builder.
"""

from __future__ import annotations

from .torque import TorqueLimit

__all__ = ["TorqueLimit"]
