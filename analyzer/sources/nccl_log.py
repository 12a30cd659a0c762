"""NCCL_DEBUG log lines, NCCL 2.10 to 2.30 (see docs/formats or shared reference).

A line is ``[TS]host:pid:tid [dev] NCCL INFO|WARN|CALL <msg>`` possibly behind a wrapper prefix
(``[rank0]:``, ``[default0]:``, ``[1,0]<stdout>:``, ``(pid=123)``), so the prefix regex searches
rather than anchors. Lines without ``NCCL `` are rejected by a substring test before any regex.
``parse_nccl_line`` is pure and handles one line; ``parse_nccl_lines`` streams a file.
"""
from __future__ import annotations

import calendar
import functools
import gc
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from ..nccl.dtypes import NCCL_DTYPES  # noqa: F401 - re-exported for the builders
from ..nccl.ops import NCCL_OPS
from . import coll_kernel
from .coll_columns import CollColumns, drop_unused, read_coll_columns
from .lines import NCCL_PREFIX_RE
from .records import (
    NcclBacktrace,
    NcclChannels,
    NcclColl,
    NcclCommInfo,
    NcclConnected,
    NcclConnection,
    NcclEnv,
    NcclInit,
    NcclInitTimings,
    NcclNet,
    NcclPattern,
    NcclRasLine,
    NcclRec,
    NcclRing,
    NcclRingOrder,
    NcclTree,
    NcclTrees,
    NcclTuning,
    NcclVersion,
    NcclWarn,
)

MAX_LINE = 64 * 1024  # longer lines are cut before matching: no regex sees a megabyte

PREFIX_RE = NCCL_PREFIX_RE  # the grammar of line heads and tool prefixes lives in lines.py
VERSION_RE = re.compile(r"NCCL version (?P<v>\d+\.\d+\.\d+)(?:\+cuda(?P<cuda>[\d.]+))?")

