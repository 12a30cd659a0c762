"""Reading an input on a shared machine: regular files only, checked on the open descriptor (a file
swapped for a FIFO or a link after the folder walk is neither read nor waited on), every skipped
path named in ``problems``, and reads capped whatever a file claims (a link to /dev/zero)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ncclscope import safe_io
from ncclscope.analysis import analyze_paths

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "gpu_hang"

SWAP = """
import json, os, sys
from pathlib import Path
from ncclscope.ingest import pool
from ncclscope.analysis import analyze_paths

real = pool.collect_files
def walk_then_swap(paths, workdir, skipped=None):
    files = real(paths, workdir, skipped) if skipped is not None else real(paths, workdir)
    for p, _ in files:  # between the walk and the reads: another user swaps two logs
        if p.name == "stderr.log":
            p.unlink(); os.mkfifo(p)
        if p.name == "stdout.log":
            p.unlink(); p.symlink_to("/etc/passwd")
    return files
pool.collect_files = walk_then_swap
res = analyze_paths([Path(sys.argv[1])], cache=False)
print(json.dumps({"verdict": res.decision.verdict.value, "problems": res.run.problems}))
"""


def test_log_swapped_for_a_fifo_or_link_after_the_walk_is_not_read(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run)
    p = subprocess.run([sys.executable, "-c", SWAP, str(run)], capture_output=True, text=True, timeout=600,
                       cwd=ROOT, check=False)  # a blocking open would hang here until the timeout
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["verdict"] == "hang"
    problems = " | ".join(out["problems"])
    assert "stderr.log: cannot read (a FIFO, not a regular file)" in problems
    assert "stdout.log: cannot read (a symbolic link, not followed)" in problems
    assert "root:" not in p.stdout


def test_skipped_paths_are_listed_with_why(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run)
    (run / "elsewhere.log").symlink_to("/etc/hostname")
    (run / "linked-folder").symlink_to(tmp_path)
    os.mkfifo(run / "pipe.log")
    problems = analyze_paths([run], cache=False).run.problems
    text = " | ".join(problems)
    assert "elsewhere.log: a symbolic link, not followed; skipped" in text
    assert "linked-folder: a link to a folder, not followed; skipped" in text
    assert "pipe.log: a FIFO, not a regular file; skipped" in text


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a folder whatever its mode")
def test_unreadable_subfolder_is_listed(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run)
    (run / "node2").mkdir()
    os.chmod(run / "node2", 0)
    try:
        text = " | ".join(analyze_paths([run], cache=False).run.problems)
    finally:
        os.chmod(run / "node2", 0o755)
    assert "node2: folder not readable" in text


def test_a_named_link_is_followed(tmp_path):
    log = SAMPLE / "vm.820.nccl.log"
    (tmp_path / "mine.log").symlink_to(log)
    res = analyze_paths([tmp_path / "mine.log"], cache=False)
    assert res.run.files == [("mine.log", "log")]


def test_capped_read_of_a_link_to_dev_zero(tmp_path):
    (tmp_path / "control").symlink_to("/dev/zero")
    with pytest.raises(safe_io.NotRegularFile, match="symbolic link"):
        safe_io.read_capped(tmp_path / "control", 4096)
    with pytest.raises(safe_io.NotRegularFile, match="character device"):
        safe_io.read_capped(tmp_path / "control", 4096, follow=True)
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.truncate(1 << 40)  # a sparse terabyte: a whole read would never end
    with pytest.raises(safe_io.TooLarge):
        safe_io.read_capped(big, 4096)


def test_structured_file_claiming_more_than_the_limit(tmp_path, monkeypatch):
    from ncclscope.ingest import blocks

    monkeypatch.setattr(blocks, "MAX_STRUCTURED_BYTES", 1 << 16)
    (tmp_path / "topo.xml").write_bytes(b"<system>" + b"<cpu/>" * 20000 + b"</system>")
    (tmp_path / "a.log").write_text("node1:11:11 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n")
    res = analyze_paths([tmp_path], cache=False)
    assert any("topo.xml: over the 65536 byte limit" in p for p in res.run.problems), res.run.problems
