"""COLL lines of a block of whole lines as one batch of columns; every other line handed back.

A log of a long job is almost all COLL lines. ``scan_coll_block`` takes a block of whole lines
and returns the COLL lines as columns (no per-line Python objects that outlive the call) and
every other line as (line number, text) for the line parser. The compiled kernel (``kernel``)
or the numpy reader (``columns``) takes the lines of the common shape; the block regex
(``grammar.LINE_RE``, one pass in C) takes the rest. A COLL line none of them takes (a wrapper
prefix, an odd field) is handed back as an "other" line, so ``parse_nccl_line`` still sees it.
"""
from __future__ import annotations

import gc

import numpy as np

from . import kernel as coll_kernel
from .batch import NcclCollBatch, concat_batches, merge_batches
from .columns import CollColumns, drop_unused, read_coll_columns
from .grammar import LINE_RE
from .timestamps import ts_column, ts_fast, ts_fast_matrix

MAX_LINE = 64 * 1024  # longer lines are cut before matching: no regex sees a megabyte
COLL_SCAN_RE = LINE_RE


READER_BYTES = 1 << 20  # the numpy reader's piece: its arrays stay in a core's L2 cache (1 MB here)


def scan_coll_block(block: bytes | memoryview, first_line: int, file: str, max_line: int = MAX_LINE,
                    newlines: np.ndarray | None = None) -> tuple[NcclCollBatch | None, list[tuple[int, str]]]:
    """COLL lines of ``block`` (whole lines; ``first_line`` is the number of its first) as one batch,
    and the other lines as (line number, text) with the same decoding as a line reader.

    Lines of the common shape are read by the compiled kernel (``coll_kernel``) when it is armed in
    this process, the whole block in one call, else by ``coll_columns`` (numpy, no per-line objects),
    about ``READER_BYTES`` of whole lines at a time (15-20 % faster than 4 MB at once, measured); the
    rest goes through ``COLL_SCAN_RE``. Either way a row is the same.
    """
    if not block:
        return None, []
    was_enabled = gc.isenabled()
    gc.disable()  # millions of short-lived tuples, no cycles: collections would only cost time
    try:
        if coll_kernel.ready() is not None or len(block) <= READER_BYTES * 3 // 2:  # the kernel takes any size
            return _scan_piece(block, first_line, file, max_line, newlines)
        nl = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10) if newlines is None else newlines
        cuts = np.unique(np.searchsorted(nl, np.arange(READER_BYTES, len(block), READER_BYTES)))
        cuts = cuts[cuts < len(nl)]  # index of the newline that ends each piece but the last
        batches: list[NcclCollBatch] = []
        others: list[tuple[int, str]] = []
        lo_byte, lo_nl = 0, 0
        for end_nl in [*cuts.tolist(), None]:
            hi_byte = int(nl[end_nl]) + 1 if end_nl is not None else len(block)
            hi_nl = end_nl + 1 if end_nl is not None else len(nl)
            if hi_byte > lo_byte:
                batch, rest = _scan_piece(block[lo_byte:hi_byte], first_line + lo_nl, file, max_line,
                                          nl[lo_nl:hi_nl] - lo_byte)
                if batch is not None:
                    batches.append(batch)
                others += rest
            lo_byte, lo_nl = hi_byte, hi_nl
        return concat_batches(batches), others
    finally:
        if was_enabled:
            gc.enable()


def _scan_piece(block: bytes | memoryview, first_line: int, file: str, max_line: int,
                newlines: np.ndarray | None) -> tuple[NcclCollBatch | None, list[tuple[int, str]]]:
    kernel = coll_kernel.ready()
    cols = (coll_kernel.read_coll_columns_compiled(block, newlines, kernel) if kernel
            else read_coll_columns(bytes(block), newlines))
    if cols is None:
        return _scan(bytes(block), first_line, None, file, max_line)
    fast = _batch_of_columns(cols, first_line, file)
    rest_rows = _rest_rows(len(cols.line_starts), cols.rows)
    if not len(rest_rows):
        return fast, []
    rest_block = _lines_of(block, cols.line_starts, rest_rows)
    if b"opCount" not in rest_block:  # no COLL line left for the regex: the others as they are
        return fast, _plain_lines(rest_block, rest_rows + first_line, max_line)
    slow, others = _scan(rest_block, first_line, rest_rows + first_line, file, max_line)
    return (fast if slow is None else merge_batches(fast, slow)), others


def scan_coll_block_regex(block: bytes, first_line: int, file: str,
                          max_line: int = MAX_LINE) -> tuple[NcclCollBatch | None, list[tuple[int, str]]]:
    """``scan_coll_block`` with the regex alone: the reference the numpy reader is tested against."""
    if not block:
        return None, []
    return _scan(block, first_line, None, file, max_line)


def _rest_rows(nlines: int, taken: np.ndarray) -> np.ndarray:
    mask = np.ones(nlines, dtype=bool)
    mask[taken] = False
    return np.flatnonzero(mask)


