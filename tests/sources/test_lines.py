"""lines.py: the prefixes launchers and tools put in front of log lines, and line repair, through the
parsers and through ingest. Each shape is written after a public thread (cited) with our own hosts,
pids and numbers."""
from __future__ import annotations

import pytest
from ncclscope.ingest import iter_lines, parse_file
from ncclscope.sources import records as R
from ncclscope.sources import torch_log
from ncclscope.sources.lines import (
    lone_cr_to_lf,
    rejoin_wrapped,
    starts_a_line,
    strip_tool_prefixes,
    unglue_host,
)
from ncclscope.sources.nccl_log import parse_nccl_line
from ncclscope.sources.torch_log import parse_torch_lines

TIMEOUT = ("[E1129 19:37:35.564976045 ProcessGroupNCCL.cpp:689] [Rank 0] Watchdog caught collective operation timeout: "
           "WorkNCCL(SeqNum=126, OpType=ALLREDUCE, NumelIn=4196352, NumelOut=4196352, Timeout(ms)=60000) ran for "
           "60035 milliseconds before timing out.")
NCCL = "gpu-a17:5021:5090 [3] NCCL INFO comm 0x7f10 rank 3 nranks 8 cudaDev 3 busId 4b000 commId 0x9a1 - Init COMPLETE"

# (prefix, rank it gives or None)
PREFIXES = [
    ("[rank5]:", 5),  # torchrun --tee
    ("[default5]:", 5),  # torchrun / Lightning local rank tag
    ("[rank: 5] ", 5),  # Lightning's rank_prefixed_message ("[rank: 0] Seed set to 42")
    ("5: ", 5),  # srun --label (huggingface/accelerate#1317 style multi-node logs)
    ("  12: ", 12),  # srun --label, padded for 2-digit task ids
    ("[1,6]<stdout>:", 6),  # OpenMPI --tag-output
    ("[1,6]<stderr>:", 6),
    ("(RayWorkerWrapper pid=41077, ip=10.8.0.3) ", None),  # vllm-project/vllm#2682
    ("(VllmWorker rank=3 pid=41077) ", 3),  # gpustack/gpustack#2680
    ("(pid=41077) ", None),
    ("trainer.node1 [stderr] ", None),  # <name>.<node> [stderr]
    ("2026-09-17 13:40:02 [rank2]: ", 2),
    ("2026-09-17T13:40:02.4412345Z ", None),  # GitHub Actions log
    ("2026-09-17T13:40:02.441234567Z stderr F ", None),  # Kubernetes CRI log
    ("2026-09-17T13:40:02+00:00 ", None),
    ("[1784] ", None),  # line numbers (hiyouga/LlamaFactory#7396)
    ("gpu003: ", None),  # pdsh / DeepSpeed multi-node (hiyouga/LlamaFactory#2470)
    ("10.1.20.7: ", None),
    ("2026-09-17T13:40:02.441234567Z stdout F 7: [rank7]:", 7),  # nested: the innermost rank wins
    ("[2026-09-17 13:40:02,791] [INFO] [launch.py:71:main] ", None),  # DeepSpeed's logger
    ("  | 2026-08-23T22:22:51.874Z | [rank3]:", 3),  # a log viewer's table (Lightning-AI/litData#340)
    ("(head, rank=2, pid=40211) [ip-10-0-7-18:0]:", None),  # SkyPilot (tests/data/wild/awsofi584_*): rank= is the node's
    ("2026-11-02 21:14:08.551 +08:00 ", None),  # a log collector's time with its zone (NVIDIA/nccl#1905 shape)
    ("\u2502 ", None),  # k9s' box bar (NVIDIA/nccl#733 shape)
    ("[trainer3]:", None),  # torchrun --log-line-prefix-template / TorchX roles (tests/data/wild/nccl1837_*)
    ("[trainer0|3]:", None),
    ("[worker_a.2|0|2]: ", None),
    ("prune-llama-ft/0 [default1]:[rank1]:", 1),  # NeMo-Run's job/replica head (tests/data/wild/nemo14399_*)
]


@pytest.mark.parametrize("prefix,rank", PREFIXES)
def test_prefix_is_peeled_and_gives_its_rank(prefix, rank):
    assert strip_tool_prefixes(prefix + TIMEOUT) == (rank, TIMEOUT)


@pytest.mark.parametrize("prefix,rank", PREFIXES)
def test_nccl_line_behind_any_prefix(prefix, rank):
    rec = parse_nccl_line(prefix + NCCL, "f", 1)
    assert isinstance(rec, R.NcclInit) and (rec.host, rec.pid, rec.rank, rec.nranks) == ("gpu-a17", 5021, 3, 8)


@pytest.mark.parametrize("prefix,rank", [p for p in PREFIXES if not p[0].startswith("[2026")])
def test_torch_line_behind_any_prefix_takes_the_prefix_rank_when_it_has_one(prefix, rank):
    line = TIMEOUT.replace("[Rank 0] ", "")  # no rank of its own: the prefix's is the one there is
    (rec,) = list(parse_torch_lines([(1, prefix + line)], "stderr.log"))
    assert isinstance(rec, R.WatchdogTimeout) and rec.seq == 126 and rec.severity == "E"
    assert rec.rank == rank


