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


def _code_dtype(ncategories: int) -> type[np.signedinteger]:
    """The integer type pandas keeps the codes of that many categories in (``coerce_indexer_dtype``):
    codes made in it are taken as they are, not copied into it."""
    for t in (np.int8, np.int16, np.int32):
        if ncategories < np.iinfo(t).max:
            return t
    return np.int64


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
    """The COLL rows of every item as the table's own columns, filled segment by segment (a batch, or the
    single records between two batches): rank, pg code and sequence number per (process, communicator)
    pair, op and file codes, in the code type pandas keeps them in. A segment of one pair (one file's batch,
    the usual case) fills constants and one arange; no pass over the whole table joins or recodes them."""

    def __init__(self, n: int, proc_rank: dict[ProcKey, int], ident: dict[tuple[ProcKey, str], str]) -> None:
        self.proc_rank, self.ident = proc_rank, ident
        # per (process, comm pointer) pair, in order of first use by a row: its pg label's code, rank, rows so far
        self.pairs: dict[tuple[ProcKey, str], int] = {}
        self.pair_label: list[int] = []
        self.pair_rank: list[int] = []
        self.pair_taken: list[int] = []
        self.labels: dict[str, int] = {}
        self.ops: dict[str, int] = {}  # op as printed -> code of its table name
        self.op_cat: dict[str, int] = {}
        self.files: dict[str, int] = {}
        self.col: dict[str, np.ndarray] = {
            "rank": np.empty(n, np.int64), "pg": np.empty(n, np.int8), "seq": np.empty(n, np.int64),
            "op": np.empty(n, np.int8), "count": np.empty(n, np.int64), "dt": np.empty(n, np.int32),
            "ts": np.empty(n, np.float64), "line": np.empty(n, np.int64), "file": np.empty(n, np.int8)}
        self.pos = 0

    def singles(self, single: list[R.NcclColl]) -> None:
        if not single:
            return
        col, at = self.col, slice(self.pos, self.pos + len(single))
        procs: dict[ProcKey, int] = {}
        comms: dict[str, int] = {}
        proc = np.array([_code(procs, (r.host, r.pid)) for r in single], dtype=np.int64)
        comm = np.array([_code(comms, r.comm) for r in single], dtype=np.int64)
        self._pairs(at, list(procs), proc, list(comms), comm)
        ops = [self._op(r.nccl_op) for r in single]
        files = [_code(self.files, r.file) for r in single]
        self._fit()  # the code types for every name so far, before the codes are written
        col["op"][at] = ops
        col["file"][at] = files
        col["count"][at] = [r.count for r in single]
        col["dt"][at] = [r.datatype for r in single]
        col["ts"][at] = [np.nan if r.ts is None else r.ts for r in single]
        col["line"][at] = [r.line for r in single]
        self.pos += len(single)
        single.clear()

    def batch(self, it: NcclCollBatch) -> None:
        col, at = self.col, slice(self.pos, self.pos + len(it))
        op_codes = [self._op(o) for o in it.ops]
        file_code = _code(self.files, it.file)
        self._fit()
        if not len(it):  # no rows: its names are coded (as every batch's are), no pair is used
            return
        self._pairs(at, it.procs, it.proc, it.comms, it.comm)
        col["op"][at] = op_codes[0] if len(op_codes) == 1 else np.array(op_codes, col["op"].dtype)[it.op]
        col["count"][at] = it.count
        col["dt"][at] = it.datatype
        col["ts"][at] = it.tss
        col["line"][at] = it.lines
        col["file"][at] = file_code
        self.pos += len(it)

    def _op(self, printed: str) -> int:
        code = self.ops.get(printed)
        if code is None:
            code = self.ops[printed] = _code(self.op_cat, NCCL_OPS.get(printed, printed.lower()))
        return code

    def _pair(self, key: tuple[ProcKey, str]) -> int:
        i = self.pairs.get(key)
        if i is None:
            i = self.pairs[key] = len(self.pairs)
            self.pair_label.append(_code(self.labels, "nccl:" + self.ident.get(key, key[1])))
            self.pair_rank.append(self.proc_rank.get(key[0], -1))
            self.pair_taken.append(0)
        return i

    def _pairs(self, at: slice, procs: list[ProcKey], proc: np.ndarray, comms: list[str], comm: np.ndarray) -> None:
        """rank, pg and seq of a segment's rows (codes ``proc`` into ``procs``, ``comm`` into ``comms``): seq
        counts each pair's rows over all segments in order."""
        col, n = self.col, at.stop - at.start
        if len(procs) == 1 and len(comms) == 1:
            i = self._pair((procs[0], comms[0]))
            self._fit()
            col["rank"][at], col["pg"][at] = self.pair_rank[i], self.pair_label[i]
            col["seq"][at] = np.arange(self.pair_taken[i] + 1, self.pair_taken[i] + n + 1, dtype=np.int64)
            self.pair_taken[i] += n
            return
        local, uniq = pd.factorize(proc.astype(np.int64) * len(comms) + comm, sort=False)  # first use, row order
        pairs = [self._pair((procs[int(k) // len(comms)], comms[int(k) % len(comms)])) for k in uniq]
        self._fit()
        col["rank"][at] = np.array([self.pair_rank[i] for i in pairs], dtype=np.int64)[local]
        col["pg"][at] = np.array([self.pair_label[i] for i in pairs], dtype=col["pg"].dtype)[local]
        before = np.array([self.pair_taken[i] for i in pairs], dtype=np.int64)
        col["seq"][at] = pd.Series(local).groupby(local, sort=False).cumcount().to_numpy() + 1 + before[local]
        for i, m in zip(pairs, np.bincount(local, minlength=len(pairs)).tolist()):
            self.pair_taken[i] += m

    def _fit(self) -> None:
        """Widen a code column whose names have outgrown its code type (as pandas would keep them)."""
        for name, names in (("pg", self.labels), ("op", self.op_cat), ("file", self.files)):
            t = _code_dtype(len(names))
            if self.col[name].dtype != t:
                self.col[name] = self.col[name].astype(t)


def _code(d: dict, k: Any) -> int:
    return d.setdefault(k, len(d))


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
    j = _Joined(sum(len(it) if isinstance(it, NcclCollBatch) else 1 for it in items), proc_rank, ident)
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
    return _frame(j)


def _frame(j: _Joined) -> pd.DataFrame:
    col = j.col
    n = len(col["line"])
    dt_codes, dt_names, sizes = _dtype_columns(col["dt"])  # itemsizes: 1 byte a row, not 8
    nan = np.full(n, np.nan, dtype=np.float32)  # NCCL lines carry no start/completion/duration: 4 bytes a row
    df = pd.DataFrame({
        "rank": col["rank"],
        "pg": pd.Categorical.from_codes(col["pg"], list(j.labels)),
        "seq": col["seq"],
        "op": pd.Categorical.from_codes(col["op"], list(j.op_cat)),
        "count": col["count"],
        "dtype": pd.Categorical.from_codes(dt_codes, dt_names),
        "bytes": np.multiply(col["count"], sizes, dtype=np.int64),
        "state": pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), ["enqueued"]),
        "t_created": col["ts"],
        "t_started": nan,
        "t_completed": nan.copy(),
        "duration_ms": nan.copy(),
        "source": pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), ["nccl"]),
        "file": pd.Categorical.from_codes(col["file"], list(j.files)),
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
