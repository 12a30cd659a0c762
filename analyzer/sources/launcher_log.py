"""The words of the MPI runtime, of ssh under it, and of UCX / UCC in a job's console (``records.LaunchFailure``).

A job launched with mpirun may fail before NCCL prints anything: ssh cannot reach a node (``ssh: connect to host
10.0.0.7 port 22: Connection refused``, ``ssh: Could not resolve hostname ...``), Open MPI's runtime cannot start or
loses its daemon on a node (ORTE's ``ORTE was unable to reliably start one or more daemons``, PRRTE's ``PRTE has lost
communication with a remote daemon``, ``A process or daemon was unable to complete a TCP connection``), or UCX / UCC
cannot share memory between the processes of a host (``[1718200311.44] [node07:40218:0] mm_posix.c:233 UCX ERROR
open(file_name=/proc/40219/fd/31 ...) failed``, ``tl_shm_team.c:617 TL_SHM ERROR Child failed to attach to shmseg``,
Open MPI's ``pml_ucx.c:419 Error: ucp_ep_create(proc=5) failed: Shared memory error``). Each such line is one record;
the knowledge base (``nccl/failures.toml``, areas launcher and container) says what it means.
"""
from __future__ import annotations

import re

from .records import LaunchFailure, LaunchTool

SSH_RE = re.compile(r"\bssh: (?:connect to host (?P<host>\S{1,255}) port \d{1,5}: |Could not resolve hostname "
                    r"(?P<host2>[^\s:]{1,255}): )")
MPI_RE = re.compile(r"\b(?:ORTE|PRTE|PRRTE) (?:was unable to reliably start one or more daemons|has lost communication "
                    r"with a remote daemon)|\bAn ORTE daemon has unexpectedly failed after launch|\bA process or daemon "
                    r"was unable to complete a TCP connection")
# UCX's and UCC's log head: "[1718200311.442104] [node07:40218:0]     mm_posix.c:233  UCX  ERROR ..." (the pid may be
# padded: "[node07:1382 :0]"), and Open MPI's "[node07:40218] pml_ucx.c:419  Error: ucp_ep_create(proc=5) failed"
UCX_RE = re.compile(r"\[(?P<host>[^\s:\[\]]{1,255}):(?P<pid>\d{1,10}) ?:\d{1,6}\]\s{1,40}[\w.-]{1,80}\.c:\d{1,6}\s{1,8}"
                    r"(?P<lib>UCX|UCC|TL_\w{1,20}|CL_\w{1,20})\s{1,8}ERROR\b")
PML_RE = re.compile(r"\[(?P<host>[^\s:\[\]]{1,255}):(?P<pid>\d{1,10})\]\s{1,4}\S{0,300}pml_ucx\.c:\d{1,6}\s{1,8}Error: ")
GATE = ("ssh: ", "RTE ", "daemon", "ERROR", "Error: ")  # a line holding none of these is none of the above


def launch_failure(body: str, file: str, lineno: int, text: str, rank: int | None) -> LaunchFailure | None:
    """The record of one line of the launcher's or the runtime's own failure, or None. ``body``: the line without
    a launcher's prefix; ``rank``: the rank that prefix gave."""
    if not any(w in body for w in GATE):
        return None
    tool, host, pid = None, None, None
    if "ssh: " in body and (m := SSH_RE.search(body)) is not None:
        tool, host = LaunchTool.SSH, m.group("host") or m.group("host2")
    elif ("RTE " in body or "daemon" in body) and MPI_RE.search(body):
        tool = LaunchTool.MPI
    elif "ERROR" in body and (u := UCX_RE.search(body)) is not None:
        tool = LaunchTool.UCX if u.group("lib") == "UCX" else LaunchTool.UCC
        host, pid = u.group("host"), int(u.group("pid"))
    elif "Error: " in body and (p := PML_RE.search(body)) is not None:
        tool, host, pid = LaunchTool.UCX, p.group("host"), int(p.group("pid"))
    if tool is None:
        return None
    return LaunchFailure(file, lineno, text, rank, None, None, None, tool, host, pid, body.strip()[:500])
