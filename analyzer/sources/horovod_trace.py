"""Horovod's own lines: its trace of each rank's course through its collectives, and its stall inspector's warning.

Horovod's background thread prints, per rank and per tensor, ``[09:41:27.148228: T common/operations.cc:1159] [0]:
Enqueued Combine/alltoall_io``, then ``Performing <name>`` and ``Finished performing <name>``. A rank whose last trace
line is ``Enqueued`` or ``Performing`` (no ``Finished`` after it) stands inside that operation: at the file's end it is
given as the rank's wait (``ProgressWait``, naming no other rank), which ``rules.stacks`` judges with the program's
other wait prints: every rank inside, a hang of the operation itself; some finished and not inside the next one, the
ranks the others wait for. The rank is the line's own ``[N]:`` (Horovod's rank), else the launcher's tag.

The stall inspector warns once a minute while tensors some ranks submitted wait for the others (``One or more tensors
were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more
than 60 seconds. ...``), listing them on the same line (older releases: ``Stalled ops: <tensor> [ready ranks: 0],
<tensor> [missing ranks: 1, 2]``) or in a block after it (``Missing ranks:`` then ``0: [<tensor>, <tensor>]`` per rank
that did not submit them): a ``HorovodStall`` of the last warning of the file.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from .records import HorovodStall, ProgressWait

TRACE_RE = re.compile(r"\[[\d:.]{6,20}: T common/operations\.cc:\d{1,6}\] \[(?P<rank>\d{1,7})\]: "
                      r"(?P<phase>Enqueued|Performing|Finished performing) (?P<name>\S{1,400})")
MAX_RANKS = 1 << 16  # ranks followed in one file
STALL_WORDS = "submitted to be reduced, gathered or broadcasted by subset of ranks"
STALLED_OP_RE = re.compile(r"(?P<name>[^\s,\[\]]{1,400}) \[(?P<kind>ready|missing) ranks: (?P<ranks>[\d, ]{1,2000})\]")
# a row of the block: "3: [t1, t2]" (matched in the whole line: a launcher's tag may stand before it, and "3: " itself
# reads as srun's task label to the prefix peeler)
MISSING_ROW_RE = re.compile(r"(?:^|[:>\s])(?P<rank>\d{1,7}): \[(?P<names>[^\]]{0,20000})\]\s*$")
MAX_OPS = 4096  # stalled tensors kept from one warning


class HorovodTraceReader:
    """Feeds on a log's lines (``read``); ``flush`` at the file's end gives each rank's open operation as its wait."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.last: dict[int, tuple[int, str, bool]] = {}  # rank -> (line, text, inside an operation)
        self.stall: HorovodStall | None = None  # the file's last stall warning
        self.block = False  # inside a warning's "Missing ranks:" block

    def read(self, lineno: int, text: str, body: str) -> bool:
        """True for a line of the stall inspector's warning (read here only); a trace line is noted and read on (a
        launcher's rank tag on it shows the rank)."""
        if self.stall is not None and (self.block or body.strip() == "Missing ranks:"):
            if self._block_row(text, body):
                return True
        if STALL_WORDS in body:
            ops = [(m.group("name"), _ranks(m.group("ranks")), m.group("kind") == "ready")
                   for m in STALLED_OP_RE.finditer(body)][:MAX_OPS]
            self.stall = HorovodStall(self.file, lineno, text, None, None, None, None, ops)
            return True
        if "common/operations.cc" not in body:
            return False
        m = TRACE_RE.search(body)
        if m is None:
            return False
        rank = int(m.group("rank"))
        if rank in self.last or len(self.last) < MAX_RANKS:
            self.last[rank] = (lineno, text, m.group("phase") != "Finished performing")
        return False

    def _block_row(self, text: str, body: str) -> bool:
        """A line of the warning's ``Missing ranks:`` block (its head, or ``rank: [tensors]``); a line that is neither
        ends the block."""
        assert self.stall is not None
        if body.strip() == "Missing ranks:":
            self.block = True
            return True
        m = MISSING_ROW_RE.search(text.rstrip("\n"))
        if m is None:
            self.block = False
            return False
        rank = int(m.group("rank"))
        for name in (n.strip() for n in m.group("names").split(",")):
            if name and len(self.stall.ops) < MAX_OPS:
                self.stall.ops.append((name, (rank,), False))
        return True

    def flush(self) -> Iterator[ProgressWait | HorovodStall]:
        for rank, (lineno, text, inside) in sorted(self.last.items()):
            if inside:
                yield ProgressWait(self.file, lineno, text, rank, None, None, None, None, False)
        if self.stall is not None and self.stall.ops:
            yield self.stall


def _ranks(text: str) -> tuple[int, ...]:
    return tuple(sorted({int(t) for t in text.replace(",", " ").split() if t.isdigit() and len(t) <= 7}))
