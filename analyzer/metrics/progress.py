"""Process-group status: how far each rank got in each process group, and each rank's state at the
stuck collective, taken from the decision's own finding (the Hang report's flags and the verdict
come from one judgement, never two)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
import enum
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ..model import Evidence, Finding, FindingKind, PgStatus, Run, Stuck
from .records import dense_groups, in_values, source_priority, strs

SOURCE_RANK = {"fr": 3, "hook": 2, "watchdog": 2, "dump_signal": 1}


class AtStuck(enum.StrEnum):
    """Where a rank stands at the stuck (or mismatched) collective: the Hang page's, the Timeline's and the
    exports' one vocabulary (``states_at_stuck``)."""

    NEVER_JOINED = "never joined"
    WAITING = "waiting in"
    COMPLETED = "completed"
    DIED = "ended before"
    MISMATCHED = "called another collective at"  # a desync's odd side: it joined, with a different call
    UNKNOWN = "unknown"


NEVER_JOINED, WAITING, COMPLETED, DIED, UNKNOWN = (AtStuck.NEVER_JOINED, AtStuck.WAITING, AtStuck.COMPLETED,
                                                   AtStuck.DIED, AtStuck.UNKNOWN)
MISMATCHED = AtStuck.MISMATCHED


@dataclass(frozen=True)
class RankPg:
    rank: int
    pg: str
    enqueued: int | None
    started: int | None
    completed: int | None
    evidence: Evidence | None
    source: str = ""


def pg_status_by_rank(run: Run) -> dict[str, dict[int, RankPg]]:
    """For each process group, each rank's most informative status (Flight Recorder first, then the
    larger enqueued count); PyTorch's ``<pg>:p2p`` counters left out."""
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
                                               st.evidence, st.source)
    return out


def stuck_finding(findings: Sequence[Finding], stuck: Stuck | None) -> Finding | None:
    """The finding that named the decision's stuck collective (its per-rank classes are the verdict's)."""
    if stuck is None:
        return None
    return next((f for f in findings if f.stuck == stuck), None)


def states_at_stuck(run: Run, findings: Sequence[Finding], stuck: Stuck | None) -> dict[int, AtStuck]:
    """rank -> never joined / waiting in / completed / ended before / unknown, at the stuck collective.

    The ranks the decision's finding names (``ranks``) and those it says wait (``data["waiting"]``)
    take its classes; any other rank is placed by its counts, as the detector placed them."""
    if stuck is None:
        return {}
    counts = {r: (s.enqueued, s.completed) for r, s in pg_status_by_rank(run).get(stuck.pg, {}).items()}
    if not counts:  # no status records (NCCL logs only): the collectives recorded per rank
        counts = {r: (row["last_enqueued"], row["last_completed"]) for (r, pg), row in _from_table(run.collectives).items()
                  if pg == str(stuck.pg)}
    out: dict[int, AtStuck] = {}
    for r in run.ranks() or sorted(counts):
        enq, done = counts.get(r, (None, None))
        if enq is None:
            out[r] = UNKNOWN
        elif enq < stuck.seq:
            out[r] = NEVER_JOINED
        elif done is not None and done >= stuck.seq:
            out[r] = COMPLETED
        else:
            out[r] = WAITING
    f = stuck_finding(findings, stuck)
    if f is not None:
        cls = f.data.get("class")
        for r in f.data.get("waiting") or ():
            out[int(r)] = WAITING
        odd = MISMATCHED if f.kind == FindingKind.DESYNC else NEVER_JOINED
        for r in f.ranks:
            out[int(r)] = DIED if cls == "process_died" else (WAITING if cls == "never_completed" else odd)
    return out


