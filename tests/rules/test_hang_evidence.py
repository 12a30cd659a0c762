"""Hangs told by what the user has: a rank's store wait for the unique id its root never published, PyTorch's
heartbeat monitor on a stuck watchdog, an nccl-tests run whose first row never came, and a culprit's failure
printed after the others' timeouts (an echo, not the cause). Each in the shape a pasted log has; each also
with the near miss that must not become a hang."""
from __future__ import annotations

from pathlib import Path

import pytest
from ncclscope.analysis import analyze_paths
from ncclscope.rules.hang import after_stall, no_rows_after_init, unique_id_wait


def _judge(tmp_path: Path, name: str, text: str):
    d = tmp_path / "in"
    d.mkdir(exist_ok=True)
    (d / name).write_text(text)
    return analyze_paths([d / name], cache=False).decision


UNIQUE_OLD = ("RuntimeError: [1] is setting up NCCL communicator and retreiving ncclUniqueId from [0] via c10d key-value "
              "store by key '0', but store->get('0') got error: Timeout waiting for key: default_pg/0/0 after 1800000 ms")
UNIQUE_NEW = ("torch.distributed.DistBackendError: [3] is setting up NCCL communicator and retrieving ncclUniqueId from [0] "
              "via c10d key-value store by key '0', but store->get('0') got error: wait timeout after 600000ms, keys: "
              "/default_pg/0//cuda//0")


@pytest.mark.parametrize("text, waiter, root, default", [
    (UNIQUE_OLD, 1, 0, True),
    (UNIQUE_NEW, 3, 0, True),
    (UNIQUE_NEW.replace("/default_pg/0//cuda//0", "/pg_2/0//cuda//0"), 3, 0, False),
    (UNIQUE_OLD.replace("Timeout waiting for key: default_pg/0/0 after 1800000 ms", "Socket Timeout"), 1, 0, False),
])
def test_unique_id_wait_reads_both_spellings(text, waiter, root, default):
    w = unique_id_wait(text)
    assert w is not None and (w.waiter, w.root, w.default_group) == (waiter, root, default)


def test_a_store_that_went_away_is_no_wait():
    """The store's host reset the connection: the root's process is gone (a crash), not late."""
    assert unique_id_wait(UNIQUE_OLD.replace("Timeout waiting for key: default_pg/0/0 after 1800000 ms",
                                             "Connection reset by peer")) is None
    assert unique_id_wait("RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191, unhandled system error") is None


def test_unique_id_timeout_is_a_hang_of_the_root(tmp_path):
    text = "".join(f"[default3]:[rank3]: {ln}\n" for ln in (
        "Traceback (most recent call last):",
        '  File "/opt/train.py", line 41, in <module>',
        "    dist.broadcast(t, src=0)",
        UNIQUE_NEW,
        "Exception raised from doWait at /opt/pytorch/torch/csrc/distributed/c10d/TCPStore.cpp:578 (most recent call first):"))
    d = _judge(tmp_path, "train.log", text)
    assert (d.verdict.value, d.culprit_ranks) == ("hang", (0,)), d.headline
    assert d.certainty == "likely" and "unique id" in d.headline


def test_heartbeat_monitor_on_every_rank_is_a_hang_with_no_culprit(tmp_path):
    text = "".join(
        f"[rank{r}]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank {r}] Heartbeat monitor timed out! Process will be terminated "
        f"after dumping debug info. workMetaList_.size()={40 + r}\n" for r in range(4))
    d = _judge(tmp_path, "train.log", text)
    assert (d.verdict.value, d.culprit_ranks, d.stuck) == ("hang", (), None), d.headline
    assert d.certainty == "likely" and "watchdog" in d.headline
    assert {s for _, s, _ in d.states} == {"stuck_in_collective"}


def test_stuck_watchdog_at_teardown_after_the_work_is_a_hang(tmp_path):
    text = ("[  PASSED  ] 12 tests.\n" + "".join(
        f"[E1003 07:41:20.518330671 ProcessGroupNCCL.cpp:1487] [PG ID 0 PG GUID  Rank {r}] ProcessGroupNCCL's watchdog "
        "got stuck for 10 seconds without making progress in monitoring enqueued collectives.\n" for r in (0, 1)))
    d = _judge(tmp_path, "mpirun.log", text)
    assert d.verdict.value == "hang" and d.culprit_ranks == ()


