"""Helpers shared by detectors: process-group status per rank, stall signals, code locations."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..model import Evidence, LogEvent, PgStatus, Run

STALL_EVENTS = ("watchdog_timeout", "watchdog_failure", "dump_signal", "heartbeat_timeout", "hook_stall",
                "desync_report", "barrier_failure")
SOURCE_RANK = {"fr": 3, "hook": 2, "watchdog": 2, "dump_signal": 1}


@dataclass(frozen=True)
class RankPg:
    rank: int
    pg: str
    enqueued: int | None
    started: int | None
    completed: int | None
    evidence: Evidence | None


def pg_status_by_rank(run: Run) -> dict[str, dict[int, RankPg]]:
    """For each process group, each rank's most informative status (Flight Recorder first)."""
    best: dict[tuple[str, int], PgStatus] = {}
    for st in run.pg_status:
        if st.pg.endswith(":p2p"):
            continue
        k = (st.pg, st.rank)
        cur = best.get(k)
        if cur is None or SOURCE_RANK.get(st.source, 0) > SOURCE_RANK.get(cur.source, 0) or (
                SOURCE_RANK.get(st.source, 0) == SOURCE_RANK.get(cur.source, 0)
                and (st.last_enqueued or -1) > (cur.last_enqueued or -1)):
            best[k] = st
    out: dict[str, dict[int, RankPg]] = {}
    for (pg, rank), st in best.items():
        out.setdefault(pg, {})[rank] = RankPg(rank, pg, st.last_enqueued, st.last_started, st.last_completed,
                                               st.evidence)
    return out


def stall_events(run: Run) -> list[LogEvent]:
    return [e for e in run.events if e.kind in STALL_EVENTS]


def entries_at(run: Run, pg: str, seq: int) -> dict[int, dict]:
    """Flight Recorder / hook rows of collective (pg, seq), by rank: one filtering pass, then lookups."""
    df = run.collectives
    if not len(df):
        return {}
    rows = df[(df["seq"] == seq) & df["source"].isin(["fr", "hook"])]
    rows = rows[rows["pg"].astype(str) == pg]
    return {int(r["rank"]): r for r in rows.to_dict("records")}


def fmt_ranks(ranks: list[int] | tuple[int, ...], limit: int = 12) -> str:
    """``[0, 1, 2, 3, 5, 7, 8]`` -> ``0-3, 5, 7-8``; long lists are cut after ``limit`` runs."""
    rs = sorted(set(ranks))
    runs: list[str] = []
    i = 0
    while i < len(rs):
        j = i
        while j + 1 < len(rs) and rs[j + 1] == rs[j] + 1:
            j += 1
        runs.append(str(rs[i]) if i == j else f"{rs[i]}-{rs[j]}")
        i = j + 1
    if len(runs) > limit:
        return ", ".join(runs[:limit]) + f", ... ({len(rs)} ranks)"
    return ", ".join(runs)


def not_p2p(d: pd.DataFrame) -> pd.DataFrame:
    """Rows of collective groups (PyTorch's ``<pg>:p2p`` send/recv counters left out), without turning
    every row's category into a string."""
    return rows_where(d, collective_rows(d))


def collective_rows(d: pd.DataFrame) -> np.ndarray:
    """True for the rows of collective groups: not PyTorch's ``<pg>:p2p`` send/recv counters."""
    pg = d["pg"]
    if isinstance(pg.dtype, pd.CategoricalDtype):
        p2p = [c for c in pg.cat.categories if str(c).endswith(":p2p")]
        return ~pg.isin(p2p).to_numpy() if p2p else np.ones(len(d), dtype=bool)
    return ~pg.astype(str).str.endswith(":p2p").to_numpy(dtype=bool)


def rows_where(d: pd.DataFrame, mask: np.ndarray) -> pd.DataFrame:
    """``d[mask]``, or ``d`` itself when the mask keeps every row: boolean indexing always copies, and at
    millions of rows the usual mask keeps them all (a copy of the table's columns is hundreds of MB)."""
    return d if mask.all() else d[mask]


def group_key(d: pd.DataFrame) -> np.ndarray:
    """One int64 per (pg, seq): a single sortable key instead of a two-column groupby."""
    pg = d["pg"]
    codes = (pg.cat.codes if isinstance(pg.dtype, pd.CategoricalDtype) else pd.Series(pd.factorize(pg)[0])).to_numpy(
        np.int64)
    seq = d["seq"].to_numpy(np.int64)
    span = int(seq.max()) + 1 if len(seq) else 1
    return codes * span + seq


def dense_groups(key: np.ndarray) -> tuple[np.ndarray, int]:
    """(code per row in 0..n-1, n) for a ``group_key``: the key less its minimum when its range is
    small (the usual case: a few process groups times their sequence numbers), else a factorisation.
    Codes may leave gaps (groups of size 0), so that ``ufunc.at`` and ``bincount`` can aggregate
    per group with no sort."""
    if not len(key):
        return np.empty(0, np.int64), 0
    lo, hi = int(key.min()), int(key.max())
    if hi - lo < 4 * len(key) + 1024:
        return key - lo, hi - lo + 1
    codes, uniq = pd.factorize(key, sort=True)
    return codes.astype(np.int64, copy=False), len(uniq)
