"""When a followed job has ended: every rank's end seen, the launcher's end, or no writer left.

``watch`` stops on the first of these and then prints the one judgement of the folder (``analyze``'s).
A rank the launcher SIGTERMs or SIGKILLs writes no exit record, so every rank's end alone would leave a
``watch`` running forever after such a job; the wrapper's ``exit.txt`` says the command ended, and where
no wrapper ran, a folder that stopped growing and that no process on this host holds open for writing has
no writer left. That last test is made only when every rank seen ran on this host (a writer on another node
is not in this host's ``/proc``) and only after ``QUIET_S`` without growth, so a hung job (its processes
alive, holding their logs open) never reads as ended.
"""
from __future__ import annotations

import enum
import os
import socket
from collections.abc import Iterable
from pathlib import Path

QUIET_S = 10.0  # the folder has not grown for this long before its writers are looked for
EXIT_FILE = "exit.txt"  # written by ``ncclscope run`` when the command ended
WRITE_MODES = (os.O_WRONLY, os.O_RDWR)


class Ended(enum.StrEnum):
    """Why ``watch`` stopped following the folder."""

    RANKS_EXITED = "every rank's end was seen"
    LAUNCHER = "the launched command ended (exit.txt)"
    NO_WRITER = "no process writes the folder any more"


def job_ended(run_dir: Path, ranks_exited: bool, quiet_s: float, hosts: Iterable[str | None],
              writers: int | None = None) -> Ended | None:
    """Why the job has ended, or None while it may still run. ``quiet_s``: seconds since the folder last
    grew; ``hosts``: the hosts of the ranks seen; ``writers``: the count of open write handles, for tests
    (None: look in /proc)."""
    if ranks_exited:
        return Ended.RANKS_EXITED
    if os.path.lexists(run_dir / EXIT_FILE):
        return Ended.LAUNCHER
    seen = set(hosts)
    if quiet_s < QUIET_S or not seen or not seen <= {socket.gethostname(), "localhost"}:
        return None
    if writers is None:
        writers = open_writers(run_dir)
    return Ended.NO_WRITER if writers == 0 else None


def open_writers(run_dir: Path) -> int | None:
    """How many open file handles of other processes write a file under ``run_dir`` (None: /proc unreadable).
    Other users' processes are readable by root only; a job writing the folder runs as its owner."""
    top = os.path.realpath(run_dir) + os.sep
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
    except OSError:
        return None
    n = 0
    for pid in pids:
        n += _writers_of(pid, top)
    return n


def _writers_of(pid: str, top: str) -> int:
    fd_dir = f"/proc/{pid}/fd"
    try:
        fds = os.listdir(fd_dir)
    except OSError:  # ended meanwhile, or another user's (its handles are not ours to read)
        return 0
    n = 0
    for fd in fds:
        try:
            target = os.readlink(f"{fd_dir}/{fd}")
        except OSError:
            continue
        if target.startswith(top) and _writes(pid, fd):
            n += 1
    return n


def _writes(pid: str, fd: str) -> bool:
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags:"):
                    return (int(line.split()[1], 8) & os.O_ACCMODE) in WRITE_MODES
    except (OSError, ValueError, IndexError):
        return True  # cannot tell: assume it writes (never end a job early)
    return True
