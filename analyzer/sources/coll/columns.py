"""NCCL COLL lines read as columns with numpy, a block of bytes at a time.

A long job's log is nearly all lines of one shape::

    [TS] host:pid:tid [dev] NCCL INFO AllReduce: opCount 1a sendbuff 0x.. recvbuff 0x.. count 1024
    datatype 7 op 0 root 0 comm 0x55.. [nranks=8] stream 0x..

(``[TS] `` and ``[dev] `` optional). ``read_coll_columns`` finds every space and newline of a block
once (two ``flatnonzero`` passes), so each token of each line is a pair of array indices. A line is
then cut into parts that are checked against the grammar of ``grammar.LINE_RE`` (the one definition of the line):

- the parts with few distinct values (``host:pid:tid [dev] NCCL INFO Op: ``, ``datatype N op N root
  N ``, ``comm 0x.. [nranks=N]``) are grouped by value (8-byte words, a hash, then an exact compare)
  and each distinct value is matched once by a small regex, which also yields its fields;
- the parts that differ on every line (opCount, the buffers, count, the timestamp) are checked
  and read 8 bytes at a time with SWAR arithmetic on uint64 arrays.

A line that fails any check is not taken: the caller hands it to the regex, so this reader only
narrows the regex's work and never changes a result (``tests/sources/test_coll_columns.py`` holds it to
that). No Python object is made per line.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from .grammar import (
    BUF_MAX, COMM_RE, COUNT, COUNT_DIGITS, MIDDLE_RE, OPCOUNT, OPCOUNT_HEX, PREFIX_RE, RECVBUFF, SENDBUFF,
)

SPACE, NL, LBRACKET, RBRACKET, COLON, MINUS, DOT = 32, 10, 91, 93, 58, 45, 46
FRONT, BACK = 32, 64  # zero bytes around the block, so that every 8-byte read near an edge stays inside
SPAN_MAX = 320  # longest distinct-value part read (a 255-byte host and the rest of the prefix)


T = TypeVar("T")
U = np.uint64
ALL = U(0xFFFFFFFFFFFFFFFF)
HIGH = U(0x8080808080808080)
ZEROS = U(0x3030303030303030)  # "00000000"
NIBBLE_HI = U(0xF0F0F0F0F0F0F0F0)
SIXES = U(0x0606060606060606)
# KEEP[n]: the last n bytes of a little-endian word (the n characters that end where the word ends)
KEEP = np.array([0] + [((1 << (8 * n)) - 1) << (8 * (8 - n)) for n in range(1, 9)], dtype=np.uint64)


@dataclass(frozen=True, slots=True)
class CollColumns:
    """The COLL lines taken from a block; ``rows`` are their indices among the block's lines.

    ``*_names`` are the distinct values sorted as bytes (host:pid for ``proc``); codes index them.
    """

    line_starts: np.ndarray  # int64, offset of every line of the block
    rows: np.ndarray  # int64
    proc_names: list[bytes]
    proc: np.ndarray  # int32
    comm_names: list[bytes]
    comm: np.ndarray  # int32
    op_names: list[bytes]
    op: np.ndarray  # int32
    count: np.ndarray  # int64
    datatype: np.ndarray  # int16
    ts_bytes: np.ndarray | None  # (rows, width) uint8 "YYYY-MM-DD HH:MM:SS[.f]" when all rows have one of one width
    ts_list: list[bytes] | None  # otherwise the raw timestamps (b"" for none)
    ts_seconds: np.ndarray | None = None  # float64 seconds since the epoch, when read here (see _ts_seconds)


class _Buf:
    """The block with zero padding, read as bytes and as an unaligned 8-byte word at any offset."""

    def __init__(self, a: np.ndarray) -> None:
        self.u8 = np.zeros(FRONT + len(a) + BACK + SPAN_MAX, dtype=np.uint8)
        self.u8[FRONT:FRONT + len(a)] = a
        self.u64 = np.ndarray(shape=(len(self.u8) - 7,), dtype="<u8", buffer=self.u8, strides=(1,))

    def byte(self, pos: np.ndarray) -> np.ndarray:
        return self.u8[pos + FRONT]

    def word(self, pos: np.ndarray) -> np.ndarray:
        return self.u64[pos + FRONT]

    def is_(self, pos: np.ndarray, literal: bytes) -> np.ndarray:
        ok = np.ones(len(pos), dtype=bool)
        for j in range(0, len(literal), 8):
            chunk = literal[j:j + 8]
            mask = U((1 << (8 * len(chunk))) - 1)
            ok &= (self.word(pos + j) & mask) == U(int.from_bytes(chunk, "little"))
        return ok

    def tail_word(self, end: np.ndarray, n: np.ndarray) -> np.ndarray:
        """The last ``n`` (0..8) characters before ``end``, left-padded with '0': a right-aligned word."""
        keep = KEEP[n]
        return (self.word(end - 8) & keep) | (ZEROS & ~keep)

    def gather(self, pos: np.ndarray, width: int) -> np.ndarray:
        """(rows, width) bytes from each position, one 8-byte read per 8 columns."""
        words = (width + 7) // 8
        out = np.empty((len(pos), words), dtype="<u8")
        for j in range(words):
            out[:, j] = self.word(pos + 8 * j)
        return out.view(np.uint8).reshape(len(pos), words * 8)[:, :width]


def _all_digits(w: np.ndarray) -> np.ndarray:
    return ((w & NIBBLE_HI) == ZEROS) & (((w + SIXES) & NIBBLE_HI) == ZEROS)


def _in_range(w: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Per byte (7-bit bytes only): 0x80 where lo <= byte <= hi."""
    return (w + U((0x80 - lo) * 0x0101010101010101)) & ~(w + U((0x7F - hi) * 0x0101010101010101)) & HIGH


