"""One story everywhere: each run below, read through every output (text, JSON, report.json, watch --once, the
live alerts, the data behind the dashboard's pages, Perfetto, Prometheus; ``story.told``), says one verdict with
the same culprits, stuck collective, rank states and progress (``story.assert_one_story``), and that story is the
right one. The jobs are real gloo jobs under the real wrapper; the desync and crash runs are the bundled H200
samples."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CORPUS, NO_CORPUS, ROOT, SAMPLES
from judgements import judgements
from story import assert_one_story, told

JOB = ROOT / "tests" / "jobs"
GLOO = {"JOB_BACKEND": "gloo", "JOB_STEP_S": "0.05", "OMP_NUM_THREADS": "1"}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(run_dir: Path, env: dict[str, str], *command: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "ncclscope", "run", "--run-dir", str(run_dir), "--quiet", "--", *command]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
                          env=os.environ | GLOO | env | {"PYTHON": sys.executable})


@pytest.mark.slow
@pytest.mark.xdist_group("one-story")
def test_gloo_hang_ended_by_the_watchdog(tmp_path: Path) -> None:
    """Rank 2 of 3 sleeps at step 5; no --kill-on-hang, so PyTorch's watchdog ends the job after the process
    group's timeout: a hang, culprit 2, in every output; a watch that followed the run from before its start
    ends with it (torchrun SIGTERMs ranks, which write no exit record) and tells the same story."""
    run_dir = tmp_path / "run"
    watch = subprocess.Popen([sys.executable, "-m", "ncclscope", "watch", str(run_dir)], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env=os.environ | {"COLUMNS": "400"})
    try:
        assert watch.stdout is not None
        assert watch.stdout.readline().startswith("waiting for ")  # it is up before the run starts
        p = _run(run_dir, {"JOB_STEPS": "12", "JOB_PG_TIMEOUT": "15", "JOB_HANG_RANK": "2", "JOB_HANG_STEP": "5"},
                 sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=3",
                 str(JOB / "train_job.py"))
        assert p.returncode != 0, p.stdout + p.stderr
        out, _err = watch.communicate(timeout=600)  # ends by itself: the job has ended
    finally:
        if watch.poll() is None:
            watch.kill()
    assert watch.returncode == 0
    assert "the job has ended" in out and "VERDICT: HANG" in out, out
    stories = told(run_dir, tmp_path / "scratch")
    ref = assert_one_story(stories)
    assert (ref.verdict, ref.culprits) == ("hang", [2])
    assert ref.stuck is not None and ref.states == {0: "stuck_in_collective", 1: "stuck_in_collective",
                                                    2: "stuck_outside_nccl"}
    assert ref.completed is not None and all(n < ref.stuck[1] for n in ref.completed.values())
    assert "live alerts" in stories  # the run's own monitor alerted it, with the same culprit
    text = stories["analyze (text)"].extra["text"]
    assert "nothing failed before" not in text  # the ranks' timeouts are the hang's echoes, said as such
    waits = stories["perfetto"].extra["stuck_us"]
    assert waits and min(waits.values()) > 5e6, waits  # the waiting ranks' slices last their wait (> 5 s)


@pytest.mark.slow
@pytest.mark.xdist_group("one-story")
def test_a_sigkilled_rank_under_a_shell_launcher_is_the_crash(tmp_path: Path) -> None:
    """Three ranks started by a plain shell script (no launcher reports exit codes); rank 1 is SIGKILLed at step
    5 (as the OOM killer would): it wrote no exit record, its peers saw it go. A crash, culprit 1, everywhere;
    never a straggler."""
    run_dir = tmp_path / "run"
    p = _run(run_dir, {"JOB_STEPS": "12", "JOB_PG_TIMEOUT": "30", "JOB_CRASH_RANK": "1", "JOB_CRASH_STEP": "5",
                       "JOB_CRASH_MODE": "sigkill", "JOB_WORLD": "3"},
             "bash", str(JOB / "shell_launch.sh"), str(_port()))
    assert p.returncode != 0
    ref = assert_one_story(told(run_dir, tmp_path / "scratch"))
    assert (ref.verdict, ref.culprits) == ("crash", [1]), p.stdout[-2000:]
    assert ref.states is not None and ref.states[1] == "died"


def _sample_story(name: str, tmp_path: Path):  # noqa: ANN202 - story.Told
    stories = told(SAMPLES / name, tmp_path, report_json=False)  # its report.json: the recording release's
    return stories, assert_one_story(stories)


def test_the_desync_sample_says_one_thing(tmp_path: Path) -> None:
    """The odd rank called another collective (it did not 'never join'); the hang the mismatch left behind is
    the desync's echo, not a second critical story."""
    stories, ref = _sample_story("gpu_desync", tmp_path)
    assert (ref.verdict, ref.culprits) == ("desync", [1])
    assert ref.states is not None and ref.states[1] == "mismatched"
    findings = ref.extra["findings"]
    assert [k for k, sev, _ in findings if sev == "critical"] == ["desync"], findings
    assert findings[0][0] == "desync"
    assert all(echo == "desync" for k, _, echo in findings if k in ("hang", "crash")), findings


def test_the_crash_sample_says_one_thing(tmp_path: Path) -> None:
    """The crash comes first, the rank the launcher stopped is stopped (not died), and the Hang page shows the
    progress the Timeline draws (not one early heartbeat's 0/0)."""
    stories, ref = _sample_story("gpu_crash", tmp_path)
    assert (ref.verdict, ref.culprits) == ("crash", [1])
    assert ref.states == {0: "stopped", 1: "died"}
    assert ref.extra["findings"][0][:2] == ("crash", "critical")
    import json

    from story import cli

    rows = json.loads(cli("analyze", "--json", "--no-cache", str(SAMPLES / "gpu_crash")).stdout)["ranks"]
    done = {r["rank"]: r["pg_status"]["0"]["last_completed"] for r in rows}
    assert done[0] > 0 and done[1] > 0, done


@pytest.mark.parametrize("folder", [ROOT / "tests" / "data" / "story" / "config_algo_tree",
                                    pytest.param(CORPUS / "config_error_algo_tree", id="corpus",
                                                 marks=pytest.mark.skipif(not CORPUS.is_dir(), reason=NO_CORPUS))],
                         ids=["fixture", "corpus"])
def test_a_config_mistake_is_one_story_live_and_offline(folder: Path, tmp_path: Path) -> None:
    """NCCL_ALGO=Tree breaks DDP's first all_gather: config_error, culprits 0 and 1, offline, in every output, and
    in what the live monitor alerts over the same files (it said crash [1] before)."""
    ref = assert_one_story(told(folder, tmp_path))
    assert (ref.verdict, ref.culprits) == ("config_error", [0, 1])
    analyzed, live = judgements(folder)
    assert (live["verdict"], live["culprit_ranks"]) == ("config_error", [0, 1]), live


def test_stopping_a_watch_is_not_a_crash(tmp_path: Path) -> None:
    """SIGINT to a following watch ends it cleanly with the judgement of what it saw."""
    (tmp_path / "ncclscope-rank0.jsonl").write_text('{"type":"start","t":1.0,"rank":0,"world":1,"host":"h","pid":1}\n')
    p = subprocess.Popen([sys.executable, "-m", "ncclscope", "watch", str(tmp_path)], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    assert p.stdout is not None
    for line in p.stdout:
        if line.startswith("watching "):
            break
    p.send_signal(signal.SIGINT)
    out = p.stdout.read()
    assert p.wait(timeout=600) == 0, out
    assert "VERDICT:" in out, out
