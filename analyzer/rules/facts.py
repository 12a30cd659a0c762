"""A finished run's failure events and symptoms, as ``cause.Failure`` on one time line.

The live monitor builds the same ``Failure`` values from the records it tails (``live/monitor.py``);
both classify a message with ``exits.failure_kind``, so a rank's exception is the same kind of
failure live and offline."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd

from ..model import EventKind, ExitRecord, Format, LogEvent, Origin, RecordSource, Run
from ..nccl.failures import Area, EntryVerdict, classify
from ..sources.launcher_log import CTRL_C_RE
from ..sources.lines import MPI_TAG_RE, nccl_head, strip_tool_prefixes
from ..sources.records import GPU_FAULT_EVENT
from ..sources.torch_log import HEAP_ABORT_TYPE, NATIVE_ABORT, NATIVE_CRASH_TYPE, SERVER_READY_RE
from . import healthy
from .cause import Failure, explain, vanished
from .chain import returned_to_caller, warn_chains
from .exits import ExitClass, FailureKind, exit_class, failure_kind
from .hang import BarrierStall, barrier_stall, unique_id_wait
from .init_echo import init_echoes
from .launcher_echo import launcher_echo, with_echoes
from .lost_peer import Report, lost_peer
from .reclaim import reclaim_warns
from .startup import connect_failed, orphan_failures, startup_failures

LINK_AREAS = (Area.IB, Area.SOCKET, Area.PROXY)
# The stall signals: events that say ranks waited past a timeout or made no progress. A collective's watchdog timed
# out or failed, a rank was asked to dump its Flight Recorder, the heartbeat monitor saw a watchdog stuck, the hook saw
# no progress, PyTorch's desync report (printed after a collective timed out), a monitored barrier that timed out
# waiting for ranks. The one list: the hang detector and the decision's time line (``stall_time``) both read it.
STALL_KINDS = (EventKind.WATCHDOG_TIMEOUT, EventKind.WATCHDOG_FAILURE, EventKind.DUMP_SIGNAL, EventKind.HEARTBEAT_TIMEOUT,
               EventKind.HOOK_STALL, EventKind.DESYNC_REPORT, EventKind.BARRIER_FAILURE)
TEARDOWN_ENTRY = "proxy-close-teardown"  # a rank's proxy failed a Close: that process was destroying its communicator
TEARDOWN_AREAS = (Area.PROXY, Area.SOCKET)


def process_of(line: str) -> str | None:
    """``host:pid`` of an NCCL line's head, wherever a launcher's prefix put it."""
    h = nccl_head(line)
    return f"{h[0]}:{h[1]}" if h else None


def teardown_processes(events: Iterable[LogEvent]) -> frozenset[str]:
    """The processes (``host:pid``) whose proxy failed to execute a Close: each was tearing its communicator down."""
    out = set()
    for e in events:
        if e.kind == EventKind.NCCL_WARN and "operation Close" in e.text:
            entry = classify(e.text)
            p = process_of(e.evidence.text)
            if entry is not None and entry.id == TEARDOWN_ENTRY and p is not None:
                out.add(p)
    return frozenset(out)


def in_teardown(e: LogEvent, procs: frozenset[str]) -> bool:
    """A proxy or socket WARN of a process that was tearing down (``teardown_processes``): noise of its exit."""
    if e.kind != EventKind.NCCL_WARN or not procs or process_of(e.evidence.text) not in procs:
        return False
    entry = classify(e.text)
    return entry is not None and entry.area in TEARDOWN_AREAS


def teardown_of_run(run: Run) -> frozenset[str]:
    """``teardown_processes`` of the run's events, once per analysis (``run.memo``)."""
    memo = run.memo.get("teardown")
    if memo is None:
        memo = run.memo["teardown"] = teardown_processes(run.events)
    return memo


