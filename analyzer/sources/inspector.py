"""NCCL's Inspector profiler plugin (NCCL's repository, ``plugins/profiler/inspector``; ``ext-profiler/inspector``
up to 2.28): its JSON lines and its Prometheus textfiles, read into typed records.

The JSON file (``<host>-pid<pid>.log``, one per process) holds one object a line. Every version writes a
``header`` (the communicator: ``id`` = NCCL's commHash, ``comm_name`` from 4.2 on, this process's ``rank``,
``n_ranks``, ``nnodes``) and a ``metadata`` (``inspector_output_format_version``, ``git_rev``, ``rec_mechanism``,
``dump_timestamp_us``, ``hostname``, ``pid``) beside one payload:

- ``coll_perf`` (4.0): ``coll``, ``coll_sn``, ``coll_msg_size_bytes``, ``coll_exec_time_us``,
  ``coll_timing_source``, ``coll_algobw_gbs``, ``coll_busbw_gbs``; verbose output adds ``event_trace_sn`` /
  ``event_trace_ts`` (``coll_start_ts``, ``coll_stop_ts`` and per channel ``kernel_start_ts``,
  ``kernel_stop_ts``, ``kernel_record_ts``, µs since epoch); 4.2 adds ``coll_algo`` / ``coll_proto``, a 4.3
  branch ``coll_user_tag``; ``p2p_perf`` the same with ``p2p_`` names and ``p2p_peer``;
- ``dump_stats`` (4.1+): a marker per communicator per dump, the number of records that follow and the ring
  drops; in 4.3 (``DumpContext`` of the plugin's ``inspector_json_reader.py``; numbered 4.4 in a later
  branch) the records after it hold only their payload (``{"coll_perf": {...}}``) and inherit the
  marker's header and metadata, as many of each kind as the marker counted;
- ``proxy_trace`` (4.3+, ``NCCL_INSPECTOR_ENABLE_PROXY=1``): ``record_type`` ``proxy_op`` / ``proxy_step`` /
  ``proxy_op_start`` / ``proxy_op_segment``, ``parent_type`` / ``parent_sn``, ``channel_id``, ``peer``,
  ``direction``, step counts, ``trans_size_bytes``, and the phases' durations (``total_us``, ``gpu_produce_us``,
  ``peer_credit_us``, ``wire_us``, ``flush_us``, ``gpu_consume_us``; 4.3 gives their timestamps alone), nested
  step lists in ``steps``; an older 4.1 branch wrote ``proxy_op`` / ``proxy_step`` payloads and, in verbose
  collective records, ``events`` lists of ``KernelCh`` and ``ProxyOp`` entries with ``proxy_*`` names.

The Prometheus file (``NCCL_INSPECTOR_PROM_DUMP=1``) holds ``name{labels} value`` lines, aggregates of the last
interval. Untrusted input: a line is at most what ingest gives (64 KB), lists are read up to a bound, numbers
outside their range and strings past a length are dropped or cut, and a damaged line is counted, never raised.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..nccl.ops import canonical_op
from .records import (
    InspectorDumpStats,
    InspectorMetric,
    InspectorOp,
    InspectorProxy,
    InspectorTiming,
    ProxyRecordKind,
    Rec,
)

MAX_TEXT = 400  # a record's text (its evidence line) is its line, cut here
MAX_NAME = 200  # names and labels are cut here
MAX_LIST = 4096  # entries of a list read (channels: 64 at most in NCCL; nested proxy steps)
MAX_INT = 1 << 62  # counters and sequence numbers past this are damage (the model keeps int64)
MAX_RANKS = 1 << 24
MAX_US = 1e15  # a duration or a rate past this is damage (31 years in µs)
PAYLOADS = ("coll_perf", "p2p_perf", "proxy_trace", "proxy_op", "proxy_step", "proxy_ctrl")
MARKER_COUNTS = {"coll_perf": "coll_records", "p2p_perf": "p2p_records", "proxy_trace": "proxy_records"}
SEND_WAITS = ("gpu_produce_us", "peer_credit_us", "wire_us")
RECV_WAITS = ("wire_us", "flush_us", "gpu_consume_us")
# 4.3 wrote a step's phase timestamps alone: phase -> (start, stop) keys of event_trace_ts
PHASE_TS = {
    "total_us": ("proxy_step_start_ts", "proxy_step_stop_ts"),
    "gpu_produce_us": ("send_gpu_wait_ts", "send_peer_wait_ts"),
    "peer_credit_us": ("send_peer_wait_ts", "send_wait_ts"),
    "wire_us": ("send_wait_ts", "proxy_step_stop_ts"),
    "recv_wire_us": ("recv_wait_ts", "recv_flush_wait_ts"),
    "flush_us": ("recv_flush_wait_ts", "recv_gpu_wait_ts"),
    "gpu_consume_us": ("recv_gpu_wait_ts", "proxy_step_stop_ts"),
}
TIMINGS = {t.value: t for t in InspectorTiming}
PROXY_KINDS = {k.value: k for k in ProxyRecordKind}
OLD_PROXY_KINDS = {"ProxyOp": ProxyRecordKind.OP, "ProxyStep": ProxyRecordKind.STEP, "ProxyCtrl": ProxyRecordKind.CTRL}


def _int(v: Any, lo: int = 0, hi: int = MAX_INT) -> int | None:
    """An integer in [lo, hi) from untrusted JSON (an integral float too), else None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, float):
        if not math.isfinite(v) or v != int(v):
            return None
        v = int(v)
    return v if isinstance(v, int) and lo <= v < hi else None


