"""Real gloo jobs under `ncclscope run` with injected faults: the post-mortem verdict and culprit.

The full matrix (hangs, desyncs, crashes, stragglers at random ranks and steps, fault-free runs) is
benchmarks/fault_matrix.py; these are the cases no other test covers end to end."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

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


def test_dtype_desync_under_gloo_is_a_desync_live_and_offline(tmp_path):
    """gloo aborts the receiving rank on the float64 all_reduce (``EnforceNotMet ... Is there a distributed
    collective mismatch``), usually before the ranks' records of that call reach disk: a desync, not a
    crash of the aborting rank; the live alert and the post-mortem agree."""
    sc = Scenario("desync", 3, BASE | {"JOB_DESYNC_RANK": "1", "JOB_DESYNC_STEP": "6", "JOB_DESYNC_KIND": "dtype"},
                  1, "desync", "desync dtype")
    o = run_one(sc, tmp_path)
    assert o.verdict == "desync", o
    assert o.alerts == ["desync"], o
    assert o.culprits in ([], [1]), o  # [1] only when the odd rank's record of the call survived
    _judged_alike(next(tmp_path.glob("run-*")))


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, command name) of the processes whose parent is ``pid``."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            comm, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
            if int(rest[1]) == pid:
                out.append((int(d.name), comm))
    return out


def _all_done(run_dir: Path, world: int, n: int) -> bool:
    """Every rank's heartbeat says its ``n`` collectives of process group 0 completed, nothing pending."""
    for r in range(world):
        try:
            lines = (run_dir / f"ncclscope-rank{r}.jsonl").read_text().splitlines()
        except OSError:
            return False
        pgs = [json.loads(x).get("pgs", {}).get("0", {}) for x in lines if '"type":"hb"' in x.replace(" ", "")]
        if not any(c.get("enq") == c.get("done") and (c.get("done") or 0) >= n for c in pgs):
            return False
    return True


def test_exit_hang_is_named(tmp_path):
    """The job's collectives complete, then its ranks never exit; ``timeout`` ends it. The timeout fires once
    every rank is seen done (SIGALRM to ``timeout`` is its timer running out): a fixed 20 s let a loaded machine
    stop the job before it got there."""
    import os
    import signal
    import subprocess
    import time

    root = Path(__file__).resolve().parents[2]
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "ncclscope", "run", "--run-dir", str(run_dir), "--quiet", "--", "timeout", "-s",
           "TERM", "600", sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           str(root / "tests" / "jobs" / "exit_hang.py")]
    p = subprocess.Popen(cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=os.environ | {"JOB_BACKEND": "gloo"})
    try:
        deadline = time.monotonic() + 600  # a safety net: the wait is on the ranks' records
        while p.poll() is None and not _all_done(run_dir, 2, 5) and time.monotonic() < deadline:
            time.sleep(0.2)
        timers = [pid for pid, comm in _children(p.pid) if comm == "timeout"]
        assert p.poll() is None and len(timers) == 1, (p.poll(), _children(p.pid))
        os.kill(timers[0], signal.SIGALRM)
        _, err = p.communicate(timeout=600)  # a safety net
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 124, err[-2000:]
    report = json.loads((run_dir / "report.json").read_text())
    assert report["verdict"] == "hang", report["headline"]
    hang = next(f for f in report["findings"] if f["kind"] == "hang")
    assert hang["data"]["class"] == "exit" and hang["ranks"] == [0, 1]


def _judged_alike(o_dir: Path) -> None:
    """The run folder as watch --once and analyze see it afterwards: one judgement."""
    from judgements import assert_same_judgement, judgements

    analyzed, live = judgements(o_dir)
    assert_same_judgement(analyzed, live)


def _run(sc: Scenario, tmp_path: Path):  # noqa: ANN202 - the matrix's Outcome, plus its run folder
    o = run_one(sc, tmp_path, record=tmp_path / "kept")
    assert o.error is None, o
    return o, tmp_path / "kept" / sc.kind


@pytest.mark.parametrize("launch", ["torchrun", "spawn"])
def test_exception_on_one_rank_is_the_crash_not_its_echoes(tmp_path, launch):
    """One rank raises; the others see gloo's "Connection closed by peer" or are stopped: rank 1 only."""
    sc = Scenario("spawn_exception" if launch == "spawn" else "exception", 3,
                  BASE | {"JOB_CRASH_RANK": "1", "JOB_CRASH_STEP": "4", "JOB_CRASH_MODE": "raise"}, 1, "crash",
                  f"exception under {launch}", launch=launch)
    o, folder = _run(sc, tmp_path)
    assert (o.verdict, o.culprits) == ("crash", [1]), o
    assert o.alerts == ["crash"]
    _judged_alike(folder)


def test_memory_error_on_one_rank_while_the_others_wait(tmp_path):
    sc = Scenario("memory", 3, BASE | {"JOB_CRASH_RANK": "2", "JOB_CRASH_STEP": "5", "JOB_CRASH_MODE": "memory"}, 2,
                  "crash", "memory")
    o, folder = _run(sc, tmp_path)
    assert (o.verdict, o.culprits) == ("crash", [2]), o
    report = json.loads((folder / "report.json").read_text())
    assert "MemoryError" in report["headline"], report["headline"]
    _judged_alike(folder)


def test_exception_inside_a_ddp_communication_hook_is_the_crash(tmp_path):
    """The exception is raised inside torch's machinery (DDP calls the hook from backward): still the
    rank whose hook raised, not the peers whose connections then closed."""
    sc = Scenario("hook_exception", 3, BASE | {"JOB_CRASH_RANK": "0", "JOB_CRASH_STEP": "4", "JOB_CRASH_MODE": "hook"},
                  0, "crash", "hook exception")
    o, folder = _run(sc, tmp_path)
    assert (o.verdict, o.culprits) == ("crash", [0]), o
    report = json.loads((folder / "report.json").read_text())
    assert "communication hook" in report["headline"], report["headline"]
    _judged_alike(folder)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_hang_then_the_user_or_the_scheduler_stops_the_job(tmp_path, sig):
    """After the hang alert, Ctrl-C (SIGINT) or the scheduler's SIGTERM to the whole job: still a hang of
    the rank that stopped, not a crash of the rank that printed KeyboardInterrupt first."""
    sc = Scenario(f"hang_{sig.lower()}", 3, BASE | {"JOB_HANG_RANK": "1", "JOB_HANG_STEP": "4"}, 1, "hang",
                  f"hang then {sig}", stop=sig)
    o, folder = _run(sc, tmp_path)
    assert (o.verdict, o.culprits) == ("hang", [1]), o
    assert o.alerts == ["hang"], o.alerts
    _judged_alike(folder)
    # without the live alert, the run's own records still say so
    (folder / "alerts.jsonl").unlink()
    from judgements import judgements

    analyzed, _ = judgements(folder)
    assert (analyzed["verdict"], analyzed["culprit_ranks"]) == ("hang", [1]), analyzed["headline"]
