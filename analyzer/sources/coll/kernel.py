"""NCCL COLL lines read by one compiled pass over a block (numba), the fast path of ``columns``.

The same contract as ``columns.read_coll_columns``: a line is taken only when it has the common
shape exactly (see that module), its values are read here, and anything else is left to the regex,
so this reader never changes a result (``tests/sources/test_coll_columns.py`` holds all three readers to
the regex's rows). One loop per line finds its first 24 tokens, checks the fixed words, reads
opCount, count and the timestamp, and gives each of the three parts with few distinct values
(``host:pid:tid [dev] NCCL INFO Op: ``, ``datatype N op N root N ``, ``comm 0x.. [nranks=N]``) a
group code: a compare with the line before, else an open-addressing hash table. Python then
matches each distinct part once with the small regexes of ``columns``.

numba compiles the loop ahead of time into a small extension module kept in the user's cache
(``kernel_build``), or, failing that, just in time; see ``arm``. ``NCCLSCOPE_NO_JIT=1``, or numba
missing, leaves the numpy reader in charge.
"""
from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from .columns import SPAN_MAX, CollColumns, drop_unused, sorted_codes
from .grammar import (
    BUF_MAX, COMM_RE, COUNT, COUNT_DIGITS, HEAD_RE, MIDDLE_RE, NCCL_INFO, OP_RE, OPCOUNT, OPCOUNT_HEX, RECVBUFF,
    SENDBUFF,
)

MIN_LINE = 64  # shorter lines are no COLL line (the shortest is about 100 bytes)
MAX_GROUPS = 4096  # distinct values of one part in one block; a line with a new one past that goes to the regex
TABLE = 8192  # hash slots per part (a power of two, twice MAX_GROUPS)
NPART = 4  # parts of few distinct values: head, op, middle, comm (PARTS)
PARTS = (HEAD_RE, OP_RE, MIDDLE_RE, COMM_RE)  # HEAD_RE + OP_RE is grammar.PREFIX_RE


def _word(text: bytes) -> np.uint64:
    return np.uint64(int.from_bytes(text.ljust(8, b"\0"), "little"))


# the fixed words of the grammar as 8-byte words (a longer word's first 8 bytes; its last is checked apart)
W_OPCOUNT, W_SENDBUFF, W_RECVBUFF, W_COUNT = _word(OPCOUNT), _word(SENDBUFF[:8]), _word(RECVBUFF[:8]), _word(COUNT)
W_NCCL_INF = _word(NCCL_INFO[:8])
W_DATATYPE = _word(b"datatype")
M6 = np.uint64((1 << 48) - 1)  # the first 6 bytes of a word
# a word's bytes tested all at once: (x - ONES) & ~x & HIGHS is nonzero exactly when a byte of x is 0, with
# LOW14 for ONES when a byte is below 14 (the bytes 9-13 a buffer token may not hold among them); x ^ SPACES has a
# 0 byte where x has a space. A token's scan skips 8 bytes at a time while neither is so, then goes byte by byte
SPACES, ONES, LOW14 = np.uint64(0x2020202020202020), np.uint64(0x0101010101010101), np.uint64(0x0E0E0E0E0E0E0E0E)
HIGHS, ZERO = np.uint64(0x8080808080808080), np.uint64(0)