def _num(v: Any, hi: float = MAX_US) -> float | None:
    """A finite non-negative number below ``hi``, else None."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) and 0 <= f < hi else None


def _str(v: Any) -> str | None:
    return v[:MAX_NAME] if isinstance(v, str) and v else None


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _list(v: Any) -> list[Any]:
    return v[:MAX_LIST] if isinstance(v, list) else []


def _ts(v: Any) -> int | None:
    """A host timestamp (µs since epoch); 0 is an event the plugin never saw."""
    t = _int(v, 1)
    return t


@dataclass(frozen=True, slots=True)
class Head:
    """What a record's ``header`` and ``metadata`` say (or the ``dump_stats`` marker's, for 4.3's records)."""

    host: str
    pid: int
    comm: str
    comm_name: str | None
    rank: int
    nranks: int
    nnodes: int | None
    version: str | None
    dump_us: int | None


def read_head(header: Any, metadata: Any) -> Head | None:
    """The communicator and process of a record; None when the header names no communicator and rank or the
    metadata no process (such a record is not the Inspector's, or is damaged)."""
    h, m = _dict(header), _dict(metadata)
    comm = _str(h.get("id"))
    rank, nranks = _int(h.get("rank"), 0, MAX_RANKS), _int(h.get("n_ranks"), 1, MAX_RANKS + 1)
    pid = _int(m.get("pid"), 0, 1 << 32)
    if comm is None or rank is None or nranks is None or pid is None or rank >= nranks:
        return None
    name = _str(h.get("comm_name"))
    return Head(host=_str(m.get("hostname")) or "", pid=pid, comm=comm.lower(),
                comm_name=None if name == "unknown" else name, rank=rank, nranks=nranks,
                nnodes=_int(h.get("nnodes"), 1, MAX_RANKS + 1), version=_str(m.get("inspector_output_format_version")),
                dump_us=_ts(m.get("dump_timestamp_us")))


@dataclass
class Marker:
    """The last ``dump_stats`` marker: its head, and how many records of each payload it said follow."""

    head: Head
    left: dict[str, int] = field(default_factory=dict)

    def take(self, key: str) -> Head | None:
        """The head for one 4.3 payload record of kind ``key``, while the marker's count lasts."""
        n = self.left.get(key, 0)
        if n <= 0:
            return None
        self.left[key] = n - 1
        return self.head


