"""Round seventeen's cases (tests/data/classes17/), written from the thirteenth held-out set's misreadings: SkyPilot's
``(head, rank=0, pid=N)`` prefix names the node's rank, never a process's (a job of two nodes read as a mix of jobs);
a native backtrace parked in NCCL's kernel launch (``ncclLaunchKernel`` under ``ncclGroupEnd``) is a hang, as one
parked in a collective's wait is; c10d's later wording of its barrier device guess ("using GPU 1 as device used by
this process is currently unknown") is read as the earlier one; Gloo's ``ss1.ss_family == ss2.ss_family. 2 vs 10`` is
a config error (the hosts resolve to addresses of different families), and NCCL's failure to open libnvidia-ml.so.1 is
the environment's (a container or WSL without the driver's libraries); a process group timeout under a second is a
setting's fault, five seconds a choice; a terminal's ``^C`` echo is the user's interrupt; the program's progress bar at
its end, nothing failing, is a healthy end of the work it counts. A progress bar that goes on after the others' watchdog
timeouts is printed by the rank that was not in the collective: the one rank of the world not waiting, else the main
process (rank 0) where it is not among the waiting; a bar of a rank that waits says nothing. DeepSpeed's comms-logger
summary is read (a row per operation and size), and in a job of two or more nodes a collective whose large messages stay
under 10 Gb/s of bus bandwidth is degraded."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes17")
MINE = SET.names()


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


@pytest.mark.parametrize("line,rank", [
    ("(head, rank=0, pid=7712) [h0:3]:[rank3]: x", 3),  # torchrun's tag behind SkyPilot's: the process's rank
    ("(worker1, rank=1, pid=6391, ip=10.1.0.5) y", None),  # SkyPilot's rank= is the node's
    ("(VllmWorker rank=1 pid=41) INFO z", 1),  # vLLM's worker rank stays
])
def test_a_node_rank_is_no_process_rank(line, rank):
    from ncclscope.sources.lines import strip_tool_prefixes

    assert strip_tool_prefixes(line)[0] == rank


@pytest.mark.parametrize("func,station", [
    ("ncclLaunchKernel(ncclComm*, ncclKernelPlan*)", "launch"),
    ("ncclStrongStreamLaunchKernel", "launch"),
    ("c10d::ProcessGroupNCCL::WorkNCCL::synchronize()", "collective"),
    ("cudaLaunchKernel", None),  # a launch of PyTorch's own kernels: no NCCL frame
])
def test_where_a_native_frame_is_parked(func, station):
    from ncclscope.sources.native_stack import station_of

    assert station_of(func) == station


@pytest.mark.parametrize("text,entry", [
    ("RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:276] ss1.ss_family == "
     "ss2.ss_family. 2 vs 10", "gloo-address-family"),
    ("[rank1]: Failed to open libnvidia-ml.so.1", "init-nvml-missing"),
    ("nvmlInit_v2() failed: Driver/library version mismatch", "init-nvml"),
])
def test_the_entries(text, entry):
    from ncclscope.detectors.catalogue import classify

    k = classify(text)
    assert k is not None and k.id == entry
    assert (k.verdict == "config_error") is (entry != "init-nvml")


@pytest.mark.parametrize("body,interrupt", [("^C", True), ("^C^C  ", True), ("press ^C to stop", False)])
def test_a_terminal_echo_of_ctrl_c(body, interrupt):
    from ncclscope.sources.launcher_log import launcher_end
    from ncclscope.sources.records import LauncherStopped

    assert isinstance(launcher_end(body, "f", 1, body), LauncherStopped) is interrupt


@pytest.mark.parametrize("last,done", [
    ("Processed prompts: 100%|██████████| 500/500 [03:12<00:00,  2.60it/s]", True),
    ("Epoch 3: 100%|██████████| 5/5 [00:00<00:00, 58.90it/s, loss=0.727]", True),
    ("step 320/320 loss 0.81", True),
    ("Processed prompts:   7%|▋         | 37/500 [00:14<02:58,  2.59it/s]", False),
    ("iteration 20/320000 | lr 1e-4", False),
    ("saved 2024/2024-05-01/ckpt", False),  # a path, not a counter
])
def test_a_progress_bar_at_its_end(last, done):
    from ncclscope.rules.healthy import work_done

    assert (work_done(last, False, False, None) is not None) is done
    assert work_done(last, True, False, None) is None  # a failure after it: not a healthy end


@pytest.mark.parametrize("waiting,world,printers,rank", [
    ([1], 2, [None], 0),  # the only rank not waiting
    ([1, 3, 6], 8, [None], 0),  # the main process, rank 0, not among the waiting (possible)
    ([0, 1, 2, 3], 4, [2], None),  # a waiting rank's own bar: nobody
    ([0, 1, 2], 4, [None], 3),
    ([0, 2], 4, [None], None),  # ranks 1 and 3 not waiting, rank 0 waiting: the printer is not known
    ([1, 2], 4, [3], 3),  # a bar that names its rank
])
def test_the_rank_busy_elsewhere(waiting, world, printers, rank):
    from ncclscope.rules.hang import busy_elsewhere

    got = busy_elsewhere(waiting, world, printers)
    assert (got.rank if got else None) == rank


def test_deepspeed_comms_summary_rows():
    from ncclscope.sources.ds_comms import CommSummaryReader

    r = CommSummaryReader("f")
    lines = ["n1: Comm. Op   Message Size   Count   Total Latency(ms)   Avg Latency(ms)   tput_avg (Gbps)   busbw_avg (Gbps)",
             "n1: all_gather_into_tensor", "n1:     56.0 MB   1830   186021.40   101.65   4.62   4.33",
             "n1:     128.0 B   52   4.87   0.09   0.01   0.01", "n1: [INFO] Process 1 exits successfully."]
    got = [r.read(i, t, t, None) for i, t in enumerate(lines, 1)]
    assert [taken for taken, _ in got] == [True, True, True, True, False]
    rows = [row for _, row in got if row is not None]
    assert [(x.op, x.size, x.count, x.busbw_gbps) for x in rows] == [
        ("all_gather_into_tensor", 56 << 20, 1830, 4.33), ("all_gather_into_tensor", 128, 52, 0.01)]


@pytest.mark.parametrize("rows,nnodes,slow", [
    ([("all_gather_into_tensor", 56 << 20, 10, 4.3)], 2, ["all_gather_into_tensor"]),
    ([("all_gather_into_tensor", 56 << 20, 10, 4.3)], 1, []),  # one node: no inter-node floor
    ([("all_gather_into_tensor", 56 << 20, 10, 4.3), ("all_gather_into_tensor", 112 << 20, 10, 12.0)], 2, []),  # best
    ([("all_reduce", 8, 100, 0.0)], 2, []),  # a latency-bound size
    ([("barrier", 64 << 20, 3, 0.0)], 2, []),  # no collective of data
])
def test_a_collective_slower_than_any_link(rows, nnodes, slow):
    from ncclscope.rules.comm_floor import slow_ops

    assert [s.op for s in slow_ops(rows, nnodes)] == slow
