"""Whether a cached file may be trusted: who could have written it.

wbc loads shared libraries from its kernel cache (their constructors run as the user who loads
them) and reads index records that shape the QP. A file is trusted only when nobody but this user
(or root) can have written it or replaced it:

* the file is a regular file (not a link, FIFO or device), owned by this user or root, not writable
  by group or others;
* the directory holding it, and every directory above it up to ``/`` (both along the path as given
  and along the path with links resolved), is owned by this user or root and not writable by group
  or others. An *ancestor* that others may write is accepted only with the sticky bit (``/tmp``):
  there others cannot rename or remove what is not theirs. The cache directory itself must be closed.

See ``docs/security.md`` for the trust model as a whole.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["untrusted_directory", "untrusted_file", "PRIVATE_DIRECTORY_MODE", "PUBLIC_FILE_MODE"]

#: Mode of the directories wbc creates for its caches, whatever the umask.
PRIVATE_DIRECTORY_MODE = 0o700
#: Mode of the files wbc publishes in its caches (libraries, sidecars, indexes), whatever the umask.
PUBLIC_FILE_MODE = 0o644

_OPEN = stat.S_IWGRP | stat.S_IWOTH


def _owner_ok(st: os.stat_result) -> bool:
    return st.st_uid in (os.geteuid(), 0)


def _who(st: os.stat_result) -> str:
    return f"owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o}"


def _ancestors(path: Path) -> list[Path]:
    """``path``'s parents up to ``/``, along the path as given and along it resolved (links)."""
    absolute = Path(os.path.abspath(path))
    chain = dict.fromkeys([*absolute.parents, *Path(os.path.realpath(path)).parents])
    return list(chain)


def untrusted_directory(directory: Path) -> str | None:
    """Why files in ``directory`` cannot be trusted, or None when they can (see the module docstring).

    A directory that does not exist is judged by its nearest existing ancestor chain (what would
    hold it once created).
    """
    try:
        st = os.stat(directory)
    except FileNotFoundError:
        st = None
    except OSError as e:
        return f"{directory} cannot be inspected ({e.strerror})"
    if st is not None:
        if not stat.S_ISDIR(st.st_mode):
            return f"{directory} is not a directory"
        if not _owner_ok(st) or st.st_mode & _OPEN:
            return (
                f"{directory} can be written by others ({_who(st)}; a cache must be owned by this user "
                f"(uid {os.geteuid()}) or root and not writable by group or others: chmod go-w)"
            )
    for parent in _ancestors(directory):
        try:
            pst = os.stat(parent)
        except FileNotFoundError:
            continue
        except OSError as e:
            return f"{parent} (above {directory}) cannot be inspected ({e.strerror})"
        sticky = bool(pst.st_mode & stat.S_ISVTX)
        if not _owner_ok(pst) or (pst.st_mode & _OPEN and not sticky):
            return (
                f"{parent}, above {directory}, can be written by others ({_who(pst)}): whoever can "
                "could replace the cache"
            )
    return None


def untrusted_file(path: Path) -> str | None:
    """Why the file ``path`` (in a trusted directory) cannot be trusted, or None when it can."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return f"{path} cannot be inspected ({e.strerror})"
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file"
    if not _owner_ok(st) or st.st_mode & _OPEN:
        return f"{path} can be written by others ({_who(st)})"
    return None
