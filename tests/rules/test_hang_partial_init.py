"""A log that ends while only some ranks of a communicator have printed Init COMPLETE: the ranks the log shows
still in init are the culprits (NCCL 2.13 on: their Init START with no COMPLETE; older releases, which print a
communicator only at its Init COMPLETE: the log's NCCL processes with no communicator line, when they are exactly
the ranks missing). Ranks the log never shows are never named, and a log that goes on past init says more than
where it stopped."""
from __future__ import annotations

from pathlib import Path

import pytest
from ncclscope.analysis import analyze_paths
from ncclscope.rules.hang import partial_init


def _line(host: str, pid: int, dev: int, msg: str, prefix: str = "") -> str:
    return f"{prefix}{host}:{pid}:{pid + 90} [{dev}] NCCL INFO {msg}\n"


def _two_nodes(done: set[int], start_lines: bool, prefix: bool, nodes: tuple[int, ...] = (0, 1)) -> str:
    """Four ranks on two nodes (two each), NCCL's set-up lines, Init COMPLETE for the ranks in ``done``; with
    ``start_lines`` an Init START for every rank (2.13 on), else a communicator line only at Init COMPLETE."""
    out = ["NCCL version 2.18.1+cuda12.1\n" if start_lines else "NCCL version 2.10.3+cuda11.3\n"]
    ranks = [(n, d, n * 2 + d, 5000 + n * 100 + d) for n in nodes for d in (0, 1)]
    pre = {n: f"worker-{n}: " if prefix else "" for n in nodes}
    for n, d, r, pid in ranks:
        out.append(_line(f"gpu-node{n}", pid, d, f"Bootstrap : Using eth0:10.0.0.{4 + n}<0>", pre[n]))
        if start_lines:
            out.append(_line(f"gpu-node{n}", pid, d, f"ncclCommInitRank comm 0x55{r}0a000 rank {r} nranks 4 cudaDev {d} "
                             f"nvmlDev {d} busId {d + 1}000 commId 0x7a2c1f00aa31 - Init START", pre[n]))
    for n, d, r, pid in ranks:
        out.append(_line(f"gpu-node{n}", pid, d, "Channel 00/02 :    0   1   2   3", pre[n]))
        out.append(_line(f"gpu-node{n}", pid, d, "Trees [0] 1/2/-1->0->-1 [1] 1/-1/-1->0->2", pre[n]))
    for n, d, r, pid in ranks:
        if r not in done:
            continue
        out.append(_line(f"gpu-node{n}", pid, d, "Connected all rings", pre[n]))
        out.append(_line(f"gpu-node{n}", pid, d, "threadThresholds 8/8/64 | 32/8/64 | 512 | 512", pre[n]))
        tail = " commId 0x7a2c1f00aa31" if start_lines else ""
        out.append(_line(f"gpu-node{n}", pid, d, f"{'ncclCommInitRank ' if start_lines else ''}comm 0x55{r}0a000 rank {r} "
                         f"nranks 4 cudaDev {d} busId {d + 1}000{tail} - Init COMPLETE", pre[n]))
    return "".join(out)


def _judge(tmp_path: Path, text: str):
    p = tmp_path / "job.log"
    p.write_text(text)
    return analyze_paths([p], cache=False).decision


def test_partial_init_rule():
    assert partial_init(4, [0, 1, 2, 3], [0, 1], 0).culprits == (2, 3)
    assert partial_init(4, [0, 1, 2, 3], [0, 1], 0).level == "likely"
    seen_part = partial_init(8, [0, 1, 2, 3], [0, 1], 0)  # ranks 4-7 not in the log at all
    assert seen_part is not None and (seen_part.culprits, seen_part.level) == ((2, 3), "possible")
    old = partial_init(4, [0, 1], [0, 1], 2)  # two processes with no communicator line: ranks 2 and 3
    assert old is not None and (old.culprits, old.level) == ((2, 3), "likely")
    tagged = partial_init(4, [0, 1], [0, 1], 0, others=[0, 1, 2, 3])  # mpirun's [1,r] tags give the ranks
    assert tagged is not None and (tagged.culprits, tagged.level) == ((2, 3), "likely")
    assert partial_init(4, [0, 1], [0, 1], 0, others=[0, 1, 9]) is None  # a tag outside the communicator: not its rank
    assert partial_init(4, [0, 1], [0, 1], 0) is None  # the other ranks are not in the log: nobody to name
    assert partial_init(4, [0, 1], [0, 1], 1) is None  # one process for two missing ranks: not pinned down
    assert partial_init(4, [0, 1, 2, 3], [], 0) is None  # nobody done: every rank in init (init_stall's)
    assert partial_init(4, [0, 1, 2, 3], [0, 1, 2, 3], 0) is None
    assert partial_init(1 << 30, [0, 1], [0], 0) is None  # a claimed world that large is not walked


@pytest.mark.parametrize("start_lines", [True, False])
@pytest.mark.parametrize("prefix", [True, False])
def test_ranks_never_completing_init_are_the_culprits(tmp_path, start_lines, prefix):
    d = _judge(tmp_path, _two_nodes({0, 1}, start_lines, prefix))
    assert (d.verdict.value, d.culprit_ranks, d.certainty) == ("hang", (2, 3), "likely"), d.headline
    assert "Init COMPLETE" in d.headline


def test_mpirun_tagged_ranks_never_completing_init_are_the_culprits(tmp_path):
    """NCCL 2.10 under mpirun --tag-output: node 1's processes print their set-up lines behind [1,r] and no
    communicator line; the tags say which ranks they are."""
    text = "".join(f"[1,{int(ln.split(':')[0][-1]) * 2 + int(ln.split(' [')[1][0])}]<stdout>:{ln}\n" if ln.startswith("gpu-node")
                   else f"[1,0]<stdout>:{ln}\n" for ln in _two_nodes({0, 1}, False, False).splitlines())
    d = _judge(tmp_path, text)
    assert (d.verdict.value, d.culprit_ranks, d.certainty) == ("hang", (2, 3), "likely"), d.headline


def test_one_node_of_two_names_nobody(tmp_path):
    """Node 0's own log of a two-node job: ranks 2 and 3 are not in it, so nothing says they are stuck."""
    d = _judge(tmp_path, _two_nodes({0, 1}, False, False, nodes=(0,)))
    assert (d.verdict.value, d.culprit_ranks, d.certainty) == ("hang", (), "possible"), d.headline
    assert "every communicator built" not in d.headline and "others' lines are not in it" in d.headline


def test_every_rank_done_is_the_first_collective_not_a_culprit(tmp_path):
    d = _judge(tmp_path, _two_nodes({0, 1, 2, 3}, True, True))
    assert (d.verdict.value, d.culprit_ranks, d.certainty) == ("hang", (), "possible"), d.headline
    assert "every communicator built" in d.headline


def test_training_after_init_is_no_hang(tmp_path):
    d = _judge(tmp_path, _two_nodes({0, 1, 2, 3}, False, True) + "worker-0: epoch 0 step 10 loss 2.3012\n"
               "worker-0: epoch 0 step 20 loss 1.9876\n")
    assert d.verdict.value != "hang", d.headline


def test_application_lines_after_a_partial_init_name_nobody(tmp_path):
    """The log goes on after the last NCCL line: the missing Init COMPLETE lines may simply be lost."""
    d = _judge(tmp_path, _two_nodes({0, 1}, False, False) + "epoch 0 step 10 loss 2.3012\nepoch 0 step 20 loss 1.9876\n")
    assert d.culprit_ranks == (), d.headline
