"""Who is at fault for a crash: the rank whose own code failed first, but nobody when what failed first is
NCCL's own error or the link (the library, the driver, the setup or the network failed on the rank that
reported it). Judged through the whole analysis on logs in the shapes real jobs print."""
from __future__ import annotations

from pathlib import Path

from ncclscope import rules
from ncclscope.analysis import analyze_paths
from ncclscope.rules import FailureKind

TORCHRUN = "W0711 09:14:02.118000 140112 torch/distributed/run.py:779] *****************************************"


def analyse(tmp_path: Path, text: str):
    (tmp_path / "out.txt").write_text(text)
    return analyze_paths([tmp_path / "out.txt"], cache=False)


def traceback(rank: int, last: list[str]) -> list[str]:
    return [f"[rank{rank}]: Traceback (most recent call last):",
            f'[rank{rank}]:   File "/home/dev/demo.py", line 14, in <module>',
            f"[rank{rank}]:     dist.barrier()"] + [f"[rank{rank}]: {x}" for x in last]


def test_nccl_error_inside_the_library_names_no_rank(tmp_path):
    # one rank quotes NCCL's unhandled CUDA error (an invalid resource handle: a build / driver mismatch
    # every rank has); it is the rank that said so, not the rank at fault
    text = "\n".join([TORCHRUN] + traceback(1, [
        ("torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:2395, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5"),
        "ncclUnhandledCudaError: Call to CUDA function failed.",
        "Last error:",
        "Cuda failure 'invalid resource handle'",
    ]) + [("E0711 09:14:05.902000 140112 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: 1) "
          "local_rank: 1 (pid: 140132) of binary: /usr/bin/python")]) + "\n"
    a = analyse(tmp_path, text)
    assert a.decision.verdict.value == "crash"
    assert a.decision.culprit_ranks == ()


def test_a_rank_s_own_exception_still_names_it(tmp_path):
    text = "\n".join([TORCHRUN] + traceback(3, [
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 264.00 MiB. GPU 3 has a total capacity of "
        "79.10 GiB of which 81.06 MiB is free."),
    ]) + [("E0711 09:14:05.902000 140112 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: 1) "
          "local_rank: 3 (pid: 140134) of binary: /usr/bin/python")]) + "\n"
    a = analyse(tmp_path, text)
    assert a.decision.verdict.value == "crash"
    assert a.decision.culprit_ranks == (3,)


def test_cause_culprits_by_first_kind():
    nccl = rules.Failure(1, FailureKind.NCCL, "NCCL error: internal error", 10.0)
    net = rules.Failure(2, FailureKind.NETWORK, "NET/IB : Got completion from peer with error 12", 10.0)
    exc = rules.Failure(0, FailureKind.EXCEPTION, "ValueError: bad batch", 10.0)
    for first, culprits in ((nccl, ()), (net, ()), (exc, (0,))):
        cause = rules.root_cause([first])
        assert cause is not None and cause.ranks == (first.rank,) and cause.culprits == culprits


def test_the_crash_finding_says_nccl_failed_on_the_rank(tmp_path):
    text = "\n".join(traceback(7, [
        ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
        "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5"),
        "ncclUnhandledCudaError: Call to CUDA function failed.",
        "Last error:",
        "Cuda failure 1 'invalid argument'",
    ])) + "\n"
    a = analyse(tmp_path, text)
    (f,) = [f for f in a.findings if f.kind == "error" and f.data.get("cause") == "nccl_error"]
    assert f.message.startswith("NCCL on rank 7 failed first") and f.data["culprits"] == []
    assert a.decision.culprit_ranks == ()
