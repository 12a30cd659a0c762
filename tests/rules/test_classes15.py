"""Round fifteen's cases (tests/data/classes15/), written from the twelfth held-out set's misreadings: Accelerate's
refusal to start on GeForce RTX 40xx cards until NCCL_P2P_DISABLE and NCCL_IB_DISABLE are set is a config error naming
them; vLLM's worker prefix with its parallel rank (``(VllmWorker TP0 pid=2230) ``) is peeled, its TP rank not taken
for the global one. Processes that fail at once end their interleaved tracebacks in a run of exception lines with no
rank, one each: every line is a failure, and an OOM printed alike by several processes (each naming its own GPU) names
no culprit, where a single process's OOM on one host still names the rank of the GPU it names. NCCL lines of one
host's processes glued in one terminal (a line cut mid-word, the next process's head right after it) are cut at each
later head of that host. CUDA's "peer access is not supported between these two devices" under a custom all-reduce stays
the crash earlier sets label it (heldout6's SGLang case); the twelfth set's TensorRT-LLM thread labels it a config
error, a conflict between the labels, left as its known gap."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes15")
MINE = SET.names()


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


@pytest.mark.parametrize("text,entry", [
    ("NotImplementedError: Using RTX 4000 series doesn't support faster communication broadband via P2P or IB. Please "
     "set `NCCL_P2P_DISABLE=\"1\"` and `NCCL_IB_DISABLE=\"1\" or use `accelerate launch`", "accelerate-rtx4000-p2p-ib"),
    ("what():  [TensorRT-LLM][ERROR] CUDA runtime error in cudaIpcOpenMemHandle(&buf, h, cudaIpcMemLazyEnablePeerAccess): "
     "peer access is not supported between these two devices", "cuda-peer-access"),
])
def test_the_entries(text, entry):
    from ncclscope.detectors.catalogue import classify

    k = classify(text)
    assert k is not None and k.id == entry
    assert (k.verdict == "config_error") is (entry == "accelerate-rtx4000-p2p-ib")


@pytest.mark.parametrize("line,rank,body", [
    ("(VllmWorker TP0 pid=2230) ERROR 07-08 10:21:23 [multiproc_executor.py:546] RuntimeError: x", None,
     "RuntimeError: x"),
    ("(VllmWorker rank=1 pid=41) INFO 11-25 08:17:28 [a.py:1] y", 1, "y"),
    ("(EngineCore_DP0 pid=97) ERROR 02-11 07:41:20 [v1/engine/core.py:708] EngineCore failed to start.", None,
     "EngineCore failed to start."),
])
def test_vllm_worker_prefixes(line, rank, body):
    from ncclscope.sources.lines import strip_tool_prefixes

    assert strip_tool_prefixes(line) == (rank, body)


def test_a_run_of_exception_lines_is_one_failure_each():
    from ncclscope.sources.records import DistError
    from ncclscope.sources.torch_log import parse_torch_lines

    lines = ["Traceback (most recent call last):", '  File "t.py", line 3, in <module>', "    f()"]
    lines += [f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {g} has a total capacity"
              for g in (1, 0)]
    lines += ["", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity"]
    errs = [r for r in parse_torch_lines(list(enumerate(lines, 1)), "t.log") if isinstance(r, DistError)]
    assert [e.line for e in errs] == [4, 5]  # the run's two lines; one after a blank line is no part of it


@pytest.mark.parametrize("line,pieces", [
    ("h1:11:12 [0] NCCL INFO Channel 01/1 : 0[0] -> 2[0] via NET/IB/0/GDRDMA/Sharedh1:21:22 [1] net_ib.cc:1696 "
     "NCCL WARN NET/IB : Got completion", 2),
    ("h1:11:12 [0] NCCL INFO threadThresholds 8h1:21:22 [1] NCCL h1:31:32 [2] NCCL INFO Connected NVLS tree", 3),
    # the host named again inside the message, not as a head: one line
    ("h1:11:12 [0] NCCL INFO [Service thread] Connection closed by remote peer h1<51733> NCCL INFO", 1),
    ("h1:11:12 [0] NCCL INFO Bootstrap : Using ib0:10.1.1.5<0> NCCL INFO h2:5:6 [0] NCCL INFO x", 1),
])
def test_nccl_lines_glued_in_one_terminal(line, pieces):
    from ncclscope.sources.lines import split_glued

    assert len(split_glued(line)) == pieces
