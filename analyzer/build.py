"""Records -> one ``Run``: processes mapped to global ranks, communicators joined across
processes, a per-rank collectives table, per-rank process-group status, notable events.

Pure: takes the parsed files, returns the model. NCCL's ``[dev]`` is not the rank and opCount
may stay 0 for a whole NVLink run, so ranks come from Init lines and sequence numbers from a
per-(process, communicator) line counter.
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from .gc_pause import gc_paused
from .ingest import Parsed
from .model import (
    COLLECTIVE_COLUMNS,
    Communicator,
    Connection,
    Evidence,
    ExitRecord,
    Job,
    LogEvent,
    PgStatus,
    Process,
    Run,
    Setting,
)
from .sources.hook_jsonl import canonical_op
from .sources.nccl_log import NCCL_DTYPES, NCCL_OPS, NcclCollBatch
from .sources import records as R

STATE_ORDER = {"scheduled": 0, "started": 1, "completed": 2}
# PyTorch's C++ scalar-type names (Flight Recorder) -> the torch.dtype names the hook and NCCL rows use
DTYPE_NAMES = {
    "float": "float32", "half": "float16", "double": "float64", "long": "int64", "int": "int32",
    "char": "int8", "byte": "uint8", "short": "int16", "complexfloat": "complex64", "complexdouble": "complex128",
}


def canonical_dtype(name: object) -> str | None:
    if name is None or name != name:
        return None
    n = str(name).lower().removeprefix("torch.")
    return DTYPE_NAMES.get(n, n)


DTYPE_BYTES = {
    "float": 4, "float32": 4, "half": 2, "float16": 2, "bfloat16": 2, "double": 8, "float64": 8, "long": 8,
    "int64": 8, "int": 4, "int32": 4, "char": 1, "int8": 1, "byte": 1, "uint8": 1, "bool": 1, "short": 2,
    "int16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1,
}

ProcKey = tuple[str, int]  # (host, pid)
WRAP_RANK_RE = re.compile(r"^\[(?:rank|default)(\d+)\]:|^\[\d+,(\d+)\]<std")


def ev(rec: R.Rec) -> Evidence:
    return Evidence(rec.file, rec.line, rec.text.strip())


@dataclass
class _CommLocal:
    """One process's view of one communicator."""

    proc: ProcKey
    ptr: str
    rank: int
    nranks: int
    caller: str | None = None
    comm_id: str | None = None
    parent_ptr: str | None = None
    split_count: int | None = None
    color: int | None = None
    started: bool = False
    complete: bool = False
    nnodes: int | None = None
    nchannels: int | None = None
    ring_order: dict[int, list[int]] = field(default_factory=dict)
    ring_trunc: set[int] = field(default_factory=set)
    ring_next: dict[int, tuple[int, int, int]] = field(default_factory=dict)  # channel -> (prev, rank, next)
    trees: dict[int, int] = field(default_factory=dict)  # channel -> up
    connections: list[Connection] = field(default_factory=list)
    first_line: int = 0


def build_run(parsed: Iterable[Parsed], release: bool = False) -> Run:
    """The run's model from parsed files. ``release``: drop each COLL batch's arrays once they are in the
    collectives table (``nccl_coll_table``), for a caller that is done with ``parsed``."""
    with gc_paused():
        return _build_run(parsed, release)


