"""Crash: the first process to fail, not the ones the launcher killed after it.

Inputs: torchrun's failure summary (``Root Cause (first observed failure)``), ``Sending process N
closing signal`` lines, the hook's exit records, exception tails (``DistBackendError``,
``Last error:``) and NCCL WARN lines (the first WARN is the root cause; the rest echo it).
The failing rank is ``rules.root_cause``'s: echoes (peers gone, timeouts, ranks the launcher or the
user stopped) never are. A rank aborted by PyTorch's watchdog after a timeout is reported as an
echo of the hang; a job stopped from outside with nothing failed before is said so, as no crash.
"""
from __future__ import annotations

import signal as _signal

from .. import rules
from ..model import EventKind, Evidence, ExitRecord, Finding, FindingData, FindingKind, LogEvent, Run, Severity, Verdict
from ..rules.cause import NO_CULPRIT, CauseVerdict
from ..rules.exits import ExitClass, FailureKind, exit_class
from ..rules.facts import LINK_AREAS, failures_of_run
from .catalogue import classify


def _signame(code: int) -> str | None:
    if code < 0:
        try:
            return _signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return None


def detect(run: Run) -> list[Finding]:
    findings: list[Finding] = []
    exits = [e for e in run.exits if e.exitcode not in (None, 0)]
    cause = rules.root_cause(failures_of_run(run))
    first = cause.first if cause is not None and cause.verdict == CauseVerdict.CRASH else None
    # a GPU the kernel saw fail is described as itself, not as the exit of a process it took down
    root = _exit_of(exits, first.rank) if first is not None and first.kind is not FailureKind.GPU else None
    if root is None and first is None and exits:
        root = next((e for e in exits if e.root_cause), exits[0])  # no cause: the first end is described
    if root is not None and root.exitcode is not None:
        findings.append(_exit_finding(run, root, exits, first is not None))
    elif first is not None and cause is not None:
        findings.append(_error_finding(run, first, bool(cause.culprits)))
    return findings


_ECHO_WORDS = {FailureKind.TIMEOUT: "its collective timed out", FailureKind.PEER: "a peer went away"}


def _own_echo(run: Run, rank: int | None) -> rules.Failure | None:
    """The rank's own timeout or lost peer, the first on its time line: why a rank ended when nothing caused it."""
    if rank is None:
        return None
    mine = [f for f in failures_of_run(run) if f.rank == rank and f.kind in _ECHO_WORDS]
    return min(mine, key=lambda f: (f.t is None, f.t or 0.0, f.order), default=None)


def _exit_of(exits: list[ExitRecord], rank: int | None) -> ExitRecord | None:
    """The exit of the failing rank, torchrun's root-cause entry first."""
    mine = [e for e in exits if e.rank == rank]
    return next((e for e in mine if e.root_cause), mine[0] if mine else None)


def _exit_finding(run: Run, root: ExitRecord, exits: list[ExitRecord], caused: bool) -> Finding:
    """The process that failed first (``caused``), or, with no cause on the time line, how the job ended."""
    assert root.exitcode is not None
    sig = _signame(root.exitcode)
    errs = [e for e in run.events if e.kind == EventKind.DIST_ERROR and e.rank == root.rank]
    warns = [e for e in run.events if e.kind == EventKind.NCCL_WARN and (e.rank == root.rank or e.rank is None)]
    evidence = [root.evidence] if root.evidence else []
    evidence += [e.evidence for e in errs[:1]] + [w.evidence for w in warns[:1]]
    killed = sorted({e.rank for e in exits if e.rank != root.rank and e.rank is not None})
    data: FindingData = {"first_failure_rank": root.rank, "exitcode": root.exitcode}
    if not caused:
        cls = exit_class(root.exitcode)
        echo = _own_echo(run, root.rank)
        if cls is ExitClass.ABORT:
            msg = (f"rank {root.rank} was aborted ({sig or root.exitcode}) by PyTorch's watchdog after a collective "
                   f"timed out: an echo, not a cause")
        elif echo is not None:  # it ended on its own timeout or a gone peer: what stalled or failed elsewhere
            msg = (f"rank {root.rank} ended ({sig or f'exit code {root.exitcode}'}) after {_ECHO_WORDS[echo.kind]}: "
                   f"an echo, not a cause ({echo.text})")[:400]
        else:
            msg = (f"rank {root.rank} was stopped from outside ({sig or root.exitcode}) and nothing failed before: "
                   f"the launcher, the scheduler or the user ended the job")
        return Finding(kind=FindingKind.CRASH, severity=Severity.ERROR if cls is ExitClass.ABORT else Severity.WARNING,
                       message=msg, hint="Look at the hang finding, if any, for the rank that stopped.",
                       evidence=tuple(evidence), data=data)
    what = f"killed by {sig}" if sig else f"exited with code {root.exitcode}"
    detail = ""
    hint = _exit_hint(root, sig)
    if errs:
        detail = f": {errs[0].data.get('type', '')}: {errs[0].data.get('message', '')}"[:300]
        k = classify(f"{errs[0].text} {errs[0].data.get('message') or ''} {errs[0].data.get('last_error') or ''}")
        if k:
            hint = k.hint
    who = f"rank {root.rank}" if root.rank is not None else "a process whose lines name no rank"
    msg = f"{who} {what}{detail} (first failure)"
    if killed:
        msg += f"; rank{'s' if len(killed) > 1 else ''} {', '.join(map(str, killed))} " \
               f"{'were' if len(killed) > 1 else 'was'} stopped by the launcher after it, not at fault"
    return Finding(kind=FindingKind.CRASH, severity=Severity.CRITICAL, message=msg,
                   ranks=(root.rank,) if root.rank is not None else (), hint=hint, evidence=tuple(evidence),
                   verdict=Verdict.CRASH, data={"exitcode": root.exitcode, "signal": sig, "stopped_after": killed})


