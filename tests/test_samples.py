"""The bundled real runs (samples/, captured on 2 x H200 with ncclscope run) analyse as samples/EXPECTED.json says."""
from __future__ import annotations

import json

import pytest
from conftest import SAMPLES

from ncclscope.analysis import analyze_paths
from ncclscope.report import to_json

EXPECTED = json.loads((SAMPLES / "EXPECTED.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample(name, tmp_path):
    want = EXPECTED[name]
    got = to_json(analyze_paths([SAMPLES / name], cache=False))
    assert got["verdict"] == want["verdict"], got["headline"]
    if "culprit_ranks" in want:
        assert got["culprit_ranks"] == want["culprit_ranks"]
    if "stuck" in want:
        assert got["stuck"]["pg"] == want["stuck"]["pg"] and got["stuck"]["seq"] == want["stuck"]["seq"]
    if "communicators" in want:
        assert len(got["communicators"]) == want["communicators"]
    if "transport" in want:
        assert all(any(want["transport"] in t for t in c["transports"]) for c in got["communicators"])
    if "finding" in want:
        assert any(f["kind"] == want["finding"] and f["ranks"] == want["ranks"] for f in got["findings"])
    assert got["problems"] == []


def test_hang_sample_names_where_each_rank_is():
    got = to_json(analyze_paths([SAMPLES / "gpu_hang"], cache=False))
    where = {r["rank"]: r["where"] for r in got["ranks"]}
    assert "time.sleep" in where[1] and "train_job.py" in where[1]
    assert "rank 1 is at train_job.py" in got["findings"][0]["message"]


def test_perf_sample_is_read_as_a_sweep():
    run = analyze_paths([SAMPLES / "gpu_perf"], cache=False).run
    ar = [r for r in run.nccl_tests if r["test"] and "all_reduce" in r["test"] and r["size"] == 268435456]
    assert ar and ar[0]["busbw"] > 200