def judged_progress(run: Run, findings: Sequence[Finding], stuck: Stuck | None) -> dict[str, dict[int, RankPg]]:
    """Each rank's last enqueued / completed collective per process group as the judgement reads them: what
    the report, the exports, ``watch`` and every dashboard page show (one rule, here).

    The best status record (``pg_status_by_rank``), raised to the collectives recorded where those go
    further (a status is a snapshot, sequence numbers only grow); at the stuck collective a rank that waits
    in it or never joined it has not completed it (gloo's and a timed-out rank's status count a collective
    completed once it ended, in error too), and a rank that never joined it has not enqueued it."""
    out: dict[str, dict[int, RankPg]] = {pg: dict(by) for pg, by in pg_status_by_rank(run).items()}
    for (r, pg), row in _from_table(run.collectives).items():
        cur = out.setdefault(pg, {}).get(r)
        enq, done = row["last_enqueued"], row["last_completed"]
        if cur is None:
            out[pg][r] = RankPg(r, pg, enq, None, done, None, "collectives")
        elif _past(enq, cur.enqueued) or _past(done, cur.completed):
            out[pg][r] = replace(cur, enqueued=_top(cur.enqueued, enq), completed=_top(cur.completed, done))
    if stuck is None or str(stuck.pg) not in out:
        return out
    by = out[str(stuck.pg)]
    for r, at in states_at_stuck(run, findings, stuck).items():
        cur = by.get(r)
        if cur is None or at not in (WAITING, NEVER_JOINED, MISMATCHED):
            continue
        done = None if cur.completed is None else min(cur.completed, stuck.seq - 1)
        enq = None if cur.enqueued is None or at != NEVER_JOINED else min(cur.enqueued, stuck.seq - 1)
        by[r] = replace(cur, completed=done, enqueued=cur.enqueued if at != NEVER_JOINED else enq)
    return out


def _past(new: int | None, old: int | None) -> bool:
    return new is not None and (old is None or new > old)


