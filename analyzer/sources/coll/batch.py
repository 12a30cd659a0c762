"""A run of COLL lines of one file as columns (``NcclCollBatch``), and batches joined."""
from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..records import NcclRec
from .columns import drop_unused


@dataclass(slots=True)
class NcclCollBatch(NcclRec):
    """Consecutive COLL lines of one file as columns; ``line`` and ``host``/``pid`` are the first row's.

    Codes index the small lists: ``procs`` (host, pid), ``comms`` (comm pointers), ``ops`` (op names
    as NCCL prints them). ``ts`` is seconds since the epoch, NaN where the line had no timestamp.
    """

    procs: list[tuple[str, int]]
    proc: np.ndarray  # int32
    comms: list[str]
    comm: np.ndarray  # int32
    ops: list[str]
    op: np.ndarray  # int16
    count: np.ndarray  # int64
    datatype: np.ndarray  # int16
    tss: np.ndarray  # float64
    lines: np.ndarray  # int64

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, tuple[Any, ...]]:
        """Pickled with its seven columns packed into one buffer (out of band under protocol 5, as the parse
        workers send it; bytes under older protocols): a parent loading thousands of batches makes one
        array view per column instead of rebuilding seven arrays each (~3.5 us apiece in numpy's loader)."""
        cols = [np.ascontiguousarray(getattr(self, name), dtype) for name, dtype in _COLUMNS]
        sizes = [c.nbytes for c in cols]
        offsets = [0]
        for n in sizes[:-1]:
            offsets.append(offsets[-1] + -(-n // 8) * 8)  # each column 8-byte aligned in the buffer
        packed = np.zeros(offsets[-1] + sizes[-1] if cols else 0, np.uint8)
        for c, at, n in zip(cols, offsets, sizes):
            packed[at:at + n] = c.view(np.uint8)
        return _unpacked, (self.file, self.line, self.text, self.host, self.pid, self.tid, self.ts, self.procs,
                           self.comms, self.ops, pickle.PickleBuffer(packed.data) if protocol >= 5 else packed.tobytes(),
                           len(self.lines), offsets)

    def release(self) -> None:
        """Drop the rows' arrays (the table has them now): the batch keeps its first line's fields only."""
        self.proc = self.comm = self.op = self.count = self.datatype = self.lines = _EMPTY_INT
        self.tss = _EMPTY_FLOAT

    def __len__(self) -> int:
        return len(self.lines)

    def take(self, lo: int, hi: int) -> "NcclCollBatch":
        """Rows lo..hi as a batch of their own (copies, so a pickled slice carries only its rows)."""
        p = self.procs[int(self.proc[lo])]
        return NcclCollBatch(self.file, int(self.lines[lo]), "", p[0], p[1], p[1], None, self.procs,
                             self.proc[lo:hi].copy(), self.comms, self.comm[lo:hi].copy(), self.ops,
                             self.op[lo:hi].copy(), self.count[lo:hi].copy(), self.datatype[lo:hi].copy(),
                             self.tss[lo:hi].copy(), self.lines[lo:hi].copy())

    def for_file(self, lo: int, hi: int, file: str, line_offset: int) -> "NcclCollBatch":
        """Rows lo..hi, from a scan of several files joined, as a batch of ``file``: its line numbers
        less ``line_offset`` and only the names its rows use."""
        procs, proc = drop_unused(self.procs, self.proc[lo:hi])
        comms, comm = drop_unused(self.comms, self.comm[lo:hi])
        ops, op = drop_unused(self.ops, self.op[lo:hi])
        p = procs[int(proc[0])]
        lines = self.lines[lo:hi] - line_offset
        return NcclCollBatch(file, int(lines[0]), "", p[0], p[1], p[1], None, procs, proc.astype(np.int32),
                             comms, comm.astype(np.int32), ops, op.astype(np.int16), self.count[lo:hi].copy(),
                             self.datatype[lo:hi].copy(), self.tss[lo:hi].copy(), lines)


_COLUMNS = (("proc", np.int32), ("comm", np.int32), ("op", np.int16), ("count", np.int64),
            ("datatype", np.int16), ("tss", np.float64), ("lines", np.int64))
_EMPTY_INT = np.zeros(0, np.int64)  # a released batch's columns: empty, so nothing can be written into them
_EMPTY_FLOAT = np.zeros(0, np.float64)


def _unpacked(file: str, line: int, text: str, host: str, pid: int, tid: int, ts: float | None,
              procs: list[tuple[str, int]], comms: list[str], ops: list[str], packed: Any, n: int,
              offsets: list[int]) -> NcclCollBatch:
    """A batch from ``__reduce__``'s packed columns: each a view of ``packed`` (no copy; writable where the
    buffer is, as a parse worker's mapped result file is). The sizes come from ``n`` and the fixed column
    types, checked against the buffer: a short or misshapen buffer is an error, never a misread batch."""
    raw = np.frombuffer(packed, np.uint8)
    if n < 0 or len(offsets) != len(_COLUMNS):
        raise ValueError("a COLL batch's packed columns are misshapen")
    cols = []
    for (_, dtype), at in zip(_COLUMNS, offsets):
        size = n * np.dtype(dtype).itemsize
        if at < 0 or at % 8 or at + size > len(raw):
            raise ValueError("a COLL batch's packed columns are cut short")
        cols.append(raw[at:at + size].view(dtype))
    proc, comm, op, count, datatype, tss, lines = cols
    return NcclCollBatch(file, line, text, host, pid, tid, ts, procs, proc, comms, comm, ops, op, count, datatype,
                         tss, lines)


def merge_batches(x: NcclCollBatch, y: NcclCollBatch) -> NcclCollBatch:
    """Rows of two batches of one file as one, in line order, with the name lists united (sorted)."""
    merged = concat_batches([x, y], sort=True)
    assert merged is not None  # two batches in, one out
    return merged


def concat_batches(batches: list[NcclCollBatch], sort: bool = False) -> NcclCollBatch | None:
    """Batches of one file as one; in the given order, or sorted by line with ``sort``."""
    if len(batches) <= 1:
        return batches[0] if batches else None

    def unite(names_of: list[list], codes_of: list[np.ndarray]) -> tuple[list, np.ndarray]:
        names = sorted(set().union(*names_of))
        index = {v: i for i, v in enumerate(names)}
        return names, np.concatenate([np.array([index[v] for v in ns], dtype=np.int32)[cs]
                                      for ns, cs in zip(names_of, codes_of)])

    procs, proc = unite([b.procs for b in batches], [b.proc for b in batches])
    comms, comm = unite([b.comms for b in batches], [b.comm for b in batches])
    ops, op = unite([b.ops for b in batches], [b.op for b in batches])
    lines = np.concatenate([b.lines for b in batches])
    count = np.concatenate([b.count for b in batches])
    dtype = np.concatenate([b.datatype for b in batches])
    tss = np.concatenate([b.tss for b in batches])
    if sort:
        order = np.argsort(lines, kind="stable")
        proc, comm, op, lines, count, dtype, tss = (x[order] for x in (proc, comm, op, lines, count, dtype, tss))
    first = min(batches, key=lambda b: int(b.lines[0]))
    return NcclCollBatch(first.file, int(lines[0]), "", first.host, first.pid, first.tid, None, procs,
                         proc.astype(np.int32), comms, comm.astype(np.int32), ops, op.astype(np.int16), count,
                         dtype, tss, lines)
