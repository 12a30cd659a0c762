"""PyTorch c10d and torchrun lines, from the corpus and from the reference's older forms."""
from __future__ import annotations

from ncclscope.sources import records as R
from ncclscope.sources import torch_log
from ncclscope.sources.torch_log import parse_torch_lines


def parse(text: str) -> list:
    return list(parse_torch_lines(enumerate(text.splitlines(), 1), "stderr.log"))


def test_watchdog_timeout_and_failure_new_form():
    recs = parse(
        "[rank0]:[E1129 19:37:35.564976045 ProcessGroupNCCL.cpp:689] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=126, OpType=ALLREDUCE, NumelIn=4196352, NumelOut=4196352, Timeout(ms)=60000) ran for "
        "60035 milliseconds before timing out.\n"
        "[rank0]:[E1129 19:37:35.565207099 ProcessGroupNCCL.cpp:2303] [PG ID 0 PG GUID 0(default_pg) Rank 0]  failure "
        "detected by watchdog at work sequence id: 126 PG status: last enqueued work: 131, last completed work: 125\n")
    wt, wf = recs
    assert isinstance(wt, R.WatchdogTimeout) and (wt.rank, wt.seq, wt.op, wt.numel_in, wt.timeout_ms, wt.ran_ms) == (
        0, 126, "ALLREDUCE", 4196352, 60000, 60035)
    assert isinstance(wf, R.WatchdogFailure) and (wf.rank, wf.pg, wf.seq, wf.last_enqueued, wf.last_completed) == (
        0, "0", 126, 131, 125)


def test_old_forms():
    recs = parse(
        "[E1218 20:27:21.4 ProcessGroupNCCL.cpp:629] [Rank 3] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=5020, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800001 milliseconds before timing out.\n"
        "[PG 0 Rank 25] Timeout at NCCL work: 7753, last enqueued NCCL work: 7755, last completed NCCL work: 7752.\n")
    assert isinstance(recs[0], R.WatchdogTimeout) and recs[0].numel_in is None and recs[0].rank == 3
    assert isinstance(recs[1], R.WatchdogFailure) and (recs[1].rank, recs[1].seq, recs[1].last_completed) == (25, 7753, 7752)


def test_dump_signal_from_other_rank():
    (r,) = parse(
        "[rank1]:[E1129 19:37:36.296894759 ProcessGroupNCCL.cpp:1914] [PG ID 0 PG GUID 0(default_pg) Rank 1] Received a "
        "dump signal due to a collective timeout from  rank 0 and we will try our best to dump the debug info. Last "
        "enqueued NCCL work: 125, last completed NCCL work: 125.This is most likely caused by incorrect usages")
    assert isinstance(r, R.DumpSignal) and (r.rank, r.from_rank, r.last_enqueued, r.last_completed) == (1, 0, 125, 125)


def test_desync_mismatch_barrier_heartbeat():
    recs = parse(
        "[E1 2.0 x.cpp:1] [Rank 0] \t - [0] Timeout at collective: ALLREDUCE, #41207 To our best knowledge, ranks [3] "
        "are the lagging ranks that caused this timeout. They never joined any collectives\n"
        "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=73, OpType=BARRIER), but Rank 1 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=13OpType=ALLREDUCE).\n"
        "RuntimeError: [Rank 0]: Ranks 1, 2 failed to pass monitoredBarrier in 2000 ms\n"
        "[E1 2.0 x.cpp:1] Heartbeat monitor timed out! Process will be terminated after dumping debug info.\n")
    kinds = [type(r) for r in recs]
    assert kinds == [R.DesyncReport, R.CollectiveMismatch, R.MonitoredBarrierFailure, R.HeartbeatTimeout]
    assert recs[0].lagging_ranks == [3] and recs[0].seq == 41207
    assert recs[1].ranks == [0, 1]
    assert recs[2].failed_ranks == [1, 2]


def test_traceback_with_last_error(corpus):
    text = (corpus / "config_error_algo_tree" / "stderr.log").read_text()
    errs = [r for r in parse(text) if isinstance(r, R.DistError) and "DistBackendError" in r.exc_type]
    assert {e.rank for e in errs} == {0, 1}
    e = errs[0]
    assert e.exc_type == "torch.distributed.DistBackendError"
    assert e.last_error and "NCCL_ALGO was set to Tree" in e.last_error
    assert any("train.py" in f for f in e.frames)


