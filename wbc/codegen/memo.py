"""Small facts remembered across processes in the kernel cache directory.

A process that only loads cached kernels still needs the identity of the C compiler (part of every
library's key: running ``cc --version`` costs milliseconds) and the digest of wbc's sources (part
of every fingerprint: reading and hashing them costs more). Each is remembered in
``<cache>/<kind>-<digest of its stamp>.txt`` under a **stamp** of what it is computed from (the
compiler binary's resolved path, size, modification time and inode; the source files' paths,
sizes, modification times and inodes): a changed input has another stamp, so it is computed again.
A memo is read only from a trusted cache directory and only if the file itself is trusted
(:mod:`wbc.codegen.trust`); whoever could write it could write the cache's libraries too.
Unreadable, foreign or missing memos are simply computed again; writing is best effort (atomic).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from .trust import PUBLIC_FILE_MODE, untrusted_directory, untrusted_file

__all__ = ["recall", "remember"]


def _path(directory: Path, kind: str, stamp: str) -> tuple[Path, str]:
    digest = hashlib.sha256(f"wbc memo {kind}\0{stamp}".encode()).hexdigest()
    return directory / f"{kind}-{digest[:24]}.txt", digest


def recall(directory: Path, kind: str, stamp: str) -> str | None:
    """The value remembered for ``(kind, stamp)`` in ``directory``, or None."""
    path, digest = _path(directory, kind, stamp)
    try:
        if untrusted_directory(directory) is not None or untrusted_file(path) is not None:
            return None
        with open(path, encoding="utf-8") as f:
            lines = f.read(1 << 16).split("\n")
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return lines[1] if len(lines) >= 2 and lines[0] == digest and lines[1] else None


def remember(directory: Path, kind: str, stamp: str, value: str) -> None:
    """Remember ``value`` (one line) for ``(kind, stamp)`` in ``directory`` (when it exists, is
    trusted and can be written)."""
    if "\n" in value or not value:
        return
    path, digest = _path(directory, kind, stamp)
    try:
        if not directory.is_dir() or untrusted_directory(directory) is not None:
            return
        fd, tmp = tempfile.mkstemp(prefix=".build-memo-", dir=directory)  # stale ones: removed a day old
        try:
            os.fchmod(fd, PUBLIC_FILE_MODE)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(f"{digest}\n{value}\n")
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return