def _build_run(parsed: Iterable[Parsed], release: bool) -> Run:  # noqa: C901 - one pass over the records
    parsed = list(parsed)
    files = [(p.file, p.fmt) for p in parsed]
    problems = [p.problem for p in parsed if p.problem]

    comms: dict[tuple[ProcKey, str], _CommLocal] = {}
    current: dict[ProcKey, _CommLocal] = {}
    nccl_versions: dict[ProcKey, str] = {}
    cuda_version: str | None = None
    proc_dev: dict[ProcKey, tuple[int | None, str | None]] = {}
    settings: dict[str, Setting] = {}
    coll_lines: list[R.NcclColl | NcclCollBatch] = []
    nccl_events: list[tuple[ProcKey, R.Rec]] = []
    torch_recs: list[R.TorchRec] = []
    launcher: list[R.LauncherExit] = []
    signals: list[R.LauncherSignal] = []
    frs: list[R.FrDump] = []
    completions: list[R.CompletionRec] = []
    hook: list[R.HookRec] = []
    ras: list[R.RasComm] = []
    tests: list[R.NcclTestsRow] = []
    exit_code: int | None = None
    proc_first_seen: dict[ProcKey, tuple[str, int]] = {}
    bare_versions: dict[str, list[str]] = defaultdict(list)  # file -> unprefixed "NCCL version" lines (<=2.21)
    wrapper_rank: dict[ProcKey, int] = {}  # from "[rank3]:" / "[default3]:" / mpirun "[1,3]<stdout>:" prefixes

    for p in parsed:
        for rec in p.records:
            if isinstance(rec, R.NcclRec):
                key = (rec.host, rec.pid)
                if rec.pid and key not in proc_first_seen:
                    proc_first_seen[key] = (rec.file, rec.line)
                    if bare_versions.get(rec.file):  # the bare version line printed just before by this process
                        nccl_versions.setdefault(key, bare_versions[rec.file].pop(0))
                    wm = WRAP_RANK_RE.match(rec.text)
                    if wm:
                        wrapper_rank[key] = int(wm.group(1) or wm.group(2))
                if isinstance(rec, NcclCollBatch):
                    coll_lines.append(rec)
                    _batch_current(rec, comms, current, proc_first_seen)
                elif isinstance(rec, R.NcclColl):
                    coll_lines.append(rec)
                    cl = comms.get((key, rec.comm))
                    if cl is not None:
                        current[key] = cl
                elif isinstance(rec, R.NcclConnection):
                    cl = current.get(key)
                    if cl is not None:
                        cl.connections.append(Connection(rec.channel, rec.src, rec.dst, rec.transport, rec.conn_index))
                elif isinstance(rec, R.NcclInit):
                    cl = comms.get((key, rec.comm))
                    if cl is None:
                        cl = _CommLocal(key, rec.comm, rec.rank, rec.nranks, first_line=rec.line)
                        comms[(key, rec.comm)] = cl
                    cl.caller = cl.caller or rec.caller
                    cl.comm_id = cl.comm_id or rec.comm_id
                    if rec.parent and rec.parent != "(nil)":
                        cl.parent_ptr = rec.parent
                        cl.split_count = rec.split_count
                        cl.color = rec.color
                    if rec.phase == "START":
                        cl.started = True
                    elif rec.phase == "COMPLETE":
                        cl.started = cl.complete = True
                    current[key] = cl
                    if rec.cuda_dev is not None:
                        proc_dev.setdefault(key, (rec.cuda_dev, rec.bus_id))
                elif isinstance(rec, R.NcclCommInfo):
                    cl = comms.get((key, rec.comm))
                    if cl is None:
                        cl = _CommLocal(key, rec.comm, rec.rank, rec.nranks, first_line=rec.line)
                        comms[(key, rec.comm)] = cl
                    cl.nnodes = rec.nnodes
                    current[key] = cl
                elif isinstance(rec, R.NcclRingOrder):
                    cl = current.get(key)
                    if cl is not None:
                        cl.nchannels = rec.nchannels
                        cl.ring_order[rec.channel] = rec.ranks
                        if rec.truncated:
                            cl.ring_trunc.add(rec.channel)
                elif isinstance(rec, R.NcclRing):
                    cl = current.get(key)
                    if cl is not None:
                        cl.ring_next[rec.channel] = (rec.prev, rec.rank, rec.next)
                elif isinstance(rec, R.NcclTrees):
                    cl = current.get(key)
                    if cl is not None:
                        for ch, _downs, up in rec.channels:
                            cl.trees[ch] = up
                elif isinstance(rec, R.NcclChannels):
                    cl = current.get(key)
                    if cl is not None and cl.nchannels is None:
                        cl.nchannels = rec.coll
                elif isinstance(rec, R.NcclVersion):
                    if rec.pid:
                        nccl_versions[key] = rec.version
                    else:
                        nccl_versions.setdefault(("", 0), rec.version)
                        bare_versions[rec.file].append(rec.version)
                    cuda_version = cuda_version or rec.cuda
                elif isinstance(rec, R.NcclEnv):
                    # NCCL's own "set by environment" line is the proof that NCCL saw the setting
                    if rec.name not in settings or settings[rec.name].source != "nccl-log":
                        settings[rec.name] = Setting(rec.name, rec.value, "nccl-log", ev(rec))
                elif isinstance(rec, (R.NcclWarn, R.NcclBacktrace, R.NcclRasLine, R.NcclNet)):
                    nccl_events.append((key, rec))
            elif isinstance(rec, R.LauncherExit):
                launcher.append(rec)
            elif isinstance(rec, R.LauncherSignal):
                signals.append(rec)
            elif isinstance(rec, R.TorchRec):
                torch_recs.append(rec)
            elif isinstance(rec, R.FrDump):
                frs.append(rec)
            elif isinstance(rec, R.CompletionRec):
                completions.append(rec)
            elif isinstance(rec, R.HookRec):
                hook.append(rec)
            elif isinstance(rec, R.RasComm):
                ras.append(rec)
            elif isinstance(rec, R.NcclTestsRow):
                tests.append(rec)
            elif isinstance(rec, R.EnvSetting):
                settings.setdefault(rec.name, Setting(rec.name, rec.value, "env-file", ev(rec)))
            elif isinstance(rec, R.ExitCode):
                exit_code = rec.code
    # the records live on in the lists above; emptying our copy of the list lets the COLL batches go
    # as soon as the table has them (when the caller kept no reference to the parsed files)
    parsed.clear()
    p = None  # type: ignore[assignment]

    # --- processes and global ranks ------------------------------------------------------------
    proc_rank: dict[ProcKey, int] = {}
    by_proc: dict[ProcKey, list[_CommLocal]] = defaultdict(list)
    for cl in comms.values():
        by_proc[cl.proc].append(cl)
    top_nranks = max((cl.nranks for cl in comms.values() if cl.parent_ptr is None), default=0)
    for key, cls in by_proc.items():
        roots = sorted((c for c in cls if c.parent_ptr is None and c.nranks == top_nranks), key=lambda c: c.first_line)
        if roots:
            proc_rank[key] = roots[0].rank
    hook_world = None
    hook_versions: dict[str, str] = {}
    for h in hook:
        if h.type == "start" and isinstance(h.rank, int):
            host = str(h.data.get("host", ""))
            pid = h.data.get("pid")
            if isinstance(pid, int):
                for key in list(proc_first_seen) + [(host, pid)]:
                    if key[1] == pid and (not host or key[0] == host or key[0] in host or host in key[0]):
                        proc_rank.setdefault(key, h.rank)
            if isinstance(h.data.get("world"), int):
                hook_world = h.data["world"]
            for k in ("torch", "nccl", "cuda"):
                if h.data.get(k):
                    hook_versions.setdefault(k, str(h.data[k]))
            for k, v in (h.data.get("env") or {}).items():
                if isinstance(v, str):
                    settings.setdefault(k, Setting(k, v, "wrapper", ev(h)))
    for key, r in wrapper_rank.items():
        proc_rank.setdefault(key, r)
    pid_rank_launcher = {le.pid: le.rank for le in launcher if le.pid is not None and le.rank is not None}
    for key in proc_first_seen:
        if key not in proc_rank and key[1] in pid_rank_launcher:
            proc_rank[key] = pid_rank_launcher[key[1]]  # type: ignore[assignment]

    world = top_nranks or None
    for fr in frs:
        for cfg in fr.pg_config.values():
            if isinstance(cfg, dict) and str(cfg.get("desc")) == "default_pg":
                n = _count_ranks(cfg.get("ranks"))
                if n and (world is None or n > world):
                    world = n
    world = world or hook_world
    if world is None:
        ranks_seen = [le.rank for le in launcher if le.rank is not None] + [
            f.rank for f in frs if f.rank is not None] + [c.rank for c in completions if c.rank is not None]
        if ranks_seen:
            world = max(ranks_seen) + 1

    # --- communicators ---------------------------------------------------------------------------
    ident: dict[tuple[ProcKey, str], str] = {}
    for (key, ptr), cl in sorted(comms.items(), key=lambda kv: kv[1].first_line):
        if cl.comm_id:
            ident[(key, ptr)] = cl.comm_id
    for _ in range(4):  # splits of splits
        for (key, ptr), cl in comms.items():
            if (key, ptr) in ident or not cl.parent_ptr:
                continue
            parent = ident.get((key, cl.parent_ptr))
            if parent:
                ident[(key, ptr)] = f"{parent}/split{cl.split_count if cl.split_count is not None else ''}:{cl.color}"
    for (key, ptr), cl in comms.items():
        ident.setdefault((key, ptr), f"{key[0]}:{key[1]}:{ptr}")

    groups: dict[str, list[_CommLocal]] = defaultdict(list)
    for comm_key, cl in comms.items():
        groups[ident[comm_key]].append(cl)
    communicators: list[Communicator] = []
    for cid, members in groups.items():
        nranks = max(m.nranks for m in members)
        rank_map = {m.rank: proc_rank.get(m.proc, m.rank) for m in members}
        channels = max((m.nchannels or 0 for m in members), default=0) or None
        rings = _build_rings(members, nranks)
        if channels is None and rings:
            channels = len(rings)
        trees: dict[int, dict[int, int]] = defaultdict(dict)
        for m in members:
            for ch, up in m.trees.items():
                trees[ch][m.rank] = up
        conns = tuple(c for m in members for c in m.connections)
        first = min(members, key=lambda m: m.first_line)
        parent_id = None
        if first.parent_ptr:
            parent_id = ident.get((first.proc, first.parent_ptr))
        communicators.append(Communicator(
            id=cid, nranks=nranks, members=rank_map, parent=parent_id, color=first.color, caller=first.caller,
            n_channels=channels, rings=rings, trees=dict(trees), connections=conns,
            init_complete=frozenset(m.rank for m in members if m.complete),
            init_started=frozenset(m.rank for m in members if m.started),
            nnodes=max((m.nnodes or 0 for m in members), default=0) or None,
        ))
    communicators.sort(key=lambda c: (c.parent is not None, c.id))

    # --- collectives table -------------------------------------------------------------------------
    cols: dict[str, list[Any]] = {c: [] for c in COLLECTIVE_COLUMNS}

    def add(**kw: Any) -> None:
        for c in COLLECTIVE_COLUMNS:
            cols[c].append(kw.get(c))

    pg_status: list[PgStatus] = []
    fr_best: dict[int | None, R.FrDump] = {}
    for fr in frs:
        if fr.rank is None:
            continue
        prev = fr_best.get(fr.rank)
        if prev is None or _fr_weight(fr) > _fr_weight(prev):
            fr_best[fr.rank] = fr
    nccl_torch_version = None
    for rank, fr in fr_best.items():
        assert rank is not None
        nccl_torch_version = nccl_torch_version or fr.comm_lib_version
        pgid_name: dict[str, str] = {}
        for e in fr.entries:
            pgname = _pg_name(e.get("process_group"))
            if e.get("pg_id") is not None and pgname is not None:
                pgid_name[str(e["pg_id"])] = pgname
            seq_key = "p2p_seq_id" if e.get("is_p2p") else "collective_seq_id"
            seq = e.get(seq_key)
            if seq is None:
                continue
            sizes = e.get("input_sizes") or []
            dtypes = e.get("input_dtypes") or []
            count = _numel(sizes)
            dt = canonical_dtype(dtypes[0]) if dtypes else None
            dur = e.get("duration_ms")
            add(rank=rank, pg=(pgname or str(e.get("pg_id"))) + (":p2p" if e.get("is_p2p") else ""), seq=int(seq),
                op=canonical_op(str(e.get("profiling_name") or "")), count=count, dtype=dt,
                bytes=count * DTYPE_BYTES.get(dt or "", 0) if count is not None else None,
                state=str(e.get("state") or "unknown"), t_created=_ns(e.get("time_created_ns")),
                t_started=_ns(e.get("time_discovered_started_ns")), t_completed=_ns(e.get("time_discovered_completed_ns")),
                duration_ms=float(dur) if isinstance(dur, (int, float)) else None, source="fr", file=fr.file, line=0,
                where=_frames_where(e.get("frames"), e.get("thread_name")))
        for pgid, st in fr.pg_status.items():
            name = pgid_name.get(pgid, pgid)
            pg_status.append(PgStatus(rank, name, st["last_enqueued"], st["last_started"], st["last_completed"], "fr",
                                      None, Evidence(fr.file, 0, f"pg_status[{pgid}] = {st}")))
    for c in completions:
        add(rank=c.rank if c.rank is not None else -1, pg="0", seq=c.seq, op=c.op, count=None, dtype=None, bytes=None,
            state="completed", t_created=None, t_started=c.t_started, t_completed=c.t_finished,
            duration_ms=c.active_ms, source="completion_hook", file=c.file, line=c.line, where=None)
    stacks: dict[int, str] = {}
    hb_rows: list[dict[str, Any]] = []
    hook_done: dict[tuple[int, str, int], tuple[float | None, float | None]] = {}
    last_hb: dict[tuple[int, str], R.HookRec] = {}
    for h in hook:
        d = h.data
        if h.type == "done" and isinstance(h.rank, int):
            seq = _seq(d.get("seq", -1))
            if seq is not None:
                hook_done[(h.rank, str(d.get("pg", "0")), seq)] = (d.get("t"), d.get("dur_ms"))
    for h in hook:
        d = h.data
        if not isinstance(h.rank, int):
            continue
        if h.type == "coll":
            seq = _seq(d.get("seq", -1))
            if seq is None:
                continue
            pg = str(d.get("pg", "0"))
            done = hook_done.get((h.rank, pg, seq))
            add(rank=h.rank, pg=pg, seq=seq, op=canonical_op(str(d.get("op", ""))), count=d.get("numel"),
                dtype=canonical_dtype(d.get("dtype")), bytes=d.get("bytes"), state="completed" if done else "scheduled",
                t_created=d.get("t"), t_started=None, t_completed=done[0] if done else None,
                duration_ms=done[1] if done else None, source="hook", file=h.file, line=h.line, where=d.get("where"))
        elif h.type == "hb":
            for pg, st in (d.get("pgs") or {}).items():
                if isinstance(st, dict):
                    hb_rows.append({"rank": h.rank, "pg": str(pg), "t": d.get("t"), "enq": st.get("enq"),
                                    "start": st.get("start"), "done": st.get("done")})
            last_hb[(h.rank, "")] = h  # any heartbeat: the rank was alive then
            for pg, st in (d.get("pgs") or {}).items():
                if isinstance(st, dict):
                    last_hb[(h.rank, str(pg))] = h
        elif h.type == "stack" and d.get("where"):
            stacks[h.rank] = str(d["where"])
    collectives = pd.DataFrame(cols, columns=COLLECTIVE_COLUMNS)
    if len(collectives):
        collectives["rank"] = collectives["rank"].fillna(-1).astype("int64")
        collectives["seq"] = collectives["seq"].astype("int64")
        for col in ("t_created", "t_started", "t_completed", "duration_ms"):
            collectives[col] = pd.to_numeric(collectives[col], errors="coerce")
        collectives["bytes"] = pd.to_numeric(collectives["bytes"], errors="coerce")
        collectives["count"] = pd.to_numeric(collectives["count"], errors="coerce")
        for col in ("pg", "op", "state", "source", "dtype", "file"):
            collectives[col] = collectives[col].astype("category")
    for (rank, pg), h in last_hb.items():
        hb_st = (h.data.get("pgs") or {}).get(pg) if pg else None
        if isinstance(hb_st, dict):
            pg_status.append(PgStatus(rank, pg, _opt_int(hb_st.get("enq")), _opt_int(hb_st.get("start")),
                                      _opt_int(hb_st.get("done")), "hook", h.data.get("t"), ev(h)))
    # NCCL COLL lines: per (process, communicator) counter as the sequence number
    nccl_table = nccl_coll_table(coll_lines, proc_rank, ident, consume=True, release=release)
    if nccl_table is not None:
        collectives = _concat_tables(collectives, nccl_table) if len(collectives) else nccl_table
    heartbeats = pd.DataFrame(hb_rows) if hb_rows else None

    # --- events -----------------------------------------------------------------------------------------
    events: list[LogEvent] = []
    for key, rec in nccl_events:
        rank = proc_rank.get(key)
        if isinstance(rec, R.NcclWarn):
            events.append(LogEvent("nccl_warn", rank, rec.message, ev(rec), rec.ts, {"source": rec.source}))
        elif isinstance(rec, R.NcclBacktrace):
            events.append(LogEvent("nccl_backtrace", rank, f"{rec.source} -> {rec.code}", ev(rec), rec.ts,
                                   {"code": rec.code}))
        elif isinstance(rec, R.NcclRasLine):
            events.append(LogEvent("nccl_ras", rank, rec.message, ev(rec), rec.ts))
        elif isinstance(rec, R.NcclNet):
            events.append(LogEvent("nccl_net_" + rec.kind, rank, rec.value, ev(rec), rec.ts))
    for rec in torch_recs:
        kind = type(rec).__name__
        data: dict[str, Any] = {}
        if isinstance(rec, R.WatchdogTimeout):
            kind, data = "watchdog_timeout", {"seq": rec.seq, "op": canonical_op(rec.op), "pg": rec.pg,
                                              "timeout_ms": rec.timeout_ms, "numel": rec.numel_in}
        elif isinstance(rec, R.WatchdogFailure):
            kind, data = "watchdog_failure", {"seq": rec.seq, "pg": rec.pg}
            if rec.rank is not None:
                pg_status.append(PgStatus(rec.rank, rec.pg or "0", rec.last_enqueued, rec.last_started,
                                          rec.last_completed, "watchdog", None, ev(rec)))
        elif isinstance(rec, R.DumpSignal):
            kind, data = "dump_signal", {"from_rank": rec.from_rank, "pg": rec.pg}
            if rec.rank is not None:
                pg_status.append(PgStatus(rec.rank, rec.pg or "0", rec.last_enqueued, None, rec.last_completed,
                                          "dump_signal", None, ev(rec)))
        elif isinstance(rec, R.DistError):
            kind, data = "dist_error", {"type": rec.exc_type, "message": rec.message, "last_error": rec.last_error,
                                        "frames": rec.frames}
        elif isinstance(rec, R.DesyncReport):
            kind, data = "desync_report", {"lagging": rec.lagging_ranks, "seq": rec.seq, "op": rec.op}
        elif isinstance(rec, R.CollectiveMismatch):
            kind, data = "collective_mismatch", {"ranks": rec.ranks, "fingerprints": rec.fingerprints}
        elif isinstance(rec, R.MonitoredBarrierFailure):
            kind, data = "barrier_failure", {"failed": rec.failed_ranks}
        elif isinstance(rec, R.HeartbeatTimeout):
            kind = "heartbeat_timeout"
        events.append(LogEvent(kind, rec.rank, rec.text.strip(), ev(rec), None, data))
    for h in hook:
        if h.type == "stack" and h.data.get("reason") == "stall" and isinstance(h.rank, int):
            events.append(LogEvent("hook_stall", h.rank, f"rank {h.rank} made no progress; at {h.data.get('where')}",
                                   ev(h), h.data.get("t"), {"where": h.data.get("where")}))
        if h.type in ("error", "exit", "stall", "desync") and isinstance(h.rank, int):
            events.append(LogEvent("hook_" + h.type, h.rank, str(h.data.get("message", h.data))[:500], ev(h),
                                   h.data.get("t"), dict(h.data)))
    events.sort(key=lambda e: (e.evidence.file, e.evidence.line))

    # --- exits -----------------------------------------------------------------------------------------
    exits: list[ExitRecord] = []
    seen_exit: set[tuple[int | None, int | None, bool]] = set()
    for le in launcher:
        rank = le.rank
        if rank is None and le.pid is not None:
            rank = next((r for (h, pid), r in proc_rank.items() if pid == le.pid), None)
        exit_key = (rank, le.exitcode, le.root_cause)
        if exit_key in seen_exit:
            continue
        seen_exit.add(exit_key)
        sig = None
        if le.traceback and "Signal" in le.traceback:
            sig = le.traceback.split("(", 1)[-1].split(")", 1)[0] if "(" in le.traceback else le.traceback
        exits.append(ExitRecord(rank, le.exitcode, le.pid, le.host, sig, le.root_cause, le.time, ev(le)))
    killed = {s.pid for s in signals}
    for h in hook:
        if h.type == "exit" and isinstance(h.rank, int) and isinstance(h.data.get("code"), int):
            exits.append(ExitRecord(h.rank, h.data["code"], h.data.get("pid"), h.data.get("host"), None, False,
                                    None, ev(h)))

    # --- job ---------------------------------------------------------------------------------------------
    processes = []
    hosts = sorted({k[0] for k in proc_first_seen if k[0]})
    for key in sorted(proc_first_seen, key=lambda k: (proc_rank.get(k, 1 << 30), k)):
        dev, bus = proc_dev.get(key, (None, None))
        processes.append(Process(key[0], key[1], proc_rank.get(key), dev, bus))
    versions = sorted(set(nccl_versions.values()))
    nccl_version = None
    if versions:
        nccl_version = max(versions, key=lambda v: list(nccl_versions.values()).count(v))
    nccl_version = nccl_version or (nccl_torch_version if nccl_torch_version and nccl_torch_version[0].isdigit()
                                    else None) or hook_versions.get("nccl")
    job = Job(
        world_size=world, hosts=tuple(hosts), processes=tuple(processes), nccl_version=nccl_version,
        torch_version=hook_versions.get("torch"), cuda_version=cuda_version or hook_versions.get("cuda"),
        settings=settings, nccl_versions={k[1]: v for k, v in nccl_versions.items() if k[1]}, exit_code=exit_code,
    )
    run = Run(job=job, communicators=communicators, collectives=collectives, pg_status=pg_status, events=events,
              exits=exits, ras=[_ras_dict(r) for r in ras], stacks=stacks, files=files, problems=problems,
              heartbeats=heartbeats,
              nccl_tests=[{"test": t.test, "nranks": t.nranks, "size": t.size, "count": t.count, "dtype": t.dtype,
                           "time_us": t.time_us, "algbw": t.algbw, "busbw": t.busbw, "in_place": t.in_place,
                           "file": t.file, "line": t.line} for t in tests],
              killed_pids=killed)
    return run


