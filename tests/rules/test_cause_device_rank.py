"""An OOM printed with no rank head ('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ... GPU 3 has
...'), the other ranks timing out after it: on one node GPU 3 is local rank 3 (torchrun's cuda:LOCAL_RANK), rank 3 is
the culprit; across nodes, or when rank 3 itself waited in the collective, nobody is named by the device."""
from __future__ import annotations

from pathlib import Path

from ncclscope.analysis import analyze_paths


def wd(r: int) -> str:
    return (f"[rank{r}]:[E1201 10:40:0{r}.118220 {4420 + r} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=100, NumelOut=100, Timeout(ms)=600000) ran "
            "for 600031 milliseconds before timing out.")


def init(hosts: int) -> list[str]:
    per = 4 // hosts
    return [f"node-{r // per}:{4420 + r}:{4480 + r} [{r % per}] NCCL INFO comm 0x5a1{r} rank {r} nranks 4 cudaDev "
            f"{r % per} busId {r}b000 commId 0x77aa - Init COMPLETE" for r in range(4)]


OOM = ["Traceback (most recent call last):", '  File "train.py", line 210, in <module>', "    loss.backward()",
       ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.15 "
        "GiB of which 1.02 GiB is free. Process 4423 has 78.10 GiB memory in use.")]


def decide(tmp_path: Path, lines: list[str]):
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    return analyze_paths([tmp_path / "train.log"], cache=False).decision


def test_an_unranked_oom_on_one_node_names_the_rank_of_its_device(tmp_path):
    d = decide(tmp_path, init(1) + OOM + [wd(0), wd(1), wd(2)])
    assert d.verdict.value == "crash" and d.culprit_ranks == (3,), d.headline


def test_across_nodes_the_device_names_no_rank(tmp_path):
    d = decide(tmp_path, init(2) + OOM + [wd(0), wd(1), wd(2)])
    assert d.verdict.value == "crash" and d.culprit_ranks == ()


def test_a_rank_that_waited_in_the_collective_is_not_the_device_s(tmp_path):
    d = decide(tmp_path, init(1) + OOM + [wd(0), wd(1), wd(2), wd(3)])
    assert d.culprit_ranks == ()
