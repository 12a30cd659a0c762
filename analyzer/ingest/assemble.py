"""A text log's records: its COLL lines as column batches, every other line through the NCCL or the
PyTorch / launcher parser, merged in the file's line order; and where the log ends against its NCCL lines.

Pure but for ``parse_log``, which reads the file (``blocks.iter_blocks``); ``log_records`` takes lines.
"""
from __future__ import annotations

import collections
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from ..sources.fold import fold_topology
from ..sources.lines import strip_tool_prefixes, unglue_host
from ..sources.nccl_log import NcclCollBatch, scan_coll_block
from ..sources.pasted import ends_paste, starts_paste
from ..sources.records import (
    FileEnd,
    NcclChannels,
    NcclColl,
    NcclCommInfo,
    NcclConnection,
    NcclInit,
    NcclRec,
    NcclRing,
    NcclRingOrder,
    NcclTopologyRun,
    NcclTree,
    NcclTrees,
    Rec,
    TorchRec,
    UnreadLines,
)
from ..sources.route import Route, route_lines, wrapped_join_known
from ..sources.torch_log import parse_torch_lines
from .blocks import iter_blocks

# PyTorch and launcher output: a log holding such lines is read even when no line of it is one we model
TORCH_EVIDENCE = ("torch.distributed", "ProcessGroupNCCL", "ProcessGroupGloo", "torchrun", "Traceback (most recent",
                  "torch/distributed", "CUDA error", "NCCL error")


def parse_log(path: Path, name: str) -> tuple[list[Rec], FileEnd]:
    """A text log: NCCL lines go to the NCCL parser, the rest to the PyTorch/torchrun parser.

    COLL lines, nearly all of a long job's log, are taken a block at a time as columns
    (``scan_coll_block``); the batch is then cut at every other record so that records and
    COLL rows keep the file's order. Also the file's ``FileEnd``. Blank lines go no further than
    the block they came in: no line parser reads them, and a block's other lines are all the
    file's lines that are held at once (``blocks.BLOCK_LINES`` at most).
    """
    batches: list[NcclCollBatch] = []
    count = [0]  # the file's lines so far
    seen = [0]  # the last non-blank line

    def others() -> Iterator[tuple[int, str]]:
        for first, block, newlines in iter_blocks(path):
            count[0] = first - 1 + (len(newlines) if newlines is not None else 1)
            batch, rest = scan_coll_block(block, first, name, newlines=newlines)
            del block
            if batch is not None:
                batches.append(batch)
            for line in rest:
                if line[1] != "\n":
                    seen[0] = line[0]
                    yield line

    recs, end = log_records(others(), batches, name)
    if count[0] > end.line >= seen[0]:  # the file ends with blank lines (not after a user's paste: ``_End``)
        end.line, end.text = count[0], ""
    return recs, end


def log_records(lines: Iterable[tuple[int, str]], batches: list[NcclCollBatch], name: str,
                last_line: int = 0) -> tuple[list[Rec], FileEnd]:
    """Records of a log's lines that are not COLL rows, merged in line order with its COLL batches
    (``batches`` may fill while ``lines`` is consumed), and where the log ends against its NCCL lines:
    at ``last_line`` when ``lines`` left out blank lines after the last one it holds."""
    out: list[Rec] = []
    unread = UnreadLines(name, 0, "", "nccl")  # NCCL-looking lines no parser took: counted, so that they are said
    torch_seen = UnreadLines(name, 0, "", "pytorch")  # PyTorch / launcher lines: said when none of them was read
    end = _End()

    def rest() -> Iterator[tuple[int, str]]:
        for route, lineno, text, rec in route_lines(lines, name):  # the live monitor's router too
            end.pasted = route is not Route.NCCL and (end.last > 0 and starts_paste(text) if not end.pasted
                                                      else not ends_paste(text))
            if not end.pasted:  # a user's look at the job after its last line is no line of the job's
                end.last, end.last_text = lineno, text
            if route is Route.NCCL:
                out.append(rec)  # type: ignore[arg-type]  # an NCCL route carries its record
                end.nccl = lineno
                continue
            if route is Route.NCCL_UNREAD:
                if "] NCCL " in text:  # behind an NCCL head ("[dev] NCCL INFO"): a line of NCCL's, not text naming it
                    unread.add(lineno, text)
                end.nccl = lineno
                continue
            if any(map(text.__contains__, TORCH_EVIDENCE)):  # no generator frame per word: 8 words a line
                torch_seen.add(lineno, text)
            if not end.pasted and text and not text.isspace() and (len(text) > PREFIX_ONLY_MAX or strip_tool_prefixes(text)[1].strip()):
                end.text.append(lineno)  # a launcher's prefix alone ('nodeg18: ', '[default0]:') is no progress
            yield lineno, text

    for rec in parse_torch_lines(rest(), name):
        out.append(rec)
    if unread.count:
        out.append(unread)
    if torch_seen.count and not any(isinstance(r, TorchRec) for r in out):
        out.append(torch_seen)
    out.sort(key=lambda r: r.line)
    _unglue_hosts(out, batches)
    out = fold_topology(out, batches)
    done = end.record(name, batches, last_line)
    if batches:
        out = _interleave(out, batches)
    return out, done


