"""Findings -> the one word for the whole job, its culprit ranks and the stuck collective.

A config mistake explains whatever followed it. Otherwise the root cause is decided by causality
(``rules.root_cause`` over the run's failure events and symptoms): the earliest cause is the
verdict, and the findings it explains are its evidence. A desync one of whose sides is a rank that
failed is that failure's echo; an interrupt or a kill after a stall leaves the hang as the verdict,
as does a hang alert the live monitor raised (``alerts.jsonl``) before them.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from . import rules
from .alerts_file import AlertKind
from .model import Certainty, EventKind, Finding, FindingKind, Format, Run, Severity, Stuck, Verdict
from .rules.cause import CauseVerdict
from .rules.facts import (
    FILE_END_EVENT,
    failures_of_run,
    left_ranks,
    stall_time,
    server_ready_of_run,
    cleanup_of_run,
    work_done_of_run,
    rank_zero_busy,
    quoted_info_of_run,
    start_only_of_run,
    sweep_done_of_run,
)

PRIORITY = [Verdict.CONFIG_ERROR, Verdict.DESYNC, Verdict.HANG, Verdict.CRASH, Verdict.DEGRADED]
INCIDENT_VERDICTS = (Verdict.CONFIG_ERROR, Verdict.DESYNC, Verdict.HANG, Verdict.CRASH, Verdict.DEGRADED)


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    culprit_ranks: tuple[int, ...]
    stuck: Stuck | None
    headline: str
    certainty: str | None = None  # model.Certainty's value; None for healthy / unknown
    certainty_why: str | None = None
    states: tuple[tuple[int, str, str | None], ...] = ()  # (rank, model.RankState value, detail)

    def certainty_json(self) -> dict[str, str | None] | None:
        return {"level": self.certainty, "why": self.certainty_why} if self.certainty else None


def decide(run: Run, findings: list[Finding], alerts: Sequence[dict[str, Any]] = ()) -> Decision:
    """The verdict (``judge``), with how sure it is and a state for every rank."""
    d = judge(run, findings, alerts)
    earlier = next((e for e in run.events if e.kind == EventKind.EARLIER_RUNS), None)
    if earlier is not None:  # a console of several runs (restarts): the last one is judged
        d = replace(d, headline=f"{d.headline[:380]} (the last of {earlier.data.get('runs')} runs in "
                    f"{earlier.evidence.file}, from line {earlier.evidence.line}; earlier runs left out)")
    if d.certainty is None and d.verdict in INCIDENT_VERDICTS:
        d = replace(d, certainty=Certainty.CONFIRMED.value, certainty_why="the records of the ranks involved")
    return replace(d, states=_states(run, findings, d))


def judge(run: Run, findings: list[Finding], alerts: Sequence[dict[str, Any]] = ()) -> Decision:
    """``alerts``: the live monitor's alerts for this run (``alerts.jsonl``), when there are any. Nodes of the job that
    run different NCCL releases or network plugins explain the incident that followed (``environment_explains``)."""
    return sockets_explain(run, environment_explains(_judge(run, findings, alerts), findings), findings)


EXPLAINED_BY_ENVIRONMENT = (Verdict.HANG, Verdict.CRASH, Verdict.DESYNC)


def environment_explains(d: Decision, findings: list[Finding]) -> Decision:
    """A hang, crash or desync in a job whose nodes load different NCCL releases or network plugins (the config
    detector's finding marked ``environment_mismatch``, ``rules.environment``) is that mismatch's: a config error
    naming it, no rank at fault. A job that went well with such a difference keeps its verdict (the finding notes it)."""
    mismatch = [f for f in findings if f.kind is FindingKind.CONFIG and f.data.get("environment_mismatch")]
    if not mismatch or d.verdict not in EXPLAINED_BY_ENVIRONMENT:
        return d
    f = mismatch[0]
    return Decision(Verdict.CONFIG_ERROR, (), None, f"{f.message}; then the job went wrong ({d.verdict.value}: "
                    f"{d.headline})"[:500], Certainty.LIKELY.value,
                    f"the nodes differ in their {f.data['environment_mismatch']}, and what followed is what such a "
                    "mismatch does")


def sockets_explain(run: Run, d: Decision, findings: list[Finding]) -> Decision:
    """A hang at the start (a communicator's init never completed, or the first collective) of a job across nodes whose
    NCCL fell back to its socket transport where the hosts show InfiniBand or RDMA was meant to be used (the transport
    detector's ``likely`` finding: an IPoIB interface, ``NCCL_IB_HCA`` set, IB NICs listed, an RDMA plugin loaded, with
    ``NET/IB : No device found``) is that fallback's: the devices are not visible to the processes (a container
    without /dev/infiniband, no rdma-core, the plugin not found). A config error, likely; no rank at fault."""
    if d.verdict is not Verdict.HANG or (d.stuck is not None and d.stuck.seq > 1):
        return d
    if d.stuck is None and all(len(c.init_complete) >= c.nranks for c in run.communicators):
        return d  # every communicator formed: a hang later than the start
    fallback = next((f for f in findings if f.kind is FindingKind.TRANSPORT and f.data.get("transports") == ["NET/Socket"]
                     and (f.data.get("certainty") or {}).get("level") == Certainty.LIKELY.value), None)
    if fallback is None:
        return d
    why = str((fallback.data.get("certainty") or {}).get("why") or "")[:240]
    return Decision(Verdict.CONFIG_ERROR, (), d.stuck, f"the job hung at its start over NCCL's socket transport between "
                    f"the nodes where the hosts have InfiniBand / RoCE ({why}): the processes cannot use the fabric "
                    f"(its devices not in the container, rdma-core or the network plugin missing); {d.headline[:200]}",
                    Certainty.LIKELY.value, "a job across nodes that hangs at its start over sockets where the hosts "
                    "have InfiniBand is what a fabric the processes cannot see does")


def _judge(run: Run, findings: list[Finding], alerts: Sequence[dict[str, Any]] = ()) -> Decision:
    blockers = [f for f in findings if f.verdict == Verdict.UNKNOWN]  # e.g. two jobs mixed in one input
    if blockers:
        return Decision(Verdict.UNKNOWN, (), None, blockers[0].message)
    by = {v: [f for f in findings if f.verdict == v] for v in PRIORITY}
    if by[Verdict.CONFIG_ERROR]:
        return _from(Verdict.CONFIG_ERROR, by[Verdict.CONFIG_ERROR])
    caused = _by_cause(run, by, live_hang(alerts))
    if caused is not None:
        return caused
    for v in PRIORITY:
        if by[v]:
            return _from(v, by[v])
    return _no_incident(run, findings)


def _from(v: Verdict, hits: list[Finding]) -> Decision:
    # the stopped-job hang says only that the job was stopped unfinished: a finding that says where the ranks waited
    # (their prints, their stacks, their records) leads where there is one
    hits = sorted(hits, key=lambda f: f.data.get("class") == "stopped")
    culprits = sorted({r for f in hits for r in f.data.get("culprits", f.ranks)})  # a finding may name none
    stuck = next((f.stuck for f in hits if f.stuck), None)
    c = hits[0].data.get("certainty") or {}
    return Decision(v, tuple(culprits), stuck, hits[0].message, c.get("level"), c.get("why"))


def _states(run: Run, findings: list[Finding], d: Decision) -> tuple[tuple[int, str, str | None], ...]:
    from .rules.states import Facts, rank_states

    seen = {p.rank for p in run.job.processes if p.rank is not None} | {s.rank for s in run.pg_status}
    ranks = tuple(rules.bounded_world(run.job.world_size, seen | set(d.culprit_ranks)))
    hang = next((f for f in findings if f.kind == FindingKind.HANG and f.stuck == d.stuck and d.stuck), None)
    waiting = tuple((hang.data.get("waiting") or []) if hang else ())
    stuck = f"{d.stuck.op or 'collective'} #{d.stuck.seq} of process group {d.stuck.pg}" if d.stuck else None
    finished = frozenset(x.rank for x in run.exits if x.exitcode == 0 and x.rank is not None)
    from .metrics.progress import COMPLETED, states_at_stuck

    past = frozenset(r for r, at in states_at_stuck(run, findings, d.stuck).items() if at == COMPLETED)
    facts = Facts(ranks, d.verdict.value, d.culprit_ranks, stuck, waiting, run.stacks, finished,
                  run.job.exit_code is not None or bool(finished), past - set(d.culprit_ranks))
    return tuple((r, s.value, detail) for r, s, detail in rank_states(facts, failures_of_run(run)))


ECHOING = (Verdict.CONFIG_ERROR, Verdict.DESYNC, Verdict.HANG, Verdict.CRASH)
SEVERITY_ORDER = {Severity.CRITICAL: 0, Severity.ERROR: 1, Severity.WARNING: 2, Severity.INFO: 3}


def mark_echoes(findings: Sequence[Finding], d: Decision) -> list[Finding]:
    """The findings as the judgement tells them: those that argue for another incident than the verdict are
    its symptoms (a hang after the crash that caused it, the timeouts and aborts after a desync or a hang, the
    crash a setting caused), marked ``echo_of`` and never above a warning; the verdict's own findings first,
    then the rest by severity. Every output renders this order and these marks."""
    out = []
    for f in findings:
        if f.echo_of is not None:  # judged before (a cached analysis decided again): as the detector made it
            f = replace(f, echo_of=None, severity=f.severity_alone or f.severity, severity_alone=None)
        incident = f.verdict in ECHOING or f.kind == FindingKind.CRASH  # a crash finding with no verdict: an echo's end
        if d.verdict in ECHOING and incident and f.verdict != d.verdict:
            lower = max(f.severity, Severity.WARNING, key=SEVERITY_ORDER.__getitem__)
            f = replace(f, echo_of=d.verdict, severity=lower, severity_alone=f.severity)
        out.append(f)
    return sorted(out, key=lambda f: (f.echo_of is not None or f.verdict != d.verdict, SEVERITY_ORDER[f.severity]))


INCIDENTS = (AlertKind.HANG, AlertKind.DESYNC, AlertKind.CRASH, AlertKind.CONFIG_ERROR)


def of_alerts(alerts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The live monitor's verdict from its alerts: the first incident that stands (a hang followed by
    ``cleared`` does not), as {verdict, culprit_ranks, stuck}; "healthy" when none stands. The live
    monitor judges hang, desync, crash and the config mistakes a failure's own text names (``rules.config``)."""
    standing: list[dict[str, Any]] = []
    for a in alerts:
        if a.get("kind") in INCIDENTS:
            standing.append(a)
        elif a.get("kind") == AlertKind.CLEARED:
            standing = [x for x in standing if x.get("kind") != a.get("incident", AlertKind.HANG)]
    if not standing:
        return {"verdict": Verdict.HEALTHY.value, "culprit_ranks": [], "stuck": None}
    a = standing[0]
    return {"verdict": str(a["kind"]), "culprit_ranks": sorted(a.get("culprit_ranks") or []), "stuck": a.get("stuck")}


def live_hang(alerts: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The live hang alert still open at the end (not followed by ``cleared``), if any."""
    open_: dict[str, Any] | None = None
    for a in alerts:
        if a.get("kind") == AlertKind.HANG:
            open_ = a
        elif a.get("kind") == AlertKind.CLEARED and a.get("incident") == AlertKind.HANG:
            open_ = None
    return open_


def _by_cause(run: Run, by: dict[Verdict, list[Finding]], alert: dict[str, Any] | None) -> Decision | None:
    """The verdict the time line decides, or None (no failure: the findings' order stands)."""
    stalled, stall_t = stall_time(run)
    if alert is not None:
        ts = [x for x in (stall_t, alert.get("ts")) if isinstance(x, (int, float))]
        stalled, stall_t = True, (min(ts) if ts else None)
    hangs = [f for f in by[Verdict.HANG] if f.data.get("class") != "exit"]
    failures = failures_of_run(run)
    cause = rules.root_cause(failures, stall_t, stalled and bool(hangs or alert))
    if cause is None:
        return None
    if cause.verdict == CauseVerdict.HANG:
        if by[Verdict.DESYNC]:  # the mismatch is why the collective never completed
            return _from(Verdict.DESYNC, by[Verdict.DESYNC])
        if hangs:
            return _from(Verdict.HANG, hangs)
        assert alert is not None
        st = alert.get("stuck") or {}
        stuck = Stuck(str(st["pg"]), int(st["seq"]), st.get("op")) if "pg" in st and "seq" in st else None
        return Decision(Verdict.HANG, tuple(sorted(int(r) for r in alert.get("culprit_ranks") or [])), stuck,
                        f"the live monitor's hang alert stands: {alert.get('message', '')}"[:500], "confirmed",
                        "the live monitor saw the stall before anything failed")
    if cause.verdict == CauseVerdict.DESYNC:  # a backend's mismatch report came first: the rest is its echo
        return _from(Verdict.DESYNC, by[Verdict.DESYNC]) if by[Verdict.DESYNC] else None
    if cause.verdict != CauseVerdict.CRASH or cause.first is None:
        return None
    desyncs = by[Verdict.DESYNC]
    if desyncs and not _desync_is_echo(desyncs, failures):
        return _from(Verdict.DESYNC, desyncs)
    # the headline tells the cause (the crash detector's finding), before what it did to a collective
    crash = sorted((f for f in by[Verdict.CRASH] + by[Verdict.HANG] if f.verdict == Verdict.CRASH
                    and set(f.ranks) == set(cause.ranks)), key=lambda f: f.kind == FindingKind.HANG)
    headline = crash[0].message if crash else (
        f"every rank that failed failed alike: {cause.first.text} (the lines single out no rank)"[:500]
        if not cause.ranks and cause.first.rank is not None
        and cause.first.kind in rules.cause.ALIKE_KINDS | rules.cause.OOM_KINDS
        else f"rank {cause.first.rank} failed first: {cause.first.text}"[:500])
    stuck = next((f.stuck for f in by[Verdict.HANG] + by[Verdict.CRASH] if f.stuck), None)
    # a network failure or NCCL's own error first: the link, the library or the setup failed, no rank's code
    culprits, note = _crash_culprits(run, cause)
    if not culprits and cause.first.kind in rules.cause.NO_CULPRIT and set(cause.ranks) <= set(crash[0].ranks if crash else ()):
        said = next((f.message for f in by[Verdict.CRASH] if f.kind is FindingKind.ERROR), None) or next(
            (f"{f.text} (rank {f.rank} first; {_NO_CULPRIT_WHY.get(f.kind, 'a failure of the network')} names no "
             "rank's code)" for f in cause.echoes
             if f.kind is cause.first.kind and f.rank is not None and f.order[1] > 0 and not f.text.startswith("exit")),
            None)  # what failed, not who exited first
        headline = said or headline
    if rules.lost_peer.is_lost_peer(cause.first):
        return Decision(Verdict.CRASH, culprits, stuck, f"{headline}{note}"[:500], Certainty.LIKELY.value,
                        "its lines stop while the others say a peer went away; its own end is not in the input")
    return Decision(Verdict.CRASH, culprits, stuck, f"{headline}{note}"[:500])


_NO_CULPRIT_WHY = {rules.FailureKind.NCCL: "a failure inside NCCL or the process's own memory",
                   rules.FailureKind.GPU: "a fault of the GPU"}


def _crash_culprits(run: Run, cause: rules.Cause) -> tuple[tuple[int, ...], str]:
    """``cause.culprits``; an unranked OOM / CUDA error first names the rank of its device on one node
    (``rules.cause.device_rank``); a process that died with no rank on its lines, the local rank its neighbours'
    proxies saw close (``_closed_rank``), with a note for the headline."""
    if cause.culprits:
        return cause.culprits, ""
    # (a Ray worker's "GPU N" is the first device Ray let it see, not its rank)
    ray = cause.first is not None and _ray_worker_said(run, cause.first)
    n = None if ray else rules.cause.device_rank(cause, one_node(run), run.job.world_size)
    if n is None and not ray and run.job.nnodes is None and len(run.job.hosts) <= 1:  # nodes not known (no host seen)
        n = rules.cause.lone_unwaiting_rank(cause, run.job.world_size)
    if n is not None:
        return (n,), ""
    if cause.first is not None and cause.first.rank is None and cause.first.kind in DIED_UNRANKED:
        n = _closed_rank(run)
        if n is not None:
            return (n,), f"; it is rank {n}, whose connection its neighbours' NCCL proxies saw close"
    return (), ""


def _ray_worker_said(run: Run, f: rules.Failure) -> bool:
    """An unranked failure printed by a Ray worker actor (``rules.ray.device_not_rank``): the device its message names
    does not give its rank."""
    from .rules.ray import device_not_rank

    return f.rank is None and any(e.evidence.file == f.order[0] and e.evidence.line == f.order[1]
                                  and device_not_rank(e.evidence.text) for e in run.events)


DIED_UNRANKED = frozenset({rules.FailureKind.FATAL, rules.FailureKind.EXIT, rules.FailureKind.VANISHED,
                           rules.FailureKind.OOM, rules.FailureKind.CUDA, rules.FailureKind.EXCEPTION})


def _closed_rank(run: Run) -> int | None:
    """A process that died with no rank on its lines: the local rank its neighbours' proxies saw close
    (``rules.local_rank``), as the global rank the same host's NCCL lines give it."""
    from .rules.local_rank import closed_local_rank, global_rank, reporter

    reports = []
    for e in run.events:
        who = reporter(e.evidence.text) if e.kind == EventKind.NCCL_NET_SERVICE_CLOSED else None
        if who is not None and e.text.strip().lstrip("-").isdigit():
            reports.append((*who, int(e.text.strip())))
    closed = closed_local_rank(reports)
    if closed is None:
        return None
    devices = {p.cuda_dev: p.rank for p in run.job.processes
               if p.host == closed.host and p.cuda_dev is not None and p.rank is not None}
    return global_rank(closed, devices if len(devices) == len(set(devices.values())) else {}, one_node(run),
                       run.job.world_size)


def one_node(run: Run) -> bool:
    """The job is known to run on one node: NCCL's node count, else one host seen."""
    return run.job.nnodes == 1 if run.job.nnodes is not None else len(run.job.hosts) == 1


def _desync_is_echo(desyncs: list[Finding], failures: list[rules.Failure]) -> bool:
    """``rules.mismatch_is_echo`` for the first desync finding with sides. PyTorch's DETAIL check is never an
    echo: it compares the ranks' calls before any is issued, and the rank's end is the error it raised."""
    for f in desyncs:
        if f.data.get("mismatch") == ["detail"]:
            return False
        sides = [s.get("ranks") or [] for s in f.data.get("sides") or []]
        if sides:
            t = f.data.get("t")
            return rules.mismatch_is_echo(sides, t if isinstance(t, (int, float)) else None, failures)
    return False


def _all_exited(run: Run) -> bool:
    """Every rank seen printed torch's exit-time warning (``process group has NOT been destroyed``,
    ``destroy_process_group() was not called before program exit``: the interpreter shutting down its process
    group) and nothing failed: the job ran to its end."""
    exited = {e.rank for e in run.events if e.kind == EventKind.PROGRAM_EXIT and e.rank is not None}
    seen = {p.rank for p in run.job.processes if p.rank is not None}
    return bool(exited) and seen <= exited and not failures_of_run(run)


def _no_incident(run: Run, findings: list[Finding]) -> Decision:
    went = _went_on(run)
    shown = _shown(run, findings, went)
    if shown is not None:
        return shown
    ready = server_ready_of_run(run) if went is None else None  # a server's start that ended
    # its clean-up with nothing failing before it, or its progress at its end
    ended = (cleanup_of_run(run) or work_done_of_run(run) or quoted_info_of_run(run)) if went is None and ready is None else None
    usable = any(fmt in (Format.LOG, Format.FLIGHT_RECORDER, Format.JSONL) for _, fmt in run.files) and (
        len(run.collectives) or run.communicators or run.exits or run.pg_status) or (
        run.nccl_tests and run.job.exit_code == 0) or (  # a benchmark that ran every size and checked out
        _all_exited(run)) or went is not None or ready is not None or ended is not None
    if not usable:
        return Decision(Verdict.UNKNOWN, (), None, "not enough information to judge the job")
    if run.job.exit_code not in (None, 0):
        return Decision(Verdict.UNKNOWN, (), None,
                        f"the job exited with code {run.job.exit_code} and nothing in the logs says why")
    errors = [f for f in findings if f.severity in (Severity.ERROR, Severity.CRITICAL)]
    outlived = went is not None and all(f.evidence and went.outlived((f.evidence[0].file, f.evidence[0].line))
                                        for f in errors)
    covered = start_only_of_run(run) or sweep_done_of_run(run) or ready or ended if went is None else None
    if errors and not outlived and not (covered is not None and all(_survived(run, f) for f in errors)):
        return Decision(Verdict.UNKNOWN, (), None, errors[0].message)
    if went is not None and (errors or not (len(run.collectives) or run.communicators or run.exits)):
        past = f" after the errors it reported ({errors[0].message[:160]})" if errors else ""
        return Decision(Verdict.HEALTHY, (), None, f"{went.why}{past}"[:500])
    if covered is not None:  # the input shows a normal start (or a benchmark's sweep) and nothing after it
        return Decision(Verdict.HEALTHY, (), None, covered.why[:500], Certainty.POSSIBLE.value,
                        "the input covers part of the job only (its start, a benchmark, its clean-up): nothing failed in it")
    return Decision(Verdict.HEALTHY, (), None, "no hang, crash, desync or straggler found")


def _shown(run: Run, findings: list[Finding], went: rules.healthy.WentOn | None) -> Decision | None:
    """A failure the text shows that no detector turned into a verdict (``rules.shown``): echoes alone on the time
    line, or an error finding nothing outlived; None when the program went on or the job ended well."""
    if went is not None or run.job.exit_code == 0:
        return None
    s = rules.shown.echoes_only(failures_of_run(run), left_ranks(run), run.job.world_size,
                                rank_zero_busy(run)) or rules.shown.errors_shown(
        (f.message, _survived(run, f)) for f in findings
        if f.kind is FindingKind.ERROR and f.verdict is None and f.severity in (Severity.ERROR, Severity.CRITICAL))
    if s is None:
        return None
    return Decision(s.verdict, s.culprits, None, s.why[:500], s.level, "what the input shows of the failure")


def _survived(run: Run, f: Finding) -> bool:
    """An NCCL WARN finding of a start that completed anyway: every communicator's init went on to Init COMPLETE,
    and NCCL printed more in the WARN's file than the WARN and its return chain (it was not NCCL's last word)."""
    if not isinstance(f.data.get("warn"), str) or not f.evidence or not run.communicators or any(
            c.init_started - c.init_complete or not c.init_complete for c in run.communicators):
        return False
    at = f.evidence[0]
    chain = f.data.get("chain") or []
    last = next((int(e.data.get("last_nccl_line") or 0) for e in run.events
                 if e.kind == FILE_END_EVENT and e.evidence.file == at.file), 0)
    return last > at.line + len(chain)


def _went_on(run: Run) -> rules.healthy.WentOn | None:
    """``rules.healthy.went_on`` over the run's progress prints, ends and time line."""
    progress = [(e.evidence.file, e.evidence.line, int(e.data.get("count") or 0)) for e in run.events
                if e.kind == EventKind.PROGRESS]
    seen = {p.rank for p in run.job.processes if p.rank is not None}
    finished = {x.rank for x in run.exits if x.exitcode == 0 and x.rank is not None}
    finished |= {e.rank for e in run.events if e.kind in (EventKind.RANK_FINISHED, EventKind.PROGRAM_EXIT) and e.rank is not None}
    launcher_ok = any(e.kind == EventKind.LAUNCHER_SUCCEEDED for e in run.events)
    return rules.healthy.went_on(progress, bool(failures_of_run(run)), stall_time(run)[0], run.job.exit_code, seen,
                                 finished, launcher_ok)