def exit_failure(rank: int | None, code: int | None, text: str, t: float | None, order: tuple[str, int],
                 stopped_by_launcher: bool) -> Failure | None:
    """One process's end: None when it ended well or its code is unknown."""
    cls = exit_class(code)
    if cls in (ExitClass.CLEAN, ExitClass.UNKNOWN) and not text:
        return None
    kind = failure_kind(text, code)
    if stopped_by_launcher and kind in (FailureKind.EXIT, FailureKind.FATAL, FailureKind.KILLED):
        kind = FailureKind.KILLED  # the launcher's closing signal, after another rank failed
    elif not text and cls is ExitClass.KILLED and code in (-9, 137):
        kind = FailureKind.FATAL  # SIGKILL nobody here sent: the OOM killer, most often
    return Failure(rank, kind, text or f"exit code {code}", t, order, code)


def error_failure(rank: int | None, exc_type: str, message: str, last_error: str | None, t: float | None,
                  order: tuple[str, int]) -> Failure | None:
    """An exception tail (``[rankN]: torch...DistBackendError: ...``, a traceback's last line)."""
    if rank is None and "ChildFailedError" in exc_type:
        return None  # torchrun's report of a child's failure: counted by the child
    text = f"{exc_type}: {message} {last_error or ''}".strip()
    if exc_type == HEAP_ABORT_TYPE:  # glibc's heap check: the abort that follows is its end (cause.explain_heap)
        return Failure(rank, FailureKind.NCCL if rank is not None else FailureKind.EXCEPTION, text[:500], t, order)
    kind = failure_kind(text)
    if exc_type == NATIVE_CRASH_TYPE and kind is FailureKind.TIMEOUT:
        # a native report's description names its signal first ("Aborted inside NCCL at ...", "Segmentation fault
        # inside NCCL at ncclCommAbort"): its words of abort are the signal's or a frame's, never a stalled collective
        kind = FailureKind.ABORT if message.startswith(NATIVE_ABORT) else FailureKind.FATAL
    last = last_error or message.partition("Last error:")[2]  # one glued line holds it in the message
    if kind is FailureKind.EXCEPTION and unique_id_wait(text) is not None:
        kind = FailureKind.TIMEOUT  # it waited in the store for its group's root: a stall's echo, not its own failure
    elif kind is FailureKind.PEER and last.strip() and _link_failed(last.strip()):
        kind = FailureKind.NETWORK  # ncclRemoteError whose last error is the link's own failure
    elif kind is FailureKind.TIMEOUT and connect_failed(last) and CONNECT_ABORTED_RE.search(last):
        kind = FailureKind.NETWORK  # "connect ... failed : Software caused connection abort": no timeout, no stall
    elif _nccl_bug(last.strip() or text):
        kind = FailureKind.NCCL  # NCCL's own bug (its RAS thread, a net id it lost, NVLS resources it exhausted)
    return Failure(rank, kind, text[:500], t, order)


def _nccl_bug(text: str) -> bool:
    """The knowledge base calls the message a known bug of NCCL's own (area nccl-bug): whichever rank it hit, NCCL
    failed, not that rank's code (``cause.lone_nccl_error`` names no rank for it)."""
    entry = classify(text)
    return entry is not None and entry.is_bug


def _link_failed(last_error: str) -> bool:
    """NCCL's last error is one the knowledge base calls a network failure (an IB completion error, a
    fatal QP event, a socket reset): the rank saw the link fail, not only a peer go away."""
    entry = classify(last_error)
    return entry is not None and entry.verdict == EntryVerdict.CRASH and entry.area in LINK_AREAS


# the host's network stack aborted a connect (a firewall, a sidecar): its "abort" is no timeout
CONNECT_ABORTED_RE = re.compile(r"(?i)Software caused connection abort")
PG_RANK_RE = re.compile(r"\[PG [^\]]{0,80}?\bRank (\d{1,6})\]")


def _dist_error(e: LogEvent, order: tuple[str, int]) -> Failure | None:
    # PyTorch's own "[PG 0 (default_pg) Rank 12]" on the line names the process's rank over a launcher's local prefix
    m = PG_RANK_RE.search(e.evidence.text)
    return error_failure(int(m.group(1)) if m else e.rank, str(e.data.get("type", "")), str(e.data.get("message", "")),
                         e.data.get("last_error"), e.ts, order)


def _hook_exit(e: LogEvent, order: tuple[str, int]) -> Failure | None:
    code = e.data.get("code") if isinstance(e.data.get("code"), int) else None
    t = e.data.get("t") if isinstance(e.data.get("t"), (int, float)) else None
    return exit_failure(e.rank, code, str(e.data.get("exception") or ""), t, order, False)


