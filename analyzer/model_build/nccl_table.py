"""NCCL COLL lines (single records and column batches) -> collectives rows, vectorised.

seq is a per-(process, communicator pointer) counter over all files in order, since opCount may
stay 0 for a whole NVLink run.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from ..model import COLLECTIVE_COLUMNS
from ..nccl.dtypes import NCCL_DTYPES
from ..nccl.ops import NCCL_OPS
from ..sources import records as R
from ..sources.coll import NcclCollBatch
from .values import ProcKey


def _run_heads(values: np.ndarray) -> np.ndarray:
    """Where each run of equal neighbours starts."""
    n = len(values)
    change = np.empty(n, dtype=bool)
    if n:
        change[0] = True
        np.not_equal(values[1:], values[:-1], out=change[1:])
    return np.flatnonzero(change)


def _code_dtype(ncategories: int) -> type[np.signedinteger]:
    """The integer type pandas keeps the codes of that many categories in (``coerce_indexer_dtype``):
    codes made in it are taken as they are, not copied into it."""
    for t in (np.int8, np.int16, np.int32):
        if ncategories < np.iinfo(t).max:
            return t
    return np.int64


def _runs_cumcount(run_codes: np.ndarray, ngroups: int, heads: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """1, 2, 3, ... within each code, in row order, for rows given as runs of equal codes (``run_codes[i]``
    from row ``heads[i]`` for ``lengths[i]`` rows). Each process's rows of a communicator are nearly
    always one contiguous run (one file per process): then it is arange minus the run's start, O(n);
    otherwise pandas' groupby over the rows' codes."""
    n = int(lengths.sum())
    if not n:
        return np.zeros(0, dtype=np.int64)
    if len(heads) == ngroups:  # every group is one run
        if len(heads) * 64 > n:  # short runs: vectorised (two temporaries of n)
            return np.arange(1, n + 1, dtype=np.int64) - np.repeat(heads, lengths)
        base = np.arange(1, int(lengths.max()) + 1, dtype=np.int64)  # long runs: each a slice of one arange
        out = np.empty(n, dtype=np.int64)
        for h, m in zip(heads.tolist(), lengths.tolist()):
            out[h:h + m] = base[:m]
        return out
    codes = np.repeat(run_codes, lengths)
    return pd.Series(codes).groupby(codes, sort=False).cumcount().to_numpy() + 1


def _dtype_columns(dt: np.ndarray) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(name codes, names, itemsizes) of NCCL datatype numbers: names in the order of the numbers'
    sorted values (as ``pd.factorize(sort=True)`` gives them), codes in pandas' own code type, itemsizes
    in 1 byte. Small non-negative numbers (all NCCL has) are looked up in one table each: a bincount
    and two gathers, no hash."""
    if len(dt) and dt.min() >= 0 and dt.max() < 1 << 16:
        present = np.flatnonzero(np.bincount(dt))
        codes, uniq = None, present
    else:
        codes, uniq = pd.factorize(dt, sort=True)
    info = [NCCL_DTYPES.get(int(d), (str(int(d)), 0)) for d in uniq]
    cat = {name: i for i, name in enumerate(dict.fromkeys(name for name, _ in info))}
    name_of = np.array([cat[name] for name, _ in info], dtype=_code_dtype(len(cat)))
    size_of = np.array([size for _, size in info], dtype=np.int8)
    if codes is None:  # tables indexed by the number itself
        names = np.zeros(int(present[-1]) + 1, dtype=name_of.dtype)
        sizes = np.zeros(int(present[-1]) + 1, dtype=np.int8)
        names[present], sizes[present] = name_of, size_of
        return names[dt], list(cat), sizes[dt]
    return name_of[codes], list(cat), size_of[codes]


class _Joined:
    """The COLL rows of every item as columns, names coded in order of first use."""

    def __init__(self, n: int) -> None:
        self.procs: dict[ProcKey, int] = {}
        self.comms: dict[str, int] = {}
        self.ops: dict[str, int] = {}
        self.files: dict[str, int] = {}
        self.col: dict[str, np.ndarray] = {
            "proc": np.empty(n, np.int32), "comm": np.empty(n, np.int32), "op": np.empty(n, np.int32),
            "count": np.empty(n, np.int64), "dt": np.empty(n, np.int32), "ts": np.empty(n, np.float64),
            "line": np.empty(n, np.int64), "file": np.empty(n, np.int32)}
        self.pos = 0

    def singles(self, single: list[R.NcclColl]) -> None:
        if not single:
            return
        col, at = self.col, slice(self.pos, self.pos + len(single))
        col["proc"][at] = [_code(self.procs, (r.host, r.pid)) for r in single]
        col["comm"][at] = [_code(self.comms, r.comm) for r in single]
        col["op"][at] = [_code(self.ops, r.nccl_op) for r in single]
        col["count"][at] = [r.count for r in single]
        col["dt"][at] = [r.datatype for r in single]
        col["ts"][at] = [np.nan if r.ts is None else r.ts for r in single]
        col["line"][at] = [r.line for r in single]
        col["file"][at] = [_code(self.files, r.file) for r in single]
        self.pos += len(single)
        single.clear()

    def batch(self, it: NcclCollBatch) -> None:
        col, at = self.col, slice(self.pos, self.pos + len(it))
        col["proc"][at] = _recoded(self.procs, it.procs, it.proc)
        col["comm"][at] = _recoded(self.comms, it.comms, it.comm)
        col["op"][at] = _recoded(self.ops, it.ops, it.op)
        col["count"][at] = it.count
        col["dt"][at] = it.datatype
        col["ts"][at] = it.tss
        col["line"][at] = it.lines
        col["file"][at] = _code(self.files, it.file)
        self.pos += len(it)


