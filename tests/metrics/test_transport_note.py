"""The transport note "runs over the network between GPUs of one host" is said only of a communicator the input
shows whole on one host, never of a pasted one-node excerpt of a multi-node job."""
from __future__ import annotations

from pathlib import Path

from ncclscope.analysis import analyze_paths


def _log(ranks: list[int], nranks: int, peer: str) -> str:
    out = []
    for r in ranks:
        pid = 40200 + r
        head = f"gpu-h1:{pid}:{pid + 50} [{r}] NCCL INFO "
        init = (f"{head}ncclCommInitRank comm 0x55c0f1d2a6{r:02x} rank {r} nranks {nranks} cudaDev {r} nvmlDev {r} "
                f"busId {r + 1}0000 commId 0x6e2d0b9f31a4c857 - Init")
        out += [f"{init} START",
                f"{head}Channel 00/0 : {peer} -> {r}[{r}] [receive] via NET/IB/0",
                f"{init} COMPLETE"]
    return "\n".join(out) + "\n"


def _notes(tmp_path: Path, text: str) -> list[str]:
    p = tmp_path / "rank.log"
    p.write_text(text)
    a = analyze_paths([p], cache=False)
    return [f.message for f in a.findings if f.kind == "transport" and "one host" in f.message]


def test_one_node_excerpt_of_a_16_rank_job_is_not_said_to_be_one_host(tmp_path: Path) -> None:
    assert _notes(tmp_path, _log([0], 16, "8[0]")) == []


def test_a_whole_job_on_one_host_over_the_network_is_said(tmp_path: Path) -> None:
    (msg,) = _notes(tmp_path, _log([0, 1], 2, "1[1]"))
    assert "NET/IB" in msg
