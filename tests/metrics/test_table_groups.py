"""The (pg, seq) grouping of the collectives table is computed once per analysis (``table_groups``) and
shared by the desync, waiting and hotspots metrics: each gives what it gives when it groups the rows
itself, on generated NCCL runs with a desync, a straggler, send/recv rows and rows a mask leaves out."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from ncclscope.analysis import analyze_paths
from ncclscope.detectors.desync import first_mismatch
from ncclscope.metrics.records import dense_groups, first_of_each, group_key, groups_where, table_groups
from ncclscope.metrics.waiting import late_arrivals
from ncclscope.synth import generate_run


@pytest.fixture(scope="module", params=["desync", "straggler"])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    dest = Path(tmp_path_factory.mktemp(request.param)) / "run"
    generate_run(dest, nranks=8, steps=12, fault=request.param, fault_step=6, seed=5)
    return request.param, analyze_paths([dest], cache=False).run


def test_the_shared_grouping_is_the_one_each_metric_makes(run) -> None:
    fault, run = run
    df = run.collectives
    groups = table_groups(run)
    assert table_groups(run) is groups  # once per analysis
    fresh = dense_groups(group_key(df))
    assert groups[1] == fresh[1] and np.array_equal(groups[0], fresh[0])
    late = late_arrivals(df, groups)
    pd.testing.assert_frame_equal(late, late_arrivals(df))
    assert bool(len(late)) == (fault == "straggler")
    a, b = first_mismatch(df, groups), first_mismatch(df)
    assert (a is None) == (b is None) == (fault != "desync")
    if a is not None and b is not None:
        assert a[:2] == b[:2]
        pd.testing.assert_frame_equal(a[2], b[2])
    keep = np.arange(len(df)) % 3 != 0  # a mask that leaves rows out: the groups follow it
    rows = df[keep]
    assert np.array_equal(first_of_each(rows, groups_where(groups, keep)), first_of_each(rows))
    assert groups_where(groups, np.ones(len(df), dtype=bool)) is groups
