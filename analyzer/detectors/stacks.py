"""Stacks and prints: where the ranks are, from what other tools and the program itself say.

Inputs: the ranks' stack dumps (``stack_snapshot`` events: py-spy, faulthandler; a dump with no rank tag goes to the
rank whose NCCL lines have its pid) and the program's own prints that a rank waits (``progress_wait`` events), judged
by ``rules.stacks``:

- stacks in two different collectives: a desync, the odd ranks its culprits;
- stacks in one collective but some rank outside any: a hang, the ranks outside its culprits;
- stacks in no collective, all but one at the same line and one elsewhere, in a job that did not end well and where
  nothing failed: a hang, the one elsewhere its culprit;
- the dump of one process only, its main thread inside a collective, in a job that did not end well and where
  nothing failed: a hang, possible, no culprit (the other ranks are not in the input);
- Horovod's stall inspector's last warning, the job not ended well and no progress after it: tensors submitted by ranks
  apart, a desync; else the ranks that submitted none of them, a hang whose culprits they are
  (``rules.stacks.horovod_stalled``);
- the tracebacks a user's interrupt made every process print, standing in two different collectives (the backward pass
  counted as one), in a job nothing else failed in: a desync, possible (``rules.stacks.interrupted``);
- ranks whose last print is that they wait, nothing failed after and the job did not end well: a hang, its culprits
  the rank the prints name or the ranks that never said they wait (possible).
"""
from __future__ import annotations

from ..model import EventKind, Finding, FindingKind, LogEvent, Run, Severity, Verdict
from ..rules.facts import failures_of_run, left_ranks
from ..rules.cause import FailureKind
from ..rules.stacks import (
    APART,
    Position,
    StackReading,
    all_wait,
    horovod_stalled,
    interrupted,
    lone_dump,
    read_stacks,
    site_of,
    waits,
)
from ..sources.stack_dump import collective_of
from ..sources.records import HOROVOD_STALL_EVENT, STACK_EVENT, WAIT_EVENT
from ..sources.torch_log import RAY_PREFIX_RE
from .hang import HINT_FIRST_COLLECTIVE


def detect(run: Run) -> list[Finding]:
    return _stacks(run) + _waits(run) + _interrupted(run) + _horovod(run)


def _stacks(run: Run) -> list[Finding]:
    by_pid = _ray_pids(run)
    by_pid.update({p.pid: p.rank for p in run.job.processes if p.rank is not None})
    last: dict[int, tuple[Position, LogEvent]] = {}
    for e in run.events:
        if e.kind != STACK_EVENT:
            continue
        pid = e.data.get("pid")
        rank = e.rank if e.rank is not None else by_pid.get(pid) if isinstance(pid, int) else None
        if rank is None:
            continue
        coll = e.data.get("collective")
        last[rank] = (Position(rank, coll if isinstance(coll, str) else None, str(e.data.get("where") or "?")), e)
    reading = read_stacks(p for p, _ in last.values())
    if reading is None:
        return _lone(run, last)
    if reading.op == APART and (run.job.exit_code == 0 or any(f.is_cause for f in failures_of_run(run))):
        return []  # ranks apart in a run that ended well, or after a failure of its own: no stall of theirs
    evidence = tuple(last[r][1].evidence for r in (*reading.culprits, *reading.waiting) if r in last)[:4]
    where = {r: p.where for r, (p, _) in last.items()}
    kind = FindingKind.HANG if reading.op is not None else FindingKind.DESYNC
    if reading.op == APART:
        return [_finding(kind, reading, f"the ranks' stack dumps: {reading.why}", evidence, where, "possible",
                         "where each rank's main thread was when its stack was dumped; no frame names the collective")]
    return [_finding(kind, reading, f"the ranks' stack dumps: {reading.why}", evidence, where,
                     "likely", "where each rank's main thread was when its stack was dumped")]


def _lone(run: Run, ranked: dict[int, tuple[Position, LogEvent]]) -> list[Finding]:
    """Dumps of one rank at most (``rules.stacks.lone_dump``), in a job that did not end well, where nothing failed and
    that printed no progress after the dump: a hang, possible."""
    dumps = [e for e in run.events if e.kind == STACK_EVENT]
    if len(ranked) > 1 or not dumps or run.job.exit_code == 0 or any(f.is_cause for f in failures_of_run(run)):
        return []
    if left_ranks(run) or any(e.kind == EventKind.LAUNCHER_SUCCEEDED or (
            e.kind == EventKind.PROGRESS and any(e.evidence.file == d.evidence.file and e.evidence.line > d.evidence.line
                                                 for d in dumps)) for e in run.events):
        return []  # the job went on after the dump (progress after it, a rank's end, the launcher's success)
    reading = lone_dump(c if isinstance(c := e.data.get("collective"), str) else None for e in dumps)
    if reading is None:
        return []
    return [_finding(FindingKind.HANG, reading, f"the stack dump: {reading.why}", (dumps[-1].evidence,),
                     {r: p.where for r, (p, _) in ranked.items()}, "possible",
                     "one process's stack, inside a collective; the others are not in the input", LONE_HINT)]


