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
        if len(run) >= MIN_RUN:
            out.append(_folded(run))
        else:
            out.extend(run)
        run.clear()

    for r in recs:
        if type(r) in _FOLDED:
            if run and not _continues(run[0], run[-1], r, coll_lines):  # type: ignore[arg-type]
                flush()
            run.append(r)  # type: ignore[arg-type]
            continue
        if run:
            flush()
        out.append(r)
    if run:
        flush()
    return out


def _continues(first: NcclRing | NcclConnection, last: NcclRing | NcclConnection,
               nxt: NcclRing | NcclConnection, coll_lines: list[np.ndarray]) -> bool:
    if (nxt.host, nxt.pid, nxt.tid, nxt.file) != (first.host, first.pid, first.tid, first.file):
        return False
    for lines in coll_lines:  # a COLL row between the two lines could move the process's current communicator
        i = int(np.searchsorted(lines, last.line, side="right"))
        if i < len(lines) and lines[i] < nxt.line:
            return False
    return True


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