def _all_hex(w: np.ndarray) -> np.ndarray:
    hexes = _in_range(w, 0x30, 0x39) | _in_range(w, 0x41, 0x46) | _in_range(w, 0x61, 0x66)
    return ((w & HIGH) == U(0)) & (hexes == HIGH)


def _eight_digits(w: np.ndarray) -> np.ndarray:
    """Value of 8 digit characters in a little-endian word (first character most significant)."""
    w = ((w & U(0x0F0F0F0F0F0F0F0F)) * U(2561)) >> U(8)
    w = ((w & U(0x00FF00FF00FF00FF)) * U(6553601)) >> U(16)
    return ((w & U(0x0000FFFF0000FFFF)) * U(42949672960001)) >> U(32)


def _number(buf: _Buf, end: np.ndarray, length: np.ndarray, most: int) -> tuple[np.ndarray, np.ndarray]:
    """(all digits and 1 <= length <= most, value) of decimal tokens ending at ``end``; most <= 24."""
    ok = (length >= 1) & (length <= most)
    value = np.zeros(len(end), dtype=np.uint64)
    for j in range(0, min(most, int(length.max())), 8):
        n = np.clip(length - j, 0, 8)
        w = buf.tail_word(end - j, n)
        ok &= _all_digits(w)
        value += _eight_digits(w) * U(10 ** j)
    return ok, value.astype(np.int64)


def _hex_ok(buf: _Buf, end: np.ndarray, length: np.ndarray, most: int) -> np.ndarray:
    ok = (length >= 1) & (length <= most)
    for j in range(0, min(most, int(length.max())), 8):
        ok &= _all_hex(buf.tail_word(end - j, np.clip(length - j, 0, 8)))
    return ok


@dataclass(frozen=True, slots=True)
class _Groups:
    """Rows grouped by the bytes of a part: ``first[g]`` is a row holding value ``g``; ``code[r]`` its group."""

    first: np.ndarray
    code: np.ndarray
    same: np.ndarray  # False where a row's bytes differ from its group's (a hash collision: not taken)


def _group(buf: _Buf, pos: np.ndarray, length: np.ndarray) -> _Groups:
    """Rows grouped by the bytes of ``pos[r] .. pos[r] + length[r]``.

    Neighbouring lines mostly repeat these parts, so rows are first cut into runs of equal values
    (an exact compare with the row before); the runs' first rows are then grouped by a hash of
    their words, and a run whose first row differs from its group's (a collision) is not taken.
    """
    n = len(pos)
    width = int(min(length.max(), SPAN_MAX))
    words = (width + 7) // 8
    w = np.empty((words, n), dtype=np.uint64)
    p = pos + FRONT
    uniform = bool((length == length[0]).all())
    for j in range(words):
        mask = _LOW[min(width - 8 * j, 8)] if uniform else _LOW[np.clip(length - 8 * j, 0, 8)]
        w[j] = buf.u64[p + 8 * j] & mask
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(length[1:], length[:-1], out=change[1:])
    for j in range(words):
        change[1:] |= w[j, 1:] != w[j, :-1]
    heads = np.flatnonzero(change)  # first row of each run
    run = np.cumsum(change) - 1  # run of each row
    if len(heads) == 1:
        return _Groups(np.zeros(1, dtype=np.int64), np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool))
    hw = w[:, heads]
    hl = length[heads]
    h = hl.astype(np.uint64) * U(0x9E3779B97F4A7C15)
    for j in range(words):
        h = (h ^ hw[j]) * U(0x100000001B3) + U(j + 1)
        h ^= h >> U(29)
    _, first, inv = np.unique(h, return_index=True, return_inverse=True)
    inv = inv.ravel()
    rep = first[inv]  # per run: the run (index into heads) that stands for its group
    same_run = (hl == hl[rep]) & (hw == hw[:, rep]).all(axis=0)
    return _Groups(heads[first], inv[run], same_run[run])


