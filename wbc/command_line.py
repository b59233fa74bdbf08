"""What the demos' command lines share: a parser described by the demo's docstring, and a clear exit
when the simulation extra is missing.

Needs nothing optional; ``import wbc`` does not import it::

    from wbc.command_line import docstring_parser, needs_sim

    with needs_sim("the arm demo"):
        from wbc.sim.arm import simulate

    parser = docstring_parser(__doc__)
"""

from __future__ import annotations

import argparse
import contextlib
import math
from collections.abc import Iterator

__all__ = ["docstring_parser", "needs_sim", "positive", "non_negative"]


def docstring_parser(doc: str | None) -> argparse.ArgumentParser:
    """A parser described by ``doc``: its first paragraph as the description, the rest (usage
    examples, outputs) as the epilog, laid out as written."""
    description, _, rest = (doc or "").strip().partition("\n\n")
    return argparse.ArgumentParser(
        description=description, epilog=rest or None, formatter_class=argparse.RawDescriptionHelpFormatter
    )


def positive(text: str) -> float:
    """An ``argparse`` type: a positive, finite number (a duration, a time step)."""
    value = _number(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def non_negative(text: str) -> float:
    """An ``argparse`` type: a finite number ≥ 0 (a force whose direction the option names)."""
    value = _number(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number ≥ 0, got {text!r}")
    return value


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be finite, got {text!r}")
    return value


@contextlib.contextmanager
def needs_sim(what: str) -> Iterator[None]:
    """Imports inside this block need MuJoCo (the ``sim`` extra): an ImportError there ends the program
    (SystemExit) with its message, naming ``what`` and the install command."""
    try:
        yield
    except ImportError as exc:
        raise SystemExit(f"{exc}\n{what} needs MuJoCo: pip install 'wbc[sim]' (make demo installs it)") from None