PREFIX_ONLY_MAX = 48  # a line this short may be a launcher's prefix with nothing behind it
TEXT_AFTER_MAX = 64  # FileEnd.text_after counts the application's lines after the last NCCL line up to this


class _End:
    """Where a log's lines end against its NCCL lines, as they go by: its last line, the last NCCL
    line among them (a record or an NCCL line no parser took), the line numbers of the last
    ``TEXT_AFTER_MAX`` non-blank lines that are not NCCL's (bounded, whatever the log's size). Lines of a user's
    own look at the job after its last line (``sources.pasted``) are left out of all three."""

    __slots__ = ("last", "last_text", "nccl", "pasted", "text")

    def __init__(self) -> None:
        self.pasted = False  # inside a user's paste (an inspection command, nvidia-smi's table) after the job's lines
        self.last = 0
        self.last_text = ""
        self.nccl = 0
        self.text: collections.deque[int] = collections.deque(maxlen=TEXT_AFTER_MAX)

    def record(self, name: str, batches: list[NcclCollBatch], last_line: int = 0) -> FileEnd:
        """The file's ``FileEnd``: its COLL rows (``batches``, in line order) count as NCCL lines; a
        ``last_line`` past every line read is a blank one."""
        last, nccl = self.last, self.nccl
        for b in batches:
            if len(b):
                last, nccl = max(last, int(b.lines[-1])), max(nccl, int(b.lines[-1]))
        text = self.last_text.strip() if last == self.last else "an NCCL COLL line"  # a COLL row keeps no text
        if last_line > last and not self.pasted:  # (blank lines after a user's paste are the paste's)
            last, text = last_line, ""
        return FileEnd(name, last, text, nccl, sum(1 for ln in self.text if ln > nccl))


def _unglue_hosts(recs: list[Rec], batches: list[NcclCollBatch]) -> None:
    """Another process's output glued in front of an NCCL line makes its host ``0.00009vm`` where the
    process's other lines say ``vm``: such hosts are put right, in place, for one file's records."""
    hosts: dict[int, set[str]] = {}
    for r in recs:
        if isinstance(r, NcclRec):
            hosts.setdefault(r.pid, set()).add(r.host)
    for b in batches:
        for h, pid in b.procs:
            hosts.setdefault(pid, set()).add(h)
    fix = {(h, pid): unglue_host(h, hs) for pid, hs in hosts.items() if len(hs) > 1 for h in hs}
    fix = {k: v for k, v in fix.items() if v != k[0]}
    if not fix:
        return
    for r in recs:
        if isinstance(r, NcclRec) and (r.host, r.pid) in fix:
            r.host = fix[(r.host, r.pid)]
    for b in batches:
        b.procs = [(fix.get((h, pid), h), pid) for h, pid in b.procs]
        if (b.host, b.pid) in fix:
            b.host = fix[(b.host, b.pid)]


# records that move a process's current communicator in ``model_build.gather`` (an Init or comm-info line, a
# COLL line of its own) and those that read it (ring, tree, channel and connection lines): a COLL batch is cut
# at them so that gather sees them between its rows; any other record reads and moves nothing a batch does
_MOVES_CURRENT = (NcclInit, NcclCommInfo, NcclColl)
_READS_CURRENT = (NcclConnection, NcclRing, NcclRingOrder, NcclTrees, NcclTree, NcclChannels, NcclTopologyRun)


def _interleave(recs: list[Rec], batches: list[NcclCollBatch]) -> list[Rec]:
    """Cut each batch at the lines of the records whose place among its rows matters to the model, then
    merge everything by line. A batch of one process and one communicator (one file's rows, the usual
    case) leaves its process's current communicator where it was at each of its rows, so only the
    records that move it cut it; a record that reads or moves nothing a batch does (an event, a setting,
    a PyTorch line) is merged after the batch's rows instead of cutting it (at 4,096 ranks, the channel
    lines NCCL prints after each rank's first collective cut every log's batch in two)."""
    moves = np.array([r.line for r in recs if isinstance(r, _MOVES_CURRENT)], dtype=np.int64)
    both = np.array([r.line for r in recs if isinstance(r, (*_MOVES_CURRENT, *_READS_CURRENT))], dtype=np.int64)
    pieces: list[Rec] = []
    for b in batches:
        marks = moves if len(b.procs) == 1 and len(b.comms) == 1 else both
        inside = marks[(marks > b.lines[0]) & (marks < b.lines[-1])]
        if not len(inside):
            pieces.append(b)
            continue
        cuts = [0, *np.searchsorted(b.lines, inside).tolist(), len(b)]
        for lo, hi in zip(cuts, cuts[1:]):
            if hi > lo:
                pieces.append(b.take(lo, hi))
    merged = recs + pieces
    merged.sort(key=lambda r: r.line)
    return merged
