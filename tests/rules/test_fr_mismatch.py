"""Every field of a Flight Recorder entry is compared (op, input and output sizes and dtypes, each member of a
coalesced group), each call is checked on its own (all_gather output = group size x input, ...), and the
culprit never depends on which file is read first."""
from __future__ import annotations

import pytest
from fr_dumps import Member, RankDump, expected_of, judge, scenario_module, world

S = scenario_module()
CASES = S.of_class("mismatch")


@pytest.mark.parametrize("s", CASES, ids=[s.name for s in CASES])
def test_the_mismatched_collective_and_its_culprit(s, tmp_path):
    s.write(tmp_path)
    j = judge(tmp_path)
    assert (j.verdict, j.culprits, j.stuck) == expected_of(s), j.headline


@pytest.mark.parametrize("s", CASES, ids=[s.name for s in CASES])
def test_the_answer_does_not_depend_on_the_order_of_the_files(s, tmp_path):
    files = s.write(tmp_path)
    a, b = judge(sorted(files)), judge(sorted(files, reverse=True))
    assert (a.verdict, a.culprits, a.stuck) == (b.verdict, b.culprits, b.stuck) == expected_of(s)


def _one_field(tmp_path, odd: Member, normal: Member, n: int = 4):
    ds = [RankDump(r, world(n)) for r in range(n)]
    for d in ds:
        d.coll("all_reduce", [[64]])
        m = odd if d.rank == n - 1 else normal
        d.coll(m.op, m.ins, m.outs, dtype=m.dtype, out_dtype=m.out_dtype, state="started")
        d.write(tmp_path, "nccl_trace_rank_")
    return judge(tmp_path)


@pytest.mark.parametrize(("odd", "field"), [
    (Member("broadcast", [[512]], [[512]]), "op"),
    (Member("all_reduce", [[512]], [[512]]), "input_sizes"),
    (Member("all_reduce", [[256]], [[256]], dtype="Half"), "input_dtypes"),
    (Member("_reduce_scatter_base", [[1024]], [[128]]), "output_sizes"),
    (Member("_all_gather_base", [[256]], [[1024]], out_dtype="BFloat16"), "output_dtypes"),
], ids=["op", "input_sizes", "input_dtypes", "output_sizes", "output_dtypes"])
def test_each_field_is_compared(tmp_path, odd, field):
    normal = {"broadcast": Member("all_reduce", [[512]], [[512]]), "all_reduce": Member("all_reduce", [[256]], [[256]]),
              "_reduce_scatter_base": Member("_reduce_scatter_base", [[1024]], [[256]]),
              "_all_gather_base": Member("_all_gather_base", [[256]], [[1024]])}[odd.op]
    j = _one_field(tmp_path, odd, normal)
    assert (j.verdict, j.culprits, j.stuck) == ("desync", (3,), ("0", 2)), j.headline
    assert field in j.headline


def test_matching_calls_of_every_op_family_are_no_mismatch(tmp_path):
    calls = [Member("_all_gather_base", [[256]], [[1024]]), Member("_reduce_scatter_base", [[1024]], [[256]]),
             Member("all_gather", [[8]], [[8], [8], [8], [8]]), Member("reduce_scatter", [[8], [8], [8], [8]], [[8]]),
             Member("all_reduce", [[3, 3]], [[3, 3]]), Member("broadcast", [[7]], [[7]])]
    ds = [RankDump(r, world(4)) for r in range(4)]
    for d in ds:
        for m in calls:
            d.coll(m.op, m.ins, m.outs)
        d.coll("all_to_all_single", [[4 * (d.rank + 1)]], [[10]])  # uneven splits: totals 40 in, 40 out
        d.coll("scatter", [[2]] * 4 if d.rank == 0 else [], [[2]])
        d.coll("gather", [[2]], [[2]] * 4 if d.rank == 0 else [])
        d.write(tmp_path, "nccl_trace_rank_")
    assert judge(tmp_path).verdict == "healthy"


def test_all_to_all_totals_that_do_not_add_up_name_nobody(tmp_path):
    ds = [RankDump(r, world(4)) for r in range(4)]
    for d in ds:
        d.coll("all_to_all_single", [[16]], [[16 if d.rank else 12]], state="started")
        d.write(tmp_path, "nccl_trace_rank_")
    j = judge(tmp_path)
    assert (j.verdict, j.culprits, j.stuck) == ("desync", (), ("0", 1)), j.headline


def test_a_coalesced_group_of_another_length(tmp_path):
    ok = Member("_all_gather_base", [[256]], [[1024]])
    ds = [RankDump(r, world(4)) for r in range(4)]
    for d in ds:
        d.coalesced([ok] * (3 if d.rank == 1 else 2), end="ALLGATHER_coalesced", state="started")
        d.write(tmp_path, "nccl_trace_rank_")
    j = judge(tmp_path)
    assert (j.verdict, j.culprits, j.stuck) == ("desync", (1,), ("0", 1)), j.headline
    assert "members" in j.headline


def test_a_call_wrong_on_its_own(tmp_path):
    from ncclscope.model_build.fr_entries import parse_entry
    from ncclscope.model_build.fr_match import malformed_op

    d = RankDump(0, world(4))
    good = parse_entry(d.coll("_all_gather_base", [[256]], [[1024]]))
    bad = parse_entry(d.coll("_all_gather_base", [[256]], [[512]]))
    rs = parse_entry(d.coll("_reduce_scatter_base", [[1024]], [[512]]))
    ar = parse_entry(d.coll("all_reduce", [[4, 4]], [[5, 4]]))
    dt = parse_entry(d.coll("all_reduce", [[4]], [[4]], out_dtype="Half"))
    assert good is not None and malformed_op(good, 4) is None
    assert all(e is not None and malformed_op(e, 4) for e in (bad, rs, ar, dt))
