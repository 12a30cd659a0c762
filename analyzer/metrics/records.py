"""Per-rank collective records: one row per (rank, pg, seq), the best source's row, with the state
merged over every source (Flight Recorder on gloo never marks a collective completed; the hook does)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

SOURCE_PRIORITY = {"fr": 0, "hook": 1, "completion_hook": 2, "inspector": 3, "nccl": 4}
TORCH_TIMED = ("fr", "hook", "completion_hook")  # PyTorch's own records of its collectives, with durations
TIMED_SOURCES = (*TORCH_TIMED, "inspector")  # sources whose durations time the collective itself


def strs(s: pd.Series) -> np.ndarray:
    """A column as an object array of str, fast for categoricals (no per-row string conversion)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        cats = np.asarray([str(c) for c in s.cat.categories] + [""], dtype=object)
        return cats[s.cat.codes.to_numpy()]  # code -1 (missing) picks the trailing ""
    return np.asarray([str(v) for v in s.to_numpy()], dtype=object)


def source_priority(source: pd.Series) -> np.ndarray:
    """Each row's ``SOURCE_PRIORITY`` (fr first; 9 for a source not listed), a categorical by its few categories."""
    if isinstance(source.dtype, pd.CategoricalDtype):
        by_code = np.array([SOURCE_PRIORITY.get(str(c), 9) for c in source.cat.categories] + [9], dtype=np.int64)
        return by_code[source.cat.codes.to_numpy()]  # code -1 (missing) picks the trailing 9
    return np.array([SOURCE_PRIORITY.get(str(v), 9) for v in source.to_numpy()], dtype=np.int64)


def in_values(s: pd.Series, values: list[str]) -> np.ndarray:
    """``s.isin(values)`` as a bool array; for a categorical, by its few categories: all True or all False
    without a pass over the codes' values when every category or none is among ``values`` (a table of one
    source), else one lookup per row (pandas' isin hashes the values and builds int64 temporaries of every row)."""
    if not isinstance(s.dtype, pd.CategoricalDtype):
        return s.isin(values).to_numpy()
    hit = np.asarray(s.cat.categories.isin(values), dtype=bool)
    codes = s.cat.codes.to_numpy()
    if not hit.any():
        return np.zeros(len(codes), dtype=bool)
    if hit.all() and (not len(codes) or codes.min() >= 0):  # -1: a missing value, never among ``values``
        return np.ones(len(codes), dtype=bool)
    return np.append(hit, False)[codes]  # code -1 picks the trailing False


def timed_family(df: pd.DataFrame) -> np.ndarray:
    """The rows of one family of timed sources: PyTorch's records when the table has any, else those of NCCL's
    Inspector plugin. Both time the same collectives under different process-group names (PyTorch's group,
    NCCL's communicator), so mixing the two would count each collective twice."""
    torch = in_values(df["source"], list(TORCH_TIMED))
    return torch if torch.any() else in_values(df["source"], ["inspector"])


def _key(df: pd.DataFrame) -> np.ndarray:
    """One int64 per (rank, pg, seq)."""
    pg = df["pg"]
    codes = (pg.cat.codes if isinstance(pg.dtype, pd.CategoricalDtype) else pd.Series(pd.factorize(pg)[0])).to_numpy(
        np.int64)
    seq = df["seq"].to_numpy(np.int64)
    rank = df["rank"].to_numpy(np.int64) + 1
    span_s = int(seq.max()) + 2 if len(seq) else 1
    span_p = int(codes.max()) + 2 if len(codes) else 1
    return (rank * span_p + codes + 1) * span_s + seq


