"""What uploads may hold, all of them together: one memory budget and one disk budget, and their identity.

- Memory: an upload arrives as one JSON request (``dcc.Upload``'s base64 data URLs). While Flask parses it
  and the callback decodes it, it takes about ``DECODE_FACTOR`` times its body; a request over
  ``GATE_MIN_BYTES`` reserves that much from ``MEMORY_BUDGET_BYTES`` before its body is parsed, and gives it
  back when the callback returns. Past the budget it is refused with a message (``upload_gate``).
- Disk: an upload's decoded files and whatever its archives unpack to are taken from ``DISK_BUDGET_BYTES``
  as they are written and given back when the upload's folder is deleted, which is once it is analysed.
- Identity: ``digest`` of the files' names and contents; an upload identical to one analysed (or being
  analysed) is that analysis, not a second one.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import re
import threading
from collections.abc import Sequence
from typing import IO

from ncclscope import archive

MEMORY_BUDGET_BYTES = 2 * 1024**3  # upload requests being parsed and decoded, all together
DISK_BUDGET_BYTES = 4 * 1024**3  # uploaded and unpacked files not yet analysed, all uploads together
DECODE_FACTOR = 3  # peak memory of an upload request over its body: the body, its JSON text, the parsed strings
GATE_MIN_BYTES = 1024 * 1024  # smaller requests (every other callback) pass the memory gate untouched
DECODE_CHUNK = 4 * 1024 * 1024  # base64 characters decoded at a time (a multiple of 4)
_NOT_B64 = re.compile(r"[^A-Za-z0-9+/=]")


def mb(n: int) -> str:
    return f"{n / 1e6:,.0f} MB" if n >= 10**7 else f"{n / 1e6:.2g} MB"


class Budget:
    """Bytes several threads take and give back; a take that would pass ``limit`` is refused whole."""

    def __init__(self, what: str, limit: int) -> None:
        self.what, self.limit = what, limit
        self.used = 0
        self._lock = threading.Lock()

    def take(self, n: int) -> bool:
        with self._lock:
            if n > 0 and self.used + n > self.limit:
                return False
            self.used += max(n, 0)
            return True

    def give(self, n: int) -> None:
        with self._lock:
            self.used = max(0, self.used - max(n, 0))

    def refusal(self, n: int) -> str:
        """Why ``n`` more bytes do not fit, for the page."""
        return (f"upload refused: it needs {mb(n)} of the server's {self.what} and other uploads hold {mb(self.used)} "
                f"of the {mb(self.limit)} all uploads may use together; try again once they are analysed")


class Reservation:
    """One upload's share of a ``Budget``: grown as its files are written, given back whole by ``release``."""

    def __init__(self, budget: Budget) -> None:
        self.budget, self.held = budget, 0
        self._lock = threading.Lock()

    def grow(self, n: int) -> bool:
        if not self.budget.take(n):
            return False
        with self._lock:
            self.held += n
        return True

    def release(self) -> None:
        with self._lock:
            n, self.held = self.held, 0
        self.budget.give(n)


class DiskShare(archive.Budget):
    """``archive.Budget`` for one upload's archives that also takes every unpacked byte from the disk budget."""

    def __init__(self, reservation: Reservation, max_bytes: int, max_files: int) -> None:
        super().__init__(max_bytes, max_files)
        self.reservation = reservation

    def take(self, nbytes: int, nfiles: int = 0) -> None:
        super().take(nbytes, nfiles)
        if not self.reservation.grow(nbytes):
            raise archive.ArchiveError(self.reservation.budget.refusal(nbytes))


def digest(names: Sequence[str], contents: Sequence[str]) -> str:
    """sha256 over each file's name and data URL, in order: equal for the same files uploaded again."""
    h = hashlib.sha256()
    for name, c in zip(names, contents, strict=False):
        h.update(name.encode("utf-8", "replace") + b"\0")
        for i in range(0, len(c), DECODE_CHUNK):
            h.update(c[i:i + DECODE_CHUNK].encode("utf-8", "replace"))
        h.update(b"\0\0")
    return h.hexdigest()


def payload_start(contents: object) -> int:
    """Where the base64 data of a data URL (``data:<type>;base64,<data>``) starts; ValueError when malformed."""
    if not isinstance(contents, str) or "," not in contents[:1024]:
        raise ValueError("the upload arrived empty or malformed")
    return contents.index(",") + 1


def decoded_size(contents: str) -> int:
    """The decoded size of a data URL's payload, from its length (before decoding anything)."""
    n = len(contents) - payload_start(contents)
    return n * 3 // 4


def decode_to(contents: str, out: IO[bytes]) -> int:
    """Decode a data URL's base64 payload into ``out`` a chunk at a time (never the whole payload copied);
    returns the bytes written. Characters outside base64's alphabet are skipped, as ``b64decode`` does."""
    start = payload_start(contents)
    carry = ""
    written = 0
    for i in range(start, len(contents), DECODE_CHUNK):
        part = carry + contents[i:i + DECODE_CHUNK]
        if _NOT_B64.search(part):
            part = _NOT_B64.sub("", part)
        cut = len(part) - len(part) % 4
        part, carry = part[:cut], part[cut:]
        if part:
            try:
                written += out.write(base64.b64decode(part))
            except binascii.Error as e:
                raise ValueError(f"the upload is not valid base64 ({e})") from None
    if carry.rstrip("="):
        try:
            written += out.write(base64.b64decode(carry + "=" * (-len(carry) % 4)))
        except binascii.Error as e:
            raise ValueError(f"the upload is not valid base64 ({e})") from None
    return written
