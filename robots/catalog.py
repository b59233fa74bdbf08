"""The robot catalog: real robots from example-robot-data, with what a controller needs.

``load("talos")`` returns a :class:`RobotSpec`: the :class:`wbc.Model` plus named feet (sole
frames, whose origin is the sole centre and whose z axis is the contact normal), the sole
rectangle, hands, fingertips, and a default posture ``q0`` standing on the ground (z = 0).
"""

from __future__ import annotations

import dataclasses
import os
import sysconfig
from collections.abc import Callable
from pathlib import Path

import numpy as np

import wbc
from wbc.errors import ModelError
from wbc.spatial.algebra import SE3

from .srdf import reference_configuration

__all__ = ["RobotSpec", "Sole", "load", "names", "robots_dir"]


@dataclasses.dataclass(frozen=True)
class Sole:
    """A rectangular sole centred on the origin of its foot frame, normal along the frame's z.

    Attributes:
        length: extent along the foot frame's x axis, m.
        width: extent along its y axis, m.
    """

    length: float
    width: float

    def corners(self) -> np.ndarray:
        """The four corners (4, 3) in the foot frame: (-x,-y), (-x,+y), (+x,-y), (+x,+y)."""
        hx, hy = self.length / 2, self.width / 2
        return np.array([[-hx, -hy, 0.0], [-hx, hy, 0.0], [hx, -hy, 0.0], [hx, hy, 0.0]])


@dataclasses.dataclass(frozen=True)
class RobotSpec:
    """A catalog robot.

    Attributes:
        name: catalog name.
        model: the kinematic-tree model.
        urdf: the URDF file it was loaded from.
        q0: default posture (nq,); for floating-base robots the feet rest on z = 0.
        feet: sole frames (contact normal = frame z), empty for fixed-base robots.
        sole: the sole rectangle of every foot, or None.
        hands: hand / end-effector frames.
        fingertips: fingertip frames.
        extra_frames: OP frames the catalog added to the URDF's (name -> parent frame).
    """

    name: str
    model: wbc.Model
    urdf: Path
    q0: np.ndarray
    feet: tuple[str, ...] = ()
    sole: Sole | None = None
    hands: tuple[str, ...] = ()
    fingertips: tuple[str, ...] = ()
    extra_frames: tuple[tuple[str, str, tuple[float, float, float]], ...] = ()

    @property
    def mass(self) -> float:
        return self.model.total_mass


def robots_dir() -> Path:
    """Where example-robot-data installed its robots in this environment."""
    env = os.environ.get("WBC_ROBOTS_DIR")
    if env:
        return Path(env)
    base = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
    if not base.exists():
        raise ModelError(
            f"example-robot-data is not installed (looked in {base}); install the 'robots' extra "
            "(pip install 'wbc[robots]') or set WBC_ROBOTS_DIR"
        )
    return base


def _with_frames(model: wbc.Model, frames) -> wbc.Model:
    for name, parent, offset in frames:
        model = model.add_frame(name, parent, SE3(np.eye(3), np.array(offset, float).reshape(3, 1)))
    return model


def _stand_on_ground(model: wbc.Model, q: np.ndarray, feet: tuple[str, ...]) -> np.ndarray:
    """Shift the free-flyer height so that the lowest sole origin is at z = 0."""
    q = q.copy()
    lowest = min(wbc.frame_placement(model, q, f)[2, 3] for f in feet)
    q[2] -= lowest
    return q


def _talos(floating_base: bool) -> RobotSpec:
    root = robots_dir() / "talos_data"
    urdf = root / "robots" / "talos_reduced.urdf"
    model = wbc.load_urdf(urdf, floating_base)
    q0 = reference_configuration(model, root / "srdf" / "talos.srdf", "half_sitting")
    feet = ("left_sole_link", "right_sole_link")
    if floating_base:
        q0 = _stand_on_ground(model, q0, feet)
    return RobotSpec(
        "talos",
        model,
        urdf,
        q0,
        feet,
        Sole(0.2, 0.13),
        hands=("gripper_left_base_link", "gripper_right_base_link"),
        fingertips=tuple(f"gripper_{s}_fingertip_{k}_link" for s in ("left", "right") for k in (1, 2, 3)),
    )


