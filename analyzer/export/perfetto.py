"""Chrome trace-event JSON of the per-rank collectives: one process (track group) per rank, one thread
(track) per process group, one complete slice ("ph": "X") per collective with its op, size, seq and
state in ``args``; the stuck collective is named and flagged, and a rank that never joined it gets an
instant event where its record stops. Times are microseconds since the first record; a run with no
timestamps (NCCL COLL lines without NCCL_DEBUG_TIMESTAMP_LEVELS) is laid out one slot per sequence number.

Format: https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU
"""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from ..result import Analysis
from ..metrics.progress import NEVER_JOINED, WAITING, states_at_stuck
from ..metrics.records import arrival, pg_choices, strs
from ..metrics.timeline import completed_through, pg_records, run_end, spans

SLOT_US = 1000.0  # one sequence number's slot when there are no timestamps
MIN_DUR_US = 1.0


def _enc(cache: dict[str, str], text: str | None) -> str:
    """A string as JSON, each distinct one encoded once (ops, states, dtypes repeat millions of times)."""
    key = text or ""
    out = cache.get(key)
    if out is None:
        out = cache[key] = json.dumps(text or None)
    return out


def _num(x: float) -> str:
    return "null" if not math.isfinite(x) else str(int(x))


def _pg_events(a: Analysis, pg: str, tid: int, t0: float | None, t_end: float | None) -> list[str]:
    """The process group's slices as JSON text, one string per event: building a dict per collective and
    encoding it cost most of the export's time at 700,000 records."""
    stuck = a.decision.stuck
    here = stuck if stuck is not None and str(stuck.pg) == pg else None
    view = pg_records(a.run.collectives, pg, completed_through(a.run, a.findings, pg, here))
    if not len(view):
        return []
    at = states_at_stuck(a.run, a.findings, here) if here is not None else {}
    start, end = spans(view, here, [r for r, s in at.items() if s == WAITING], t_end)
    seq = view["seq"].to_numpy(np.int64)
    states = strs(view["state"])
    timed = t0 is not None and np.isfinite(start).any()
    if timed:  # times in us since t0, vectorised; a wait lasts to the end of the run (metrics.timeline.spans)
        ok = np.isfinite(start)
        stop = np.where(np.isfinite(end), end, start)
        ts = np.where(ok, (start - t0) * 1e6, seq * SLOT_US)  # type: ignore[operator]
        dur = np.where(ok, np.maximum((stop - start) * 1e6, MIN_DUR_US), SLOT_US * 0.8)
    else:
        ts, dur = seq * SLOT_US, np.full(len(seq), SLOT_US * 0.8)
    is_stuck = seq == here.seq if here is not None else np.zeros(len(seq), dtype=bool)
    cache: dict[str, str] = {}
    pg_js = json.dumps(pg)
    out: list[str] = []
    for r, q, op, st, dt, b, c, t, d, stk in zip(
            view["rank"].to_numpy(np.int64).tolist(), seq.tolist(), strs(view["op"]).tolist(), states.tolist(),
            strs(view["dtype"]).tolist(), view["bytes"].to_numpy(dtype=float).tolist(),
            view["count"].to_numpy(dtype=float).tolist(), np.round(ts, 3).tolist(), np.round(dur, 3).tolist(),
            is_stuck.tolist(), strict=True):
        # an op name of identifier characters needs no escaping; anything else goes through the encoder
        name = f'"{op} #{q}"' if op.isidentifier() and not stk else json.dumps(f"{'STUCK ' if stk else ''}{op} #{q}")
        out.append(f'{{"name":{name},"cat":"collective","ph":"X","ts":{t},"dur":{d},"pid":{r},"tid":{tid},'
                   f'"args":{{"op":{_enc(cache, op)},"seq":{q},"pg":{pg_js},"state":{_enc(cache, st)},'
                   f'"dtype":{_enc(cache, dt)},"bytes":{_num(b)},"count":{_num(c)},"stuck":{"true" if stk else "false"}}}'
                   + (',"cname":"terrible"}' if stk else "}"))
    if here is not None:
        out += [json.dumps(e) for e in _never_joined(a, view, here.seq, tid, start if timed else None, t0)]
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


def trace_text(a: Analysis) -> str:
    """The trace-event JSON text: metadata (rank and process-group names), slices, instant events, and
    the verdict in ``otherData``."""
    df = a.run.collectives
    pgs = pg_choices(df)
    t = arrival(df) if len(df) else np.array([])
    t_ok = t[np.isfinite(t)]
    t0 = float(t_ok.min()) if len(t_ok) else None
    t_end_opt = run_end(a.run) if t0 is not None else None
    meta: list[dict[str, Any]] = []
    ranks = sorted(set(a.run.ranks()) | {int(r) for r in df["rank"].unique()} if len(df) else set(a.run.ranks()))
    culprits = set(a.decision.culprit_ranks)
    for r in ranks:
        meta.append({"name": "process_name", "ph": "M", "pid": r, "tid": 0,
                     "args": {"name": f"rank {r}" + (" (culprit)" if r in culprits else "")}})
        meta.append({"name": "process_sort_index", "ph": "M", "pid": r, "tid": 0, "args": {"sort_index": r}})
        for tid, pg in enumerate(pgs):
            meta.append({"name": "thread_name", "ph": "M", "pid": r, "tid": tid, "args": {"name": f"pg {pg}"}})
    events = [json.dumps(e, separators=(",", ":")) for e in meta]
    for tid, pg in enumerate(pgs):
        events += _pg_events(a, pg, tid, t0, t_end_opt)
    d = a.decision
    other = {"verdict": d.verdict.value, "headline": d.headline, "culprit_ranks": list(d.culprit_ranks),
             "stuck": d.stuck.to_json() if d.stuck else None,
             "clock": "seconds since the first record" if t0 is not None else "one slot per sequence number"}
    return ('{"traceEvents":[' + ",".join(events) + '],"displayTimeUnit":"ms","otherData":'
            + json.dumps(other, default=str) + "}")


def trace_events(a: Analysis) -> dict[str, Any]:
    """``trace_text`` as an object (for callers that inspect it)."""
    return dict(json.loads(trace_text(a)))


def perfetto_json(a: Analysis) -> str:
    return trace_text(a)
