"""Sends and receives are paired by peer (the k-th send of A to B with the k-th receive of B from A), never by
sequence number: healthy pipelines and rings in groups of more than two ranks are healthy, and a stuck chain
blames its head only."""
from __future__ import annotations

import pytest
from fr_dumps import RankDump, expected_of, judge, scenario_module, world

S = scenario_module()
CASES = S.of_class("p2p")


@pytest.mark.parametrize("s", CASES, ids=[s.name for s in CASES])
def test_p2p_scenarios(s, tmp_path):
    s.write(tmp_path)
    j = judge(tmp_path)
    assert (j.verdict, j.culprits, j.stuck) == expected_of(s), j.headline


def test_the_head_of_a_chain_in_a_subgroup_with_wrapped_buffers(tmp_path):
    # pipeline group '1' of ranks 4-7 in a world of 8; buffers of 16 records, so pairing counts only the open ends
    g = world(8, **{"1": ("pp", [4, 5, 6, 7])})
    ds = [RankDump(r, g, capacity=16) for r in range(4, 8)]
    for _ in range(6):
        for d in ds:
            if d.rank > 4:
                d.recv(d.rank - 1, 4096, pg="1")
            if d.rank < 7:
                d.send(d.rank + 1, 4096, pg="1")
    for d in ds[1:]:  # rank 5's seventh recv: its p2p sequence number 13 (six recvs and six sends before)
        d.recv(d.rank - 1, 4096, pg="1", state="started")
    for d in ds:
        d.write(tmp_path, "nccl_trace_rank_")
    j = judge(tmp_path)
    assert (j.verdict, j.culprits, j.stuck) == ("hang", (4,), ("1:p2p", 13)), j.headline


def test_a_send_nobody_receives_blames_the_receiver(tmp_path):
    ds = [RankDump(r, world(3)) for r in range(3)]
    ds[0].send(2, 1024, state="started")
    for d in ds:
        d.write(tmp_path, "nccl_trace_rank_")
    j = judge(tmp_path)
    assert (j.verdict, j.culprits, j.stuck) == ("hang", (2,), ("0:p2p", 1)), j.headline
