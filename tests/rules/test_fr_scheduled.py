"""'scheduled' where the others 'started': the rank whose GPU stream never reached the collective, when its
dump records start times; without timing 'scheduled' says nothing about starting."""
from __future__ import annotations

from fr_dumps import RankDump, expected_of, judge, scenario_module, world

S = scenario_module()


def test_scheduled_where_the_others_started(tmp_path):
    s = S.by_name("scheduled_vs_started")
    s.write(tmp_path)
    j = judge(tmp_path)
    assert (j.verdict, j.culprits, j.stuck) == expected_of(s), j.headline
    assert "never started" in j.headline


def _job(tmp_path, timing: bool, last: dict[int, str]):
    ds = [RankDump(r, world(4), timing=timing) for r in range(4)]
    for d in ds:
        for _ in range(5):
            d.coll("all_reduce", [[1024]])
        d.coll("all_reduce", [[1024]], state=last[d.rank])
        d.write(tmp_path, "nccl_trace_rank_")
    return judge(tmp_path)


def test_without_timing_scheduled_blames_nobody(tmp_path):
    j = _job(tmp_path, False, {0: "scheduled", 1: "scheduled", 2: "scheduled", 3: "scheduled"})
    assert (j.verdict, j.culprits, j.stuck) == ("hang", (), ("0", 6)), j.headline  # all in it, PyTorch's dump


def test_one_rank_completed_means_it_ran_everywhere(tmp_path):
    j = _job(tmp_path, True, {0: "scheduled", 1: "started", 2: "completed", 3: "started"})
    assert j.verdict == "healthy", j.headline
