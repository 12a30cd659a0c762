"""A log that keeps growing while ``analyze`` reads it: each file is read up to the size it had when it was opened
(``fstat`` on the open descriptor), so the analysis ends. Before, a writer faster than the parse kept it reading
(and its memory growing) for as long as it wrote."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLES
from ncclscope import safe_io
from ncclscope.ingest import blocks


def test_a_sized_read_stops_at_the_size_at_the_open(tmp_path):
    p = tmp_path / "grows.log"
    p.write_bytes(b"a\n" * 1000)
    with safe_io.open_sized(p) as f:
        with open(p, "ab") as w:
            w.write(b"b\n" * 5000)
        assert f.size == 2000
        assert f.read(1500) == b"a\n" * 750
        assert f.read() == b"a\n" * 250
        assert f.read() == b""
    with safe_io.open_sized(p) as f:
        buf = bytearray(20_000)
        assert f.readinto(buf) == 12_000


def test_lines_appended_while_a_file_is_read_in_blocks_are_not_read(tmp_path):
    p = tmp_path / "grows.log"
    p.write_bytes(b"0123456789\n" * 100_000)  # 1.1 MB: 17 blocks of 64 KB
    lines = 0
    with open(p, "ab") as w:
        for n, (_, _, nl) in enumerate(blocks.iter_blocks(p, block_bytes=64 * 1024)):
            lines += len(nl) if nl is not None else 1
            if n < 100:  # 90 KB more each block, faster than it is read (a reader that follows it still ends)
                w.write(b"appended\n" * 10_000)
                w.flush()
    assert lines == 100_000


# ``ncclscope`` run with its address space bounded (set before an exec, so that no thread of this process runs in a
# forked child): the old reader grew ~100 MB/s here, and fails at the bound instead of taking the machine's memory
_BOUNDED = ("import os, resource, sys; resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30)); "
            "os.execv(sys.executable, [sys.executable, '-m', 'ncclscope', *sys.argv[1:]])")


RATE = 2_000_000  # bytes a second the writer appends: 5 times what the parse read of blank lines before


@pytest.mark.slow
def test_analyze_ends_while_a_writer_keeps_appending(tmp_path):
    """A writer appends blank lines (``RATE``, paced by how much it has written, whatever its sleeps) for as long
    as the analysis runs; the analysis ends by itself. The timeout is only a safety net."""
    run = tmp_path / "run"
    run.mkdir()
    log = run / "vm.820.nccl.log"
    log.write_bytes((SAMPLES / "gpu_hang" / "vm.820.nccl.log").read_bytes())
    stop = threading.Event()
    written = [0]

    def write() -> None:
        start = time.monotonic()
        with open(log, "ab") as f:
            while not stop.is_set():
                due = int(RATE * (time.monotonic() - start)) - written[0]
                if due > 0:
                    written[0] += f.write(b"\n" * min(due, 1 << 20))
                    f.flush()
                stop.wait(0.01)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        while written[0] < 256 * 1024:  # the file is growing before the analysis starts
            stop.wait(0.01)
        p = subprocess.run([sys.executable, "-c", _BOUNDED, "analyze", "--no-cache", "--json", str(run)],
                           capture_output=True, text=True, timeout=600, cwd=ROOT, check=False,
                           env={**os.environ, "TMPDIR": str(tmp_path)})
        at_exit = log.stat().st_size
        stop.wait(0.2)
        assert writer.is_alive() and log.stat().st_size > at_exit  # the writer was still writing when it ended
    finally:
        stop.set()
        writer.join()
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads(p.stdout)["verdict"]
    assert Path(log).stat().st_size > 256 * 1024