def _ray_pids(run: Run) -> dict[int, int]:
    """The rank of each Ray worker's pid: the rank its lines state behind Ray's prefix (``(ActorWorker pid=52313)
    [Rank 3] ...``), so that a dump of that pid (``py-spy dump --pid 52313``) is that rank's. A pid stating two ranks
    names none."""
    seen: dict[int, set[int]] = {}
    for e in run.events:
        if e.rank is not None and e.evidence.text[:1] == "(" and (m := RAY_PREFIX_RE.match(e.evidence.text)) is not None:
            seen.setdefault(int(m.group("pid")), set()).add(e.rank)
    return {pid: next(iter(rs)) for pid, rs in seen.items() if len(rs) == 1}


def _waits(run: Run) -> list[Finding]:
    """Ranks whose last print is that they wait (a print after it, its own end, a failure or a good end: no hang)."""
    if run.job.exit_code == 0 or any(f.is_cause for f in failures_of_run(run)):
        return []
    last_line: dict[tuple[str, int], int] = {}  # (file, rank) -> the line of the rank's last print of its course
    waiting: dict[int, tuple[int | None, LogEvent]] = {}
    for e in run.events:
        if e.rank is None or e.kind not in (WAIT_EVENT, EventKind.RANK_FINISHED, EventKind.PROGRESS):
            continue
        last_line[(e.evidence.file, e.rank)] = max(last_line.get((e.evidence.file, e.rank), 0), e.evidence.line)
        if e.kind == WAIT_EVENT:
            on = e.data.get("on")
            waiting[e.rank] = (on if isinstance(on, int) else None, e)
    left = left_ranks(run)
    still = {r: v for r, v in waiting.items() if r not in left
             and last_line.get((v[1].evidence.file, r)) == v[1].evidence.line}
    seen = {p.rank for p in run.job.processes if p.rank is not None} | {e.rank for e in run.events if e.rank is not None}
    world = set(range(run.job.world_size)) if run.job.world_size else seen
    # (a call every member makes at once, a teardown, names no rank the others wait for: only every rank in it says so)
    reading = waits({r: on for r, (on, e) in still.items() if not e.data.get("alike")}, world | seen)
    level = "possible"
    if reading is None:
        reading = all_wait({r: _wait_text(run, e) for r, (on, e) in still.items() if on is None}, world | seen)
        level = "likely"
    if reading is None:
        return []
    evidence = tuple(still[r][1].evidence for r in reading.waiting if r in still)[:4]
    if not reading.culprits:
        return [_all_waiting(run, reading, evidence)]
    return [_finding(FindingKind.HANG, reading, f"the program's own prints: {reading.why}", evidence, {},
                     level, "the ranks' last prints say who waits; a print is not a stack")]


def _wait_text(run: Run, e: LogEvent) -> str:
    """The wait print, with the rank's print before it in the same file (``calling ncclAllReduce`` then ``waiting``)."""
    before = [x for x in run.events if x.rank == e.rank and x.evidence.file == e.evidence.file
              and e.evidence.line - 3 <= x.evidence.line < e.evidence.line]
    return " ".join([x.evidence.text for x in before[-1:]] + [e.evidence.text])


def _all_waiting(run: Run, reading: StackReading, evidence: tuple) -> Finding:
    first = not len(run.collectives) and bool(run.communicators)
    hint = (HINT_FIRST_COLLECTIVE if first else
            "Every rank is inside the collective: the stall is NCCL's or the path's. Check the WARN lines, the "
            "transports between the ranks (NCCL_P2P_DISABLE / NCCL_SHM_DISABLE / NCCL_IB_*), GPU health (nvidia-smi, "
            "Xid errors in dmesg), and run nccl-tests on the same GPUs.")
    return Finding(kind=FindingKind.HANG, severity=Severity.CRITICAL,
                   message=f"the program's own prints: {reading.why}"
                   + (" (the first collective after init)" if first else ""),
                   hint=hint, evidence=evidence, verdict=Verdict.HANG,
                   data={"culprits": [], "waiting": list(reading.waiting), "where": {}, "sides": [],
                         "certainty": {"level": "likely", "why": "every rank's last print says it waits in a "
                                       "collective or on its stream; a print is not a stack"}})


