"""Reading files a user named (robot descriptions, meshes): regular files only, bounded in size,
XML decoded as its declaration says.

A path can name anything: a FIFO (reading it waits forever for a writer), a device (``/dev/zero``
never ends), a directory, a file of gigabytes. :func:`read_user_file` opens without blocking,
refuses what is not a regular file and what is larger than a limit (:data:`MAX_FILE_BYTES` unless
the caller passes another), and raises :class:`~wbc.errors.ModelError` naming the path for every
problem. :func:`xml_text` decodes an XML document given as bytes by its byte-order mark or its
declaration (UTF-8, UTF-16, UTF-32, Latin-1, ...), and refuses clearly what does not decode.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
from pathlib import Path

from ..errors import InputError, ModelError

__all__ = ["MAX_FILE_BYTES", "read_user_file", "xml_text", "looks_like_xml", "xml_source"]

#: Default size limit of a file wbc reads for a user (a URDF, an MJCF, a mesh): 256 MiB. The
#: largest robot descriptions and meshes in example-robot-data are a few MB.
MAX_FILE_BYTES = 256 << 20

_BOMS = (  # UTF-32 first: its little-endian mark starts with UTF-16's
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_NO_BOM = (  # '<' in each encoding, without a mark (XML 1.0 appendix F)
    (b"\0\0\0<", "utf-32-be"),
    (b"<\0\0\0", "utf-32-le"),
    (b"\0<", "utf-16-be"),
    (b"<\0", "utf-16-le"),
)
_DECLARED = re.compile(rb"""^\s*<\?xml[^>]*?\bencoding\s*=\s*["']([A-Za-z][A-Za-z0-9._-]*)["']""")


def _limit(max_bytes: int | None) -> int:
    if max_bytes is None:
        return MAX_FILE_BYTES
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        raise InputError(f"max_bytes must be a positive integer (bytes), got {max_bytes!r}")
    return max_bytes


def read_user_file(path: os.PathLike | str, *, what: str = "file", max_bytes: int | None = None) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` (default :data:`MAX_FILE_BYTES`).

    Never blocks (a FIFO is refused, not read) and never reads without end (a device is refused).

    Raises:
        ModelError: no such file, not a regular file (FIFO, device, directory, socket), larger than
            the limit, or unreadable; the message names the path and ``what`` it was meant to be.
        InputError: ``max_bytes`` is not a positive integer.
    """
    limit = _limit(max_bytes)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ModelError(f"{os.fsdecode(path)}: no such {what}") from None
    except (OSError, ValueError) as e:  # ValueError: an embedded null byte
        raise ModelError(f"{os.fsdecode(path)!r}: cannot open the {what}: {e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = (
                "a FIFO"
                if stat.S_ISFIFO(st.st_mode)
                else "a directory"
                if stat.S_ISDIR(st.st_mode)
                else "a device"
                if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "not a regular file"
            )
            raise ModelError(f"{os.fsdecode(path)}: the {what} is {kind}, not a regular file; refused")
        if st.st_size > limit:
            raise ModelError(
                f"{os.fsdecode(path)}: the {what} is {st.st_size} bytes, more than the limit of {limit} "
                "(pass max_bytes= to allow more)"
            )
        os.set_blocking(fd, True)
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise ModelError(f"{os.fsdecode(path)}: the {what} grew beyond the limit of {limit} bytes while read")
        return b"".join(chunks)
    except OSError as e:
        raise ModelError(f"{os.fsdecode(path)}: cannot read the {what}: {e.strerror or e}") from None
    finally:
        os.close(fd)


def _encoding(data: bytes) -> str:
    """The codec of an XML document's bytes (by its byte-order mark, its first character, its
    declaration; UTF-8 when nothing says)."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return codec  # these codecs consume their mark
    for start, codec in _NO_BOM:
        if data.startswith(start):
            return codec
    declared = _DECLARED.match(data)
    return declared.group(1).decode("ascii") if declared else "utf-8"


def looks_like_xml(data: bytes) -> bool:
    """True when ``data`` starts (after a byte-order mark and white space) with ``<`` in one of the
    encodings XML documents announce themselves in."""
    codec = _encoding(data)
    try:
        head = codecs.getincrementaldecoder(codec)(errors="ignore").decode(data[:64])
    except LookupError:
        return data.lstrip().startswith(b"<")
    return head.lstrip("\ufeff \t\r\n").startswith("<")


def xml_text(data: bytes, where: str) -> str:
    """``data`` decoded as its byte-order mark or XML declaration says (UTF-8 when neither does).

    Raises:
        ModelError: an unknown encoding, or bytes that do not decode in it (naming ``where``).
    """
    codec = _encoding(data)
    try:
        text = data.decode(codec)
    except LookupError:
        raise ModelError(f"{where}: the XML declaration names an unknown encoding {codec!r}") from None
    except UnicodeDecodeError as e:
        raise ModelError(f"{where}: the document is not valid {codec} (byte {e.start}: {e.reason})") from None
    return text.lstrip("\ufeff")


def xml_source(source: str | bytes | os.PathLike, what: str, max_bytes: int | None = None) -> tuple[str, str]:
    """The text of an XML document a user gave, and where it came from (for messages).

    Args:
        source: a path (a regular file, read with :func:`read_user_file`), or the document itself:
            a ``str`` starting with ``<``, or ``bytes`` decoded by :func:`xml_text` (bytes that are
            not a document are a file name).
        what: what the document is meant to be (``"URDF file"``, ``"MJCF file"``), for messages.
        max_bytes: the largest file read; default :data:`MAX_FILE_BYTES`.

    Returns:
        ``(text, where)``: ``where`` is the path, ``"<string>"`` or ``"<bytes>"``.

    Raises:
        ModelError: as :func:`read_user_file` and :func:`xml_text`; bytes holding a null byte that
            are no document; a source of another type.
    """
    kind = what.split()[0]
    if isinstance(source, str) and source.lstrip().startswith("<"):
        return source, "<string>"
    if isinstance(source, (str, bytes, bytearray)) and not source.strip():
        raise ModelError(f"an empty {what} name or document: give a path or the {kind} text")
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if looks_like_xml(data):
            return xml_text(data, "<bytes>"), "<bytes>"
        if b"\0" in data:
            raise ModelError(
                f"{kind} source bytes: neither an XML document (no '<' first, in any encoding an XML document "
                "announces) nor a file name (it holds a null byte)"
            )
        source = os.fsdecode(data)  # a file name given as bytes
    if not isinstance(source, (str, os.PathLike)):
        raise ModelError(f"a {kind} source is a path, a str or bytes document, got {type(source).__name__}")
    path = Path(source)
    return xml_text(read_user_file(path, what=what, max_bytes=max_bytes), str(path)), str(path)