_G1_STANDING = {
    "left_hip_pitch_joint": -0.1,
    "left_knee_joint": 0.3,
    "left_ankle_pitch_joint": -0.2,
    "right_hip_pitch_joint": -0.1,
    "right_knee_joint": 0.3,
    "right_ankle_pitch_joint": -0.2,
    "left_shoulder_roll_joint": 0.2,
    "right_shoulder_roll_joint": -0.2,
    "left_elbow_joint": 0.9,
    "right_elbow_joint": 0.9,
}
# Contact spheres of the G1 ankle_roll links span x in [-0.05, 0.12], y in ±0.03, bottom at z = -0.035.
_G1_SOLE_OFFSET = (0.035, 0.0, -0.035)


def _g1(floating_base: bool, hands: bool) -> RobotSpec:
    root = robots_dir() / "g1_description"
    urdf = root / "urdf" / ("g1_29dof_with_hand_rev_1_0.urdf" if hands else "g1_29dof_rev_1_0.urdf")
    extra = (
        ("left_sole", "left_ankle_roll_link", _G1_SOLE_OFFSET),
        ("right_sole", "right_ankle_roll_link", _G1_SOLE_OFFSET),
    )
    model = _with_frames(wbc.load_urdf(urdf, floating_base), extra)
    q0 = wbc.neutral(model)
    for name, value in _G1_STANDING.items():
        q0[model.joints[model.joint_id(name)].idx_q] = value
    feet = ("left_sole", "right_sole")
    if floating_base:
        q0 = _stand_on_ground(model, q0, feet)
    if hands:
        hand_frames = ("left_hand_palm_link", "right_hand_palm_link")
        tips = tuple(f"{s}_hand_{f}_link" for s in ("left", "right") for f in ("thumb_2", "index_1", "middle_1"))
    else:
        hand_frames, tips = ("left_rubber_hand", "right_rubber_hand"), ()
    return RobotSpec(
        "g1_with_hands" if hands else "g1",
        model,
        urdf,
        q0,
        feet,
        Sole(0.17, 0.06),
        hands=hand_frames,
        fingertips=tips,
        extra_frames=extra,
    )


def _panda(floating_base: bool) -> RobotSpec:
    root = robots_dir() / "panda_description"
    urdf = root / "urdf" / "panda.urdf"
    model = wbc.load_urdf(urdf, floating_base)
    q0 = reference_configuration(model, root / "srdf" / "panda.srdf", "default")
    return RobotSpec(
        "panda", model, urdf, q0, hands=("panda_hand_tcp",), fingertips=("panda_leftfinger", "panda_rightfinger")
    )


def _allegro(floating_base: bool) -> RobotSpec:
    urdf = robots_dir() / "allegro_hand_description" / "urdf" / "allegro_right_hand.urdf"
    model = wbc.load_urdf(urdf, floating_base)
    q0 = np.clip(np.full(model.nq, 0.3), model.lower_position_limit, model.upper_position_limit)
    return RobotSpec(
        "allegro",
        model,
        urdf,
        q0,
        hands=("palm_link",),
        fingertips=("link_3.0_tip", "link_7.0_tip", "link_11.0_tip", "link_15.0_tip"),
    )


_CATALOG: dict[str, tuple[Callable[[bool], RobotSpec], bool]] = {
    "talos": (_talos, True),
    "g1": (lambda fb: _g1(fb, hands=False), True),
    "g1_with_hands": (lambda fb: _g1(fb, hands=True), True),
    "panda": (_panda, False),
    "allegro": (_allegro, False),
}


def names() -> tuple[str, ...]:
    """The catalog's robot names."""
    return tuple(_CATALOG)


def load(name: str, floating_base: bool | None = None) -> RobotSpec:
    """Load catalog robot ``name`` (see :func:`names`).

    Args:
        floating_base: override the robot's default (humanoids float, arms and hands are fixed).

    Raises:
        ModelError: unknown name, or example-robot-data missing.
    """
    try:
        build, default_fb = _CATALOG[name]
    except KeyError:
        raise ModelError(f"no robot {name!r} in the catalog; known: {', '.join(_CATALOG)}") from None
    return build(default_fb if floating_base is None else floating_base)
