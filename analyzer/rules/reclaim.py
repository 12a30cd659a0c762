"""WARNs of a communicator's clean-up: NCCL's destroy / abort path (``commReclaim``) reporting that it failed.

NCCL prints ``commReclaim: cleanup comm 0x... rank N failed in destroy/abort, error E`` when freeing a communicator
fails (ncclCommDestroy or ncclCommAbort, at the end of a run or after an error). The WARN that process and device
printed right before it, with no NCCL line of theirs between (no return chain: the error went straight back into the
clean-up), is the clean-up's own failure (a CUDA call freeing NVLS or registered memory), not the job's: the work was
done, or had already failed elsewhere."""
from __future__ import annotations

import re
from collections.abc import Sequence

from ..model import EventKind, LogEvent
from ..sources.lines import nccl_head

RECLAIM_RE = re.compile(r"commReclaim: cleanup comm \S{1,40} rank \d{1,6} failed in destroy/abort")


def reclaim_warns(events: Sequence[LogEvent]) -> frozenset[int]:
    """Indices in ``events`` of the clean-up's WARNs: each ``commReclaim ... failed in destroy/abort`` WARN, and the
    WARN its process and device printed just before it (no event of theirs between)."""
    if not any(e.kind == EventKind.NCCL_WARN and "commReclaim" in e.text for e in events):
        return frozenset()  # the usual case: no clean-up failed, and no line's head need be read
    last: dict[tuple[str, int, int | None], int] = {}
    out: set[int] = set()
    for i, e in enumerate(events):
        h = nccl_head(e.evidence.text)
        if h is None:
            continue
        key = (h[0], h[1], h[2])
        if e.kind == EventKind.NCCL_WARN and RECLAIM_RE.search(e.text):
            out.add(i)
            j = last.get(key)
            if j is not None and events[j].kind == EventKind.NCCL_WARN:
                out.add(j)
        last[key] = i
    return frozenset(out)
