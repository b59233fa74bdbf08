"""The demos' shared command-line pieces (wbc.command_line): the parser described by a docstring and
the clear exit when MuJoCo is missing."""

from __future__ import annotations

import pytest

from wbc.command_line import docstring_parser, needs_sim

DOC = """Run the thing.

Example::

    python demos/thing.py --out out/thing
"""


def test_the_docstring_describes_the_parser_and_its_examples_stay_laid_out():
    parser = docstring_parser(DOC)
    assert parser.description == "Run the thing."
    assert parser.epilog == "Example::\n\n    python demos/thing.py --out out/thing"
    assert "    python demos/thing.py --out out/thing" in parser.format_help()
    assert docstring_parser("One line.").epilog is None and docstring_parser(None).description == ""


def test_a_missing_simulator_ends_the_program_naming_the_demo_and_the_extra():
    expected = r"No module named 'mujoco'\nthe arm demo needs MuJoCo: pip install 'wbc\[sim\]'"
    with pytest.raises(SystemExit, match=expected), needs_sim("the arm demo"):
        raise ModuleNotFoundError("No module named 'mujoco'")
    with pytest.raises(KeyError), needs_sim("the arm demo"):  # other errors pass through
        raise KeyError("x")
    with needs_sim("the arm demo"):
        import json  # noqa: F401  (an import that works: nothing happens)
