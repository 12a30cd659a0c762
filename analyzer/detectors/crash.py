"""Crash: the first process to fail, not the ones the launcher killed after it.

Inputs: torchrun's failure summary (``Root Cause (first observed failure)``), ``Sending process N
closing signal`` lines, the hook's exit records, exception tails (``DistBackendError``,
``Last error:``) and NCCL WARN lines (the first WARN is the root cause; the rest echo it).
A rank aborted by PyTorch's watchdog after a timeout is reported as an echo of the hang.
"""
from __future__ import annotations

import signal as _signal

from ..model import ExitRecord, Finding, Run, Severity, Verdict
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
    watchdog_ranks = {e.rank for e in run.events if e.kind in ("watchdog_timeout", "watchdog_failure",
                                                               "heartbeat_timeout")}
    root = next((e for e in exits if e.root_cause), None)
    if root is None and exits:
        # no summary: a process that exited by itself beats one that got a signal
        own = [e for e in exits if e.exitcode is not None and e.exitcode > 0 and e.pid not in run.killed_pids]
        root = own[0] if own else exits[0]
    if root is not None and root.exitcode is not None:
        sig = _signame(root.exitcode)
        echo = root.rank in watchdog_ranks and root.exitcode in (-6, 134)
        errs = [e for e in run.events if e.kind == "dist_error" and e.rank == root.rank]
        warns = [e for e in run.events if e.kind == "nccl_warn" and (e.rank == root.rank or e.rank is None)]
        evidence = [root.evidence] if root.evidence else []
        evidence += [e.evidence for e in errs[:1]] + [w.evidence for w in warns[:1]]
        killed = sorted({e.rank for e in exits if e.rank != root.rank and e.rank is not None})
        if echo:
            findings.append(Finding(
                kind="crash", severity=Severity.ERROR,
                message=f"rank {root.rank} was aborted ({sig or root.exitcode}) by PyTorch's watchdog after a collective timed "
                f"out: an echo of the hang, not its cause",
                hint="Look at the hang finding for the rank that stopped.", evidence=tuple(evidence), data={"first_failure_rank": root.rank, "exitcode": root.exitcode}))
        else:
            what = f"killed by {sig}" if sig else f"exited with code {root.exitcode}"
            detail = ""
            hint = _exit_hint(root, sig)
            if errs:
                detail = f": {errs[0].data.get('type', '')}: {errs[0].data.get('message', '')}"[:300]
                k = classify(errs[0].text + " " + str(errs[0].data.get("last_error") or ""))
                if k:
                    hint = k.hint
            msg = f"rank {root.rank} {what}{detail} (first failure)"
            if killed:
                msg += f"; rank{'s' if len(killed) > 1 else ''} {', '.join(map(str, killed))} " \
                       f"{'were' if len(killed) > 1 else 'was'} stopped by the launcher after it, not at fault"
            findings.append(Finding(
                kind="crash", severity=Severity.CRITICAL, message=msg, ranks=(root.rank,) if root.rank is not None else (), hint=hint,
                evidence=tuple(evidence), verdict=Verdict.CRASH,
                data={"exitcode": root.exitcode, "signal": sig, "stopped_after": killed}))
    elif not exits:
        # no launcher summary: an exception or NCCL error is still a failure
        errs = [e for e in run.events if e.kind == "dist_error" and not _launcher_echo(e)]
        if errs:
            first = errs[0]
            k = classify(first.text + " " + str(first.data.get("last_error") or ""))
            findings.append(Finding(
                kind="error", severity=Severity.ERROR,
                message=f"rank {first.rank if first.rank is not None else '?'} raised {first.data.get('type')}: "
                f"{first.data.get('message', '')}"[:400], ranks=(first.rank,) if first.rank is not None else (),
                hint=k.hint if k else "Read the traceback of the first rank that failed.", evidence=(first.evidence,), verdict=Verdict.CRASH, data={}))
    first_warn = next((e for e in run.events if e.kind == "nccl_warn"), None)
    if first_warn is not None:
        k = classify(first_warn.text)
        if k is not None and k.kind == "error":
            findings.append(Finding(
                kind="error", severity=Severity.ERROR,
                message=f"first NCCL warning (rank {first_warn.rank if first_warn.rank is not None else '?'}): {k.meaning}",
                ranks=(first_warn.rank,) if first_warn.rank is not None else (), hint=k.hint, evidence=(first_warn.evidence,)))
    return findings


def _launcher_echo(e) -> bool:
    """torchrun's own exceptions: it was signalled, or it reports a child's failure (already counted)."""
    t = str(e.data.get("type", ""))
    return e.rank is None and ("SignalException" in t or "ChildFailedError" in t)


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
