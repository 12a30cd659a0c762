"""End to end on real gloo jobs (tests/jobs/train_job.py) traced by the real hook.

The hang runs under ``ncclscope run`` (the whole product path: hook, monitor,
dump request, kill on hang). Desync, crash and the healthy pause run the ranks directly with the
hook's environment and a ``LiveMonitor`` in the test, which is faster on a 2-core machine.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ncclscope.launch import merge_env, prepare_hook_site, tracing_env
from ncclscope.live.monitor import LiveConfig, LiveMonitor

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "tests" / "jobs" / "train_job.py"
HANG_LINE = next(i for i, t in enumerate(JOB.read_text().splitlines(), 1) if "JOB_HANG_LINE" in t)
BASE_ENV = {"JOB_BACKEND": "gloo", "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1", "JOB_PG_TIMEOUT": "120",
            "MASTER_ADDR": "127.0.0.1", "CUDA_VISIBLE_DEVICES": ""}

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Ranks:
    """``world`` processes of the job, each in its own session, sharing stdout.log / stderr.log."""

    def __init__(self, run_dir: Path, world: int, job_env: dict[str, str]) -> None:
        site = prepare_hook_site(run_dir)
        env, _, _ = merge_env({**os.environ, **BASE_ENV, **job_env}, tracing_env(run_dir, False, site))
        env["MASTER_PORT"] = str(free_port())
        self.out = open(run_dir / "stdout.log", "ab")  # noqa: SIM115
        self.err = open(run_dir / "stderr.log", "ab")  # noqa: SIM115
        self.procs = [subprocess.Popen([sys.executable, str(JOB)], cwd=ROOT, stdout=self.out, stderr=self.err,
                                       start_new_session=True,
                                       env={**env, "RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": str(world)})
                      for r in range(world)]

    def wait(self, timeout: float) -> list[int | None]:
        deadline = time.time() + timeout
        for p in self.procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                pass
        return [p.poll() for p in self.procs]

    def kill(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            p.wait(timeout=600)
        self.out.close()
        self.err.close()


@pytest.fixture
def monitored(tmp_path: Path) -> Iterator[Callable[..., tuple[Ranks, LiveMonitor]]]:
    made: list[tuple[Ranks, LiveMonitor]] = []

    def start(world: int, **job_env: str) -> tuple[Ranks, LiveMonitor]:
        mon = LiveMonitor(tmp_path, LiveConfig(console=False))
        mon.start()
        ranks = Ranks(tmp_path, world, {"JOB_STEPS": "20", **job_env})
        made.append((ranks, mon))
        return ranks, mon

    yield start
    for ranks, mon in made:
        ranks.kill()
        mon.stop()


def wait_for(mon: LiveMonitor, kind: str, timeout: float) -> dict[str, Any] | None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        hit = [a for a in mon.alerts if a["kind"] == kind]
        if hit:
            return hit[0]
        time.sleep(0.1)
    return None


def hang_start(run_dir: Path, rank: int) -> float:
    """When the rank began to sleep: its last completed collective (the sleep is next in its loop)."""
    last = 0.0
    for line in (run_dir / f"ncclscope-rank{rank}.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "done":
            last = max(last, rec["t"])
    return last


@pytest.mark.xdist_group("live-e2e-1")
def test_hang_under_ncclscope_run_is_named_with_its_line(tmp_path: Path) -> None:
    """How soon is benchmarks/detection_latency.py's to measure (a loaded machine's wall clock says nothing)."""
    run_dir = tmp_path / "run"
    env = {**os.environ, **BASE_ENV, "JOB_STEPS": "40", "JOB_HANG_RANK": "2", "JOB_HANG_STEP": "6"}
    # three ranks started by a shell (any launcher does; torchrun would add a fourth torch import)
    ranks = " ".join(f"RANK={r} LOCAL_RANK={r} WORLD_SIZE=3 {sys.executable} {JOB} &" for r in range(3))
    env["MASTER_PORT"] = str(free_port())
    cmd = [sys.executable, "-m", "ncclscope", "run", "--run-dir", str(run_dir), "--kill-on-hang", "--quiet", "--",
           "bash", "-c", f"{ranks} wait"]
    p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         start_new_session=True)
    try:
        _, err = p.communicate(timeout=600)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    alerts = [json.loads(x) for x in (run_dir / "alerts.jsonl").read_text().splitlines()]
    assert alerts, err.decode()[-2000:]
    hang = alerts[0]
    assert hang["kind"] == "hang" and hang["culprit_ranks"] == [2] and hang["stuck"]["pg"] == "0"
    detail = next((a for a in alerts if a["kind"] == "hang_detail"), hang)
    located = {r: w for a in (hang, detail) for r, w in a["where"].items()}
    assert located["2"].startswith(f"train_job.py:{HANG_LINE} in main"), located
    assert detail["ts"] > hang_start(run_dir, 2)  # the order of the events, on the one clock of this host
    assert (run_dir / "ncclscope-control" / "dump-request").exists()
    assert p.returncode != 0  # ended by --kill-on-hang, long before the 120 s process-group timeout
    assert not [a for a in alerts if a["kind"] == "crash"]


@pytest.mark.xdist_group("live-e2e-2")
def test_desync_is_alerted_at_once(monitored: Callable[..., tuple[Ranks, LiveMonitor]]) -> None:
    _, mon = monitored(3, JOB_DESYNC_RANK="1", JOB_DESYNC_STEP="4", JOB_DESYNC_KIND="size")
    a = wait_for(mon, "desync", 240)  # a safety net: the wait is on the alert
    assert a is not None, mon.snapshot()
    assert a["culprit_ranks"] == [1] and "numel=7" in a["message"], a["message"]
    assert a["where"]["1"].startswith("train_job.py:")


@pytest.mark.xdist_group("live-e2e-2")
def test_crash_is_alerted_with_the_failing_rank(monitored: Callable[..., tuple[Ranks, LiveMonitor]]) -> None:
    ranks, mon = monitored(2, JOB_CRASH_RANK="1", JOB_CRASH_STEP="4", JOB_CRASH_MODE="raise")
    a = wait_for(mon, "crash", 240)  # a safety net: the wait is on the alert
    assert a is not None, mon.snapshot()
    assert a["culprit_ranks"] == [1] and "simulated failure on rank 1" in a["message"]
    ranks.wait(600)  # the peer fails after it (gloo's closed connection): every record of the job is written
    mon.poll_once()
    assert [x["kind"] for x in mon.alerts] == ["crash"]  # and no second alert for the peer's echo


@pytest.mark.xdist_group("live-e2e-2")
def test_healthy_run_with_a_10s_pause_raises_nothing(monitored: Callable[..., tuple[Ranks, LiveMonitor]]) -> None:
    ranks, mon = monitored(2, JOB_STEPS="8", JOB_PAUSE_S="10", JOB_PAUSE_STEP="4")
    codes = ranks.wait(90)
    mon.poll_once()
    assert codes == [0, 0]
    assert mon.state.exited()
    assert mon.alerts == []