def _timed_out(e: LogEvent, order: tuple[str, int]) -> Failure | None:
    return Failure(e.rank, FailureKind.TIMEOUT, e.text[:500], e.ts, order)


def _launcher_stopped(e: LogEvent, order: tuple[str, int]) -> Failure | None:
    # torchrun's "Received 2 death signal": the user's Ctrl-C, or a kill
    kind = FailureKind.INTERRUPT if e.data.get("signal") == "SIGINT" else FailureKind.KILLED
    return Failure(None, kind, e.text.strip()[:500], e.ts, order)


def _job_cancelled(e: LogEvent, order: tuple[str, int]) -> Failure | None:
    # the scheduler ended it (time limit, scancel, preemption): from outside
    return Failure(None, FailureKind.KILLED, e.text.strip()[:500], e.ts, order)


# the event kinds that give a failure, each with its reading; any other event (most of a large job's: NCCL's NET
# lines, progress) gives none, told by one dict look-up
_FAILURE_OF: dict[EventKind, Callable[[LogEvent, tuple[str, int]], Failure | None]] = {
    EventKind.DIST_ERROR: _dist_error, EventKind.HOOK_EXIT: _hook_exit, EventKind.WATCHDOG_TIMEOUT: _timed_out,
    EventKind.WATCHDOG_FAILURE: _timed_out, EventKind.HEARTBEAT_TIMEOUT: _timed_out,
    EventKind.NCCL_WARN: lambda e, order: warn_failure(e, order), EventKind.LAUNCHER_STOPPED: _launcher_stopped,
    EventKind.JOB_CANCELLED: _job_cancelled, GPU_FAULT_EVENT: lambda e, order: gpu_failure(e.text, order),
}


def _event_failure(e: LogEvent) -> Failure | None:
    read = _FAILURE_OF.get(e.kind)
    return read(e, (e.evidence.file, e.evidence.line)) if read is not None else None


def gpu_failure(text: str, order: tuple[str, int]) -> Failure | None:
    """A driver's kernel line about a GPU (``sources.kernel_log``) that the knowledge base calls a fault of the GPU
    or its NVLink (a critical Xid entry: 79 fallen off the bus, 74 NVLink, 48 / 95 ECC, GSP timeouts): a cause no
    rank's code is behind, its time unknown to the job's clock. An application's own fault (Xid 13 / 31 / 43) and the
    driver's notes are not."""
    entry = classify(text)
    if entry is None or entry.area != Area.XID or entry.severity != "critical":
        return None
    return Failure(None, FailureKind.GPU, text.strip()[:500], None, order)


def warn_failure(e: LogEvent, order: tuple[str, int]) -> Failure | None:
    """An NCCL WARN the knowledge base calls a failure of the data path (an IB completion error, a
    fatal QP or port event, a proxy failure, a communicator's fatal error): a network failure on its
    rank's time line like an exception, so the earliest failure wins and its echoes do not. Socket
    errors stay off it: the bootstrap's helper threads log theirs while training goes on."""
    src = e.data.get("source")
    entry = classify(f"{src} {e.text}" if isinstance(src, str) and src else e.text)
    if entry is None or entry.verdict != EntryVerdict.CRASH or entry.area == Area.SOCKET:
        return None
    own = entry.area not in LINK_AREAS and (entry.is_bug or entry.area == Area.CUDA)  # NCCL's bug, a CUDA call inside it
    return Failure(e.rank, FailureKind.NCCL if own else FailureKind.NETWORK, f"NCCL WARN {e.text.strip()}"[:500], e.ts,
                   order)


