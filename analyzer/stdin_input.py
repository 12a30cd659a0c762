"""``ncclscope analyze -``: standard input (a paste, a pipe) as one more input file.

The bytes are copied, at most ``MAX_STDIN_BYTES`` of them, into a file created with ``safe_io.create_new``
(0600) in a fresh private folder (``mkdtemp``: 0700), which is then analysed as any file the user names
(its name in evidence and in ``inputs[].file`` is ``stdin``; a zip or tar archive piped in is named so
and unpacked as archives are). More than the limit is refused with one line, never analysed cut. The
folder is removed by ``Spool.remove`` (and by ``remove_live_spools`` from a signal handler). Standard
input is not cached: its spool path is new every time.
"""
from __future__ import annotations

import shutil
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from . import safe_io
from .archive import MAX_TOTAL
from .input_names import InputError

STDIN_ARG = "-"
STDIN_NAME = "stdin"
MAX_STDIN_BYTES = MAX_TOTAL  # the bytes one input's archives may unpack to: the same bound for a pipe
BLOCK = 1 << 20
_LIVE: list[Path] = []  # spool folders not yet removed (for a SIGTERM handler)


@dataclass(frozen=True)
class Spool:
    """Standard input copied into ``path`` (inside the private folder ``folder``)."""

    folder: Path
    path: Path

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        if self.folder in _LIVE:
            _LIVE.remove(self.folder)


def is_stdin(arg: object) -> bool:
    return str(arg) == STDIN_ARG


def spool_stdin(stream: BinaryIO, limit: int = MAX_STDIN_BYTES) -> Spool:
    """Copy ``stream`` to a private file; raises InputError when it holds more than ``limit`` bytes."""
    folder = Path(tempfile.mkdtemp(prefix="ncclscope-stdin-"))
    _LIVE.append(folder)
    spool = Spool(folder, folder / STDIN_NAME)
    try:
        head, total = _copy(stream, spool.path, limit)
        name = archive_name(head)
        if name is not None:
            spool = Spool(folder, spool.path.rename(folder / name))
    except BaseException:
        spool.remove()
        raise
    if total > limit:
        spool.remove()
        raise InputError(f"standard input: more than {limit} bytes; save it to a file and analyse the file")
    return spool


def _copy(stream: BinaryIO, dest: Path, limit: int) -> tuple[bytes, int]:
    """(the first bytes, bytes copied); stops after ``limit + 1`` bytes."""
    fd = safe_io.create_new(dest, 0o600)
    head = b""
    total = 0
    try:
        with open(fd, "wb", closefd=True) as out:
            while total <= limit:
                block = stream.read(min(BLOCK, limit + 1 - total))
                if not block:
                    break
                if len(head) < 512:
                    head += block[:512 - len(head)]
                out.write(block)
                total += len(block)
    except OSError as e:
        raise InputError(f"standard input: cannot keep it in {dest.parent}: {e.strerror or e}") from None
    return head, total


def archive_name(head: bytes) -> str | None:
    """``stdin.zip`` / ``stdin.tar`` / ``stdin.tar.gz`` when ``head`` (the first 512 bytes) opens such an
    archive, else None (text, or a gzip that is not a tar: read as bytes, as a file of that content is)."""
    if head.startswith(b"PK\x03\x04"):
        return f"{STDIN_NAME}.zip"
    if head[257:262] == b"ustar":
        return f"{STDIN_NAME}.tar"
    if head.startswith(b"\x1f\x8b"):
        try:
            inner = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 512)
        except zlib.error:
            return None
        if inner[257:262] == b"ustar":
            return f"{STDIN_NAME}.tar.gz"
    return None


def remove_live_spools() -> None:
    """Remove every spool folder still there (a signal handler's last act before the process ends)."""
    for folder in list(_LIVE):
        shutil.rmtree(folder, ignore_errors=True)
    _LIVE.clear()
