"""Read only what is new in many growing log files.

Per file we keep (device, inode, offset, line number) and the bytes of a partial last line.
``read_new(path)`` reopens the file by name every time (no descriptor is held, so thousands of
files cost nothing), with ``safe_io.open_fd`` (no link followed, never blocking, regular files
only: anything else is listed in ``refused``), and:

- reads from the remembered offset to the current end (at most ``max_bytes`` per call; the
  rest is read by the next call, ``has_more(path)`` says so);
- holds back a partial last line until its newline arrives;
- restarts at offset 0 (line 1) when the file shrank (truncated, ``copytruncate`` rotation);
- restarts at 0 when the name now points to another (device, inode) (rotated by rename and
  re-created, CPython's ``WatchedFileHandler.reopenIfNeeded``); what was written to the old file
  between our last read and the rename is not read;
- forgets a file that was deleted (a file created again later under the name is read from 0).

Lines come back as (line number, text) with the newline stripped, decoded as the offline
reader decodes them (``sources.lines.decode_line``: invalid UTF-8 replaced, NUL dropped): never an exception
for odd bytes, and the same text live and offline.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from .. import safe_io
from ..sources.lines import decode_line

MAX_LINE = 1 << 20  # a "line" longer than this is cut and emitted, so memory stays bounded
MAX_BYTES = 8 << 20  # per file and call


@dataclass(slots=True)
class FileState:
    dev: int
    ino: int
    offset: int = 0
    lineno: int = 0
    partial: bytes = b""
    more: bool = False
    resets: int = 0  # times it was found truncated or replaced
    skip_to_newline: bool = field(default=False)


class Tailer:
    def __init__(self, max_bytes: int = MAX_BYTES, max_line: int = MAX_LINE) -> None:
        self.max_bytes = max_bytes
        self.max_line = max_line
        self.files: dict[str, FileState] = {}
        self.refused: dict[str, str] = {}  # path -> why it was not read (a link, a FIFO, a device)

    def known(self) -> list[str]:
        return list(self.files)

    def has_more(self, path: str) -> bool:
        st = self.files.get(path)
        return bool(st and st.more)

    def pending(self) -> list[str]:
        """Files whose last read stopped at ``max_bytes`` before the end."""
        return [p for p, st in self.files.items() if st.more]

    def forget(self, path: str) -> None:
        self.files.pop(path, None)

    def read_new(self, path: str) -> list[tuple[int, str]]:
        """The complete lines added to ``path`` since the last call; [] when nothing is new or on error."""
        try:  # a link planted under a watched name after start is not followed; a FIFO does not block
            fd = safe_io.open_fd(path)
        except FileNotFoundError:
            self.files.pop(path, None)  # deleted: start afresh if it comes back
            return []
        except safe_io.NotRegularFile as e:
            self.files.pop(path, None)
            self.refused[path] = safe_io.describe(e)
            return []
        except OSError:
            return []
        try:
            st = os.fstat(fd)
            state = self.files.get(path)
            if state is None or (state.dev, state.ino) != (st.st_dev, st.st_ino):
                resets = state.resets + 1 if state is not None else 0
                state = FileState(st.st_dev, st.st_ino, resets=resets)
                self.files[path] = state
            elif st.st_size < state.offset:
                state.offset, state.lineno, state.partial = 0, 0, b""
                state.skip_to_newline = False
                state.resets += 1
            if st.st_size == state.offset:
                state.more = False
                return []
            want = min(st.st_size - state.offset, self.max_bytes)
            chunks = []
            got = 0
            while got < want:
                b = os.pread(fd, want - got, state.offset + got)
                if not b:
                    break
                chunks.append(b)
                got += len(b)
        except OSError:
            return []
        finally:
            os.close(fd)
        data = b"".join(chunks)
        state.offset += len(data)
        state.more = state.offset < st.st_size
        return self._split(state, data)

    def _split(self, state: FileState, data: bytes) -> list[tuple[int, str]]:
        buf = state.partial + data if state.partial else data
        out: list[tuple[int, str]] = []
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            line = buf[start:nl]
            start = nl + 1
            state.lineno += 1
            if state.skip_to_newline:  # the rest of an over-long line already emitted
                state.skip_to_newline = False
                continue
            out.append((state.lineno, _decode(line[: self.max_line])))
        rest = buf[start:]
        if len(rest) > self.max_line:
            if not state.skip_to_newline:
                out.append((state.lineno + 1, _decode(rest[: self.max_line])))
            state.skip_to_newline = True
            rest = b""
        state.partial = rest
        return out


def _decode(b: bytes) -> str:
    if b.endswith(b"\r"):
        b = b[:-1]
    return decode_line(b)
