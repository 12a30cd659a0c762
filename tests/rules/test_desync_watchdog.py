"""Watchdog timeouts of different ranks naming different calls at one sequence number: the ranks called different
collectives there (a desync), not a hang. Whole analyses of torchrun logs in the shape PyTorch 2.x prints, plus
the rule itself."""
from __future__ import annotations

from pathlib import Path

from ncclscope.analysis import analyze_paths
from ncclscope.rules.desync import TimedOut, watchdog_mismatch


def wd(rank: int, seq: int, op: str, numel: int = 1, pg: str = "") -> str:
    return (f"[rank{rank}]:[E1201 10:40:0{rank}.512338 {4100 + rank} torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:632] "
            f"[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, "
            f"NumelIn={numel}, NumelOut={numel}, Timeout(ms)=600000) ran for 600041 milliseconds before timing out.")


def analyse(tmp_path: Path, lines: list[str]):
    (tmp_path / "torchrun.log").write_text("\n".join(lines) + "\n")
    return analyze_paths([tmp_path / "torchrun.log"], cache=False)


def test_one_rank_in_another_op_at_the_same_seq_is_the_desync_s_culprit(tmp_path):
    a = analyse(tmp_path, [wd(0, 5, "ALLREDUCE"), wd(1, 5, "ALLREDUCE"), wd(2, 5, "BROADCAST", 112), wd(3, 5, "ALLREDUCE")])
    d = a.decision
    assert d.verdict.value == "desync", d.headline
    assert d.culprit_ranks == (2,) and d.stuck is not None and d.stuck.seq == 5


def test_two_ranks_in_two_ops_are_a_desync_with_no_culprit(tmp_path):
    d = analyse(tmp_path, [wd(0, 5, "BROADCAST", 112), wd(1, 5, "ALLREDUCE")]).decision
    assert d.verdict.value == "desync" and d.culprit_ranks == ()


def test_another_numel_of_an_allreduce_is_a_desync(tmp_path):
    d = analyse(tmp_path, [wd(0, 9, "ALLREDUCE", 4096), wd(1, 9, "ALLREDUCE", 4096), wd(2, 9, "ALLREDUCE", 77)]).decision
    assert d.verdict.value == "desync" and d.culprit_ranks == (2,)


def test_timeouts_that_agree_stay_a_hang(tmp_path):
    d = analyse(tmp_path, [wd(0, 5, "ALLREDUCE", 8), wd(1, 5, "ALLREDUCE", 8)]).decision
    assert d.verdict.value == "hang"


def test_rule_leaves_alltoall_sizes_p2p_and_other_seqs_alone():
    # all-to-all counts differ by rank in a well-formed call; a send meets a recv at one number; two numbers
    # are two collectives
    assert watchdog_mismatch([TimedOut(0, "0", 3, "alltoall", 10), TimedOut(1, "0", 3, "alltoall", 12)]) is None
    assert watchdog_mismatch([TimedOut(0, "0", 3, "send", 10), TimedOut(1, "0", 3, "recv", 10)]) is None
    assert watchdog_mismatch([TimedOut(0, "0", 3, "allreduce", 10), TimedOut(1, "0", 4, "broadcast", 10)]) is None
    assert watchdog_mismatch([TimedOut(0, "1", 3, "allreduce", 10), TimedOut(1, "2", 3, "broadcast", 10)]) is None


def test_rule_takes_the_earliest_mismatch_and_each_rank_s_first_timeout():
    hit = watchdog_mismatch([TimedOut(0, "0", 8, "allreduce"), TimedOut(1, "0", 8, "broadcast"),
                             TimedOut(0, "0", 6, "allgather"), TimedOut(1, "0", 6, "allreduce"),
                             TimedOut(1, "0", 6, "allgather")])
    assert hit is not None and hit[:2] == ("0", 6)
    assert sorted(s.sig[0] for s in hit[2]) == ["allgather", "allreduce"]  # type: ignore[index]
