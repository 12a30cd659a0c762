"""NCCL's RAS report: a hang where its communicators' ranks launched different numbers of one operation, a crash where
it considers job processes dead (``rules.ras``). Inputs: the model's ``ras`` views (``sources.ras``), one per
communicator a report names. A job that ended well is judged by its end, not by a report taken on the way."""
from __future__ import annotations

from typing import Any

from ..model import Evidence, Finding, FindingData, FindingKind, Run, Severity, Verdict
from ..rules.ras import RasReading, RasView, read_ras
from .common import fmt_ranks

HINT_HANG = ("The ranks behind never called the operation the others wait in: they are elsewhere (a collective of "
             "another communicator, a data loader, a branch only some ranks take, a rank that stopped). `ncclras -v` "
             "(VERBOSE STATUS) lists the ranks of every group; their stacks (py-spy dump --native --pid) show where they "
             "wait.")
HINT_DEAD = ("A process RAS cannot reach for a minute died or lost its node: its own log and exit (an OOM kill, a "
             "segfault, the node's kernel log) say why; the other ranks' timeouts are echoes.")


def _view(c: dict[str, Any]) -> RasView:
    groups = tuple((str(g[0]), int(g[1]), int(g[2]), tuple(int(r) for r in g[3])) for g in c.get("groups") or ()
                   if isinstance(g, (list, tuple)) and len(g) == 4)
    return RasView(str(c.get("comm") or ""), groups, tuple(int(r) for r in c.get("dead_ranks") or ()),
                   int(c.get("dead_processes") or 0))


def detect(run: Run) -> list[Finding]:
    if run.job.exit_code == 0 or not run.ras:
        return []
    reading = read_ras(_view(c) for c in run.ras)
    if reading is None:
        return []
    evidence = tuple(Evidence(str(c["file"]), int(c["line"]), str(c["text"])) for c in run.ras
                     if c.get("comm") == reading.comm)[:2]
    data = FindingData(culprits=list(reading.culprits), certainty={"level": reading.level, "why": reading.why})
    data["class"] = "ras_dead" if reading.crash else "ras_counts"
    if reading.crash:
        who = f": rank{'s' if len(reading.culprits) > 1 else ''} {fmt_ranks(list(reading.culprits))}" \
            if reading.culprits else " (the report places no rank of its communicators in them)"
        return [Finding(kind=FindingKind.CRASH, severity=Severity.CRITICAL, verdict=Verdict.CRASH,
                        ranks=reading.culprits, message=f"{reading.why}{who}"[:500], hint=HINT_DEAD,
                        evidence=evidence, data=data)]
    return [Finding(kind=FindingKind.HANG, severity=Severity.CRITICAL, verdict=Verdict.HANG, ranks=reading.culprits,
                    message=_counts_message(reading)[:500], hint=HINT_HANG, evidence=evidence, data=data)]


def _counts_message(r: RasReading) -> str:
    assert r.ahead is not None
    top, n_ahead, listed = r.ahead
    ahead = f"{n_ahead} rank{'s' if n_ahead > 1 else ''}" + (f" ({fmt_ranks(list(listed))})" if listed else "")
    behind = ", ".join(f"{k} up to {n}" for n, k in r.behind)
    n_behind = sum(k for _, k in r.behind)
    if r.culprits:
        who = f"the rank{'s' if len(r.culprits) > 1 else ''} behind: {fmt_ranks(list(r.culprits))}"
    elif n_behind >= n_ahead:
        who = "no culprit: most ranks are behind, and the ranks ahead are no culprits"
    else:
        who = "the report does not list every rank behind (`ncclras -v` does)"
    return (f"NCCL's RAS report: on communicator {r.comm} {ahead} launched {r.op} operation {top} and wait in it, "
            f"{n_behind} rank{'s' if n_behind > 1 else ''} never launched it ({behind}); {who}")
