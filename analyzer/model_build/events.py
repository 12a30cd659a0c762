"""Notable events (NCCL warnings and backtraces, PyTorch watchdog and error lines, the hook's
alerts) and how each process ended."""
from __future__ import annotations

from typing import Any

from ..model import ExitRecord, LogEvent, Origin, PgStatus
from ..nccl.ops import canonical_op
from ..sources import records as R
from .gather import Gathered
from .values import ProcKey, ev


def build_events(g: Gathered, proc_rank: dict[ProcKey, int], pg_status: list[PgStatus]) -> list[LogEvent]:
    """Events in file order; watchdog and dump-signal lines also add to ``pg_status``."""
    events: list[LogEvent] = [e for key, rec in g.nccl_events if (e := _nccl_event(rec, proc_rank.get(key)))]
    events += [_torch_event(rec, pg_status) for rec in g.torch_recs]
    events += [LogEvent(f"{u.kind}_unread", None, f"{u.count} {u.kind} line(s) of {u.file} not understood", ev(u),
                        None, {"count": u.count, "file": u.file}) for u in g.unread]
    events += [LogEvent("file_end", None, "", ev(f), None, {
        "last_line": f.line, "last_nccl_line": f.last_nccl_line or None, "text_after_nccl": f.text_after})
        for f in g.file_ends]
    pg_status += _timeout_status(g, pg_status)
    for h in g.hook:
        if h.type == "stack" and h.data.get("reason") == "stall" and isinstance(h.rank, int):
            events.append(LogEvent("hook_stall", h.rank, f"rank {h.rank} made no progress; at {h.data.get('where')}",
                                   ev(h), h.data.get("t"), {"where": h.data.get("where")}))
        if h.type in ("error", "exit", "stall", "desync") and isinstance(h.rank, int):
            events.append(LogEvent("hook_" + h.type, h.rank, str(h.data.get("message", h.data))[:500], ev(h),
                                   h.data.get("t"), dict(h.data)))
    events.sort(key=lambda e: (e.evidence.file, e.evidence.line))
    return events


def _timeout_status(g: Gathered, pg_status: list[PgStatus]) -> list[PgStatus]:
    """Where nothing else tells a process group's progress (the usual pasted excerpt: only the watchdog's
    ``Watchdog caught collective operation timeout: WorkNCCL(SeqNum=N ...)`` lines), each timed-out rank
    is in work N with N-1 completed before it (a group's work completes in order). A line that names no
    group is the default group's, and only when no rank has any other status at all."""
    told = {st.pg for st in pg_status}
    out: dict[tuple[int, str], PgStatus] = {}
    for rec in g.torch_recs:
        if isinstance(rec, R.WatchdogTimeout) and rec.rank is not None:
            pg = rec.pg or "0"
            if pg in told or (rec.pg is None and told):
                continue
            if (rec.rank, pg) not in out or rec.seq < (out[(rec.rank, pg)].last_enqueued or 0):
                out[(rec.rank, pg)] = PgStatus(rec.rank, pg, rec.seq, rec.seq, rec.seq - 1, "watchdog_timeout", None,
                                               ev(rec))
    return list(out.values())


def _nccl_event(rec: R.Rec, rank: int | None) -> LogEvent | None:
    if isinstance(rec, R.NcclWarn):
        return LogEvent("nccl_warn", rank, rec.message, ev(rec), rec.ts, {"source": rec.source})
    if isinstance(rec, R.NcclBacktrace):
        return LogEvent("nccl_backtrace", rank, f"{rec.source} -> {rec.code}", ev(rec), rec.ts, {"code": rec.code})
    if isinstance(rec, R.NcclRasLine):
        return LogEvent("nccl_ras", rank, rec.message, ev(rec), rec.ts)
    if isinstance(rec, R.NcclNet):
        return LogEvent("nccl_net_" + rec.kind, rank, rec.value, ev(rec), rec.ts)
    return None


def _torch_event(rec: R.TorchRec, pg_status: list[PgStatus]) -> LogEvent:
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
        kind, data = "collective_mismatch", {"ranks": rec.ranks, "fingerprints": rec.fingerprints,
                                             "seqs": rec.seqs, "seq": rec.seq}
    elif isinstance(rec, R.StoreBarrierWait):
        kind, data = "store_barrier_wait", {"world_size": rec.world_size, "worker_count": rec.worker_count,
                                            "key": rec.key, "timed_out": rec.timed_out}
    elif isinstance(rec, R.ProgramExit):
        kind = "program_exit"
    elif isinstance(rec, R.MonitoredBarrierFailure):
        kind, data = "barrier_failure", {"failed": rec.failed_ranks}
    elif isinstance(rec, R.HeartbeatTimeout):
        kind = "heartbeat_timeout"
    elif isinstance(rec, R.RankFinished):
        kind = "rank_finished"
    elif isinstance(rec, R.ProgressSeen):
        kind, data = "progress", {"count": rec.count, "first_line": rec.first_line}
    elif isinstance(rec, R.LauncherStopped):
        kind, data = "launcher_stopped", {"signal": rec.signal}
    elif isinstance(rec, R.LaunchedTasks):
        kind, data = "launched_tasks", {"count": rec.count, "launcher": rec.launcher}
    elif isinstance(rec, R.LauncherSucceeded):
        kind = "launcher_succeeded"
    elif isinstance(rec, R.JobCancelled):
        kind, data = "job_cancelled", {"scope": rec.scope, "reason": rec.reason}
    return LogEvent(kind, rec.rank, rec.text.strip(), ev(rec), None, data)


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
        if h.type == "exit" and isinstance(h.rank, int) and isinstance(h.data.get("code"), int):
            exits.append(ExitRecord(h.rank, h.data["code"], h.data.get("pid"), h.data.get("host"), None, False,
                                    None, ev(h), g.origins.get(h.file, Origin.INPUT)))
    return exits
