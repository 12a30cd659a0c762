"""The hook's dump-request file: read capped, only a regular file, never followed through a link,
never opened blocking. A rank must not read /dev/zero whole or hang on a FIFO in its ticker thread."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ncclscope.hook import tracer

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "tests" / "jobs" / "train_job.py"


def test_read_control_caps_a_large_regular_file(tmp_path: Path) -> None:
    p = tmp_path / "dump-request"
    p.write_text('{"id": 7}' + " " * (10 * tracer.CONTROL_MAX))
    text = tracer.read_control(p)
    assert len(text) == tracer.CONTROL_MAX
    assert json.loads(text)["id"] == 7


@pytest.mark.parametrize("target", ["/dev/zero", "regular"])
def test_read_control_refuses_a_link(tmp_path: Path, target: str) -> None:
    real = tmp_path / "real"
    real.write_text('{"id": 1}')
    link = tmp_path / "dump-request"
    link.symlink_to(real if target == "regular" else target)
    with pytest.raises(OSError):  # refused: /dev/zero is not read at all
        tracer.read_control(link)


def test_read_control_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    """Nobody writes the FIFO: a blocking open would wait for a writer forever. The call runs in a thread; the
    test waits for it to return (the event), the bound only a safety net under pytest's own limit."""
    fifo = tmp_path / "dump-request"
    os.mkfifo(fifo)
    returned = threading.Event()
    got: list[object] = []

    def call() -> None:
        try:
            got.append(tracer.read_control(fifo))
        except OSError as e:
            got.append(e)
        returned.set()

    threading.Thread(target=call, daemon=True).start()
    assert returned.wait(240), "read_control blocked on a FIFO that no one writes"
    assert len(got) == 1 and isinstance(got[0], OSError), got


@pytest.mark.slow
def test_a_fifo_as_control_file_does_not_stop_the_heartbeats(tmp_path: Path) -> None:
    """A real 2-rank gloo job under ``ncclscope run``; mid-run the dump-request path becomes a FIFO
    (nobody writes it): every rank keeps its heartbeats coming and the job ends normally."""
    run_dir, out = tmp_path / "run", tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL", "TORCH_", "JOB_"))}
    env.update({"GLOO_SOCKET_IFNAME": "lo", "MASTER_ADDR": "127.0.0.1", "OMP_NUM_THREADS": "1",
                "JOB_BACKEND": "gloo", "JOB_STEPS": "100", "JOB_STEP_S": "0.1", "JOB_OUT": str(out),
                "NCCLSCOPE_HOOK_HB_S": "0.2"})
    cmd = [sys.executable, "-m", "ncclscope", "run", "--run-dir", str(run_dir), "--quiet", "--",
           sys.executable, "-m", "torch.distributed.run", "--nnodes=1", "--nproc_per_node=2",
           "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.1:0", str(JOB)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600  # a safety net: the wait is on the heartbeats
        hook = [run_dir / f"ncclscope-rank{r}.jsonl" for r in range(2)]
        while not all(p.exists() and '"type":"hb"' in p.read_text() for p in hook):
            assert proc.poll() is None and time.monotonic() < deadline, "the job ended before its first heartbeats"
            time.sleep(0.1)
        control = run_dir / "ncclscope-control"
        control.mkdir(exist_ok=True)
        os.mkfifo(control / "dump-request")
        planted = time.time()
        _, stderr = proc.communicate(timeout=600)  # a safety net for a stuck job
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr[-2000:]
    for p in hook:
        recs = [json.loads(line) for line in p.read_text().splitlines()]
        late_hb = [r for r in recs if r["type"] == "hb" and r["t"] > planted]
        assert len(late_hb) >= 2, f"{p.name}: the heartbeats stopped once the FIFO appeared"  # the loop went round
        assert not [r for r in recs if r["type"] == "stack" and r["reason"] == "request"]
        assert recs[-1]["type"] == "exit" and recs[-1]["code"] == 0
