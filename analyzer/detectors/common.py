"""Helpers shared by detectors: process-group status per rank, stall signals, code locations."""
from __future__ import annotations

from dataclasses import dataclass

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


def fr_entry(run: Run, rank: int, pg: str, seq: int) -> dict | None:
    df = run.collectives
    if not len(df):
        return None
    rows = df[(df["rank"] == rank) & (df["pg"] == pg) & (df["seq"] == seq) & (df["source"].isin(["fr", "hook"]))]
    if not len(rows):
        return None
    return rows.iloc[-1].to_dict()
