"""Helpers shared by detectors: process-group status per rank, stall signals (the judgement's one list,
``rules.facts.STALL_KINDS``), code locations, a table record as evidence."""
from __future__ import annotations

import numpy as np
import pandas as pd

# process-group status and the per-collective keys are metrics the dashboard shows too: defined once there
from ..metrics.progress import SOURCE_RANK, RankPg, pg_status_by_rank
from ..metrics.records import collective_rows, dense_groups, group_key, in_values
from ..model import Evidence, Run
from ..rules.facts import stall_events
from ..rules.states import fmt_ranks

__all__ = ["SOURCE_RANK", "RankPg", "collective_rows", "dense_groups", "entries_at", "fmt_ranks",
           "group_key", "not_p2p", "pg_status_by_rank", "record_evidence", "rows_where", "stall_events"]


def entries_at(run: Run, pg: str, seq: int) -> dict[int, dict]:
    """Flight Recorder / hook rows of collective (pg, seq), by rank: one filtering pass, then lookups; none at
    once for a table of NCCL lines only."""
    df = run.collectives
    if not len(df):
        return {}
    mask = in_values(df["source"], ["fr", "hook"])  # by the source's categories: no pass when the table has none
    if not mask.any():
        return {}
    mask &= df["seq"].to_numpy() == seq
    rows = df[mask]
    rows = rows[rows["pg"].astype(str) == pg]
    return {int(r["rank"]): r for r in rows.to_dict("records")}


def record_evidence(run: Run, pg: str, seq: int, what: str, rank: int | None = None) -> Evidence | None:
    """The record of collective (pg, seq) in the table as the evidence of ``what``: ``rank``'s own when given and
    present, a record with a line number before a dump's (line 0), the first in table order; None when the table
    holds none. The table keeps no line text: ``what`` says what the record shows."""
    df = run.collectives
    if not len(df):
        return None
    rows = df[df["seq"].to_numpy() == seq]
    rows = rows[rows["pg"].astype(str).to_numpy() == pg]
    if not len(rows):
        return None
    ranks, lines = rows["rank"].to_numpy(), rows["line"].to_numpy(dtype=float)
    lined = np.nan_to_num(lines) >= 1
    order = sorted(range(len(rows)), key=lambda i: (rank is not None and ranks[i] != rank, not lined[i]))
    r = rows.iloc[order[0]]
    return Evidence(str(r["file"]), int(r["line"]) if lined[order[0]] else 0, what)


def not_p2p(d: pd.DataFrame) -> pd.DataFrame:
    """Rows of collective groups (PyTorch's ``<pg>:p2p`` send/recv counters left out), without turning
    every row's category into a string."""
    return rows_where(d, collective_rows(d))


def rows_where(d: pd.DataFrame, mask: np.ndarray) -> pd.DataFrame:
    """``d[mask]``, or ``d`` itself when the mask keeps every row: boolean indexing always copies, and at
    millions of rows the usual mask keeps them all (a copy of the table's columns is hundreds of MB)."""
    return d if mask.all() else d[mask]


def human_bytes(n: float) -> str:
    """A byte count as nccl-tests sizes read (``8 MB``, ``1 GB``: powers of 1024)."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024:
            return f"{n:.0f} {unit}"
        n /= 1024
    return f"{n:.0f} TB"
