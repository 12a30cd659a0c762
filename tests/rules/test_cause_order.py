"""Causality with no clock: the order of one file decides whether a rank's failure came before or after
the others' watchdog timeouts (torch's glog heads carry no year, so these lines give no time)."""
from __future__ import annotations

from pathlib import Path

from ncclscope import rules
from ncclscope.analysis import analyze_paths
from ncclscope.rules import FailureKind


def timeout(rank: int) -> list[str]:
    return [
        (f"[rank{rank}]:[E513 07:41:10.204118372 ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=18876, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran "
        "for 1800085 milliseconds before timing out."),
        (f"[rank{rank}]:[E513 07:41:10.204402117 ProcessGroupNCCL.cpp:1664] [PG 0 Rank {rank}] Exception (either an "
        "error or timeout) detected by watchdog at work: 18876, last enqueued NCCL work: 18876, last completed NCCL "
        "work: 18875."),
    ]


OOM = ["[rank0]: Traceback (most recent call last):",
       '[rank0]:   File "/data/tools/save_sharded.py", line 88, in consolidate',
       "[rank0]:     state = optim.state_dict()",
       "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate more than 1EB memory."]


def analyse(tmp_path: Path, lines: list[str]):
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    return analyze_paths([tmp_path / "train.log"], cache=False)


def test_a_failure_printed_after_the_timeouts_is_their_echo(tmp_path):
    a = analyse(tmp_path, timeout(3) + timeout(1) + timeout(2) + OOM)
    assert a.decision.verdict.value == "hang", a.decision.headline
    assert a.decision.stuck is not None and a.decision.stuck.seq == 18876


def test_a_failure_printed_before_the_timeouts_is_the_cause(tmp_path):
    a = analyse(tmp_path, OOM + timeout(3) + timeout(1) + timeout(2))
    assert a.decision.verdict.value == "crash", a.decision.headline
    assert a.decision.culprit_ranks == (0,)


def test_lines_of_different_files_have_no_order():
    stall = rules.Failure(1, FailureKind.TIMEOUT, "Watchdog caught collective operation timeout", None, ("a.log", 1))
    oom = rules.Failure(0, FailureKind.OOM, "CUDA out of memory", None, ("b.log", 9))
    cause = rules.root_cause([stall, oom], None, True)
    assert cause is not None and cause.verdict == "crash"
    later = rules.Failure(0, FailureKind.OOM, "CUDA out of memory", None, ("a.log", 9))
    cause = rules.root_cause([stall, later], None, True)
    assert cause is not None and cause.verdict == "hang"
