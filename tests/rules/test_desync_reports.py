"""Desyncs a backend reports in words: PyTorch's DETAIL check and NCCL 2.4's own mismatch check, judged
through the whole analysis (parser, detectors, verdict) on logs in the shapes real jobs print."""
from __future__ import annotations

from pathlib import Path

from ncclscope.analysis import analyze_paths
from ncclscope.rules.desync import Fingerprint, detail_verdict, fingerprint

OPTS = ("TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, layout=Strided (default), "
        "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))")


def fp(seq: int, op: str, shape: str = "1", dtype: str = "Float") -> str:
    return f"CollectiveFingerPrint(SequenceNumber={seq}, OpType={op}, TensorShape=[{shape}], TensorDtypes={dtype}, {OPTS})"


def detail(me: int, mine: str, peer: int, theirs: str, head: str = "") -> str:
    return (f"{head}RuntimeError: Detected mismatch between collectives on ranks. Rank {me} is running collective: "
            f"{mine}, but Rank {peer} is running collective: {theirs}.")


def analyse(tmp_path: Path, name: str, text: str):
    (tmp_path / name).write_text(text)
    return analyze_paths([tmp_path / name], cache=False)


def test_fingerprint_reads_a_cut_short_peer_print():
    assert fingerprint("CollectiveFingerPrint(SequenceNumber=0OpType=REDUCE)") == Fingerprint(0, "REDUCE", None, None)
    assert fingerprint(fp(7, "_ALLGATHER_BASE", "288, 1, 16", "BFloat16")) == Fingerprint(
        7, "_ALLGATHER_BASE", "288,1,16", "BFloat16")


def test_two_ranks_that_disagree_name_no_culprit(tmp_path):
    # one rank's report, two ranks: either may be the one out of step; the stuck collective is the report's
    text = "\n".join([
        "Traceback (most recent call last):",
        '  File "train.py", line 40, in <module>',
        detail(1, fp(2218, "ALLREDUCE", "180224512", "BFloat16"), 0, fp(2218, "ALLREDUCE", "48762880", "BFloat16"),
               "[rank1]: "),
    ]) + "\n"
    a = analyse(tmp_path, "rank1.err", text)
    assert a.decision.verdict.value == "desync"
    assert a.decision.culprit_ranks == ()
    assert a.decision.stuck is not None and a.decision.stuck.seq == 2218 and a.decision.stuck.op == "allreduce"


def test_both_ranks_reporting_each_other_still_name_no_culprit(tmp_path):
    text = "\n".join([
        detail(1, fp(37, "BROADCAST", "1", "Long"), 0, "CollectiveFingerPrint(SequenceNumber=37, OpType=BARRIER)"),
        detail(0, "CollectiveFingerPrint(SequenceNumber=37, OpType=BARRIER)", 1, fp(37, "BROADCAST", "1", "Long")),
    ]) + "\n"
    a = analyse(tmp_path, "out.txt", text)
    assert a.decision.verdict.value == "desync" and a.decision.culprit_ranks == ()
    assert a.decision.stuck is not None and a.decision.stuck.seq == 37


def test_the_rank_every_other_rank_names_is_the_culprit(tmp_path):
    # seven ranks at an ALLGATHER each name rank 7, which is at a REDUCE #0 (its print cut short by torch)
    lines = [detail(r, fp(214, "ALLGATHER", "1", "Long"), 7, "CollectiveFingerPrint(SequenceNumber=0OpType=REDUCE)",
                    f"[rank{r}]: ") for r in (3, 0, 5, 1, 6, 2, 4)]
    lines.append(detail(7, fp(0, "REDUCE"), 0, "CollectiveFingerPrint(SequenceNumber=214OpType=ALLGATHER)", "[rank7]: "))
    a = analyse(tmp_path, "out.txt", "\n".join(lines) + "\n")
    assert a.decision.verdict.value == "desync" and a.decision.culprit_ranks == (7,)
    assert a.decision.stuck is not None and a.decision.stuck.seq == 214 and a.decision.stuck.op == "allgather"


def test_detail_verdict_needs_two_ranks():
    assert detail_verdict([([0], [fp(1, "ALLREDUCE")])]) is None
    dv = detail_verdict([([2, 3], [fp(0, "_ALLGATHER_BASE", "288, 1, 1211"), fp(0, "_ALLGATHER_BASE", "288, 1, 1212")])])
    assert dv is not None and dv.culprits == () and dv.seq == 0 and len(dv.sides) == 2


NCCL_CHECK = ("{host}:{pid}:{pid} [{dev}] init.cc:1247 NCCL WARN Mismatched collective detected, please check your "
              "collective calls at and around rank {rank}. You can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to "
              "see the collective logs")


