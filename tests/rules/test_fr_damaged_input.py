"""Damaged Flight Recorder entries (values of the wrong type where sizes, groups, names or counters go) are
read as far as they make sense and never stop the analysis."""
from __future__ import annotations

import pickle

from fr_dumps import RankDump, judge, world


def test_values_of_the_wrong_type_are_survived(tmp_path):
    ds = [RankDump(r, world(2)) for r in range(2)]
    for d in ds:
        d.coll("all_reduce", [[8]])
        d.coll("all_reduce", [[8]], state="started")
    bad = ds[1].obj()
    e = bad["entries"][0]
    e["input_sizes"] = [[{"x": 1}], "y"]
    e["output_dtypes"] = [None, 3]
    e["process_group"] = {"not": "a tuple"}
    e["profiling_name"] = "nccl:" + "send 9->x"
    bad["entries"][1]["collective_seq_id"] = "many"
    bad["entries"].append({"record_id": [], "profiling_name": 7, "process_group": None})
    bad["pg_config"] = {"0": {"name": "0", "desc": None, "ranks": "[0, one]"}, "x": "y"}
    (tmp_path / "nccl_trace_rank_1").write_bytes(pickle.dumps(bad))
    ds[0].write(tmp_path, "nccl_trace_rank_")
    j = judge(tmp_path)
    assert j.verdict in ("hang", "desync", "healthy", "unknown")