def _horovod(run: Run) -> list[Finding]:
    """Horovod's stall inspector's last warning (``rules.stacks.horovod_stalled``), where the job did not end well and
    printed no progress after it in the same file (a stall that cleared)."""
    stalls = [e for e in run.events if e.kind == HOROVOD_STALL_EVENT]
    if not stalls or run.job.exit_code == 0:
        return []
    last = stalls[-1]
    if any(e.kind == EventKind.PROGRESS and e.evidence.file == last.evidence.file and e.evidence.line > last.evidence.line
           for e in run.events):
        return []
    world = set(range(run.job.world_size)) if run.job.world_size else {p.rank for p in run.job.processes
                                                                         if p.rank is not None}
    ops = [(str(n), [int(r) for r in rs], bool(ready)) for n, rs, ready in last.data.get("ops") or []]
    reading = horovod_stalled(ops, world)
    if reading is None:
        return []
    kind = FindingKind.DESYNC if reading.verdict is Verdict.DESYNC else FindingKind.HANG
    return [_finding(kind, reading, reading.why, (last.evidence,), {}, "likely",
                     "Horovod's own stall inspector lists which ranks submitted the tensors it waits on")]


MAX_INTERRUPTED = 4096  # interrupted processes' tracebacks read (one per process of the job)


def _interrupted(run: Run) -> list[Finding]:
    """The ``KeyboardInterrupt`` tracebacks of a job its user stopped, nothing of its own failing
    (``rules.stacks.interrupted``): where each process's main thread stood."""
    fails = failures_of_run(run)
    if not any(f.kind is FailureKind.INTERRUPT for f in fails) or any(f.is_cause for f in fails):
        return []
    stacks = [e for e in run.events if e.kind == EventKind.DIST_ERROR and e.data.get("type") == "KeyboardInterrupt"
              and e.data.get("frames")][:MAX_INTERRUPTED]
    sites = []
    for e in stacks:
        frames = [_frame(f) for f in reversed(e.data["frames"])]
        sites.append(site_of(frames, collective_of(frames)))
    reading = interrupted(sites, (e.rank for e in stacks))
    if reading is None:
        return []
    evidence = tuple(e.evidence for e, s in zip(stacks, sites) if s is not None)[:4]
    return [_finding(FindingKind.DESYNC, reading, f"the tracebacks of the interrupted processes: {reading.why}",
                     evidence, {}, "possible", "where each process's main thread was when the user interrupted the job; "
                     "a process may stand in the backward pass for its own compute")]


def _frame(text: str) -> tuple[str, str, int]:
    """``path:line in func`` (a traceback frame as the reader keeps it) as (func, path, line)."""
    where, _, func = str(text).rpartition(" in ")
    path, _, line = where.rpartition(":")
    return func, path, int(line) if line.isdigit() else 0


LONE_HINT = ("Dump every rank's stack (py-spy dump --pid on each process of every node): the rank that is not inside "
             "this collective is the one the others wait for; if all are inside it, the stall is NCCL's or the path's "
             "(run with NCCL_DEBUG=INFO, check the WARN lines and the links).")


def _finding(kind: FindingKind, reading: StackReading, message: str, evidence: tuple, where: dict[int, str],
             level: str, why: str, hint: str | None = None) -> Finding:
    hint = hint or ("Look at what the culprit ranks run where their stacks stand (a data loader, a condition only some ranks "
            "take, an exception caught and swallowed) and make every rank call the same collectives in the same order."
            if kind is FindingKind.HANG and reading.culprits else
            "Every rank dumped waits on communication: some in a collective, others on their GPU stream behind a send "
            "or another group's collective. Look for two process groups (or a send and a collective) that the ranks "
            "enter in different orders, a send whose receiver never posts it, or ranks running ahead into the next "
            "collective; order them the same on every rank (a barrier between phases shows which)."
            if kind is FindingKind.HANG else
            "Find the branch that makes the ranks call different collectives at this point (a condition on the rank or "
            "the data, an uneven number of batches) and make every rank issue the same sequence.")
    return Finding(kind=kind, severity=Severity.CRITICAL, message=message[:500], ranks=reading.culprits, hint=hint,
                   evidence=evidence, verdict=reading.verdict,
                   data={"culprits": list(reading.culprits), "waiting": list(reading.waiting), "where": where,
                         "sides": [{"ranks": list(rs), "op": op} for op, rs in reading.sides],
                         "certainty": {"level": level, "why": why}})