def best_records(df: pd.DataFrame) -> pd.DataFrame:
    """One record per (rank, pg, seq): for each (rank, pg), the rows of its best source (fr > hook > nccl),
    ``state`` "completed" when any source saw the collective complete, ``duration_ms`` from any timed
    source when the best row has none."""
    if not len(df):
        return df
    if df["source"].nunique() <= 1:
        return df.drop_duplicates(["rank", "pg", "seq"], keep="last")
    pri = source_priority(df["source"])
    best = pd.Series(pri, index=df.index).groupby([df["rank"], df["pg"]], observed=True).transform("min").to_numpy()
    out = df[pri == best].drop_duplicates(["rank", "pg", "seq"], keep="last")
    key_all, key_out = _key(df), _key(out)
    done_keys = key_all[strs(df["state"]) == "completed"]
    done = np.isin(key_out, done_keys)
    not_done = done & (strs(out["state"]) != "completed")
    dur = np.array(out["duration_ms"].to_numpy(dtype=float))  # a copy: filled below
    timed = np.isin(strs(df["source"]), TIMED_SOURCES) & np.isfinite(df["duration_ms"].to_numpy(dtype=float))
    fill = ~np.isfinite(dur) & np.isin(key_out, key_all[timed])
    if not not_done.any() and not fill.any():
        return out
    out = out.copy()
    if not_done.any():
        state = strs(out["state"])
        state[not_done] = "completed"
        out["state"] = state
    if fill.any():
        by_key = pd.Series(df["duration_ms"].to_numpy(dtype=float)[timed], index=key_all[timed])
        by_key = by_key[~by_key.index.duplicated(keep="first")]
        dur[fill] = by_key.reindex(key_out[fill]).to_numpy()
        out["duration_ms"] = dur
    return out


def pg_choices(df: pd.DataFrame) -> list[str]:
    """Process groups by number of rows, largest first (torch pgs before NCCL-only comms)."""
    if not len(df):
        return []
    vc = df["pg"].value_counts()
    counts = {str(k): int(v) for k, v in vc.items() if v > 0}
    return sorted(counts, key=lambda p: (p.startswith("nccl:"), -counts[p], p))


def arrival(df: pd.DataFrame) -> np.ndarray:
    """When each rank entered the collective: kernel start when known, else enqueue time."""
    t = df["t_started"].to_numpy(dtype=float)
    c = df["t_created"].to_numpy(dtype=float)
    return np.where(np.isfinite(t), t, c)


def collective_rows(d: pd.DataFrame) -> np.ndarray:
    """True for the rows of collective groups: not PyTorch's ``<pg>:p2p`` send/recv counters."""
    pg = d["pg"]
    if isinstance(pg.dtype, pd.CategoricalDtype):
        p2p = [c for c in pg.cat.categories if str(c).endswith(":p2p")]
        return ~pg.isin(p2p).to_numpy() if p2p else np.ones(len(d), dtype=bool)
    return ~pg.astype(str).str.endswith(":p2p").to_numpy(dtype=bool)


def group_key(d: pd.DataFrame) -> np.ndarray:
    """One int64 per (pg, seq): a single sortable key instead of a two-column groupby."""
    pg = d["pg"]
    codes = (pg.cat.codes if isinstance(pg.dtype, pd.CategoricalDtype) else pd.Series(pd.factorize(pg)[0])).to_numpy()
    seq = d["seq"].to_numpy(np.int64)
    span = int(seq.max()) + 1 if len(seq) else 1
    key = np.multiply(codes, span, dtype=np.int64)  # the codes widened as they are multiplied: one new column
    key += seq
    return key


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


Groups = tuple[np.ndarray, int]  # ``dense_groups`` of a table: a code per row, and how many codes


def table_groups(run: Any) -> Groups:
    """``dense_groups(group_key(...))`` of the run's collectives table, computed once per analysis
    (``run.memo``): the desync, waiting and hotspots metrics group the same rows by (pg, seq), and at
    millions of rows each grouping is three passes and two fresh int64 columns."""
    memo = run.memo.get("table_groups")
    if memo is None:
        memo = run.memo["table_groups"] = dense_groups(group_key(run.collectives))
    return memo


def groups_where(groups: Groups | None, mask: np.ndarray | None) -> Groups | None:
    """A table's groups for the rows ``mask`` keeps (None: every row): the same codes, some left unused."""
    if groups is None or mask is None or mask.all():
        return groups
    return groups[0][mask], groups[1]


def first_of_each(d: pd.DataFrame, groups: Groups | None = None) -> np.ndarray:
    """Positions of the first row of each collective (pg, seq) in ``d``, by ``np.minimum.at`` over dense
    group codes: no sort of millions of rows. ``groups``: ``d``'s, when known (``table_groups``)."""
    g, ng = groups if groups is not None else dense_groups(group_key(d))
    first = np.full(ng, len(d), dtype=np.int64)
    np.minimum.at(first, g, np.arange(len(d), dtype=np.int64))
    return np.sort(first[first < len(d)])
