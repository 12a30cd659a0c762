"""What the tests that signal a running ``analyze`` read of it from /proc: whether a parse worker's result has
reached the analysis (the event they wait on), and which processes are still the analysis or its workers."""
from __future__ import annotations

import os
from pathlib import Path

from ncclscope.ingest import handover


def results_written(pid: int) -> bool:
    """Whether the process ``pid`` holds a result memory file (``memfd:ncclscope-result``) a worker wrote into."""
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        try:
            if handover.RESULT_NAME in os.readlink(fd) and fd.stat().st_size > 0:
                return True
        except OSError:
            pass
    return False


def processes_naming(arg: str) -> list[int]:
    """Processes whose command line names ``arg`` (the analysis of that input and its forked workers)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if arg.encode() in (d / "cmdline").read_bytes():
                    out.append(int(d.name))
            except OSError:
                pass
    return out