def test_a_crash_before_a_stuck_watchdog_stays_the_crash(tmp_path):
    text = ("[rank1]: Traceback (most recent call last):\n[rank1]:   File \"/opt/train.py\", line 9, in <module>\n"
            "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
            "[rank0]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 0] Heartbeat monitor timed out! Process will be terminated "
            "after dumping debug info. workMetaList_.size()=3\n")
    d = _judge(tmp_path, "train.log", text)
    assert (d.verdict.value, d.culprit_ranks) == ("crash", (1,)), d.headline


HEADER = """# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#
# Using devices
#   Rank  0 Pid   4410 on    bench07 device  0 [0x17] NVIDIA L40S
#   Rank  1 Pid   4410 on    bench07 device  1 [0x31] NVIDIA L40S
bench07:4410:4410 [0] NCCL INFO NCCL version 2.19.3+cuda12.3
bench07:4410:4421 [0] NCCL INFO Channel 00/02 :    0   1
bench07:4410:4421 [0] NCCL INFO Channel 00/0 : 0[17000] -> 1[31000] via P2P/IPC
bench07:4410:4422 [1] NCCL INFO Channel 00/0 : 1[31000] -> 0[17000] via P2P/IPC
bench07:4410:4421 [0] NCCL INFO comm 0x55e1c8a0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 17000 commId 0x9e2d41c07f3a55b1 - Init COMPLETE
bench07:4410:4422 [1] NCCL INFO comm 0x55e1d920 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 31000 commId 0x9e2d41c07f3a55b1 - Init COMPLETE
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
"""
ROW = "           8             2     float     sum      -1    10.21    0.00    0.00      0    10.02    0.00    0.00      0\n"


def test_nccl_tests_with_no_row_after_init_is_a_possible_hang(tmp_path):
    d = _judge(tmp_path, "all_reduce.txt", HEADER)
    assert (d.verdict.value, d.culprit_ranks) == ("hang", ()), d.headline
    assert d.certainty == "possible" and "no result row" in d.headline