def test_prefix_rank_never_overrides_when_absent_and_line_rank_stays():
    (rec,) = list(parse_torch_lines([(1, "gpu003: " + TIMEOUT)], "stderr.log"))
    assert rec.rank == 0


@pytest.mark.parametrize("text", ["RuntimeError: NCCL error", "  File \"train.py\", line 4, in main",
                                  "Traceback (most recent call last):", "vm:1:2 [0] NCCL INFO x", "step 20 loss 3.1",
                                  "Epoch 1: 100%|####| 10/10", "[W socket.cpp:464] x", "ncclInternalError: x"])
def test_ordinary_lines_keep_their_text(text):
    assert strip_tool_prefixes(text) == (None, text)


def test_tqdm_bar_glued_in_front_of_a_glog_head():
    """pytorch/pytorch#118369: the progress bar was redrawn without a newline and the watchdog's line
    followed it on the same line."""
    bar = "Epoch 0:   6%|##         | 3204/50015 [6:28:43<94:39:17,  1.37it/s, loss=2.6, v_num=7][E ProcessGroupNCCL.cpp:458] "
    line = bar + "[Rank 4] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9612, OpType=ALLREDUCE, " \
                 "Timeout(ms)=1800000) ran for 1802488 milliseconds before timing out."
    recs = list(parse_torch_lines([(1, line)], "stderr.log"))
    (rec,) = [r for r in recs if isinstance(r, R.WatchdogTimeout)]
    assert (rec.rank, rec.seq, rec.severity) == (4, 9612, "E")
    assert [type(r).__name__ for r in recs] == ["WatchdogTimeout", "BarSeen", "RunPaces"]  # the bar is the file's last; its pace


def test_lone_cr_to_lf_keeps_crlf_and_length():
    buf = bytearray(b"a\rb\r\nc\r")
    assert lone_cr_to_lf(buf) == 2 and bytes(buf) == b"a\nb\r\nc\n"
    part = bytearray(b"x\ry\rz")
    lone_cr_to_lf(part, 0, 2)
    assert bytes(part) == b"x\ny\rz"


def test_unglue_host():
    assert unglue_host("0.00009vm", {"vm", "0.00009vm"}) == "vm"
    assert unglue_host("lossgpu-a17", {"gpu-a17", "a17"}) == "gpu-a17"
    assert unglue_host("vm", {"vm", "0.00009vm"}) == "vm"


def test_rejoin_wrapped_joins_only_a_known_join():
    width = 100
    text = NCCL + " " * 0
    pieces = [text[i:i + width] for i in range(0, len(text), width)]
    lines = [(10 + i, p + "\n") for i, p in enumerate(pieces)]
    out = list(rejoin_wrapped([(9, "x\n"), *lines, (20, "y\n")], lambda first, joined: joined.startswith("gpu-a17")))
    assert out == [(9, "x\n"), (10, text + "\n"), (20, "y\n")]
    kept = list(rejoin_wrapped(lines, lambda first, joined: False))
    assert kept == lines


def test_a_cpp_abort_after_a_complete_nccl_line_is_no_wrapped_tail():
    """An 80-200 column NCCL line followed by the C++ runtime's shorter abort line (pytorch/pytorch#58155 shape):
    the abort begins a line of its own and is never joined to the NCCL line as its wrapped tail."""
    init = "taurus-g17:124031:124053 [2] NCCL INFO comm 0x7f3d48000e00 rank 2 nranks 3 cudaDev 2 busId 3b000 - Init COMPLETE\n"
    for tail in ("terminate called after throwing an instance of 'c10::CUDAError'\n",
                 "  what():  CUDA error: an illegal memory access was encountered\n",
                 "Exception raised from query at ../aten/src/ATen/cuda/CUDAEvent.h:95 (most recent call first):\n"):
        assert starts_a_line(tail)
        out = list(rejoin_wrapped([(1, init), (2, tail)], lambda first, joined: True))
        assert out == [(1, init), (2, tail)]


def test_cr_only_log_reads_like_the_lf_log(tmp_path):
    """A CR-only log (tqdm's redraws, a Mac editor) was one 64 KB line: everything after it was skipped."""
    body = "\n".join([NCCL.replace("Init COMPLETE", "Init START"), "epoch 1", NCCL, "[rank3]:" + TIMEOUT]) + "\n"
    lf, cr = tmp_path / "lf.log", tmp_path / "cr.log"
    lf.write_text(body)
    cr.write_bytes(body.replace("\n", "\r").encode())
    want = [(type(r).__name__, r.line) for r in parse_file(lf, "lf.log").records]
    assert [(type(r).__name__, r.line) for r in parse_file(cr, "cr.log").records] == want
    assert len(want) == 3
    assert [n for n, _ in iter_lines(cr)] == [1, 2, 3, 4]


