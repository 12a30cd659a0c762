"""The live monitor on run folders written step by step: alerts, dump requests, follow-ups, CLI."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from ncclscope.cli import main
from ncclscope.live.monitor import LiveConfig, LiveMonitor, classify

T0 = 1_800_000_000.0


def _w(p: Path, *recs: dict[str, Any], raw: str = "") -> None:
    with open(p, "a", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in recs)
        f.write(raw)


def _steps(d: Path, world: int, first: int, last: int, skip_rank: int | None = None, t0: float = T0) -> float:
    t = t0
    for s in range(first, last + 1):
        t = t0 + s * 0.05
        for r in range(world):
            if r == skip_rank and s == last:
                continue
            recs = [{"type": "coll", "rank": r, "pg": "0", "seq": s, "op": "allreduce", "numel": 4,
                     "dtype": "float32", "where": f"train.py:{30 + r} in step", "t": t}]
            if s < last or skip_rank is None:
                recs.append({"type": "done", "rank": r, "pg": "0", "seq": s, "t": t + 0.01})
            _w(d / f"ncclscope-rank{r}.jsonl", *recs)
    return t


def _mon(d: Path, **kw: Any) -> LiveMonitor:
    kw.setdefault("console", False)
    return LiveMonitor(d, LiveConfig(**kw), on_kill=kw.pop("on_kill", None) if "on_kill" in kw else None)


def test_classify_by_content_as_analyze_does() -> None:
    hook = b'{"type": "start", "rank": 0}\n{"type": "hb", "rank": 0}\n'
    nccl = b"vm:123:123 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    torch = b"[rank1]:[E1129 21:31:21.606 ProcessGroupNCCL.cpp:689] [Rank 1] Watchdog caught collective operation\n"
    assert classify("ncclscope-rank3.jsonl", hook) == "hook"
    # a name says nothing: the content decides, as it does for `analyze`
    assert classify("rank3.txt", hook) == "hook" and classify("job-4242.out", nccl) == "log"
    assert classify("vm.123.nccl.log", nccl) == "log" and classify("stderr.log", torch) == "log"
    assert classify("fr_live_rank1.pkl", b"\x80") == "fr" and classify("dump.bin", b"\x80\x04\x95") == "fr"
    assert classify("alerts.jsonl", hook) is None and classify("report.json", b"{}") is None
    assert classify("topo.xml", b"<system version='1'>") is None


def test_hang_dump_request_detail_kill_and_cleared(tmp_path: Path) -> None:
    kills: list[float] = []
    mon = LiveMonitor(tmp_path, LiveConfig(console=False, kill_on_hang=True), on_kill=lambda: kills.append(1))
    assert mon.poll_once(now=T0) == []  # empty folder
    for r in range(3):
        _w(tmp_path / f"ncclscope-rank{r}.jsonl", {"type": "start", "rank": r, "world": 3, "t": T0})
    t = _steps(tmp_path, 3, 1, 60, skip_rank=2)
    assert mon.poll_once(now=t + 3) == []
    (a,) = mon.poll_once(now=t + 5.5)
    assert a["kind"] == "hang" and a["culprit_ranks"] == [2]
    assert a["stuck"] == {"pg": "0", "seq": 60, "op": "allreduce"}
    assert a["where"] == {"0": "train.py:30 in step", "1": "train.py:31 in step"}
    req = json.loads((tmp_path / "ncclscope-control" / "dump-request").read_text())
    assert req["id"] == 1
    assert mon.poll_once(now=t + 6) == [] and not kills  # one alert per incident; stacks not there yet
    for r in range(3):
        _w(tmp_path / f"ncclscope-rank{r}.jsonl", {
            "type": "stack", "rank": r, "reason": "request", "t": t + 6.2,
            "where": "train.py:77 in main (time.sleep)" if r == 2 else f"train.py:{30 + r} in step (dist.all_reduce)",
            "frames": [{"file": "/x/train.py", "line": 77 if r == 2 else 30 + r, "func": "main", "code": "..."}]})
    (tmp_path / "fr_live_rank2.pkl").write_bytes(b"\x80")
    (d,) = mon.poll_once(now=t + 6.5)
    assert d["kind"] == "hang_detail" and d["where"]["2"] == "train.py:77 in main (time.sleep)"
    assert d["stacks"]["2"] == ["train.py:77 in main (...)"] and d["flight_recorder"] == ["fr_live_rank2.pkl"]
    assert kills == [1]
    # rank 2 comes back: the collective completes everywhere
    _w(tmp_path / "ncclscope-rank2.jsonl", {"type": "coll", "rank": 2, "pg": "0", "seq": 60, "op": "allreduce",
                                            "numel": 4, "dtype": "float32", "t": t + 7})
    for r in range(3):
        _w(tmp_path / f"ncclscope-rank{r}.jsonl", {"type": "done", "rank": r, "pg": "0", "seq": 60, "t": t + 7})
    (c,) = mon.poll_once(now=t + 7.5)
    assert c["kind"] == "cleared" and c["incident"] == "hang"
    mon.stop()
    kinds = [json.loads(x)["kind"] for x in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    assert kinds == ["hang", "hang_detail", "cleared"]


def test_healthy_pause_and_partial_lines(tmp_path: Path) -> None:
    mon = _mon(tmp_path)
    t = _steps(tmp_path, 2, 1, 100)
    _w(tmp_path / "ncclscope-rank0.jsonl", raw='{"type": "coll", "rank": 0, "pg": "0", "se')  # half a line
    assert mon.poll_once(now=t + 60) == []  # nothing pending for a minute: a pause, not a hang
    _w(tmp_path / "ncclscope-rank0.jsonl", raw=f'q": 101, "op": "allreduce", "t": {t + 60}}}\n')
    assert mon.poll_once(now=t + 61) == []
    (a,) = mon.poll_once(now=t + 66)
    assert a["culprit_ranks"] == [1] and a["stuck"]["seq"] == 101
    mon.stop()


def test_desync_alert_after_a_short_grace(tmp_path: Path) -> None:
    mon = _mon(tmp_path)
    t = _steps(tmp_path, 3, 1, 20)
    for r, numel in ((0, 4), (1, 7), (2, 4)):
        _w(tmp_path / f"ncclscope-rank{r}.jsonl", {"type": "coll", "rank": r, "pg": "0", "seq": 21, "op": "allreduce",
                                                    "numel": numel, "dtype": "float32", "t": t + 0.1,
                                                    "where": f"train.py:{50 + r} in step"})
    assert mon.poll_once(now=t + 0.2) == []  # a side may be a rank on its way down
    (a,) = mon.poll_once(now=t + 2.5)
    assert a["kind"] == "desync" and a["culprit_ranks"] == [1] and a["stuck"]["seq"] == 21
    assert "numel=7" in a["message"] and a["where"]["1"] == "train.py:51 in step"
    assert mon.poll_once(now=t + 30) == []  # no hang alert on top of the desync
    mon.stop()


def test_mismatch_of_a_rank_that_fails_right_after_is_its_crash(tmp_path: Path) -> None:
    """Rank 0 runs out of memory, calls a barrier on its way down while the others all-reduce, and
    exits: the mismatch is the failure's echo; the alert is the crash, with rank 0."""
    mon = _mon(tmp_path)
    t = _steps(tmp_path, 3, 1, 20)
    for r, op in ((0, "barrier"), (1, "allreduce"), (2, "allreduce")):
        _w(tmp_path / f"ncclscope-rank{r}.jsonl", {"type": "coll", "rank": r, "pg": "0", "seq": 21, "op": op,
                                                    "numel": 4, "dtype": "float32", "t": t + 0.1})
    assert mon.poll_once(now=t + 0.2) == []
    _w(tmp_path / "ncclscope-rank0.jsonl", {"type": "exit", "rank": 0, "code": 1, "t": t + 0.4,
                                            "exception": "MemoryError: out of memory at step 7"})
    for r in (1, 2):
        _w(tmp_path / f"ncclscope-rank{r}.jsonl", {"type": "exit", "rank": r, "code": 1, "t": t + 0.6,
                                                    "exception": "RuntimeError: Connection closed by peer [10.0.0.7]:41"})
    alerts = mon.poll_once(now=t + 2.5) + mon.poll_once(now=t + 5)
    assert [a["kind"] for a in alerts] == ["crash"], alerts
    assert alerts[0]["culprit_ranks"] == [0] and "MemoryError" in alerts[0]["message"]
    mon.stop()