INIT_RE = re.compile(
    r"(?:\[Rank \d+\] )?(?:(?P<caller>nccl\w{1,64}) )?comm (?P<comm>0x[0-9a-fA-F]+|\(nil\)) rank (?P<rank>\d+) "
    r"nranks (?P<nranks>\d+) cudaDev (?P<dev>-?\d+)\b(?P<rest>.{0,600}?)- ?(?P<phase>Init START|Init COMPLETE|"
    r"Destroy COMPLETE|Abort COMPLETE|Abort START|Revoke START|Revoke COMPLETE)"
)
BUSID_RE = re.compile(r"busId (?P<bus>[0-9a-fA-F]+)")
COMMID_RE = re.compile(r"commId (?P<id>0x[0-9a-fA-F]+)")
PARENT_RE = re.compile(
    r"parent (?P<parent>0x[0-9a-fA-F]+|\(nil\))(?: (?:splitCount|childCount) (?P<count>\d+))?"
    r"(?: color (?P<color>-?\d+))?(?: key (?P<key>-?\d+))?"
)
COMMINFO_RE = re.compile(
    r"comm (?P<comm>0x[0-9a-fA-F]+) rank (?P<rank>\d+) nRanks (?P<nranks>\d+) nNodes (?P<nnodes>\d+) "
    r"localRanks (?P<lr>\d+) localRank (?P<l>\d+)"
)
ENV_RE = re.compile(r"^(?P<name>[A-Z][A-Z0-9_]{1,80}) set by environment to (?P<value>.*?)\.?$")
RING_ORDER_RE = re.compile(r"^Channel (?P<c>\d+)/(?P<n>\d+) :(?P<ranks>(?: +\d+)*)(?P<trunc> *\.\.\.)? *$")
RING_RE = re.compile(r"^Ring (?P<c>\d+) : (?P<prev>-?\d+) -> (?P<rank>\d+) -> (?P<next>-?\d+)$")
TREES_ITEM_RE = re.compile(r"\[(\d+)\] (-?\d+)/(-?\d+)/(-?\d+)->(\d+)->(-?\d+)")
TREE_RE = re.compile(r"^Tree (?P<c>\d+) : (?P<up>-?\d+) -> (?P<rank>\d+) -> (?P<downs>-?\d+(?:/-?\d+)*)")
CONN_RE = re.compile(
    r"^Channel (?P<c>\d+)(?:/(?P<ci>\d+))? : (?P<src>\d+)\[[0-9a-fA-Fx]+\] -> (?P<dst>\d+)\[[0-9a-fA-Fx]+\] "
    r"(?:\[(?P<dir>send|receive)\] )?via (?P<via>.+)$"  # greedy to the end: ".+?\s*$" is quadratic
)
RING_CONN_OLD_RE = re.compile(
    r"^Ring (?P<c>\d+) : (?P<src>\d+)\[[0-9a-fA-Fx]+\] -> (?P<dst>\d+)\[[0-9a-fA-Fx]+\] "
    r"(?:\[(?P<dir>send|receive)\] )?via (?P<via>.+)$"
)
COLLNET_RE = re.compile(r"^CollNet (?P<c>\d+)/(?P<ci>\d+) : (?P<rank>\d+) \[(?P<dir>send|receive)\] via (?P<via>\S+)")
PATTERN_RE = re.compile(
    r"^Pattern (?P<p>\d+), crossNic \d+, nChannels (?P<n>\d+), (?:bw|speed) (?P<a>[\d.]+)/(?P<b>[\d.]+), "
    r"type (?P<ti>\w+)/(?P<te>\w+)"
)
CHANNELS_RE = re.compile(r"^(?P<coll>\d+) coll channels, .*?(?<!\d)(?P<p2p>\d+) p2p channels, \d+ p2p channels per peer")
TUNING_NEW_RE = re.compile(r"^(?P<op>\w+): (?P<b>\d+) Bytes -> Algo (?P<algo>\w+) proto (?P<proto>\w+)")
TUNING_OLD_RE = re.compile(r"^(?P<b>\d+) Bytes -> Algo (?P<algo>\d+) proto (?P<proto>\d+) time")
TIMINGS_RE = re.compile(
    r"^Init timings(?: - \w+)?: rank (?P<rank>\d+) nranks (?P<nranks>\d+) total (?P<total>[\d.]+) \((?P<parts>[^)]*)\)"
)
COLL_RE = re.compile(
    r"^(?P<op>[A-Za-z]+): opCount (?P<opc>[0-9a-fA-F]+) sendbuff \S+ recvbuff \S+ count (?P<count>\d+) "
    r"datatype (?P<dt>\d+) op (?P<redop>\d+) root (?P<root>-?\d+) comm (?P<comm>0x[0-9a-fA-F]+|\(nil\)) "
    r"\[nranks=(?P<nranks>\d+)\]"
)
BACKTRACE_RE = re.compile(r"^(?P<src>[\w./-]+\.(?:cc|cu|h|cpp|c):\d+)(?: \(\w+\))? -> (?P<code>\d+)")
NET_USING_RE = re.compile(r"^NET/(?P<which>IB|Socket|[\w-]+) ?: ?Using (?P<v>.*)$")

def parse_ts(text: str | None) -> float | None:
    if not text:
        return None
    frac = 0.0
    base = text.replace("T", " ").replace("_", " ")
    if "." in base:
        base, f = base.split(".", 1)
        try:
            frac = float("0." + f)
        except ValueError:
            frac = 0.0
    whole = _whole_seconds(base)
    return None if whole is None else whole + frac


@functools.lru_cache(maxsize=4096)
def _whole_seconds(base: str) -> int | None:
    """Seconds since the epoch of ``YYYY-MM-DD HH:MM:SS``; cached, since a log's lines share a few
    thousand seconds and ``strptime`` costs tens of microseconds a call."""
    try:
        return calendar.timegm(time.strptime(base, "%Y-%m-%d %H:%M:%S"))
    except ValueError:
        return None