def _kernel(a: np.ndarray, w: np.ndarray, starts: np.ndarray, ends: np.ndarray, ok: np.ndarray, count: np.ndarray,
            ts: np.ndarray, code: np.ndarray, rep_s: np.ndarray, rep_n: np.ndarray,
            ngroups: np.ndarray, table: np.ndarray) -> None:  # pragma: no cover - compiled, tested through read
    span_s = np.empty(NPART, np.int64)
    span_n = np.empty(NPART, np.int64)
    prev_s = np.zeros(NPART, np.int64)
    prev_n = np.full(NPART, -1, np.int64)
    prev_c = np.full(NPART, -1, np.int32)
    cg = np.int32(-1)
    last_date = np.int64(-1)  # the date of the line before, as YYYYMMDD, and its day number
    last_day = np.int64(0)
    last_ts = np.int64(-1)  # where the last line whose timestamp was read to the second starts, and those seconds
    last_secs = np.int64(0)
    for r in range(len(starts)):
        s = starts[r]
        e = ends[r]
        if e - s < MIN_LINE:
            continue
        # The line is read left to right: fixed words are compared 8 bytes at a time and skipped, the
        # other tokens scanned to their space. Any surprise leaves the line to the regex.
        p = s
        t = np.nan
        if a[s] == 91:  # "[YYYY-MM-DD HH:MM:SS(.f{1,6})] "
            # to the second, the same bytes as the last line read so far (compared as three words, the
            # last overlapping): the same checks pass and the same seconds come; else read and checked here
            if not (last_ts >= 0 and w[s + 1] == w[last_ts + 1] and w[s + 9] == w[last_ts + 9]
                    and w[s + 12] == w[last_ts + 12]):
                if a[s + 5] != 45 or a[s + 8] != 45 or a[s + 11] != 32 or a[s + 14] != 58 or a[s + 17] != 58:
                    continue
                bad = False
                for i in (1, 2, 3, 4, 6, 7, 9, 10, 12, 13, 15, 16, 18, 19):
                    c = a[s + i]
                    if c < 48 or c > 57:
                        bad = True
                if bad:
                    continue
                year = (a[s + 1] - 48) * 1000 + (a[s + 2] - 48) * 100 + (a[s + 3] - 48) * 10 + (a[s + 4] - 48)
                month = (a[s + 6] - 48) * 10 + (a[s + 7] - 48)
                mday = (a[s + 9] - 48) * 10 + (a[s + 10] - 48)
                hh = (a[s + 12] - 48) * 10 + (a[s + 13] - 48)
                mi = (a[s + 15] - 48) * 10 + (a[s + 16] - 48)
                ss = (a[s + 18] - 48) * 10 + (a[s + 19] - 48)
                if hh > 23 or mi > 59 or ss > 59 or month < 1 or month > 12 or mday < 1:
                    continue
                date = np.int64(year) * 10000 + month * 100 + mday
                if date != last_date:
                    leap = (year % 4 == 0 and year % 100 != 0) or year % 400 == 0
                    dim = 31
                    if month == 2:
                        dim = 29 if leap else 28
                    elif month == 4 or month == 6 or month == 9 or month == 11:
                        dim = 30
                    if mday > dim:
                        continue
                    # days from 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil)
                    y = np.int64(year) - (1 if month <= 2 else 0)
                    era = (y if y >= 0 else y - 399) // 400
                    yoe = y - era * 400
                    mp = (month + 9) % 12
                    doy = (153 * mp + 2) // 5 + mday - 1
                    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
                    last_day = era * 146097 + doe - 719468
                    last_date = date
                last_secs = last_day * 86400 + hh * 3600 + mi * 60 + ss
                last_ts = s
            us = 0
            p = s + 20
            if a[p] == 46:  # a fraction: 1-6 digits (more are left to the regex)
                p += 1
                scale = 100000
                while p < e and 48 <= a[p] <= 57 and p < s + 28:
                    us += (a[p] - 48) * scale
                    scale //= 10
                    p += 1
                if p == s + 21 or p > s + 27:
                    continue
            if p + 1 >= e or a[p] != 93 or a[p + 1] != 32:
                continue
            p += 2
            t = (last_secs * 1000000 + us) / 1e6
        head = p
        q = p  # host:pid:tid
        while q + 8 <= e:  # no space in the next 8 bytes: past them at once
            x = w[q] ^ SPACES
            if (x - ONES) & ~x & HIGHS != ZERO:
                break
            q += 8
        while q < e and a[q] != 32:
            q += 1
        p = q + 1
        if p < e and a[p] == 91:  # [dev]
            q = p
            while q < e and a[q] != 32:
                q += 1
            p = q + 1
        if p + 10 > e or w[p] != W_NCCL_INF or a[p + 8] != 79 or a[p + 9] != 32:  # "NCCL INFO "
            continue
        p += 10
        op = p
        q = p
        while q + 8 <= e:  # no space in the next 8 bytes: past them at once
            x = w[q] ^ SPACES
            if (x - ONES) & ~x & HIGHS != ZERO:
                break
            q += 8
        while q < e and a[q] != 32:
            q += 1
        p = q + 1
        if p + 8 > e or w[p] != W_OPCOUNT:
            continue
        middle = p  # where the op part ends, for now
        p += 8
        q = p  # opCount: 1-OPCOUNT_HEX hex digits
        bad = False
        while q < e and a[q] != 32:
            c = a[q]
            if not ((48 <= c <= 57) or (65 <= c <= 70) or (97 <= c <= 102)):
                bad = True
            q += 1
        if bad or q - p < 1 or q - p > OPCOUNT_HEX:
            continue
        p = q + 1
        for word in (W_SENDBUFF, W_RECVBUFF):
            if p + 9 > e or w[p] != word or a[p + 8] != 32:
                bad = True
                break
            p += 9
            q = p  # 1-BUF_MAX bytes, no whitespace (\t \n \v \f \r; spaces end the token)
            while q + 8 <= e:  # no space and no byte below 14 in the next 8 bytes: past them at once
                x = w[q]
                y = x ^ SPACES
                if ((y - ONES) & ~y & HIGHS) | ((x - LOW14) & ~x & HIGHS) != ZERO:
                    break
                q += 8
            while q < e and a[q] != 32:
                if 9 <= a[q] <= 13:
                    bad = True
                q += 1
            if bad or q - p < 1 or q - p > BUF_MAX:
                bad = True
                break
            p = q + 1
        if bad:
            continue
        if p + 8 > e or (w[p] & M6) != W_COUNT:
            continue
        p += 6
        q = p  # count: 1-COUNT_DIGITS decimal digits
        v = np.int64(0)
        while q < e and a[q] != 32:
            c = a[q]
            if c < 48 or c > 57:
                bad = True
            v = v * 10 + (c - 48)
            q += 1
        if bad or q - p < 1 or q - p > COUNT_DIGITS:
            continue
        p = q + 1
        span_s[1] = op
        span_n[1] = middle - op
        middle = p  # "datatype N op N root N ": six tokens, checked by MIDDLE_RE once per distinct value
        tokens = 6
        if p + 9 <= e and w[p] == W_DATATYPE and a[p + 8] == 32:  # the first, as nearly always: "datatype "
            p += 9
            tokens = 5
        for _ in range(tokens):
            q = p
            while q < e and a[q] != 32:
                q += 1
            p = q + 1
        comm = p  # "comm 0x.. [nranks=N]": three tokens, the last ends at a space or the line's end
        for _ in range(2):
            q = p
            while q + 8 <= e:  # no space in the next 8 bytes: past them at once
                x = w[q] ^ SPACES
                if (x - ONES) & ~x & HIGHS != ZERO:
                    break
                q += 8
            while q < e and a[q] != 32:
                q += 1
            p = q + 1
        if p >= e:
            continue
        q = p
        while q + 8 <= e:  # no space in the next 8 bytes: past them at once
            x = w[q] ^ SPACES
            if (x - ONES) & ~x & HIGHS != ZERO:
                break
            q += 8
        while q < e and a[q] != 32:
            q += 1
        span_s[0] = head  # host:pid:tid [dev] NCCL INFO
        span_n[0] = op - head
        span_s[2] = middle
        span_n[2] = comm - middle
        span_s[3] = comm
        span_n[3] = q - comm
        if span_n[0] > SPAN_MAX or span_n[1] > SPAN_MAX or span_n[2] > SPAN_MAX or span_n[3] > SPAN_MAX:
            continue
        # the usual case first: all four parts as the last line's (their lengths equal, and the bytes of head +
        # op and of middle + comm, each pair contiguous in both lines, compared as two runs): its codes again
        same = (prev_c[0] >= 0 and prev_c[1] >= 0 and prev_c[2] >= 0 and prev_c[3] >= 0
                and prev_n[0] == span_n[0] and prev_n[1] == span_n[1] and prev_n[2] == span_n[2]
                and prev_n[3] == span_n[3] and prev_s[1] == prev_s[0] + prev_n[0]
                and prev_s[3] == prev_s[2] + prev_n[2])
        k = 0
        while same and k < NPART:
            ps = span_s[k]
            q = prev_s[k]
            pn = span_n[k] + span_n[k + 1]
            i = 0
            while i + 8 <= pn:
                if w[ps + i] != w[q + i]:
                    same = False
                    break
                i += 8
            if same and i < pn:
                if pn >= 8:  # the last 8 bytes, overlapping the words compared
                    same = w[ps + pn - 8] == w[q + pn - 8]
                else:
                    while i < pn:
                        if a[ps + i] != a[q + i]:
                            same = False
                            break
                        i += 1
            k += 2
        if same:
            for j in range(NPART):
                code[j, r] = prev_c[j]
                prev_s[j] = span_s[j]
            count[r] = v
            ts[r] = t
            ok[r] = True
            continue
        # else a group for each part: the line before's when equal, else found or added in a hash table of
        # this block's distinct values; compares and the hash go 8 bytes at a time
        for j in range(NPART):
            ps = span_s[j]
            pn = span_n[j]
            cg = np.int32(-1)
            cand = prev_c[j] if prev_n[j] == pn else np.int32(-1)
            q = prev_s[j]
            hashed = False
            slot = np.int64(0)
            while True:
                if cand >= 0:
                    same = True
                    i = 0
                    while i + 8 <= pn:
                        if w[ps + i] != w[q + i]:
                            same = False
                            break
                        i += 8
                    if same:
                        while i < pn:
                            if a[ps + i] != a[q + i]:
                                same = False
                                break
                            i += 1
                    if same:
                        cg = cand
                        break
                if not hashed:
                    h = np.uint64(pn) * np.uint64(0x9E3779B97F4A7C15)
                    i = 0
                    while i + 8 <= pn:
                        h = (h ^ w[ps + i]) * np.uint64(0x100000001B3)
                        h ^= h >> np.uint64(29)
                        i += 8
                    while i < pn:
                        h = (h ^ np.uint64(a[ps + i])) * np.uint64(0x100000001B3)
                        i += 1
                    h ^= h >> np.uint64(32)
                    slot = np.int64(h & np.uint64(TABLE - 1))
                    hashed = True
                else:
                    slot = (slot + 1) & (TABLE - 1)
                g = table[j, slot]
                if g < 0:
                    if ngroups[j] < MAX_GROUPS:
                        g = np.int32(ngroups[j])
                        ngroups[j] += 1
                        rep_s[j, g] = ps
                        rep_n[j, g] = pn
                        table[j, slot] = g
                        cg = g
                    break
                cand = g if rep_n[j, g] == pn else np.int32(-1)
                q = rep_s[j, g]
            prev_s[j] = ps
            prev_n[j] = pn
            prev_c[j] = cg
            if cg < 0:
                break
            code[j, r] = cg
        if cg < 0:
            continue
        count[r] = v
        ts[r] = t
        ok[r] = True


