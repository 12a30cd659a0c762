"""`watch` stops following a folder when the job has ended (``live.ended``): every rank's end seen, the
wrapper's exit.txt, or no process left writing the folder; and never while a process still holds a log of
it open for writing (a hung job's processes are alive)."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from ncclscope.live.ended import QUIET_S, Ended, job_ended, open_writers

HOST = socket.gethostname()


def test_each_way_a_job_ends(tmp_path: Path) -> None:
    assert job_ended(tmp_path, True, 0.0, [HOST]) is Ended.RANKS_EXITED
    assert job_ended(tmp_path, False, 0.0, [HOST], writers=0) is None  # still growing a moment ago
    assert job_ended(tmp_path, False, QUIET_S, [HOST], writers=1) is None  # a writer holds a log open
    assert job_ended(tmp_path, False, QUIET_S, [HOST], writers=0) is Ended.NO_WRITER
    assert job_ended(tmp_path, False, QUIET_S, ["node-b"], writers=0) is None  # a rank on another node: not in /proc
    assert job_ended(tmp_path, False, QUIET_S, [], writers=0) is None  # no rank seen yet: nothing started
    (tmp_path / "exit.txt").write_text("exit=1\n")
    assert job_ended(tmp_path, False, 0.0, []) is Ended.LAUNCHER


def test_open_writers_sees_a_process_writing_the_folder(tmp_path: Path) -> None:
    log = tmp_path / "rank0.log"
    reader = tmp_path / "rank1.log"
    reader.write_text("x\n")
    assert open_writers(tmp_path) == 0
    code = ("import sys; w = open(sys.argv[1], 'a'); r = open(sys.argv[2]); print('open', flush=True); "
            "sys.stdin.readline()")
    p = subprocess.Popen([sys.executable, "-c", code, str(log), str(reader)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "open"
        assert open_writers(tmp_path) == 1  # the appender; the reader's handle is no writer
    finally:
        assert p.stdin is not None
        p.stdin.write("\n")
        p.stdin.close()
        p.wait(timeout=600)
    assert open_writers(tmp_path) == 0


def test_watch_following_a_run_stops_when_the_wrapper_says_it_ended(tmp_path: Path) -> None:
    """A rank the launcher SIGTERMed wrote no exit record: the wrapper's exit.txt ends the watch, which then
    prints analyze's judgement of the folder."""
    rank0 = tmp_path / "ncclscope-rank0.jsonl"
    rank0.write_text('{"type":"start","t":1.0,"rank":0,"world":2,"host":"h","pid":1}\n'
                     '{"type":"coll","t":1.1,"rank":0,"pg":"0","seq":1,"op":"allreduce"}\n')
    (tmp_path / "ncclscope-rank1.jsonl").write_text('{"type":"start","t":1.0,"rank":1,"world":2,"host":"h","pid":2}\n')
    p = subprocess.Popen([sys.executable, "-m", "ncclscope", "watch", str(tmp_path)], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, env=os.environ | {"COLUMNS": "200"})
    assert p.stdout is not None
    for line in p.stdout:  # the watch has started: then the wrapper's end
        if line.startswith("watching "):
            (tmp_path / "exit.txt").write_text("exit=143\n")
            break
    out = p.stdout.read()
    assert p.wait(timeout=600) == 0
    assert "the job has ended: the launched command ended (exit.txt)" in out, out
    assert "VERDICT:" in out, out
