"""A slow start-up from failed reverse lookups: c10d's TCP store resolves the host name of every client socket it
accepts (``getnameinfo``); on a host whose resolver cannot answer, each lookup fails only after the resolver's
timeout and c10d warns ``The hostname of the client socket cannot be retrieved. err=N`` (``EAI_AGAIN`` -3, ``EAI_FAIL``
-4). Several of them in one input: the process group's start-up waited that long for each. Degraded: the job runs,
it starts slowly (a fatal error or a stall elsewhere outranks it in the verdict).

Pure: the run's c10d lines to a finding."""
from __future__ import annotations

import re

from ..model import EventKind, Finding, FindingKind, Run, Severity, Verdict

LOOKUP_FAILED_RE = re.compile(r"hostname of the client socket cannot be retrieved\. err=(?P<err>-?\d{1,4})")
MIN_LINES = 2  # one failed lookup costs one resolver timeout; a run of them is the slow start-up
MOST_EVIDENCE = 3


def detect(run: Run) -> list[Finding]:
    lines = [(e, m) for e in run.events if e.kind == EventKind.C10D_LINE
             and (m := LOOKUP_FAILED_RE.search(e.text)) is not None]
    if len(lines) < MIN_LINES:
        return []
    errs = sorted({m.group("err") for _, m in lines})
    return [Finding(
        kind=FindingKind.SLOW_LINK, severity=Severity.WARNING, verdict=Verdict.DEGRADED,
        message=f"c10d could not retrieve the hostname of a client socket {len(lines)} times during start-up "
        f"(getnameinfo err={', '.join(errs)}): every failed reverse lookup waits out the resolver's timeout, so the "
        "process group starts slowly",
        hint="Make the nodes' addresses resolve (an /etc/hosts entry for every node's address, or a working DNS "
             "server in /etc/resolv.conf, inside the container too); newer torch releases stop resolving after the "
             "first failure and log addresses instead.",
        evidence=tuple(e.evidence for e, _ in lines[:MOST_EVIDENCE] if e.evidence is not None), ranks=(),
        data={"culprits": [], "certainty": {"level": "likely", "why": "c10d's own warnings of failed reverse "
                                            "lookups; how long each waited is the resolver's timeout"}})]