def test_torchrun_summary_root_cause(corpus):
    recs = parse((corpus / "crash_rank1_exit" / "stderr.log").read_text())
    exits = [r for r in recs if isinstance(r, R.LauncherExit)]
    root = [e for e in exits if e.root_cause]
    assert len(root) == 1 and (root[0].rank, root[0].exitcode, root[0].pid) == (1, 3, 2077)
    others = [e for e in exits if not e.root_cause and e.rank == 0]
    assert others and others[0].exitcode == -15
    sig = [r for r in recs if isinstance(r, R.LauncherSignal)]
    assert sig and sig[0].pid == 2076 and sig[0].signal == "SIGTERM"


def test_gloo_mismatch_abort_is_an_error_of_its_kind():
    """The C++ runtime's terminate lines (no rank on them) for gloo's size check."""
    lines = ["terminate called after throwing an instance of 'gloo::EnforceNotMet'",
             "  what():  [enforce fail at /src/gloo/gloo/transport/tcp/pair.cc:456] op.preamble.length <= op.nbytes. "
             "8 vs 4. Received data size doesn't match expected size. Is there a distributed collective mismatch in "
             "your code?",
             "[rank2]: RuntimeError: Detected collective mismatch? no: a plain line"]
    recs = [r for r in parse_torch_lines(list(enumerate(lines, 1)), "stderr.log") if isinstance(r, R.DistError)]
    assert len(recs) == 1
    e = recs[0]
    assert e.rank is None and e.line == 2 and e.exc_type == "gloo::EnforceNotMet"
    assert e.message.startswith("[enforce fail at") and e.message.endswith("collective mismatch in your code?")


FP_OPTS = ("TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, layout=Strided (default), "
           "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt)))")


def test_detail_mismatch_gives_each_fingerprints_sequence_number_and_the_reporters_own():
    """torch >= 2.0's DETAIL line: SequenceNumber per fingerprint; the reporter's own is the record's seq,
    and a line with no rank tag is the first named rank's (torch names itself first)."""
    (rec,) = parse(
        "RuntimeError: Detected mismatch between collectives on ranks. Rank 3 is running collective: "
        f"CollectiveFingerPrint(SequenceNumber=412, OpType=ALLGATHER, TensorShape=[64, 7], TensorDtypes=Half, {FP_OPTS}, "
        "but Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=412, OpType=REDUCE_SCATTER, "
        f"TensorShape=[64, 7], TensorDtypes=Half, {FP_OPTS}.Collectives differ in the following aspects: "
        "\tOp type: ALLGATHERvs REDUCE_SCATTER\n")
    assert isinstance(rec, R.CollectiveMismatch)
    assert rec.ranks == [3, 0] and rec.seqs == [412, 412] and rec.seq == 412
    assert rec.rank == 3


def test_detail_mismatch_prefix_rank_kept_and_cut_short_peer_seq():
    """A launcher's tag keeps its rank; a peer printed cut short (``SequenceNumber=9OpType=``) still gives
    its number, and the reporter's own stays the record's; torch 1.x's print has no sequence number."""
    (rec,) = parse("[rank5]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running "
                   f"collective: CollectiveFingerPrint(SequenceNumber=20, OpType=BROADCAST, TensorShape=[1], "
                   f"TensorDtypes=Long, {FP_OPTS}, but Rank 2 is running collective: "
                   "CollectiveFingerPrint(SequenceNumber=9OpType=BARRIER).\n")
    assert rec.rank == 5 and rec.seqs == [20, 9] and rec.seq == 20
    (old,) = parse("RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
                   "CollectiveFingerPrint(OpType=ALLREDUCE, TensorShape=[20, 10], TensorDtypes=Float), "
                   "but Rank 1 is running collective: CollectiveFingerPrint(OpType=REDUCE).\n")
    assert old.ranks == [0, 1] and old.seqs == [None, None] and old.seq is None