class InspectorReader:
    """Reads one Inspector JSON file's lines into records; ``skipped`` counts the lines that are not Inspector
    records (cut, damaged, another program's, a 4.3 payload no marker accounts for), ``first_skipped`` is the first
    of them (line, text). One reader a file: a marker's context never crosses files."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.skipped = 0
        self.first_skipped: tuple[int, str] | None = None
        self.marker: Marker | None = None

    def skip(self, lineno: int, text: str) -> None:
        if not self.skipped:
            self.first_skipped = (lineno, text[:MAX_TEXT])
        self.skipped += 1

    def read(self, lines: Iterable[tuple[int, str]]) -> Iterator[Rec]:
        for lineno, raw in lines:
            text = raw.strip()
            if not text:
                continue
            got = False
            for rec in self.read_line(lineno, text):
                got = True
                yield rec
            if not got:
                self.skip(lineno, text)

    def read_line(self, lineno: int, text: str) -> Iterator[Rec]:
        if not text.startswith("{"):
            return
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nesting deeper than the parser's stack
            return
        if not isinstance(obj, dict):
            return
        if "dump_stats" in obj:
            yield from self._marker(lineno, text, obj)
            return
        key = next((k for k in PAYLOADS if isinstance(obj.get(k), dict)), None)
        if key is None:
            return
        head = self._head_of(obj, key)
        if head is None:
            return
        yield from _payload(self.file, lineno, text[:MAX_TEXT], head, key, obj[key])

    def _head_of(self, obj: dict[str, Any], key: str) -> Head | None:
        if "header" in obj or "metadata" in obj:
            head = read_head(obj.get("header"), obj.get("metadata"))
            if head is not None and self.marker is not None and self.marker.head.comm == head.comm \
                    and self.marker.head.pid == head.pid:
                self.marker.take(key)  # 4.1-4.2: counted by the marker, self-contained all the same
            return head
        return self.marker.take(key) if self.marker is not None else None

    def _marker(self, lineno: int, text: str, obj: dict[str, Any]) -> Iterator[Rec]:
        head = read_head(obj.get("header"), obj.get("metadata"))
        stats = _dict(obj.get("dump_stats"))
        self.marker = None
        if head is None:
            return
        self.marker = Marker(head, {k: _int(stats.get(c)) or 0 for k, c in MARKER_COUNTS.items()})
        yield InspectorDumpStats(
            self.file, lineno, text[:MAX_TEXT], **_head_fields(head),
            coll_records=_int(stats.get("coll_records")) or 0,
            coll_dropped_total=_int(stats.get("coll_dropped_total")) or 0,
            coll_dropped_new=_int(stats.get("coll_dropped_since_last_dump")) or 0,
            p2p_records=_int(stats.get("p2p_records")) or 0,
            p2p_dropped_total=_int(stats.get("p2p_dropped_total")) or 0,
            p2p_dropped_new=_int(stats.get("p2p_dropped_since_last_dump")) or 0,
            proxy_records=_int(stats.get("proxy_records")),
            proxy_dropped_total=_int(stats.get("proxy_dropped_total")),
            proxy_dropped_new=_int(stats.get("proxy_dropped_since_last_dump")))


def _head_fields(head: Head) -> dict[str, Any]:
    return {"host": head.host, "pid": head.pid, "comm": head.comm, "comm_name": head.comm_name, "rank": head.rank,
            "nranks": head.nranks, "nnodes": head.nnodes, "version": head.version, "dump_us": head.dump_us}


def _payload(file: str, lineno: int, text: str, head: Head, key: str, body: dict[str, Any]) -> Iterator[Rec]:
    if key in ("coll_perf", "p2p_perf"):
        op = _op(file, lineno, text, head, key == "p2p_perf", body)
        if op is not None:
            yield op
        for ev in _list(body.get("events")):  # the older 4.1 branch: proxy events inside a verbose record
            if isinstance(ev, dict) and ev.get("event_type") in OLD_PROXY_KINDS:
                yield _old_proxy(file, lineno, text, head, ev, None if op is None else op.p2p,
                                 None if op is None else op.sn)
    elif key == "proxy_trace":
        proxy = _proxy(file, lineno, text, head, body)
        if proxy is not None:
            yield proxy
    else:  # the older branch's proxy_op / proxy_step / proxy_ctrl payloads
        yield _old_proxy(file, lineno, text, head, body, None, None)


def _op(file: str, lineno: int, text: str, head: Head, p2p: bool, body: dict[str, Any]) -> InspectorOp | None:
    """A ``coll_perf`` / ``p2p_perf`` body; None without a name, a sequence number and a size."""
    pre = "p2p" if p2p else "coll"
    name = _str(body.get(pre))
    sn = _int(body.get(f"{pre}_sn"))
    nbytes = _int(body.get(f"{pre}_msg_size_bytes"))
    exec_us = _num(body.get(f"{pre}_exec_time_us"))
    if name is None or sn is None or nbytes is None or exec_us is None:
        return None
    ts = _dict(body.get("event_trace_ts"))
    k_start, k_stop, channels = _kernel_span(ts.get("kernel_events"), body.get("events"))
    tag = body.get(f"{pre}_user_tag")
    return InspectorOp(
        file, lineno, text, **_head_fields(head), p2p=p2p, op=canonical_op(name), nccl_op=name, sn=sn,
        peer=_int(body.get("p2p_peer"), 0, MAX_RANKS) if p2p else None, nbytes=nbytes, exec_us=exec_us,
        timing=TIMINGS.get(str(body.get(f"{pre}_timing_source")), InspectorTiming.UNKNOWN),
        algbw_gbs=_num(body.get(f"{pre}_algobw_gbs")), busbw_gbs=_num(body.get(f"{pre}_busbw_gbs")),
        algo=_str(body.get(f"{pre}_algo")), proto=_str(body.get(f"{pre}_proto")),
        user_tag=_str(tag) if isinstance(tag, str) else (str(tag) if _int(tag) is not None else None),
        start_us=_ts(ts.get(f"{pre}_start_ts")), kernel_start_us=k_start, kernel_stop_us=k_stop, channels=channels)


def _kernel_span(kernel_events: Any, events: Any) -> tuple[int | None, int | None, int]:
    """(first channel start, last channel stop, channels) of a verbose record's ``kernel_events`` (4.0+), or of
    the older branch's ``events`` entries of type ``KernelCh``."""
    chans = [e for e in _list(kernel_events) if isinstance(e, dict)]
    chans += [_dict(e.get("event_trace_ts")) for e in _list(events) if isinstance(e, dict) and e.get("event_type") == "KernelCh"]
    starts = [t for t in (_ts(c.get("kernel_start_ts")) for c in chans) if t is not None]
    stops = [t for t in (_ts(c.get("kernel_stop_ts")) for c in chans) if t is not None]
    return (min(starts) if starts else None), (max(stops) if stops else None), len(chans)


