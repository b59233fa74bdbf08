"""The on-disk record of completed cells: what lets an interrupted sweep resume.

One JSON file per completed cell, ``<directory>/<key>.json`` (the key: :meth:`Cell.key`), written
to a temporary file and renamed, so a sweep killed at any moment leaves only whole records. A
failed cell is recorded too (with its error) and is not run again unless asked
(``retry_failed``); a record that does not parse, or belongs to another cell, is ignored (the cell
runs again).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

from ..errors import InputError
from .result import CellResult

__all__ = ["ResultStore"]


class ResultStore:
    """Completed cells of sweeps, by key, in ``directory`` (created if needed)."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        if self.directory.exists() and not self.directory.is_dir():
            raise InputError(f"sweep store {str(self.directory)!r} exists and is not a directory")
        self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        if not (len(key) == 64 and all(c in "0123456789abcdef" for c in key)):
            raise InputError(f"sweep store: {key!r} is not a cell key")
        return self.directory / f"{key}.json"

    def load(self, key: str) -> CellResult | None:
        """The recorded result of the cell ``key``, or None (never recorded, or unreadable)."""
        try:
            record = json.loads(self._path(key).read_text())
            if record.get("key") != key:
                return None
            return CellResult.from_record(record)
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def save(self, key: str, result: CellResult) -> None:
        """Record ``result`` for ``key`` (atomically)."""
        path = self._path(key)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=self.directory)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump({"key": key, **result.record()}, f)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def __len__(self) -> int:
        return sum(1 for _ in self.directory.glob("*.json"))
