"""NCCL's own error on one rank, the others only echoing it (timeouts, remote process exited, connection closed):
that rank is the culprit, the GPU or process to inspect. Every rank reporting it, or one rank alone on the time
line, names none. Whole analyses of torchrun logs in the shape torch 2.4+ prints."""
from __future__ import annotations

from pathlib import Path

from ncclscope.analysis import analyze_paths
from ncclscope.rules import Failure, FailureKind, root_cause

INIT = [f"node-1:{4420 + r}:{4480 + r} [{r}] NCCL INFO comm 0x5a1{r} rank {r} nranks 4 cudaDev {r} busId {r}b000 "
        "commId 0x77aa - Init COMPLETE" for r in range(4)]


def internal(r: int) -> list[str]:
    return [(f"[rank{r}]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:3356, internal error - please report this issue to the NCCL developers, NCCL version 2.21.5"),
            f"[rank{r}]: ncclInternalError: Internal check failed.", f"[rank{r}]: Last error:",
            f"[rank{r}]: Proxy Call to rank {(r + 1) % 4} failed (Connect)"]


def echo(r: int) -> list[str]:
    return [(f"[rank{r}]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:3356, remote process exited or there was a network error, NCCL version 2.21.5"),
            f"[rank{r}]: ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
            f"[rank{r}]: Last error:", f"[rank{r}]: socketProgress: Connection closed by remote peer node-1<51322>"]


def analyse(tmp_path: Path, lines: list[str]):
    (tmp_path / "torchrun.log").write_text("\n".join(lines) + "\n")
    return analyze_paths([tmp_path / "torchrun.log"], cache=False).decision


def test_one_rank_s_nccl_error_echoed_by_the_others_names_it(tmp_path):
    d = analyse(tmp_path, INIT + internal(2) + echo(0) + echo(1) + echo(3))
    assert d.verdict.value == "crash" and d.culprit_ranks == (2,), d.headline


def test_every_rank_reporting_nccl_s_error_names_none(tmp_path):
    d = analyse(tmp_path, INIT + internal(0) + internal(1) + internal(2) + internal(3))
    assert d.verdict.value == "crash" and d.culprit_ranks == ()


def test_one_rank_alone_on_the_time_line_names_none(tmp_path):
    d = analyse(tmp_path, INIT[2:3] + internal(2))
    assert d.verdict.value == "crash" and d.culprit_ranks == ()


def test_the_rule_on_the_time_line():
    nccl = Failure(1, FailureKind.NCCL, "ncclUnhandledCudaError: Call to CUDA function failed.", 10.0)
    peer = Failure(0, FailureKind.PEER, "ncclRemoteError: remote process exited", 11.0)
    lost = Failure(3, FailureKind.NETWORK, "ncclRemoteError: Connection closed by remote peer", 11.5)
    assert root_cause([nccl, peer, lost]).culprits == (1,)  # type: ignore[union-attr]
    assert root_cause([nccl]).culprits == ()  # type: ignore[union-attr]
    again = Failure(0, FailureKind.NCCL, "ncclInternalError: Internal check failed.", 12.0)
    assert root_cause([nccl, peer, again]).culprits == ()  # type: ignore[union-attr]
    ib = Failure(1, FailureKind.NETWORK, "NET/IB : Got completion from peer with error 12", 10.0)
    assert root_cause([ib, peer]).culprits == ()  # type: ignore[union-attr]  # the link's, never a rank's