def _proxy(file: str, lineno: int, text: str, head: Head, body: dict[str, Any]) -> InspectorProxy | None:
    """A ``proxy_trace`` body (4.3+): a ProxyOp's totals, a flat step, an Op start or a segment of nested steps."""
    kind = PROXY_KINDS.get(str(body.get("record_type")))
    if kind is None:
        return None
    send = {"send": True, "recv": False}.get(str(body.get("direction")))
    waits: dict[str, float] = {}
    nsteps = 0
    if kind is ProxyRecordKind.STEP:
        nsteps = _add_step(waits, body, send)
    for step in _list(body.get("steps")):
        if isinstance(step, dict):
            nsteps += _add_step(waits, step, send)
    ts = _dict(body.get("event_trace_ts"))
    start = _ts(ts.get("proxy_op_start_ts")) or _ts(ts.get("proxy_step_start_ts"))
    stop = _ts(ts.get("proxy_op_stop_ts")) or _ts(ts.get("proxy_step_stop_ts"))
    total = _num(body.get("total_us"))
    if total is None and start is not None and stop is not None and stop >= start and kind is ProxyRecordKind.OP:
        total = float(stop - start)  # 4.3 wrote the timestamps alone
    parent = str(body.get("parent_type"))
    return InspectorProxy(
        file, lineno, text, **_head_fields(head), kind=kind,
        proxy_rank=_int(body.get("rank"), 0, MAX_RANKS), channel=_int(body.get("channel_id"), 0, MAX_LIST),
        peer=_int(body.get("peer"), 0, MAX_RANKS), send=send,
        parent_p2p={"p2p": True, "coll": False}.get(parent), parent_sn=_int(body.get("parent_sn")),
        proxy_op_sn=_int(body.get("proxy_op_sn")), n_steps=_int(body.get("n_steps")),
        steps_completed=_int(body.get("n_steps_completed")), steps_dropped=_int(body.get("n_steps_dropped")),
        trans_bytes=_int(body.get("trans_size_bytes")), total_us=total, bw_gbs=_num(body.get("op_bw_gbs")),
        start_us=start, stop_us=stop, waits=waits, steps=nsteps)


def _add_step(waits: dict[str, float], step: dict[str, Any], send: bool | None) -> int:
    """Adds one step's phase durations to ``waits`` (written, or from its 4.3 timestamps); 1 when it had any."""
    names = SEND_WAITS if send else RECV_WAITS if send is False else SEND_WAITS + RECV_WAITS
    got = {k: v for k in names if (v := _num(step.get(k))) is not None}
    if not got:
        ts = _dict(step.get("event_trace_ts"))
        for k in names:
            a, b = PHASE_TS["recv_wire_us" if k == "wire_us" and send is False else k]
            t0, t1 = _ts(ts.get(a)), _ts(ts.get(b))
            if t0 is not None and t1 is not None and t1 >= t0:
                got[k] = float(t1 - t0)
    for k, v in got.items():
        waits[k] = waits.get(k, 0.0) + v
    return 1 if got else 0


