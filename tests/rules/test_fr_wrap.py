"""Ring buffers that wrapped at different record ids (ranks in more groups record more) are aligned per group
by sequence number: no false mismatch, no false missing rank; a rank whose buffer no longer reaches a point
is unknown there, not absent."""
from __future__ import annotations

import pytest
from fr_dumps import RankDump, expected_of, judge, scenario_module, world

S = scenario_module()
CASES = S.of_class("wrap")


@pytest.mark.parametrize("s", CASES, ids=[s.name for s in CASES])
def test_wrapped_buffers(s, tmp_path):
    s.write(tmp_path)
    j = judge(tmp_path)
    assert (j.verdict, j.culprits, j.stuck) == expected_of(s), j.headline


def test_a_buffer_that_no_longer_reaches_the_point_is_not_absence(tmp_path):
    # rank 1 ran many tp collectives after its last default one: its buffer holds none of the default group,
    # while rank 0 waits in default #3 with an old, unwrapped buffer: nothing says rank 1 never issued it
    g = world(2, **{"1": ("tp", [1])})
    ds = [RankDump(0, g), RankDump(1, g, capacity=8)]
    for d in ds:
        d.coll("all_reduce", [[64]])
        d.coll("all_reduce", [[64]])
    ds[0].coll("all_reduce", [[64]], state="started")
    ds[1].coll("all_reduce", [[64]])
    for _ in range(20):
        ds[1].coll("all_reduce", [[8]], pg="1")
    for d in ds:
        d.write(tmp_path, "nccl_trace_rank_")
    j = judge(tmp_path)
    assert (j.verdict, j.culprits) == ("healthy", ()), j.headline  # rank 1 may well have completed it
