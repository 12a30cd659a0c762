"""Horovod's trace lines (``HOROVOD_LOG_LEVEL=TRACE``): each rank's course through its collectives.

Horovod's background thread prints, per rank and per tensor, ``[09:41:27.148228: T common/operations.cc:1159] [0]:
Enqueued Combine/alltoall_io``, then ``Performing <name>`` and ``Finished performing <name>``. A rank whose last trace
line is ``Enqueued`` or ``Performing`` (no ``Finished`` after it) stands inside that operation: at the file's end it is
given as the rank's wait (``ProgressWait``, naming no other rank), which ``rules.stacks`` judges with the program's
other wait prints: every rank inside, a hang of the operation itself; some finished and not inside the next one, the
ranks the others wait for. The rank is the line's own ``[N]:`` (Horovod's rank), else the launcher's tag.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from .records import ProgressWait

TRACE_RE = re.compile(r"\[[\d:.]{6,20}: T common/operations\.cc:\d{1,6}\] \[(?P<rank>\d{1,7})\]: "
                      r"(?P<phase>Enqueued|Performing|Finished performing) (?P<name>\S{1,400})")
MAX_RANKS = 1 << 16  # ranks followed in one file


class HorovodTraceReader:
    """Feeds on a log's lines (``read``); ``flush`` at the file's end gives each rank's open operation as its wait."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.last: dict[int, tuple[int, str, bool]] = {}  # rank -> (line, text, inside an operation)

    def read(self, lineno: int, text: str, body: str) -> bool:
        """True for a Horovod trace line."""
        if "common/operations.cc" not in body:
            return False
        m = TRACE_RE.search(body)
        if m is None:
            return False
        rank = int(m.group("rank"))
        if rank in self.last or len(self.last) < MAX_RANKS:
            self.last[rank] = (lineno, text, m.group("phase") != "Finished performing")
        return True

    def flush(self) -> Iterator[ProgressWait]:
        for rank, (lineno, text, inside) in sorted(self.last.items()):
            if inside:
                yield ProgressWait(self.file, lineno, text, rank, None, None, None, None, False)
