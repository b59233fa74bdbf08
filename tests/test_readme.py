"""The README's code: every block parses, every ``wbc`` name it uses exists, the tour's two
complete programs (the Panda's hand on a circle, Talos's model API) run as printed, and every demo
and benchmark command line it shows (README and docs/) exists with the flags it is shown with.

The other blocks are fragments that continue a story (``trajectory``, ``placement``, a user's
``robot`` driver), so they are not run; a renamed or removed function they call still fails here.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks() -> list[str]:
    return BLOCK.findall(README.read_text(encoding="utf-8"))


def _section_block(heading: str) -> str:
    """The first python block after the README heading ``heading``."""
    text = README.read_text(encoding="utf-8")
    start = text.index(heading)
    return BLOCK.search(text, start).group(1)


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for an attribute chain on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _wbc_names(source: str) -> set[str]:
    """Every dotted ``wbc`` name the block uses: imports from wbc, and whole attribute chains on names
    bound to wbc modules (``wbc.x.y``, ``robots.load``, ``tasks.FrameTask``; a chain on a call's
    result, ``robots.load("talos").model``, stops at the call)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            child.parent = node
    aliases = {"wbc": "wbc"}
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "wbc":
                    aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else "wbc"
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "wbc":
            for a in node.names:
                names.add(f"{node.module}.{a.name}")
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and not isinstance(node.parent, ast.Attribute):
            chain = _dotted(node)
            if chain and chain.split(".")[0] in aliases:
                head, _, rest = chain.partition(".")
                names.add(f"{aliases[head]}.{rest}")
    return names


def _resolve(dotted: str) -> None:
    """Import the longest module prefix of ``dotted`` and get the rest as attributes."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return
    raise ImportError(dotted)


def test_the_readme_has_python_blocks():
    assert len(_blocks()) >= 15


@pytest.mark.parametrize("index", range(len(BLOCK.findall(README.read_text(encoding="utf-8")))))
def test_every_wbc_name_in_a_block_exists(index):
    source = _blocks()[index]
    used = _wbc_names(source)  # a block that does not parse fails here, naming its line
    missing = []
    for dotted in sorted(used):
        try:
            _resolve(dotted)
        except (ImportError, AttributeError) as e:
            missing.append(f"{dotted} ({e})")
    assert not missing, f"README block {index} uses names wbc does not have: {missing}"


def test_the_chain_walker_finds_names_and_misses():
    """The check itself: a real name resolves, a renamed one is caught."""
    src = "import wbc\nfrom wbc import robots\nwbc.crba(m, q)\nrobots.load('panda')\nwbc.crab(m, q)\n"
    used = _wbc_names(src)
    assert {"wbc.crba", "wbc.robots.load", "wbc.crab"} <= used
    _resolve("wbc.crba")
    _resolve("wbc.robots.load")
    with pytest.raises(AttributeError):
        _resolve("wbc.crab")


def _run(source: str) -> tuple[dict, str]:
    namespace: dict = {"__name__": "__readme__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, str(README), "exec"), namespace)
    return namespace, out.getvalue()


def test_the_first_control_loop_runs_and_tracks_the_circle():
    """The Panda's hand on a 10 cm circle, 5 s in MuJoCo, as printed: it ends within 1 mm."""
    pytest.importorskip("mujoco")
    namespace, printed = _run(_section_block("### A first control loop"))
    assert float(printed.split()[-1]) < 1e-3
    assert namespace["sim"].time == pytest.approx(5.0, abs=2e-3)


def test_the_model_api_block_runs_and_agrees_with_itself():
    """Talos's model API block, as printed: RNEA of ABA's free fall with the foot force is that force's
    torque, so ``tau`` is −Jᵀf (the block's own quantities; Pinocchio checks them elsewhere)."""
    namespace, _ = _run(_section_block("### Model, kinematics, dynamics"))
    J = namespace["wbc"].frame_jacobian(
        namespace["model"], namespace["q"], "left_sole_link", namespace["wbc"].ReferenceFrame.LOCAL
    )
    f = np.array([0, 0, 400.0, 0, 0, 0])
    assert namespace["M"].shape == (38, 38)
    assert np.allclose(namespace["tau"], -J.T @ f, atol=1e-8)


def _commands() -> dict[str, set[str]]:
    """Each demo script and ``python -m`` benchmark the README and docs name, with the ``--flags``
    they are shown with."""
    root = README.parent
    text = "\n".join(p.read_text(encoding="utf-8") for p in [README, *sorted((root / "docs").glob("*.md"))])
    commands: dict[str, set[str]] = {}
    for m in re.finditer(r"(demos/\w+\.py|python -m benchmarks\.\w+)([^`\n]*)", text):
        script = m.group(1).removeprefix("python ")
        commands.setdefault(script, set()).update(re.findall(r"(?<![\w-])--[a-z][a-z-]*", m.group(2)))
    return commands


def test_the_readme_names_its_demos_and_benchmarks():
    commands = _commands()
    assert "demos/humanoid_balance.py" in commands and "-m benchmarks.controller" in commands
    assert {"--realtime", "--paced"} <= commands["demos/humanoid_balance.py"]


@pytest.mark.parametrize("script", sorted(_commands()))
def test_every_command_line_shown_exists_with_its_flags(script):
    """``--help`` of each demo and benchmark the README shows lists every flag it is shown with."""
    root = README.parent
    if script.startswith("demos/"):
        assert (root / script).is_file(), f"the README names {script}, which does not exist"
    argv = [sys.executable, *script.split(), "--help"]
    done = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{script} --help failed:\n{done.stderr[-2000:]}"
    missing = sorted(f for f in _commands()[script] if not re.search(rf"{f}(?![\w-])", done.stdout))
    assert not missing, f"the README shows {script} with {missing}, which its --help does not list"
