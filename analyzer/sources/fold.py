"""Runs of a log's ring and channel-connection records folded into ``NcclTopologyRun`` records.

A parse worker hands its parent every record it made; at init each rank prints a line per ring and
per channel connection (about 36 a rank), each a record object costing ~2 us to pickle and as much to
load. Folded, a run costs a few tuples. A run is records of one (host, pid, tid) that follow each other
in the file's record order with no COLL row of that file between them, so that whoever reads the
records in order (``model_build.gather``) sees the same state at each of the run's lines as it would
have record by record.
"""
from __future__ import annotations

import numpy as np

from .coll import NcclCollBatch
from .records import NcclConnection, NcclRing, NcclTopologyRun, Rec

_FOLDED = (NcclRing, NcclConnection)
MIN_RUN = 2  # a lone ring or connection line stays as it is


def fold_topology(recs: list[Rec], batches: list[NcclCollBatch]) -> list[Rec]:
    """``recs`` (one file's records, in line order) with each run of ``MIN_RUN`` or more ring / connection
    records of one thread that no COLL row of ``batches`` interrupts made one ``NcclTopologyRun``."""
    out: list[Rec] = []
    run: list[NcclRing | NcclConnection] = []
    coll_lines = [b.lines for b in batches if len(b)]

    def flush() -> None:
        for piece in _cut_at_coll_rows(run, coll_lines):
            if len(piece) >= MIN_RUN:
                out.append(_folded(piece))
            else:
                out.extend(piece)
        run.clear()

    key = None
    for r in recs:
        if type(r) in _FOLDED:
            k = (r.host, r.pid, r.tid)  # type: ignore[attr-defined]
            if run and k != key:
                flush()
            key = k
            run.append(r)  # type: ignore[arg-type]
            continue
        if run:
            flush()
        out.append(r)
    if run:
        flush()
    return out


def _cut_at_coll_rows(run: list[NcclRing | NcclConnection],
                      coll_lines: list[np.ndarray]) -> list[list[NcclRing | NcclConnection]]:
    """``run`` in pieces, cut wherever a COLL row lies between two of its lines (a COLL row can move its
    process's current communicator); nearly always one piece, found by one search per batch."""
    lo, hi = run[0].line, run[-1].line
    inside = [x for lines in coll_lines
              for x in lines[np.searchsorted(lines, lo):np.searchsorted(lines, hi)].tolist()]
    if not inside:
        return [list(run)]
    pieces: list[list[NcclRing | NcclConnection]] = [[]]
    marks = sorted(inside)
    m = 0
    for r in run:
        while m < len(marks) and marks[m] < r.line:
            m += 1
            if pieces[-1]:
                pieces.append([])
        pieces[-1].append(r)
    return pieces


def _folded(run: list[NcclRing | NcclConnection]) -> NcclTopologyRun:
    first = run[0]
    rings: list[tuple[int, int, int, int]] = []
    conns: list[tuple[int, int, int, int, str | None, str, bool]] = []
    for r in run:
        if type(r) is NcclRing:
            rings.append((r.channel, r.prev, r.rank, r.next))
        else:
            c = r
            assert type(c) is NcclConnection
            conns.append((c.channel, c.conn_index, c.src, c.dst, c.direction, c.transport, c.gdr))
    return NcclTopologyRun(first.file, first.line, first.text, first.host, first.pid, first.tid, first.ts,
                           rings, conns, run[-1].line)