def test_nccl_check_names_the_rank_it_saw(tmp_path):
    text = "\n".join([
        "gpu-n3:51200:51200 [3] NCCL INFO NCCL version 2.4.8+cuda10.1",
        NCCL_CHECK.format(host="gpu-n3", pid=51200, dev=3, rank=27),
    ]) + "\n"
    a = analyse(tmp_path, "job.err", text)
    assert a.decision.verdict.value == "desync" and a.decision.culprit_ranks == (27,)


def test_nccl_check_after_the_named_rank_failed_is_its_echo(tmp_path):
    # the named rank's IB completion error comes first: the peers' mismatch check is its echo, a crash
    text = "\n".join([
        "node-b:17203:17203 [1] NCCL INFO comm 0x7f3e58000 rank 9 nranks 16 cudaDev 1 nvmlDev 1 - Init COMPLETE",
        "node-a:40112:40112 [1] NCCL INFO comm 0x7f3e59000 rank 1 nranks 16 cudaDev 1 nvmlDev 1 - Init COMPLETE",
        ("node-b:17203:17360 [1] transport/net_ib.cu:788 NCCL WARN NET/IB : Got completion with error 4, opcode 1, "
        "len 21938, vendor err 81"),
        NCCL_CHECK.format(host="node-a", pid=40112, dev=1, rank=9),
    ]) + "\n"
    a = analyse(tmp_path, "mpirun.log", text)
    assert a.decision.verdict.value == "crash"


def test_detail_report_inside_torchrun_s_summary_is_not_an_echo_of_the_exit(tmp_path):
    # torchrun's root-cause entry (rank 1, exit code 1) comes first on the time line; the DETAIL error that
    # ended rank 1 is quoted inside it: the exit is the mismatch's end, the verdict desync between ranks 1 and 2
    text = "\n".join([
        ("E0311 18:33:20.931000 339990 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
        "local_rank: 1 (pid: 340055) of binary: /usr/bin/python3"),
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "repro.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2025-03-11_18:33:20",
        "  host      : laptop",
        "  rank      : 1 (local_rank: 1)",
        "  exitcode  : 1 (pid: 340055)",
        "  error_file: /tmp/torchelastic_q3k9x2/none_7fj2a/attempt_0/1/error.json",
        "  traceback : Traceback (most recent call last):",
        '    File "/home/user/work/repro.py", line 19, in main',
        "      dist.barrier()",
        "  " + detail(1, "CollectiveFingerPrint(SequenceNumber=1OpType=BARRIER)", 2,
                      "CollectiveFingerPrint(SequenceNumber=0OpType=BARRIER)"),
        "============================================================",
    ]) + "\n"
    a = analyse(tmp_path, "out.txt", text)
    assert a.decision.verdict.value == "desync", a.decision.headline
    assert a.decision.culprit_ranks == ()


TRUNCATED = ("h200-b11:61620:62801 [1] transport/net_socket.cc:488 NCCL WARN NET/Socket : peer 10.0.7.31<43117> message "
             "truncated : receiving 4 bytes instead of 2. If you believe your socket network is in healthy state,"
             "           there may be a mismatch in collective sizes or environment settings (e.g. NCCL_PROTO, NCCL_ALGO) "
             "between ranks")
P2P_ECHO = [("h200-b11:61620:61620 [1] init.cc:290 NCCL WARN Attempt to use communicator before the previous operation "
            "returned ncclSuccess"),
            "[rank9]: Traceback (most recent call last):",
            "[rank9]:   File \"/work/p2p_communication.py\", line 327, in _batched_p2p_ops",
            "[rank9]:     reqs = torch.distributed.batch_isend_irecv(ops)",
            ("[rank9]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
            "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.20.5"),
            "[rank9]: ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",
            "[rank9]: Last error:",
            "[rank9]: Attempt to use communicator before the previous operation returned ncclSuccess"]


def test_socket_truncation_first_is_a_size_desync_with_no_culprit(tmp_path):
    a = analyse(tmp_path, "node1.log", "\n".join([TRUNCATED, ("h200-b11:61620:62801 [1] NCCL INFO proxy.cc:874 -> 5 "
                                                  "[Progress Thread]"), *P2P_ECHO]) + "\n")
    assert a.decision.verdict.value == "desync", a.decision.headline
    assert a.decision.culprit_ranks == ()


def test_socket_truncation_after_a_rank_s_own_failure_is_its_echo(tmp_path):
    oom = ["[rank9]: Traceback (most recent call last):", "[rank9]:   File \"/work/train.py\", line 40, in <module>",
           "[rank9]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."]
    a = analyse(tmp_path, "node1.log", "\n".join([*oom, TRUNCATED]) + "\n")
    assert a.decision.verdict.value == "crash", a.decision.headline