def _hook_last_seen(run: Run) -> dict[int, float]:
    """rank -> the time of its last hook record: a heartbeat's group status, or a collective it recorded (a rank
    killed early may have written no heartbeat with a group in it, only its collectives)."""
    seen: dict[int, float] = {}
    for st in run.pg_status:
        if st.source == RecordSource.HOOK and isinstance(st.ts, (int, float)):
            seen[st.rank] = max(seen.get(st.rank, st.ts), st.ts)
    df = run.collectives
    if len(df) and "source" in df:
        hook = df[(df["source"] == RecordSource.HOOK).to_numpy() & (df["rank"].to_numpy() >= 0)]
        if len(hook):
            t = np.fmax(hook["t_created"].to_numpy(dtype=float), hook["t_completed"].to_numpy(dtype=float))
            ok = np.isfinite(t)
            for r, tr in pd.Series(t[ok]).groupby(hook["rank"].to_numpy()[ok]).max().items():
                seen[int(r)] = max(seen.get(int(r), float(tr)), float(tr))
    return seen


def _launcher_failure(x: ExitRecord, killed: set[int]) -> Failure | None:
    if x.origin is Origin.HOOK:
        return None  # the hook's exit records come in as events, with their time and exception
    order = (x.evidence.file, x.evidence.line) if x.evidence else ("", 0)
    f = exit_failure(x.rank, x.exitcode, "", None, order, x.pid in killed and not x.root_cause)
    if f is not None and x.root_cause:
        f = Failure(f.rank, f.kind, f.text, f.t, ("", -1), f.code)  # torchrun saw it first
    return f


def failures_of_run(run: Run) -> list[Failure]:
    """Every failure event and symptom of the run (computed once per analysis: ``run.memo``)."""
    memo = run.memo.get("failures")
    if memo is None:
        memo = run.memo["failures"] = _failures(run)
    return list(memo)


def returned_failures(events: list[LogEvent], taken: set[tuple[str, int]]) -> list[Failure]:
    """NCCL WARNs whose return chain reached the application's call (``chain.returned_to_caller``): the WARN is the
    failure of that call, on its rank's time line, whether or not the framework's exception made it into the
    input. Its kind is what the message says (an OOM, a CUDA error, a peer gone, a timeout: ``failure_kind``); a
    failure of the link the knowledge base knows (its IB, socket or proxy entries) is a network error; anything
    else NCCL's own error. ``taken``: WARN lines already on the time line."""
    out = []
    for i, chain in warn_chains(events).items():
        e = events[i]
        order = (e.evidence.file, e.evidence.line)
        if order in taken or not returned_to_caller(chain):
            continue
        src = e.data.get("source")
        text = f"NCCL WARN {e.text.strip()}"
        kind = FailureKind.NETWORK if connect_failed(e.text) else failure_kind(e.text)  # "connection abort": no timeout
        entry = classify(f"{src} {e.text}" if isinstance(src, str) and src else e.text)
        if kind in (FailureKind.EXCEPTION, FailureKind.NETWORK):
            kind = FailureKind.NETWORK if entry is not None and entry.area in LINK_AREAS else FailureKind.NCCL
        elif entry is not None and entry.is_bug:
            kind = FailureKind.NCCL  # NCCL's own bug, whatever its words (an 'out of memory' of NVLS resources)
        out.append(Failure(e.rank, kind, f"{text} (returned to the caller: {chain[-1][0]} -> {chain[-1][1]})"[:500],
                           e.ts, order))
    return out


def _is_launcher_echo(e: LogEvent) -> bool:
    """A launcher's report of a child's end (``launcher_echo``), on a line that names no rank."""
    frames = e.data.get("frames")
    return (e.kind == EventKind.DIST_ERROR and e.rank is None
            and launcher_echo(str(e.data.get("type", "")), frames if isinstance(frames, list) else []))


