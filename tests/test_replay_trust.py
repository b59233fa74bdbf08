"""What a shared replay may contain (issue 24): only mesh files inside the robot's package roots
(absolute paths, ``..``, ``file://`` URLs and links escaping the package are left out with a
warning naming them), one scene node per link even when names differ only in characters a scene
path cannot hold, and a bounded number of frames (decimated with a warning)."""

from __future__ import annotations

import base64
import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import wbc
from wbc.errors import WbcPerformanceWarning, WbcSecurityWarning

pytest.importorskip("meshcat")
viz = pytest.importorskip("wbc.viz")
umsgpack = pytest.importorskip("umsgpack")

SECRET = "SECRET-4f1d"
STL = (
    "solid ok\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 0.1 0 0\nvertex 0 0.1 0\n"
    "endloop\nendfacet\nendsolid ok\n"
)


def _link(name: str, mesh: str | None) -> str:
    visual = f'<visual><geometry><mesh filename="{mesh}"/></geometry></visual>' if mesh else ""
    return (
        f'<link name="{name}"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" '
        f'iyz="0" izz="0.01"/></inertial>{visual}</link>'
    )


def _urdf(meshes: dict[str, str | None]) -> str:
    links = [_link("base", None)] + [_link(name, mesh) for name, mesh in meshes.items()]
    joints = [
        f'<joint name="j{k}" type="revolute"><parent link="base"/><child link="{name}"/>'
        f'<origin xyz="{0.1 * k} 0 0"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
        for k, name in enumerate(meshes)
    ]
    return f'<robot name="r">{"".join(links)}{"".join(joints)}</robot>'


@pytest.fixture
def package(tmp_path) -> tuple[Path, Path]:
    """A package ``pkg`` with a URDF and a mesh, and a secret file next to it (outside)."""
    root = tmp_path / "pkg"
    (root / "meshes").mkdir(parents=True)
    (root / "urdf").mkdir()
    (root / "meshes" / "ok.stl").write_text(STL)
    secret = tmp_path / "secret.obj"
    secret.write_text(f"# {SECRET}\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    return root, secret


def _blobs(page: Path) -> list[dict]:
    blobs = json.loads(re.search(r"var blobs = (\[.*?\]);", page.read_text(), re.S).group(1))
    return [umsgpack.unpackb(base64.b64decode(b)) for b in blobs]


def _write(urdf_path: Path, tmp_path: Path, **kwargs) -> tuple[viz.Replay, Path, list]:
    model = wbc.load_urdf(urdf_path, floating_base=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        replay = viz.Replay(model, urdf_path, **kwargs)
        replay.add(0.0, wbc.neutral(model))
        replay.add(0.1, wbc.neutral(model))
        page = replay.write(tmp_path / "out" / "replay.html")
    return replay, page, caught


@pytest.mark.parametrize("escape", ["absolute", "dotdot", "file url", "symlink", "package dotdot"])
def test_files_outside_the_package_are_not_embedded(escape, package, tmp_path):
    """Each way of naming a file outside the robot's package leaves it out of the page (its bytes
    appear in no scene command), with a WbcSecurityWarning naming the mesh, while the mesh inside
    the package is embedded (the positive control)."""
    root, secret = package
    if escape == "symlink":
        (root / "meshes" / "innocent.obj").symlink_to(secret)
    name = {
        "absolute": str(secret),
        "dotdot": "../../secret.obj",
        "file url": f"file://{secret}",
        "symlink": "package://pkg/meshes/innocent.obj",
        "package dotdot": "package://pkg/../secret.obj",
    }[escape]
    urdf = root / "urdf" / "r.urdf"
    urdf.write_text(_urdf({"good": "package://pkg/meshes/ok.stl", "bad": name}))
    replay, page, caught = _write(urdf, tmp_path)
    contents = b"".join(umsgpack.packb(c) for c in _blobs(page))
    assert SECRET.encode() not in contents, f"{escape}: the file outside the package was embedded"
    assert b"facet normal" in contents, "the mesh inside the package is missing"
    refusals = [str(w.message) for w in caught if w.category is WbcSecurityWarning]
    assert len(refusals) == 1 and name in refusals[0] and "'bad'" in refusals[0], refusals
    assert len(replay.refused_meshes) == 1 and name in replay.refused_meshes[0]
    assert "mesh files left out" in page.read_text()


def test_relative_mesh_inside_the_urdf_directory_is_embedded(package, tmp_path):
    """A relative path below the URDF's directory is inside its root: embedded, no warning."""
    root, _ = package
    (root / "urdf" / "part.stl").write_text(STL.replace("ok", "part"))
    urdf = root / "urdf" / "r.urdf"
    urdf.write_text(_urdf({"a": "part.stl"}))
    replay, page, caught = _write(urdf, tmp_path)
    assert not [w for w in caught if w.category is WbcSecurityWarning]
    assert b"solid part" in b"".join(umsgpack.packb(c) for c in _blobs(page))
    assert replay.refused_meshes == ()


def test_link_names_differing_in_unsafe_characters_stay_distinct(package, tmp_path):
    """``arm:1`` and ``arm_1`` (the same once made a scene path element) are two scene nodes,
    each animated with its own pose."""
    root, _ = package
    urdf = root / "urdf" / "r.urdf"
    urdf.write_text(_urdf({"arm:1": "package://pkg/meshes/ok.stl", "arm_1": "package://pkg/meshes/ok.stl"}))
    _, page, _ = _write(urdf, tmp_path)
    commands = _blobs(page)
    nodes = {c["path"].split("/")[3] for c in commands if c["type"] == "set_object" and "/robot/" in c["path"]}
    assert len(nodes) == 2, nodes
    [animation] = [c for c in commands if c["type"] == "set_animation"]
    animated = {clip["path"].split("/")[3] for clip in animation["animations"] if "/robot/" in clip["path"]}
    assert animated == nodes
    translations = set()
    for clip in animation["animations"]:
        if "/robot/" in clip["path"]:
            matrix = clip["clip"]["tracks"][0]["keys"][0]["value"]
            translations.add(round(float(matrix[12]), 6) if len(matrix) == 16 else tuple(matrix))
    assert len(translations) == 2, "the two links are drawn at one pose"


def test_long_recordings_are_decimated_with_a_warning(package, tmp_path):
    """More frames than ``max_frames`` are decimated as they are recorded (memory stays bounded),
    with one warning; the frames kept are evenly spaced and the latest is always written."""
    root, _ = package
    urdf = root / "urdf" / "r.urdf"
    urdf.write_text(_urdf({"a": "package://pkg/meshes/ok.stl"}))
    model = wbc.load_urdf(urdf, floating_base=False)
    replay = viz.Replay(model, urdf, max_frames=50)
    q = wbc.neutral(model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(1001):
            replay.add(k * 0.001, q)
    assert len([w for w in caught if w.category is WbcPerformanceWarning]) == 1
    assert 25 <= len(replay.times) <= 50
    steps = np.diff(replay.times)
    assert np.allclose(steps, steps[0])
    times, _, _ = replay._frames()
    assert times[-1] == pytest.approx(1.0)
    page = replay.write(tmp_path / "long.html")
    [animation] = [c for c in _blobs(page) if c["type"] == "set_animation"]
    keys = animation["animations"][0]["clip"]["tracks"][0]["keys"]
    assert len(keys) == len(times)
    with pytest.raises(wbc.InputError, match="max_frames"):
        viz.Replay(model, urdf, max_frames=1)
