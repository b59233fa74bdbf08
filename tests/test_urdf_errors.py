"""The URDF loader turns bad input into a ``wbc.ModelError`` that names the offending element (and the
file), never a crash or a half-built model; good input loads from a path or from a string."""

from __future__ import annotations

import re

import numpy as np
import pytest

import wbc

INERTIAL = (
    '<inertial><mass value="{mass}"/><inertia ixx="{ixx}" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>'
)


def urdf(
    *,
    shoulder_type: str = "revolute",
    axis: str = "0 0 1",
    arm_mass: str = "1",
    arm_ixx: str = "0.1",
    hand_inertial: bool = True,
    origin: str = "0 0 0.3",
    effort: str = "10",
    lower: str = "-1",
    extra: str = "",
    shoulder_parent: str = '<parent link="base"/>',
) -> str:
    """A valid three-link arm (base -shoulder-> arm -wrist-> hand) with one thing changed."""
    base = INERTIAL.format(mass="2", ixx="0.1")
    arm = INERTIAL.format(mass=arm_mass, ixx=arm_ixx)
    hand = INERTIAL.format(mass="0.5", ixx="0.1") if hand_inertial else ""
    return f"""<?xml version="1.0"?>
<robot name="arm">
  <link name="base">{base}</link>
  <link name="arm">{arm}</link>
  <link name="hand">{hand}</link>
  <joint name="shoulder" type="{shoulder_type}">{shoulder_parent}<child link="arm"/>
    <axis xyz="{axis}"/><limit lower="{lower}" upper="1" effort="{effort}" velocity="2"/></joint>
  <joint name="wrist" type="continuous"><parent link="arm"/><child link="hand"/>
    <origin xyz="{origin}" rpy="0 0.5 0"/><axis xyz="0 1 0"/></joint>
  {extra}
</robot>
"""


def _link(name: str, mass: str = "1") -> str:
    return f'<link name="{name}">{INERTIAL.format(mass=mass, ixx="0.1")}</link>'


def _joint(name: str, parent: str, child: str, jtype: str = "revolute") -> str:
    return (
        f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
        f'<axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
    )


def test_the_template_is_valid():
    """The unmodified template loads (so each case below fails for the one thing it changes)."""
    m = wbc.load_urdf(urdf(), floating_base=False)
    assert m.joint_names == ("universe", "shoulder", "wrist")
    assert m.nq == 3 and m.nv == 2


BAD = {
    "malformed xml": (urdf().replace("</robot>", "</robt>"), [r"malformed XML", r"line \d+"]),
    "not a robot": ('<?xml version="1.0"?><model name="x"><link name="a"/></model>', [r"<model>", r"<robot>"]),
    "no links": ('<robot name="empty"></robot>', [r"no <link>"]),
    "missing parent link": (urdf(shoulder_parent='<parent link="torso"/>'), [r"'shoulder'", r"'torso'", r"parent"]),
    "no parent element": (urdf(shoulder_parent=""), [r"'shoulder'", r"<parent"]),
    "missing child link": (urdf(extra=_joint("elbow", "arm", "forearm")), [r"'elbow'", r"'forearm'", r"child"]),
    "two parents": (urdf(extra=_joint("extra", "base", "hand")), [r"'hand'", r"two parent", r"'extra'|'wrist'"]),
    "cycle through the root": (urdf(extra=_joint("back", "hand", "base")), [r"cycle"]),
    "detached cycle": (
        urdf(extra=_link("c1") + _link("c2") + _joint("c12", "c1", "c2") + _joint("c21", "c2", "c1")),
        [r"cycle", r"'c1'", r"'c2'"],
    ),
    "several roots": (urdf(extra=_link("lost")), [r"several root", r"'lost'", r"'base'"]),
    "negative mass": (urdf(arm_mass="-1"), [r"link 'arm'", r"mass"]),
    "infinite mass": (urdf(arm_mass="inf"), [r"link 'arm'", r"mass"]),
    "NaN mass": (urdf(arm_mass="nan"), [r"link 'arm'", r"NaN"]),
    "inertia not PSD": (urdf(arm_ixx="-0.5"), [r"link 'arm'", r"positive semi-definite"]),
    "planar joint": (urdf(shoulder_type="planar"), [r"'shoulder'", r"'planar'"]),
    "banana joint": (urdf(shoulder_type="banana"), [r"'shoulder'", r"'banana'"]),
    "no joint type": (urdf().replace(' type="revolute"', ""), [r"'shoulder'", r"None"]),
    "zero axis": (urdf(axis="0 0 0"), [r"'shoulder'", r"zero axis"]),
    "non-numeric mass": (urdf(arm_mass="heavy"), [r"link 'arm'", r"'heavy'"]),
    "non-numeric origin": (urdf(origin="0 0 x"), [r"'wrist'", r"origin", r"'0 0 x'"]),
    "origin with 2 numbers": (urdf(origin="0 0"), [r"'wrist'", r"origin", r"2 numbers"]),
    "non-numeric axis": (urdf(axis="0 0 one"), [r"'shoulder'", r"axis"]),
    "non-numeric limit": (urdf(effort="lots"), [r"'shoulder'", r"effort", r"'lots'"]),
    "negative effort": (urdf(effort="-3"), [r"'shoulder'", r"effort"]),
    "lower above upper": (urdf(lower="2"), [r"'shoulder'", r"lower"]),
    "duplicate link": (urdf(extra=_link("arm")), [r"link 'arm'", r"twice"]),
    "duplicate joint": (urdf(extra=_joint("wrist", "hand", "tip") + _link("tip")), [r"joint 'wrist'", r"twice"]),
    "link without name": (urdf(extra="<link/>"), [r"<link> has no name"]),
    "inertia clearly not PSD": (urdf(arm_ixx="-0.01"), [r"link 'arm'", r"positive semi-definite", r"beyond"]),
    "world and floating joint stacked": (
        urdf(
            extra='<link name="world"/><joint name="float" type="floating"><parent link="world"/>'
            '<child link="base"/></joint>'
        ),
        [r"'world'", r"'float'", r"floating_base=False"],
    ),
}
#: Cases refused only with ``floating_base=True`` (the file itself is fine with a fixed base).
FLOATING_ONLY = {"world and floating joint stacked"}


