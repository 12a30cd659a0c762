"""A member whose Flight Recorder dump is missing: its silence names it when the others wait for it and no
rank seen is behind; a rank seen behind is named instead; a few dumps of a large world name nobody by
silence; and the analysis never stops at the missing file."""
from __future__ import annotations

import pytest
from fr_dumps import expected_of, judge, scenario_module

S = scenario_module()
CASES = S.of_class("missing_dump")


@pytest.mark.parametrize("s", CASES, ids=[s.name for s in CASES])
def test_a_missing_dump_is_that_ranks_silence(s, tmp_path):
    s.write(tmp_path)
    j = judge(tmp_path)
    assert (j.verdict, j.culprits, j.stuck) == expected_of(s), j.headline


def test_silence_is_at_most_likely_even_with_a_stall_on_record(tmp_path):
    """(With the stall the process-group counts judge it too; both stop at 'likely' for a rank never seen.)"""
    S.by_name("missing_dump_file").write(tmp_path)
    (tmp_path / "stderr.log").write_text(
        "[rank0]:[E1207 10:01:02.123456789 ProcessGroupNCCL.cpp:632] [PG ID 0 PG GUID 0(default_pg) Rank 0] Watchdog "
        "caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1048576, "
        "NumelOut=1048576, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.\n")
    j = judge(tmp_path)
    assert (j.verdict, j.culprits, j.certainty) == ("hang", (3,), "likely")


def test_a_few_dumps_of_a_large_world_name_nobody_by_silence(tmp_path):
    from fr_dumps import RankDump, world

    ds = [RankDump(r, world(8)) for r in range(8)]
    for d in ds:
        for _ in range(3):
            d.coll("all_reduce", [[1024]])
        d.coll("all_reduce", [[1024]], state="started")
    for d in ds[:2]:  # two of eight dumps: six ranks unseen
        d.write(tmp_path, "nccl_trace_rank_")
    j = judge(tmp_path)
    assert j.culprits == (), j.headline
