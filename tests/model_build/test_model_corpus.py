"""The model built from real runs states real facts."""
from __future__ import annotations

import pytest

from ncclscope.analysis import analyze_paths


@pytest.fixture(scope="module")
def p2p(corpus):
    return analyze_paths([corpus / "healthy_ddp_p2p"]).run


def test_two_communicators_and_the_split_parent(p2p):
    ids = [c.id for c in p2p.communicators]
    assert len(ids) == 2
    root = next(c for c in p2p.communicators if c.parent is None)
    split = next(c for c in p2p.communicators if c.parent is not None)
    assert root.id == "0x9913440b67c3cc19" and root.caller == "ncclCommInitRankConfig"
    assert split.parent == root.id and split.caller == "ncclCommSplit" and split.color == 2130503744


def test_24_channels_over_p2p_cumem(p2p):
    root = next(c for c in p2p.communicators if c.parent is None)
    assert root.n_channels == 24
    assert root.transports == ["P2P/CUMEM"]
    assert len(root.rings) == 24 and set(root.rings.values()) == {(0, 1)}
    assert len({(c.channel, c.src, c.dst) for c in root.connections}) >= 48  # both directions, every channel
    assert root.init_complete == frozenset({0, 1})
    assert root.trees and root.trees[0] == {0: -1, 1: 0}


def test_pid_to_rank(p2p):
    ranks = {p.pid: p.rank for p in p2p.job.processes}
    assert ranks == {1632: 0, 1633: 1}
    assert p2p.job.world_size == 2 and p2p.job.hosts == ("vm",)
    assert p2p.job.nccl_version == "2.28.9" and p2p.job.cuda_version == "13.0"


def test_collectives_table(p2p):
    df = p2p.collectives
    fr = df[df["source"] == "fr"]
    assert set(fr["rank"]) == {0, 1}
    last = fr.groupby(["pg", "rank"], observed=True)["seq"].max()
    assert last.loc["0"].tolist() == [365, 365] and last.loc["1"].tolist() == [3, 3]  # default pg and the new_group
    nccl = df[df["source"] == "nccl"]
    assert set(nccl["rank"]) == {0, 1} and (nccl["op"] == "allreduce").sum() > 300


def test_shm_transport(corpus):
    run = analyze_paths([corpus / "healthy_shm"]).run
    assert run.communicators[0].transports == ["SHM"]
    assert run.job.settings["NCCL_P2P_DISABLE"].value == "1"


def test_interleaved_stdout_separates_processes(corpus):
    run = analyze_paths([corpus / "healthy_interleaved_stdout"]).run
    assert sorted(p.rank for p in run.job.processes) == [0, 1]
    assert len(run.communicators) == 1 and sorted(run.communicators[0].members.values()) == [0, 1]


def test_rank_from_wrapper_prefix_when_init_lines_are_missing(tmp_path):
    log = tmp_path / "stdout.log"
    log.write_text(
        "[rank3]:node1:4242:4242 [3] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 4 datatype 7 op 0 "
        "root 0 comm 0xabc [nranks=4] stream 0x2\n"
        "[1,2]<stdout>:node1:4243:4243 [2] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 4 datatype 7 "
        "op 0 root 0 comm 0xabd [nranks=4] stream 0x2\n")
    run = analyze_paths([log]).run
    assert {p.pid: p.rank for p in run.job.processes} == {4242: 3, 4243: 2}
