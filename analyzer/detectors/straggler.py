"""Straggler: a rank the others keep waiting for.

Per collective seen on every rank of its process group (Flight Recorder ``duration_ms`` with
``TORCH_NCCL_ENABLE_TIMING``, or the hook's completion times), the kernel that waits longest
ran on the ranks that arrived first, and the shortest on the rank that arrived last. The late
rank of a collective is the one with the shortest duration when the spread is large; the
others' waiting time is the spread. A rank is a straggler when it is late far more often than
chance (binomial tail, p < ``alpha``) and the time it cost is material.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..model import Evidence, Finding, Run, Severity, Verdict
from .common import collective_rows, dense_groups, group_key

MIN_SPREAD_MS = 5.0
MIN_EVENTS = 5
ALPHA = 1e-3
MIN_TOTAL_WAIT_MS = 200.0


def late_arrivals(df: pd.DataFrame) -> pd.DataFrame:
    """One row per collective with a material spread: pg, seq, op, late rank, wait (ms).

    Rows are chosen by one mask over the table, not by successive copies of it."""
    torch_rows = df["source"].isin(["fr", "hook", "completion_hook"]).to_numpy()
    if torch_rows.any():
        d = df[torch_rows].drop_duplicates(["rank", "pg", "seq"], keep="first")
        keep = np.ones(len(d), dtype=bool)
    else:
        # only NCCL COLL lines: their timestamps (NCCL_DEBUG_TIMESTAMP_LEVELS) are the enqueue times;
        # (rank, communicator, call number) is unique by construction there
        d = df[["rank", "pg", "seq", "op", "t_created", "duration_ms"]]  # no copy: pandas copies on write
        keep = (df["source"] == "nccl").to_numpy() & d["t_created"].notna().to_numpy() & \
            ~d["op"].isin(["send", "recv"]).to_numpy()
    keep &= collective_rows(d)
    keep &= d["seq"].to_numpy() > 1  # the first collective of a group pays for connection set-up on every rank
    if not keep.any():
        return _EMPTY.copy()
    timed = keep & d["duration_ms"].notna().to_numpy()
    if timed.sum() >= 0.5 * keep.sum():
        return _by_duration(d[timed])
    return _by_arrival(d, keep & d["t_created"].notna().to_numpy())


_EMPTY = pd.DataFrame(columns=["pg", "seq", "op", "late_rank", "wait_ms", "n"])


def _by_duration(d: pd.DataFrame) -> pd.DataFrame:
    """GPU-timed collectives: the late rank waited least, so its kernel was the shortest."""
    n = d.groupby(["pg", "seq"], observed=True)["rank"].transform("count")
    d = d[n >= 2]
    if not len(d):
        return _EMPTY.copy()
    g = d.groupby(["pg", "seq"], observed=True)
    agg = g["duration_ms"].agg(["min", "max", "count"])
    late = d.loc[g["duration_ms"].idxmin(), ["pg", "seq", "rank", "op"]].set_index(["pg", "seq"])
    out = agg.join(late)
    out["wait_ms"] = out["max"] - out["min"]
    out = out[out["wait_ms"] >= MIN_SPREAD_MS]
    return out.reset_index().rename(columns={"rank": "late_rank", "count": "n"})[list(_EMPTY.columns)]


def _by_arrival(d: pd.DataFrame, keep: np.ndarray) -> pd.DataFrame:
    """Untimed collectives (gloo, the hook's enqueue times, NCCL timestamps) among the ``keep`` rows: the
    late rank issued its call last.

    Only meaningful where the ranks share a clock and calls block (CPU backends), which is why it is
    used only when no GPU durations exist. The late rank must be alone: its lead over the second-latest
    rank, which is what everyone else waited at least, must be material too. Per collective, the
    first, last and second-last times by ``ufunc.at`` over dense group codes: no sort of the
    millions of rows (a lexsort of time within group took 1.3 s at 9 M rows, this 0.1 s).
    """
    if not keep.any():
        return _EMPTY.copy()
    key = group_key(d)
    g, ng = dense_groups(key)
    if not keep.all():
        g = np.where(keep, g, ng)  # the rows left out: a group of their own, never reported
    ng += 1
    t = d["t_created"].to_numpy(np.float64)  # NaN in the rows left out only
    size = np.bincount(g, minlength=ng)
    last = np.full(ng, -np.inf)
    np.maximum.at(last, g, t)
    first = np.full(ng, np.inf)
    np.minimum.at(first, g, t)
    at_last = t == last[g]
    ties = np.bincount(g[at_last], minlength=ng)
    second = np.full(ng, -np.inf)
    np.maximum.at(second, g, np.where(at_last, -np.inf, t))
    second = np.where(ties >= 2, last, second)  # two ranks last together: no lead
    with np.errstate(invalid="ignore"):
        wait_ms = (last - first) * 1000.0
        lead_ms = (last - second) * 1000.0
        sel = (size >= 2) & (wait_ms >= MIN_SPREAD_MS) & (lead_ms >= MIN_SPREAD_MS)
    sel[-1] = False
    pos = np.flatnonzero(at_last & sel[g])  # one row per selected collective (its last is alone)
    pos = pos[np.argsort(key[pos], kind="stable")]
    rows = d.iloc[pos]
    gs = g[pos]
    return pd.DataFrame({"pg": rows["pg"].to_numpy(), "seq": rows["seq"].to_numpy(), "op": rows["op"].to_numpy(),
                         "late_rank": rows["rank"].to_numpy(), "wait_ms": wait_ms[gs], "n": size[gs]})


def run_late_arrivals(run: Run) -> pd.DataFrame:
    """``late_arrivals`` of the run's table, computed once per analysis (straggler and hotspots share it)."""
    if "late_arrivals" not in run.memo:
        run.memo["late_arrivals"] = late_arrivals(run.collectives)
    return run.memo["late_arrivals"]


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
            kind="straggler", severity=Severity.WARNING,
            message=f"rank {int(rank)} arrived last at {k} of {total_events} collectives with a spread over {MIN_SPREAD_MS:g} ms; "
            f"the others waited {wait / 1000:.2f} s in all for it (median {med:.0f} ms each)",
            ranks=(int(rank),), hint="Look at what rank " + str(int(rank)) + " does before its collectives (data loading, "
            "host-side work, a slower GPU or thermal throttling, a noisy neighbour on its host).",
            evidence=tuple(ev), verdict=Verdict.DEGRADED,
            data={"late_count": k, "events": total_events, "wait_ms_total": round(wait, 1), "wait_ms_median": round(med, 1),
             "p_value": p}))
    return findings