def parse_nccl_line(text: str, file: str = "", lineno: int = 0) -> NcclRec | None:
    """One NCCL log line to a record, or None for lines that carry nothing we model."""
    if "NCCL " not in text:
        return None
    if len(text) > MAX_LINE:
        text = text[:MAX_LINE]
    m = PREFIX_RE.search(text)
    if m is None:
        v = VERSION_RE.search(text)  # <=2.21 prints the version with a bare printf
        if v and text.lstrip().startswith("NCCL version"):
            return NcclVersion(file, lineno, text, "", 0, 0, None, v.group("v"), v.group("cuda"))
        return None
    ts_text, host, pid, tid, level = m.group("ts", "host", "pid", "tid", "level")
    msg = text[m.end():].rstrip("\r\n")
    base: Base = (file, lineno, text, host, int(pid), int(tid), parse_ts(ts_text))
    if level == "WARN":
        return NcclWarn(*base, m.group("src"), m.group("func"), msg.strip())
    if level != "INFO":
        return None
    return _parse_info(msg.strip(), base)


Base = tuple[str, int, str, str, int, int, "float | None"]  # file, line, text, host, pid, tid, ts


def _parse_info(msg: str, base: Base) -> NcclRec | None:  # noqa: C901 - one dispatch table
    c0 = msg[:1]
    # Most frequent first: COLL lines and connection lines.
    if "opCount" in msg:
        m = COLL_RE.match(msg)
        if m and (len(m.group("count")) > 18 or len(m.group("dt")) > 4 or len(m.group("redop")) > 6
                  or len(m.group("root")) > 11 or len(m.group("nranks")) > 9):
            return None  # numbers no NCCL prints (the model stores them in int64 / int16 columns)
        if m:
            op = m.group("op")
            return NcclColl(
                *base, NCCL_OPS.get(op, op.lower()), op, int(m.group("opc"), 16), int(m.group("count")),
                int(m.group("dt")), int(m.group("redop")), int(m.group("root")), m.group("comm"),
                int(m.group("nranks")),
            )
        return None
    if msg.startswith("Channel "):
        if " via " in msg:
            m = CONN_RE.match(msg)
            if m:
                return NcclConnection(
                    *base, int(m.group("c")), int(m.group("ci") or 0), int(m.group("src")), int(m.group("dst")),
                    m.group("dir"), _norm_via(m.group("via")),
                )
            return None
        m = RING_ORDER_RE.match(msg)
        if m:
            ranks = [int(x) for x in m.group("ranks").split()]
            return NcclRingOrder(*base, int(m.group("c")), int(m.group("n")), ranks, bool(m.group("trunc")))
        return None
    if msg.startswith("Ring "):
        m = RING_RE.match(msg)
        if m:
            return NcclRing(*base, int(m.group("c")), int(m.group("prev")), int(m.group("rank")), int(m.group("next")))
        m = RING_CONN_OLD_RE.match(msg)
        if m:
            return NcclConnection(
                *base, int(m.group("c")), 0, int(m.group("src")), int(m.group("dst")), m.group("dir"),
                _norm_via(m.group("via")),
            )
        return None
    if msg.startswith("Trees"):
        items = TREES_ITEM_RE.findall(msg)
        if items:
            rank = int(items[0][4])
            chans = [(int(c), (int(a), int(b), int(d)), int(up)) for c, a, b, d, _r, up in items]
            return NcclTrees(*base, rank, chans)
        return None
    if msg.startswith("Tree "):
        m = TREE_RE.match(msg)
        if m:
            downs = tuple(int(x) for x in m.group("downs").split("/"))
            return NcclTree(*base, int(m.group("c")), int(m.group("up")), int(m.group("rank")), downs)
        return None
    if " Init " in msg or "- Init" in msg or "COMPLETE" in msg or "Abort START" in msg or "Revoke" in msg:
        m = INIT_RE.search(msg)
        if m:
            rest = m.group("rest")
            bus = BUSID_RE.search(rest)
            cid = COMMID_RE.search(rest)
            par = PARENT_RE.search(rest)
            phase = m.group("phase")
            return NcclInit(
                *base, phase.replace("Init ", ""), m.group("caller"), m.group("comm"), int(m.group("rank")),
                int(m.group("nranks")), int(m.group("dev")), bus.group("bus") if bus else None,
                cid.group("id") if cid else None,
                par.group("parent") if par else None,
                int(par.group("count")) if par and par.group("count") else None,
                int(par.group("color")) if par and par.group("color") else None,
                int(par.group("key")) if par and par.group("key") else None,
            )
        if msg.startswith("Init timings"):
            return _timings(msg, base)
        return None
    if msg.startswith("Init timings"):
        return _timings(msg, base)
    if "set by environment to" in msg:
        m = ENV_RE.match(msg)
        if m:
            return NcclEnv(*base, m.group("name"), m.group("value").strip())
        return None
    if msg.startswith("NCCL version"):
        v = VERSION_RE.match(msg)
        if v:
            return NcclVersion(*base, v.group("v"), v.group("cuda"))
        return None
    if msg.startswith("comm ") and "nRanks" in msg:
        m = COMMINFO_RE.match(msg)
        if m:
            return NcclCommInfo(
                *base, m.group("comm"), int(m.group("rank")), int(m.group("nranks")), int(m.group("nnodes")),
                int(m.group("lr")), int(m.group("l")),
            )
        return None
    if msg.startswith("Using network "):
        return NcclNet(*base, "network", msg[len("Using network "):].strip())
    if msg.startswith("NET/"):
        if "No device found" in msg:
            return NcclNet(*base, "no_ib" if "IB" in msg else "no_device", msg)
        m = NET_USING_RE.match(msg)
        if m:
            return NcclNet(*base, m.group("which").lower(), m.group("v"))
        if "Plugin" in msg and ("Loaded" in msg or "No plugin" in msg):
            return NcclNet(*base, "plugin", msg)
        return None
    if "Defaulting to 10 Gbps" in msg:
        return NcclNet(*base, "speed_guess", msg)
    if msg.startswith("Pattern "):
        m = PATTERN_RE.match(msg)
        if m:
            return NcclPattern(
                *base, int(m.group("p")), int(m.group("n")), float(m.group("a")), float(m.group("b")),
                m.group("ti"), m.group("te"),
            )
        return None
    if "coll channels" in msg:
        m = CHANNELS_RE.match(msg)
        if m:
            return NcclChannels(*base, int(m.group("coll")), int(m.group("p2p")))
        return None
    if "Bytes -> Algo" in msg:
        m = TUNING_NEW_RE.match(msg)
        if m:
            return NcclTuning(*base, NCCL_OPS.get(m.group("op"), m.group("op").lower()), int(m.group("b")),
                              m.group("algo"), m.group("proto"))
        m = TUNING_OLD_RE.match(msg)
        if m:
            return NcclTuning(*base, None, int(m.group("b")), m.group("algo"), m.group("proto"))
        return None
    if " -> " in msg and c0.isalpha():
        m = BACKTRACE_RE.match(msg)
        if m:
            return NcclBacktrace(*base, m.group("src"), int(m.group("code")))
        return None
    if msg.startswith("Connected "):
        return NcclConnected(*base, msg[len("Connected "):].split(",")[0].replace("all ", "").strip())
    if msg.startswith("CollNet "):
        m = COLLNET_RE.match(msg)
        if m:
            r = int(m.group("rank"))
            return NcclConnection(*base, int(m.group("c")), int(m.group("ci")), r, r, m.group("dir"),
                                  _norm_via(m.group("via")))
        return None
    if msg.startswith("RAS ") and ("timeout" in msg or "DEAD" in msg):
        return NcclRasLine(*base, msg)
    return None