def _opt_int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _ras_dict(r: R.RasComm) -> dict[str, Any]:
    return {"comm": r.comm_hash, "errors": r.errors, "counts": r.counts, "launched": r.launched_up_to,
            "missing": r.missing_ranks, "file": r.file, "line": r.line, "text": r.text}


def _build_rings(members: list[_CommLocal], nranks: int) -> dict[int, tuple[int, ...]]:
    rings: dict[int, tuple[int, ...]] = {}
    nxt: dict[int, dict[int, int]] = defaultdict(dict)
    for m in members:
        for ch, (_prev, rank, n) in m.ring_next.items():
            nxt[ch][rank] = n
    for ch, succ in nxt.items():
        if len(succ) == nranks:
            order = [0]
            seen = {0}
            while len(order) < nranks:
                nxt_rank = succ.get(order[-1])
                if nxt_rank is None or nxt_rank in seen:
                    break
                order.append(nxt_rank)
                seen.add(nxt_rank)
            if len(order) == nranks:
                rings[ch] = tuple(order)
    for m in members:
        for ch, order in m.ring_order.items():
            if ch not in rings and ch not in m.ring_trunc and len(order) == nranks:
                rings[ch] = tuple(order)
    return dict(sorted(rings.items()))


def _fr_weight(fr: R.FrDump) -> tuple[int, int, int]:
    done = sum(1 for e in fr.entries if e.get("state") == "completed")
    return (len(fr.entries), done, 1 if fr.fmt == "pickle" else 0)