@pytest.mark.parametrize("floating_base", [False, True], ids=["fixed", "floating"])
@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_bad_urdf_string(case, floating_base):
    """Each defect raises ModelError whose message names the element (and says '<string>')."""
    text, patterns = BAD[case]
    if case in FLOATING_ONLY and not floating_base:
        wbc.load_urdf(text, floating_base)
        return
    with pytest.raises(wbc.ModelError) as info:
        wbc.load_urdf(text, floating_base)
    message = str(info.value)
    assert "<string>" in message
    for p in patterns:
        assert re.search(p, message), f"{case}: {p!r} not in {message!r}"


@pytest.mark.parametrize("case", ["malformed xml", "two parents", "zero axis", "negative mass"])
def test_bad_urdf_file_names_the_file(case, tmp_path):
    """Loading a bad file gives the same error, naming the file."""
    path = tmp_path / "bad robot.urdf"
    path.write_text(BAD[case][0])
    for source in (path, str(path)):
        with pytest.raises(wbc.ModelError, match=re.escape(str(path))):
            wbc.load_urdf(source)


def test_nonexistent_file(tmp_path):
    """A path that does not exist is a ModelError naming it (str and Path alike)."""
    missing = tmp_path / "nowhere" / "robot.urdf"
    for source in (missing, str(missing)):
        with pytest.raises(wbc.ModelError, match=r"nowhere.*no such URDF file"):
            wbc.load_urdf(source)


def test_directory_and_binary_file(tmp_path):
    """A directory, or a file that is not text, is a ModelError, not an OSError / UnicodeDecodeError."""
    with pytest.raises(wbc.ModelError, match=re.escape(str(tmp_path))):
        wbc.load_urdf(tmp_path)
    blob = tmp_path / "blob.urdf"
    blob.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(wbc.ModelError, match=r"blob\.urdf"):
        wbc.load_urdf(blob)


def test_path_and_string_loading_agree(tmp_path):
    """The same URDF loads from a Path, a str path and the text (leading whitespace allowed when there
    is no XML declaration, which XML requires at the very start)."""
    text = urdf()
    path = tmp_path / "arm.urdf"
    path.write_text(text)
    models = [wbc.load_urdf(path), wbc.load_urdf(str(path)), wbc.load_urdf("\n  " + text.split("\n", 1)[1])]
    for m in models[1:]:
        assert m.joint_names == models[0].joint_names and m.frame_names == models[0].frame_names
        for a, b in zip(m.inertias, models[0].inertias):
            np.testing.assert_array_equal(a, b)
    assert models[0].source == str(path) and models[2].source == "<string>"


def test_actuated_argument():
    """``actuated=`` picks the actuated joints; an unknown name is a ModelError with a suggestion."""
    m = wbc.load_urdf(urdf(), floating_base=True, actuated=["wrist"])
    assert m.actuated_joint_names == ("wrist",)
    assert m.actuation_matrix().shape == (m.nv, 1)
    with pytest.raises(wbc.ModelError, match=r"'wirst'.*'wrist'"):
        wbc.load_urdf(urdf(), actuated=["wirst"])
