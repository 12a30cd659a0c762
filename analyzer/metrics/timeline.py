"""The timeline's numbers: per-rank collective states of one process group, and at scale the same
folded into a ranks x sequence-number window matrix around the stuck collective, ranks with the same
row grouped, so that the ranks that differ stand out at 4,096 ranks as at 2."""
from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..model import CollState, Finding, Run, Stuck
from ..text_fit import rank_runs
from .progress import NEVER_JOINED, WAITING, judged_progress
from .records import arrival, best_records, strs

# cell codes of the progress matrix
NO_RECORD, DONE, IN_FLIGHT, STUCK_WAITING, STUCK_NEVER, ISSUED = 0, 1, 2, 3, 4, 5
CELL_NAMES = ["no record", "completed", "issued, not completed", "waiting in the stuck collective",
              "never joined the stuck collective", "issued (NCCL's COLL lines do not say when it completed)"]


def pg_records(df: pd.DataFrame, pg: str | None, done_through: Mapping[int, int] | None = None) -> pd.DataFrame:
    """One record per (rank, seq) of process group ``pg``, completion merged over the sources and, with
    ``done_through`` (rank -> last completed seq, ``completed_through``), over the process-group status:
    gloo's Flight Recorder never marks an entry completed, though its pg_status counts them."""
    if pg is None or not len(df):
        return df.iloc[0:0]
    view = best_records(df[(df["pg"].astype(str) == str(pg)).to_numpy()])
    if not done_through or not len(view):
        return view
    limit = pd.Series(done_through, dtype="float64").reindex(view["rank"].to_numpy()).to_numpy()
    state = strs(view["state"])
    more = (view["seq"].to_numpy() <= np.nan_to_num(limit, nan=-1)) & (state != CollState.COMPLETED)
    if not more.any():
        return view
    state[more] = "completed"
    return view.assign(state=state)


def run_end(run: Run) -> float | None:
    """When the run's last sign of life was recorded (epoch s): its last collective record or completion, timed
    event or heartbeat; None when nothing is timed."""
    times: list[float] = []
    df = run.collectives
    if len(df):
        for t in (arrival(df), df["t_completed"].to_numpy(dtype=float)):
            if np.isfinite(t).any():
                times.append(float(np.nanmax(t)))
    times += [e.ts for e in run.events if e.ts is not None and math.isfinite(e.ts)]
    hb = run.heartbeats
    if hb is not None and len(hb) and "t" in hb:
        t = hb["t"].to_numpy(dtype=float)
        if np.isfinite(t).any():
            times.append(float(np.nanmax(t)))
    return max(times, default=None)


