"""The Flight Recorder analyser's own report in a log (``fr_trace``'s text): a mismatch it names is a desync, ranks
it finds missing are a hang (``rules.fr_report``).

Inputs: ``fr_trace_report`` events (``sources.fr_trace_text``), one a ``missing ranks`` or ``error msg`` line."""
from __future__ import annotations

from ..model import EventKind, Finding, FindingKind, Run, Severity, Stuck, Verdict
from ..rules.fr_report import apart, stated
from .common import fmt_ranks

HINT_DESYNC = ("Ranks must call the same collectives in the same order with the same sizes and dtypes: look at the "
               "call site the report prints for the ranks it names (a rank-dependent branch, a data-dependent size such "
               "as the last batch, a collective skipped on an exception path).")
HINT_HANG = ("The ranks the report finds missing never issued this collective: look at what they run before it (their "
             "stacks: py-spy dump --native, or the dump's own frames) and at their own logs for an earlier failure.")


def detect(run: Run) -> list[Finding]:
    reports = [e for e in run.events if e.kind == EventKind.FR_TRACE_REPORT]
    worlds = {w for e in reports if isinstance(w := e.data.get("world"), int)}
    split = apart(((f"{e.data.get('op') or 'a collective'} of process group {e.data.get('pg') or '0'}",
                    e.data.get("missing") or []) for e in reports if not e.data.get("culprits")),
                  next(iter(worlds)) if len(worlds) == 1 else None)
    if split is not None:
        ev = tuple(e.evidence for e in reports if e.data.get("missing"))[:2]
        who = f"rank{'s' if len(split.culprits) > 1 else ''} {fmt_ranks(list(split.culprits))}" if split.culprits else "no rank named"
        return [Finding(
            kind=FindingKind.DESYNC, severity=Severity.CRITICAL, message=f"{split.why} ({who})", ranks=split.culprits,
            hint=HINT_DESYNC, evidence=ev, verdict=Verdict.DESYNC,
            data={"culprits": list(split.culprits), "class": "fr_report", "mismatch": list(split.what),
                  "certainty": {"level": "confirmed", "why": "the Flight Recorder analyser's own report states both"}})]
    for e in reports:  # the first block that states something is the story: later ones follow from it
        culprits = list(zip(e.data.get("culprits") or [], e.data.get("kinds") or []))
        world = e.data.get("world")
        s = stated(culprits, e.data.get("missing") or [], world if isinstance(world, int) else None)
        if s is None:
            continue
        seq, op = e.data.get("seq"), e.data.get("op")
        stuck = Stuck(str(e.data.get("pg") or "0"), int(seq), op) if isinstance(seq, int) else None
        where = f"{op or 'collective'} #{seq} of process group {stuck.pg}" if stuck else "a collective"
        desync = s.verdict == Verdict.DESYNC.value
        who = f"rank{'s' if len(s.culprits) > 1 else ''} {fmt_ranks(list(s.culprits))}" if s.culprits else "no rank named"
        return [Finding(
            kind=FindingKind.DESYNC if desync else FindingKind.HANG, severity=Severity.CRITICAL,
            message=f"{where}: {s.why} ({who})", ranks=s.culprits, hint=HINT_DESYNC if desync else HINT_HANG,
            evidence=(e.evidence,), stuck=stuck, verdict=Verdict.DESYNC if desync else Verdict.HANG,
            data={"culprits": list(s.culprits), "class": "fr_report", **({"mismatch": list(s.what)} if desync else {}),
                  "certainty": {"level": "confirmed", "why": "the Flight Recorder analyser's own report states it"}})]
    return []
