"""The cause among process groups: the first group that lost a rank; the groups held behind it are its
echoes. A blocker that waits in another pending operation is held there, not lost: the wait-for chain is
followed to the operation whose blockers wait nowhere."""
from __future__ import annotations

import pytest
from fr_dumps import expected_of, judge, scenario_module
from ncclscope.fr_model import FrOp, FrPart, FrState
from ncclscope.rules.fr_hang import Block, cause

S = scenario_module()
CASES = S.of_class("cause")


@pytest.mark.parametrize("s", CASES, ids=[s.name for s in CASES])
def test_the_group_that_lost_a_rank_is_the_cause(s, tmp_path):
    s.write(tmp_path)
    j = judge(tmp_path)
    assert (j.verdict, j.culprits, j.stuck) == expected_of(s), j.headline


def test_the_held_group_is_listed_as_an_echo(tmp_path):
    from ncclscope.analysis import analyze_paths

    S.by_name("cause_tp_subgroup").write(tmp_path)
    (f,) = [f for f in analyze_paths([tmp_path], cache=False).findings if f.kind == "hang"]
    assert f.data["echoes"] == [{"pg": "0", "seq": 4, "op": "allreduce"}]
    assert f.data["waiting"] == [0] and "held behind it" in f.message


def _op(pg: str, seq: int, t: float, **states: FrState) -> FrOp:
    return FrOp(pg, "", seq, "all_reduce", tuple(FrPart(int(r[1:]), st, "all_reduce" if st.pending else None, t)
                                              for r, st in states.items()))


W, A = FrState.STARTED, FrState.ABSENT


def test_time_alone_does_not_decide_the_cause():
    # the data-parallel group was entered first, yet its missing rank 0 waits in the tensor-parallel one
    dp = _op("0", 9, 100.0, r0=A, r1=A, r2=W, r3=W)
    tp = _op("1", 4, 200.0, r0=W, r1=A)
    h = cause([dp, tp])
    assert h is not None and (h.op, h.culprits, h.echoes) == (tp, (1,), (dp,))


def test_a_chain_that_ends_in_an_all_joined_operation_blames_nobody():
    # rank 0 waits in tp #4 that both its members joined (NCCL-side); ranks 2, 3 wait in dp #9 for ranks 0, 1
    tp = _op("1", 4, 100.0, r0=W, r1=W)
    dp = _op("0", 9, 50.0, r0=A, r1=A, r2=W, r3=W)
    h = cause([dp, tp])
    assert h is not None and (h.op, h.why, h.culprits) == (tp, Block.ALL_JOINED, ())


def test_a_cross_group_deadlock_names_the_first_operation_entered():
    # rank 0 waits in group 1 for rank 1, rank 1 waits in group 2 for rank 0 (each called them in another order)
    g1 = _op("1", 3, 100.0, r0=W, r1=A)
    g2 = _op("2", 3, 101.0, r0=A, r1=W)
    h = cause([g2, g1])
    assert h is not None and (h.op, h.culprits) == (g1, (1,))
