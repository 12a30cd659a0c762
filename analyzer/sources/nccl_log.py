"""NCCL_DEBUG log lines of every release, 2.2 to 2.32 (forms read from NCCL's INFO / WARN format strings).

A line is ``[TS]host:pid:tid [dev] NCCL INFO|WARN|CALL <msg>`` possibly behind a wrapper prefix
(``[rank0]:``, ``[default0]:``, ``[1,0]<stdout>:``, ``(pid=123)``), so the prefix regex (lines.py)
searches rather than anchors. Heads it does not take are read by ``OTHER_HEAD_RE`` / ``HEADLESS_RE``:
2.2's lines without the ``NCCL`` word, an empty host, a line pasted without its head. Messages by
release: 2.3's ``comm 0x.. rank 0 nranks 4`` and ``Ring 00 :    0   1`` orders, 2.4's phaseless
``... cudaDev 0 nvmlDev 0`` Init, ``Channel 00 :`` orders and ``up->rank->downs`` trees, 2.4-2.6's
``Ring 00 : 3 -> 4 [send] via NET/IB/0`` hops, 2.5-2.8's dual trees, 2.7+'s ``Channel 00/02 :``,
2.18+'s commIds, 2.29+'s ``[Symmetric]`` tuning lines. The COLL line is defined in ``coll.grammar``.
Lines without ``NCCL `` (or 2.2's ``] INFO `` / `` WARN ``) are rejected by a substring test before
any regex. ``parse_nccl_line`` is pure and handles one line; ``parse_nccl_lines`` streams a file.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import fields

from ..nccl.ops import NCCL_OPS
from .coll.grammar import MESSAGE_23_RE
from .coll import MESSAGE_RE, NcclCollBatch, parse_ts, scan_coll_block, scan_coll_block_regex  # noqa: F401 - re-exported
from .lines import NCCL_PREFIX_RE, REDACTED_HEAD_RE, hidden_id, maybe_nccl, strip_tool_prefixes
from .nccl_diag import CUDA_DRIVER_HEAD, DIAG_MARK, parse_cuda_driver, parse_diag_line
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
    NcclLaunch,
    NcclNet,
    NcclPattern,
    NcclRasLine,
    NcclRec,
    NcclRing,
    NcclRingOrder,
    NcclServiceClosed,
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
    r"(?:\[Rank \d+\] )?(?:(?P<caller>nccl\w{1,64}) )?comm (?P<comm>0x[0-9a-fA-F]+|\(nil\)) rank (?P<rank>\d{1,12}) "
    r"nranks (?P<nranks>\d{1,12}) cudaDev (?P<dev>-?\d+)\b(?P<rest>.{0,600}?)- ?(?P<phase>Init START|Init COMPLETE|"
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
# Init lines without a phase: 2.3's "comm 0x.. rank 0 nranks 4" (printed as the communicator is made) and
# 2.4's "comm 0x.. rank 0 nranks 4 cudaDev 0 nvmlDev 0" (printed as its init starts)
INIT_BARE_RE = re.compile(
    r"^comm (?P<comm>0x[0-9a-fA-F]{1,16}) rank (?P<rank>\d{1,12}) nranks (?P<nranks>\d{1,12})"
    r"(?: cudaDev (?P<dev>-?\d{1,4})(?: nvmlDev -?\d{1,4})?(?: busId (?P<bus>[0-9a-fA-F]{1,16}))?)?$"
)
# heads the NCCL prefix grammar (lines.py) does not take: 2.2's lines without the NCCL word
# ("host:pid:tid [0] INFO ...", "host:pid:tid [0] include/socket.h:360 WARN ..."; the [dev] is then
# required, so that a logger's "10:20:30 INFO" is no NCCL line), an empty host (":41367:41367 [1]
# NCCL INFO ..."), and a line pasted without its head ("init.cc:1247 NCCL WARN ...", "NCCL INFO ...")
OTHER_HEAD_RE = re.compile(
    r"(?:\[(?P<ts>\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:\.\d+)?)\] ?)?"
    r"(?<![^\s:\[\]<>(),=])(?P<host>[^\s:\[\]<>(),=]{0,255}):(?P<pid>\d{1,10}):(?P<tid>\d{1,10}) "
    r"(?:(?:\[(?P<dev>\d{1,4})\] )(?:(?P<ms>\d+\.\d+) )?"
    r"(?:(?P<src>[\w./-]{1,200}:\d{1,6})(?: \((?P<func>[^()\s]{1,200})\))? )?(?:NCCL )?|(?:\[\d{1,4}\] )?(?:(?P<src2>[\w./-]{1,200}:\d{1,6}) )?NCCL )(?P<level>INFO|WARN)\b ?"
)
# a line whose head was cut short or dropped: NCCL's own "[TS] " kept by a collector that dropped host:pid:tid
# ("[2026-02-05 10:41:07] NCCL INFO ..."), a head cut inside its host or pid (":3905 [5] NCCL WARN ...",
# "7:3905 [5] ..."; the [dev] then required), or no head at all ("NCCL WARN ...", "init.cc:1247 NCCL WARN ...");
# NCCL 2.0's heads without the word ("INFO Using internal Network Socket", "WARN include/socket.h:185 ...")
# are the same shape with the "NCCL " left out (``bare``: read only when the message is NCCL's)
HEADLESS_RE = re.compile(
    r"^\s{0,8}(?:\[(?P<ts>\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:\.\d{1,9})?)\] ?)?(?:\d\d:\d\d:\d\d(?:[.,]\d{1,9})? )?"
    r"(?:(?:[^\s:\[\]<>(),=]{0,255}:)?(?:\d{1,10}:)?\d{1,10} (?=\[\d{1,4}\] ))?(?:\[\d{1,4}\] )?"
    r"(?:\d+\.\d+ )?(?:(?P<src>[\w./-]{1,200}\.(?:cc|cu|h|cpp|c):\d{1,6})(?: \((?P<func>[^()\s]{1,200})\))? )?"
    r"(?P<bare>NCCL )?(?P<level>INFO|WARN) (?:(?P<src3>[\w./-]{1,200}\.(?:cc|cu|h|cpp|c):\d{1,6}) )?"
)
ENV_RE = re.compile(r"^(?P<name>[A-Z][A-Z0-9_]{1,80}) set by environment to (?P<value>.*?)\.?$")
# the IB transport's own word for the HCAs it was told to use: "NCCL_IB_HCA set to mlx5_0,mlx5_1" (net_ib.cc)
ENV_SET_RE = re.compile(r"^(?P<name>NCCL_[A-Z0-9_]{1,80}) set to (?P<value>\S.{0,400}?)\.?$")
RING_ORDER_RE = re.compile(r"^Channel (?P<c>\d+)(?:/(?P<n>\d+))? :(?P<ranks>(?: +\d+)*)(?P<trunc> *\.\.\.)? *$")
RING_ORDER_OLD_RE = re.compile(r"^Ring (?P<c>\d+) :(?P<ranks>(?: +\d+)+)(?P<trunc> *\.\.\.)? *$")  # 2.3
RING_RE = re.compile(r"^Ring (?P<c>\d+) : (?P<prev>-?\d+) -> (?P<rank>\d+) -> (?P<next>-?\d+)$")
TREES_ITEM_RE = re.compile(r"\[(\d+)\] (-?\d+)/(-?\d+)/(-?\d+)->(\d+)->(-?\d+)")
TREES_OLD_ITEM_RE = re.compile(r"\[(\d+)\] (-?\d+)->(\d+)->(-?\d+)/(-?\d+)/(-?\d+)")  # 2.4: up->rank->downs
TREE_RE = re.compile(r"^Tree (?P<c>\d+) : (?P<up>-?\d+) -> (?P<rank>\d+) -> (?P<downs>-?\d+(?:/-?\d+)*)")
CONN_RE = re.compile(
    r"^Channel (?P<c>\d+)(?:/(?P<ci>\d+))? : (?P<src>\d+)(?:\[[0-9a-fA-Fx]+\])? -> (?P<dst>\d+)(?:\[[0-9a-fA-Fx]+\])? "
    r"(?:\[(?P<dir>send|receive)\] )?via (?P<via>.+)$"  # greedy to the end: ".+?\s*$" is quadratic
)
RING_CONN_OLD_RE = re.compile(
    r"^Ring (?P<c>\d+) : (?P<src>\d+)(?:\[[0-9a-fA-Fx]+\])? -> (?P<dst>\d+)(?:\[[0-9a-fA-Fx]+\])? "
    r"(?:\[(?P<dir>send|receive)\] )?via (?P<via>.+)$"
)
COLLNET_RE = re.compile(r"^CollNet (?P<c>\d+)/(?P<ci>\d+) : (?P<rank>\d+) \[(?P<dir>send|receive)\] via (?P<via>\S+)")
PATTERN_RE = re.compile(
    r"^Pattern (?P<p>\d+), crossNic \d+, nChannels (?P<n>\d+), (?:bw|speed) (?P<a>[\d.]+)/(?P<b>[\d.]+), "
    r"type (?P<ti>\w+)/(?P<te>\w+)"
)
CHANNELS_RE = re.compile(r"^(?P<coll>\d+) coll channels, .*?(?<!\d)(?P<p2p>\d+) p2p channels, \d+ p2p channels per peer")
TUNING_NEW_RE = re.compile(r"^(?P<op>\w+): (?P<b>\d+) Bytes -> Algo (?P<algo>\w+) proto (?P<proto>\w+)")
# 2.29+: a path instead of an algorithm, a kernel named without protocol suffix (or a copy engine call)
TUNING_PATH_RE = re.compile(
    r"^(?P<op>\w{1,40}) \[(?P<path>[\w ]{1,40})\]: (?P<b>\d{1,20}) Bytes -> (?:Kernel (?P<kernel>\w{1,200})|(?P<how>\S{1,200}))"
)
TUNING_OLD_RE = re.compile(r"^(?P<b>\d+) Bytes -> Algo (?P<algo>\d+) proto (?P<proto>\d+) time")
TIMINGS_RE = re.compile(
    r"^Init timings(?: - \w+)?: rank (?P<rank>\d+) nranks (?P<nranks>\d+) total (?P<total>[\d.]+) \((?P<parts>[^)]*)\)"
)
COLL_RE = MESSAGE_RE  # the COLL line has one definition: coll.grammar
COLL_OLD_RE = MESSAGE_23_RE  # 2.3's, without the op name
BACKTRACE_RE = re.compile(r"^(?P<src>[\w./-]+\.(?:cc|cu|h|cpp|c):\d+)(?: \(\w+\))? -> (?P<code>\d+)")
NET_USING_RE = re.compile(r"^NET/(?P<which>IB|Socket|[\w-]+) ?: ?Using (?P<v>.*)$")
CALL_RE = re.compile(r"^(nccl\w{2,40})\(")  # NCCL_DEBUG=TRACE's "NCCL CALL ncclAllReduce(0x7f.., ...)"
# the calls of NCCL_DEBUG=TRACE that launch work on the GPU (a collective or point-to-point), not set-up calls
LAUNCH_CALLS = frozenset({"ncclAllReduce", "ncclBroadcast", "ncclBcast", "ncclReduce", "ncclAllGather", "ncclReduceScatter",
                          "ncclSend", "ncclRecv", "ncclAllToAll", "ncclAlltoAll", "ncclGather", "ncclScatter"})


# The plain head nearly every line of a rank log has (``[TS] host:pid:tid [dev] NCCL INFO ``, the
# timestamp optional), anchored at the line's start, then optionally the whole of the two messages a
# rank prints most after COLL lines: ``Channel NN/MM : a[x] -> b[y] [dir] via P2P/...`` and ``Ring NN :
# a -> b -> c``. Where it matches, its groups are the ones ``PREFIX_RE.search`` and ``CONN_RE`` /
# ``RING_RE`` give (the host, pid, tid and device forms here are subsets of theirs, and an anchored
# match that succeeds at 0 is the search's leftmost one), so one match replaces three; a line it does
# not take goes the general way (``parse_nccl_line_regex``).
FAST_RE = re.compile(
    r"(?:\[(\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:\.\d{1,9})?)\] )?"
    r"([A-Za-z0-9_.-]{1,255}):(\d{1,10}):(\d{1,10}) \[\d{1,4}\] NCCL INFO "
    r"(?:Channel (\d{1,4})/(\d{1,4}) : (\d{1,9})\[[0-9a-fA-Fx]{1,20}\] -> (\d{1,9})\[[0-9a-fA-Fx]{1,20}\] "
    r"(?:\[(send|receive)\] )?via ([\w/]{1,100})\r?\n?\Z"
    r"|Ring (\d{1,4}) : (-?\d{1,9}) -> (\d{1,9}) -> (-?\d{1,9})\r?\n?\Z)?"
)
_TS_MEMO: dict[str, float | None] = {}  # timestamp text -> value: a rank's topology lines share a few
_VIA_MEMO: dict[str, str] = {}  # transport as printed -> as modelled
_NOTHING_MEMO: set[str] = set()  # INFO messages that gave no record ("cudaDriverVersion 12090", ...)
# INFO messages whose record holds plain values alone ("NCCL_IB_HCA set by environment to mlx5", "Pattern 4, ...",
# "Connected all rings"): the record's class and its values after the head (file, line, text, host, pid, tid, ts)
_RECORD_MEMO: dict[str, tuple[type[NcclRec], tuple[object, ...]]] = {}
_HEAD_FIELDS = 7
_PLAIN = (str, int, float, bool)
_MEMO_MAX = 4096  # entries each memo holds before it is emptied: nothing from the input sizes it
_MEMO_TEXT = 200  # longest message remembered (the memos' keys are short: at most 4,096 x 200 characters)


def parse_nccl_line(text: str, file: str = "", lineno: int = 0) -> NcclRec | None:
    """One NCCL log line to a record, or None for lines that carry nothing we model. Lines with the
    plain head are read by ``FAST_RE`` (same records; a ring or connection line in half the time), the rest by
    ``parse_nccl_line_regex``."""
    m = FAST_RE.match(text) if len(text) <= MAX_LINE and "opCount" not in text else None
    if m is None:
        return parse_nccl_line_regex(text, file, lineno)
    ts_text, host, pid, tid, c, ci, src, dst, direction, via, rc, prev, rank, nxt = m.groups()
    if ts_text is None:
        ts = None
    else:
        ts = _TS_MEMO.get(ts_text, -1.0)
        if ts == -1.0:
            if len(_TS_MEMO) >= _MEMO_MAX:
                _TS_MEMO.clear()
            ts = _TS_MEMO[ts_text] = parse_ts(ts_text)
    if c is not None:
        norm = _VIA_MEMO.get(via)
        if norm is None:
            if len(_VIA_MEMO) >= _MEMO_MAX:
                _VIA_MEMO.clear()
            norm = _VIA_MEMO[via] = _norm_via(via)
        return NcclConnection(file, lineno, text, host, int(pid), int(tid), ts, int(c), int(ci), int(src),
                              int(dst), direction, norm, "/GDRDMA" in via)
    if rc is not None:
        return NcclRing(file, lineno, text, host, int(pid), int(tid), ts, int(rc), int(prev), int(rank), int(nxt))
    msg = text[m.end():].rstrip("\r\n").strip()
    if msg in _NOTHING_MEMO:
        return None
    if "NCCL " in msg and PREFIX_RE.match(msg) is not None:  # another process's line glued behind this head
        return parse_nccl_line_regex(text, file, lineno)
    base: Base = (file, lineno, text, host, int(pid), int(tid), ts)
    known = _RECORD_MEMO.get(msg)
    if known is not None:
        return known[0](*base, *known[1])
    rec = _parse_info(msg, base)
    if len(msg) <= _MEMO_TEXT:  # what a message reads as depends on it alone: every rank prints these same few
        _remember(msg, rec)
    return rec


def _remember(msg: str, rec: NcclRec | None) -> None:
    """``msg``'s reading for the next line with it: nothing (``_NOTHING_MEMO``), or the record's class and its
    values after the head (``_RECORD_MEMO``) when those are all plain values (no list or dict shared between
    records)."""
    if rec is None:
        if len(_NOTHING_MEMO) >= _MEMO_MAX:
            _NOTHING_MEMO.clear()
        _NOTHING_MEMO.add(msg)
        return
    values = rec.__reduce__()[1][_HEAD_FIELDS:]
    if all(v is None or type(v) in _PLAIN for v in values):
        if len(_RECORD_MEMO) >= _MEMO_MAX:
            _RECORD_MEMO.clear()
        _RECORD_MEMO[msg] = (type(rec), values)


def parse_nccl_line_regex(text: str, file: str = "", lineno: int = 0) -> NcclRec | None:
    """``parse_nccl_line`` for any head: the prefix grammar searched, then the message dispatched."""
    if "NCCL " not in text:
        return _other_head(text, file, lineno) if maybe_nccl(text) else None
    if DIAG_MARK in text and (diag := parse_diag_line(text, file, lineno)) is not None:  # 2.31+ diagnostics
        return diag
    if len(text) > MAX_LINE:
        text = text[:MAX_LINE]
    m = PREFIX_RE.search(text)
    if m is not None and _clock(m):  # "2026-02-05 10:51:09 NCCL WARN ...": a clock, not host:pid:tid
        return _other_head(text, file, lineno)
    if m is None:
        v = VERSION_RE.search(text)  # <=2.21 prints the version with a bare printf
        if v and _bare_version(strip_tool_prefixes(text)[1].lstrip()):  # also behind "[1,0]<stdout>:"
            return NcclVersion(file, lineno, text, "", 0, 0, None, v.group("v"), v.group("cuda"))
        return _other_head(text, file, lineno)
    inner = PREFIX_RE.match(text, m.end()) if "NCCL " in text[m.end():m.end() + 300] else None
    if inner is not None:  # another process's whole line glued behind this one's head (two processes writing one
        # terminal): the inner line is whole, the outer one's message lands on a later line of its own
        m = inner
    ts_text, host, pid, tid, level = m.group("ts", "host", "pid", "tid", "level")
    msg = text[m.end():].rstrip("\r\n")
    base: Base = (file, lineno, text, host, int(pid), int(tid), parse_ts(ts_text))
    if level == "WARN":
        return NcclWarn(*base, m.group("src"), m.group("func"), msg.strip())
    if level == "CALL":  # NCCL_DEBUG=TRACE: an application call; one of a collective or point-to-point launches work
        c = CALL_RE.match(msg.strip())
        return NcclLaunch(*base, "launch", c.group(1)) if c is not None and c.group(1) in LAUNCH_CALLS else None
    if level != "INFO":
        return None
    return _parse_info(msg.strip(), base)


Base = tuple[str, int, str, str, int, int, "float | None"]  # file, line, text, host, pid, tid, ts

# pdsh's "<host>: " in front of the bare version line (DeepSpeed's multi-node runner), for a host name without a
# digit ("gx-a: "): the prefix grammar peels only names with one ("gpu003: "). A lower-case name, never a message's
# own word ("RuntimeError: ", "error: ", "warning: ")
PDSH_VERSION_RE = re.compile(r"(?!(?:error|warning|note|info|debug|fatal):)[a-z0-9][a-z0-9.-]{0,100}: NCCL version \d")


def _bare_version(body: str) -> bool:
    """Whether a line without an NCCL head is the bare version line (<= 2.21's printf), alone or behind a host name."""
    return body.startswith("NCCL version") or PDSH_VERSION_RE.match(body) is not None


def _other_head(text: str, file: str, lineno: int) -> NcclRec | None:
    """A line whose head is one of ``OTHER_HEAD_RE``'s or ``HEADLESS_RE``'s forms (no process when headless)."""
    if len(text) > MAX_LINE:
        text = text[:MAX_LINE]
    m = OTHER_HEAD_RE.search(text)
    if m is not None and (_clock(m) or (not m.group("host") and text[m.start() - 1:m.start()] in (">", "]"))):
        m = None  # a clock's HH:MM:SS, or an empty host right after a placeholder ("<hostname>:41:41 [0]")
    if m is not None:
        ts_text, host, pid, tid, level = m.group("ts", "host", "pid", "tid", "level")
        base: Base = (file, lineno, text, host, int(pid), int(tid), parse_ts(ts_text))
        src = m.group("src") or m.group("src2")
    elif (r := REDACTED_HEAD_RE.search(text)) is not None:  # host, pid or tid hidden by the poster
        ts_text, host, pid, tid, level = r.group("ts", "host", "pid", "tid", "level")
        dev = int(r.group("dev"))
        base = (file, lineno, text, host, hidden_id(pid, dev), hidden_id(tid, dev), parse_ts(ts_text))
        src, m = r.group("src"), r
    else:
        m = HEADLESS_RE.match(text)
        body = text
        if m is None:  # behind a tool's prefix or NCCL's own [dev] without its host:pid:tid ("[3] include/shm.h:28
            # NCCL WARN ...", "[1,0]<stdout>:[0] NCCL INFO ...": a log collector that cut the head)
            body = strip_tool_prefixes(text)[1]
            m = HEADLESS_RE.match(body) if body is not text else None
            if m is None:
                return None
        return _headless(m, text, body, file, lineno)
    msg = text[m.end():].rstrip("\r\n").strip()
    if level == "WARN":
        return NcclWarn(*base, src, m.groupdict().get("func"), msg)
    return _parse_info(msg, base)


def _headless(m: re.Match[str], text: str, body: str, file: str, lineno: int) -> NcclRec | None:
    """A ``HEADLESS_RE`` line: no process (host "", pid 0), so no rank but the one its message names. Without the
    word ``NCCL`` (2.0's heads) an INFO line is NCCL's only when its message is one modelled, a WARN only with a
    source of NCCL's tree beside it (2.0's ``WARN file.cc:N``, 2.1-2.2's ``misc/ibvwrap.cu:60 WARN`` with the head cut
    off), so that an application's ``INFO ...`` / ``WARN ...`` is left to its parser."""
    level, src = m.group("level"), m.group("src") or m.group("src3")
    bare = m.group("bare") is None
    if bare and level == "WARN" and src is None:
        return None
    base: Base = (file, lineno, text, "", 0, 0, parse_ts(m.group("ts")))
    msg = body[m.end():].rstrip("\r\n").strip()
    if level == "WARN":
        return NcclWarn(*base, src, m.group("func"), msg)
    return _parse_info(msg, base)


def _clock(m: re.Match[str]) -> bool:
    """Whether a ``host:pid:tid`` head is a clock's ``HH:MM:SS`` (a collector's ``2026-02-05 10:51:09 NCCL WARN``):
    three numbers of two digits at most and no ``[dev]``, which NCCL 2.1 and later always print."""
    host, pid, tid = m.group("host", "pid", "tid")
    return (m.group("dev") is None and len(host) <= 2 and host.isdigit() and len(pid) <= 2 and len(tid) <= 2
            and int(pid) < 60 and int(tid) < 61)


_NET_HEADS = ("Bootstrap : Using ", "Bootstrap: Using ", "NET : Using interface ", "CUDA Dev ", "Using network ", "NET/",
              "Using internal Network ", "Using external Network ", "Failed to open libibverbs")
SERVICE_CLOSED = "[Service thread] Connection closed by localRank "


def _parse_info(msg: str, base: Base) -> NcclRec | None:  # noqa: C901 - one dispatch table
    c0 = msg[:1]
    # Most frequent first: COLL lines and connection lines.
    if "opCount" in msg:
        m = COLL_RE.match(msg)  # its field limits are the numbers NCCL prints and the model's columns hold
        if m:
            op = m.group("op")
            return NcclColl(
                *base, NCCL_OPS.get(op, op.lower()), op, int(m.group("opc"), 16), int(m.group("count")),
                int(m.group("dt")), int(m.group("redop")), int(m.group("root")), m.group("comm"),
                int(m.group("nranks")),
            )
        m = COLL_OLD_RE.match(msg)
        if m:
            return NcclColl(
                *base, "unknown", "Unknown", int(m.group("opc"), 16), int(m.group("count")), int(m.group("dt")),
                int(m.group("redop")), int(m.group("root") or -1), m.group("comm"), int(m.group("nranks")),
            )
        return None
    if msg.startswith(("Channel ", "Ring ", "Trees", "Tree ")):
        return _parse_topology(msg, base)
    if c0 == "[" and "] Ring " in msg[:12]:  # 2.0-2.2's ring dump behind the printing rank: "[0] Ring 0 :    0   1"
        return _parse_topology(msg[msg.index("] Ring ") + 2:], base)
    if (" Init " in msg or "- Init" in msg or "COMPLETE" in msg or "Abort START" in msg or "Revoke" in msg
            or msg.startswith("Init timings")):
        return _parse_init(msg, base)
    if "set by environment to" in msg:
        m = ENV_RE.match(msg)
        return NcclEnv(*base, m.group("name"), m.group("value").strip()) if m else None
    if c0 == "N" and " set to " in msg and (m := ENV_SET_RE.match(msg)) is not None:
        return NcclEnv(*base, m.group("name"), m.group("value").strip())  # (any other line reads on)
    if msg.startswith("NCCL version"):
        v = VERSION_RE.match(msg)
        if v:
            return NcclVersion(*base, v.group("v"), v.group("cuda"))
        return None
    if msg.startswith("comm ") and " nranks " in msg:
        m = INIT_BARE_RE.match(msg)
        if m:
            dev = m.group("dev")
            return NcclInit(*base, "START" if dev is not None else "SEEN", None, m.group("comm"), int(m.group("rank")),
                            int(m.group("nranks")), int(dev) if dev is not None else None, m.group("bus"), None, None,
                            None, None, None)
        return None
    if msg.startswith("comm ") and "nRanks" in msg:
        m = COMMINFO_RE.match(msg)
        if m:
            return NcclCommInfo(
                *base, m.group("comm"), int(m.group("rank")), int(m.group("nranks")), int(m.group("nnodes")),
                int(m.group("lr")), int(m.group("l")),
            )
        return None
    if msg.startswith(_NET_HEADS) or "Defaulting to 10 Gbps" in msg:
        return _parse_net(msg, base)
    if msg.startswith("NVLS "):
        # NVLink SHARP set-up steps ("NVLS multicast support is available on dev 0", "NVLS comm 0x.. headRank ..",
        # "NVLS Bind mem ..", "NVLS tuning: nChannels 24"): where an init that never completes stopped
        return NcclNet(*base, "nvls", msg)
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
    if " Bytes -> " in msg:
        m = TUNING_NEW_RE.match(msg)
        if m:
            return NcclTuning(*base, NCCL_OPS.get(m.group("op"), m.group("op").lower()), int(m.group("b")),
                              m.group("algo"), m.group("proto"))
        m = TUNING_OLD_RE.match(msg)
        if m:
            return NcclTuning(*base, None, int(m.group("b")), m.group("algo"), m.group("proto"))
        m = TUNING_PATH_RE.match(msg)
        if m:  # algo: the path (Symmetric, Copy Engine, ...); proto: the kernel or call it ends in
            return NcclTuning(*base, NCCL_OPS.get(m.group("op"), m.group("op").lower()), int(m.group("b")),
                              m.group("path"), m.group("kernel") or m.group("how"))
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
    if msg.startswith("Launch mode "):  # 2.3-2.8: printed when the process launches its first collective
        return NcclLaunch(*base, "launch", msg[len("Launch mode "):].strip())
    if msg.startswith("RAS ") and ("timeout" in msg or "DEAD" in msg):
        return NcclRasLine(*base, msg)
    if c0 == "[" and msg.startswith(SERVICE_CLOSED):
        peer = msg[len(SERVICE_CLOSED):].strip()
        if 0 < len(peer) <= 8 and peer.lstrip("-").isdigit():
            return NcclServiceClosed(*base, "service_closed", peer, int(peer))
    if c0 == "c" and msg.startswith(CUDA_DRIVER_HEAD):  # 2.13.4+: the driver's CUDA version, compared across ranks
        return parse_cuda_driver(msg, base)
    return None


def _parse_init(msg: str, base: Base) -> NcclRec | None:
    """Init / Destroy / Abort / Revoke lines of a communicator, and Init timings."""
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
    return _timings(msg, base) if msg.startswith("Init timings") else None


def _parse_net(msg: str, base: Base) -> NcclRec | None:
    """Network lines: bootstrap and NET interfaces, the network in use, the plugin, speed guesses."""
    if msg.startswith(("Bootstrap : Using ", "Bootstrap: Using ")):
        return NcclNet(*base, "bootstrap", msg.split("Using ", 1)[1].strip())
    if msg.startswith("NET : Using interface "):  # 2.3
        return NcclNet(*base, "socket", msg[len("NET : Using interface "):].strip())
    if msg.startswith("CUDA Dev ") and "IP Interfaces : " in msg:  # 2.3
        return NcclNet(*base, "interfaces", msg.split("IP Interfaces : ", 1)[1].strip())
    if msg.startswith("Using network "):
        return NcclNet(*base, "network", msg[len("Using network "):].strip())
    if msg.startswith(("Using internal Network ", "Using external Network ")):  # 2.0-2.3's "Using internal Network
        # Socket" / "IB", "Using external Network <plugin>"
        return NcclNet(*base, "network", msg[len("Using internal Network "):].strip())
    if msg.startswith("Failed to open libibverbs"):  # INFO in recent releases (a WARN in old ones)
        return NcclNet(*base, "no_ib", msg)
    if msg.startswith("NET/"):
        if "GPU Direct RDMA " in msg and ("Disabled" in msg or "Enabled" in msg):  # "NET/IB : GPU Direct RDMA
            # Disabled for HCA 0 'mlx5_0' (no module)", "... Disabled for GPU 3d000 / HCA 0 (distance 5 > 4)"
            return NcclNet(*base, "gdr_disabled" if "Disabled" in msg else "gdr_enabled", msg)
        if "No device found" in msg:
            return NcclNet(*base, "no_ib" if "IB" in msg else "no_device", msg)
        m = NET_USING_RE.match(msg)
        if m:
            return NcclNet(*base, m.group("which").lower(), m.group("v"))
        if "Plugin" in msg and ("Loaded" in msg or "No plugin" in msg or "Could not find: " in msg):
            return NcclNet(*base, "plugin", msg)
        return None
    if "Defaulting to 10 Gbps" in msg:
        return NcclNet(*base, "speed_guess", msg)
    return None


def _parse_topology(msg: str, base: Base) -> NcclRec | None:
    """Channel, Ring, Trees and Tree lines: ring orders, connections, ring neighbours, trees."""
    if msg.startswith("Channel "):
        if " via " in msg:
            m = CONN_RE.match(msg)
            if m:
                return NcclConnection(
                    *base, int(m.group("c")), int(m.group("ci") or 0), int(m.group("src")), int(m.group("dst")),
                    m.group("dir"), _norm_via(m.group("via")), "/GDRDMA" in m.group("via"),
                )
            return None
        m = RING_ORDER_RE.match(msg)
        if m:
            ranks = [int(x) for x in m.group("ranks").split()]
            return NcclRingOrder(*base, int(m.group("c")), int(m.group("n") or 0), ranks, bool(m.group("trunc")))
        return None
    if msg.startswith("Ring "):
        m = RING_RE.match(msg)
        if m:
            return NcclRing(*base, int(m.group("c")), int(m.group("prev")), int(m.group("rank")), int(m.group("next")))
        m = RING_CONN_OLD_RE.match(msg)
        if m:
            return NcclConnection(
                *base, int(m.group("c")), 0, int(m.group("src")), int(m.group("dst")), m.group("dir"),
                _norm_via(m.group("via")), "/GDRDMA" in m.group("via"),
            )
        m = RING_ORDER_OLD_RE.match(msg)
        if m:
            return NcclRingOrder(*base, int(m.group("c")), 0, [int(x) for x in m.group("ranks").split()],
                                 bool(m.group("trunc")))
        return None
    if msg.startswith("Trees"):
        items = TREES_ITEM_RE.findall(msg)
        if items:
            rank = int(items[0][4])
            chans = [(int(c), (int(a), int(b), int(d)), int(up)) for c, a, b, d, _r, up in items]
            return NcclTrees(*base, rank, chans)
        old = TREES_OLD_ITEM_RE.findall(msg)
        if old:
            return NcclTrees(*base, int(old[0][2]), [(int(c), (int(a), int(b), int(d)), int(up))
                                                     for c, up, _r, a, b, d in old])
        return None
    if msg.startswith("Tree "):
        m = TREE_RE.match(msg)
        if m:
            downs = tuple(int(x) for x in m.group("downs").split("/"))
            return NcclTree(*base, int(m.group("c")), int(m.group("up")), int(m.group("rank")), downs)
        return None
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
    return NcclInitTimings(*base, "init_timings", msg, int(m.group("rank")), int(m.group("nranks")),
                           float(m.group("total")), parts)


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


def join_adds(first: str, joined: str) -> bool:
    """Whether joining a hard-wrapped line's pieces reads more NCCL than its first piece alone: the join parses,
    and the first piece gives no record (the wrap cut its message) or a record with other fields (a connection
    whose ``/GDRDMA`` was cut to ``/GDR``). A complete line followed by another process's or the application's
    short line ('... - Init COMPLETE' then 'Epoch 0 step 0 loss 2.5') reads the same either way: no join."""
    rec = parse_nccl_line(joined) if "NCCL " in joined or " WARN " in joined or "] INFO " in joined else None
    if rec is None:
        return False
    alone = parse_nccl_line(first)
    return alone is None or type(alone) is not type(rec) or _fields(alone) != _fields(rec)


def _fields(rec: NcclRec) -> tuple[object, ...]:
    """A record's values but its text (the line as read)."""
    return tuple(getattr(rec, f.name) for f in fields(rec) if f.name != "text")


def parse_nccl_lines(lines: Iterable[tuple[int, str]], file: str) -> Iterator[NcclRec]:
    """Stream records out of (line number, text) pairs."""
    for lineno, text in lines:
        if "NCCL " not in text:
            continue
        rec = parse_nccl_line(text, file, lineno)
        if rec is not None:
            yield rec
