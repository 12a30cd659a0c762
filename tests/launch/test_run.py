"""`ncclscope run` end to end: real gloo jobs (3 processes under torchrun) under the real wrapper."""
from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "tests" / "jobs" / "train_job.py"
NPROC = 3
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", f"--nproc_per_node={NPROC}",
            "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.1:0", str(JOB)]
HARD_TIMEOUT = 90


def job_env(**kw: Any) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL", "TORCH_", "JOB_"))}
    env.update({"GLOO_SOCKET_IFNAME": "lo", "MASTER_ADDR": "127.0.0.1", "OMP_NUM_THREADS": "1",
                "JOB_BACKEND": "gloo", "JOB_PG_TIMEOUT": "30", "JOB_STEPS": "12", "NCCLSCOPE_HOOK_HB_S": "0.5"})
    env.update({k: str(v) for k, v in kw.items()})
    return env


def wrapper(run_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "ncclscope", "run", "--run-dir", str(run_dir), *extra, "--"]


def run_wrapped(run_dir: Path, env: dict[str, str], command: list[str] | None = None, *extra: str,
                timeout: float = HARD_TIMEOUT) -> subprocess.CompletedProcess[str]:
    cmd = wrapper(run_dir, *extra) + (command if command is not None else TORCHRUN)
    try:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                              check=False)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"ncclscope run did not finish in {timeout} s: {e.stderr!r}")


def hook_records(run_dir: Path, rank: int) -> list[dict[str, Any]]:
    path = run_dir / f"ncclscope-rank{rank}.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def results(out: Path) -> dict[int, dict[str, Any]]:
    return {int(p.stem.rsplit("rank", 1)[1]): json.loads(p.read_text()) for p in out.glob("result_rank*.json")}


@pytest.mark.slow
def test_healthy_run_then_chaos_run(tmp_path: Path) -> None:
    """One test, two runs (a module fixture would be set up twice under xdist)."""
    run_dir, out = tmp_path / "run", tmp_path / "out"
    out.mkdir()
    proc = run_wrapped(run_dir, job_env(JOB_OUT=out, JOB_FR_DUMP=1, JOB_SUBGROUP=1))
    check_healthy_run(run_dir, proc)
    check_hook_seq_matches_flight_recorder(run_dir, out)
    check_chaos_changes_nothing(tmp_path, out)