def test_nccl_tests_with_rows_and_their_summary_is_no_hang(tmp_path):
    """A sweep whose rows are followed by its summary ran to its end: not a hang."""
    d = _judge(tmp_path, "all_reduce.txt", HEADER + ROW + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.0012\n")
    assert d.verdict.value != "hang", d.headline


def test_nccl_tests_whose_sweep_stops_at_a_row_is_a_possible_hang(tmp_path):
    """A sweep whose output ends at a result row, nothing after it (no summary, no error, no exit): the next size's
    collective never completed (heldout14's NVIDIA/nccl#1136 shape), possible, no culprit."""
    d = _judge(tmp_path, "all_reduce.txt", HEADER + ROW)
    assert (d.verdict.value, d.culprit_ranks, d.certainty) == ("hang", (), "possible"), d.headline
    assert "stops after its 8-byte row" in d.headline


def test_nccl_tests_that_stop_before_init_completes_are_no_first_collective_hang(tmp_path):
    head = "".join(ln + "\n" for ln in HEADER.splitlines() if "Init COMPLETE" not in ln)
    d = _judge(tmp_path, "all_reduce.txt", head)
    assert d.verdict.value != "hang" or "no result row" not in d.headline, d.headline


def test_no_rows_after_init_rule():
    assert no_rows_after_init(["a", "b"], ["a"], True, False, False) == ("b",)
    assert no_rows_after_init(["a"], [], True, True, False) == ()  # something failed: its own story
    assert no_rows_after_init(["a"], [], True, False, True) == ()  # the end is known
    assert no_rows_after_init(["a"], [], False, False, False) == ()  # still in init: not the first collective


def test_after_stall_by_time_then_by_line():
    assert after_stall(20.0, ("f", 1), 10.0, ("f", 5))
    assert not after_stall(10.5, ("f", 9), 10.0, ("f", 5))  # within the skew
    assert after_stall(None, ("f", 9), None, ("f", 5))
    assert not after_stall(None, ("g", 9), None, ("f", 5))  # another file: order unknown
    assert not after_stall(None, ("f", 2), None, ("f", 5))
    assert not after_stall(None, ("f", 9), None, None)


def test_a_culprit_failure_after_the_others_timeouts_is_no_death_first(tmp_path):
    """The OOM rank 0 prints after ranks 1-3 timed out in broadcast #77 does not make the hang a death of
    rank 0: the hang finding stays a hang of the rank that never joined."""
    lines = []
    for r in (1, 2, 3):
        lines.append(f"[rank{r}]:[E513 07:41:10.2041{r}8372 ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective "
                     "operation timeout: WorkNCCL(SeqNum=77, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) "
                     "ran for 1800044 milliseconds before timing out.")
    lines.append("[rank1]:[E513 07:41:10.204402117 ProcessGroupNCCL.cpp:1664] [PG 0 Rank 1] Exception (either an error or "
                 "timeout) detected by watchdog at work: 77, last enqueued NCCL work: 77, last completed NCCL work: 76.")
    lines += ["[rank0]: Traceback (most recent call last):", '[rank0]:   File "/opt/save.py", line 88, in consolidate',
              "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate more than 1EB memory."]
    d = tmp_path / "in"
    d.mkdir()
    (d / "train.log").write_text("\n".join(lines) + "\n")
    a = analyze_paths([d / "train.log"], cache=False)
    hang = [f for f in a.findings if f.kind == "hang"]
    assert hang and hang[0].verdict.value == "hang" and hang[0].ranks == (0,), [f.message for f in hang]
    assert 2 in hang[0].data["waiting"] and 3 in hang[0].data["waiting"]  # their own timeouts put them in #77


def test_ends_after_init_rule():
    from ncclscope.rules.hang import ends_after_init

    assert ends_after_init([0, 0], True, False, False, False, True).level == "possible"
    assert ends_after_init([0, 3], True, False, False, False, True) is None  # training lines after init
    assert ends_after_init([], True, False, False, False, True) is None  # no log end known
    assert ends_after_init([0], False, False, False, False, True) is None  # init not complete: init_stall's
    assert ends_after_init([0], True, True, False, False, True) is None  # collectives recorded
    assert ends_after_init([0], True, False, True, False, True) is None  # something failed
    assert ends_after_init([0], True, False, False, True, True) is None  # the end is known
    assert ends_after_init([0], True, False, False, False, False) is None  # a run folder ncclscope wrote


INIT_ONLY = """slurm-n0:3311:3311 [0] NCCL INFO NCCL version 2.7.8+cuda10.2
slurm-n0:3311:3402 [0] NCCL INFO Channel 00/02 :    0   1
slurm-n0:3311:3402 [0] NCCL INFO comm 0x7f2c64001060 rank 0 nranks 2 cudaDev 0 busId 4000 - Init COMPLETE
slurm-n1:2870:2951 [1] NCCL INFO comm 0x7fb0dc001060 rank 1 nranks 2 cudaDev 1 busId 5000 - Init COMPLETE
slurm-n0:3311:3311 [0] NCCL INFO Launch mode Parallel
"""


@pytest.mark.parametrize("after, verdict", [(0, "hang"), (3, "healthy")])
def test_log_that_ends_after_init_is_a_possible_hang_only_with_nothing_after(tmp_path, after, verdict):
    """The log reader's file_end event says how many application lines follow the last NCCL line: none, a
    possible hang after init; some (a training loop printing), no claim."""
    from dataclasses import replace

    from ncclscope.detectors import run_detectors
    from ncclscope.model import Evidence, LogEvent
    from ncclscope.verdict import decide

    (tmp_path / "slurm.out").write_text(INIT_ONLY + "".join(f"step {i} loss 2.1\n" for i in range(after)))
    run = analyze_paths([tmp_path / "slurm.out"], cache=False).run
    end = LogEvent("file_end", None, "", Evidence("slurm.out", 5 + after, ""), None,
                   {"last_line": 5 + after, "last_nccl_line": 5, "text_after_nccl": after})
    run = replace(run, events=[e for e in run.events if e.kind != "file_end"] + [end], memo={})
    d = decide(run, run_detectors(run))
    assert d.verdict.value == verdict, d.headline
    if verdict == "hang":
        assert d.certainty == "possible" and d.culprit_ranks == () and "right after NCCL's init" in d.headline


def test_culprit_of_a_hang_with_no_known_collective_never_joined(tmp_path):
    """The store wait names rank 0 and no collective number: rank 0 is never_joined, the waiter is stuck."""
    text = f"[rank1]: {UNIQUE_OLD}\n"
    d = _judge(tmp_path, "train.log", text)
    states = {r: s for r, s, _ in d.states}
    assert states.get(0) == "never_joined" and states.get(1) == "stuck_in_collective", d.states


def _barrier_lines(ranks, world, count, rounds=2):
    return "".join(
        f"INFO:root:Waiting in store based barrier to initialize process group for rank: {r}, key: "
        f"store_based_barrier_key:1 (world_size={world}, worker_count={count}, timeout=0:30:00)\n"
        for _ in range(rounds) for r in ranks)


def test_store_barrier_that_one_rank_never_reached_names_it(tmp_path):
    d = _judge(tmp_path, "ddp.log", _barrier_lines([0, 1, 3], 4, 3))
    assert (d.verdict.value, d.culprit_ranks, d.certainty) == ("hang", (2,), "likely"), d.headline


def test_store_barrier_one_round_of_waits_is_every_start(tmp_path):
    """Each rank waits once while the last ones arrive: a normal start-up, no hang."""
    d = _judge(tmp_path, "ddp.log", _barrier_lines([0, 1, 3], 4, 3, rounds=1))
    assert d.verdict.value != "hang", d.headline


def test_store_barrier_missing_ranks_not_pinned_down_names_nobody(tmp_path):
    """Only rank 0's lines: 5 of 8 arrived, which 3 did not is not shown."""
    d = _judge(tmp_path, "ddp.log", _barrier_lines([0], 8, 5, rounds=3))
    assert (d.verdict.value, d.culprit_ranks) == ("hang", ()), d.headline


def test_barrier_stall_rule():
    from ncclscope.rules.hang import barrier_stall

    assert barrier_stall([(0, 4, 4, False), (0, 4, 4, False)]) is None  # everyone arrived
    assert barrier_stall([(0, 4, 3, True)]).level == "confirmed"
    st = barrier_stall([(0, 4, 2, False), (1, 4, 2, False), (0, 4, 2, False)])
    assert st.level == "likely" and st.culprits == (2, 3)
    assert barrier_stall([(0, 1 << 30, 2, True)]) is None  # a world no one believes: nothing sized by it


def test_status_certainty_and_lowest_at_stall_rules():
    from ncclscope.rules.hang import lowest_at_stall, status_certainty

    assert status_certainty([3], {0: "fr", 3: "fr"})["level"] == "confirmed"
    assert status_certainty([3], {0: "fr", 1: "watchdog"})["level"] == "likely"
    assert status_certainty([3], {0: "watchdog_timeout", 1: "watchdog_timeout"})["level"] == "possible"
    assert lowest_at_stall({0: 9, 1: 9, 2: 7, 3: 7}) == (2, 3)
    assert lowest_at_stall({0: 9, 1: 9}) == ()


def test_store_barrier_with_more_workers_than_the_world_is_the_launchs_config_error(tmp_path):
    """world_size=4, worker_count=8: the count never equals the world; nobody is missing, too many came: the launch
    starts more processes than the world it declares (detectors.launch._too_many_workers)."""
    d = _judge(tmp_path, "train.log", _barrier_lines([0], 4, 8, rounds=4))
    assert (d.verdict.value, d.culprit_ranks) == ("config_error", ()), d.headline
    assert "more processes than the world" in d.headline


def test_barrier_stall_with_a_huge_claimed_world_lists_nobody():
    from ncclscope.rules.hang import barrier_stall

    st = barrier_stall([(0, 1 << 19, 5, True)])
    assert st is not None and st.suspects == () and st.culprits == ()


def test_nccl_2_3_log_that_ends_after_init_with_no_init_phase_lines(tmp_path):
    """NCCL 2.3 prints no Init START / COMPLETE: its communicator's "comm 0x.. rank N nranks M" line is init's
    end; a log that stops after its rings is the same possible hang after init."""
    from dataclasses import replace

    from ncclscope.detectors import run_detectors
    from ncclscope.model import Evidence, LogEvent
    from ncclscope.verdict import decide

    text = ("NCCL version 2.3.5+cuda9.0\n"
            "dgx-b12:51203:51203 [0] NCCL INFO rank 0 nranks 2\n"
            "dgx-b12:51205:51205 [1] NCCL INFO rank 1 nranks 2\n"
            "dgx-b12:51203:51316 [0] NCCL INFO comm 0x7f3c9005a260 rank 0 nranks 2\n"
            "dgx-b12:51205:51349 [1] NCCL INFO comm 0x7fa2e805a260 rank 1 nranks 2\n"
            "dgx-b12:51203:51316 [0] NCCL INFO Ring 00 : 0[0] -> 1[1] via P2P/IPC\n"
            "dgx-b12:51203:51316 [0] NCCL INFO Launch mode Parallel\n")
    (tmp_path / "ddp.log").write_text(text)
    run = analyze_paths([tmp_path / "ddp.log"], cache=False).run
    end = LogEvent("file_end", None, "", Evidence("ddp.log", 7, ""), None,
                   {"last_line": 7, "last_nccl_line": 7, "text_after_nccl": 0})
    run = replace(run, events=[e for e in run.events if e.kind != "file_end"] + [end], memo={})
    d = decide(run, run_detectors(run))
    assert (d.verdict.value, d.certainty) == ("hang", "possible"), d.headline


def test_nccl_tests_whose_rows_are_not_read_but_that_checked_out_is_no_hang(tmp_path):
    """Rows in a shape the table reader does not take, then the run's own summary: it finished."""
    odd = "           8             2     float     sum      -1    10.21    0.00    0.00    N/A?   10.02 x\n"
    d = _judge(tmp_path, "all_reduce.txt", HEADER + odd + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.0\n")
    assert d.verdict.value != "hang", d.headline


SETUP_25 = """lab:7402:7463 [0] NCCL INFO Bootstrap : Using [0]enp5s0:192.168.10.40<0>
lab:7402:7463 [0] NCCL INFO NET/Socket : Using [0]enp5s0:192.168.10.40<0>
NCCL version 2.5.7+cuda10.1
lab:7402:7559 [0] NCCL INFO Setting affinity for GPU 0 to 3f
lab:7402:7559 [0] NCCL INFO Channel 00 :    0   1
lab:7402:7559 [0] NCCL INFO Ring 00 : 0[1000] -> 1[2000] via P2P/direct pointer
lab:7402:7560 [1] NCCL INFO Ring 00 : 1[2000] -> 0[1000] via P2P/direct pointer
"""


@pytest.mark.parametrize("tail, verdict", [("", "hang"), ("Epoch 1/10 - loss 0.412\n", "not hang")])
def test_log_that_ends_inside_nccl_setup(tmp_path, tail, verdict):
    """NCCL 2.5 prints a communicator only at Init COMPLETE: a log that stops at its ring lines is a possible
    hang in init; an application line after them says init went on."""
    d = _judge(tmp_path, "notebook.log", SETUP_25 + tail)
    if verdict == "hang":
        assert (d.verdict.value, d.certainty, d.culprit_ranks) == ("hang", "possible", ()), d.headline
        assert "set-up" in d.headline
    else:
        assert d.verdict.value != "hang", d.headline


def test_ends_in_setup_rule():
    from ncclscope.rules.hang import ends_in_setup

    assert ends_in_setup([0], True, False, False, False, False, True).level == "possible"
    assert ends_in_setup([0], True, True, False, False, False, True) is None  # a communicator: ends_after_init's
    assert ends_in_setup([0], False, False, False, False, False, True) is None  # no NCCL process at all
    assert ends_in_setup([2], True, False, False, False, False, True) is None
    assert ends_in_setup([0], True, False, False, False, True, True) is None


def _host_job(host: str, pid: int, comm_id: str, nnodes: int = 1) -> str:
    return "".join(
        f"{host}:{pid}:{pid + 13 + r} [{r}] NCCL INFO comm 0x55c8{r:02x}a9d00 rank {r} nRanks 4 nNodes {nnodes} "
        f"localRanks 4 localRank {r} MNNVL 0\n"
        f"{host}:{pid}:{pid + 13 + r} [{r}] NCCL INFO ncclCommInitAll comm 0x55c8{r:02x}a9d00 rank {r} nranks 4 "
        f"cudaDev {r} nvmlDev {r} busId {24 + r:x}000 commId {comm_id} - Init COMPLETE\n" for r in range(4))


def test_one_launch_that_ran_a_single_node_job_per_host_is_a_config_error(tmp_path):
    """mpirun over two hosts of an nccl-tests built without MPI=1: each host's 4 ranks are a job of their own."""
    text = _host_job("hx21", 9012, "0x2b7e45d1c09a8f33") + _host_job("hx22", 7741, "0x90d1f3a6e27c4b18")
    d = _judge(tmp_path, "mpirun.log", text)
    assert (d.verdict.value, d.culprit_ranks) == ("config_error", ()), d.headline
    assert "each host ran a job of its own" in d.headline


def test_two_runs_in_two_files_stay_a_mix(tmp_path):
    """The same two single-node jobs, but in two files (a folder holding two runs): no verdict for a mix."""
    d = tmp_path / "in"
    d.mkdir()
    (d / "a.log").write_text(_host_job("hx21", 9012, "0x2b7e45d1c09a8f33"))
    (d / "b.log").write_text(_host_job("hx22", 7741, "0x90d1f3a6e27c4b18"))
    assert analyze_paths([d], cache=False).decision.verdict.value == "unknown"


def test_a_rerun_on_the_same_host_in_one_file_is_judged_as_its_last_run(tmp_path):
    """One console holding a run and its rerun, one after the other (model_build.runs): the last run is judged and
    the earlier one said, not refused as a mix (tests/rules/test_two_runs_one_console.py)."""
    text = _host_job("hx21", 9012, "0x2b7e45d1c09a8f33") + _host_job("hx21", 9544, "0x90d1f3a6e27c4b18")
    d = _judge(tmp_path, "mpirun.log", text)
    assert d.verdict.value == "healthy" and "the last of 2 runs" in d.headline, d.headline


def _old_host_job(host: str, pid: int, transport: str) -> str:
    """A release that prints no nNodes: the communicator's rings say whether it leaves the host."""
    return (f"{host}:{pid}:{pid + 15} [0] NCCL INFO Channel 00 : 0[3b000] -> 1[60000] via {transport}\n" + "".join(
        f"{host}:{pid}:{pid + 15 + r} [{r}] NCCL INFO comm 0x7f2e3{r}000f60 rank {r} nranks 2 cudaDev {r} busId "
        f"{59 + r:x}000 - Init COMPLETE\n" for r in range(2)))


@pytest.mark.parametrize("transport, verdict", [("P2P/IPC", "config_error"), ("NET/IB/0", "unknown")])
def test_separate_jobs_without_nnodes_from_the_rings(tmp_path, transport, verdict):
    """No nNodes line: rings that stay on each host make two single-node jobs; a ring over the network is a
    communicator across hosts, so the doubly claimed ranks stay a mix."""
    text = _old_host_job("host0", 1115, transport) + _old_host_job("host1", 2087, transport)
    assert _judge(tmp_path, "all_reduce.txt", text).verdict.value == verdict


def test_stuck_collective_names_unseen_ranks_only_while_they_are_few():
    from ncclscope.rules.hang import stuck_collective

    st = stuck_collective({0: None, 1: 5, 2: 5, 3: 5}, {1: 4, 2: 4, 3: 4})
    assert st is not None and st.never == (0,)  # one unseen of four: the suspect is named
    st = stuck_collective({0: None, 1: None, 2: None, 3: 5}, {3: 4})
    assert st is not None and st.never == () and st.waiting == (3,)  # three unseen of four: nobody