def _pg_name(pg: Any) -> str | None:
    if isinstance(pg, (list, tuple)) and pg:
        return str(pg[0])
    if isinstance(pg, str):
        return pg
    return None


def _count_ranks(ranks: Any) -> int | None:
    if isinstance(ranks, (list, tuple)):
        return len(ranks)
    if isinstance(ranks, str):
        inner = ranks.strip("[]() ")
        return len([x for x in inner.split(",") if x.strip()]) if inner else None
    return None


def _seq(v: Any) -> int | None:
    """A sequence number from untrusted JSON: an int within int64, else None."""
    try:
        i = int(v)
    except (TypeError, ValueError, OverflowError):
        return None
    return i if -(1 << 62) < i < (1 << 62) else None


def _numel(sizes: Any) -> int | None:
    if not isinstance(sizes, (list, tuple)) or not sizes:
        return None
    total = 0
    try:
        for s in sizes:
            if isinstance(s, (list, tuple)):
                total += math.prod(int(x) for x in s) if s else 1
    except (TypeError, ValueError, OverflowError):  # a dump with non-numbers in its shapes
        return None
    return total if 0 <= total < (1 << 53) else None


def _ns(v: Any) -> float | None:
    if isinstance(v, (int, float)) and v > 0:
        return v / 1e9
    return None