_armed: list[Callable[..., None]] = []


def arm(note: Callable[[str], None] | None = None, build: bool = True) -> bool:
    """Load the compiled kernel in this process, so that ``scan_coll_block`` uses it from now on;
    False when it cannot be had or is switched off (``NCCLSCOPE_NO_JIT=1``). Worker processes forked
    afterwards inherit it.

    First choice, the module built ahead of time (``kernel_build``: about 1 ms to load, no numba in
    this process; built the first time, about 10 s, ``note`` is told). Failing that, numba's JIT in
    this process (0.35 s and 140 MB each time, 4 s the first). Failing that, False: the numpy reader.
    ``build=False``: the built module if it is there, nothing that takes time."""
    if _armed:
        return True
    if os.environ.get("NCCLSCOPE_NO_JIT", "") not in ("", "0"):
        return False
    for how in ((_built, _jit) if build else (_loaded,)):
        try:
            fn = how(note)
            if fn is not None:
                read_coll_columns_compiled(_WARM_UP, kernel=fn)  # it runs, and is loaded now, not mid-parse
                _armed.append(fn)
                return True
        except Exception:  # noqa: BLE001 - an optional accelerator that fails leaves the next one in charge
            continue
    return False


def _built(note: Callable[[str], None] | None) -> Callable[..., None] | None:
    from . import kernel_build as coll_build

    fn = coll_build.load()
    if fn is None and os.environ.get("NCCLSCOPE_KERNEL_BUILD", "1") != "0":
        folder = coll_build.build(note)
        fn = coll_build.load(folder) if folder is not None else None
    return fn