_LOW = np.array([(1 << (8 * n)) - 1 if n < 8 else 0xFFFFFFFFFFFFFFFF for n in range(9)], dtype=np.uint64)


def _per_group(block: bytes, g: _Groups, pos: np.ndarray, length: np.ndarray,
               match: Callable[[bytes], re.Match[bytes] | None]) -> list[re.Match[bytes] | None]:
    """The pattern's full match of each group's value (None where it does not match)."""
    out = []
    for r in g.first.tolist():
        s = int(pos[r])
        out.append(match(block[s:s + int(length[r])]))
    return out


def sorted_codes(values: list[bytes | None], code: np.ndarray) -> tuple[list[bytes], np.ndarray]:
    """Per-group values -> (distinct values sorted, int32 code per row); groups with None get -1."""
    names = sorted({v for v in values if v is not None})
    index = {v: i for i, v in enumerate(names)}
    table = np.array([index[v] if v is not None else -1 for v in values], dtype=np.int32)
    return names, table[code]


class _Rows:
    """The candidate rows and their token geometry; ``keep`` drops rows from every array at once."""

    def __init__(self, a: np.ndarray, newlines: np.ndarray | None = None) -> None:
        nl = np.flatnonzero(a == NL) if newlines is None else newlines
        ends = nl if a[-1] == NL else np.append(nl, len(a))
        starts = np.empty(len(ends), dtype=np.int64)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        self.line_starts = starts
        self.line_ends = ends
        sp = np.flatnonzero(a == SPACE)
        self.sp = np.append(sp, len(a))  # a sentinel: token indices past the last space stay in bounds
        first = np.searchsorted(sp, starts)
        nsp = np.diff(first, append=len(sp))  # no space sits on a newline: a line's spaces end where the next's begin
        self.rows = np.flatnonzero(nsp >= 20)  # the shortest COLL line has 20 spaces
        self.starts, self.ends, self.first, self.nsp = starts[self.rows], ends[self.rows], first[self.rows], nsp[self.rows]

    def keep(self, ok: np.ndarray) -> None:
        self.rows, self.starts, self.ends, self.first, self.nsp = (
            x[ok] for x in (self.rows, self.starts, self.ends, self.first, self.nsp))

    def start(self, i: np.ndarray | int) -> np.ndarray:
        """Offset of token i (1 <= i <= nsp) of each row."""
        return self.sp[self.first + (i - 1)] + 1

    def end(self, i: np.ndarray | int) -> np.ndarray:
        """Offset just past token i (i <= nsp) of each row: its space, or the end of the line."""
        return np.where(i < self.nsp, self.sp[self.first + i], self.ends)


