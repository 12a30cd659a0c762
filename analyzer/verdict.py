"""Findings -> the one word for the whole job, its culprit ranks and the stuck collective."""
from __future__ import annotations

from dataclasses import dataclass

from .model import Finding, Run, Severity, Stuck, Verdict

PRIORITY = [Verdict.CONFIG_ERROR, Verdict.DESYNC, Verdict.HANG, Verdict.CRASH, Verdict.DEGRADED]


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    culprit_ranks: tuple[int, ...]
    stuck: Stuck | None
    headline: str


def decide(run: Run, findings: list[Finding]) -> Decision:
    blockers = [f for f in findings if f.verdict == Verdict.UNKNOWN]  # e.g. two jobs mixed in one input
    if blockers:
        return Decision(Verdict.UNKNOWN, (), None, blockers[0].message)
    for v in PRIORITY:
        hits = [f for f in findings if f.verdict == v]
        if hits:
            culprits = sorted({r for f in hits for r in f.ranks})
            stuck = next((f.stuck for f in hits if f.stuck), None)
            return Decision(v, tuple(culprits), stuck, hits[0].message)
    usable = any(fmt in ("log", "flight_recorder", "jsonl") for _, fmt in run.files) and (
        len(run.collectives) or run.communicators or run.exits or run.pg_status)
    if not usable:
        return Decision(Verdict.UNKNOWN, (), None, "not enough information to judge the job")
    if run.job.exit_code not in (None, 0):
        return Decision(Verdict.UNKNOWN, (), None,
                        f"the job exited with code {run.job.exit_code} and nothing in the logs says why")
    errors = [f for f in findings if f.severity in (Severity.ERROR, Severity.CRITICAL)]
    if errors:
        return Decision(Verdict.UNKNOWN, (), None, errors[0].message)
    return Decision(Verdict.HEALTHY, (), None, "no hang, crash, desync or straggler found")