def test_one_pasted_line_holding_the_error_and_its_last_error():
    """The watchdog's lines, what() and 'Last error:' copied as ONE line: the message is the NCCL error from
    what() on, the last error is split off (not left in the message), whatever the code's explanation between."""
    recs = parse(
        "[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed out. Due to the asynchronous "
        "nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data. "
        "[E ProcessGroupNCCL.cpp:460] To avoid data inconsistency, we are taking the entire process down. "
        "terminate called after throwing an instance of 'std::runtime_error' what(): NCCL error: remote process "
        "exited or there was a network error, NCCL version 2.15.5 ncclRemoteError: A call failed possibly due to "
        "a network error or a remote process exiting prematurely. Last error: NET/IB : Got completion from peer "
        "10.1.2.3<41234> with error 12, opcode 0, len 0, vendor err 129\n")
    (err,) = [r for r in recs if isinstance(r, R.DistError)]
    assert err.message == "NCCL error: remote process exited or there was a network error, NCCL version 2.15.5"
    assert err.last_error == "NET/IB : Got completion from peer 10.1.2.3<41234> with error 12, opcode 0, len 0, vendor err 129"
    recs = parse("[rank2]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                 "NCCLUtils.hpp:275, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version "
                 "2.19.3 ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
                 "device error. Last error: socketStartConnect: Connect to 10.0.0.2<43211> failed : "
                 "Connection refused\n")
    (err,) = [r for r in recs if isinstance(r, R.DistError)]
    assert err.rank == 2 and err.message.endswith("NCCL version 2.19.3")
    assert err.last_error == "socketStartConnect: Connect to 10.0.0.2<43211> failed : Connection refused"


def test_store_based_barrier_wait_and_timeout_give_rank_world_and_arrived_count():
    """torch <= 2.0's init barrier (PyTorch Lightning#4420 shape): the rank waiting, its world and how many arrived."""
    recs = parse("INFO:root:Waiting in store based barrier to initialize process group for rank: 5, key: "
                 "store_based_barrier_key:1 (world_size=8, worker_count=7, timeout=0:30:00)\n"
                 "RuntimeError: Timed out initializing process group in store based barrier on rank: 3, for key: "
                 "store_based_barrier_key:1 (world_size=4, worker_count=2, timeout=0:30:00)\n")
    waits = [r for r in recs if isinstance(r, R.StoreBarrierWait)]
    assert [(w.rank, w.world_size, w.worker_count, w.key, w.timed_out) for w in waits] == [
        (5, 8, 7, "store_based_barrier_key:1", False), (3, 4, 2, "store_based_barrier_key:1", True)]
    assert any(isinstance(r, R.WorldSize) and r.world_size == 8 for r in recs)  # the world is still read


def test_exit_time_process_group_warnings_are_a_program_exit_of_their_rank():
    recs = parse("[rank3]:[W611 16:40:12.118000331 ProcessGroupNCCL.cpp:1117] WARNING: process group has NOT been "
                 "destroyed before it is being destructed. On normal program exit, the application should call "
                 "destroy_process_group to ensure that any pending NCCL data transfers have finished in this process.\n"
                 "[rank1]:[W912 08:05:51.614092277 ProcessGroupNCCL.cpp:1479] Warning: WARNING: destroy_process_group() "
                 "was not called before program exit, which can leak resources.\n"
                 "[rank2]:[W912 08:05:51.6 ProcessGroupNCCL.cpp:1479] the group will be destroyed later\n")
    assert [(type(r), r.rank) for r in recs] == [(R.ProgramExit, 3), (R.ProgramExit, 1), (torch_log.RankTagged, 2)]


def test_unique_id_store_wait_error_is_the_rank_it_names_first():
    """torch 1.12's '[1] is setting up NCCL communicator and retreiving ncclUniqueId from [0] ...' with no launcher
    tag: the error is rank 1's (it waits for rank 0)."""
    (err,) = [r for r in parse(
        "RuntimeError: [1] is setting up NCCL communicator and retreiving ncclUniqueId from [0] via c10d key-value "
        "store by key '0', but store->get('0') got error: Timeout waiting for key: default_pg/0/0 after 1800000 ms\n")
        if isinstance(r, R.DistError)]
    assert err.rank == 1


def test_mpirun_and_prterun_name_the_process_that_ended_the_job():
    """OpenMPI's 'mpirun noticed that process rank N with PID P on node H exited on signal S (Name).' and OpenMPI 5's
    prterun: that rank's exit, a signal in torchrun's terms, the launcher's root cause."""
    recs = parse("--------------------------------------------------------------------------\n"
                 "mpirun noticed that process rank 37 with PID 71120 on node rk2-11-s4 exited on signal 6 (Aborted).\n"
                 "prterun noticed that process rank 5 with PID 613162 on node gpu-node07 exited on signal 11 "
                 "(Segmentation fault).\n")
    exits = [r for r in recs if isinstance(r, R.LauncherExit)]
    assert [(x.rank, x.exitcode, x.pid, x.host, x.root_cause) for x in exits] == [
        (37, -6, 71120, "rk2-11-s4", True), (5, -11, 613162, "gpu-node07", True)]
    assert exits[0].traceback == "Signal 6 (SIGABRT) received by PID 71120"
    assert torch_log.mpi_exit("mpirun noticed that the job aborted, but has no info as to the process", "f", 1) is None