def _frames_where(frames: Any, thread: Any = None) -> str | None:
    if not isinstance(frames, list):
        frames = []
    if not frames and isinstance(thread, str) and thread.startswith("pt_autograd"):
        return f"DDP gradient-bucket all-reduce from the autograd thread ({thread})"
    for f in frames:
        if isinstance(f, dict):
            fn = str(f.get("filename", ""))
            if "torch/" in fn or fn.startswith("<") or "ncclscope_hook" in fn or "analyzer/hook/" in fn:
                continue
            return f"{fn.rsplit('/', 1)[-1]}:{f.get('line')} in {f.get('name')}"
    if isinstance(thread, str) and thread.startswith("pt_autograd"):
        return f"DDP gradient-bucket all-reduce from the autograd thread ({thread})"
    return None


# --- NCCL COLL rows, columnar -------------------------------------------------------------------------


def _batch_current(b: NcclCollBatch, comms: dict, current: dict, first_seen: dict) -> None:
    """What a run of COLL lines leaves behind: each process's current communicator is the one of its last line."""
    for code, proc in enumerate(b.procs):
        if len(b.procs) == 1:
            last, first = len(b) - 1, 0
        else:
            rows = np.flatnonzero(b.proc == code)
            if not len(rows):
                continue
            first, last = int(rows[0]), int(rows[-1])
        if proc[1] and proc not in first_seen:
            first_seen[proc] = (b.file, int(b.lines[first]))
        cl = comms.get((proc, b.comms[int(b.comm[last])]))
        if cl is not None:
            current[proc] = cl