def _failures(run: Run) -> list[Failure]:
    down = teardown_of_run(run)
    progressed = any(e.kind == EventKind.PROGRESS for e in run.events)
    kept = [e for e in run.events if not in_teardown(e, down) and not (progressed and _bare_ctrl_c(e))]
    echoes: list[Failure] = []
    out: list[Failure] = []
    for e in kept:
        if (f := _event_failure(e)) is not None:
            (echoes if _is_launcher_echo(e) else out).append(f)
    out += returned_failures(run.events, {f.order for f in out})
    taken = {f.order for f in out}
    initialised = {c.members.get(r, r) for c in run.communicators for r in c.init_complete}
    out += startup_failures(((e.rank, e.text, e.ts, (e.evidence.file, e.evidence.line)) for e in run.events
                             if e.kind == EventKind.NCCL_WARN and (e.evidence.file, e.evidence.line) not in taken), initialised,
                             {p.rank for p in run.job.processes if p.rank is not None and p.pid})
    out += orphan_failures(run.events, taken)
    out += [f for x in run.exits if (f := _launcher_failure(x, run.killed_pids)) is not None]
    out = with_echoes(out, echoes)  # a launcher's report of a child's end counts only as the only word of a failure
    seen = _hook_last_seen(run)
    ended = {e.rank for e in run.events if e.kind == EventKind.HOOK_EXIT and e.rank is not None}
    out = explain(init_echoes(out, any(c.init_started - c.init_complete for c in run.communicators)))
    out += vanished(seen, ended, out, max(seen.values(), default=None))
    if not any(f.kind is FailureKind.VANISHED for f in out):
        out += _lost_peer(run, out)
    return out


BOOTSTRAP_ADDR_RE = re.compile(r":(?P<a>[0-9A-Fa-f.:]{3,60}?)(?:%\w{1,20})?<\d{1,5}>")  # "eth0:10.1.0.9<0>"


def _lost_peer(run: Run, failures: list[Failure]) -> list[Failure]:
    """``lost_peer.lost_peer`` over the run's logs: the ranks seen, the lines saying a peer went away (failures, NCCL
    WARNs, PyTorch's last errors), the ranks whose end is known, and each rank's host and bootstrap address."""
    reports = [Report(f.rank, f.text, f.t) for f in failures]
    for e in run.events:
        if e.kind in (EventKind.NCCL_WARN, EventKind.DIST_ERROR):
            reports.append(Report(e.rank, f"{e.text} {e.data.get('last_error') or ''}", e.ts))
    addresses: dict[int, set[str]] = {}
    for p in run.job.processes:
        if p.rank is not None and p.host:
            addresses.setdefault(p.rank, set()).add(p.host)
    for e in run.events:
        if e.kind == EventKind.NCCL_NET_BOOTSTRAP and e.rank is not None and (m := BOOTSTRAP_ADDR_RE.search(e.text)):
            addresses.setdefault(e.rank, set()).add(m.group("a"))
    seen = {p.rank for p in run.job.processes if p.rank is not None}
    ended = set(left_ranks(run)) | {x.rank for x in run.exits if x.rank is not None}
    lost = lost_peer(seen, failures, reports, ended, addresses)
    return [lost] if lost is not None else []


# events of NCCL's own lines (model_build.events: "nccl_" + what, "nccl_net_" + an NcclNet's kind) and the end of a
# file; every other event is a line of the application, its launcher or a tool
NCCL_EVENT_PREFIX = "nccl_"
FILE_END_EVENT = EventKind.FILE_END
LAUNCH_EVENT = EventKind.NCCL_NET_LAUNCH  # sources.records.NcclLaunch: a collective launched
TIMINGS_EVENT = EventKind.NCCL_NET_INIT_TIMINGS  # sources.records.NcclInitTimings
FINISHED_EVENTS = (EventKind.RANK_FINISHED, EventKind.PROGRAM_EXIT)  # sources.records.RankFinished, ProgramExit: a rank's own end
DESYNC_REPORT_EVENT = EventKind.DESYNC_REPORT  # sources.records.DesyncReport
TOTAL_RE = re.compile(r"\btotal (\d{1,7}(?:\.\d{1,6})?)\b")


def progress_after(run: Run, events: Iterable[LogEvent]) -> bool:
    """The program printed its progress after the last of ``events`` in the same file: it went on past them."""
    last: dict[str, int] = {}
    for e in events:
        last[e.evidence.file] = max(last.get(e.evidence.file, 0), e.evidence.line)
    return any(e.kind == EventKind.PROGRESS and e.evidence.line > last.get(e.evidence.file, 1 << 62) for e in run.events)


