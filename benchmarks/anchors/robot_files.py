"""Where example-robot-data put Talos in the running (side) environment: ``talos_reduced`` and its SRDF."""

from __future__ import annotations

import os
import sysconfig

ROBOTS = os.path.join(sysconfig.get_paths()["purelib"], "cmeel.prefix", "share", "example-robot-data", "robots")
SHARE = os.path.dirname(os.path.dirname(ROBOTS))
TALOS_URDF = os.path.join(ROBOTS, "talos_data", "robots", "talos_reduced.urdf")
TALOS_SRDF = os.path.join(ROBOTS, "talos_data", "srdf", "talos.srdf")