def _code(d: dict, k: Any) -> int:
    return d.setdefault(k, len(d))


def _recoded(index: dict, names: list, codes: np.ndarray) -> np.ndarray | int:
    """A batch's codes into ``names`` as codes into the table's ``index`` (names added in order of first
    use); one name, the usual case (one process, one communicator, one op a file), as that one code."""
    if len(names) == 1:
        return _code(index, names[0])
    return np.array([_code(index, x) for x in names], dtype=np.int32)[codes]


def nccl_coll_table(items: list[R.NcclColl | NcclCollBatch], proc_rank: dict[ProcKey, int],
                    ident: dict[tuple[ProcKey, str], str], consume: bool = False,
                    release: bool = False) -> pd.DataFrame | None:
    """COLL lines (single records and column batches, in file order) -> collectives rows, vectorised.

    seq is a per-(process, communicator pointer) counter over all files in order; pg is
    ``nccl:<commId>`` when the communicator was joined, else the pointer. The columns are filled
    in place, batch by batch. ``consume``: empty ``items`` once its columns are joined.
    ``release``: also drop each batch's arrays once copied (``NcclCollBatch.release``), so that the
    parsed batches and the table never coexist whole (330 MB less at the peak at 9 M rows); for
    callers that own the parsed records and use them no further. The frame is built from its
    columns without a copy into consolidated blocks.
    """
    if not items:
        return None
    j = _Joined(sum(len(it) if isinstance(it, NcclCollBatch) else 1 for it in items))
    single: list[R.NcclColl] = []
    for it in items:
        if isinstance(it, NcclCollBatch):
            j.singles(single)
            j.batch(it)
            if release:
                it.release()
        else:
            single.append(it)
    j.singles(single)
    if consume:
        items.clear()
    return _frame(j, proc_rank, ident)


def _frame(j: _Joined, proc_rank: dict[ProcKey, int], ident: dict[tuple[ProcKey, str], str]) -> pd.DataFrame:
    col, procs, comms, ops, files, code = j.col, j.procs, j.comms, j.ops, j.files, _code
    n = len(col["line"])
    proc_list = list(procs)
    comm_list = list(comms)
    # (process, comm) pairs come in long runs: each run's first key is hashed, its code stands for the run
    key = col["proc"].astype(np.int64) * len(comm_list) + col["comm"]
    heads = _run_heads(key)
    lengths = np.diff(heads, append=n)
    run_codes, pair_uniq = pd.factorize(key[heads], sort=False)  # the codes pd.factorize(key) gives, run by run
    del key
    seq = _runs_cumcount(run_codes, len(pair_uniq), heads, lengths)
    # pg label per (process, comm) pair; many pairs share a label (one communicator, many ranks)
    labels: dict[str, int] = {}
    pair_label = [code(labels, "nccl:" + ident.get((proc_list[int(k) // len(comm_list)], comm_list[int(k) % len(comm_list)]),
                                                   comm_list[int(k) % len(comm_list)])) for k in pair_uniq]
    pg_codes = np.repeat(np.array(pair_label, dtype=_code_dtype(len(labels)))[run_codes], lengths)
    rank_of = np.array([proc_rank.get(p, -1) for p in proc_list], dtype=np.int64)
    op_names = [NCCL_OPS.get(o, o.lower()) for o in ops]
    op_cat = {name: i for i, name in enumerate(dict.fromkeys(op_names))}
    op_map = np.array([op_cat[name] for name in op_names], dtype=_code_dtype(len(op_cat)))
    dt_codes, dt_names, sizes = _dtype_columns(col["dt"])  # itemsizes: 1 byte a row, not 8
    nan = np.full(n, np.nan, dtype=np.float32)  # NCCL lines carry no start/completion/duration: 4 bytes a row
    df = pd.DataFrame({
        "rank": rank_of[col.pop("proc")],
        "pg": pd.Categorical.from_codes(pg_codes, list(labels)),
        "seq": seq.astype(np.int64, copy=False),
        "op": pd.Categorical.from_codes(op_map[col["op"]], list(op_cat)),
        "count": col["count"],
        "dtype": pd.Categorical.from_codes(dt_codes, dt_names),
        "bytes": np.multiply(col["count"], sizes, dtype=np.int64),
        "state": pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), ["enqueued"]),
        "t_created": col["ts"],
        "t_started": nan,
        "t_completed": nan.copy(),
        "duration_ms": nan.copy(),
        "source": pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), ["nccl"]),
        "file": pd.Categorical.from_codes(col["file"].astype(_code_dtype(len(files)), copy=False), list(files)),
        "line": col["line"],
        "where": pd.Categorical.from_codes(np.full(n, -1, dtype=np.int8), []),  # unknown for NCCL lines
    }, columns=COLLECTIVE_COLUMNS, copy=False)
    return df


def concat_tables(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Row-wise concat that keeps categorical columns categorical (their categories united)."""
    out: dict[str, Any] = {}
    for c in COLLECTIVE_COLUMNS:
        x, y = a[c], b[c]
        if isinstance(x.dtype, pd.CategoricalDtype) or isinstance(y.dtype, pd.CategoricalDtype):
            cx, cy = (v.astype("category") for v in (x, y))
            cx, cy = (v.cat.set_categories(v.cat.categories.astype(object)) for v in (cx, cy))
            out[c] = pd.Series(union_categoricals([cx, cy], ignore_order=True))
        else:
            out[c] = pd.concat([x, y], ignore_index=True)
    return pd.DataFrame(out, columns=COLLECTIVE_COLUMNS)
