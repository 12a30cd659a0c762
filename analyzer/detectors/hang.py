"""Hang: a collective that some rank never joined, or that every rank joined and none finished.

Inputs: per-rank process-group status (Flight Recorder ``pg_status``, watchdog ``failure
detected`` and dump-signal lines, the hook's heartbeats), the collectives table (NCCL COLL
counts, Flight Recorder entries), RAS operation counts, and stall signals (watchdog timeout,
heartbeat timeout, the hook's stall record). Ranks a few collectives apart with work in flight
and no stall signal are a snapshot of a running job, not a hang.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from ..model import (
    Certainty, Communicator, EventKind, Evidence, Finding, FindingKind, Format, LogEvent, Origin, Run, Severity, Stuck,
    Verdict,
)
from ..nccl.ops import canonical_op
from ..rules.exits import FailureKind, from_outside
from ..rules.facts import (
    DESYNC_REPORT_EVENT,
    FILE_END_EVENT,
    failures_of_run,
    left_ranks,
    nccl_setup_seen,
    progress_after,
    quoted_info_of_run,
    rank_zero_busy,
    start_only_of_run,
    store_barriers,
    teardown_of_run,
)
from ..rules.hang import (
    LOOP_START_RE,
    SETUP_GROUP,
    SETUP_NCCL,
    ZERO_BAR_RE,
    BusyElsewhere,
    OddOneOut,
    after_stall,
    ahead_alone,
    barrier_unreturned,
    behind_by_counts,
    behind_the_rest,
    bounded_world,
    busy_elsewhere,
    ends_after_init,
    ends_in_setup,
    error_returned,
    frozen_at_start,
    implied_world,
    init_stall,
    loop_started,
    lowest_at_stall,
    no_rows_after_init,
    odd_one_out,
    partial_init,
    status_certainty,
    stuck_collective,
    sweep_stopped,
    unique_id_wait,
    world_waits,
)
from ..rules.healthy import MIN_PROGRESS
from ..rules.init_echo import is_echo_of_init
from ..rules.named import desync_named
from ..rules.ray import driver_rank_absent
from ..rules.reclaim import reclaim_warns
from ..rules.shown import pending_at_end
from ..rules.stopped import stopped_unfinished
from .common import RankPg, entries_at, fmt_ranks, pg_status_by_rank, rows_where, stall_events
from .fr_findings import by_silence as fr_by_silence
from .fr_findings import hang_finding as fr_hang_finding

HINT_NEVER_JOINED = (
    "Rank {r} stopped issuing collectives before #{seq}: look at what it runs between its last collective and "
    "this one (a data-loader stall, a rank-conditional branch, an exception swallowed in a thread, a "
    "checkpoint only some ranks write). Its stack shows where it is."
)
HINT_ALL_JOINED = (
    "Every rank entered #{seq} but it never finished: NCCL- or network-side. Check the WARN lines, the "
    "transports between the ranks that wait (NCCL_P2P_DISABLE / NCCL_SHM_DISABLE / NCCL_IB_*), GPU health "
    "(nvidia-smi, Xid errors in dmesg), and run nccl-tests between those hosts."
)
DRIVER_NOTE = ("; rank 0 is the Ray executor's driver (its console lines carry no worker prefix), which dispatched "
               "this step to its workers: the whole group stalled, no rank is singled out")


def finished_ok(run: Run) -> bool:
    """The job ended by itself with success: whatever stalled on the way resumed (a pause, not a hang)."""
    if run.job.exit_code == 0:
        return True
    codes = {e.rank: e.exitcode for e in run.exits if e.origin is Origin.HOOK}
    ranks = run.ranks()
    return bool(ranks) and all(codes.get(r) == 0 for r in ranks)


def detect(run: Run) -> list[Finding]:
    if finished_ok(run):
        return []
    named = _backend_named(run)
    if named:  # what PyTorch's own desync analysis states is trusted over what the statuses would say
        return named
    stalls = stall_events(run)
    status = _with_timeouts(pg_status_by_rank(run), run)
    findings: list[Finding] = []
    stall_ev = tuple(e.evidence for e in stalls[:3])
    left = left_ranks(run)  # ranks that ended their program: they are in no collective after it
    world = {p.rank for p in run.job.processes if p.rank is not None} | {r for by in status.values() for r in by} | left

    lagging = {s.pg for s in run.pg_status if s.completion_may_lag}  # gloo's Flight Recorder counts
    for pg, by_rank in sorted(status.items()):
        members = bounded_world(run.job.world_size, world | _rank_zero(run, world)) if pg == "0" else sorted(by_rank)
        enq = {r: (by_rank[r].enqueued if r in by_rank else None) for r in sorted(set(members) | set(by_rank))}
        st = stuck_collective(enq, {r: s.completed for r, s in by_rank.items()}, completion_may_lag=pg in lagging)
        if st is None:
            continue  # everything issued has completed everywhere
        if not stalls:
            continue  # in-flight work in a snapshot of a running job
        stuck_seq, never = st.seq, list(st.never)
        if not never:  # members with no status of their own that left the job never came to it
            never = sorted(r for r in enq if enq[r] is None and r in left)
        # a rank alone in it while others are shown with no part in it, or a few shown elsewhere while the rest wait
        odd = odd_one_out(by_rank, _quiet_ranks(run, by_rank, left)) if not never else None
        if len(never) == 1 and len(by_rank) == 1 and _nowhere(run, never[0]):
            never = []  # one rank's timeout against one peer with no line at all: the input shows only one side
        driver = driver_rank_absent(never, [s.evidence.text for s in by_rank.values() if s.evidence]) and _nowhere(run, 0)
        if driver:
            never = []  # rank 0 is the Ray executor's driver: it dispatched the step its workers wait in
        at = entries_at(run, pg, stuck_seq)
        op = _op_for(run, at, stuck_seq)
        waiting = sorted(r for r in by_rank if r not in never)
        evidence = [s.evidence for r, s in sorted(by_rank.items()) if s.evidence] + list(stall_ev)
        evidence += _ras_evidence(run, never)
        where = {r: run.stacks[r] for r in never + waiting if r in run.stacks}
        wait_desc = _wait_where(at, waiting)
        died = _died_first(run, never, stalls)
        if odd is not None:
            findings.append(_odd_finding(odd, by_rank, op, pg, stuck_seq, evidence, where))
        elif (busy := _busy_elsewhere(run, pg, stuck_seq, waiting)) is not None and never in ([], [busy.rank]):
            findings.append(Finding(
                kind=FindingKind.HANG, severity=Severity.CRITICAL,
                message=f"rank {busy.rank} went on with its own work while rank{'s' if len(waiting) > 1 else ''} "
                f"{fmt_ranks(waiting)} waited in {op or 'collective'} #{stuck_seq} of process group {pg}{_pg_desc(pg)} "
                f"and timed out: {busy.why}", ranks=(busy.rank,), hint=HINT_BUSY.format(r=busy.rank),
                evidence=tuple(_dedupe(evidence)), stuck=Stuck(pg, stuck_seq, op), verdict=Verdict.HANG,
                data={"class": "busy_elsewhere", "waiting": waiting, "where": where,
                      "certainty": {"level": busy.level, "why": busy.why}}))
        elif never and died:
            r, code = died
            findings.append(Finding(
                kind=FindingKind.HANG, severity=Severity.CRITICAL,
                message=f"rank {r}'s process ended ({_ended(code)}) before joining {op or 'collective'} #{stuck_seq} of process "
                f"group {pg}; the other ranks waited for it", ranks=(r,),
                hint="The rank died: its own log and exit code say why; the others' timeouts are echoes.",
                evidence=tuple(_dedupe(evidence)), stuck=Stuck(pg, stuck_seq, op), verdict=Verdict.CRASH,
                data={"class": "process_died", "waiting": waiting, "where": where}))
        elif never:
            msg = (f"rank{'s' if len(never) > 1 else ''} {fmt_ranks(never)} never joined {op or 'collective'} "
                   f"#{stuck_seq} of process group {pg}{_pg_desc(pg)}; "
                   f"rank{'s' if len(waiting) > 1 else ''} {fmt_ranks(waiting) or '-'} wait{'' if len(waiting) > 1 else 's'} in it")
            if wait_desc:
                msg += f" ({wait_desc})"
            for r in never:
                if r in where:
                    msg += f"; rank {r} is at {where[r]}"
            findings.append(Finding(
                kind=FindingKind.HANG, severity=Severity.CRITICAL, message=msg, ranks=tuple(never), hint=HINT_NEVER_JOINED.format(r=never[0], seq=stuck_seq),
                evidence=tuple(_dedupe(evidence)), stuck=Stuck(pg, stuck_seq, op), verdict=Verdict.HANG,
                data={"class": "never_joined", "waiting": waiting, "where": where,
                 "last_completed": {r: s.completed for r, s in by_rank.items()},
                 "last_enqueued": {r: s.enqueued for r, s in by_rank.items()},
                 "certainty": _unseen_certainty(never, by_rank)}))
        else:
            findings.append(Finding(
                kind=FindingKind.HANG, severity=Severity.CRITICAL,
                message=f"{_all_joined(run, waiting)} joined {op or 'collective'} #{stuck_seq} of process group {pg}"
                f"{_pg_desc(pg)} but it never completed" + (DRIVER_NOTE if driver else ""),
                hint=_all_joined_hint(stuck_seq, [r for r in enq if r not in by_rank]),
                evidence=tuple(_dedupe(evidence)),
                stuck=Stuck(pg, stuck_seq, op), verdict=Verdict.HANG,
                data={"class": "never_completed", "waiting": waiting, "where": where}))
        break  # the first stuck process group is the story; others usually wait on it

    fr = fr_hang_finding(run, bool(stalls), stall_ev)
    if fr is not None and _fr_says_more(fr, findings):
        findings = [replace(fr, evidence=tuple(_dedupe([*fr.evidence, *_ras_evidence(run, list(fr.ranks))])))]
    return findings or _weaker_signs(run, stall_ev, stalls, status)


HINT_BUSY = ("Rank {r} was busy with work of its own (a dataset's tokenizing or a cache built by the main process "
             "first, a checkpoint save, an evaluation) while the others waited for it in a collective or barrier past "
             "the process group's timeout: raise the timeout (init_process_group(timeout=timedelta(hours=2)), "
             "ddp_timeout, --ddp-timeout) or do that work before init_process_group, or on every rank.")


def _busy_elsewhere(run: Run, pg: str, seq: int, waiting: list[int]) -> BusyElsewhere | None:
    """``rules.hang.busy_elsewhere`` over the ranks' watchdog timeouts of (pg, seq) and the progress prints (or bars of
    any work) of each file that go on after the first of them."""
    first: dict[str, int] = {}
    for e in run.events:
        if e.kind == EventKind.WATCHDOG_TIMEOUT and e.data.get("seq") == seq and str(e.data.get("pg") or pg) == pg:
            first[e.evidence.file] = min(first.get(e.evidence.file, e.evidence.line), e.evidence.line)
    printers = [e.rank for e in run.events if e.kind in (EventKind.PROGRESS, EventKind.BAR_SEEN)
                and e.evidence.file in first and e.evidence.line > first[e.evidence.file]]
    return busy_elsewhere(waiting, run.job.world_size, printers) if printers else None


def _weaker_signs(run: Run, stall_ev: tuple[Evidence, ...], stalls: list, status: dict) -> list[Finding]:
    """Where no process group's status names a stuck collective: the first of the weaker signs of a hang, in order of
    how much each says (NCCL call counts, an init that never completed, exits, barriers, a unique-id wait, an
    nccl-tests table with no row, a watchdog report, a log that stops after init, a job stopped from outside)."""
    for sign in (lambda: _from_nccl_counts(run, stall_ev), lambda: _init_hang(run, stalls),
                 lambda: _exit_hang(run, status), lambda: _barrier_hang(run), lambda: _barrier_unreturned(run),
                 lambda: _unique_id_hang(run), lambda: _store_wait_hang(run), lambda: _tests_hang(run),
                 lambda: _watchdog_stuck(run),
                 lambda: _ahead_alone(run), lambda: _after_init_hang(run), lambda: _noted_stall(run),
                 lambda: _stopped_hang(run, bool(stalls))):
        found = list(sign())
        if found:
            return found
    return []


def _ahead_alone(run: Run) -> list[Finding]:
    """The program's own rank-stating prints end, with the log, at prints the other ranks never made
    (``rules.hang.ahead_alone``): those ranks are behind, the ones ahead wait for them. Stack dumps say where the
    ranks are better than prints do (a print only one rank makes by design looks the same): none then."""
    if any(e.kind in (EventKind.STACK_SNAPSHOT, EventKind.PROGRESS_WAIT) for e in run.events):
        return []
    last = {e.evidence.file: int(e.data.get("last_line") or 0) for e in run.events if e.kind == EventKind.FILE_END}
    failed = bool(failures_of_run(run)) or any(e.kind == EventKind.DIST_ERROR for e in run.events)
    for e in run.events:
        if e.kind != EventKind.RANK_PRINTS:
            continue
        tail = [(int(a), int(b), str(c)) for a, b, c in e.data.get("tail") or []]
        ends = bool(tail) and last.get(e.evidence.file) == tail[-1][0]
        st = ahead_alone(tail, e.data.get("printed_by") or {}, e.data.get("ranks") or [], int(e.data.get("shared") or 0),
                         ends, failed, _end_known(run) or finished_ok(run)) or behind_the_rest(
            {int(r): int(n) for r, n in e.data.get("made") or []}, ends, failed, _end_known(run) or finished_ok(run))
        if st is None:
            continue
        return [Finding(
            kind=FindingKind.HANG, severity=Severity.CRITICAL,
            message=f"rank{'s' if len(st.culprits) > 1 else ''} {fmt_ranks(list(st.culprits))} never came to where "
            f"rank{'s' if len(st.ahead) > 1 else ''} {fmt_ranks(list(st.ahead))} went on to: {st.why}; a possible hang, "
            f"the rank{'s' if len(st.ahead) > 1 else ''} ahead waiting in the next collective",
            ranks=st.culprits, hint=HINT_NEVER_JOINED.format(r=st.culprits[0], seq="the next one").replace(" #the", " the"),
            evidence=(e.evidence,), verdict=Verdict.HANG,
            data={"class": "ahead_alone", "waiting": list(st.ahead), "certainty": {"level": st.level, "why": st.why}})]
    return []


def _quiet_ranks(run: Run, by_rank: dict[int, RankPg], left: frozenset[int]) -> set[int]:
    """Ranks the input shows (a process of the job, a launcher's tag on their lines) with nothing of a collective:
    no status in any group, no failure, no error and no end of their own (``rules.hang.odd_one_out``'s quiet side;
    ranks whose end is shown left the job, and the collective they never came to names them)."""
    seen = {p.rank for p in run.job.processes if p.rank is not None}
    seen |= {e.rank for e in run.events if e.kind == EventKind.RANK_TAGGED and e.rank is not None}
    busy = {s.rank for s in run.pg_status} | {f.rank for f in failures_of_run(run) if f.rank is not None}
    busy |= {e.rank for e in run.events if e.kind == EventKind.DIST_ERROR and e.rank is not None}
    return {r for r in seen if r >= 0} - busy - set(by_rank) - set(left)


def _odd_finding(odd: OddOneOut, by_rank: dict[int, RankPg], op: str | None, pg: str, seq: int,
                 evidence: list[Evidence], where: dict[int, str]) -> Finding:
    """The hang ``rules.hang.odd_one_out`` names: a rank alone in a collective, or the few ranks never in it."""
    what = f"{op or 'collective'} #{seq} of process group {pg}{_pg_desc(pg)}"
    lone = set(odd.culprits) <= set(by_rank)
    if lone:
        r = odd.culprits[0]
        msg = f"rank {r} waited alone in {what} and timed out: {odd.why}"
        hint = (f"Rank {r} issued a collective the other ranks never issue: look for a collective (a barrier, a "
                "checkpoint save, a metric's all_reduce) under a rank-conditional branch (if rank == 0 / "
                "is_global_zero) or after the others finished; every rank must call the same collectives in the same order.")
    else:
        msg = f"rank{'s' if len(odd.culprits) > 1 else ''} {fmt_ranks(list(odd.culprits))} never joined {what}; {odd.why}"
        hint = HINT_NEVER_JOINED.format(r=odd.culprits[0], seq=seq)
    return Finding(
        kind=FindingKind.HANG, severity=Severity.CRITICAL, message=msg, ranks=odd.culprits, hint=hint,
        evidence=tuple(_dedupe(evidence)), stuck=Stuck(pg, seq, op), verdict=Verdict.HANG,
        data={"class": "alone" if lone else "never_joined", "waiting": sorted(by_rank), "where": where,
              "certainty": {"level": odd.level, "why": odd.why}})


def _fr_says_more(fr: Finding, findings: list[Finding]) -> bool:
    """The Flight Recorder judgement (``fr_findings``, with each operation's members, states and peers) over
    the process-group counts; the counts stay where they found a rank that died, or where the dumps name a
    culprit only by its missing dump."""
    if not findings:
        return True
    return findings[0].verdict is Verdict.HANG and not fr_by_silence(fr)


def _backend_named(run: Run) -> list[Finding]:
    """PyTorch's desync report naming the lagging ranks (``rules.named.desync_named``): the hang and its culprits."""
    reports = [e for e in run.events if e.kind == DESYNC_REPORT_EVENT]
    world = bounded_world(run.job.world_size, {p.rank for p in run.job.processes if p.rank is not None}
                          | {s.rank for s in run.pg_status})
    named = desync_named(((list(e.data.get("lagging") or []), e.data.get("seq"), e.data.get("op")) for e in reports),
                         world)
    if named is None:
        return []
    pg = next((str(e.data.get("pg")) for e in reports if e.data.get("pg")), "0")
    stuck = Stuck(pg, int(named.seq), canonical_op(named.op) if named.op else None) if named.seq is not None else None
    who = f"rank{'s' if len(named.culprits) > 1 else ''} {fmt_ranks(list(named.culprits))}" if named.culprits else ""
    what = f"{stuck.op or 'collective'} #{stuck.seq} of process group {pg}" if stuck else "the collective it timed out in"
    msg = f"{who} never finished or never joined {what}: {named.why}" if who else f"{named.why} ({what})"
    return [Finding(
        kind=FindingKind.HANG, severity=Severity.CRITICAL, message=msg, ranks=named.culprits,
        hint=HINT_NEVER_JOINED.format(r=named.culprits[0], seq=stuck.seq if stuck else "N") if named.culprits
        else HINT_ALL_JOINED.format(seq=stuck.seq if stuck else "N"),
        evidence=tuple(e.evidence for e in reports[:3]), stuck=stuck, verdict=Verdict.HANG,
        data={"class": "backend_named", "certainty": {"level": "confirmed", "why": "PyTorch's own desync report "
                                                     "names them"}})]


def _with_timeouts(status: dict[str, dict[int, RankPg]], run: Run) -> dict[str, dict[int, RankPg]]:
    """A rank with no status of its own in a group that others report on, whose watchdog timed out in work N
    of that group (``Watchdog caught collective operation timeout: WorkNCCL(SeqNum=N``), is in work N with N-1
    completed (a group's work completes in order): it joined, it is no culprit."""
    out = {pg: dict(by) for pg, by in status.items()}
    for e in run.events:
        seq = e.data.get("seq")
        pg = str(e.data.get("pg") or "0")
        if e.kind != EventKind.WATCHDOG_TIMEOUT or e.rank is None or not isinstance(seq, int) or pg not in out:
            continue
        if e.rank not in out[pg]:
            out[pg][e.rank] = RankPg(e.rank, pg, seq, seq, seq - 1, e.evidence, "watchdog_timeout")
    return out


def _exit_hang(run: Run, status: dict) -> list[Finding]:
    """Every collective completed everywhere, yet some ranks never exited and the job was ended from
    outside: the process hangs on its way out (no destroy_process_group, pending work, threads)."""
    if not from_outside(run.job.exit_code):
        return []
    hook_ranks = {e.rank for e in run.events if run.origin(e.evidence.file) is Origin.HOOK}
    hook_ranks |= {s.rank for by in status.values() for s in by.values()}
    if not hook_ranks or not status:
        return []
    for by_rank in status.values():
        for s in by_rank.values():
            if s.enqueued is not None and (s.completed is None or s.completed < s.enqueued):
                return []  # work pending: not an exit hang
    exited = {e.rank for e in run.exits if e.origin is Origin.HOOK}
    stuck = sorted(r for r in run.ranks() if r not in exited)
    if not stuck:
        return []
    where = {r: run.stacks[r] for r in stuck if r in run.stacks}
    return [Finding(
        kind=FindingKind.HANG, severity=Severity.CRITICAL,
        message=f"every collective completed, but rank{'s' if len(stuck) > 1 else ''} {fmt_ranks(stuck)} never exited and the "
        f"job was ended from outside (exit code {run.job.exit_code})", ranks=tuple(stuck),
        hint="The process hangs on its way out: call dist.destroy_process_group() at the end, wait for async work "
        "(work.wait()), and join or daemonize your own threads (data loaders, loggers).",
        evidence=_hook_lines(run, stuck), verdict=Verdict.HANG, data={"class": "exit", "where": where})]


def _died_first(run: Run, ranks: list[int], stalls: list) -> tuple[int, int | str] | None:
    """A culprit rank whose process failed of its own (``rules``: an exception, an OOM, an exit code of
    its own; not the user's interrupt, a kill from outside, or an abort by the watchdog) before the stall
    (``rules.hang.after_stall``: a failure printed after the others' timeouts is their echo), with its
    exit code or else what it failed of."""
    first = min(stalls, key=lambda e: (e.evidence.file, e.evidence.line), default=None)
    stall_t = min((e.ts for e in stalls if isinstance(e.ts, (int, float))), default=None)
    stall_at = (first.evidence.file, first.evidence.line) if first is not None else None
    causes = sorted((f for f in failures_of_run(run) if f.rank in ranks and f.is_cause
                     and not after_stall(f.t, f.order, stall_t, stall_at)),
                    key=lambda f: (f.t is None, f.t or 0.0, f.order))
    if not causes:
        return None
    r = causes[0].rank
    assert r is not None
    code = next((e.exitcode for e in run.exits if e.rank == r and e.exitcode not in (None, 0)), None)
    return r, code if code is not None else causes[0].kind.value


def _ended(code: int | str) -> str:
    return f"exit code {code}" if isinstance(code, int) else code.replace("_", " ")


def _init_hang(run: Run, stalls: list) -> list[Finding]:
    """Init START without COMPLETE on some ranks, in a job that failed or stalled."""
    failed = bool(stalls) or any(e.exitcode not in (None, 0) for e in run.exits) or run.job.exit_code not in (None, 0) \
        or any(is_echo_of_init(f) for f in failures_of_run(run))  # the framework gave up on the start
    if not failed:
        return _excerpt_init_stall(run)
    out = []
    for c in run.communicators:
        if not c.init_started or c.init_complete == c.init_started and len(c.init_started) == c.nranks:
            continue
        absent = sorted(set(range(c.nranks)) - set(c.init_started))
        stuck = sorted(set(c.init_started) - set(c.init_complete))
        if not absent and not stuck:
            continue
        culprits = tuple(c.members.get(r, r) for r in (absent or stuck))
        msg = (f"communicator {c.id} never finished initialising: "
               + (f"rank(s) {', '.join(map(str, absent))} never started init" if absent else "")
               + ("; " if absent and stuck else "")
               + (f"rank(s) {', '.join(str(c.members.get(r, r)) for r in stuck)} started but never completed" if stuck else ""))
        out.append(Finding(
            kind=FindingKind.HANG, severity=Severity.CRITICAL, message=msg, ranks=culprits,
            hint="Init waits for every rank: check that all ranks start (world size, scheduler), that MASTER_ADDR / "
            "MASTER_PORT are the same everywhere and reachable, NCCL_SOCKET_IFNAME, and firewalls between hosts.",
            evidence=_init_lines(c, stuck or absent), verdict=Verdict.HANG, data={"class": "init"}))
    return out


def _init_lines(c: Communicator, comm_ranks: Iterable[int], most: int = 4) -> tuple[Evidence, ...]:
    """The last Init line of each of ``comm_ranks`` that printed one (its START or comm-info line when it never
    completed); when none of them printed any (ranks that never started), the Init lines of those that did."""
    mine = [c.init_lines[r] for r in sorted(comm_ranks) if r in c.init_lines]
    return tuple((mine or [c.init_lines[r] for r in sorted(c.init_lines)])[:most])


def _hook_lines(run: Run, ranks: list[int], most: int = 4) -> tuple[Evidence, ...]:
    """The last line the hook wrote for each of ``ranks`` (what it saw last of a rank that never exited)."""
    last = {e.rank: e.evidence for e in run.events if e.rank in ranks and run.origin(e.evidence.file) is Origin.HOOK}
    return tuple(last[r] for r in sorted(last))[:most]


def _excerpt_init_stall(run: Run) -> list[Finding]:
    """A pasted log that stops inside init on some ranks, the job's exit unknown (``rules.hang.init_stall``):
    a possible hang at init, the ranks that never completed as suspects (not culprits: nothing shows why)."""
    if failures_of_run(run) or any(e.kind in (EventKind.NCCL_WARN, EventKind.DIST_ERROR) for e in run.events):
        return []  # something failed: its own finding tells the story, not the log's end
    exit_known = run.job.exit_code is not None or bool(run.exits)
    excerpt = not run.from_ncclscope()
    if excerpt and not exit_known:
        partial = _partial_init_hang(run)
        if partial:
            return partial
    out = []
    for c in run.communicators:
        st = init_stall(c.init_started, c.init_complete, False, exit_known, excerpt)
        if st is None:
            continue
        suspects = sorted(c.members.get(r, r) for r in st.suspects)
        out.append(Finding(
            kind=FindingKind.HANG, severity=Severity.CRITICAL,
            message=f"communicator {c.id} never finished initialising in this log: rank(s) {fmt_ranks(suspects)} "
            "started init and printed no Init COMPLETE before the log ends",
            hint="Init waits for every rank: check that all ranks start (world size, scheduler), that MASTER_ADDR / "
            "MASTER_PORT are the same everywhere and reachable, NCCL_SOCKET_IFNAME, and firewalls between hosts; "
            "the logs of the ranks not shown here say whether they reached init.",
            evidence=_init_lines(c, st.suspects), verdict=Verdict.HANG,
            data={"class": "init", "suspects": suspects[:4096], "certainty": {"level": st.level, "why": st.why}}))
        break  # one communicator's stall is the story
    return out


def _partial_init_hang(run: Run) -> list[Finding]:
    """Some ranks of a communicator printed Init COMPLETE, the others never did, and the log ends in NCCL's
    lines (no collective, no line of the application after the last NCCL line, the caller checked that nothing
    failed and the exit is unknown): those still in init are the culprits (``rules.hang.partial_init``)."""
    ends = [e for e in run.events if e.kind == EventKind.FILE_END and e.data.get("last_nccl_line") is not None]
    if not ends or any(int(e.data.get("text_after_nccl") or 0) > 0 for e in ends) or len(run.collectives):
        return []
    nccl_procs = [p for p in run.job.processes if p.host or p.pid]  # processes that printed NCCL lines
    unranked = sum(1 for p in nccl_procs if p.rank is None)
    tagged = [p.rank for p in nccl_procs if p.rank is not None]
    top = max((c.nranks for c in run.communicators if c.parent is None), default=0)
    for c in run.communicators:
        whole_world = c.parent is None and c.nranks == top
        st = partial_init(c.nranks, c.init_started, c.init_complete, unranked if whole_world else -1,
                          tagged if whole_world else ())
        if st is None:
            continue
        culprits = sorted(c.members.get(r, r) for r in st.culprits)
        done = sorted(c.members.get(r, r) for r in c.init_complete)
        return [Finding(
            kind=FindingKind.HANG, severity=Severity.CRITICAL,
            message=f"communicator {c.id} never finished initialising: rank{'s' if len(done) > 1 else ''} {fmt_ranks(done)} "
            f"printed Init COMPLETE, rank{'s' if len(culprits) > 1 else ''} {fmt_ranks(culprits)} of its {c.nranks} never "
            "did before the log ends; the ranks done wait for them in their first collective",
            ranks=tuple(culprits),
            hint=f"Rank{'s' if len(culprits) > 1 else ''} {fmt_ranks(culprits)} stopped inside NCCL's init, setting up "
            "their connections: look at their last NCCL lines (the channel or transport they were connecting), the "
            "network between their host and the others (NCCL_SOCKET_IFNAME, NCCL_IB_HCA, firewalls), and the links of "
            "their GPUs (PCI ACS / IOMMU, NCCL_P2P_DISABLE=1 to test); a stack of one (py-spy dump --native) shows where.",
            evidence=tuple(e.evidence for e in ends[:3]), verdict=Verdict.HANG,
            data={"class": "init", "suspects": culprits[:4096], "certainty": {"level": st.level, "why": st.why}})]
    return []


HINT_FIRST_COLLECTIVE = (
    "A hang in the first collective after init is most often the path between the GPUs: PCI ACS or an IOMMU "
    "on the PCIe switch drops P2P traffic (disable ACS, or try NCCL_P2P_DISABLE=1), P2P that the GPUs do not "
    "support (consumer cards), a broken NVLink bridge, or a network path that init used but the data does not "
    "(NCCL_SOCKET_IFNAME, NCCL_IB_HCA). Run with NCCL_DEBUG=INFO and compare with nccl-tests on the same GPUs."
)


def _barrier_hang(run: Run) -> list[Finding]:
    """The store-based barrier of init_process_group that not every worker reached (``rules.facts.store_barriers``);
    the first that stalled is the story."""
    for key, evs, st in store_barriers(run)[:1]:
        who = (f"rank{'s' if len(st.culprits) > 1 else ''} {fmt_ranks(st.culprits)} never reached it" if st.culprits
               else st.why if not st.suspects else "the ranks that never reached it are not all shown")
        waiting = sorted({e.rank for e in evs if e.rank is not None})
        return [Finding(
            kind=FindingKind.HANG, severity=Severity.CRITICAL,
            message=f"init_process_group's store-based barrier ({key}) never completed "
            f"({'it timed out' if st.level == Certainty.CONFIRMED else 'the ranks kept waiting'}): {who}",
            ranks=st.culprits, evidence=tuple(_dedupe([e.evidence for e in evs]))[:3], verdict=Verdict.HANG,
            hint="Every rank must call init_process_group: look at what the missing rank runs before it (an exception "
            "in its own log, a different WORLD_SIZE / RANK, a rank started on the wrong host, a slow or failed "
            "launch), and that all ranks use the same MASTER_ADDR / MASTER_PORT.",
            data={"class": "store_barrier", "waiting": waiting, "suspects": list(st.suspects),
                  "certainty": {"level": st.level, "why": st.why}})]
    return []


def _barrier_unreturned(run: Run) -> list[Finding]:
    """Logs whose last line is c10d's warning that a rank starts barrier() on a guessed GPU
    (``rules.hang.barrier_unreturned``)."""
    entered: dict[str, tuple[int, tuple[int, ...]]] = {}
    evidence: list[Evidence] = []
    for e in run.events:
        if e.kind != EventKind.BARRIER_ENTERED or e.rank is None:
            continue
        line, ranks = entered.get(e.evidence.file, (0, ()))
        entered[e.evidence.file] = (max(line, e.evidence.line), (*ranks, e.rank))
        evidence.append(e.evidence)
    if not entered:
        return []
    last = {e.evidence.file: int(e.data.get("last_line") or 0) for e in run.events if e.kind == EventKind.FILE_END}
    failed = bool(failures_of_run(run)) or any(e.kind == EventKind.DIST_ERROR for e in run.events)
    st = barrier_unreturned(entered, last, failed, _end_known(run) or finished_ok(run))
    if st is None:
        return []
    return [Finding(
        kind=FindingKind.HANG, severity=Severity.CRITICAL,
        message=f"rank{'s' if len(st.waiting) > 1 else ''} {fmt_ranks(list(st.waiting))} started barrier() on a GPU "
        "c10d guessed (no device set) and the log ends there: the barrier never returned",
        hint="Call torch.cuda.set_device(local_rank) before init_process_group (or pass device_id= to it / device_ids= "
        "to barrier()), so that every rank's barrier runs on its own GPU; ranks sharing or guessing a GPU can wait in "
        "the barrier forever.",
        evidence=tuple(evidence[-3:]), verdict=Verdict.HANG,
        data={"class": "barrier_unreturned", "waiting": list(st.waiting),
              "certainty": {"level": st.level, "why": st.why}})]


def _unique_id_hang(run: Run) -> list[Finding]:
    """A rank timed out in the store waiting for the NCCL unique id of its group's first collective
    (``rules.hang.unique_id_wait``): the group's root never reached that collective."""
    waits = [(e, w) for e in run.events if e.kind == EventKind.DIST_ERROR
             and (w := unique_id_wait(str(e.data.get("message") or "")) or unique_id_wait(e.text)) is not None]
    whole = world_waits([(e.rank, w) for e, w in waits], run.job.world_size)
    for e, w in waits:
        if whole:
            w = replace(w, default_group=True)
        group = "the default process group" if w.default_group else "its process group (group ranks)"
        certainty = ({"level": "likely", "why": f"rank {w.waiter} timed out waiting for rank {w.root}'s NCCL unique id "
                      "in the store; rank's own records do not say where it is"} if w.default_group else
                     {"level": "possible", "why": "the ranks the message names are ranks of a group whose members "
                      "are not known here"})
        return [Finding(
            kind=FindingKind.HANG, severity=Severity.CRITICAL,
            message=f"rank {w.waiter} timed out waiting for rank {w.root} to publish the NCCL unique id of the first "
            f"collective of {group} ({w.error[:160]}): rank {w.root} never reached that collective",
            ranks=(w.root,) if w.default_group else (), evidence=(e.evidence,), verdict=Verdict.HANG,
            hint=f"Rank {w.root} creates the communicator's unique id when it reaches its first collective: look at "
            f"what it runs before that collective (a data loader, a rank-conditional branch, a checkpoint load, an "
            "exception in its own log), and check that every rank calls the same collectives in the same order.",
            data={"class": "unique_id_wait", "waiting": [w.waiter] if w.default_group else [],
                  "suspects": [w.root], "certainty": certainty})]
    return []


def _inits_done(run: Run) -> bool:
    """Every communicator built and none still in init: an Init COMPLETE for each Init START (NCCL 2.3 prints no
    init phase at all, only the "comm 0x.. rank N nranks M" line of a communicator that exists)."""
    return bool(run.communicators) and all(c.init_complete >= c.init_started for c in run.communicators)


def _formed_without_nccl(run: Run) -> bool:
    """No NCCL line tells of the communicators, and a launcher or torch says every process joined the group
    (``GroupFormed``): where NCCL_DEBUG is unset, that word is the only sign the set-up was done."""
    return not run.communicators and any(e.kind == EventKind.GROUP_FORMED for e in run.events)


def _last_line_read(run: Run, file: str) -> tuple[Evidence, ...]:
    """The last line of ``file`` that a record of the run holds (an event, an Init line): where the output ends."""
    lines = [e.evidence for e in run.events if e.evidence.file == file and e.evidence.line >= 1]
    lines += [e for c in run.communicators for e in c.init_lines.values() if e.file == file]
    return (max(lines, key=lambda e: e.line),) if lines else ()


def _tests_hang(run: Run) -> list[Finding]:
    """nccl-tests output with no result row after NCCL's init completed (``rules.hang.no_rows_after_init``): its Init
    COMPLETE lines, else its result table's header (printed once the communicators are built) in that output."""
    tests = [f for f, fmt in run.files if fmt == Format.NCCL_TESTS]
    inits = _inits_done(run)
    before_table = False
    if not inits:  # no NCCL INFO line (where NCCL's own lines are, they say how far init went): the outputs that
        # printed their table's header had built their communicators; with no header at all, the output ends before
        # its table (NCCL_DEBUG=WARN prints the release and nothing of init): init or the first collective never ended
        headed = {e.evidence.file for e in run.events if e.kind == EventKind.TESTS_TABLE_HEADER}
        info = any(e.kind.from_nccl for e in run.events) or bool(run.communicators) or any(
            " NCCL INFO " in ev.text for ev in run.job.version_lines.values() if ev is not None)  # NCCL_DEBUG=INFO
        before_table = not headed and not info
        tests = [] if info else sorted(headed & set(tests)) if headed else tests
        if before_table and any(e.kind in (EventKind.DIST_ERROR, EventKind.LAUNCH_FAILURE) for e in run.events):
            return []  # the launcher, the MPI runtime or the program failed on the way: its error is the story
    failed, exit_known = bool(failures_of_run(run)), run.job.exit_code is not None or bool(run.exits)
    files = no_rows_after_init(
        tests, (str(t.get("file")) for t in run.nccl_tests), inits or bool(tests), failed, exit_known)
    if not files:
        return _sweep_stopped(run, failed, exit_known)
    where = ("ends after its preamble (the devices and NCCL's release), before its table's header, with no result row: "
             "the communicators' init or the benchmark's first collective never completed" if before_table else
             "ends after NCCL's init (Init COMPLETE or its table's header) with no result row: the benchmark's first "
             "collective never completed")
    return [Finding(
        kind=FindingKind.HANG, severity=Severity.CRITICAL,
        message=f"nccl-tests output {files[0]} {where} (every rank in it, none at fault in the text)",
        hint=HINT_FIRST_COLLECTIVE, evidence=_last_line_read(run, files[0]), verdict=Verdict.HANG,
        data={"class": "first_collective", "culprits": [], "certainty": {
            "level": "possible", "why": "the output ends inside the first collective and the run's end is unknown: "
            "a finished or failed benchmark prints its rows, its summary or its error"}})]


def _sweep_stopped(run: Run, failed: bool, exit_known: bool) -> list[Finding]:
    """An nccl-tests output whose last line is a result row (``rules.hang.sweep_stopped``): the next size never ended."""
    last_row: dict[str, tuple[int, int]] = {}  # file -> (line, size) of its last row
    for t in run.nccl_tests:
        f, line = str(t.get("file")), int(t.get("line") or 0)
        if line >= last_row.get(f, (0, 0))[0]:
            last_row[f] = (line, int(t.get("size") or 0))
    for f, (line, size) in sorted(last_row.items()):
        read = _last_line_read(run, f)  # a benchmark's output has no FileEnd: its last record, or its last row
        if not sweep_stopped(line, max(line, read[0].line if read else 0), failed, exit_known):
            continue
        return [Finding(
            kind=FindingKind.HANG, severity=Severity.CRITICAL,
            message=f"nccl-tests output {f} stops after its {size}-byte row with no summary and nothing after it: the "
            "next size's collective never completed (every rank in it, none at fault in the text)",
            hint=HINT_SWEEP_STOPPED, evidence=_last_line_read(run, f), verdict=Verdict.HANG,
            data={"class": "sweep_stopped", "culprits": [], "certainty": {
                "level": "possible", "why": "the output ends at a result row and the run's end is unknown: a finished "
                "benchmark prints its summary, a failed one its error"}})]
    return []


HINT_SWEEP_STOPPED = ("A sweep that stops at one message size, every rank in its collective: the size where NCCL changes "
                      "algorithm or protocol (NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=TUNING shows which), a link that "
                      "drops packets at that size, or nodes whose NCCL releases, CPUs or NICs differ and so choose "
                      "differently. Rerun that size alone (-b and -e), and with NCCL_PROTO=Simple or NCCL_ALGO=Ring to "
                      "see which path hangs.")


NOTE_MARKS = "()<>[]#*. "  # what sets a poster's note apart


def _noted_stall(run: Run) -> list[Finding]:
    """A poster's note in the paste that the output stopped there (``StallNoted``: ``(no further output for 40+
    minutes)``, ``<hangs here>``), nothing failed before it and the job's end is not shown: a hang at that point,
    likely (whoever watched the job says so); the note does not say where the ranks wait, so no rank is named."""
    notes = [e for e in run.events if e.kind == EventKind.STALL_NOTED]
    if not notes or failures_of_run(run) or _end_known(run) or finished_ok(run):
        return []
    return [Finding(
        kind=FindingKind.HANG, severity=Severity.CRITICAL,
        message=f"the output stops where its poster noted it stops ({notes[0].text.strip().strip(NOTE_MARKS)[:160]}), with nothing failed "
        "before it: a hang at that point (where the ranks wait is not in the text)",
        hint="Find where each rank waits: py-spy dump --pid on every rank (and --native for NCCL's frames), or torch's "
        "Flight Recorder (TORCH_NCCL_TRACE_BUFFER_SIZE, a dump on the watchdog's timeout); NCCL_DEBUG=INFO shows where "
        "NCCL stops.", evidence=tuple(e.evidence for e in notes[:2]), verdict=Verdict.HANG,
        data={"class": "noted_stall", "waiting": [], "certainty": {
            "level": "likely", "why": "the note in the paste says the output stopped there; no timeout or stack says where"}})]


STORE_WAIT_RE = re.compile(r"waitForInput: socket .{0,300}?timed out after (?P<ms>\d{1,12}) ?ms")


def _store_wait_hang(run: Run) -> list[Finding]:
    """c10d's own lines that a rank's read from the TCP store gave up (``waitForInput: socket ... timed out after
    1800000ms``): the rank waited in the store for a key (a peer at the rendezvous, a group root's NCCL unique id, a
    store barrier) until the timeout, nothing failed otherwise and the program printed no progress after it. A hang at
    that wait, likely; the lines do not say whose key it waited for, so no rank is named."""
    if failures_of_run(run):
        return []
    waits = [(e, m) for e in run.events if e.kind == EventKind.C10D_LINE and (m := STORE_WAIT_RE.search(e.text))]
    if not waits:
        return []
    if progress_after(run, (e for e, _ in waits)):  # the program went on after them: not a stall
        return []
    ranks = sorted({e.rank for e, _ in waits if e.rank is not None})
    who = f"rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)}" if ranks else "a rank"
    secs = max(int(m.group("ms")) for _, m in waits) / 1000
    return [Finding(
        kind=FindingKind.HANG, severity=Severity.CRITICAL,
        message=f"{who} waited in c10d's TCP store for {secs:g} s and gave up (c10d: a read from the store timed out): "
        "the key waited for never came (a peer at the rendezvous, a group root's NCCL unique id, a store barrier)",
        hint="Every rank waits in the store for the others: find the ranks (or the node) that never arrived, in their "
        "own logs (a crash, a long data preparation on one rank, a node that never started); check that every node "
        "reaches MASTER_ADDR:MASTER_PORT and that the world size matches the processes started.",
        evidence=tuple(_dedupe([e.evidence for e, _ in waits]))[:3], verdict=Verdict.HANG,
        data={"class": "store_wait", "waiting": ranks, "certainty": {
            "level": "likely", "why": "c10d's own lines say the ranks' reads from the store timed out; whose key they "
            "waited for is not in these lines"}})]


def _watchdog_stuck(run: Run) -> list[Finding]:
    """PyTorch's heartbeat monitor saw a rank's watchdog thread make no progress ('Heartbeat monitor timed
    out', 'watchdog got stuck for N seconds'): the process is blocked in a CUDA or NCCL call; these lines do
    not say which collective, so no rank is named."""
    hb = [e for e in run.events if e.kind == EventKind.HEARTBEAT_TIMEOUT]
    if not hb:
        return []
    ranks = sorted({e.rank for e in hb if e.rank is not None})
    who = f"rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)}" if ranks else "a rank"
    return [Finding(
        kind=FindingKind.HANG, severity=Severity.CRITICAL,
        message=f"the NCCL watchdog of {who} made no progress and PyTorch's heartbeat monitor gave up on it: the "
        "process is blocked inside a CUDA or NCCL call (a collective that never completes, or a teardown that hangs)",
        hint="Find the call it is blocked in: py-spy dump --native on a stuck rank, or the Flight Recorder dump the "
        "monitor writes (TORCH_NCCL_TRACE_BUFFER_SIZE, TORCH_NCCL_DUMP_ON_TIMEOUT=1); look at the NCCL WARN lines and "
        "GPU health (Xid errors). At exit: call dist.destroy_process_group() once every collective has finished.",
        evidence=tuple(_dedupe([e.evidence for e in hb]))[:3], verdict=Verdict.HANG,
        data={"class": "watchdog_stuck", "waiting": ranks, "certainty": {
            "level": "likely", "why": "the ranks' own heartbeat monitors say their watchdogs were stuck; which "
            "collective each was in is not in these lines"}})]


def _text_after_init(run: Run, end: LogEvent) -> int:
    """The application's lines after NCCL's init in ``end``'s file: its non-NCCL lines after the last NCCL line, or,
    where that last line is NCCL's teardown of a communicator (``Destroy COMPLETE``), 1 for the program's progress
    prints before it (a run that trained, then destroyed its communicators: the init was not where it stopped)."""
    n = int(end.data.get("text_after_nccl") or 0)
    if n or "Destroy COMPLETE" not in end.evidence.text:
        return n
    f = end.evidence.file
    return int(any(e.kind == EventKind.PROGRESS and e.evidence.file == f and e.evidence.line < end.evidence.line
                   for e in run.events))


def _after_init_hang(run: Run) -> list[Finding]:
    """Logs that stop right after NCCL's init (``rules.hang.ends_after_init``), from the ``file_end``
    events the log reader gives (each file's non-NCCL lines after its last NCCL line)."""
    ends = [e for e in run.events if e.kind == EventKind.FILE_END and e.data.get("last_nccl_line") is not None]
    complete = _inits_done(run)
    timed = any(e.kind == EventKind.PROGRAM_TIMING for e in run.events)  # the program printed collectives' times
    st = ends_after_init(
        (_text_after_init(run, e) for e in ends), complete, _past_first_collective(run) or timed,
        bool(failures_of_run(run)) or any(e.kind == EventKind.DIST_ERROR for e in run.events), _end_known(run),
        not run.from_ncclscope())
    if st is None:
        return _setup_hang(run, ends) or _frozen_bar(run, SETUP_NCCL if complete else SETUP_GROUP if _formed_without_nccl(run) else None)
    if start_only_of_run(run) is not None:  # NCCL's lines alone, ending at a completed init: a start, no silence
        return []
    if _went_on_elsewhere(run, {e.evidence.file for e in ends}):  # NCCL_DEBUG_FILE apart from the program's output
        return []
    # ranks of a communicator the log never shows (another node's log, not pasted): built as far as it can tell
    built = ("every communicator built" if all(len(c.init_complete) >= c.nranks for c in run.communicators if c.init_complete)
             else "every rank it shows built its communicators; the others' lines are not in it")
    first = " and each rank's launch of its first collective" if len(run.collectives) else ""
    return [Finding(
        kind=FindingKind.HANG, severity=Severity.CRITICAL,
        message=f"the log ends right after NCCL's init{first} ({built}): no line of the application, no further "
        "collective and no exit after it; a possible hang in the first collective (no rank can be named from this text)",
        hint=HINT_FIRST_COLLECTIVE, evidence=tuple(e.evidence for e in ends[:3]), verdict=Verdict.HANG,
        data={"class": "after_init", "certainty": {"level": st.level, "why": st.why}})]


def _past_first_collective(run: Run) -> bool:
    """A collective is recorded past the launch of each communicator's first: a later one (NCCL's COLL line of
    opCount 1 or more), or any record that tells more than a launch (the hook's, Flight Recorder's). NCCL prints a
    collective's line as it is launched, so a log whose last lines launch the first one says nothing of its end."""
    df = run.collectives
    return bool(len(df)) and bool((df["seq"] > 1).any() or (df["source"] != "nccl").any())


def _stopped_hang(run: Run, stalled: bool) -> list[Finding]:
    """The job was stopped from outside (the user's Ctrl-C, the scheduler's time limit or cancel, a kill) before
    its ranks finished, nothing of its own failing first (``rules.stopped.stopped_unfinished``). A hangup signal
    alone (SIGHUP: the terminal or ssh session the job ran under closed), in a job that was printing its progress, is
    no reaction to a stall: ``_hung_up``."""
    if (hup := _hung_up(run, stalled)):
        return hup
    seen = {p.rank for p in run.job.processes if p.rank is not None}
    finished = {x.rank for x in run.exits if x.exitcode == 0 and x.rank is not None}
    finished |= {e.rank for e in run.events if e.kind in (EventKind.PROGRAM_EXIT, EventKind.RANK_FINISHED) and e.rank is not None}
    reasons = [e.data.get("reason") for e in run.events if e.kind == EventKind.JOB_CANCELLED]
    st = stopped_unfinished(failures_of_run(run), stalled, seen, finished, reasons)
    if st is None:
        return []
    who = (f"rank{'s' if len(st.waiting) > 1 else ''} {fmt_ranks(st.waiting)} never finished" if st.waiting else
           "every rank it shows had finished, yet the job did not end by itself" if seen else
           "no rank had finished")
    return [Finding(
        kind=FindingKind.HANG, severity=Severity.CRITICAL,
        message=f"the job was stopped from outside ({st.how}) with nothing failing before it: {who}; a likely hang "
        "(where the ranks waited is not in the text)",
        hint="A job stopped while it made no progress: rerun with NCCL_DEBUG=INFO and TORCH_NCCL_TRACE_BUFFER_SIZE set "
        "(or under `ncclscope run`), and take a stack of each rank before stopping it (py-spy dump --native --pid): "
        "the rank outside the collective the others wait in is the one to look at. If every rank had finished, the "
        "processes hang on their way out: call dist.destroy_process_group() and join your own threads.",
        evidence=(_stop_lines(run) + tuple(e.evidence for e in run.events if e.kind in (EventKind.DIST_ERROR, EventKind.JOB_CANCELLED)))[:3],
        verdict=Verdict.HANG,
        data={"class": "stopped", "waiting": list(st.waiting)[:4096], "finished": list(st.finished)[:4096],
              "certainty": {"level": st.level, "why": st.why}})]


def _hung_up(run: Run, stalled: bool) -> list[Finding]:
    """Every stop the launcher reports is a hangup (SIGHUP), the job printed its progress, no stall was seen and nothing
    of its own failed: the session that ran it ended (a closed terminal, an ssh connection dropped, nohup not used), and
    the job was killed with it. A crash from outside, no rank at fault."""
    stops = [e for e in run.events if e.kind == EventKind.LAUNCHER_STOPPED]
    if stalled or not stops or any(e.data.get("signal") != "SIGHUP" for e in stops):
        return []
    if not any(e.kind in (EventKind.PROGRESS, EventKind.BAR_SEEN) for e in run.events):
        return []
    if any(f.is_cause for f in failures_of_run(run)):
        return []
    return [Finding(
        kind=FindingKind.CRASH, severity=Severity.CRITICAL, verdict=Verdict.CRASH,
        message="the job was killed by a hangup signal (SIGHUP) while it was making progress: the terminal or ssh "
        "session it ran under closed, and the launcher shut its workers down with it; no stall and no rank at fault",
        hint="Run long jobs detached from the login session: under the scheduler (sbatch), in tmux or screen, or with "
             "nohup ... & (setsid for the launcher's whole process group); keep ssh sessions alive (ServerAliveInterval).",
        evidence=tuple(e.evidence for e in stops[:2]),
        data={"class": "hangup", "culprits": [], "certainty": {
            "level": "likely", "why": "the launcher's own word of a SIGHUP, after progress the job printed"}})]


def _stop_lines(run: Run) -> tuple[Evidence, ...]:
    """The first line that shows the job stopped from outside (the interrupt, the signal, the kill)."""
    stops = sorted((f for f in failures_of_run(run) if f.kind in (FailureKind.INTERRUPT, FailureKind.KILLED)
                    and f.order[1] >= 1), key=lambda f: (f.t is None, f.t or 0.0, f.order))
    return tuple(Evidence(f.order[0], f.order[1], f.text) for f in stops[:1])


def _end_known(run: Run) -> bool:
    """The job's end is known: an exit code, an exit record, or NCCL's proxy service seeing local ranks' connections
    close (``[Service thread] Connection closed by localRank N``: processes exiting or tearing down), or a proxy failing
    the Close of a rank destroying its communicator (``rules.facts.teardown_processes``)."""
    return run.job.exit_code is not None or bool(run.exits) or any(
        e.kind == EventKind.NCCL_NET_SERVICE_CLOSED for e in run.events) or bool(teardown_of_run(run))


def _frozen_bar(run: Run, setup_done: str | None) -> list[Finding]:
    """An input ending at a progress bar still at 0% after init (``rules.hang.frozen_at_start``)."""
    ends = [e for e in run.events if e.kind == EventKind.FILE_END]
    failed = bool(failures_of_run(run)) or any(e.kind == EventKind.DIST_ERROR for e in run.events)
    st = frozen_at_start((e.evidence.text for e in ends), setup_done, bool(len(run.collectives)), failed, _end_known(run))
    mark = ZERO_BAR_RE
    if st is None:  # else a file that ends at its training loop's announcement
        st = loop_started((e.evidence.text for e in ends), setup_done, run.job.world_size, bool(len(run.collectives)),
                          failed, _end_known(run))
        mark = LOOP_START_RE
    if st is None:
        return []
    return [Finding(
        kind=FindingKind.HANG, severity=Severity.CRITICAL,
        message=f"{st.why}; a possible hang in the first collective (no rank can be named from this text)",
        hint=HINT_FIRST_COLLECTIVE, evidence=tuple(e.evidence for e in ends if mark.search(e.evidence.text))[:2],
        verdict=Verdict.HANG, data={"class": "after_init", "certainty": {"level": st.level, "why": st.why}})]


def _went_on_elsewhere(run: Run, nccl_files: set[str]) -> bool:
    """A file without NCCL's lines (the program's own output, kept apart from an NCCL_DEBUG_FILE or a redirected
    stream) shows the program working after its start: its progress printed ``MIN_PROGRESS`` times or more, or every
    rank seen printed its own end. NCCL prints nothing while a job trains, so its file ending at init says nothing
    then."""
    prints = sum(int(e.data.get("count") or 0) for e in run.events
                 if e.kind == EventKind.PROGRESS and e.evidence.file not in nccl_files)
    seen = {p.rank for p in run.job.processes if p.rank is not None}
    ended = {e.rank for e in run.events if e.kind in (EventKind.RANK_FINISHED, EventKind.PROGRAM_EXIT)
             and e.rank is not None and e.evidence.file not in nccl_files}
    return prints >= MIN_PROGRESS or bool(seen) and seen <= ended


def _setup_hang(run: Run, ends: list) -> list[Finding]:
    """Logs that stop inside NCCL's set-up, before any communicator is reported (``rules.hang.ends_in_setup``); an
    NCCL WARN whose error code NCCL returns up the stack after it (``rules.hang.error_returned``) is a failure there."""
    if quoted_info_of_run(run) is not None:
        return []  # a few INFO lines quoted to ask about them: no log that stopped in the set-up
    returned = error_returned(((e.evidence.file, e.evidence.line) for e in run.events if e.kind == EventKind.NCCL_WARN),
                              ((e.evidence.file, e.evidence.line, int(e.data.get("code") or 0)) for e in run.events
                               if e.kind == EventKind.NCCL_BACKTRACE))
    st = ends_in_setup(
        (int(e.data.get("text_after_nccl") or 0) for e in ends), any(p.host or p.pid for p in run.job.processes),
        bool(run.communicators), bool(len(run.collectives)),
        bool(failures_of_run(run)) or any(e.kind == EventKind.DIST_ERROR for e in run.events) or returned
        or (bool(reclaim_warns(run.events)) and not nccl_setup_seen(run)),  # a clean-up alone: past its set-up
        _end_known(run), not run.from_ncclscope())
    if st is None:
        return []
    return [Finding(
        kind=FindingKind.HANG, severity=Severity.CRITICAL,
        message="the log ends inside NCCL's set-up: NCCL printed its bootstrap and topology lines but no communicator "
        "was reported, and nothing follows; a possible hang in NCCL's init (no rank can be named from this text)",
        hint="Init waits for every rank and for every link it sets up: check that all ranks start and reach init, "
        "MASTER_ADDR / MASTER_PORT and NCCL_SOCKET_IFNAME, firewalls between hosts, and the links between the GPUs "
        "(NVLink bridges seated, PCI ACS / IOMMU, NCCL_P2P_DISABLE=1 to test); nvidia-smi topo -m and nccl-tests "
        "on the same GPUs tell which.",
        evidence=tuple(e.evidence for e in ends[:3]), verdict=Verdict.HANG,
        data={"class": "init", "certainty": {"level": st.level, "why": st.why}})]


def _nowhere(run: Run, rank: int) -> bool:
    """No line of the input is ``rank``'s: no process, status or event of it."""
    return (all(p.rank != rank for p in run.job.processes) and all(e.rank != rank for e in run.events)
            and all(s.rank != rank for s in run.pg_status))


def _rank_zero(run: Run, seen: set[int]) -> set[int]:
    """Rank 0, a member of every world, where the world size is not stated and the input shows ranks 1 and up but no
    line of rank 0's (its own lines would have it seen) in an input that begins before the failure: a member to judge
    like the others."""
    if run.job.world_size or 0 in seen or len(seen) < 2 or min(seen) < 0 or any(e.rank == 0 for e in run.events):
        return set()
    if implied_world(seen) is not None and rank_zero_busy(run):  # ranks 1 to k waited while rank 0 worked
        return {0}
    # the input begins before the ranks' failure (the program's own lines above the first ranked one), not a pasted
    # fragment of their teardown: rank 0's lines would be in it
    first = min(((e.evidence.file, e.evidence.line) for e in run.events if e.rank is not None and e.evidence), default=None)
    return {0} if first is not None and first[1] > 2 else set()


def _all_joined_hint(seq: int, unseen: list[int]) -> str:
    """Every rank seen is in #seq; ranks of the world with no input may not be."""
    if not unseen:
        return HINT_ALL_JOINED.format(seq=seq)
    return (f"Rank{'s' if len(unseen) > 1 else ''} {fmt_ranks(unseen)} {'are' if len(unseen) > 1 else 'is'} not in the "
            f"input: {'their' if len(unseen) > 1 else 'its'} logs (stderr, NCCL_DEBUG output, a Flight Recorder dump) say "
            f"whether {'they' if len(unseen) > 1 else 'it'} reached #{seq}; one that did not is the one to look at. If "
            "every rank is in it: " + HINT_ALL_JOINED.format(seq=seq).split(": ", 1)[1])


def _pg_desc(pg: str) -> str:
    return " (default_pg)" if pg == "0" else ""


def _op_for(run: Run, at: dict[int, dict], seq: int) -> str | None:
    for e in at.values():
        if e.get("op"):
            return str(e["op"])
    for ev in run.events:
        if ev.kind == EventKind.WATCHDOG_TIMEOUT and ev.data.get("seq") == seq:
            return str(ev.data.get("op"))
    return None


def _all_joined(run: Run, ranks: list[int]) -> str:
    """Who joined, said no wider than the input shows: "every rank" only when the world size is known and
    every rank of it is among them (40 pasted lines of a 64-rank job show 40 ranks, not the job)."""
    world = run.job.world_size
    if world and set(range(world)) <= set(ranks):
        return "every rank"
    some = f"rank{'s' if len(ranks) > 1 else ''} {fmt_ranks(ranks)}"
    if world:
        return (f"{some}, every rank the input shows of a world of {world} (the others' progress is not in it, "
                "so whether they joined is not known),")
    return (f"{some}, every rank the input shows (it does not give the world size: ranks it does not show may "
            "not have joined),")


def _wait_where(at: dict[int, dict], waiting: list[int]) -> str:
    parts = []
    for r in waiting[:4]:
        e = at.get(r)
        if e is None:
            continue
        count = e.get("count")
        n = f"{int(count)}" if isinstance(count, (int, float)) and count == count else "?"  # noqa: PLR0124
        desc = f"rank {r}: {e.get('op')} of {n} {e.get('dtype') or ''} elements, state {e.get('state')}"
        if isinstance(e.get("where"), str):
            desc += f", called at {e['where']}"
        parts.append(desc)
    if len(waiting) > 4:
        parts.append(f"and {len(waiting) - 4} more ranks")
    return "; ".join(parts)


def _ras_evidence(run: Run, ranks: list[int]) -> list[Evidence]:
    out = []
    for c in run.ras:
        launched = c.get("launched") or {}
        if launched and len(set(launched.values())) > 1:
            low = min(launched.values())
            behind = sorted(r for r, n in launched.items() if n == low)
            out.append(Evidence(c["file"], c["line"],
                                f"RAS: ranks {behind} launched up to operation {low}, others up to {max(launched.values())}"))
    return out


def _unseen_certainty(never: list[int], by_rank: dict) -> dict[str, str]:
    """``rules.hang.status_certainty`` over the members' status sources (the live monitor calls the same rule)."""
    return status_certainty(never, {r: s.source for r, s in by_rank.items()})


def _from_nccl_counts(run: Run, stall_ev: tuple[Evidence, ...]) -> list[Finding]:
    """No process-group status: compare NCCL COLL line counts per communicator. With a stall signal any
    rank behind is a culprit; without one (NCCL logs only, the job ended from outside) only ranks behind
    a unanimous majority are (``rules.hang.behind_by_counts``): a likely hang."""
    df = run.collectives
    if not len(df):
        return []
    is_nccl = (df["source"] == "nccl").to_numpy()
    if not is_nccl.any():
        return []
    nccl = rows_where(df[["pg", "rank", "seq"]], is_nccl)  # three columns, copied only if rows are left out
    last_calls = nccl.groupby(["pg", "rank"], observed=True)["seq"].max()
    for comm, counts in last_calls.groupby(level=0, observed=True):
        counts = counts.droplevel(0)
        per_rank = {int(r): int(n) for r, n in counts.items() if r >= 0}
        if stall_ev:
            behind = list(lowest_at_stall(per_rank))
            low = min((per_rank[r] for r in behind), default=0)
            certainty = {"level": "likely", "why": "NCCL call counts at a stall signal: the rank(s) with the fewest"}
        else:
            behind = list(behind_by_counts(per_rank))
            low = min((per_rank[r] for r in behind), default=0)
            certainty = {"level": "likely", "why": f"NCCL call counts at the end of the logs: {len(per_rank) - len(behind)} "
                         f"ranks agree on {max(per_rank.values(), default=0)} calls, these are behind; no stall signal"}
            if not behind and (behind := list(pending_at_end(per_rank, _ends_in_nccl(run)))):
                low = min(per_rank[r] for r in behind)
                certainty = {"level": "possible", "why": "the logs stop with this collective pending on the ranks "
                             "behind and nothing after it (no timeout line yet, no exit, no line of the application)"}
        if not behind:
            continue
        at = nccl.index[((nccl["pg"] == comm) & (nccl["rank"] == behind[0]) & (nccl["seq"] == low)).to_numpy()]
        last = df.loc[at, ["file", "line", "op"]]
        ev = [Evidence(str(row.file), int(row.line), f"rank {behind[0]}: last NCCL call #{low} ({row.op})")
              for row in last.itertuples()][:1]
        return [Finding(
            kind=FindingKind.HANG, severity=Severity.CRITICAL,
            message=f"rank{'s' if len(behind) > 1 else ''} {fmt_ranks(behind)} issued {low} NCCL calls on "
            f"communicator {comm[5:]}, others up to {int(counts.max())}: it stopped first",
            ranks=tuple(behind), hint=HINT_NEVER_JOINED.format(r=behind[0], seq=low + 1), evidence=tuple(ev) + stall_ev,
            verdict=Verdict.HANG, data={"class": "never_joined_nccl", "certainty": certainty})]
    return []


def _ends_in_nccl(run: Run) -> bool:
    """Every log ends in NCCL's own lines (no line of the application after its last one), the job's end is not
    known and nothing failed: the logs stop where NCCL last printed (``rules.shown.pending_at_end``)."""
    ends = [e for e in run.events if e.kind == FILE_END_EVENT and e.data.get("last_nccl_line") is not None]
    return bool(ends) and all(not int(e.data.get("text_after_nccl") or 0) for e in ends) and not _end_known(run) \
        and not failures_of_run(run)


def _dedupe(evs: list[Evidence]) -> list[Evidence]:
    seen, out = set(), []
    for e in evs:
        k = (e.file, e.line, e.text)
        if k not in seen:
            seen.add(k)
            out.append(e)
    return out
