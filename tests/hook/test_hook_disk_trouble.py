"""The hook meets a full disk, a stalled disk and a deleted run folder: training finishes with the
same results as without the hook, and no rank aborts."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "tests" / "jobs" / "train_job.py"
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("hook-disk")]
ENV = {"JOB_BACKEND": "gloo", "JOB_STEPS": "12", "JOB_STEP_S": "0.05", "JOB_PG_TIMEOUT": "60",
       "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def run_job(run_dir: Path, out: Path, hook: bool, prepare=None, during=None) -> subprocess.CompletedProcess:
    out.mkdir(parents=True, exist_ok=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    if prepare:
        prepare(run_dir)
    cmd = [sys.executable, "-m", "ncclscope", "run", "--run-dir", str(run_dir), "--quiet"]
    cmd += [] if hook else ["--no-hook"]
    cmd += ["--", sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=3", str(JOB)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=os.environ | ENV | {"JOB_OUT": str(out)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    t = threading.Thread(target=during, args=(run_dir,)) if during else None
    if t:
        t.start()
    try:
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        if t:
            t.join()
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


def said(p: subprocess.CompletedProcess) -> str:
    """What a failed job printed: its first lines hold the rank's own error, its last the launcher's summary."""
    err = p.stderr
    return err if len(err) < 6000 else err[:3000] + "\n...\n" + err[-3000:]


def results(out: Path) -> dict[int, tuple[float, float]]:
    got = {}
    for r in range(3):
        d = json.loads((out / f"result_rank{r}.json").read_text())
        got[r] = (d["loss"], d["checksum"])
    return got


def full_and_stalled(run_dir: Path) -> None:
    (run_dir / "ncclscope-rank0.jsonl").symlink_to("/dev/full")  # every write: ENOSPC
    os.mkfifo(run_dir / "ncclscope-rank1.jsonl")  # opening it for writing blocks: a stalled disk


def delete_later(run_dir: Path) -> None:
    time.sleep(6)
    shutil.rmtree(run_dir, ignore_errors=True)


TEARDOWN_ABORT = "terminate called without an active exception"  # torch's gloo teardown, rarely, on a loaded 2-core VM


def test_full_stalled_and_deleted_run_folder_do_not_touch_training(tmp_path):
    base = run_job(tmp_path / "base", tmp_path / "out-base", hook=False)
    if base.returncode != 0 and TEARDOWN_ABORT in base.stderr:  # the control run (no hook) only: once more
        base = run_job(tmp_path / "base2", tmp_path / "out-base", hook=False)
    assert base.returncode == 0, said(base)
    want = results(tmp_path / "out-base")

    bad = run_job(tmp_path / "bad", tmp_path / "out-bad", hook=True, prepare=full_and_stalled)
    assert bad.returncode == 0, said(bad)
    assert results(tmp_path / "out-bad") == want
    assert "Traceback" not in bad.stderr
    rank2 = (tmp_path / "bad" / "ncclscope-rank2.jsonl").read_text()
    assert '"type":"exit"' in rank2  # the healthy rank's records still arrive

    gone = run_job(tmp_path / "gone", tmp_path / "out-gone", hook=True, during=delete_later)
    assert gone.returncode == 0, said(gone)
    assert results(tmp_path / "out-gone") == want
