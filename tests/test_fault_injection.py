"""Real gloo jobs under `ncclscope run` with injected faults: the post-mortem verdict and culprit.

The full matrix (hangs, desyncs, crashes, stragglers at random ranks and steps, fault-free runs) is
benchmarks/fault_matrix.py; these are the cases no other test covers end to end."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from fault_matrix import Scenario, run_one

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("fault-injection")]
BASE = {"JOB_BACKEND": "gloo", "JOB_STEPS": "14", "JOB_PG_TIMEOUT": "60", "JOB_STEP_S": "0.05"}


def test_healthy_pause_is_neither_alerted_nor_judged_a_hang(tmp_path):
    sc = Scenario("pause", 3, BASE | {"JOB_PAUSE_S": "10", "JOB_PAUSE_STEP": "5"}, None, "healthy", "pause")
    o = run_one(sc, tmp_path)
    assert o.error is None and o.exit_code == 0
    assert o.verdict == "healthy" and o.alerts == []


def test_size_desync_majority_names_the_odd_rank(tmp_path):
    sc = Scenario("desync", 4, BASE | {"JOB_DESYNC_RANK": "2", "JOB_DESYNC_STEP": "5", "JOB_DESYNC_KIND": "size"},
                  2, "desync", "desync size")
    o = run_one(sc, tmp_path)
    assert o.verdict == "desync", o
    assert o.culprits == [2]


def test_exit_hang_is_named(tmp_path):
    import os
    import subprocess

    root = Path(__file__).resolve().parent.parent
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "ncclscope", "run", "--run-dir", str(run_dir), "--quiet", "--", "timeout", "-s",
           "TERM", "20", sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           str(root / "tests" / "jobs" / "exit_hang.py")]
    p = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=120, env=os.environ | {"JOB_BACKEND": "gloo"})
    assert p.returncode == 124
    import json

    report = json.loads((run_dir / "report.json").read_text())
    assert report["verdict"] == "hang", report["headline"]
    hang = next(f for f in report["findings"] if f["kind"] == "hang")
    assert hang["data"]["class"] == "exit" and hang["ranks"] == [0, 1]
