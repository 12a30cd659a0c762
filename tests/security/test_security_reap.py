"""What a later analysis removes of the extraction folders SIGKILL left behind, and what it never touches: a
link named like one (nor what it points to), a folder of a process that still runs, one named by another pid
namespace (whose pids mean other processes), anything not named as ours."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ncclscope.ingest.files import _pid_namespace, reap_stale


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _folder(tmp: Path, name: str) -> Path:
    d = tmp / name
    d.mkdir()
    (d / "rank0.log").write_text("x\n")
    return d


def test_only_a_gone_process_s_own_folder_is_removed(tmp_path: Path) -> None:
    ns, dead = _pid_namespace(), _dead_pid()
    stale = _folder(tmp_path, f"ncclscope-x{ns}-{dead}-abc_12")
    running = _folder(tmp_path, f"ncclscope-x{ns}-{os.getppid()}-def34")
    other_ns = _folder(tmp_path, f"ncclscope-x{ns + 1}-{dead}-ghi56")
    not_ours = _folder(tmp_path, f"ncclscope-{dead}-jkl78")
    target = _folder(tmp_path, "precious")
    link = tmp_path / f"ncclscope-x{ns}-{dead}-mno90"
    link.symlink_to(target)
    assert reap_stale(tmp_path) == [stale.name]
    assert not stale.exists()
    for kept in (running, other_ns, not_ours, target):
        assert (kept / "rank0.log").is_file(), kept
    assert link.is_symlink()


def test_a_folder_it_cannot_list_is_no_error(tmp_path: Path) -> None:
    assert reap_stale(tmp_path / "missing") == []
