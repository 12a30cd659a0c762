"""Tailer and folder watcher on real files: growth, partial lines, truncation, rotation, deletion."""
from __future__ import annotations

import os
import time
from pathlib import Path

from ncclscope.live.tailer import Tailer
from ncclscope.live.watcher import DirWatcher, scan


def _append(p: Path, text: str) -> None:
    with open(p, "a", encoding="utf-8") as f:
        f.write(text)


def test_growth_reads_only_new_lines(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    _append(p, "one\ntwo\n")
    t = Tailer()
    assert t.read_new(str(p)) == [(1, "one"), (2, "two")]
    assert t.read_new(str(p)) == []
    _append(p, "three\n")
    assert t.read_new(str(p)) == [(3, "three")]
    assert t.files[str(p)].offset == p.stat().st_size


def test_partial_last_line_is_held_back(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    _append(p, '{"a": 1}\n{"b"')
    t = Tailer()
    assert t.read_new(str(p)) == [(1, '{"a": 1}')]
    _append(p, ": 2")
    assert t.read_new(str(p)) == []
    _append(p, "}\r\n")
    assert t.read_new(str(p)) == [(2, '{"b": 2}')]


def test_truncation_restarts_at_zero(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    _append(p, "old line 1\nold line 2\n")
    t = Tailer()
    assert len(t.read_new(str(p))) == 2
    p.write_text("new\n")  # copytruncate: same inode, smaller
    assert t.read_new(str(p)) == [(1, "new")]
    assert t.files[str(p)].resets == 1


def test_rotation_by_rename_reopens(tmp_path: Path) -> None:
    p = tmp_path / "stderr.log"
    _append(p, "a\nb\nc\n")
    t = Tailer()
    assert len(t.read_new(str(p))) == 3
    os.rename(p, tmp_path / "stderr.log.1")
    _append(p, "fresh 1\nfresh 2\nfresh 3\nfresh 4\n")  # bigger than the old offset: only the inode tells
    assert t.read_new(str(p)) == [(1, "fresh 1"), (2, "fresh 2"), (3, "fresh 3"), (4, "fresh 4")]


def test_deletion_and_recreation(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    _append(p, "x\n")
    t = Tailer()
    assert t.read_new(str(p)) == [(1, "x")]
    p.unlink()
    assert t.read_new(str(p)) == []
    assert str(p) not in t.files
    _append(p, "y\n")
    assert t.read_new(str(p)) == [(1, "y")]


def test_bad_bytes_long_lines_and_chunking(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    p.write_bytes(b"\xff\xfe bad\n" + b"z" * 5000 + b"\n" + b"tail\n")
    t = Tailer(max_bytes=1024, max_line=100)
    out = t.read_new(str(p))
    assert out[0] == (1, "\ufffd\ufffd bad")
    assert t.has_more(str(p))
    while t.has_more(str(p)):
        out += t.read_new(str(p))
    assert out[1] == (2, "z" * 100)  # cut, emitted once
    assert out[2] == (3, "tail")
    assert len(out) == 3


def test_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    assert Tailer().read_new(str(fifo)) == []  # never blocks


def test_thousands_of_files(tmp_path: Path) -> None:
    paths = []
    for i in range(2000):
        p = tmp_path / f"r{i}.log"
        p.write_text(f"line of {i}\n")
        paths.append(str(p))
    t = Tailer()
    t0 = time.thread_time()  # CPU time of this thread: the wall clock of a loaded machine counts others' turns
    got = sum(len(t.read_new(p)) for p in paths)
    again = sum(len(t.read_new(p)) for p in paths)
    assert (got, again) == (2000, 0)
    assert time.thread_time() - t0 < 5  # a pass over every file per file read would take minutes


def test_watcher_sees_late_files_and_subfolders(tmp_path: Path) -> None:
    run = tmp_path / "run"  # does not exist yet
    w = DirWatcher(run, lambda n: n.endswith(".jsonl"), rescan_s=0.2)
    w.start()
    try:
        assert w.changed() == set()
        (run / "node1").mkdir(parents=True)
        (run / "node1" / "ncclscope-rank3.jsonl").write_text("{}\n")
        (run / "ignored.txt").write_text("x")
        deadline = time.time() + 600  # a safety net: the wait is on the event
        seen: set[str] = set()
        while time.time() < deadline and not seen:
            seen |= w.changed()
            time.sleep(0.05)
        assert seen == {str(run / "node1" / "ncclscope-rank3.jsonl")}
    finally:
        w.stop()


def test_polling_observer_reports_events(tmp_path: Path) -> None:
    w = DirWatcher(tmp_path, lambda n: n.endswith(".log"), poll=True, rescan_s=3600, poll_interval_s=0.1)
    w.start()
    try:
        w.changed(force_scan=True)
        (tmp_path / "stderr.log").write_text("hello\n")
        deadline = time.time() + 600  # a safety net: the wait is on the event
        seen: set[str] = set()
        while time.time() < deadline and not seen:
            seen |= w.changed()
            time.sleep(0.05)
        assert str(tmp_path / "stderr.log") in seen
    finally:
        w.stop()


def test_scan_depth_and_ignored(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c" / "d"
    deep.mkdir(parents=True)
    (deep / "x.log").write_text("")
    (tmp_path / "a" / "y.log").write_text("")
    (tmp_path / "ncclscope-control").mkdir()
    (tmp_path / "ncclscope-control" / "z.log").write_text("")
    assert scan(tmp_path, lambda n: n.endswith(".log")) == [str(tmp_path / "a" / "y.log")]


def test_odd_bytes_read_as_the_offline_reader_reads_them(tmp_path: Path) -> None:
    """NUL inside a host name and invalid UTF-8: the live tailer's text is the offline reader's text, so a live
    judgement sees the same host as analyze does (a NUL kept live made a second host)."""
    from ncclscope.ingest.blocks import iter_lines
    p = tmp_path / "rank0.log"
    p.write_bytes(b"node\x00001:4242:4251 [0] NCCL INFO AllReduce: opCount 3 \xff\n\x00\x00\x00tail\n")
    live = Tailer().read_new(str(p))
    offline = [(n, text.rstrip("\n")) for n, text in iter_lines(p)]
    assert [t for _, t in live] == [t for _, t in offline]
    assert live[0][1].startswith("node001:4242:4251 ") and "\x00" not in live[1][1]