def _lines_of(block: bytes | memoryview, starts: np.ndarray, rows: np.ndarray) -> bytes:
    """The given lines of a block, joined (each keeps its newline; the last may have none)."""
    bounds = np.append(starts, len(block))
    if len(rows) < 4096:
        return b"".join(block[s:e] for s, e in zip(bounds[rows].tolist(), bounds[rows + 1].tolist()))
    keep = np.zeros(len(starts), dtype=bool)
    keep[rows] = True
    return np.frombuffer(block, dtype=np.uint8)[np.repeat(keep, np.diff(bounds))].tobytes()


def _plain_lines(block: bytes, linenos: np.ndarray, max_line: int) -> list[tuple[int, str]]:
    """(number, text) of each line of ``block``, as ``_scan`` gives lines that are not COLL lines."""
    lines = block.split(b"\n")
    if block.endswith(b"\n"):
        lines.pop()
    return [(n, raw[:max_line].decode("utf-8", "replace").replace("\x00", "") + "\n")
            for n, raw in zip(linenos.tolist(), lines)]


def _decode(names: list[bytes]) -> list[str]:
    return [x.decode("utf-8", "replace") for x in names]


def _batch_of_columns(c: CollColumns, first_line: int, file: str) -> NcclCollBatch:
    procs = [(h, int(q)) for h, q in (x.rsplit(":", 1) for x in _decode(c.proc_names))]
    n = len(c.rows)
    if c.ts_seconds is not None:
        tss = c.ts_seconds
    elif c.ts_bytes is not None:
        tss = ts_fast_matrix(c.ts_bytes)
    elif c.ts_list is not None:
        tss = ts_fast(c.ts_list)
    else:
        tss = np.full(n, np.nan)
    p0 = procs[int(c.proc[0])]
    return NcclCollBatch(file, first_line + int(c.rows[0]), "", p0[0], p0[1], p0[1], None, procs, c.proc,
                         _decode(c.comm_names), c.comm, _decode(c.op_names), c.op.astype(np.int16), c.count,
                         c.datatype, tss, (c.rows + first_line).astype(np.int64))


def _scan(block: bytes, first_line: int, linenos: np.ndarray | None, file: str,
          max_line: int) -> tuple[NcclCollBatch | None, list[tuple[int, str]]]:
    """The regex path; line i of the block is number ``linenos[i]``, or ``first_line + i`` without them."""
    rows = COLL_SCAN_RE.findall(b"\n" + block)
    if block.endswith(b"\n"):
        rows.pop()  # the empty "line" after the last newline
    ts, host, pid, op, count, dt, comm, other = zip(*rows)
    del rows
    n = len(op)
    number = (lambda i: int(linenos[i])) if linenos is not None else (lambda i: first_line + i)
    # columns of a few distinct values are coded with a dict, never turned into numpy strings
    op_names, op_all = _small_codes(op)
    empty = op_names.index(b"") if b"" in op_names else -1
    is_coll = op_all != empty
    others: list[tuple[int, str]] = []
    if empty >= 0:
        for i in np.flatnonzero(~is_coll).tolist():
            raw = other[i][:max_line]
            others.append((number(i), raw.decode("utf-8", "replace").replace("\x00", "") + "\n"))
    idx = np.flatnonzero(is_coll)
    if not len(idx):
        return None, others
    every = len(idx) == n
    if not every:
        pick = idx.tolist()
        ts, host, pid, count, dt, comm = (tuple(c[i] for i in pick) for c in (ts, host, pid, count, dt, comm))
        op_all = op_all[idx]
        op_names, op_all = drop_unused(op_names, op_all)  # the empty op of the other lines
    hp_names, proc = _small_codes(host if len(set(pid)) == 1 and len(set(host)) == 1 else
                                  [h + b":" + q for h, q in zip(host, pid)])
    if len(hp_names) == 1:
        hp_names = [host[0] + b":" + pid[0]]
    procs = [(h, int(q)) for h, q in (x.decode("utf-8", "replace").rsplit(":", 1) for x in hp_names)]
    comm_names, comm_code = _small_codes(comm)
    line_numbers = linenos[idx] if linenos is not None else idx + first_line
    batch = NcclCollBatch(
        file, int(line_numbers[0]), "", procs[int(proc[0])][0], procs[int(proc[0])][1], procs[int(proc[0])][1],
        None, procs, proc, [c.decode("utf-8", "replace") for c in comm_names], comm_code,
        [o.decode("utf-8", "replace") for o in op_names], op_all.astype(np.int16),
        np.fromiter(map(int, count), dtype=np.int64, count=len(idx)),
        np.fromiter(map(int, dt), dtype=np.int16, count=len(idx)), ts_fast(ts),
        line_numbers.astype(np.int64))
    return batch, others


def _small_codes(values: tuple[bytes, ...] | list[bytes]) -> tuple[list[bytes], np.ndarray]:
    """(distinct values sorted, int32 codes) of a column with few distinct values, without numpy strings."""
    uniq = sorted(set(values))
    if len(uniq) == 1:
        return uniq, np.zeros(len(values), dtype=np.int32)
    index = {v: i for i, v in enumerate(uniq)}
    return uniq, np.fromiter(map(index.__getitem__, values), dtype=np.int32, count=len(values))