def test_crash_from_a_traceback_written_in_pieces(tmp_path: Path) -> None:
    mon = _mon(tmp_path)
    _steps(tmp_path, 2, 1, 5)
    err = tmp_path / "stderr.log"
    _w(err, raw="[rank1]: Traceback (most recent call last):\n"
                '[rank1]:   File "/w/train.py", line 12, in <module>\n')
    assert mon.poll_once(now=T0 + 1) == []
    _w(err, raw='[rank1]:   File "/w/train.py", line 9, in main\n'
                "[rank1]:     raise RuntimeError('boom')\n"
                "[rank1]: RuntimeError: boom\n")
    _w(tmp_path / "ncclscope-rank1.jsonl", {"type": "exit", "rank": 1, "code": 1, "t": T0 + 1})
    assert mon.poll_once(now=T0 + 1.2) == []  # gathering the pieces of one crash
    _w(tmp_path / "ncclscope-rank0.jsonl", {"type": "exit", "rank": 0, "code": 1, "t": T0 + 1.1,
                                            "exception": "RuntimeError: Connection closed by peer [127.0.0.1]:5"})
    (a,) = mon.poll_once(now=T0 + 3.5)
    assert a["kind"] == "crash" and a["culprit_ranks"] == [1]
    assert "then rank 0 failed too (rank 0 exited with code 1: RuntimeError: Connection closed" in a["message"]
    assert "RuntimeError: boom" in a["message"] and a["where"] == {"1": "/w/train.py:9 in main"}
    assert a["exit_codes"] == {"0": 1, "1": 1}


