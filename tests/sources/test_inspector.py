"""The real recording of NCCL's Inspector plugin (``samples/gpu_inspector``: ``ncclscope run --inspector`` over
``tests/jobs/train_job.py`` with two ranks, rank 1 sleeping 0.1 s before each step from step 10; how it was made
is in ``samples/README.md``) read as its own input format: each process's file sniffed as the Inspector's,
every record a GPU-timed operation, the collectives table timed from it alone, the hotspots and the straggler
found without COLL lines, the hook or Flight Recorder."""
from __future__ import annotations

import pytest
from conftest import SAMPLES
from ncclscope.analysis import analyze_paths
from ncclscope.ingest import Format, parse_file
from ncclscope.metrics.busbw import busbw_table
from ncclscope.model import FindingKind
from ncclscope.sources import records as R

SAMPLE = SAMPLES / "gpu_inspector"
FILES = sorted(SAMPLE.glob("*-pid*.log")) if SAMPLE.is_dir() else []
pytestmark = pytest.mark.skipif(not FILES, reason="samples/gpu_inspector (a GPU recording) is not in this checkout")


def test_each_process_file_is_read_as_the_inspectors():
    pids = set()
    for f in FILES:
        p = parse_file(f, f.name)
        assert p.fmt is Format.INSPECTOR and p.problem is None and p.records
        assert all(isinstance(r, R.InspectorOp) for r in p.records)
        assert all(r.timing is R.InspectorTiming.KERNEL_GPU and r.exec_us > 0 for r in p.records)
        assert all(r.start_us and r.kernel_start_us and r.kernel_stop_us >= r.kernel_start_us for r in p.records)
        assert {r.version for r in p.records} == {"v4.0"}
        pids |= {(r.host, r.pid) for r in p.records}
    assert len(pids) == 2


def test_collectives_are_timed_from_the_inspector_alone():
    a = analyze_paths(FILES, cache=False)
    df = a.run.collectives
    assert len(df) and set(df["source"].astype(str)) == {"inspector"}
    assert sorted(df["rank"].unique()) == [0, 1] and a.run.job.world_size == 2
    assert (df["duration_ms"] > 0).all() and df["t_started"].notna().all()
    ar = df[df["op"].astype(str) == "allreduce"]
    assert len(ar[ar["rank"] == 0]) == len(ar[ar["rank"] == 1]) > 30  # DDP buckets and the loss, every step
    bw = busbw_table(df, 2)
    assert len(bw[bw["op"] == "allreduce"]) and (bw["busbw"] > 0).all()


def test_hotspots_and_the_straggler_are_found_without_coll_lines():
    a = analyze_paths(FILES, cache=False)
    assert any(f.kind is FindingKind.HOTSPOT and "allreduce" in f.message for f in a.findings)
    strag = [f for f in a.findings if f.kind is FindingKind.STRAGGLER]
    assert strag and strag[0].ranks == (1,) and strag[0].evidence and strag[0].evidence[0].file.endswith(".log")