def check_healthy_run(run_dir: Path, proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "step 11 loss" in proc.stdout  # the child's stdout reaches the terminal
    assert "step 11 loss" in (run_dir / "stdout.log").read_text()
    assert (run_dir / "exit.txt").read_text().strip() == "exit=0"
    report = json.loads((run_dir / "report.json").read_text())
    assert report["verdict"] == "healthy", report
    env = json.loads((run_dir / "ncclscope-env.json").read_text())
    assert env["set_by_ncclscope"]["NCCL_DEBUG"] == "INFO"
    assert "COLL" not in env["set_by_ncclscope"]["NCCL_DEBUG_SUBSYS"]
    assert env["set_by_ncclscope"]["TORCH_FR_BUFFER_SIZE"] == "20000"
    assert not (run_dir / ".ncclscope-site").exists()


def check_hook_seq_matches_flight_recorder(run_dir: Path, out: Path) -> None:
    for rank in range(NPROC):
        recs = hook_records(run_dir, rank)
        types = {r["type"] for r in recs}
        assert {"start", "coll", "done", "hb", "exit"} <= types, types
        start = next(r for r in recs if r["type"] == "start")
        assert (start["rank"], start["world"], start["backend"]) == (rank, NPROC, "gloo")
        colls = {(r["pg"], r["seq"]): r for r in recs if r["type"] == "coll"}
        dones = {(r["pg"], r["seq"]) for r in recs if r["type"] == "done"}
        assert set(colls) <= dones, set(colls) - dones
        fr = pickle.loads((out / f"fr_end_rank{rank}.pkl").read_bytes())
        fr_ops = {(e["process_group"][0], e["collective_seq_id"]): e["profiling_name"].split(":")[-1].replace("_", "")
                  for e in fr["entries"]}
        assert len(colls) >= 12 * 2 + 3  # loss all_reduce + subgroup all_reduce per step, 3 at start
        fr_last = {pg: max(q for (g, q) in fr_ops if g == pg) for pg, _ in fr_ops}
        for key, rec in colls.items():
            if key[1] > fr_last.get(key[0], 0):
                continue  # the final barrier comes after the dump
            assert key in fr_ops, f"rank {rank}: hook {key} {rec['op']} not in Flight Recorder"
            assert fr_ops[key] == rec["op"], (key, fr_ops[key], rec)
        loss = [r for r in colls.values() if r["pg"] == "0" and r["op"] == "allreduce"]
        assert all(r["where"].startswith("train_job.py:") for r in loss)
        # heartbeats also count DDP's C++ bucket all-reduces (through Flight Recorder)
        last_hb = [r for r in recs if r["type"] == "hb"][-1]
        assert last_hb["pgs"]["0"]["enq"] == fr_last["0"] + 1  # + the final barrier
        assert last_hb["pgs"]["0"]["done"] == last_hb["pgs"]["0"]["enq"]
        assert last_hb["step"] == 12
        assert next(r for r in recs if r["type"] == "exit")["code"] == 0


def check_chaos_changes_nothing(tmp_path: Path, out_ref: Path) -> None:
    out = tmp_path / "out_chaos"
    out.mkdir()
    run_dir = tmp_path / "run_chaos"
    proc = run_wrapped(run_dir, job_env(JOB_OUT=out, JOB_FR_DUMP=1, JOB_SUBGROUP=1, NCCLSCOPE_HOOK_CHAOS="all"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    ref, got = results(out_ref), results(out)
    assert set(got) == set(range(NPROC))
    for rank in ref:
        assert got[rank]["loss"] == ref[rank]["loss"]
        assert got[rank]["checksum"] == ref[rank]["checksum"]
    errors = [r for r in hook_records(run_dir, 0) if r["type"] == "error"]
    assert "Traceback" not in proc.stderr
    assert not errors or all("chaos" in r["message"] for r in errors)


@pytest.mark.slow
def test_crash_exit_code_and_culprit(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = run_wrapped(run_dir, job_env(JOB_CRASH_RANK=2, JOB_CRASH_STEP=3, JOB_CRASH_CODE=3, JOB_DDP=0))
    torchrun_code = int((run_dir / "exit.txt").read_text().strip().split("=")[1])
    assert proc.returncode == torchrun_code != 0
    report = json.loads((run_dir / "report.json").read_text())
    assert report["verdict"] == "crash", report
    assert report["culprit_ranks"] == [2]


@pytest.mark.slow
def test_stuck_rank_stack_dump_request_and_sigterm(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    env = job_env(JOB_HANG_RANK=1, JOB_HANG_STEP=3, JOB_STEPS=50, NCCLSCOPE_HOOK_STALL_S=2, JOB_DDP=0)
    proc = subprocess.Popen(wrapper(run_dir, "--quiet") + TORCHRUN, env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pids: list[int] = []
    try:
        def wait_for(cond: Any, what: str, limit: float = 40.0) -> None:
            deadline = time.time() + limit
            while time.time() < deadline:
                if cond():
                    return
                if proc.poll() is not None:
                    pytest.fail(f"the job ended before {what}: {proc.stderr.read()[-2000:]!r}")  # type: ignore[union-attr]
                time.sleep(0.2)
            pytest.fail(f"timed out waiting for {what}")

        def stall_stack() -> dict[str, Any] | None:
            return next((r for r in hook_records(run_dir, 1) if r["type"] == "stack" and r["reason"] == "stall"), None)

        wait_for(lambda: stall_stack() is not None, "a stall stack record from rank 1")
        rec = stall_stack()
        assert rec is not None
        line = next(i for i, t in enumerate(JOB.read_text().splitlines(), 1) if "JOB_HANG_LINE" in t)
        assert rec["where"] == f"train_job.py:{line} in main (time.sleep)", rec["where"]
        assert rec["frames"][0]["file"] == str(JOB)
        # a dump request: every rank answers with its stack and a Flight Recorder snapshot
        control = run_dir / "ncclscope-control"
        control.mkdir(exist_ok=True)
        (control / "dump-request").write_text(json.dumps({"id": 4242}))

        def answered() -> bool:
            return all((run_dir / f"fr_live_rank{r}.pkl").exists() and any(
                x["type"] == "stack" and x["reason"] == "request" for x in hook_records(run_dir, r))
                for r in range(NPROC))

        wait_for(answered, "answers to the dump request", 20.0)
        fr = pickle.loads((run_dir / "fr_live_rank0.pkl").read_bytes())
        assert fr["entries"]
        waiting = next(x for x in hook_records(run_dir, 0) if x["type"] == "stack" and x["reason"] == "request")
        assert waiting["where"].startswith("train_job.py:")
        pids = [next(r["pid"] for r in hook_records(run_dir, k) if r["type"] == "start") for k in range(NPROC)]
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=600)
        except subprocess.TimeoutExpired:
            pytest.fail("the wrapper did not end after SIGTERM")
        assert code != 0
        assert (run_dir / "exit.txt").exists()
        assert (run_dir / "report.json").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=600)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    deadline = time.time() + 600  # a safety net: the wait is on the event
    alive = pids
    while alive and time.time() < deadline:
        alive = [p for p in pids if _alive(p)]
        time.sleep(0.1)
    assert not alive, f"ranks left behind: {alive}"


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in status


@pytest.mark.slow
def test_exit_codes_of_plain_commands(tmp_path: Path) -> None:
    env = job_env()
    proc = run_wrapped(tmp_path / "a", env, ["sh", "-c", "echo out; printf 'no newline' >&2; exit 7"], "--no-hook",
                       "--quiet")
    assert proc.returncode == 7
    assert (tmp_path / "a" / "exit.txt").read_text() == "exit=7\n"
    assert (tmp_path / "a" / "stderr.log").read_text() == "no newline"
    assert "no newline" in proc.stderr
    proc = run_wrapped(tmp_path / "b", env, ["sh", "-c", "kill -9 $$"], "--no-hook", "--quiet")
    assert proc.returncode == 128 + 9
    proc = run_wrapped(tmp_path / "c", env, ["/nonexistent/cmd"], "--quiet")
    assert proc.returncode == 127 and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_user_sitecustomize_still_runs_and_hook_patches(tmp_path: Path) -> None:
    user_site = tmp_path / "usersite"
    user_site.mkdir()
    marker = tmp_path / "marker.txt"
    (user_site / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    env = job_env(PYTHONPATH=str(user_site), NCCL_DEBUG="WARN")
    code = ("import torch.distributed as d, sitecustomize, os; "
            "print('wrapped', getattr(d.all_reduce, '__ncclscope_wrapped__', False), "
            "getattr(d.distributed_c10d.all_reduce, '__ncclscope_wrapped__', False)); "
            "print('user site', sitecustomize.__file__); print('nccl', os.environ['NCCL_DEBUG'])")
    proc = run_wrapped(tmp_path / "run", env, [sys.executable, "-c", code], "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert marker.read_text() == "ran"
    assert "wrapped True True" in proc.stdout
    assert f"user site {user_site / 'sitecustomize.py'}" in proc.stdout
    assert "nccl WARN" in proc.stdout  # the user's setting wins
    env_rec = json.loads((tmp_path / "run" / "ncclscope-env.json").read_text())
    assert env_rec["set_by_user"]["NCCL_DEBUG"] == "WARN"