def _timings(msg: str, base: Base) -> NcclInitTimings | None:
    m = TIMINGS_RE.match(msg)
    if not m:
        return None
    parts: dict[str, float] = {}
    for item in m.group("parts").split(","):
        kv = item.strip().split(" ")
        if len(kv) == 2:
            try:
                parts[kv[0]] = float(kv[1])
            except ValueError:
                pass
    return NcclInitTimings(*base, int(m.group("rank")), int(m.group("nranks")), float(m.group("total")), parts)


def _norm_via(via: str) -> str:
    """``P2P/CUMEM/read`` -> ``P2P/CUMEM``; ``SHM/direct/direct`` -> ``SHM``; ``NET/IB/0/GDRDMA`` -> ``NET/IB``."""
    via = via.strip()
    if via.startswith("direct shared memory"):
        return "SHM"
    parts = via.split("/")
    head = parts[0]
    if head == "SHM":
        return "SHM"
    if head in ("P2P", "NET", "COLLNET") and len(parts) > 1:
        second = parts[1].split("(")[0]
        if head == "P2P" and second.startswith("direct"):
            second = "direct"
        return f"{head}/{second}"
    return head


def parse_nccl_lines(lines: Iterable[tuple[int, str]], file: str) -> Iterator[NcclRec]:
    """Stream records out of (line number, text) pairs."""
    for lineno, text in lines:
        if "NCCL " not in text:
            continue
        rec = parse_nccl_line(text, file, lineno)
        if rec is not None:
            yield rec


