"""Notable events (NCCL warnings and backtraces, PyTorch watchdog and error lines, the hook's
alerts) and how each process ended."""
from __future__ import annotations

from typing import Any

from ..model import EventKind, ExitRecord, LogEvent, Origin, PgStatus, RecordSource
from ..nccl.ops import canonical_op
from ..sources import records as R
from ..sources.fr_trace_text import FrTraceReport
from ..sources.hook_jsonl import HookType
from ..sources.topo_rows import GpuLinks
from .gather import Gathered
from .values import ProcKey, ev


def build_events(g: Gathered, proc_rank: dict[ProcKey, int], pg_status: list[PgStatus]) -> list[LogEvent]:
    """Events in file order; watchdog and dump-signal lines also add to ``pg_status``."""
    events: list[LogEvent] = [e for key, rec in g.nccl_events if (e := _nccl_event(rec, proc_rank.get(key)))]
    events += [_torch_event(rec, pg_status) for rec in g.torch_recs]
    events += [LogEvent(EventKind(f"{u.kind}_unread"), None, f"{u.count} {u.kind} line(s) of {u.file} not understood", ev(u),
                        None, {"count": u.count, "file": u.file}) for u in g.unread]
    events += [LogEvent(EventKind.FILE_END, None, "", ev(f), None, {
        "last_line": f.line, "last_nccl_line": f.last_nccl_line or None, "text_after_nccl": f.text_after})
        for f in g.file_ends]
    pg_status += _timeout_status(g, pg_status)
    for h in g.hook:
        if h.type == HookType.STACK and h.data.get("reason") == "stall" and isinstance(h.rank, int):
            events.append(LogEvent(EventKind.HOOK_STALL, h.rank, f"rank {h.rank} made no progress; at {h.data.get('where')}",
                                   ev(h), h.data.get("t"), {"where": h.data.get("where")}))
        if h.type in HOOK_EVENTS and isinstance(h.rank, int):
            events.append(LogEvent(HOOK_EVENTS[HookType(h.type)], h.rank, str(h.data.get("message", h.data))[:500], ev(h),
                                   h.data.get("t"), dict(h.data)))
    events.sort(key=lambda e: (e.evidence.file, e.evidence.line))
    return events


# the hook's records that are events of the run, and their kinds
HOOK_EVENTS = {HookType.ERROR: EventKind.HOOK_ERROR, HookType.EXIT: EventKind.HOOK_EXIT,
               HookType.STALL: EventKind.HOOK_STALL, HookType.DESYNC: EventKind.HOOK_DESYNC}


def net_kind(kind: str) -> EventKind:
    """An ``NcclNet`` record's event kind: ``nccl_net_`` + its kind; a network NCCL names that is none of those
    listed (``NET/<name> : Using ...``) is ``NCCL_NET_OTHER``."""
    try:
        return EventKind("nccl_net_" + kind)
    except ValueError:
        return EventKind.NCCL_NET_OTHER


def _timeout_status(g: Gathered, pg_status: list[PgStatus]) -> list[PgStatus]:
    """Where nothing else tells a process group's progress (the usual pasted excerpt: only the watchdog's
    ``Watchdog caught collective operation timeout: WorkNCCL(SeqNum=N ...)`` lines), each timed-out rank
    is in work N with N-1 completed before it (a group's work completes in order). A line that names no
    group is the default group's, and only when no rank has any other status at all."""
    told = {st.pg for st in pg_status}
    out: dict[tuple[int, str], PgStatus] = {}
    for rec in g.torch_recs:
        if isinstance(rec, R.WatchdogTimeout) and rec.rank is not None and rec.seq is not None:
            pg = rec.pg or "0"
            if pg in told or (rec.pg is None and told):
                continue
            if (rec.rank, pg) not in out or rec.seq < (out[(rec.rank, pg)].last_enqueued or 0):
                out[(rec.rank, pg)] = PgStatus(rec.rank, pg, rec.seq, rec.seq, rec.seq - 1, RecordSource.WATCHDOG_TIMEOUT, None,
                                               ev(rec))
    return list(out.values())


def _nccl_event(rec: R.Rec, rank: int | None) -> LogEvent | None:
    if isinstance(rec, R.NcclWarn):
        return LogEvent(EventKind.NCCL_WARN, rank, rec.message, ev(rec), rec.ts, {"source": rec.source})
    if isinstance(rec, R.NcclBacktrace):
        return LogEvent(EventKind.NCCL_BACKTRACE, rank, f"{rec.source} -> {rec.code}", ev(rec), rec.ts, {"code": rec.code})
    if isinstance(rec, R.NcclRasLine):
        return LogEvent(EventKind.NCCL_RAS, rank, rec.message, ev(rec), rec.ts)
    if isinstance(rec, R.NcclNet):
        return LogEvent(net_kind(rec.kind), rank, rec.value, ev(rec), rec.ts)
    return None


def completed_before(seq: int | None, completed: int | None) -> int | None:
    """The last completed work of a watchdog's failure line at the timed-out work ``seq``: torch's count of completed
    work starts at -1 (``last completed NCCL work: -1``) while the work it numbers starts at 1, and the watchdog times
    out the oldest work not yet completed, so nothing before ``seq`` was pending: ``seq - 1`` (0, none, at the first)."""
    if completed == -1 and seq is not None and seq >= 1:
        return seq - 1
    return completed


