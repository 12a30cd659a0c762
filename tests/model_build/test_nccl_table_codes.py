"""The collectives table's codes made segment by segment and by lookup tables (``nccl_table``) are those a
row-by-row reference and pandas' factorize and groupby give: ranks, sequence numbers and pg labels of
(process, communicator) pairs, op and file names, datatype names and sizes, and pandas keeps the codes in
the type they were made in."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ncclscope.model_build import nccl_table as NT
from ncclscope.nccl.dtypes import NCCL_DTYPES
from ncclscope.nccl.ops import NCCL_OPS
from ncclscope.sources import records as R
from ncclscope.sources.coll import NcclCollBatch


def _items(rng: np.random.Generator, many_comms: bool) -> list:
    """COLL records as the parse gives them: batches of one or several processes and communicators, single
    records between them, an empty batch; a pair's rows may span several items."""
    hosts = [("h0", 10), ("h0", 11), ("h1", 10)]
    comms = [f"0x{i:x}" for i in range(200 if many_comms else 3)]
    ops = ["AllReduce", "Broadcast", "AllGather", "Send", "Weird"]
    items: list = []
    for k in range(int(rng.integers(1, 30))):
        n = int(rng.integers(0, 40))
        file = f"f{int(rng.integers(0, 4))}.log"
        if rng.random() < 0.3:
            for _ in range(min(n, 5)):
                h, pid = hosts[int(rng.integers(0, len(hosts)))]
                items.append(R.NcclColl(file, k, "", h, pid, pid, None if rng.random() < 0.5 else 1.5, "allreduce",
                                        ops[int(rng.integers(0, len(ops)))], 0, int(rng.integers(0, 99)), 7, 0, 0,
                                        comms[int(rng.integers(0, len(comms)))], 8))
            continue
        procs = [hosts[int(i)] for i in rng.choice(len(hosts), size=int(rng.integers(1, 3)), replace=False)]
        cs = [comms[int(i)] for i in rng.choice(len(comms), size=int(rng.integers(1, 3)), replace=False)]
        os_ = [ops[int(i)] for i in rng.choice(len(ops), size=int(rng.integers(1, 3)), replace=False)]
        items.append(NcclCollBatch(file, k, "", procs[0][0], procs[0][1], procs[0][1], None, procs,
                                   rng.integers(0, len(procs), n).astype(np.int32), cs,
                                   rng.integers(0, len(cs), n).astype(np.int32), os_,
                                   rng.integers(0, len(os_), n).astype(np.int16), rng.integers(0, 99, n),
                                   rng.choice([0, 7, 9], n).astype(np.int16), rng.random(n),
                                   np.arange(k * 100, k * 100 + n, dtype=np.int64)))
    return items


def _rows(items: list) -> pd.DataFrame:
    """The items' rows one by one, in order: the table's rows as a reference."""
    out = []
    for it in items:
        if isinstance(it, NcclCollBatch):
            out += [(it.procs[int(p)], it.comms[int(c)], it.ops[int(o)], it.file, int(ln))
                    for p, c, o, ln in zip(it.proc, it.comm, it.op, it.lines)]
        else:
            out.append(((it.host, it.pid), it.comm, it.nccl_op, it.file, it.line))
    return pd.DataFrame(out, columns=["proc", "comm", "op", "file", "line"])


@pytest.mark.parametrize("many_comms", [False, True])
def test_rank_pg_seq_op_and_file_codes_are_those_of_a_row_by_row_reference(many_comms):
    rng = np.random.default_rng(5 + many_comms)
    for _ in range(60):
        items = _items(rng, many_comms)
        if not items:
            continue
        proc_rank = {("h0", 10): 0, ("h1", 10): 2}  # ("h0", 11) has no rank: -1
        ident = {(("h0", 10), "0x1"): "abc", (("h1", 10), "0x1"): "abc"}
        want = _rows(items)
        names = {"op": [], "file": []}
        for it in items:  # op and file names coded in order of first use by an item (a batch's whole list)
            names["op"] += list(it.ops) if isinstance(it, NcclCollBatch) else [it.nccl_op]
            names["file"].append(it.file)
        got = NT.nccl_coll_table(items, proc_rank, ident)
        assert got is not None and len(got) == len(want)
        assert got["line"].tolist() == want["line"].tolist()
        assert got["rank"].tolist() == [proc_rank.get(p, -1) for p in want["proc"]]
        pg = ["nccl:" + ident.get((p, c), c) for p, c in zip(want["proc"], want["comm"])]
        assert got["pg"].astype(str).tolist() == pg and list(got["pg"].cat.categories) == list(dict.fromkeys(pg))
        keys = want["proc"].astype(str) + "|" + want["comm"]
        assert got["seq"].tolist() == (keys.groupby(keys, sort=False).cumcount() + 1).tolist()
        op_cats = list(dict.fromkeys(NCCL_OPS.get(o, o.lower()) for o in names["op"]))
        assert list(got["op"].cat.categories) == op_cats
        assert got["op"].astype(str).tolist() == [NCCL_OPS.get(o, o.lower()) for o in want["op"]]
        assert list(got["file"].cat.categories) == list(dict.fromkeys(names["file"]))
        assert got["file"].astype(str).tolist() == want["file"].tolist()
        for c in ("pg", "op", "file"):  # codes made in pandas' own type, widened as the names grew
            assert got[c].cat.codes.dtype == NT._code_dtype(len(got[c].cat.categories))


def test_dtype_columns_match_a_sorted_factorize_with_names_and_sizes():
    rng = np.random.default_rng(4)
    known = sorted(NCCL_DTYPES)
    cases = [rng.choice(known, size=50), np.array([7, 7, 7]), np.array([9, 2, 200, 2]),  # 200: no NCCL type
             np.array([-1, 7, 3]), np.array([1 << 17, 7])]  # outside the lookup table's range: factorized
    for dt in cases:
        dt = dt.astype(np.int32)
        codes, names, sizes = NT._dtype_columns(dt)
        f_codes, uniq = pd.factorize(dt, sort=True)
        info = [NCCL_DTYPES.get(int(d), (str(int(d)), 0)) for d in uniq]
        assert names == list(dict.fromkeys(name for name, _ in info))
        assert [names[c] for c in codes] == [info[c][0] for c in f_codes]
        assert sizes.dtype == np.int8 and sizes.tolist() == [info[c][1] for c in f_codes]
        assert codes.dtype == np.int8  # a handful of names: pandas' own code type, no copy into it


def test_codes_are_kept_in_the_type_they_were_made_in():
    for n, t in ((3, np.int8), (126, np.int8), (127, np.int16), (40_000, np.int32)):
        assert NT._code_dtype(n) is t
        cat = pd.Categorical.from_codes(np.zeros(4, dtype=t), [f"c{i}" for i in range(n)])
        assert cat.codes.dtype == t