# --- bulk path for COLL lines -------------------------------------------------------------------
# A log of a long job is almost all COLL lines. ``scan_coll_block`` takes a block of whole lines
# and returns the COLL lines as columns (one regex pass in C over the block, no per-line Python
# objects that outlive the call) and every other line as (line number, text) for the line parser.
# A COLL line this pattern does not take (a wrapper prefix, an odd field) is handed back as an
# "other" line, so ``parse_nccl_line`` still sees it: the bulk path only ever narrows the work.

COLL_SCAN_RE = re.compile(
    rb"\n(?:(?:\[(\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:\.\d{1,9})?)\] ?)?"
    rb"([^\s:\[\]<>(),=]{1,255}):(\d{1,10}):\d{1,10} (?:\[\d{1,4}\] )?NCCL INFO "
    rb"([A-Za-z]{1,32}): opCount [0-9a-fA-F]{1,16} sendbuff \S{1,64} recvbuff \S{1,64} count (\d{1,18}) "
    rb"datatype (\d{1,4}) op \d{1,6} root -?\d{1,10} comm (0x[0-9a-fA-F]{1,16}|\(nil\)) \[nranks=\d{1,9}\][^\n]*"
    rb"|([^\n]*))"
)


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

    def release(self) -> None:
        """Drop the rows' arrays (the table has them now): the batch keeps its first line's fields only."""
        empty = np.zeros(0, np.int64)
        self.proc = self.comm = self.op = self.count = self.datatype = self.lines = empty
        self.tss = np.zeros(0, np.float64)

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


def _ts_column(raw: np.ndarray) -> np.ndarray:
    out = np.full(len(raw), np.nan)
    have = raw != b""
    if not have.any():
        return out
    sel = raw[have]
    vals = np.empty(len(sel))
    # numpy (2.x) crashes the process when a string -> datetime64 cast of more than a few thousand
    # bytes meets a bad value (an hour 25); small pieces raise ValueError instead
    for lo in range(0, len(sel), _TS_CHUNK):
        part = sel[lo:lo + _TS_CHUNK]
        try:
            vals[lo:lo + len(part)] = part.astype("datetime64[us]").astype(np.int64) / 1e6
        except ValueError:  # "_" between date and time, a bad field: each value alone, so that a
            vals[lo:lo + len(part)] = [_one_ts(x) for x in part.tolist()]  # value never depends on its neighbours
    out[have] = vals
    return out


def _one_ts(raw: bytes) -> float:
    try:
        return float(np.array([raw]).astype("datetime64[us]").astype(np.int64)[0] / 1e6)
    except ValueError:
        return parse_ts(raw.decode("utf-8", "replace")) or np.nan