def _loaded(note: Callable[[str], None] | None) -> Callable[..., None] | None:
    from . import kernel_build as coll_build

    return coll_build.load()


def _jit(note: Callable[[str], None] | None) -> Callable[..., None] | None:
    import numba

    fn: Callable[..., None] = numba.njit(cache=True, nogil=True, boundscheck=False)(_kernel)
    return fn


def ready() -> Callable[..., None] | None:
    """The kernel when ``arm()`` has loaded it in this process, else None."""
    return _armed[0] if _armed else None


def disarm() -> None:
    """Back to the numpy reader in this process (tests compare the two)."""
    _armed.clear()


def read_coll_columns_compiled(block: bytes | memoryview, newlines: np.ndarray | None = None,
                               kernel: Callable[..., None] | None = None) -> CollColumns | None:
    """``columns.read_coll_columns`` by the compiled kernel (``kernel``, default the armed one)."""
    fn = kernel or ready()
    assert fn is not None, "coll_kernel.arm() first"
    if not block:
        return None
    a = np.frombuffer(block, dtype=np.uint8)
    nl = np.flatnonzero(a == 10) if newlines is None else newlines
    ends = nl if a[-1] == 10 else np.append(nl, len(a))
    starts = np.empty(len(ends), dtype=np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    n = len(starts)
    ok = np.zeros(n, dtype=np.bool_)
    count = np.empty(n, dtype=np.int64)
    ts = np.empty(n, dtype=np.float64)
    code = np.empty((NPART, n), dtype=np.int32)
    rep_s = np.empty((NPART, MAX_GROUPS), dtype=np.int64)
    rep_n = np.empty((NPART, MAX_GROUPS), dtype=np.int64)
    ngroups = np.zeros(NPART, dtype=np.int64)
    table = np.full((NPART, TABLE), -1, dtype=np.int32)
    words = np.ndarray(shape=(max(len(a) - 7, 0),), dtype="<u8", buffer=block, strides=(1,))
    fn(a, words, starts, ends.astype(np.int64, copy=False), ok, count, ts, code, rep_s, rep_n, ngroups, table)
    rows = np.flatnonzero(ok)
    if not len(rows):
        return None
    matches = [[rx.fullmatch(bytes(block[s:s + m])) for s, m in zip(rep_s[j, :ngroups[j]].tolist(),
                                                                     rep_n[j, :ngroups[j]].tolist())]
               for j, rx in enumerate(PARTS)]
    codes = code[:, rows]
    good = np.ones(len(rows), dtype=bool)
    for j, ms in enumerate(matches):
        if not all(ms):  # a distinct value its regex refused: its rows go (every value matched: nothing to gather)
            good &= np.array([m is not None for m in ms], dtype=bool)[codes[j]]
    if not good.all():
        rows, codes = rows[good], codes[:, good]
        if not len(rows):
            return None
    mh, mo, mm, mc = matches
    proc_names, proc = drop_unused(*sorted_codes([x.group(1) + b":" + x.group(2) if x else None for x in mh],
                                                 codes[0]))
    op_names, op = drop_unused(*sorted_codes([x.group(1) if x else None for x in mo], codes[1]))
    comm_names, comm = drop_unused(*sorted_codes([x.group(1) if x else None for x in mc], codes[3]))
    datatype = np.array([int(x.group(1)) if x else -1 for x in mm], dtype=np.int16)[codes[2]]
    return CollColumns(starts, rows, proc_names, proc, comm_names, comm, op_names, op, count[rows], datatype,
                       None, None, ts[rows])


_WARM_UP = (b"[2026-01-01 00:00:00.000001] h:1:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x2 "
            b"count 1 datatype 7 op 0 root 0 comm 0x3 [nranks=2] stream 0x4\n")