@pytest.mark.parametrize("prefix,rank", PREFIXES)
def test_bare_nccl_version_banner_behind_any_prefix(prefix, rank):
    """NCCL <= 2.21 prints its banner with a bare printf; behind mpirun's tag (the shape of
    tests/data/wild/horovod3929_duplicate_gpu_tagged) it was not read."""
    rec = parse_nccl_line(prefix + "NCCL version 2.11.4+cuda11.4", "f", 1)
    assert isinstance(rec, R.NcclVersion) and rec.version == "2.11.4"


# (function, adversarial text builder): each made a pattern of lines.py / torch_log.py quadratic before it
# was bounded (a 256 kB line took seconds to a minute); CPU seconds, so a loaded machine does not fail them
PUMPS = {
    "nccl error reason of parentheses": (lambda t: torch_log.nccl_error_match(t), lambda n: "(" * n + ", NCCL version 2"),
    "nccl error long reason": (lambda t: torch_log.nccl_error_match(t), lambda n: "a" * n + ", NCCL version 2.1"),
    "line start of spaces": (lambda t: starts_a_line(t), lambda n: " " * n),
    "tool prefix of digits": (lambda t: strip_tool_prefixes(t), lambda n: "1" * n),
    "tool prefix of dotted words": (lambda t: strip_tool_prefixes(t), lambda n: "a." * (n // 2) + " [stdou"),
    "glued glog heads": (lambda t: torch_log.GLOG_ANY_RE.search(t), lambda n: "[E1234 1" * (n // 8)),
    "world sizes": (lambda t: torch_log.WORLD_RE.search(t), lambda n: "world size:" + " " * n + "x"),
    "facts": (lambda t: torch_log.torch_line_facts(t), lambda n: "watchdog WorkNCCL( NCCL version" * (n // 30)),
}


@pytest.mark.parametrize("name", sorted(PUMPS))
def test_line_grammar_is_linear_on_pumped_text(name):
    import time

    fn, mk = PUMPS[name]
    text = mk(256 * 1024)
    t = time.process_time()
    fn(text)
    list(parse_torch_lines([(1, text)], "stderr.log"))
    assert time.process_time() - t < 1.0, name


def test_srun_task_number_never_beats_the_rank_a_line_names():
    """``srun --label`` numbers tasks; with torchrun under srun a task is a node. The line's own
    ``[Rank 5]`` wins over the label; a launcher's rank tag wins over both."""
    line = TIMEOUT.replace("[Rank 0]", "[Rank 5]")
    assert [r.rank for r in parse_torch_lines([(1, "1: " + line)], "f")] == [5]
    assert [r.rank for r in parse_torch_lines([(1, "1: " + TIMEOUT.replace("[Rank 0] ", ""))], "f")] == [1]
    assert [r.rank for r in parse_torch_lines([(1, "[rank13]:" + line)], "f")] == [13]
    assert strip_tool_prefixes("[rank5]: 0: x") == (5, "x")


def test_trace_call_lines_are_ncclS_own_lines_not_the_application_s():
    """NCCL_DEBUG=TRACE's call lines, with or without the [dev] field (NVIDIA/nccl-tests#117 shape), are NCCL's lines:
    never handed to the PyTorch parser as application output (a log ending after them ended in NCCL)."""
    from ncclscope.sources.lines import nccl_only
    assert nccl_only("wk3:190211:190211 NCCL CALL ncclAllReduce(0x7f1c2e000000,0x7f1c2e000000,33554432,7,0,0x55d8,0x55d8)")
    assert nccl_only("wk3:190211:190211 [0] NCCL CALL ncclCommInitRank(0x55d8c2a0e4c0, 4, 0x5b3c81e0a77d21f4, 0, 0)")
    assert not nccl_only("step 20: NCCL CALLS are fast")  # the words, not NCCL's head form
    assert not nccl_only("[rank0]: RuntimeError: NCCL error in: x.cpp:1, unhandled system error, NCCL version 2.19.3")


def test_a_join_is_kept_only_when_it_reads_more_nccl_than_the_first_piece():
    """nccl_log.join_adds, for ingest's wrap join: a complete 81-column Init COMPLETE line followed by the
    application's 'Epoch 0 step 0 loss 2.5' reads the same joined (no join: the app line stays a line); a line cut
    inside its message, or a connection cut at '/GDR', reads more when joined."""
    from ncclscope.sources.nccl_log import join_adds
    init = "h:2:2 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1 busId 2000 - Init COMPLETE"
    assert not join_adds(init, init + "Epoch 0 step 0 loss 2.5")
    assert join_adds(NCCL[:80], NCCL)
    conn = "gpu-a07:41022:41022 [3] NCCL INFO Channel 00/0 : 3[3d000] -> 11[3d000] [send] via NET/IB/0/GDRDMA"
    assert join_adds(conn[:90], conn)
    assert not join_adds("step 1 of 2", "step 1 of 2 done")
