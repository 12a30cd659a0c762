"""The MPI runtime's, ssh's, UCX's and UCC's own words (sources.launcher_log), read beside PyTorch's lines: logs that
hold nothing else are readable, and judged a configuration error of the launch or the containers (the knowledge base's
launcher and container entries), not refused as nothing readable (tests/data/classes3/)."""
from __future__ import annotations

import pytest
from classes3_cases import check
from ncclscope.ingest.formats import sniff
from ncclscope.model import Format
from ncclscope.nccl.failures import classify
from ncclscope.sources.launcher_log import launch_failure
from ncclscope.sources.records import LaunchTool
from ncclscope.sources.torch_log import parse_torch_lines


@pytest.mark.parametrize("line,tool,host,pid,entry", [
    ("ssh: connect to host 10.20.4.17 port 22: Connection refused", LaunchTool.SSH, "10.20.4.17", None,
     "launcher-ssh-failed"),
    ("ssh: Could not resolve hostname worker-3.jobs.svc: Name or service not known", LaunchTool.SSH,
     "worker-3.jobs.svc", None, "launcher-ssh-failed"),
    ("ORTE was unable to reliably start one or more daemons.", LaunchTool.MPI, None, None, "launcher-mpi-daemons"),
    ("PRTE has lost communication with a remote daemon.", LaunchTool.MPI, None, None, "launcher-mpi-daemons"),
    ("A process or daemon was unable to complete a TCP connection", LaunchTool.MPI, None, None, "launcher-mpi-daemons"),
    (("[1718200311.442104] [node7:40218:0]       mm_posix.c:233  UCX  ERROR open(file_name=/proc/40219/fd/31 "
      "flags=0x0) failed: Permission denied"), LaunchTool.UCX, "node7", 40218, "container-ucx-shm"),
    (("[1718200311.099229] [node7:1382 :0]     tl_shm_team.c:617  TL_SHM ERROR Child failed to attach to shmseg, "
      "errno: Invalid argument"), LaunchTool.UCC, "node7", 1382, "container-ucc-shm"),
    ("[node7:40219] pml_ucx.c:424  Error: ucp_ep_create(proc=0) failed: Shared memory error", LaunchTool.UCX, "node7",
     40219, "container-ucx-shm"),
])
def test_a_launch_or_runtime_failure_is_read(line, tool, host, pid, entry):
    rec = launch_failure(line, "f", 3, line, None)
    assert rec is not None and (rec.tool, rec.host, rec.pid) == (tool, host, pid)
    assert classify(rec.message).id == entry


@pytest.mark.parametrize("line", [
    "ssh into the login node first",
    "[E1020 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout",
    "Primary job  terminated normally, but 1 process returned",
    "ERROR: the daemon is fine",
])
def test_other_lines_are_not_launch_failures(line):
    assert launch_failure(line, "f", 1, line, None) is None


def test_a_launcher_line_under_a_rank_tag_keeps_the_rank():
    recs = list(parse_torch_lines([(1, "[1,3]<stderr>:ssh: connect to host gpu-w1 port 22: Connection refused")], "f"))
    assert [(type(r).__name__, r.rank) for r in recs] == [("LaunchFailure", 3)]


@pytest.mark.parametrize("case", ["mpirun_ssh_refused_orte", "prrte_lost_daemon_ssh", "ucx_shm_between_containers"])
def test_logs_of_the_launcher_alone_are_judged(case):
    a = check(case)
    assert all(f.data.get("culprits") == [] for f in a.findings if f.verdict is not None)


@pytest.mark.parametrize("head", [
    b"\x00\x00\x00[ 1843.3] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n",
    b"\x00\x00\x00ORTE was unable to reliably start one or more daemons.\n",
    b"\x00\x00\x00Current thread 0x00007f2c51b3a740 (most recent call first):\n",
])
def test_other_tools_lines_make_a_damaged_head_a_log(head):
    """A head with NUL bytes is a log when it holds a line only these tools print (ingest.formats.LOG_EVIDENCE)."""
    assert sniff(head, "x") is Format.LOG
