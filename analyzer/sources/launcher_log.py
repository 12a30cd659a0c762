"""The words of the MPI runtime, of ssh under it, and of UCX / UCC in a job's console (``records.LaunchFailure``).

A job launched with mpirun may fail before NCCL prints anything: ssh cannot reach a node (``ssh: connect to host
10.0.0.7 port 22: Connection refused``, ``ssh: Could not resolve hostname ...``), Open MPI's runtime cannot start or
loses its daemon on a node (ORTE's ``ORTE was unable to reliably start one or more daemons``, PRRTE's ``PRTE has lost
communication with a remote daemon``, ``A process or daemon was unable to complete a TCP connection``), or UCX / UCC
cannot share memory between the processes of a host (``[1718200311.44] [node07:40218:0] mm_posix.c:233 UCX ERROR
open(file_name=/proc/40219/fd/31 ...) failed``, ``tl_shm_team.c:617 TL_SHM ERROR Child failed to attach to shmseg``,
Open MPI's ``pml_ucx.c:419 Error: ucp_ep_create(proc=5) failed: Shared memory error``). Each such line is one record;
the knowledge base (``nccl/failures.toml``, areas launcher and container) says what it means.

Two launchers' words about how the job ended (``launcher_end``):

- DeepSpeed's launcher (``deepspeed/launcher/launch.py``, ``sigkill_handler``): when one of its local processes ends
  with a non-zero code it kills the others (``Killing subprocess 4711``) and prints ``[ERROR] [launch.py:N:
  sigkill_handler] ['python', '-u', 'train.py', '--local_rank=7', ...] exits with return code = -9``. The code is
  the first failed process's; the command it prints is the last one it built (its highest local rank), not that
  process's, so no rank is read from it. Only a signal's code (negative: -9 SIGKILL, -11 SIGSEGV) is taken
  (``LauncherExit``, rank unknown): a code of 1 is the process's own error exit and -6 (SIGABRT) PyTorch's watchdog
  aborting it after a timeout, which the ranks' own lines tell.
- pdsh's own Ctrl-C (``pdsh@host: interrupt (one more within 1 sec to abort)``, the prompt DeepSpeed's multi-node
  runner leaves on the console when the user interrupts it), and a terminal's echo of Ctrl-C on a line of its own
  (``^C``): the user stopped the job (``LauncherStopped``, SIGINT).
"""
from __future__ import annotations

import re

from .records import LauncherExit, LauncherStopped, LaunchFailure, LaunchTool, Rec

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


DS_EXIT_RE = re.compile(r"\bexits with return code = (?P<code>-\d{1,3})\s*$")
DS_HANDLER = ":sigkill_handler] "  # in the logger's head, which the line's reader strips off the body
PDSH_INTERRUPT_RE = re.compile(r"^pdsh@[\w.-]{1,255}: interrupt \(one more within \d{1,3} sec to abort\)")
# a terminal's echo of the user's Ctrl-C on a line of its own ("^C", "^C^C"): the user interrupted the job there
CTRL_C_RE = re.compile(r"^(?:\^C){1,8}\s*$")
END_GATE = ("exits with return code = -", "pdsh@", "^C")
ABORT = 6
SIGNALS = {1: "SIGHUP", 2: "SIGINT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV",
           15: "SIGTERM"}


def launcher_end(body: str, file: str, lineno: int, text: str) -> Rec | None:
    """DeepSpeed's launcher's report of a process killed by a signal, or pdsh's word of the user's interrupt (module
    docstring); None for any other line."""
    if not any(w in body for w in END_GATE):
        return None
    if DS_HANDLER in text and (d := DS_EXIT_RE.search(body)) is not None:
        code = int(d.group("code"))
        if code == -ABORT:
            return None  # SIGABRT: PyTorch's watchdog aborting the process after a timeout, an echo the ranks' lines tell
        name = SIGNALS.get(-code, f"signal {-code}")
        return LauncherExit(file, lineno, text, None, None, code, None, None, None,
                            f"Signal {-code} ({name}): DeepSpeed's launcher's return code {code}", False)
    if PDSH_INTERRUPT_RE.search(body.lstrip("^C")) is not None or CTRL_C_RE.match(body.strip()) is not None:
        return LauncherStopped(file, lineno, text, None, None, None, None, "SIGINT")
    return None
