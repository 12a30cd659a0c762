"""A peer killed from outside, read from logs: the rank whose lines stop with no end of its own while the others say a
peer went away is the crash's culprit (``rules.lost_peer``), named by the silence or by the address the reports give."""
from __future__ import annotations

import pytest
from class2_cases import check
from ncclscope.model import Verdict
from ncclscope.rules.cause import Failure
from ncclscope.rules.exits import FailureKind
from ncclscope.rules.lost_peer import Report, lost_peer, says_peer_gone

CLOSED = "NCCL WARN socketProgress: Connection closed by remote peer 10.1.0.9<43117>"


@pytest.mark.parametrize("name, lost", [("peer_killed_others_name_its_address", 3),
                                        ("peer_killed_silent_rank_reset_by_peer", 2)])
def test_the_rank_whose_lines_stop_is_the_lost_peer(name, lost):
    a = check(name)
    assert (a.decision.verdict, a.decision.culprit_ranks) == (Verdict.CRASH, (lost,))


def test_peer_gone_words_are_not_a_link_failure():
    assert says_peer_gone("remote process exited or there was a network error; Last error: Connection reset by peer")
    assert not says_peer_gone("remote process exited or there was a network error; Last error: NET/IB : Got "
                              "completion from peer 10.0.0.2<4> with error 12, opcode 0, len 0, vendor err 129")


def _fails(ranks):
    return [Failure(r, FailureKind.PEER, "Connection closed by remote peer 10.1.0.9<43117>", None, ("f", 10 + r))
            for r in ranks]


def test_one_silent_rank_is_named():
    got = lost_peer({0, 1, 2, 3}, _fails([0, 1, 2]), [Report(r, CLOSED) for r in (0, 1, 2)], (), {})
    assert got is not None and (got.rank, got.kind) == (3, FailureKind.VANISHED)


def test_the_named_address_picks_one_of_several_silent_ranks():
    reports = [Report(0, CLOSED), Report(1, CLOSED)]
    assert lost_peer({0, 1, 2, 3}, _fails([0, 1]), reports, (), {}) is None
    got = lost_peer({0, 1, 2, 3}, _fails([0, 1]), reports, (), {2: {"node-a", "10.1.0.4"}, 3: {"node-b", "10.1.0.9"}})
    assert got is not None and got.rank == 3
    # an address inside a longer one names nobody
    assert lost_peer({0, 1, 2, 3}, _fails([0, 1]), reports, (), {2: {"10.1.0.90"}, 3: {"10.1.0.91"}}) is None


def test_a_cause_of_its_own_or_a_known_end_leaves_nobody_lost():
    own = _fails([0, 1]) + [Failure(2, FailureKind.OOM, "CUDA out of memory", None, ("f", 5))]
    assert lost_peer({0, 1, 2, 3}, own, [Report(0, CLOSED)], (), {}) is None
    assert lost_peer({0, 1, 2}, _fails([0, 1]), [Report(0, CLOSED)], ended={2}, addresses={}) is None
    stopped = _fails([0, 1]) + [Failure(None, FailureKind.INTERRUPT, "KeyboardInterrupt", None, ("f", 3))]
    assert lost_peer({0, 1, 2}, stopped, [Report(0, CLOSED)], (), {}) is None