def test_crash_of_a_rank_that_vanished(tmp_path: Path) -> None:
    mon = _mon(tmp_path)
    _steps(tmp_path, 3, 1, 5)
    for r in (0, 2):
        _w(tmp_path / f"ncclscope-rank{r}.jsonl", {"type": "hb", "rank": r, "t": T0 + 2, "step": 5, "pgs": {}},
           {"type": "exit", "rank": r, "code": 1, "t": T0 + 2.1, "exception": "RuntimeError: Connection reset by peer"})
    assert mon.poll_once(now=T0 + 2.2) == []
    (a,) = mon.poll_once(now=T0 + 4.5)
    assert a["culprit_ranks"] == [1] and a["message"].startswith("rank 1 stopped without an exit record")
    mon.stop()
    mon.stop()


def test_truncated_and_rotated_files_do_not_confuse_state(tmp_path: Path) -> None:
    mon = _mon(tmp_path)
    t = _steps(tmp_path, 2, 1, 30)
    mon.poll_once(now=t)
    (tmp_path / "stderr.log").write_text("x\n" * 50)
    mon.poll_once(now=t)
    (tmp_path / "stderr.log").write_text("[rank0]: RuntimeError: after truncation\n")  # no frames: not a crash
    (tmp_path / "ncclscope-rank0.jsonl").unlink()
    assert mon.poll_once(now=t + 1) == []
    assert mon.snapshot(now=t + 1)["ranks"][0]["completed"] == {"0": 30}
    mon.stop()


def test_background_threads_follow_file_events(tmp_path: Path) -> None:
    got: list[dict[str, Any]] = []
    mon = LiveMonitor(tmp_path, LiveConfig(console=False, stall_seconds=0.5))
    mon.start()
    try:
        now = time.time()
        for r in range(2):
            _w(tmp_path / f"ncclscope-rank{r}.jsonl", {"type": "start", "rank": r, "world": 2, "t": now})
        _w(tmp_path / "ncclscope-rank0.jsonl", {"type": "coll", "rank": 0, "pg": "0", "seq": 1, "op": "barrier",
                                                "t": now})
        deadline = time.time() + 600  # a safety net: the wait is on the event
        while time.time() < deadline and not got:
            got = [a for a in mon.alerts if a["kind"] == "hang"]
            time.sleep(0.05)
    finally:
        mon.stop()
    assert got and got[0]["culprit_ranks"] == [1]
    assert (tmp_path / "alerts.jsonl").exists()


def test_watch_once_on_real_runs(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["watch", str(corpus / "hang_rank1_stuck"), "--once", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (a,) = out["alerts"]
    assert (a["kind"], a["culprit_ranks"], a["stuck"]) == ("hang", [1], {"pg": "0", "seq": 126, "op": "allreduce"})
    assert main(["watch", str(corpus / "crash_rank1_exit"), "--once", "--json"]) == 0
    (c,) = json.loads(capsys.readouterr().out)["alerts"]
    assert (c["kind"], c["culprit_ranks"]) == ("crash", [1])
    assert main(["watch", str(corpus / "healthy_shm"), "--once", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["alerts"] == []
    assert not (corpus / "healthy_shm" / "alerts.jsonl").exists()  # --once writes nothing


def test_watch_once_text_and_bad_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _steps(tmp_path, 2, 1, 10)
    assert main(["watch", str(tmp_path), "--once"]) == 0
    out = capsys.readouterr().out
    assert "VERDICT: HEALTHY" in out and "no alert" in out  # analyze's judgement of the folder, rendered
    assert main(["watch", str(tmp_path / "nope"), "--once"]) == 2
    assert "is not a folder" in capsys.readouterr().err
