"""Straggler: a rank the others keep waiting for.

The late rank of each collective and the others' waiting come from ``metrics.waiting`` (the same
numbers the dashboard's Hotspots page shows). A rank is a straggler when it is late far more often than
chance (binomial tail, p < ``alpha``) and the time it cost is material.
"""
from __future__ import annotations

import math

from ..metrics.waiting import MIN_SPREAD_MS, late_arrivals, run_late_arrivals
from ..model import Evidence, Finding, FindingKind, Run, Severity, Verdict

__all__ = ["binom_tail", "detect", "late_arrivals", "run_late_arrivals"]

MIN_EVENTS = 5
ALPHA = 1e-3
MIN_TOTAL_WAIT_MS = 200.0


def binom_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    if k <= 0:
        return 1.0
    return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k, n + 1))


def detect(run: Run, alpha: float = ALPHA, min_total_wait_ms: float = MIN_TOTAL_WAIT_MS) -> list[Finding]:
    la = run_late_arrivals(run)
    if not len(la):
        return []
    findings = []
    total_events = len(la)
    nranks = max(int(la["n"].max()), 2)
    for rank, grp in la.groupby("late_rank"):
        k = len(grp)
        p = binom_tail(k, total_events, 1.0 / nranks)
        wait = float(grp["wait_ms"].sum())
        if k < MIN_EVENTS or p >= alpha or wait < min_total_wait_ms:
            continue
        med = float(grp["wait_ms"].median())
        top = grp.sort_values("wait_ms", ascending=False).head(3)
        ev = [Evidence("flight_recorder", 0, f"pg {r.pg} #{r.seq} {r.op}: others waited {r.wait_ms:.1f} ms for rank {rank}")
              for r in top.itertuples()]
        findings.append(Finding(
            kind=FindingKind.STRAGGLER, severity=Severity.WARNING,
            message=f"rank {int(rank)} arrived last at {k} of {total_events} collectives with a spread over {MIN_SPREAD_MS:g} ms; "
            f"the others waited {wait / 1000:.2f} s in all for it (median {med:.0f} ms each)",
            ranks=(int(rank),), hint="Look at what rank " + str(int(rank)) + " does before its collectives (data loading, "
            "host-side work, a slower GPU or thermal throttling, a noisy neighbour on its host).",
            evidence=tuple(ev), verdict=Verdict.DEGRADED,
            data={"late_count": k, "events": total_events, "wait_ms_total": round(wait, 1), "wait_ms_median": round(med, 1),
             "p_value": p}))
    return findings
