"""What `ncclscope run` prints: real gloo jobs (3 ranks under torchrun, tests/jobs/train_job.py) under the
real wrapper. A hang: the alert, the stacks, one line with the next step (or, with --kill-on-hang, the
kill announced before it happens), no deprecation warning caused by what ncclscope sets; a command
that fails to start said as such."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from ncclscope.launch import flight_recorder_env, merge_env, tracing_env

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "tests" / "jobs" / "train_job.py"
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", "--nproc_per_node=3",
            "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.1:0"]
PG_TIMEOUT = 90
NEXT_RE = re.compile(r"ncclscope: the job is still running; PyTorch's watchdog ends it in (\d+) s; "
                     r"press Ctrl-C, or run with --kill-on-hang")


def job_env(**kw: Any) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL", "TORCH_", "JOB_"))}
    env.update({"GLOO_SOCKET_IFNAME": "lo", "MASTER_ADDR": "127.0.0.1", "OMP_NUM_THREADS": "1",
                "JOB_BACKEND": "gloo", "JOB_PG_TIMEOUT": str(PG_TIMEOUT), "JOB_STEPS": "40",
                "COLUMNS": "240"})  # one console line is one line of stderr
    env.update({k: str(v) for k, v in kw.items()})
    return env


def start(run_dir: Path, *extra: str, command: list[str] | None = None, **env: Any) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "ncclscope", "run", "--run-dir", str(run_dir), *extra, "--",
           *(command if command is not None else [*TORCHRUN, str(JOB)])]
    return subprocess.Popen(cmd, cwd=ROOT, env=job_env(**env), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def read_until(p: subprocess.Popen[str], pattern: re.Pattern[str], timeout: float) -> tuple[list[str], re.Match[str] | None]:
    """stderr lines up to the first matching one (or the end, or the timeout)."""
    assert p.stderr is not None
    lines: list[str] = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = p.stderr.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        m = pattern.search(line)
        if m:
            return lines, m
    return lines, None


def finish(p: subprocess.Popen[str], timeout: float) -> list[str]:
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        _, err = p.communicate()
        pytest.fail("ncclscope run did not end")
    return err.splitlines()


def alerts(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run_dir / "alerts.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_hang_alert_stacks_next_step_then_ctrl_c(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    p = start(run_dir, JOB_HANG_RANK=2, JOB_HANG_STEP=6)
    try:
        before, m = read_until(p, NEXT_RE, 120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
    after = finish(p, 60)
    text = "\n".join(before + after)
    assert m is not None, text[-3000:]
    # the job's own 90 s timeout from the dumps (not gloo's 30 min default), less the time already waited
    assert 30 < int(m.group(1)) <= PG_TIMEOUT, m.group(0)
    assert sum(1 for line in before + after if NEXT_RE.search(line)) == 1
    detail = next(a for a in alerts(run_dir) if a["kind"] == "hang_detail")
    assert detail["stuck"]["op"] == "allreduce"  # DDP's bucket all-reduce, issued from C++
    box = text[text.index("ncclscope hang_detail"):text.index("the job is still running")]
    assert "_tensor.py:" in box and " in backward" in box and "time.sleep" in box  # the frames, per rank
    assert "allreduce #" in box
    assert "is deprecated" not in text  # nothing ncclscope sets warns
    env = json.loads((run_dir / "ncclscope-env.json").read_text())["set_by_ncclscope"]
    assert "TORCH_FR_BUFFER_SIZE" in env and "TORCH_NCCL_TRACE_BUFFER_SIZE" not in env


@pytest.mark.slow
def test_kill_on_hang_is_announced_before_the_kill(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    p = start(run_dir, "--kill-on-hang", JOB_HANG_RANK=1, JOB_HANG_STEP=5)
    lines = finish(p, 150)
    text = "\n".join(lines)
    pids = {}
    for r in range(3):
        first = (run_dir / f"ncclscope-rank{r}.jsonl").read_text().splitlines()[0]
        pids[r] = json.loads(first)["pid"]
    notice = next((i for i, line in enumerate(lines) if "--kill-on-hang: ending the job" in line), None)
    assert notice is not None, text[-3000:]
    said = lines[notice]
    assert "because rank 1 never joined allreduce #" in said, said
    assert all(f"rank {r} (pid {pid})" in said for r, pid in pids.items()), said
    assert "SIGTERM to the command's process group" in said and "SIGKILL 10 s later" in said
    ended = [i for i, line in enumerate(lines) if "death signal" in line or "closing signal SIGTERM" in line]
    assert ended and notice < min(ended)  # said before torchrun reports the signal
    assert notice > next(i for i, line in enumerate(lines) if "ncclscope hang_detail" in line)
    assert p.returncode != 0


def test_a_command_not_found_is_said_as_such(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    p = start(run_dir, command=["ncclscope-no-such-command"])
    lines = finish(p, 60)
    assert p.returncode == 127
    text = "\n".join(lines)
    assert "the command failed to start: ncclscope-no-such-command: command not found" in text
    assert "VERDICT: CRASH  the command failed to start: the command was not found (exit 127)" in text
    report = json.loads((run_dir / "report.json").read_text())
    assert report["verdict"] == "crash" and report["findings"][0]["kind"] == "launch"


@pytest.mark.slow
def test_a_python_without_torch_is_said_as_a_failed_start(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    # torchrun starts each rank as `python -I -S train_job.py`: no site-packages, so no torch
    cmd = [*TORCHRUN, "--no-python", sys.executable, "-I", "-S", str(JOB)]
    p = start(run_dir, command=cmd)
    lines = finish(p, 90)
    assert p.returncode != 0
    text = "\n".join(lines)
    assert "ModuleNotFoundError: No module named 'torch'" in text
    report = json.loads((run_dir / "report.json").read_text())
    assert report["verdict"] == "crash", report["headline"]
    assert report["headline"].startswith("the command failed to start: ModuleNotFoundError: No module named 'torch'")
    assert "VERDICT: CRASH  the command failed to start" in text
    assert [f["kind"] for f in report["findings"]][:1] == ["launch"]
    crash = next(a for a in alerts(run_dir) if a["kind"] == "crash")  # the live alert says it too
    assert crash["message"] == "the command failed to start: ModuleNotFoundError: No module named 'torch'"


def test_flight_recorder_variables_follow_the_torch_version(tmp_path: Path) -> None:
    new = flight_recorder_env(tmp_path, (2, 13))
    assert set(new) == {"TORCH_FR_BUFFER_SIZE", "TORCH_FR_DUMP_TEMP_FILE"}
    assert set(flight_recorder_env(tmp_path, (2, 7))) == {"TORCH_NCCL_TRACE_BUFFER_SIZE",
                                                          "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"}
    assert len(flight_recorder_env(tmp_path, None)) == 4  # the job's torch unknown: both names
    assert "TORCH_NCCL_TRACE_BUFFER_SIZE" not in tracing_env(tmp_path, False, None, torch=(2, 9))
    # the user's own name for the ring size wins, under either name
    env, applied, kept = merge_env({"TORCH_NCCL_TRACE_BUFFER_SIZE": "500"}, tracing_env(tmp_path, False, None, (2, 13)))
    assert env["TORCH_NCCL_TRACE_BUFFER_SIZE"] == "500" and "TORCH_FR_BUFFER_SIZE" not in env
    assert kept["TORCH_NCCL_TRACE_BUFFER_SIZE"] == "500" and "TORCH_FR_BUFFER_SIZE" not in applied


def test_a_failed_start_is_said_even_with_quiet(tmp_path: Path) -> None:
    p = start(tmp_path / "run", "--quiet", command=["ncclscope-no-such-command"])
    text = "\n".join(finish(p, 60))
    assert p.returncode == 127
    assert "ncclscope: the command failed to start: ncclscope-no-such-command: command not found" in text
