"""Round seven's cases (tests/data/classes7/c7b_*): a verdict wherever the text shows one. NCCL's RAS report (ranks of
a communicator that launched different numbers of one operation: a hang, the ranks behind its culprits when the report
names them; processes it considers dead: a crash); a native backtrace of a thread parked inside NCCL (teardown, init,
a collective's wait, connection set-up: a hang); a serving start-up whose log ends at its GPU peer-to-peer check (a
possible hang); DeepSpeed's launcher's report of a process killed by a signal (``exits with return code = -9``: a crash
naming no rank) and pdsh's word of the user's interrupt (a job stopped while it made no progress: a hang)."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

from ncclscope.sources.launcher_log import launcher_end
from ncclscope.sources.records import LauncherExit, LauncherStopped

SET = CaseSet(DATA / "classes7")
MINE = SET.names("c7b_")

DS_HEAD = "[2024-05-14 09:15:04,970] [ERROR] [launch.py:325:sigkill_handler] "
DS_BODY = "['/usr/bin/python3', '-u', 'train.py', '--local_rank=3'] exits with return code = {code}"


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def test_deepspeed_signal_exit_names_no_rank():
    body = DS_BODY.format(code=-9)
    rec = launcher_end(body, "f", 1, DS_HEAD + body)
    assert isinstance(rec, LauncherExit)
    assert rec.exitcode == -9 and rec.rank is None and rec.local_rank is None  # the printed command is the last built
    assert rec.traceback is not None and "SIGKILL" in rec.traceback


@pytest.mark.parametrize("code", [1, -6])
def test_deepspeed_own_error_and_watchdog_abort_are_left_to_the_ranks_lines(code):
    body = DS_BODY.format(code=code)
    assert launcher_end(body, "f", 1, DS_HEAD + body) is None


def test_return_code_outside_deepspeeds_handler_is_not_read():
    body = DS_BODY.format(code=-9)
    assert launcher_end(body, "f", 1, "[2024-05-14 09:15:04,970] [ERROR] [other.py:12:main] " + body) is None


def test_pdsh_interrupt_is_the_users_ctrl_c_and_its_other_lines_are_not():
    rec = launcher_end("^Cpdsh@n11: interrupt (one more within 1 sec to abort)", "f", 1,
                       "^Cpdsh@n11: interrupt (one more within 1 sec to abort)")
    assert isinstance(rec, LauncherStopped) and rec.signal == "SIGINT"
    for line in ("pdsh@n11: n12: ssh exited with exit code 1", "pdsh@n11: n11: command in progress"):
        assert launcher_end(line, "f", 1, line) is None


# --- NCCL's RAS report (sources.ras, rules.ras) ---------------------------------------------------------------------

RAS_HEAD = """NCCL version 2.26.2 compiled with CUDA 12.6
Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         2         4         8         8   RUNNING  MISMATCH
"""


def _ras(body: str) -> list:
    from ncclscope.sources.ras import parse_ras_text
    return parse_ras_text(RAS_HEAD + body, "ras.txt")


def _views(comms: list) -> list:
    from ncclscope.rules.ras import RasView
    return [RasView(c.comm_hash, tuple(c.groups), tuple(c.dead_ranks), c.dead_processes) for c in comms]


def test_ras_groups_keep_the_listed_ranks_with_their_count_and_the_table_gives_the_size():
    (c,) = _ras("#0-0 (00d14ac3b95e20f1) MISMATCH\n  Communicator ranks have different AllGather operation counts\n"
                "  6 ranks have launched up to operation 40\n  2 ranks have launched up to operation 41\n"
                "  Rank 4 -- GPU 0 managed by process 11 on node 10.0.0.2\n"
                "  Rank 5 -- GPU 1 managed by process 12 on node 10.0.0.2\n")
    assert c.comm_hash == "0xd14ac3b95e20f1" and c.nranks == 8 and c.status == "RUNNING"
    assert c.groups == [("AllGather", 40, 6, ()), ("AllGather", 41, 2, (4, 5))]
    assert c.counts == {4: {"AllGather": 41}, 5: {"AllGather": 41}}


def test_ras_ranks_listed_ahead_are_no_culprits_and_unnamed_ranks_behind_give_none():
    from ncclscope.rules.ras import read_ras
    comms = _ras("#0-0 (0a) MISMATCH\n  Communicator ranks have different AllGather operation counts\n"
                 "  6 ranks have launched up to operation 40\n  2 ranks have launched up to operation 41\n"
                 "  Rank 4 -- GPU 0 managed by process 11 on node 10.0.0.2\n"
                 "  Rank 5 -- GPU 1 managed by process 12 on node 10.0.0.2\n")
    r = read_ras(_views(comms))
    assert r is not None and not r.crash and r.culprits == () and r.ahead == (41, 2, (4, 5))
    assert r.level == "possible"  # one report is a snapshot
    assert read_ras(_views(comms * 2)).level == "likely"  # the same counts in two reports


def test_ras_one_rank_behind_named_is_the_culprit_in_both_line_formats():
    from ncclscope.rules.ras import read_ras
    for head in ("different ReduceScatter operation counts", "different collective operation counts"):
        comms = _ras(f"#0-0 (0b) MISMATCH\n  Communicator ranks have {head}\n"
                     "  7 ranks have launched up to operation 9\n"
                     "  Rank 3 has launched up to operation 8 -- GPU 3 managed by process 13 on node 10.0.0.1\n")
        r = read_ras(_views(comms))
        assert r is not None and r.culprits == (3,), head


def test_ras_status_lines_are_no_counts_and_an_ok_report_says_nothing():
    from ncclscope.rules.ras import read_ras
    comms = _ras("#0-0 (0c) MISMATCH\n  Communicator ranks have different status\n  7 ranks have status RUNNING\n"
                 "  Rank 2 has status ABORT -- GPU 2 managed by process 12 on node 10.0.0.1\n")
    assert comms[0].groups == [] and comms[0].counts == {}
    assert read_ras(_views(comms)) is None
    assert _ras("") == []  # a table of RUNNING / OK communicators names none


def test_ras_dead_process_is_a_crash_of_the_rank_the_report_places_in_it():
    from ncclscope.rules.ras import read_ras
    comms = _ras("Errors\n======\n\nDEAD\n  1 job process is considered dead (unreachable via the RAS network)\n"
                 "  Process 77 on node 10.0.0.9 managing GPU 2\n\n#0-0 (0d) INCOMPLETE\n"
                 "  Missing communicator data from 1 rank\n  Rank 6 -- GPU 2 managed by process 77 on node 10.0.0.9\n")
    assert comms[0].missing_ranks == [6] and comms[0].dead_ranks == [6] and comms[0].dead_processes == 1
    r = read_ras(_views(comms))
    assert r is not None and r.crash and r.culprits == (6,)


def test_ras_hash_is_written_as_nccl_writes_a_comm_id():
    from ncclscope.sources.ras import comm_id
    assert comm_id("07d14ac3b95e20f1") == comm_id("0x7d14ac3b95e20f1") == "0x7d14ac3b95e20f1"


# --- native backtraces (sources.native_stack) -----------------------------------------------------------------------


def _parked(lines: list[str]) -> list:
    from ncclscope.sources.native_stack import NativeStackReader
    reader = NativeStackReader("bt.txt")
    return [r for i, line in enumerate(lines, 1) if (r := reader.read(i, line, line, None)) is not None]


def test_native_frames_inside_nccls_teardown_init_or_connect_are_a_parked_thread():
    got = _parked([
        "Thread 2 (Thread 0x7f (LWP 12) \"python\"):",
        "#0  0x00007f in poll () from /lib/libc.so.6",
        "#1  0x00007f in ncclProxyService(void*) () from /usr/lib/libnccl.so.2",  # in every live process
        "Thread 1 (Thread 0x7e (LWP 11) \"python\"):",
        "#2  0x00007f in commReclaim(ncclComm*) () from /usr/lib/libnccl.so.2",
        "#3  0x00007f in ncclCommDestroy () from /usr/lib/libnccl.so.2",  # the same thread: one record
        "  thread #3, name = 'python', stop reason = signal SIGSTOP",
        "    frame #4: 0x00007f libnccl.so.2`bootstrapAllGather(void*, void*, int) + 120",
        "Thread 4711 (idle): \"MainThread\"",
        "    ncclProxyCallBlocking (libnccl.so.2)",
    ])
    assert [(r.framework, r.what) for r in got] == [("gdb", "native_teardown"), ("lldb", "native_init"),
                                                     ("py-spy", "native_connect")]


def test_a_backtrace_of_a_process_that_died_is_no_stall():
    assert _parked(["Program terminated with signal SIGSEGV, Segmentation fault.",
                    "#0  0x00007f in ncclCommAbort () from /usr/lib/libnccl.so.2"]) == []
    assert _parked(["* thread #1, name = 'python', stop reason = signal SIGSEGV",
                    "    frame #0: 0x00007f libnccl.so.2`ncclCommAbort + 12"]) == []