def _error_finding(run: Run, first: rules.Failure, named: bool) -> Finding:
    """The first cause has no exit record: an exception, an OOM, a rank that vanished. ``named``: the time
    line names its rank as the culprit (``rules.Cause.culprits``)."""
    ev = next((e for e in run.events if (e.evidence.file, e.evidence.line) == first.order), None)
    text = f"{ev.text} {ev.data.get('message') or ''} {ev.data.get('last_error') or ''}" if ev is not None else first.text
    k = classify(text)
    who = f"rank {first.rank}" if first.rank is not None else "a process"
    data: FindingData = {"cause": first.kind.value}
    if first.kind is FailureKind.GPU:  # the hardware failed: no rank's code, the GPU and its node named
        data["culprits"] = []
        who = _gpu_named(run, ev)
    elif first.kind in NO_CULPRIT and not named:  # the link or NCCL itself failed there: the rank only reported it
        data["culprits"] = []
        own = first.kind is FailureKind.NCCL or (k is not None and k.area not in LINK_AREAS)  # shm, topology: NCCL's set-up
        who = f"NCCL on {who}" if own else f"the network seen from {who}"
    elif first.kind is FailureKind.NCCL:  # one rank's NCCL error, the others' its echo
        who = f"NCCL on {who} (the others only echo it)"
    return Finding(
        kind=FindingKind.ERROR, severity=Severity.ERROR, message=f"{who} failed first ({first.kind.value}): {first.text}"[:400],
        ranks=(first.rank,) if first.rank is not None else (),
        hint=k.hint if k else "Read the traceback of the first rank that failed.",
        evidence=(ev.evidence,) if ev is not None else _failure_line(first), verdict=Verdict.CRASH, data=data)


def _gpu_named(run: Run, ev: LogEvent | None) -> str:
    """The GPU a kernel line names, its host when the line gives one, and the rank whose device it is when the
    NCCL lines tell (one process on that bus, on that host)."""
    if ev is None:
        return "a GPU (the kernel's log)"
    pci, host = str(ev.data.get("pci") or "?"), ev.data.get("host")
    bus = _bus_of(pci)
    ranks = sorted({p.rank for p in run.job.processes if p.rank is not None and p.bus_id and _bus_of(p.bus_id) == bus
                    and (host is None or p.host == host)})
    where = f" on {host}" if host else ""
    whose = f", rank {ranks[0]}'s device" if len(ranks) == 1 else ""
    xid = ev.data.get("xid")
    return f"the GPU at PCI {pci}{where}{whose} (the kernel logged {f'Xid {xid}' if xid is not None else 'it'}; no rank's code)"


def _bus_of(pci: str) -> tuple[int, int] | None:
    """(bus, device) of a PCI address as the driver prints it (``0000:3b:00``, ``0000:3b:00.0``) or NCCL's busId
    (``3b000``: bus, device and function in hex)."""
    parts = pci.lower().split(".")[0].split(":")
    try:
        if len(parts) >= 2:
            return int(parts[-2], 16), int(parts[-1], 16)
        v = int(parts[0], 16)
        return (v >> 12) & 0xFF, (v >> 4) & 0xFF
    except ValueError:
        return None


def _failure_line(first: rules.Failure) -> tuple[Evidence, ...]:
    """The failure's own line when no event holds it (its place on the time line is a file and line)."""
    file, line = first.order
    return (Evidence(file, line, first.text),) if file and line >= 1 else ()


def _exit_hint(e: ExitRecord, sig: str | None) -> str:
    if sig == "SIGKILL":
        return "SIGKILL without a traceback is often the kernel's OOM killer: check dmesg and host memory."
    if sig == "SIGSEGV":
        return "A segfault: look for native extensions, mismatched CUDA / NCCL libraries, or a core dump."
    if sig == "SIGABRT":
        return "An abort: the process's stderr holds the C++ exception or assertion that caused it."
    if e.exitcode == 1:
        return "A Python exception ended the process: its traceback is in the rank's stderr."
    return (f"The process ended itself with code {e.exitcode} (sys.exit / os._exit / a failing subprocess): "
            "find where the script exits with that code.")