def _small_factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(values, sort=True)`` for small non-negative ints (NCCL datatypes): a bincount, no hash."""
    if len(values) and values.min() >= 0 and values.max() < 1 << 16:
        present = np.flatnonzero(np.bincount(values))
        lookup = np.zeros(int(present[-1]) + 1, dtype=np.int32)
        lookup[present] = np.arange(len(present))
        return lookup[values], present
    return pd.factorize(values, sort=True)


def _cumcount(codes: np.ndarray, ngroups: int) -> np.ndarray:
    """1, 2, 3, ... within each code, in row order. Each process's rows of a communicator are
    nearly always one contiguous run (one file per process): then it is arange minus the run's
    start, O(n); otherwise pandas' groupby."""
    n = len(codes)
    if not n:
        return np.zeros(0, dtype=np.int64)
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(codes[1:], codes[:-1], out=change[1:])
    heads = np.flatnonzero(change)
    if len(heads) == ngroups:  # every group is one run
        lengths = np.diff(heads, append=n)
        if len(heads) * 64 > n:  # short runs: vectorised (two temporaries of n)
            return np.arange(1, n + 1, dtype=np.int64) - np.repeat(heads, lengths)
        base = np.arange(1, int(lengths.max()) + 1, dtype=np.int64)  # long runs: each a slice of one arange
        out = np.empty(n, dtype=np.int64)
        for h, m in zip(heads.tolist(), lengths.tolist()):
            out[h:h + m] = base[:m]
        return out
    return pd.Series(codes).groupby(codes, sort=False).cumcount().to_numpy() + 1