def store_barriers(run: Run) -> list[tuple[str, list[LogEvent], BarrierStall]]:
    """init_process_group's store-based barriers that stalled (``hang.barrier_stall``), per barrier key in the order
    first seen: (key, its wait lines, the stall)."""
    by_key: dict[str, list[LogEvent]] = {}
    for e in run.events:
        if e.kind == EventKind.STORE_BARRIER_WAIT and isinstance(e.data.get("world_size"), int) \
                and isinstance(e.data.get("worker_count"), int):
            by_key.setdefault(str(e.data.get("key")), []).append(e)
    out = []
    for key, evs in by_key.items():
        st = barrier_stall((e.rank, e.data["world_size"], e.data["worker_count"], bool(e.data.get("timed_out")))
                           for e in evs)
        if st is not None:
            out.append((key, evs, st))
    return out


def start_only_of_run(run: Run) -> healthy.Covered | None:
    """``healthy.start_only`` over the run: its communicators (each started rank's init complete), the longest init
    its ``Init timings`` lines report, whether a collective was launched, whether any line of the application or a
    launcher is in the input (an event that is not NCCL's, an exit record, a file of another format)."""
    comms = run.communicators
    if not comms or any(c.init_started - c.init_complete for c in comms):
        return None
    totals = [float(m.group(1)) for e in run.events if e.kind == TIMINGS_EVENT and (m := TOTAL_RE.search(e.text))]
    # (a topology dump, NCCL_TOPO_DUMP_FILE's XML, is NCCL's own output like its lines)
    application = bool(run.exits) or any(fmt not in (Format.LOG, Format.XML) for _, fmt in run.files) or any(
        (not e.kind.startswith(NCCL_EVENT_PREFIX) and e.kind not in (FILE_END_EVENT, EventKind.EARLIER_RUNS))
        or (_behind_prefix(e.evidence.text) and not _tag_only(e.evidence.text)) for e in run.events)
    # (the cut between runs is no line of the application)
    return healthy.start_only(((c.nranks, len(c.init_complete)) for c in comms), max(totals, default=None),
                              any(e.kind == LAUNCH_EVENT for e in run.events), application, bool(len(run.collectives)),
                              bool(failures_of_run(run)), run.job.exit_code)


def _behind_prefix(line: str) -> bool:
    """An NCCL line whose head is not at its start (after NCCL's own ``[timestamp] ``): a launcher's or a tool's prefix
    is in front of it (pdsh's ``node3: ``, ``[1,3]<stdout>:``), so the stream it came in is the job's console."""
    h = nccl_head(line)
    if h is None or h[3] == 0:
        return False
    return not (line.startswith("[") and line[:h[3]].rstrip().endswith("]") and line[1:5].isdigit())


def _tag_only(line: str) -> bool:
    """An NCCL line behind an MPI-style runner's rank tag alone (``[1,0]<stdout>:``, horovodrun's ``[0]<stdout>``): the
    runner tags each rank's stream, which says nothing of whether the program printed anything else in it."""
    return MPI_TAG_RE.match(line) is not None


def quoted_info_of_run(run: Run) -> healthy.Covered | None:
    """``healthy.quoted_info`` over the run: its text files' lines (``file_end`` events), those holding NCCL lines."""
    ends = [e for e in run.events if e.kind == FILE_END_EVENT]
    if not ends or any(fmt is not Format.LOG for _, fmt in run.files):
        return None
    nccl = [e for e in ends if e.data.get("last_nccl_line") is not None]
    lines = sum(int(e.data.get("last_line") or 0) for e in nccl)  # (a pasted lsmod or nvidia-smi beside them aside)
    after = any(int(e.data.get("text_after_nccl") or 0) > 0 for e in nccl)  # the program printed after NCCL's lines
    warned = any(e.kind == EventKind.NCCL_WARN for e in run.events)
    return healthy.quoted_info(lines, len(nccl), after, warned, bool(run.communicators), bool(len(run.collectives)),
                               bool(failures_of_run(run)), run.job.exit_code)


def sweep_done_of_run(run: Run) -> healthy.Covered | None:
    """``healthy.sweep_done`` over the run's nccl-tests rows."""
    sizes = [int(t["size"]) for t in run.nccl_tests if isinstance(t.get("size"), int)]
    return healthy.sweep_done(len(run.nccl_tests), sizes, run.job.exit_code, bool(failures_of_run(run)))


