"""Files a user names (issue 24): regular files only (a FIFO is refused at once, not waited on;
``/dev/zero`` refused, not read until MemoryError), a configurable size limit, XML ``bytes`` decoded
by their byte-order mark or declaration (UTF-16 is a document, not a file name), numbers as URDF
writes them (``1_000`` refused, naming the element), and controllers that say plainly they cannot
be copied or pickled."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import wbc
from wbc import tasks
from wbc.errors import InputError, ModelError, NotCopyableError
from wbc.model.files import read_user_file, xml_text
from wbc.robots import synthetic

URDF = """<?xml version="1.0" encoding="{encoding}"?>
<robot name="r{name}">
  <link name="base"><inertial><mass value="{mass}"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="arm"><inertial><mass value="1.5"/><origin xyz="{xyz}"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="10" velocity="2"/></joint>
</robot>
"""


def _urdf(encoding="UTF-8", name="", mass="2.0", xyz="0 0 0.1") -> str:
    return URDF.format(encoding=encoding, name=name, mass=mass, xyz=xyz)


def _load_in_child(path: str, timeout: float = 60, loader: str = "load_urdf") -> subprocess.CompletedProcess:
    """``wbc.<loader>(path)`` (``load_urdf`` or ``load_mjcf``) in a child process limited to 3 GB of
    address space (a hang or a runaway read fails the test instead of taking the machine)."""
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n"
        "import wbc\n"
        "try:\n"
        f"    wbc.{loader}(sys.argv[1])\n"
        "except wbc.ModelError as e:\n"
        "    print('ModelError:', e)\n"
    )
    return subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, timeout=timeout)


def test_a_fifo_is_refused_at_once(tmp_path):
    """A FIFO with no writer: a ModelError naming it, at once (before: blocked forever)."""
    fifo = tmp_path / "robot.urdf"
    os.mkfifo(fifo)
    try:
        out = _load_in_child(str(fifo), timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("load_urdf on a FIFO blocked")
    assert out.stdout.startswith("ModelError:") and "FIFO" in out.stdout and str(fifo) in out.stdout, out


def test_dev_zero_is_refused_not_read():
    """``/dev/zero`` (endless): a ModelError saying it is a device (before: MemoryError)."""
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    out = _load_in_child("/dev/zero")
    assert out.stdout.startswith("ModelError:") and "device" in out.stdout, (out.stdout, out.stderr[-500:])


def test_size_limit_is_configurable(tmp_path):
    """A file over ``max_bytes`` is refused naming its size and the limit; the limit can be raised."""
    path = tmp_path / "r.urdf"
    path.write_text(_urdf())
    size = path.stat().st_size
    with pytest.raises(ModelError, match=rf"{size} bytes, more than the limit of 100"):
        wbc.load_urdf(path, max_bytes=100)
    assert wbc.load_urdf(path, max_bytes=size).nv == 7
    with pytest.raises(InputError, match="max_bytes"):
        wbc.load_urdf(path, max_bytes=0)
    with pytest.raises(ModelError, match="directory"):
        wbc.load_urdf(tmp_path)
    with pytest.raises(ModelError, match="no such URDF file"):
        wbc.load_urdf(tmp_path / "missing.urdf")
    for empty in ("", "  ", b""):  # not "." (the current directory) read as a file name
        with pytest.raises(ModelError, match="an empty URDF file name or document"):
            wbc.load_urdf(empty)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-8-sig", "latin-1"])
def test_bytes_are_decoded_by_their_declaration(encoding, tmp_path):
    """URDF bytes in UTF-16 (with and without a byte-order mark), UTF-32, UTF-8 with a mark and
    Latin-1 load as the same robot as the UTF-8 text (before: UTF-16 bytes were taken as a file
    name: 'embedded null byte'); a file in UTF-16 loads too."""
    declared = {"utf-8-sig": "UTF-8", "utf-16-le": "UTF-16", "utf-16-be": "UTF-16"}.get(encoding, encoding.upper())
    text = _urdf(encoding=declared, name="é")
    reference = wbc.load_urdf(_urdf(name="é"), floating_base=False)
    data = text.encode(encoding)
    model = wbc.load_urdf(data, floating_base=False)
    assert model.name == "ré" and model.nv == reference.nv
    assert np.allclose(wbc.eager.crba(model, np.array([0.3])), wbc.eager.crba(reference, np.array([0.3])))
    path = tmp_path / "r.urdf"
    path.write_bytes(data)
    assert wbc.load_urdf(path, floating_base=False).name == "ré"


def test_bytes_that_do_not_decode_are_refused_clearly():
    """Bytes invalid in their declared encoding, an unknown encoding, or bytes that are neither a
    document nor a file name: ModelErrors saying which."""
    with pytest.raises(ModelError, match=r"(?i)not valid utf-8"):
        wbc.load_urdf(_urdf().encode() + b"<!-- \xff\xfe -->")
    with pytest.raises(ModelError, match="unknown encoding 'klingon'"):
        wbc.load_urdf(_urdf(encoding="klingon").encode())
    with pytest.raises(ModelError, match="null byte"):
        wbc.load_urdf(b"robot\0.urdf")
    with pytest.raises(ModelError, match="null byte"):
        wbc.load_urdf("robot\0.urdf")
    assert xml_text("<a/>".encode("utf-16"), "x") == "<a/>"


@pytest.mark.parametrize(
    "field, value",
    [("mass", "1_000"), ("xyz", "0 0 1_0"), ("mass", "\u0661"), ("mass", "0x10"), ("mass", "1.0f")],
    ids=["mass underscore", "xyz underscore", "arabic digit", "hex", "suffix"],
)
def test_numbers_are_written_as_urdf_writes_them(field, value):
    """``mass value="1_000"`` (Python's float() reads 1000) and other non-URDF spellings are
    ModelErrors naming the element (before: loaded as 1000)."""
    with pytest.raises(ModelError, match="link 'base' mass" if field == "mass" else "link 'arm' inertial origin") as e:
        wbc.load_urdf(_urdf(**{field: value}))
    if "_" in value:
        assert "underscores" in str(e.value)
    for fine in ("1e3", "+2.", ".5", "2.0E-1"):
        assert wbc.load_urdf(_urdf(mass=fine)).nv == 7


def test_read_user_file_reads_regular_files_only(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 10)
    assert read_user_file(path, max_bytes=10) == b"x" * 10
    with pytest.raises(ModelError, match="more than the limit of 9"):
        read_user_file(path, max_bytes=9)


def test_controllers_say_they_cannot_be_copied_or_pickled():
    """copy.copy, copy.deepcopy and pickle of a controller raise NotCopyableError (a TypeError and
    a WbcError) saying so and what to do (before: "cannot pickle 'mappingproxy'")."""
    model = synthetic.chain(3)
    ctrl = wbc.WholeBodyController(model, [tasks.PostureTask(model)])
    for operation in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(NotCopyableError, match="cannot be copied or pickled") as e:
            operation(ctrl)
        assert isinstance(e.value, TypeError) and isinstance(e.value, wbc.WbcError)


def _load_mjcf_in_child(path: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``load_mjcf(path)`` in a child process limited to 3 GB of address space."""
    return _load_in_child(path, timeout, loader="load_mjcf")


def test_mjcf_loader_reads_regular_files_only(tmp_path):
    """The MJCF loader refuses FIFOs, devices and files over the limit as the URDF loader does."""
    fifo = tmp_path / "robot.xml"
    os.mkfifo(fifo)
    try:
        out = _load_mjcf_in_child(str(fifo))
    except subprocess.TimeoutExpired:
        pytest.fail("load_mjcf on a FIFO blocked")
    assert out.stdout.startswith("ModelError:") and "FIFO" in out.stdout, (out.stdout, out.stderr[-500:])
    if os.path.exists("/dev/zero"):
        out = _load_mjcf_in_child("/dev/zero")
        assert out.stdout.startswith("ModelError:") and "device" in out.stdout, (out.stdout, out.stderr[-500:])
    path = tmp_path / "r.xml"
    path.write_text(_chain_mjcf(2))
    with pytest.raises(ModelError, match="more than the limit of 100"):
        wbc.load_mjcf(path, max_bytes=100)
    assert wbc.load_mjcf(path).tree.nv == 2


def _chain_mjcf(n: int) -> str:
    body = "<body name='b{i}'><joint name='j{i}' type='hinge'/><inertial pos='0 0 0' mass='1' diaginertia='1 1 1'/>"
    return "<mujoco><worldbody>" + "".join(body.format(i=i) for i in range(n)) + "</body>" * n + "</worldbody></mujoco>"


def test_deeply_nested_mjcf_is_a_model_error_not_a_recursion_error():
    """1,000 nested bodies: a ModelError saying the nesting is too deep (before: a raw RecursionError);
    a chain of 200 still loads."""
    with pytest.raises(ModelError, match="nest"):
        wbc.load_mjcf(_chain_mjcf(1000))
    assert wbc.load_mjcf(_chain_mjcf(200)).tree.nv == 200
