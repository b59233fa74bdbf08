"""The simulation scenarios' one entry point into the robot catalog and the task library.

:mod:`wbc.sim.balance` and :mod:`wbc.sim.walking` run catalog robots (``"talos"``) under the
standard standing and walking tasks. The catalog (:mod:`wbc.robots`) and the tasks (:mod:`wbc.tasks`)
sit above ``wbc`` in the layering (docs/architecture.md), so the scenarios reach them only through
this module, which imports them when first asked: :func:`legged_robot` (a name, or any object
shaped like :class:`LeggedRobot`, checked for feet), :func:`robots` and :func:`tasks` (the modules).
"""

from __future__ import annotations

import enum
import importlib
import types
from pathlib import Path
from typing import Protocol

import numpy as np

from ..errors import ModelError
from ..model.model import Model

__all__ = ["FootKind", "LeggedRobot", "Rectangle", "foot_kind", "legged_robot", "robots", "tasks"]


class Rectangle(Protocol):
    """A sole: ``length`` along the foot frame's x, ``width`` along its y, m (``wbc.robots.Sole``)."""

    length: float
    width: float


class LeggedRobot(Protocol):
    """What a scenario needs of a robot (:class:`wbc.robots.RobotSpec` is one).

    Attributes:
        name: a name for logs and summaries.
        model: the floating-base model.
        urdf: the file it was loaded from (replays draw its meshes).
        q0: the standing configuration (nq,), feet on z = 0.
        feet: the foot frames (soles: z = contact normal; point feet: sphere centres).
        sole: the sole rectangle (``length``, ``width``, m), or None for point feet.
        foot_radius: point feet: the spheres' radius (m), or None for soles.
    """

    name: str
    model: Model
    urdf: Path
    q0: np.ndarray
    feet: tuple[str, ...]
    sole: Rectangle | None
    foot_radius: float | None


class FootKind(enum.Enum):
    """How a robot's feet touch the ground."""

    SOLE = "sole"  # rectangular soles: 6D contact wrenches (wbc.SurfaceContact), boxes in MuJoCo
    POINT = "point"  # point feet: 3D forces (wbc.PointContact), spheres in MuJoCo


def foot_kind(robot: LeggedRobot) -> FootKind:
    """The kind of ``robot``'s feet (its ``sole`` or ``foot_radius``)."""
    return FootKind.SOLE if robot.sole is not None else FootKind.POINT


def legged_robot(robot: str | LeggedRobot, purpose: str = "balance") -> LeggedRobot:
    """The robot named ``robot`` in the catalog (``wbc.robots.load``), or ``robot`` itself, checked
    to stand on feet.

    Args:
        robot: a catalog name or a :class:`LeggedRobot`.
        purpose: what the robot is for, named in the error.

    Raises:
        ModelError: unknown name (the catalog's error), a fixed base, no feet, or feet without a
            sole rectangle or a foot radius; the message names the robot and what is missing.
    """
    if isinstance(robot, str):
        spec: LeggedRobot = robots().load(robot)
    else:
        spec = robot
    name = getattr(spec, "name", repr(spec))
    missing = [a for a in LeggedRobot.__annotations__ if not hasattr(spec, a)]
    if missing:
        raise ModelError(
            f"robot {name!r} cannot {purpose}: it has no {', '.join(missing)} (see wbc.sim.catalog.LeggedRobot)"
        )
    if not spec.model.floating_base:
        raise ModelError(f"robot {name!r} cannot {purpose}: it has a fixed base (a floating base is needed)")
    if not spec.feet:
        raise ModelError(f"robot {name!r} cannot {purpose}: it has no feet (no foot frames in its spec)")
    if spec.sole is None and spec.foot_radius is None:
        raise ModelError(f"robot {name!r} cannot {purpose}: its feet have neither a sole rectangle nor a foot radius")
    return spec


def robots() -> types.ModuleType:
    """The robot catalog (:mod:`wbc.robots`), imported on first use."""
    return importlib.import_module("wbc.robots")


def tasks() -> types.ModuleType:
    """The task library (:mod:`wbc.tasks`), imported on first use."""
    return importlib.import_module("wbc.tasks")