def _top(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _from_table(df: pd.DataFrame) -> dict[tuple[int, str], dict[str, Any]]:
    """(rank, pg) -> last enqueued / completed from the collectives table, in (rank, pg) order: the rows of
    each (rank, pg)'s best source (``best_records``' choice), a collective completed when any source saw it
    complete. The maxima are taken per group over the rows as they are, without ``best_records``' one row per
    (rank, pg, seq) (a maximum needs no deduplication: that pass was 0.1-0.2 s of a 64-rank analysis, and this
    runs for the report, the desync detector and the states at the stuck collective). The process groups by
    the column's integer codes: a column of names made the frame an Arrow string column under pandas 3, a
    conversion of every row."""
    if not len(df):
        return {}
    torch_rows = _not_nccl(df["pg"])
    use = df[torch_rows] if torch_rows.any() and not torch_rows.all() else df
    codes, names = _name_codes(use["pg"])
    rank = use["rank"].to_numpy(np.int64)
    seq = use["seq"].to_numpy(np.int64)
    group, ngroups = dense_groups((rank - int(rank.min())) * len(names) + codes)  # one code per (rank, pg)
    keep = _best_source_rows(group, ngroups, source_priority(use["source"]))
    done = _completed_anywhere(group, seq, keep, in_values(use["state"], ["completed"]))
    kg, ks = (group, seq) if keep is None else (group[keep], seq[keep])
    enq = np.full(ngroups, -1, dtype=np.int64)
    np.maximum.at(enq, kg, ks)
    comp = np.full(ngroups, -1, dtype=np.int64)
    if done.any():  # a table of NCCL lines alone has no completed row: no pass
        kd = done if keep is None else keep & done
        np.maximum.at(comp, group[kd], seq[kd])
    row_of = np.full(ngroups, -1, dtype=np.int64)  # a row of each group, for its rank and pg
    row_of[kg] = np.arange(len(group)) if keep is None else np.flatnonzero(keep)
    rows = [(int(rank[i]), names[codes[i]], int(enq[g]), int(comp[g]))
            for g, i in enumerate(row_of.tolist()) if i >= 0]
    rows.sort(key=lambda row: (row[0], row[1]))
    return {(r, pg): {"rank": r, "pg": pg, "last_enqueued": enq_, "last_completed": comp_ if comp_ >= 0 else None,
                      "source": "collectives"}
            for r, pg, enq_, comp_ in rows}


def _best_source_rows(group: np.ndarray, ngroups: int, pri: np.ndarray) -> np.ndarray | None:
    """The rows of each group's best source (lowest ``source_priority``); None for every row, without a pass,
    when the table has one source (a run of NCCL lines alone, the usual large input)."""
    if not len(pri) or int(pri.min()) == int(pri.max()):
        return None
    best = np.full(ngroups, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(best, group, pri)
    return pri == best[group]


def _completed_anywhere(group: np.ndarray, seq: np.ndarray, keep: np.ndarray | None, done: np.ndarray) -> np.ndarray:
    """``done``, raised for the kept rows whose (group, seq) another row saw completed (another source, or an
    earlier record of the same one). Only the kept rows not completed are looked up, few in a long table (the
    collectives in flight), against a table of their own keys' range rather than a sort of every row."""
    if not done.any():
        return done
    pend = ~done if keep is None else keep & ~done
    if not pend.any():
        return done
    lo = int(seq.min())
    key = group * (int(seq.max()) - lo + 2) + (seq - lo)
    pk = key[pend]
    seen = key[done]
    small = int(pk.max()) - int(pk.min()) < (1 << 26)  # a table of the keys' range: 64 MB at most
    completed = np.unique(seen[np.isin(seen, pk, kind="table") if small else np.isin(seen, pk, kind="sort")])
    if not len(completed):
        return done
    out = done.copy()
    out[pend] = np.isin(pk, completed)
    return out


def _name_codes(pg: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Each row's pg as a code into a list of distinct names (``strs``' reading of each value: a missing one
    is ""); a categorical's codes are mapped through its few categories, no row made a string."""
    if isinstance(pg.dtype, pd.CategoricalDtype):
        by_code = [str(c) for c in pg.cat.categories] + [""]  # code -1 (missing) picks the trailing ""
        distinct = {name: i for i, name in enumerate(dict.fromkeys(by_code))}
        code_of = np.array([distinct[name] for name in by_code], dtype=np.int64)
        return code_of[pg.cat.codes.to_numpy()], list(distinct)
    codes, uniq = pd.factorize(strs(pg))
    return codes, [str(u) for u in uniq]


def _not_nccl(pg: pd.Series) -> np.ndarray:
    """Rows whose process group is not an NCCL communicator's (``nccl:...``); a categorical by its categories."""
    if isinstance(pg.dtype, pd.CategoricalDtype):
        by_code = np.array([not str(c).startswith("nccl:") for c in pg.cat.categories] + [True], dtype=bool)
        return by_code[pg.cat.codes.to_numpy()]  # code -1 (missing) is "", as strs reads it
    return np.array([not p.startswith("nccl:") for p in strs(pg)], dtype=bool)


def rank_status(run: Run, findings: Sequence[Finding], stuck: Stuck | None, culprits: Sequence[int],
                max_ranks: int = 4096, verdict_states: Mapping[int, tuple[str, str | None]] | None = None,
                ) -> list[dict[str, Any]]:
    """Per rank and process group: last enqueued / completed, the source, the state at the stuck
    collective (``states_at_stuck``), whether the verdict names it, the rank's state as the decision
    gives it (``verdict_states``: rank -> (state, detail)), and where it is (its stack)."""
    where: dict[int, str] = {int(r): str(w) for r, w in run.stacks.items()}
    for f in findings:
        for r, w in (f.data.get("where") or {}).items():
            where.setdefault(int(r), str(w))
    rows = {(r, pg): {"rank": r, "pg": pg, "last_enqueued": s.enqueued, "last_completed": s.completed,
                      "source": s.source}
            for pg, by_rank in judged_progress(run, findings, stuck).items() for r, s in by_rank.items()}
    seen = {k[0] for k in rows}
    for r in run.ranks():
        if r not in seen:
            rows[(r, "?")] = {"rank": r, "pg": "?", "last_enqueued": None, "last_completed": None, "source": "no record"}
    at = states_at_stuck(run, findings, stuck)
    cul = set(culprits)
    out = []
    for (r, pg), row in sorted(rows.items(), key=lambda kv: (kv[0][1] != (stuck.pg if stuck else ""), kv[0])):
        state = at.get(r, UNKNOWN) if stuck is not None and pg == stuck.pg else ""
        row["at_stuck"] = f"{state} #{stuck.seq}" if state and state != UNKNOWN and stuck else state
        row["culprit"] = "yes" if r in cul else ""
        if verdict_states is not None:
            state_, _detail = verdict_states.get(r, ("", None))
            row["state"] = state_.replace("_", " ")  # its detail repeats "at_stuck" and "where"
        row["where"] = where.get(r, "")
        out.append(row)
        if len(out) >= max_ranks:
            break
    return out
