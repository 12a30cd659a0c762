"""Where the input shows a communicator's topology, and NCCL's algorithm choices: the lines that let a
comparison of two runs (``ncclscope diff``) point at the line behind each difference.

- ``note_topology``: per process's view of a communicator, the first line that shows each transport (a
  connection line), its rings (a ring order or ring line) and its trees; kept on ``CommLocal`` and joined over
  the members by ``first_lines``.
- ``count_tuning``: NCCL's TUNING lines (``AllReduce: 33554432 Bytes -> Algo RING proto SIMPLE ...``), counted
  per (op, log2 size, algorithm, protocol), the first of each kept; ``tuning_choices`` makes the model's
  ``TuningChoice`` list of them. A job prints one a collective on rank 0: counting keeps it a few dozen entries.
- ``note_graph``: NCCL's topology search lines (``Pattern 4, crossNic 0, nChannels 12, bw 30.000000/30.000000``), the
  one of least capacity per pattern (every rank prints its own; a slow link lowers the bandwidth some rank found);
  ``graph_searches`` makes the model's ``GraphSearch`` list of them.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from ..model import Evidence, GraphSearch, TuningChoice
from ..sources import records as R
from .values import ev

TuningKey = tuple[str | None, int, str, str]  # (op, log2 bytes, algo, proto)
MAX_TUNING_KEYS = 4096  # distinct choices kept (a damaged log cannot grow the table without end)


class HasShown(Protocol):
    transport_lines: dict[str, Evidence]
    ring_line: Evidence | None
    tree_line: Evidence | None


def note_topology(view: HasShown, rec: R.NcclRec) -> None:
    """Keep on ``view`` the first line of ``rec`` that shows a transport, a ring or a tree of its communicator."""
    t = type(rec)
    if isinstance(rec, R.NcclTopologyRun):
        if rec.rings and view.ring_line is None and " Ring " in rec.text:  # the run starts with a ring line
            view.ring_line = ev(rec)
        if rec.conns:
            _run_transports(view, rec)
    elif isinstance(rec, R.NcclConnection):
        view.transport_lines.setdefault(rec.transport, ev(rec))
    elif t is R.NcclRingOrder or t is R.NcclRing:
        if view.ring_line is None:
            view.ring_line = ev(rec)
    elif (t is R.NcclTrees or t is R.NcclTree) and view.tree_line is None:
        view.tree_line = ev(rec)


def _run_transports(view: HasShown, run: R.NcclTopologyRun) -> None:
    """The first connection of each transport in a folded run of connection lines. Where the run is its lines
    one after the other with no ring line among them, the k-th connection is the run's first line + k (its text
    rendered from the record where it is not the first); otherwise the run's first line stands for the run."""
    contiguous = not run.rings and run.last_line - run.line + 1 == len(run.conns)
    for k, (ch, ci, src, dst, direction, transport, _gdr) in enumerate(run.conns):
        if transport in view.transport_lines:
            continue
        if k == 0 or not contiguous:
            view.transport_lines[transport] = ev(run)
        else:
            way = f" [{direction}]" if direction else ""
            view.transport_lines[transport] = Evidence(run.file, run.line + k,
                                                       f"Channel {ch:02d}/{ci} : {src} -> {dst}{way} via {transport}")


def first_lines(views: Iterable[HasShown]) -> tuple[dict[str, Evidence], Evidence | None, Evidence | None]:
    """(transport -> its first line, the first ring line, the first tree line) over a communicator's views, the
    earliest by (file, line) where several show the same."""
    transports: dict[str, Evidence] = {}
    rings: list[Evidence] = []
    trees: list[Evidence] = []
    for v in views:
        for name, e in v.transport_lines.items():
            if name not in transports or (e.file, e.line) < (transports[name].file, transports[name].line):
                transports[name] = e
        rings += [v.ring_line] if v.ring_line is not None else []
        trees += [v.tree_line] if v.tree_line is not None else []

    def first(es: list[Evidence]) -> Evidence | None:
        return min(es, key=lambda e: (e.file, e.line)) if es else None

    return dict(sorted(transports.items())), first(rings), first(trees)


def count_tuning(table: dict[TuningKey, list], rec: R.NcclTuning) -> None:
    """Count ``rec`` under its (op, log2 size, algo, proto); the first line of each kept as its evidence."""
    key = (rec.op, max(int(rec.nbytes), 1).bit_length() - 1, rec.algo.upper(), rec.proto.upper())
    seen = table.get(key)
    if seen is not None:
        seen[0] += 1
    elif len(table) < MAX_TUNING_KEYS:
        table[key] = [1, ev(rec)]


def tuning_choices(table: dict[TuningKey, list]) -> list[TuningChoice]:
    """The model's TUNING choices, by op, size, then the most printed first."""
    out = [TuningChoice(op, bucket, algo, proto, n, e) for (op, bucket, algo, proto), (n, e) in table.items()]
    return sorted(out, key=lambda c: (c.op or "", c.bucket, -c.lines, c.algo, c.proto))


def note_graph(table: dict[int, GraphSearch], rec: R.NcclPattern) -> None:
    """Keep in ``table`` the search line of least capacity for ``rec``'s pattern (patterns are NCCL's handful)."""
    if not 0 < rec.nchannels <= 1024 or not 0 < min(rec.bw_intra, rec.bw_inter) < 1e6 or not 0 <= rec.pattern < 64:
        return  # a damaged line: no channels, absurd numbers
    seen = table.get(rec.pattern)  # every rank prints its search: the evidence is made only for a new least
    if seen is None or rec.nchannels * min(rec.bw_intra, rec.bw_inter) < seen.capacity:
        table[rec.pattern] = GraphSearch(rec.pattern, rec.nchannels, rec.bw_intra, rec.bw_inter, ev(rec))


def graph_searches(table: dict[int, GraphSearch]) -> list[GraphSearch]:
    return [table[p] for p in sorted(table)]