def test_cpp_abort_what_line_is_an_error_of_the_thrown_type_and_the_harness_names_its_process():
    recs = parse("terminate called after throwing an instance of 'c10::CUDAError'\n"
                 "  what():  CUDA error: uncorrectable NVLink error detected during the execution\n"
                 "ERROR:torch.testing._internal.common_distributed:Process 2 exited with error code 10 and exception:\n")
    err, ex = recs
    assert isinstance(err, R.DistError) and err.exc_type == "c10::CUDAError" and err.rank == 2
    assert err.message == "CUDA error: uncorrectable NVLink error detected during the execution"
    assert isinstance(ex, R.LauncherExit) and (ex.rank, ex.exitcode) == (2, 10)
    # a what() with no 'terminate called' before it is no error of its own (the NCCL error path reads those)
    assert parse("  what():  something else\n") == []


def test_torch_capability_warning_is_a_warning_record_with_its_tag_rank():
    (w,) = parse("[rank3]: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current "
                 "PyTorch installation.\n")
    assert isinstance(w, R.TorchWarning) and w.rank == 3 and w.message.startswith("NVIDIA GeForce RTX 5090")


def test_a_process_report_of_its_fatal_signal_is_its_exit():
    """UCX's handler (with or without the space before ':0:') and OpenMPI's 'Signal: Aborted (6)': the process (host,
    pid) died of that signal; its rank comes from its NCCL lines, by pid."""
    recs = parse("[gx-h100-0417:301122:0:309815] Caught signal 11 (Segmentation fault: address not mapped to object at "
                 "address 0x48)\n"
                 "[trn-worker-0:7802 :0:7802] Caught signal 7 (Bus error: nonexistent physical address)\n"
                 "[rk2-11-s4:71120] *** Process received signal ***\n"
                 "[rk2-11-s4:71120] Signal: Aborted (6)\n"
                 "[rk2-11-s4:71120] Signal code:  (-6)\n")
    exits = [r for r in recs if isinstance(r, R.LauncherExit)]
    assert [(x.host, x.pid, x.exitcode, x.rank) for x in exits] == [
        ("gx-h100-0417", 301122, -11, None), ("trn-worker-0", 7802, -7, None), ("rk2-11-s4", 71120, -6, None)]
    assert exits[0].traceback == "Signal 11 (SIGSEGV) received by PID 301122"


def test_torch_non_blocking_mode_line_is_a_torch_line_the_knowledge_base_reads():
    (w,) = parse("[rank2]:[I519 11:02:45.209120554 ProcessGroupNCCL.cpp:1003] [PG ID 0 PG GUID 0(default_pg) Rank 2] "
                 "Using non-blocking mode: 1\n")
    assert isinstance(w, R.TorchWarning) and w.rank == 2
    assert parse("[rank2]:[I519 11:02:45.2 ProcessGroupNCCL.cpp:1003] [PG ID 0 PG GUID 0(default_pg) Rank 2] "
                 "Using non-blocking mode: 0\n")[0].__class__.__name__ == "RankTagged"


def test_a_global_rank_claimed_by_two_processes_is_given_twice():
    """Lightning's 'initializing ddp: GLOBAL_RANK: g, MEMBER: m/N' (PyTorch Lightning#4389 shape: srun started each
    task with the same ranks): every claim is a WorldSize record of that rank, up to MAX_CLAIMS; a world line a rank
    repeats without claiming ('world_size=8' in every step's print) is still given once."""
    recs = parse("initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/8\n" * 2 + "initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/8\n"
                 + "initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/8\n" * 5
                 + "[rank3]: step 1 world_size=8\n" * 3)
    worlds = [(r.rank, r.world_size) for r in recs if isinstance(r, R.WorldSize)]
    assert worlds.count((1, 8)) == torch_log.MAX_CLAIMS and worlds.count((0, 8)) == 1 and worlds.count((3, 8)) == 1
