"""Who waits for whom: per collective, the rank that arrived last and what it cost the others
(arrival order), and the rank x step matrix of waiting time.

With kernel durations (Flight Recorder ``duration_ms`` with ``TORCH_NCCL_ENABLE_TIMING``, the hook's
completion times) the kernel that waits longest ran on the ranks that arrived first and the
shortest on the rank that arrived last: a rank's wait is its duration less the shortest. Without
them, it is the last arrival less its own (arrival = kernel start, else enqueue time).
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..model import Run
from .records import (
    Groups,
    arrival,
    best_records,
    collective_rows,
    dense_groups,
    group_key,
    table_groups,
    timed_family,
)

MIN_SPREAD_MS = 5.0
LATE_COLUMNS = ["pg", "seq", "op", "late_rank", "wait_ms", "n"]


def late_arrivals(df: pd.DataFrame, groups: Groups | None = None) -> pd.DataFrame:
    """One row per collective with a material spread: pg, seq, op, late rank, wait (ms). ``groups``:
    ``df``'s (pg, seq) groups, when known (``table_groups``).

    Rows are chosen by one mask over the table, not by successive copies of it."""
    torch_rows = timed_family(df)  # PyTorch's records, else the Inspector's: both with kernel durations
    if torch_rows.any():
        d = df[torch_rows].drop_duplicates(["rank", "pg", "seq"], keep="first")
        keep = np.ones(len(d), dtype=bool)
        groups = None  # other rows than the table's
    else:
        # only NCCL COLL lines: their timestamps (NCCL_DEBUG_TIMESTAMP_LEVELS) are the enqueue times;
        # (rank, communicator, call number) is unique by construction there
        d = df[["rank", "pg", "seq", "op", "t_created", "duration_ms"]]  # no copy: pandas copies on write
        keep = (df["source"] == "nccl").to_numpy() & d["t_created"].notna().to_numpy() & \
            ~d["op"].isin(["send", "recv"]).to_numpy()
    keep &= collective_rows(d)
    keep &= d["seq"].to_numpy() > 1  # the first collective of a group pays for connection set-up on every rank
    if not keep.any():
        return pd.DataFrame(columns=LATE_COLUMNS)
    timed = keep & d["duration_ms"].notna().to_numpy()
    if timed.sum() >= 0.5 * keep.sum():
        return _by_duration(d[timed])
    return _by_arrival(d, keep & d["t_created"].notna().to_numpy(), groups)


def _by_duration(d: pd.DataFrame) -> pd.DataFrame:
    """GPU-timed collectives: the late rank waited least, so its kernel was the shortest."""
    n = d.groupby(["pg", "seq"], observed=True)["rank"].transform("count")
    d = d[n >= 2]
    if not len(d):
        return pd.DataFrame(columns=LATE_COLUMNS)
    g = d.groupby(["pg", "seq"], observed=True)
    agg = g["duration_ms"].agg(["min", "max", "count"])
    late = d.loc[g["duration_ms"].idxmin(), ["pg", "seq", "rank", "op"]].set_index(["pg", "seq"])
    out = agg.join(late)
    out["wait_ms"] = out["max"] - out["min"]
    out = out[out["wait_ms"] >= MIN_SPREAD_MS]
    return out.reset_index().rename(columns={"rank": "late_rank", "count": "n"})[LATE_COLUMNS]


def _by_arrival(d: pd.DataFrame, keep: np.ndarray, groups: Groups | None = None) -> pd.DataFrame:
    """Untimed collectives (gloo, the hook's enqueue times, NCCL timestamps) among the ``keep`` rows: the
    late rank issued its call last.

    Only meaningful where the ranks share a clock and calls block (CPU backends), which is why it is
    used only when no GPU durations exist. The late rank must be alone: its lead over the second-latest
    rank, which is what everyone else waited at least, must be material too. Per collective, the
    first, last and second-last times by ``ufunc.at`` over dense group codes: no sort of the rows.
    """
    if not keep.any():
        return pd.DataFrame(columns=LATE_COLUMNS)
    g, ng = groups if groups is not None else dense_groups(group_key(d))  # in (pg, seq) order, as the key
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
    pos = pos[np.argsort(g[pos], kind="stable")]
    rows = d.iloc[pos]
    gs = g[pos]
    return pd.DataFrame({"pg": rows["pg"].to_numpy(), "seq": rows["seq"].to_numpy(), "op": rows["op"].to_numpy(),
                         "late_rank": rows["rank"].to_numpy(), "wait_ms": wait_ms[gs], "n": size[gs]})


def run_late_arrivals(run: Run) -> pd.DataFrame:
    """``late_arrivals`` of the run's table, computed once per analysis (straggler, hotspots, pages)."""
    if "late_arrivals" not in run.memo:
        run.memo["late_arrivals"] = late_arrivals(run.collectives, table_groups(run))
    return run.memo["late_arrivals"]


def late_counts(la: pd.DataFrame) -> pd.DataFrame:
    """Per rank: how often it arrived last and the waiting it cost the others (ms), most first."""
    if not len(la):
        return pd.DataFrame(columns=["rank", "late", "wait_ms"])
    g = la.groupby("late_rank").agg(late=("seq", "size"), wait_ms=("wait_ms", "sum")).reset_index()
    g = g.rename(columns={"late_rank": "rank"})
    return g.sort_values(["late", "wait_ms"], ascending=False).reset_index(drop=True)


def wait_matrix(df: pd.DataFrame, pg: str | None, max_steps: int = 400) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ranks, steps, waiting ms [rank, step]) for one process group; steps binned (mean) down to
    ``max_steps`` columns."""
    view = best_records(df[(df["pg"] == pg).to_numpy()]) if pg is not None and len(df) else df.iloc[0:0]
    arr = arrival(view) if len(view) else np.array([])
    empty = np.array([], dtype=int), np.array([], dtype=int), np.zeros((0, 0))
    ok = np.isfinite(arr)
    if not ok.any():
        return empty
    dur = view["duration_ms"].to_numpy(dtype=float)
    use_dur = np.isfinite(dur).sum() >= 0.5 * len(view)
    ok = np.isfinite(dur) if use_dur else ok
    if not ok.any():
        return empty
    ranks_u, r_idx = np.unique(view["rank"].to_numpy()[ok], return_inverse=True)
    seqs_u, s_idx = np.unique(view["seq"].to_numpy()[ok], return_inverse=True)
    a = np.full((len(ranks_u), len(seqs_u)), np.nan)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)  # all-NaN columns
        if use_dur:
            a[r_idx, s_idx] = dur[ok]
            wait = a - np.nanmin(a, axis=0)[None, :]
        else:
            a[r_idx, s_idx] = arr[ok]
            wait = (np.nanmax(a, axis=0)[None, :] - a) * 1e3
        if len(seqs_u) > max_steps:
            bins = np.array_split(np.arange(len(seqs_u)), max_steps)
            wait = np.stack([np.nanmean(wait[:, b], axis=1) for b in bins], axis=1)
            seqs_u = np.array([seqs_u[b[0]] for b in bins])
    return ranks_u.astype(np.int64), seqs_u.astype(np.int64), wait