def spans(view: pd.DataFrame, stuck: Stuck | None, waits: Collection[int], t_end: float | None
          ) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of each record of ``view`` in epoch seconds (NaN: not known), as the Timeline and Perfetto
    draw them. The end is the completion, else start + duration; a record not completed with no end, and the
    stuck collective on a rank that waits in it (``waits``: its record's end is where it gave up, a timeout, not
    a completion), last until ``t_end``, the end of the run: a wait is drawn as long as it was."""
    start = arrival(view)
    end = view["t_completed"].to_numpy(dtype=float)
    dur = view["duration_ms"].to_numpy(dtype=float) / 1e3
    end = np.where(np.isfinite(end), end, start + np.where(np.isfinite(dur), dur, np.nan))
    if t_end is None:
        return start, end
    open_ = (strs(view["state"]) != "completed") & ~np.isfinite(end)
    if stuck is not None and len(waits):
        waiting = (view["seq"].to_numpy() == stuck.seq) & np.isin(view["rank"].to_numpy(), list(waits))
        open_ |= waiting
    return start, np.where(open_ & np.isfinite(start), np.maximum(t_end, start), end)


def completed_through(run: Run, findings: Sequence[Finding], pg: str | None, stuck: Stuck | None) -> dict[int, int]:
    """rank -> the last collective of ``pg`` it completed, as the judgement reads it (``judged_progress``:
    never the stuck collective for a rank that waits in it or never joined it)."""
    return {r: s.completed for r, s in judged_progress(run, findings, stuck).get(str(pg), {}).items()
            if s.completed is not None}


@dataclass(frozen=True)
class ProgressMatrix:
    """Rows are groups of ranks with identical cells (one rank a row when they all differ)."""

    labels: list[str]  # "rank 3" or "ranks 0-2, 4-63 (63)"
    members: list[list[int]]
    seqs: np.ndarray  # the window's sequence numbers
    cells: np.ndarray  # [row, seq] cell codes


def progress_matrix(view: pd.DataFrame, ranks: Sequence[int], stuck: Stuck | None, states: Mapping[int, str],
                    width: int = 48, group_above: int = 32) -> ProgressMatrix:
    """The last ``width`` collectives up to a few past the stuck one (or the last ones seen), per rank.

    Ranks are grouped by identical rows once there are more than ``group_above`` of them."""
    seq = view["seq"].to_numpy(np.int64) if len(view) else np.array([], np.int64)
    top = int(seq.max()) if len(seq) else 0
    hi = min(top, stuck.seq + 8) if stuck is not None else top
    hi = max(hi, stuck.seq if stuck is not None else hi)
    lo = max(int(seq.min()) if len(seq) else 0, hi - width + 1)
    seqs = np.arange(lo, hi + 1, dtype=np.int64)
    lanes = sorted({int(r) for r in ranks} | {int(r) for r in view["rank"].to_numpy()})
    pos = {r: i for i, r in enumerate(lanes)}
    cells = np.full((len(lanes), len(seqs)), NO_RECORD, dtype=np.int8)
    m = (seq >= lo) & (seq <= hi)
    if m.any():
        r_idx = np.array([pos[int(r)] for r in view["rank"].to_numpy()[m]], dtype=np.int64)
        state = strs(view["state"])[m]
        cells[r_idx, seq[m] - lo] = np.where(state == CollState.COMPLETED, DONE, np.where(state == CollState.ENQUEUED, ISSUED, IN_FLIGHT))
    if stuck is not None and lo <= stuck.seq <= hi:
        col = stuck.seq - lo
        for r, st in states.items():
            if r in pos and st == NEVER_JOINED:
                cells[pos[r], col] = STUCK_NEVER
            elif r in pos and st == WAITING:
                cells[pos[r], col] = STUCK_WAITING
    if len(lanes) <= group_above:
        return ProgressMatrix([f"rank {r}" for r in lanes], [[r] for r in lanes], seqs, cells)
    uniq, inv = np.unique(cells, axis=0, return_inverse=True)
    inv = np.asarray(inv).reshape(-1)
    groups = [[lanes[i] for i in np.flatnonzero(inv == k)] for k in range(len(uniq))]
    order = sorted(range(len(uniq)), key=lambda k: (len(groups[k]), groups[k][0]))  # the few that differ first
    return ProgressMatrix([_group_label(groups[k]) for k in order], [groups[k] for k in order], seqs,
                          uniq[order])


def _group_label(members: list[int], limit: int = 6) -> str:
    runs = rank_runs(members)
    text = ", ".join(runs[:limit]) + (", ..." if len(runs) > limit else "")
    return f"rank {text}" if len(members) == 1 else f"ranks {text} ({len(members)})"


def per_rank_counts(view: pd.DataFrame, ranks: Sequence[int]) -> pd.DataFrame:
    """Per rank: collectives recorded, completed, not completed, and issued with no completion logged
    (NCCL's COLL lines say a call was enqueued, never that it finished)."""
    lanes = sorted({int(r) for r in ranks} | {int(r) for r in view["rank"].to_numpy()})
    if not len(view):
        return pd.DataFrame({"rank": lanes, "records": 0, "completed": 0, "not_completed": 0, "issued": 0})
    state = strs(view["state"])
    d = pd.DataFrame({"rank": view["rank"].to_numpy(np.int64), "done": state == CollState.COMPLETED,
                      "issued": state == CollState.ENQUEUED})
    g = d.groupby("rank").agg(size=("done", "size"), done=("done", "sum"), issued=("issued", "sum"))
    g = g.reindex(lanes, fill_value=0)
    return pd.DataFrame({"rank": lanes, "records": g["size"].to_numpy(), "completed": g["done"].to_numpy(),
                         "not_completed": (g["size"] - g["done"] - g["issued"]).to_numpy(),
                         "issued": g["issued"].to_numpy()})
