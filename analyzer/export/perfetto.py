"""Chrome trace-event JSON of the per-rank collectives: one process (track group) per rank, one thread
(track) per process group, one complete slice ("ph": "X") per collective with its op, size, seq and
state in ``args``; the stuck collective is named and flagged, and a rank that never joined it gets an
instant event where its record stops. Times are microseconds since the first record; a run with no
timestamps (NCCL COLL lines without NCCL_DEBUG_TIMESTAMP_LEVELS) is laid out one slot per sequence number.

Format: https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..analysis import Analysis
from ..metrics.progress import NEVER_JOINED, states_at_stuck
from ..metrics.records import arrival, pg_choices, strs
from ..metrics.timeline import completed_through, pg_records

SLOT_US = 1000.0  # one sequence number's slot when there are no timestamps
MIN_DUR_US = 1.0


def _times(view: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) in seconds of each record; end from completion time, else start + duration, else NaN."""
    start = arrival(view)
    end = view["t_completed"].to_numpy(dtype=float)
    dur = view["duration_ms"].to_numpy(dtype=float) / 1e3
    end = np.where(np.isfinite(end), end, start + np.where(np.isfinite(dur), dur, np.nan))
    return start, end


def _pg_events(a: Analysis, pg: str, tid: int, t0: float | None, t_end: float | None) -> list[dict[str, Any]]:
    stuck = a.decision.stuck
    here = stuck if stuck is not None and str(stuck.pg) == pg else None
    view = pg_records(a.run.collectives, pg, completed_through(a.run, pg, here))
    if not len(view):
        return []
    start, end = _times(view)
    timed = t0 is not None and np.isfinite(start).any()
    seq = view["seq"].to_numpy(np.int64)
    ranks = view["rank"].to_numpy(np.int64)
    ops, states, dtypes = strs(view["op"]), strs(view["state"]), strs(view["dtype"])
    nbytes, count = view["bytes"].to_numpy(dtype=float), view["count"].to_numpy(dtype=float)
    out: list[dict[str, Any]] = []
    for i in range(len(view)):
        if timed and math.isfinite(start[i]):
            ts = (start[i] - t0) * 1e6  # type: ignore[operator]
            stop = end[i] if math.isfinite(end[i]) else (t_end if states[i] != "completed" else start[i])
            dur = max((stop - start[i]) * 1e6, MIN_DUR_US)  # type: ignore[operator]
        else:
            ts, dur = float(seq[i]) * SLOT_US, SLOT_US * 0.8
        is_stuck = here is not None and int(seq[i]) == here.seq
        args = {"op": ops[i], "seq": int(seq[i]), "pg": pg, "state": states[i], "dtype": dtypes[i] or None,
                "bytes": None if not math.isfinite(nbytes[i]) else int(nbytes[i]),
                "count": None if not math.isfinite(count[i]) else int(count[i]), "stuck": is_stuck}
        ev = {"name": f"{'STUCK ' if is_stuck else ''}{ops[i]} #{int(seq[i])}", "cat": "collective", "ph": "X",
              "ts": round(ts, 3), "dur": round(dur, 3), "pid": int(ranks[i]), "tid": tid, "args": args}
        if is_stuck:
            ev["cname"] = "terrible"
        out.append(ev)
    if here is not None:
        out += _never_joined(a, view, here.seq, tid, start if timed else None, t0)
    return out


def _never_joined(a: Analysis, view: pd.DataFrame, seq: int, tid: int, start: np.ndarray | None,
                  t0: float | None) -> list[dict[str, Any]]:
    """An instant event on each rank that never joined the stuck collective, where its records stop."""
    states = states_at_stuck(a.run, a.findings, a.decision.stuck)
    out = []
    for r, st in sorted(states.items()):
        if st != NEVER_JOINED:
            continue
        mine = view["rank"].to_numpy() == r
        if start is not None and mine.any() and np.isfinite(start[mine]).any():
            ts = (float(np.nanmax(start[mine])) - (t0 or 0.0)) * 1e6
        else:
            ts = float(seq) * SLOT_US
        out.append({"name": f"never joined #{seq}", "cat": "hang", "ph": "i", "s": "t", "ts": round(ts, 3),
                    "pid": int(r), "tid": tid, "args": {"seq": seq, "culprit": r in a.decision.culprit_ranks}})
    return out


def trace_events(a: Analysis) -> dict[str, Any]:
    """The trace-event JSON object: metadata (rank and process-group names), slices, instant events."""
    df = a.run.collectives
    pgs = pg_choices(df)
    t = arrival(df) if len(df) else np.array([])
    t_ok = t[np.isfinite(t)]
    t0 = float(t_ok.min()) if len(t_ok) else None
    ends = df["t_completed"].to_numpy(dtype=float) if len(df) else np.array([])
    t_end = float(max(np.nanmax(ends) if np.isfinite(ends).any() else -np.inf, t_ok.max() if len(t_ok) else -np.inf))
    t_end_opt = t_end if math.isfinite(t_end) else None
    events: list[dict[str, Any]] = []
    ranks = sorted(set(a.run.ranks()) | {int(r) for r in df["rank"].unique()} if len(df) else set(a.run.ranks()))
    culprits = set(a.decision.culprit_ranks)
    for r in ranks:
        events.append({"name": "process_name", "ph": "M", "pid": r, "tid": 0,
                       "args": {"name": f"rank {r}" + (" (culprit)" if r in culprits else "")}})
        events.append({"name": "process_sort_index", "ph": "M", "pid": r, "tid": 0, "args": {"sort_index": r}})
        for tid, pg in enumerate(pgs):
            events.append({"name": "thread_name", "ph": "M", "pid": r, "tid": tid, "args": {"name": f"pg {pg}"}})
    for tid, pg in enumerate(pgs):
        events += _pg_events(a, pg, tid, t0, t_end_opt)
    d = a.decision
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"verdict": d.verdict.value, "headline": d.headline, "culprit_ranks": list(d.culprit_ranks),
                          "stuck": d.stuck.to_json() if d.stuck else None,
                          "clock": "seconds since the first record" if t0 is not None else "one slot per sequence number"}}


def perfetto_json(a: Analysis) -> str:
    import json

    return json.dumps(trace_events(a), separators=(",", ":"), default=str)