def _old_proxy(file: str, lineno: int, text: str, head: Head, body: dict[str, Any], parent_p2p: bool | None,
               parent_sn: int | None) -> InspectorProxy:
    """The older 4.1 branch's proxy event (``event_type`` ProxyOp / ProxyStep / ProxyCtrl, ``proxy_*`` names)."""
    kind = OLD_PROXY_KINDS.get(str(body.get("event_type")), ProxyRecordKind.CTRL)
    start, stop = _ts(body.get("proxy_start_ts")), _ts(body.get("proxy_stop_ts"))
    steps = [s for s in _list(body.get("proxy_step_records")) if isinstance(s, dict)]
    send = {"Send": True, "Recv": False}.get(str(body.get("proxy_direction")))
    return InspectorProxy(
        file, lineno, text, **_head_fields(head), kind=kind, proxy_rank=_int(body.get("proxy_rank"), 0, MAX_RANKS),
        channel=_int(body.get("proxy_channel_id"), 0, MAX_LIST), peer=_int(body.get("proxy_peer"), 0, MAX_RANKS),
        send=send, parent_p2p=parent_p2p, parent_sn=parent_sn, proxy_op_sn=_int(body.get("proxy_id")),
        n_steps=_int(body.get("proxy_n_steps")), steps_completed=len(steps) if steps else None, steps_dropped=None,
        trans_bytes=_int(body.get("proxy_trans_size")), total_us=_num(body.get("proxy_duration_us")), bw_gbs=None,
        start_us=start, stop_us=stop,
        waits={"step_us": s} if (s := sum(_num(x.get("proxy_duration_us")) or 0.0 for x in steps)) else {},
        steps=len(steps))


def parse_inspector_lines(lines: Iterable[tuple[int, str]], file: str) -> Iterator[Rec]:
    """The records of one Inspector JSON file (``InspectorReader`` when the skipped lines matter)."""
    return InspectorReader(file).read(lines)


# --- Prometheus textfile ---------------------------------------------------------------------

PROM_RE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]{0,199})\{(?P<labels>[^{}]{0,4000})\}\s+(?P<value>\S{1,64})(?:\s+\d{1,20})?$")
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]{0,99})="((?:[^"\\]|\\.){0,500})"')
MAX_LABELS = 32


def parse_inspector_prom(lines: Iterable[tuple[int, str]], file: str) -> Iterator[Rec]:
    """``name{label="value",...} number`` lines (``# HELP`` / ``# TYPE`` comments and others skipped)."""
    for lineno, raw in lines:
        text = raw.strip()
        if not text.startswith("nccl_"):
            continue
        m = PROM_RE.match(text)
        if m is None:
            continue
        try:
            value = float(m.group("value"))
        except ValueError:
            continue
        if not math.isfinite(value):
            continue
        labels: dict[str, str] = {}
        for k, v in LABEL_RE.findall(m.group("labels")):
            if len(labels) >= MAX_LABELS:
                break
            labels[k] = v.replace('\\"', '"').replace("\\\\", "\\")[:MAX_NAME]
        yield InspectorMetric(file, lineno, text[:MAX_TEXT], m.group("name"), labels, value)


FIRST_KEY_RE = re.compile(rb'^\{\s*"(header|dump_stats|' + "|".join(PAYLOADS).encode() + rb')"\s*:')
VERSION_KEY = b'"inspector_output_format_version"'
PROM_HEAD_RE = re.compile(rb"^nccl_[a-z0-9_]{1,100}\{[a-z_]{1,40}=\"")


def looks_like_inspector(first: bytes, head: bytes) -> bool:
    """True when a file's first line is an Inspector record: it opens with one of the keys the plugin writes
    first, and (a header) the file's head names the format version, or it is a 4.3 payload or marker."""
    m = FIRST_KEY_RE.match(first)
    if m is None:
        return False
    return m.group(1) != b"header" or VERSION_KEY in head


def looks_like_inspector_prom(first: bytes) -> bool:
    """True when a file's first line is one of the Inspector's Prometheus metrics (``nccl_...{version="...``)."""
    return PROM_HEAD_RE.match(first) is not None
