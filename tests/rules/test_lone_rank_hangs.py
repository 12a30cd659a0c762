"""Hangs with a culprit that read as healthy or unknown: one rank alone in a collective while the others finished
and left (``detectors.hang``: ranks that left are in no later collective), a rank waiting on the store after its
peer exited (``rules.shown.echoes_only``), and NCCL's records stopping with a collective pending and nothing after
(``rules.shown.pending_at_end``)."""
from __future__ import annotations

import pytest
from class_cases import check
from ncclscope.rules.shown import pending_at_end


def test_pending_at_end():
    assert pending_at_end({0: 24, 1: 23}, True) == (1,)
    assert pending_at_end({0: 24, 1: 23}, False) == ()  # the job went on, ended or failed: its own story
    assert pending_at_end({0: 24, 1: 24, 2: 24, 3: 23}, True) == (3,)
    assert pending_at_end({0: 24, 1: 24, 2: 23, 3: 23}, True) == ()  # as many behind as ahead: a snapshot
    assert pending_at_end({0: 5, 1: 5}, True) == ()


@pytest.mark.parametrize("name", ["lone_rank_in_allreduce_others_finished", "store_wait_after_peer_exited",
                                  "coll_lines_stop_with_one_pending"])
def test_hangs_whose_culprit_left_or_never_arrived(name):
    a = check(name)
    assert a.decision.culprit_ranks