def nccl_coll_table(items: list[R.NcclColl | NcclCollBatch], proc_rank: dict[ProcKey, int],
                    ident: dict[tuple[ProcKey, str], str], consume: bool = False,
                    release: bool = False) -> pd.DataFrame | None:
    """COLL lines (single records and column batches, in file order) -> collectives rows, vectorised.

    seq is a per-(process, communicator pointer) counter over all files in order; pg is
    ``nccl:<commId>`` when the communicator was joined, else the pointer. The columns are filled
    in place, batch by batch. ``consume``: empty ``items`` once its columns are joined.
    ``release``: also drop each batch's arrays once copied (``NcclCollBatch.release``), so that the
    parsed batches and the table never coexist whole (330 MB less at the peak at 9 M rows); for
    callers that own the parsed records and use them no further. The frame is built from its
    columns without a copy into consolidated blocks.
    """
    if not items:
        return None
    procs: dict[ProcKey, int] = {}
    comms: dict[str, int] = {}
    ops: dict[str, int] = {}
    files: dict[str, int] = {}
    n = sum(len(it) if isinstance(it, NcclCollBatch) else 1 for it in items)
    col: dict[str, np.ndarray] = {
        "proc": np.empty(n, np.int32), "comm": np.empty(n, np.int32), "op": np.empty(n, np.int32),
        "count": np.empty(n, np.int64), "dt": np.empty(n, np.int32), "ts": np.empty(n, np.float64),
        "line": np.empty(n, np.int64), "file": np.empty(n, np.int32)}
    single: list[R.NcclColl] = []
    pos = 0

    def code(d: dict, k: Any) -> int:
        return d.setdefault(k, len(d))

    def flush() -> None:
        nonlocal pos
        if not single:
            return
        at = slice(pos, pos + len(single))
        col["proc"][at] = [code(procs, (r.host, r.pid)) for r in single]
        col["comm"][at] = [code(comms, r.comm) for r in single]
        col["op"][at] = [code(ops, r.nccl_op) for r in single]
        col["count"][at] = [r.count for r in single]
        col["dt"][at] = [r.datatype for r in single]
        col["ts"][at] = [np.nan if r.ts is None else r.ts for r in single]
        col["line"][at] = [r.line for r in single]
        col["file"][at] = [code(files, r.file) for r in single]
        pos += len(single)
        single.clear()

    for it in items:
        if isinstance(it, NcclCollBatch):
            flush()
            at = slice(pos, pos + len(it))
            col["proc"][at] = np.array([code(procs, p) for p in it.procs], dtype=np.int32)[it.proc]
            col["comm"][at] = np.array([code(comms, c) for c in it.comms], dtype=np.int32)[it.comm]
            col["op"][at] = np.array([code(ops, o) for o in it.ops], dtype=np.int32)[it.op]
            col["count"][at] = it.count
            col["dt"][at] = it.datatype
            col["ts"][at] = it.tss
            col["line"][at] = it.lines
            col["file"][at] = code(files, it.file)
            pos += len(it)
            if release:
                it.release()
        else:
            single.append(it)
    flush()
    del single
    if consume:
        items.clear()
    n = len(col["line"])
    proc_list = list(procs)
    comm_list = list(comms)
    key = col["proc"].astype(np.int64) * len(comm_list) + col["comm"]
    pair_codes, pair_uniq = pd.factorize(key, sort=False)
    del key
    seq = _cumcount(pair_codes, len(pair_uniq))
    # pg label per (process, comm) pair; many pairs share a label (one communicator, many ranks)
    labels: dict[str, int] = {}
    pair_label = np.array([code(labels, "nccl:" + ident.get((proc_list[int(k) // len(comm_list)],
                                                              comm_list[int(k) % len(comm_list)]),
                                                             comm_list[int(k) % len(comm_list)]))
                           for k in pair_uniq], dtype=np.int32)
    rank_of = np.array([proc_rank.get(p, -1) for p in proc_list], dtype=np.int64)
    op_names = [NCCL_OPS.get(o, o.lower()) for o in ops]
    op_cat = {name: i for i, name in enumerate(dict.fromkeys(op_names))}
    op_map = np.array([op_cat[name] for name in op_names], dtype=np.int32)
    dt_codes, dt_uniq = _small_factorize(col["dt"])
    dt_info = [NCCL_DTYPES.get(int(d), (str(int(d)), 0)) for d in dt_uniq]
    dt_names = [x[0] for x in dt_info]
    dt_name_cat = {name: i for i, name in enumerate(dict.fromkeys(dt_names))}
    dt_map = np.array([dt_name_cat[name] for name in dt_names], dtype=np.int32)
    sizes = np.array([x[1] for x in dt_info], dtype=np.int8)[dt_codes]  # itemsizes: 1 byte a row, not 8
    nan = np.full(n, np.nan, dtype=np.float32)  # NCCL lines carry no start/completion/duration: 4 bytes a row
    pg = pd.Categorical.from_codes(pair_label[pair_codes], list(labels))
    del pair_codes
    df = pd.DataFrame({
        "rank": rank_of[col.pop("proc")],
        "pg": pg,
        "seq": seq.astype(np.int64, copy=False),
        "op": pd.Categorical.from_codes(op_map[col["op"]], list(op_cat)),
        "count": col["count"],
        "dtype": pd.Categorical.from_codes(dt_map[dt_codes], list(dt_name_cat)),
        "bytes": np.multiply(col["count"], sizes, dtype=np.int64),
        "state": pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), ["enqueued"]),
        "t_created": col["ts"],
        "t_started": nan,
        "t_completed": nan.copy(),
        "duration_ms": nan.copy(),
        "source": pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), ["nccl"]),
        "file": pd.Categorical.from_codes(col["file"], list(files)),
        "line": col["line"],
        "where": pd.Categorical.from_codes(np.full(n, -1, dtype=np.int8), []),  # unknown for NCCL lines
    }, columns=COLLECTIVE_COLUMNS, copy=False)
    return df


def _concat_tables(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Row-wise concat that keeps categorical columns categorical (their categories united)."""
    out: dict[str, Any] = {}
    for c in COLLECTIVE_COLUMNS:
        x, y = a[c], b[c]
        if isinstance(x.dtype, pd.CategoricalDtype) or isinstance(y.dtype, pd.CategoricalDtype):
            cx, cy = (v.astype("category") for v in (x, y))
            cx, cy = (v.cat.set_categories(v.cat.categories.astype(object)) for v in (cx, cy))
            out[c] = pd.Series(union_categoricals([cx, cy], ignore_order=True))
        else:
            out[c] = pd.concat([x, y], ignore_index=True)
    return pd.DataFrame(out, columns=COLLECTIVE_COLUMNS)