_TS_CHUNK = 64


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
        tss = _ts_fast_matrix(c.ts_bytes)
    elif c.ts_list is not None:
        tss = _ts_fast(c.ts_list)
    else:
        tss = np.full(n, np.nan)
    p0 = procs[int(c.proc[0])]
    return NcclCollBatch(file, first_line + int(c.rows[0]), "", p0[0], p0[1], p0[1], None, procs, c.proc,
                         _decode(c.comm_names), c.comm, _decode(c.op_names), c.op.astype(np.int16), c.count,
                         c.datatype, tss, (c.rows + first_line).astype(np.int64))


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
        np.fromiter(map(int, dt), dtype=np.int16, count=len(idx)), _ts_fast(ts),
        line_numbers.astype(np.int64))
    return batch, others


def _small_codes(values: tuple[bytes, ...] | list[bytes]) -> tuple[list[bytes], np.ndarray]:
    """(distinct values sorted, int32 codes) of a column with few distinct values, without numpy strings."""
    uniq = sorted(set(values))
    if len(uniq) == 1:
        return uniq, np.zeros(len(values), dtype=np.int32)
    index = {v: i for i, v in enumerate(uniq)}
    return uniq, np.fromiter(map(index.__getitem__, values), dtype=np.int32, count=len(values))


_TS_DIGITS = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]


def _ts_fast(ts: tuple[bytes, ...] | list[bytes]) -> np.ndarray:
    """Timestamps as seconds since the epoch; ``YYYY-MM-DD HH:MM:SS[.f{1,6}]`` of one length, the usual
    case, is read as a byte matrix; anything else goes through ``_ts_column`` (same values either way)."""
    n = len(ts)
    width = len(ts[0])
    joined = b"".join(ts)
    if not (19 <= width <= 26 and width != 20 and len(joined) == n * width
            and all(len(x) == width for x in (ts[-1], ts[n // 2]))):
        return _ts_column(np.array(ts))
    lens = np.fromiter(map(len, ts), dtype=np.int32, count=n)
    if (lens != width).any():
        return _ts_column(np.array(ts))
    return _ts_fast_matrix(np.frombuffer(joined, dtype=np.uint8).reshape(n, width))


def _ts_fast_matrix(m: np.ndarray) -> np.ndarray:
    """``_ts_fast`` of timestamps given as a (rows, width) uint8 matrix."""
    n, width = m.shape
    if not (19 <= width <= 26 and width != 20):
        return _ts_column(m.copy().view(f"S{width}").ravel())
    d = m[:, _TS_DIGITS].astype(np.int64) - 48
    frac_digits = m[:, 20:].astype(np.int64) - 48 if width > 19 else np.zeros((n, 0), dtype=np.int64)
    seps_ok = ((m[:, 4] == 45) & (m[:, 7] == 45) & (m[:, 10] == 32) & (m[:, 13] == 58) & (m[:, 16] == 58)).all()
    if width > 19:
        seps_ok = seps_ok and bool((m[:, 19] == 46).all())
    rows = m.copy().view(f"S{width}").ravel
    if not seps_ok or ((d < 0) | (d > 9)).any() or ((frac_digits < 0) | (frac_digits > 9)).any():
        return _ts_column(rows())
    hh, mi, ss = d[:, 8] * 10 + d[:, 9], d[:, 10] * 10 + d[:, 11], d[:, 12] * 10 + d[:, 13]
    if (hh > 23).any() or (mi > 59).any() or (ss > 59).any():
        return _ts_column(rows())
    if (m[:, :10] == m[0, :10]).all():  # one day: the usual case, no sort
        dates, date_code = m[:1, :10].copy().view("S10").ravel(), np.zeros(n, dtype=np.int64)
    else:
        dates, date_code = np.unique(m[:, :10].copy().view("S10").ravel(), return_inverse=True)
    try:
        days = dates.astype("datetime64[D]").astype(np.int64)
    except ValueError:
        return _ts_column(rows())
    us = np.zeros(n, dtype=np.int64)
    for k in range(frac_digits.shape[1]):
        us += frac_digits[:, k] * 10 ** (5 - k)
    total = ((days[date_code.ravel()] * 86400 + hh * 3600 + mi * 60 + ss) * 1_000_000 + us)
    return total / 1e6
