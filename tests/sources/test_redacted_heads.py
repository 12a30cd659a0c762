"""Heads are metadata: an NCCL line whose head a poster redacted (letters or a placeholder for the pid, the tid or
the host), cut or dropped is read for its message all the same (``lines.REDACTED_HEAD_RE``, ``nccl_log._other_head``).
The cases in tests/data/classes/ were read as 'nothing readable' / 'unknown' before."""
from __future__ import annotations

import pytest
from class_cases import check
from ncclscope.sources import records as R
from ncclscope.sources.lines import REDACTED_PID_BASE, hidden_id, starts_a_line
from ncclscope.sources.nccl_log import parse_nccl_line


@pytest.mark.parametrize("line, kind, fields", [
    ("gpu7:XXXX:YYYY [0] NCCL INFO Using network Socket", R.NcclNet, {"host": "gpu7", "value": "Socket"}),
    ("h:***:*** [1] NCCL INFO NCCL_P2P_LEVEL set by environment to NVL", R.NcclEnv, {"name": "NCCL_P2P_LEVEL"}),
    ("node:<pid>:<tid> [0] NCCL WARN Cuda failure 'out of memory'", R.NcclWarn, {"host": "node"}),
    ("<hostname>:1201:1288 [0] NCCL INFO comm 0x55d0 rank 0 nranks 2 cudaDev 0 busId 17000 - Init COMPLETE", R.NcclInit,
     {"host": "<hostname>", "pid": 1201, "rank": 0, "phase": "COMPLETE"}),
    ("[REDACTED]:41:41 [3] NCCL INFO Using network IB", R.NcclNet, {"host": "[REDACTED]", "pid": 41}),
    (("<host>:<pid>:<tid> [2] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.1<1234> failed : "
     "Connection refused"), R.NcclWarn, {"host": "<host>", "source": "misc/socket.cc:484"}),
    ("[rank3]:xxx:xxx:xxx [3] NCCL INFO comm 0x55 rank 3 nranks 4 cudaDev 3 busId 1000 - Init COMPLETE", R.NcclInit,
     {"host": "xxx", "rank": 3}),
])
def test_a_redacted_head_keeps_its_message(line, kind, fields):
    rec = parse_nccl_line(line, "x.log", 3)
    assert type(rec) is kind, rec
    for k, v in fields.items():
        assert getattr(rec, k) == v, (k, getattr(rec, k))


def test_hidden_pids_stand_for_processes():
    """One token on two devices is two processes; two tokens are two; a kept number is itself."""
    a, b = parse_nccl_line("h:XXXX:XXXX [0] NCCL INFO Using network IB"), parse_nccl_line("h:XXXX:XXXX [1] NCCL INFO Using network IB")
    assert a is not None and b is not None and a.pid != b.pid and min(a.pid, b.pid) >= REDACTED_PID_BASE
    assert hidden_id("XXXX", 0) != hidden_id("YYYY", 0) and hidden_id("4411", 3) == 4411
    assert hidden_id("XXXX", 2) == hidden_id("XXXX", 2)


@pytest.mark.parametrize("line", ["10:20:30 INFO hello", "Error:abc:def [0] something", "INFO:root:XXXX:YYYY started"])
def test_no_clock_or_application_text_is_taken_for_a_redacted_head(line):
    assert parse_nccl_line(line) is None


def test_a_line_after_a_placeholder_or_an_empty_host_starts_a_line_of_its_own():
    """A wrapped line is never continued by another process's head, cut or redacted: it starts a line."""
    assert starts_a_line(":30114:30596 [0] NCCL INFO Launch mode Parallel")
    assert starts_a_line("gpu7:XXXX:YYYY [0] NCCL INFO Connected all rings")
    assert not starts_a_line("-> 1[1] via P2P/IPC")


@pytest.mark.parametrize("name", ["redacted_pids_init_p2p", "placeholder_host_socket_chain", "cut_heads_oom_in_init"])
def test_cases_with_redacted_or_cut_heads(name):
    a = check(name)
    assert a.run.communicators, "the communicator is read from lines whose heads were hidden or cut"