def _torch_event(rec: R.TorchRec, pg_status: list[PgStatus]) -> LogEvent:
    kind: EventKind | None = None
    data: dict[str, Any] = {}
    if isinstance(rec, R.ToolEvent):  # another tool's line (MPI, UCX, the kernel, a stack dump): its own kind and data
        tool_kind, data = rec.event()
        kind = EventKind(tool_kind)
    elif isinstance(rec, R.WatchdogTimeout):
        kind, data = EventKind.WATCHDOG_TIMEOUT, {"seq": rec.seq, "op": canonical_op(rec.op), "pg": rec.pg,
                                          "timeout_ms": rec.timeout_ms, "numel": rec.numel_in}
    elif isinstance(rec, R.WatchdogFailure):
        kind, data = EventKind.WATCHDOG_FAILURE, {"seq": rec.seq, "pg": rec.pg}
        if rec.rank is not None:
            pg_status.append(PgStatus(rec.rank, rec.pg or "0", rec.last_enqueued, rec.last_started,
                                      completed_before(rec.seq, rec.last_completed), RecordSource.WATCHDOG, None,
                                      ev(rec)))
    elif isinstance(rec, R.DumpSignal):
        kind, data = EventKind.DUMP_SIGNAL, {"from_rank": rec.from_rank, "pg": rec.pg}
        if rec.rank is not None:
            pg_status.append(PgStatus(rec.rank, rec.pg or "0", rec.last_enqueued, None, rec.last_completed,
                                      RecordSource.DUMP_SIGNAL, None, ev(rec)))
    elif isinstance(rec, R.DistError):
        kind, data = EventKind.DIST_ERROR, {"type": rec.exc_type, "message": rec.message, "last_error": rec.last_error,
                                    "frames": rec.frames}
    elif isinstance(rec, R.DesyncReport):
        kind, data = EventKind.DESYNC_REPORT, {"lagging": rec.lagging_ranks, "seq": rec.seq, "op": rec.op}
    elif isinstance(rec, R.CollectiveMismatch):
        kind, data = EventKind.COLLECTIVE_MISMATCH, {"ranks": rec.ranks, "fingerprints": rec.fingerprints,
                                             "seqs": rec.seqs, "seq": rec.seq}
    elif isinstance(rec, R.StoreBarrierWait):
        kind, data = EventKind.STORE_BARRIER_WAIT, {"world_size": rec.world_size, "worker_count": rec.worker_count,
                                            "key": rec.key, "timed_out": rec.timed_out}
    elif isinstance(rec, R.ProgramExit):
        kind = EventKind.PROGRAM_EXIT
    elif isinstance(rec, R.MonitoredBarrierFailure):
        kind, data = EventKind.BARRIER_FAILURE, {"failed": rec.failed_ranks}
    elif isinstance(rec, R.HeartbeatTimeout):
        kind = EventKind.HEARTBEAT_TIMEOUT
    elif isinstance(rec, R.RankFinished):
        kind = EventKind.RANK_FINISHED
    elif isinstance(rec, R.ProgressSeen):
        kind, data = EventKind.PROGRESS, {"count": rec.count, "first_line": rec.first_line,
                                          "step_times": [list(x) for x in rec.step_times]}
    elif isinstance(rec, R.LauncherStopped):
        kind, data = EventKind.LAUNCHER_STOPPED, {"signal": rec.signal}
    elif isinstance(rec, R.LaunchedTasks):
        kind, data = EventKind.LAUNCHED_TASKS, {"count": rec.count, "launcher": rec.launcher}
    elif isinstance(rec, R.LauncherSucceeded):
        kind = EventKind.LAUNCHER_SUCCEEDED
    elif isinstance(rec, FrTraceReport):
        kind, data = EventKind.FR_TRACE_REPORT, {"seq": rec.seq, "op": canonical_op(rec.op) if rec.op else None, "pg": rec.pg,
                                         "culprits": rec.culprits, "kinds": rec.kinds, "missing": rec.missing,
                                         "world": rec.world}
    elif isinstance(rec, GpuLinks):
        kind, data = EventKind.GPU_LINKS, {"gpu": rec.gpu, "nvlink_peers": rec.nvlink_peers, "peers": rec.peers}
    elif isinstance(rec, R.JobCancelled):
        kind, data = EventKind.JOB_CANCELLED, {"scope": rec.scope, "reason": rec.reason}
    # any other record is kept as its class (every such class is an EventKind: tests/test_event_kinds.py)
    return LogEvent(kind or EventKind(type(rec).__name__), rec.rank, rec.text.strip(), ev(rec), None, data)


def build_exits(g: Gathered, proc_rank: dict[ProcKey, int]) -> list[ExitRecord]:
    """Launcher exit records (one per rank, code and cause) and the hook's exit records."""
    exits: list[ExitRecord] = []
    seen_exit: set[tuple[int | None, int | None, bool]] = set()
    for le in g.launcher:
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
        exits.append(ExitRecord(rank, le.exitcode, le.pid, le.host, sig, le.root_cause, le.time, ev(le),
                                g.origins.get(le.file, Origin.INPUT)))
    for h in g.hook:
        if h.type == HookType.EXIT and isinstance(h.rank, int) and isinstance(h.data.get("code"), int):
            exits.append(ExitRecord(h.rank, h.data["code"], h.data.get("pid"), h.data.get("host"), None, False,
                                    None, ev(h), g.origins.get(h.file, Origin.INPUT)))
    return exits
