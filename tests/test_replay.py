"""``replay.html`` in a real headless browser (issue 15, item 4).

The page is written for a short Solo12 run (a sway of the base, contact forces, a push), opened
from a ``file://`` URL in Debian's Chromium (installed here with ``apt-get install -y chromium``
when missing and possible; the browser tests are skipped, saying why, where it cannot be), stepped
to a time with the page's ``#t=`` fragment, and screenshotted twice: with the robot and with the
robot hidden (``hide=robot``). The pixels that differ are the robot: there must be many, and
nearly all inside the region where the camera puts the robot (the middle of the view). The page
must be self-contained: no ``http`` resource, meshes embedded.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import wbc
from wbc import robots

pytest.importorskip("meshcat")
viz = pytest.importorskip("wbc.viz")

WIDTH, HEIGHT = 800, 600


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def chromium() -> str:
    """Debian's Chromium, installed by this fixture when missing and possible (root, apt-get)."""
    path = _chromium()
    if path is None and shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0:
        for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", "chromium"]):
            done = subprocess.run(
                cmd, capture_output=True, text=True, timeout=900, env=os.environ | {"DEBIAN_FRONTEND": "noninteractive"}
            )
            if done.returncode != 0:
                pytest.skip(f"cannot install Chromium ({' '.join(cmd)} failed: {done.stderr.strip()[-300:]})")
        path = _chromium()
    if path is None:
        pytest.skip("no Chromium here and it cannot be installed (needs root and apt-get: apt-get install -y chromium)")
    return path


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> tuple[Path, viz.Replay]:
    spec = robots.load("solo12")
    model = spec.model
    replay = viz.Replay(model, spec.urdf, title="test replay")
    weight = model.total_mass * 9.81
    for k in range(31):
        t = k / 30
        q = spec.q0.copy()
        q[1] += 0.03 * np.sin(2 * np.pi * t)
        contacts = {f: (wbc.frame_placement(model, q, f)[0:3, 3], np.array([0.0, 0.0, weight / 4])) for f in spec.feet}
        pushes = {"lateral": (q[0:3], np.array([0.0, 10.0, 0.0]))} if 0.4 <= t < 0.6 else {}
        replay.add(t, q, contacts, pushes)
    path = replay.write(tmp_path_factory.mktemp("replay") / "replay.html")
    return path, replay


def test_the_page_is_self_contained(page):
    path, replay = page
    text = path.read_text()
    assert "MeshCat.Viewer" in text and "handle_command_bytearray" in text
    assert not re.search(r"""(src|href)\s*=\s*["']https?:""", text), "the page loads something from the network"
    assert not re.search(r"""fetch\(\s*["']https?:""", text)
    assert replay.substituted_links == ()  # every Solo12 mesh was found and embedded
    assert path.stat().st_size > 1_000_000  # the meshes are in it


def _screenshot(chromium: str, url: str, out: Path) -> np.ndarray:
    cmd = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--use-angle=swiftshader",
        "--enable-unsafe-swiftshader",
        "--hide-scrollbars",
        f"--window-size={WIDTH},{HEIGHT}",
        "--virtual-time-budget=10000",
        f"--screenshot={out}",
        url,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0 and out.exists(), done.stderr[-2000:]
    import matplotlib.image

    return np.asarray(matplotlib.image.imread(out))[..., :3]


def test_the_robot_is_drawn_where_the_camera_looks(page, chromium, tmp_path):
    """At t = 0.5 s (during the push) the robot covers thousands of pixels, almost all of them in the
    middle of the view; with the robot hidden the scene (floor, sky, arrows, legend) is still there."""
    path, _ = page
    url = path.resolve().as_uri()
    shown = _screenshot(chromium, url + "#t=0.5", tmp_path / "shown.png")
    hidden = _screenshot(chromium, url + "#t=0.5&hide=robot", tmp_path / "hidden.png")
    assert shown.shape == (HEIGHT, WIDTH, 3)
    assert hidden.std() > 0.02, "the page drew nothing (no WebGL?)"
    robot = np.abs(shown - hidden).max(axis=2) > 0.08
    rows, cols = np.nonzero(robot)
    assert robot.sum() > 5000, f"only {robot.sum()} robot pixels"
    region = (slice(HEIGHT // 5, HEIGHT * 9 // 10), slice(WIDTH // 5, WIDTH * 4 // 5))
    inside = robot[region].sum() / robot.sum()
    assert inside > 0.98, f"{inside:.1%} of the robot's pixels in the expected region"
    centre = np.array([rows.mean() / HEIGHT, cols.mean() / WIDTH])
    assert np.all(np.abs(centre - 0.5) < 0.15), f"robot centred at {centre} of the view"


def test_stepping_in_time_moves_the_robot(page, chromium, tmp_path):
    """The sway moves the base by ±3 cm: screenshots at t = 0.25 s and 0.75 s differ, and both differ
    from the first frame's."""
    path, _ = page
    url = path.resolve().as_uri()
    a = _screenshot(chromium, url + "#t=0.25", tmp_path / "a.png")
    b = _screenshot(chromium, url + "#t=0.75", tmp_path / "b.png")
    assert (np.abs(a - b).max(axis=2) > 0.08).sum() > 200


def test_a_model_with_nothing_to_draw_writes_a_page_of_the_floor(tmp_path):
    """An MJCF model keeps its geometry in its own file: no link has a mesh or a collision shape to
    draw. The page still writes (floor and arrows, the camera on the origin), not a numpy error."""
    text = (
        "<mujoco><worldbody><body name='b'><freejoint/><geom type='sphere' size='0.1' mass='1'/>"
        "</body></worldbody></mujoco>"
    )
    pytest.importorskip("mujoco")
    path = tmp_path / "ball.xml"
    path.write_text(text)
    model = wbc.load_mjcf(path)
    tree = model.tree if isinstance(model, wbc.ClusterModel) else model
    replay = viz.Replay(tree)
    replay.add(0.0, wbc.neutral(tree))
    page = replay.write(tmp_path / "replay.html")
    assert page.stat().st_size > 0


def test_a_path_that_cannot_be_written_is_named(tmp_path):
    replay = viz.Replay(robots.load("panda").model)
    replay.add(0.0, robots.load("panda").q0)
    (tmp_path / "a_file").write_text("")
    with pytest.raises(wbc.InputError, match=r"cannot write the replay to .*a_file/replay.html"):
        replay.write(tmp_path / "a_file" / "replay.html")
    with pytest.raises(wbc.InputError, match=r"cannot write the replay to .*: Is a directory"):
        replay.write(tmp_path)
