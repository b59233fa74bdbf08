"""The robot catalog: real robots with what a controller needs.

The one registry of robots: ``load("talos")`` returns a :class:`RobotSpec`: the :class:`wbc.Model`
plus named feet, the sole
rectangle (humanoids: sole frames whose origin is the sole centre and whose z axis is the contact
normal) or the foot radius (quadrupeds: point feet, spheres centred on the foot frames), hands,
fingertips, and a default posture ``q0`` standing on the ground (z = 0).

The robots with actuator transmissions and kinematic loops of :mod:`wbc.robots.clustered`
(``load("tello")``, ``"mini_cheetah"``, ``"jvrc1_rotors"``, ...) are records of the same class whose
model is a :class:`wbc.ClusterModel`.

Sources: example-robot-data (Talos, G1, Panda, Allegro, Solo12, ANYmal C, Go2, Romeo, TIAGo),
``jvrc-description`` (JVRC-1) and ``icub-models`` (iCub), all from PyPI. Robots whose files have
joints that move no mass (Romeo's fingers) or that a controller holds still (TIAGo's wheels and
hand) come with those joints locked (:func:`wbc.lock_joints`), listed in ``RobotSpec.locked``.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import sysconfig
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

import wbc
from wbc.errors import ModelError
from wbc.spatial.algebra import SE3

from .srdf import reference_configuration

__all__ = ["RobotKind", "RobotSpec", "Sole", "load", "names", "robots_dir"]


class RobotKind(enum.Enum):
    """What a catalog robot's model is."""

    TREE = "tree"  #: a kinematic tree loaded from a URDF (a wbc.Model)
    CLUSTERED = "clustered"  #: transmissions and loops built in code (a wbc.ClusterModel)


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
        model: the kinematic-tree model, or a :class:`wbc.ClusterModel` (transmissions, loops).
        urdf: the URDF file it was loaded from (None for a mechanism built in code).
        q0: default posture (nq,); for floating-base robots the feet rest on z = 0; for a clustered
            model a spanning configuration ``y`` with its loops closed.
        feet: sole frames (contact normal = frame z), empty for fixed-base robots.
        sole: the sole rectangle of every foot, or None.
        hands: hand / end-effector frames.
        fingertips: fingertip frames.
        extra_frames: OP frames the catalog added to the URDF's (name -> parent frame).
        foot_radius: point feet: the radius (m) of the spheres centred on the foot frames (the
            contact points of ``wbc.PointContact`` feet); None for soles.
        locked: joints locked at the given positions (``wbc.lock_joints``), in the URDF's model.
        contacts: contact points ``(frame, offset (3,) m)`` of the operational-space experiments.
    """

    name: str
    model: wbc.Model | wbc.ClusterModel
    urdf: Path | None
    q0: np.ndarray
    feet: tuple[str, ...] = ()
    sole: Sole | None = None
    hands: tuple[str, ...] = ()
    fingertips: tuple[str, ...] = ()
    extra_frames: tuple[tuple[str, str, tuple[float, float, float]], ...] = ()
    foot_radius: float | None = None
    locked: tuple[tuple[str, tuple[float, ...]], ...] = ()
    contacts: tuple[tuple[str, tuple[float, float, float]], ...] = ()

    @property
    def mass(self) -> float:
        return self.model.total_mass

    @property
    def base(self) -> str:
        """The frame of the root link: the body the free flyer moves (a fixed-base robot's link welded
        to the world), what ``OrientationTask(spec.base)`` holds upright."""
        joint = 1 if self.model.floating_base else 0
        for frame in self.model.frames:
            if frame.kind is wbc.FrameKind.BODY and frame.joint == joint:
                return frame.name
        raise ModelError(f"robot {self.name!r} has no body frame on joint {joint}")


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


def _stand_on_ground(model: wbc.Model, q: np.ndarray, feet: tuple[str, ...], height: float = 0.0) -> np.ndarray:
    """Shift the free-flyer height so that the lowest foot frame origin is at z = ``height``."""
    q = q.copy()
    lowest = min(wbc.eager.frame_placement(model, q, f)[2, 3] for f in feet)
    q[2] += height - lowest
    return q


def _set(model: wbc.Model, q: np.ndarray, values: dict[str, float]) -> np.ndarray:
    q = q.copy()
    for name, value in values.items():
        q[model.joints[model.joint_id(name)].idx_q] = value
    return q


def _lock(model: wbc.Model, q: np.ndarray, names) -> tuple[wbc.Model, np.ndarray, tuple]:
    """Lock ``names`` at their values in ``q``: the reduced model, its ``q`` and the locked list."""
    joints = [model.joints[model.joint_id(n)] for n in names]
    locked = tuple((j.name, tuple(float(x) for x in q[j.idx_q : j.idx_q + j.nq])) for j in joints)
    reduced = wbc.lock_joints(model, dict(locked))
    kept = [j for j in model.joints[1:] if j.name not in set(names)]
    return reduced, np.concatenate([q[j.idx_q : j.idx_q + j.nq] for j in kept]), locked


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
    # the SRDF closes the fingers onto their lower limit (0 m), where a joint-limit margin would hold
    # them at every step: half open instead (the middle of their 0-0.04 m range)
    q0 = _set(model, q0, {"panda_finger_joint1": 0.02, "panda_finger_joint2": 0.02})
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


# ------------------------------------------------------------------------------ quadrupeds
def _quadruped(
    name: str,
    urdf: Path,
    srdf: Path,
    feet: tuple[str, ...],
    radius: float,
    floating_base: bool,
    extra: tuple = (),
) -> RobotSpec:
    model = _with_frames(wbc.load_urdf(urdf, floating_base), extra)
    q0 = reference_configuration(model, srdf, "standing")
    if floating_base:
        q0 = _stand_on_ground(model, q0, feet, radius)
    return RobotSpec(name, model, urdf, q0, feet, None, extra_frames=extra, foot_radius=radius)


def _solo12(floating_base: bool) -> RobotSpec:
    root = robots_dir() / "solo_description"
    # the foot meshes are spheres of radius 0.016 m centred on the *_FOOT frames
    feet = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
    return _quadruped(
        "solo12", root / "robots" / "solo12.urdf", root / "srdf" / "solo.srdf", feet, 0.016, floating_base
    )


def _anymal_c(floating_base: bool) -> RobotSpec:
    root = robots_dir() / "anymal_c_simple_description"
    # the foot collision spheres (radius 0.03) are centred 0.0225 m above the *_FOOT frames
    extra = tuple((f"{leg}_foot_center", f"{leg}_FOOT", (0.0, 0.0, 0.0225)) for leg in ("LF", "RF", "LH", "RH"))
    feet = tuple(name for name, _, _ in extra)
    urdf, srdf = root / "urdf" / "anymal.urdf", root / "srdf" / "anymal.srdf"
    return _quadruped("anymal_c", urdf, srdf, feet, 0.03, floating_base, extra)


def _go2(floating_base: bool) -> RobotSpec:
    root = robots_dir() / "go2_description"
    # the foot collision meshes are spheres of radius ~0.022 m centred on the *_foot frames
    feet = ("FL_foot", "FR_foot", "RL_foot", "RR_foot")
    return _quadruped("go2", root / "urdf" / "go2.urdf", root / "srdf" / "go2.srdf", feet, 0.022, floating_base)


# ------------------------------------------------------------------------------ humanoids and TIAGo
def _romeo(floating_base: bool) -> RobotSpec:
    root = robots_dir() / "romeo_description"
    urdf = root / "urdf" / "romeo.urdf"
    full = wbc.load_urdf(urdf, floating_base)
    q_full = reference_configuration(full, root / "srdf" / "romeo.srdf", "half_sitting")
    # the finger and hand joints move no mass (wbc.checks.massless_joints): locked at half_sitting
    model, q0, locked = _lock(full, q_full, wbc.checks.massless_joints(full))
    feet = ("l_sole", "r_sole")
    if floating_base:
        q0 = _stand_on_ground(model, q0, feet)
    # the sole meshes span x in [-0.073, 0.121] m and y in [-0.049, 0.062] m around l_sole (mirrored
    # for r_sole): the rectangle centred on the sole frames that fits inside
    return RobotSpec("romeo", model, urdf, q0, feet, Sole(0.14, 0.095), hands=("l_wrist", "r_wrist"), locked=locked)


_TIAGO_HOME = {
    "torso_lift_joint": 0.15,
    "arm_1_joint": 0.2,
    "arm_2_joint": -1.34,
    "arm_3_joint": -0.2,
    "arm_4_joint": 1.94,
    "arm_5_joint": -1.57,
    "arm_6_joint": 1.37,
}


def _tiago(floating_base: bool) -> RobotSpec:
    urdf = robots_dir() / "tiago_description" / "robots" / "tiago.urdf"
    # the antenna links' inertias are not PSD by 1.7e-8 of the base's: projected, with a warning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", wbc.ModelWarning)
        full = wbc.load_urdf(urdf, floating_base)
    q_full = _set(full, wbc.neutral(full), _TIAGO_HOME)
    # a manipulation model: the mobile base's wheels and the underactuated hand are held still
    still = [j.name for j in full.joints[1:] if j.name.startswith(("wheel_", "hand_"))]
    model, q0, locked = _lock(full, q_full, still)
    return RobotSpec("tiago", model, urdf, q0, hands=("hand_palm_link",), locked=locked)


def _jvrc_urdf() -> Path:
    try:
        import jvrc_description
    except ImportError:
        raise ModelError(
            "jvrc-description is not installed; install the 'robots' extra (pip install 'wbc[robots]')"
        ) from None
    return Path(jvrc_description.__file__).parent / "urdf" / "jvrc1.urdf"


_JVRC_HALF_SITTING = {
    f"{s}_{j}": v
    for s in ("L", "R")
    for j, v in (("HIP_P", -0.38), ("KNEE", 0.72), ("ANKLE_P", -0.34), ("ELBOW_P", -0.5))
} | {"L_SHOULDER_R": 0.3, "R_SHOULDER_R": -0.3}


def _jvrc1(floating_base: bool) -> RobotSpec:
    urdf = _jvrc_urdf()
    # the sole meshes lie 0.1077 m below the ankle frames and span x in [-0.075, 0.137] m, y in ±0.042 m
    extra = (("l_sole", "l_ankle", (0.031, 0.0, -0.1077)), ("r_sole", "r_ankle", (0.031, 0.0, -0.1077)))
    model = _with_frames(wbc.load_urdf(urdf, floating_base), extra)
    q0 = _set(model, wbc.neutral(model), _JVRC_HALF_SITTING)
    feet = ("l_sole", "r_sole")
    if floating_base:
        q0 = _stand_on_ground(model, q0, feet)
    return RobotSpec("jvrc1", model, urdf, q0, feet, Sole(0.2, 0.08), hands=("l_wrist", "r_wrist"), extra_frames=extra)


_ICUB_STANDING = {
    f"{s}_{j}": v
    for s in ("l", "r")
    for j, v in (("hip_pitch", 0.3), ("knee", -0.55), ("ankle_pitch", -0.25), ("shoulder_roll", 0.3), ("elbow", 0.6))
}


def _icub(floating_base: bool) -> RobotSpec:
    try:
        import icub_models
    except ImportError:
        raise ModelError(
            "icub-models is not installed; install the 'robots' extra (pip install 'wbc[robots]')"
        ) from None
    urdf = icub_models.get_model_file("iCubGazeboV2_7")
    model = wbc.load_urdf(urdf, floating_base)
    q0 = _set(model, wbc.neutral(model), _ICUB_STANDING)
    feet = ("l_sole", "r_sole")
    if floating_base:
        q0 = _stand_on_ground(model, q0, feet)
    # the foot collision boxes span x in [-0.053, 0.107] m, y in [-0.031, 0.041] m around l_sole
    # (mirrored for r_sole): the rectangle centred on the sole frames that fits inside
    return RobotSpec("icub", model, urdf, q0, feet, Sole(0.1, 0.06), hands=("l_hand", "r_hand"))


_CATALOG: dict[str, tuple[Callable[[bool], RobotSpec], bool]] = {
    "talos": (_talos, True),
    "g1": (lambda fb: _g1(fb, hands=False), True),
    "g1_with_hands": (lambda fb: _g1(fb, hands=True), True),
    "panda": (_panda, False),
    "allegro": (_allegro, False),
    "solo12": (_solo12, True),
    "anymal_c": (_anymal_c, True),
    "go2": (_go2, True),
    "romeo": (_romeo, True),
    "tiago": (_tiago, False),
    "jvrc1": (_jvrc1, True),
    "icub": (_icub, True),
}


def names(kind: RobotKind | None = None) -> tuple[str, ...]:
    """The catalog's robot names: of one :class:`RobotKind`, or all (the URDF robots, then the robots
    with transmissions of :mod:`wbc.robots.clustered`)."""
    from .clustered import BUILDERS

    if kind is None:
        return (*_CATALOG, *BUILDERS)
    return tuple(_CATALOG) if RobotKind(kind) is RobotKind.TREE else tuple(BUILDERS)


def load(name: str, floating_base: bool | None = None) -> RobotSpec:
    """Load catalog robot ``name`` (see :func:`names`).

    Args:
        floating_base: override the robot's default (humanoids float, arms and hands are fixed);
            for a robot with transmissions, only where its builder offers the choice.

    Raises:
        ModelError: unknown name, a base its builder does not offer, or example-robot-data missing.
    """
    from .clustered import BUILDERS

    if name in BUILDERS:
        builder = BUILDERS[name]
        if floating_base is None:
            return builder()
        try:
            return builder(floating_base=floating_base)  # type: ignore[call-arg]
        except TypeError:
            raise ModelError(f"robot {name!r} is built with one base only; do not pass floating_base") from None
    try:
        build, default_fb = _CATALOG[name]
    except KeyError:
        raise ModelError(f"no robot {name!r} in the catalog; known: {', '.join(names())}") from None
    return build(default_fb if floating_base is None else floating_base)
