"""The robot catalog and synthetic mechanisms.

``robots.load("talos")`` gives a :class:`RobotSpec` (model, feet, sole, hands, default posture), the
one record of every robot, also of the robots with transmissions (``robots.load("tello")``, built by
``robots.clustered``);
``robots.synthetic`` builds chains, random trees and the PV-OSIMr paper's stem-with-branches.
"""

from __future__ import annotations

from . import clustered, synthetic
from .catalog import RobotKind, RobotSpec, Sole, load, names, robots_dir

__all__ = ["RobotKind", "RobotSpec", "Sole", "load", "names", "robots_dir", "synthetic", "clustered"]