def server_ready_of_run(run: Run) -> healthy.Covered | None:
    """``healthy.server_ready`` over the run: the last progress print of a file is a server's ready line."""
    ready = any(e.kind == EventKind.PROGRESS and SERVER_READY_RE.search(e.text) for e in run.events)
    return healthy.server_ready(ready, bool(failures_of_run(run)), stall_time(run)[0], run.job.exit_code)


def work_done_of_run(run: Run) -> healthy.Covered | None:
    """``healthy.work_done`` over the run's last progress print (the latest line of the file printed last)."""
    prints = [e for e in run.events if e.kind == EventKind.PROGRESS]
    if not prints:
        return None
    last = max(prints, key=lambda e: (e.ts if e.ts is not None else -1.0, e.evidence.line))
    return healthy.work_done(last.text, bool(failures_of_run(run)), stall_time(run)[0], run.job.exit_code)


def _bare_ctrl_c(e: LogEvent) -> bool:
    """The terminal's echo of Ctrl-C (``^C``) read as the user's interrupt: in a job that printed its progress, the
    user's way to end it (a server, a run watched to its end), no sign of a stall."""
    return e.kind == EventKind.LAUNCHER_STOPPED and CTRL_C_RE.match(strip_tool_prefixes(e.evidence.text)[1].strip()) is not None


def nccl_setup_seen(run: Run) -> bool:
    """NCCL's own set-up lines (bootstrap, network, topology: INFO records other than WARNs) are in the input."""
    return any(e.kind.from_nccl and e.kind != EventKind.NCCL_WARN for e in run.events)


def cleanup_of_run(run: Run) -> healthy.Covered | None:
    """``healthy.teardown_reached`` over the run's NCCL WARNs (the clean-up's: ``reclaim.reclaim_warns``), where no
    communicator is shown short of its init (a clean-up during init is an abort there, not the job's end)."""
    cleanup = reclaim_warns(run.events)
    if not cleanup:
        return None
    if any(c.init_started - c.init_complete for c in run.communicators) or (not run.communicators and nccl_setup_seen(run)):
        return None
    others = sum(1 for i, e in enumerate(run.events) if e.kind == EventKind.NCCL_WARN and i not in cleanup)
    return healthy.teardown_reached(len(cleanup), others, bool(failures_of_run(run)), stall_time(run)[0],
                                    run.job.exit_code)


def rank_zero_busy(run: Run) -> bool:
    """A console that shows a watchdog timeout also shows the main process's own progress (a tqdm bar or a progress
    print not tagged with another rank: rank 0's, by the convention every trainer keeps): rank 0 was at work of its own (evaluating, saving a checkpoint, preparing data) while others
    waited. Where the world is not stated and ranks 1 to k timed out, it is rank 0 that did not come."""
    files = {e.evidence.file for e in run.events if e.kind == EventKind.WATCHDOG_TIMEOUT}
    return bool(files) and any(e.kind in (EventKind.PROGRESS, EventKind.BAR_SEEN) and e.rank in (None, 0)
                               and e.evidence.file in files for e in run.events)


def left_ranks(run: Run) -> frozenset[int]:
    """The ranks known to have left the job of their own: a clean exit (code 0), their own end printed (a rank's
    ``finished`` print, torch's exit-time warning). They issue nothing more: not in any collective after it."""
    left = {x.rank for x in run.exits if x.exitcode == 0 and x.rank is not None}
    left |= {e.rank for e in run.events if e.kind in FINISHED_EVENTS and e.rank is not None}
    return frozenset(left)


def stall_events(run: Run) -> list[LogEvent]:
    """The run's stall signals (``STALL_KINDS``; a rank that gave up waiting in the store for its group's NCCL unique
    id, ``hang.unique_id_wait``), in the events' order."""
    return [e for e in run.events if e.kind in STALL_KINDS or (e.kind == EventKind.DIST_ERROR and (
        unique_id_wait(str(e.data.get("message") or "")) or unique_id_wait(e.text)) is not None)]


def stall_time(run: Run) -> tuple[bool, float | None]:
    """(a stall signal was seen, the earliest time known for one)."""
    ev = stall_events(run)
    ts = [e.ts for e in ev if isinstance(e.ts, (int, float))]
    return bool(ev), (min(ts) if ts else None)