def read_coll_columns(block: bytes, newlines: np.ndarray | None = None) -> CollColumns | None:
    """The COLL lines of ``block`` that match the common shape exactly, as columns; None for none.
    ``newlines``: the offsets of the block's newlines, when the caller has them already."""
    if not block:
        return None
    a = np.frombuffer(block, dtype=np.uint8)
    r = _Rows(a, newlines)
    if not len(r.rows):
        return None
    if np.count_nonzero(a < 14) > len(r.line_starts) - (a[-1] != NL):  # \t \v \f \r (\S in the buffers) or
        odd = np.flatnonzero((a < 14) & (a != NL))                     # control bytes: leave those lines to the regex
        bad = np.zeros(len(r.line_starts), dtype=bool)
        bad[np.searchsorted(r.line_ends, odd)] = True
        r.keep(~bad[r.rows])
    buf = _Buf(a)
    # shape: "[TS] " is two tokens, "[dev] " one; k is the index of the "NCCL" token
    has_ts = a[r.starts] == LBRACKET
    b = np.where(has_ts, 2, 0)
    dev_first = buf.byte(np.where(has_ts, r.start(3), r.start(1)))
    k = b + 1 + (dev_first == LBRACKET)
    ok = r.nsp >= k + 19
    r.keep(ok)
    b, k = b[ok], k[ok]
    if not len(r.rows):
        return None
    # fixed words between the values
    ok = buf.is_(r.start(k + 3), OPCOUNT) & buf.is_(r.start(k + 5), SENDBUFF)
    ok &= buf.is_(r.start(k + 7), RECVBUFF) & buf.is_(r.start(k + 9), COUNT)
    # values that differ on every line
    e = r.end(k + 4)
    ok &= _hex_ok(buf, e, e - r.start(k + 4), OPCOUNT_HEX)
    for i in (6, 8):  # sendbuff, recvbuff: \S{1,BUF_MAX}
        n = r.end(k + i) - r.start(k + i)
        ok &= (n >= 1) & (n <= BUF_MAX)
    e = r.end(k + 10)
    count_ok, count = _number(buf, e, e - r.start(k + 10), COUNT_DIGITS)
    ok &= count_ok
    if has_ts.any():
        ok &= ~(b == 2) | _ts_ok(buf, r)
    r.keep(ok)
    b, k, count = b[ok], k[ok], count[ok]
    if not len(r.rows):
        return None
    # parts of few distinct values, one regex match per distinct value
    pre_s = np.where(b == 0, r.starts, r.start(2))
    pre_len = r.start(k + 3) - pre_s
    mid_s = r.start(k + 11)
    mid_len = r.start(k + 17) - mid_s
    comm_len = r.end(k + 19) - r.start(k + 17)
    parts = [(pre_s, pre_len, PREFIX_RE.fullmatch), (mid_s, mid_len, MIDDLE_RE.fullmatch),
             (r.start(k + 17), comm_len, COMM_RE.fullmatch)]
    ok = np.ones(len(r.rows), dtype=bool)
    found = []
    for pos, length, match in parts:
        ok &= (length >= 1) & (length <= SPAN_MAX)
        g = _group(buf, pos, length)
        m = _per_group(block, g, pos, length, match)
        ok &= g.same & np.array([x is not None for x in m], dtype=bool)[g.code]
        found.append((g, m))
    (gp, mp), (gm, mm), (gc, mc) = found
    proc_names, proc = sorted_codes([x.group(1) + b":" + x.group(2) if x else None for x in mp], gp.code)
    op_names, op = sorted_codes([x.group(3) if x else None for x in mp], gp.code)
    comm_names, comm = sorted_codes([x.group(1) if x else None for x in mc], gc.code)
    dt_table = np.array([int(x.group(1)) if x else -1 for x in mm], dtype=np.int16)
    datatype = dt_table[gm.code]
    if not ok.all():
        r.keep(ok)
        b, count, proc, op, comm, datatype = b[ok], count[ok], proc[ok], op[ok], comm[ok], datatype[ok]
        if not len(r.rows):
            return None
        proc_names, proc = drop_unused(proc_names, proc)
        op_names, op = drop_unused(op_names, op)
        comm_names, comm = drop_unused(comm_names, comm)
    ts_bytes: np.ndarray | None = None
    ts_list: list[bytes] | None = None
    ts_seconds: np.ndarray | None = None
    with_ts = b == 2
    if with_ts.any():
        ts_len = r.end(1) - r.starts - 2
        if with_ts.all():
            ts_seconds = _ts_seconds(buf, r.starts, ts_len)
        if ts_seconds is None and with_ts.all() and (ts_len == ts_len[0]).all():
            ts_bytes = buf.gather(r.starts + 1, int(ts_len[0]))
        elif ts_seconds is None:
            ts_list = [block[s + 1:s + 1 + n] if w else b"" for s, n, w in
                       zip(r.starts.tolist(), ts_len.tolist(), with_ts.tolist())]
    return CollColumns(r.line_starts, r.rows, proc_names, proc, comm_names, comm, op_names, op, count, datatype,
                       ts_bytes, ts_list, ts_seconds)


