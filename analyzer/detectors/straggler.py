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
EXACT_UP_TO = 2000  # events summed term by term; above, the Chernoff bound (work bounded whatever the run's length)


def binom_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p): the exact sum (in logs, so that no term overflows a float) up to
    ``EXACT_UP_TO`` events, else the Chernoff bound exp(-n KL(k/n || p)), which is never below the exact tail:
    a rank flagged on it is flagged on the exact value too."""
    if k <= 0 or p >= 1.0:
        return 1.0
    if k > n or p <= 0.0:
        return 0.0
    if n > EXACT_UP_TO:
        q = k / n
        if q <= p:
            return 1.0
        kl = q * math.log(q / p) + ((1 - q) * math.log((1 - q) / (1 - p)) if q < 1 else 0.0)
        return math.exp(-n * kl)
    lp, lq, lg = math.log(p), math.log1p(-p), math.lgamma(n + 1)
    logs = [lg - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq for i in range(k, n + 1)]
    top = max(logs)
    return min(1.0, math.exp(top) * sum(math.exp(x - top) for x in logs))


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
        ev = [_record(run, int(rank), str(r.pg), int(r.seq),
                      f"pg {r.pg} #{r.seq} {r.op}: others waited {r.wait_ms:.1f} ms for rank {rank}")
              for r in top.itertuples()]
        findings.append(Finding(
            kind=FindingKind.STRAGGLER, severity=Severity.WARNING,
            message=f"rank {int(rank)} arrived last at {k} of {total_events} collectives with a spread over {MIN_SPREAD_MS:g} ms; "
            f"the others waited {wait / 1000:.2f} s in all for it (median {med:.0f} ms each)",
            ranks=(int(rank),), hint="Look at what rank " + str(int(rank)) + " does before its collectives (data loading, "
            "host-side work, a slower GPU or thermal throttling, a noisy neighbour on its host).",
            evidence=tuple(e for e in ev if e is not None), verdict=Verdict.DEGRADED,
            data={"late_count": k, "events": total_events, "wait_ms_total": round(wait, 1), "wait_ms_median": round(med, 1),
             "p_value": p}))
    return findings


def _record(run: Run, rank: int, pg: str, seq: int, what: str) -> Evidence | None:
    """The late rank's own record of that collective (its file and line) as the evidence of ``what``; None when the
    table holds none (no location is made up)."""
    df = run.collectives
    mine = df[(df["rank"].to_numpy() == rank) & (df["seq"].to_numpy() == seq) & (df["pg"].astype(str).to_numpy() == pg)]
    if len(mine):
        r = mine.iloc[0]
        return Evidence(str(r["file"]), int(r["line"]) if r["line"] == r["line"] else 0, what)
    return None

