"""COLL batches as comparable rows, and the check that a block reads as the regex reads it: shared by the tests
of the numpy and compiled COLL readers."""
from __future__ import annotations

import math

from ncclscope.sources.coll import scan_coll_block, scan_coll_block_regex


def rows(batch):
    if batch is None:
        return []
    return [(batch.procs[p], batch.comms[c], batch.ops[o], int(n), int(d), None if math.isnan(t) else float(t), int(ln))
            for p, c, o, n, d, t, ln in zip(batch.proc, batch.comm, batch.op, batch.count, batch.datatype,
                                            batch.tss, batch.lines)]


def same_as_regex(block: bytes, first_line: int = 1) -> None:
    """``scan_coll_block`` (whichever reader is armed) gives the regex path's rows, rest and first record."""
    fast, fast_rest = scan_coll_block(block, first_line, "f")
    slow, slow_rest = scan_coll_block_regex(block, first_line, "f")
    assert rows(fast) == rows(slow)
    assert fast_rest == slow_rest
    if fast is not None:
        assert fast.line == slow.line and (fast.host, fast.pid) == (slow.host, slow.pid)
