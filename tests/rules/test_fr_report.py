"""The Flight Recorder analyser's own report in a log: a size, type or dtype mismatch it names is a desync (its culprits
the odd side), not a hang of every rank; ranks it finds missing are the hang's culprits (``rules.fr_report``)."""
from __future__ import annotations

from class2_cases import check
from ncclscope.model import Verdict
from ncclscope.rules.fr_report import stated


def test_a_size_mismatch_the_report_names_is_a_desync_over_the_timeouts():
    a = check("fr_trace_report_allgather_numel")
    assert a.decision.verdict is Verdict.DESYNC and a.decision.culprit_ranks == (1,)


def test_ranks_the_report_finds_missing_are_the_hang_s_culprits():
    a = check("fr_trace_report_missing_rank")
    assert a.decision.verdict is Verdict.HANG and a.decision.culprit_ranks == (5,)


def test_the_named_ranks_are_culprits_only_while_they_are_the_fewer():
    s = stated([(2, "SIZE_OR_SYNTAX_MISMATCH")], (), 8)
    assert s is not None and (s.verdict, s.culprits, s.what) == ("desync", (2,), ("size",))
    s = stated([(1, "COLLECTIVE_TYPE_MISMATCH"), (2, "COLLECTIVE_TYPE_MISMATCH"), (3, "COLLECTIVE_TYPE_MISMATCH")], (), 4)
    assert s is not None and s.verdict == "desync" and s.culprits == ()  # the reference rank is the odd one
    s = stated([(5, "COLLECTIVE_DTYPE_MISMATCH")], (), None)
    assert s is not None and s.culprits == (5,)  # no world printed: the report's word


def test_a_state_mismatch_is_no_desync():
    assert stated([(1, "COLLECTIVE_STATE_MISMATCH")], (), 4) is None
    s = stated([(1, "COLLECTIVE_STATE_MISMATCH")], (3,), 4)
    assert s is not None and (s.verdict, s.culprits) == ("hang", (3,))
