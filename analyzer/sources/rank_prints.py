"""The program's own prints that state the rank that prints them (``[data] rank=1 seq=2048``, ``rank=0: before forward
(step=0 micro=0)``, ``Rank 3 loaded shard 7``): which rank reached which print of the program, and where the log's
prints end.

A print is taken by its shape (what comes before the rank and the first word after it, its numbers made ``#``), so that
``rank=0: before forward (step=0 micro=0)`` and ``rank=2: before forward (step=5 micro=1)`` are one print of the
program reached by two ranks, and ``[hetero] rank=1 gpu=NVIDIA RTX A6000`` one with ``[hetero] rank=0 gpu=NVIDIA H100``. A
line that names no rank, or two ranks (``allocation: rank0 micro=2 rank1 micro=1``), or is a library's line (a logger's
or glog's head, c10d's, NCCL's) is not one.

``RankPrintReader`` keeps, per file, which ranks printed each shape (up to ``MAX_SHAPES`` shapes), how many times each
rank printed each, and the last ``TAIL`` prints; at the file's end it gives one ``RankPrints`` record of them (bounded,
whatever the log's size), with each rank's count of the prints whose shapes every rank printed.
"""
from __future__ import annotations

import collections
import re
from collections.abc import Iterator

from .records import RankPrints, Rec

# the rank a print states: "rank=1", "rank 1", "rank: 1", "Rank 1", "[rank1]" inside the text; not "rank0" glued
# to a word before, nor "ranks 0-3"
STATED_RE = re.compile(r"(?i)(?<![a-z_])rank(?:[ =:#]\s?|\s?\[|(?=\d))(?P<rank>\d{1,6})\b(?!\s?[/-]\s?\d)")
# a library's line: a logger's or glog's head, c10d's, NCCL's, DeepSpeed's log_dist; an exception's message
LIBRARY_RE = re.compile(r"\[[EWIF]\d{1,4}[\s.]|\[(?:INFO|WARNING|WARN|DEBUG|ERROR|CRITICAL)\]|\b(?:INFO|WARNING|DEBUG|ERROR)"
                        r"\s{0,2}(?:-|\d\d-\d\d|[\w.]{1,40}:\d{1,6}\])|c10d|ProcessGroup|TCPStore|NCCL|torch\.|log_dist"
                        r"|[A-Za-z](?:Error|Exception|Warning|Interrupt):|\bTraceback\b|\bFile \"")
WORD_RE = re.compile(r"\(?[A-Za-z]")  # a word after the rank that says what the print is
NUMBER_RE = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?")
MAX_SHAPES = 512
TAIL = 32
MAX_TEXT = 400


def print_shape(text: str, body: str) -> tuple[int, str] | None:
    """(the rank a program's print states, its shape: what comes before the rank and the first word after it, numbers
    made ``#``), or None for a line (``text``, ``body`` behind a launcher's prefix) that is no such print."""
    if len(body) > MAX_TEXT or "ank" not in body:
        return None
    found = list(STATED_RE.finditer(body))
    if len({m.group("rank") for m in found}) != 1 or LIBRARY_RE.search(text):
        return None
    m = found[0]
    word = next((w for w in body[m.end():].split(None, 4)[:4] if WORD_RE.match(w)), "")
    word = word.split("=", 1)[0] + "=" if "=" in word else word  # "gpu=NVIDIA" is the print's key "gpu="
    return int(m.group("rank")), NUMBER_RE.sub("#", " ".join([body[:m.start()].strip(), "rank#", word]).strip())


class RankPrintReader:
    """Feeds on a log's lines (``read``); ``flush`` gives the file's ``RankPrints`` when it holds any."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.by_shape: dict[str, set[int]] = {}
        self.tail: collections.deque[tuple[int, int, str]] = collections.deque(maxlen=TAIL)
        self.last_text = ""
        self.counts: dict[tuple[int, str], int] = {}  # (rank, shape) -> prints (bounded by MAX_SHAPES x the ranks)

    def read(self, lineno: int, text: str, body: str) -> None:
        got = print_shape(text, body)
        if got is None:
            return
        rank, shape = got
        ranks = self.by_shape.get(shape)
        if ranks is None:
            if len(self.by_shape) >= MAX_SHAPES:
                return
            ranks = self.by_shape[shape] = set()
        ranks.add(rank)
        self.counts[(rank, shape)] = self.counts.get((rank, shape), 0) + 1
        self.tail.append((lineno, rank, shape))
        self.last_text = text

    def flush(self) -> Iterator[Rec]:
        if not self.tail:
            return
        everyone = set().union(*self.by_shape.values())
        line, rank, _ = self.tail[-1]
        common = {s for s, rs in self.by_shape.items() if rs == everyone}  # the shapes every rank printed
        made: dict[int, int] = dict.fromkeys(everyone, 0)  # each rank's prints of the shapes every rank printed
        for (r, s), n in self.counts.items():
            if s in common:
                made[r] += n
        yield RankPrints(self.file, line, self.last_text, rank, None, None, None, tuple(self.tail),
                         {s: tuple(sorted(self.by_shape[s])) for _, _, s in self.tail}, tuple(sorted(everyone)),
                         len(common), tuple(sorted(made.items())))