def drop_unused(names: list[T], codes: np.ndarray) -> tuple[list[T], np.ndarray]:
    """Names no code points at any more dropped, the sorted order and int32 codes kept (``codes``
    itself when every name is used)."""
    if len(codes):
        lo, hi = int(codes.min()), int(codes.max())
        if lo == hi:  # one name: the usual case for a file's rows of a joined scan
            return (names, codes) if len(names) == 1 else ([names[lo]], np.zeros(len(codes), dtype=np.int32))
    used = np.bincount(codes, minlength=len(names)) > 0
    if used.all():
        return names, codes
    remap = (np.cumsum(used) - 1).astype(np.int32)
    return [x for x, u in zip(names, used.tolist()) if u], remap[codes]


def _template(template: bytes) -> list[tuple[np.uint64, np.uint64, np.uint64]]:
    """Per 8-byte word of a template ('D' = a digit, '?' = anything, else itself): literal mask,
    literal value, digit mask."""
    out = []
    for j in range(0, len(template), 8):
        lit_mask = lit_val = dig_mask = 0
        for i, c in enumerate(template[j:j + 8]):
            if c == ord("D"):
                dig_mask |= 0xFF << (8 * i)
            elif c != ord("?"):
                lit_mask |= 0xFF << (8 * i)
                lit_val |= c << (8 * i)
        out.append((U(lit_mask), U(lit_val), U(dig_mask)))
    return out


TS_TEMPLATE = _template(b"[DDDD-DD-DD DD:DD:DD")


def _ts_ok(buf: _Buf, r: _Rows) -> np.ndarray:
    """``[YYYY-MM-DD HH:MM:SS(.d{1,9})?] `` at the line start (the regex's ``[ T_]`` is a space here)."""
    s = r.starts
    date_end = r.sp[r.first]  # the line's first space
    time_end = r.end(1)
    ts_len = time_end - s - 2
    ok = (date_end - s == 11) & ((ts_len == 19) | ((ts_len >= 21) & (ts_len <= 29)))
    ok &= buf.byte(time_end - 1) == RBRACKET
    for j, (lit_mask, lit_val, dig_mask) in enumerate(TS_TEMPLATE):
        w = buf.word(s + 8 * j)
        ok &= ((w & lit_mask) == lit_val) & _all_digits((w & dig_mask) | (ZEROS & ~dig_mask))
    f_len = ts_len - 20  # the fraction's digits, between "." and "]"
    f_end = time_end - 1
    f_ok = (buf.byte(s + 20) == DOT) & _all_digits(buf.tail_word(f_end, np.clip(f_len, 0, 8))) & _all_digits(
        buf.tail_word(f_end - 8, np.clip(f_len - 8, 0, 8)))
    return ok & ((ts_len == 19) | f_ok)


def _ts_seconds(buf: _Buf, s: np.ndarray, ts_len: np.ndarray) -> np.ndarray | None:
    """Seconds since the epoch of ``[YYYY-MM-DD HH:MM:SS(.f{1,6})]`` at each line start, shapes already
    checked by ``_ts_ok``: the same arithmetic as ``timestamps.ts_fast_matrix`` on the words already
    at hand, no byte matrix. None (the caller takes the general path) unless every row is of one day,
    has at most 6 fraction digits and its hour, minute and second are in range."""
    if not (((ts_len == 19) | ((ts_len >= 21) & (ts_len <= 26))).all()):
        return None
    w0, w1, w2, w3 = buf.word(s), buf.word(s + 8), buf.word(s + 16), buf.word(s + 24)
    if not ((w0 >> U(8)) == (w0[0] >> U(8))).all() or not ((w1 & U(0xFFFFFF)) == (w1[0] & U(0xFFFFFF))).all():
        return None  # more than one day in the block
    words = (w0, w1, w2, w3)

    def digit(offset: int) -> np.ndarray:
        return ((words[offset // 8] >> U(8 * (offset % 8))) & U(0xFF)).astype(np.int64) - 48

    hh, mi, ss = digit(12) * 10 + digit(13), digit(15) * 10 + digit(16), digit(18) * 10 + digit(19)
    if (hh > 23).any() or (mi > 59).any() or (ss > 59).any():
        return None
    date = int(w0[0] >> U(8)).to_bytes(7, "little") + int(w1[0] & U(0xFFFFFF)).to_bytes(3, "little")
    try:
        day = int(np.array([date]).astype("datetime64[D]").astype(np.int64)[0])
    except ValueError:
        return None
    frac_digits = ts_len - 20
    us = np.zeros(len(s), dtype=np.int64)
    for k in range(6):
        us += np.where(k < frac_digits, digit(21 + k), 0) * 10 ** (5 - k)
    return ((day * 86400 + hh * 3600 + mi * 60 + ss) * 1_000_000 + us) / 1e6
