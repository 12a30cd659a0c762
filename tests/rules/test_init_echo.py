"""A framework's own word that the start failed, after an NCCL init that never completed, is the init hang's echo: the
hang is the verdict, its culprits the ranks still in init (``rules.init_echo``); a framework line that names a cause
(an out-of-memory error) stays that cause."""
from __future__ import annotations

import pytest
from class2_cases import check
from ncclscope.model import Verdict
from ncclscope.rules.cause import Failure
from ncclscope.rules.exits import FailureKind
from ncclscope.rules.init_echo import init_echoes, is_echo_of_init


@pytest.mark.parametrize("name, rank", [("framework_gave_up_after_init_hang", 0),
                                        ("engine_start_timed_out_after_init_hang", 2)])
def test_the_init_hang_is_the_verdict_not_the_framework_s_exception(name, rank):
    a = check(name)
    assert (a.decision.verdict, a.decision.culprit_ranks) == (Verdict.HANG, (rank,))


def test_only_the_framework_s_words_of_a_failed_start_are_echoes():
    died = Failure(None, FailureKind.EXCEPTION, "RuntimeError: Rank 0 scheduler died (exit code: -9)", None, ("f", 9))
    oom = Failure(None, FailureKind.OOM, "torch.OutOfMemoryError: CUDA out of memory while starting", None, ("f", 9))
    other = Failure(1, FailureKind.EXCEPTION, "KeyError: 'model.layers.3'", None, ("f", 4))
    watchdog = Failure(0, FailureKind.TIMEOUT, "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, ...)",
                       None, ("f", 2))
    got = init_echoes([died, oom, other, watchdog], init_stalled=True)
    assert [is_echo_of_init(f) for f in got] == [True, False, False, False]
    assert init_echoes([died], init_stalled=False) == [died]  # no init left open: the exception stands
