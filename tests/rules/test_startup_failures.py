"""Failures read as a hang, undone: a connection that failed while NCCL started (a connect abort, refused retries) on
every rank is a crash of the start with no rank to blame, not a hang of init and not the first rank torchrun reaped
(``rules.startup``, ``cause.explain_exits``); a return chain with no WARN before it that reaches NCCL's API is that
call's failure (``chain.orphan_chains``)."""
from __future__ import annotations

import pytest
from class2_cases import check
from ncclscope.model import Evidence, LogEvent, Verdict
from ncclscope.rules.cause import Failure, explain_exits, root_cause
from ncclscope.rules.chain import orphan_chains
from ncclscope.rules.exits import FailureKind
from ncclscope.rules.startup import connect_failed, orphan_failures, startup_failures


@pytest.mark.parametrize("name", ["startup_connect_abort_every_rank", "startup_refused_retries_no_warn"])
def test_a_start_that_failed_to_connect_on_every_rank_is_a_crash_with_no_culprit(name):
    a = check(name)
    assert a.decision.verdict is Verdict.CRASH and a.decision.culprit_ranks == ()
    assert not a.decision.headline.startswith("rank"), a.decision.headline  # what failed, not who exited first


def test_connect_failures_are_told_from_broken_connections():
    assert connect_failed("socketStartConnect: Connect to 10.0.0.2<45763> failed : Software caused connection abort")
    assert connect_failed("socketPollConnect: connect to 10.1.0.7<4327> returned Connection refused, exceeded error "
                          "retry count after 35 attempts")
    assert connect_failed("Call to connect failed : Connection refused")
    assert not connect_failed("socketProgress: Connection closed by remote peer node2<42830>")
    assert not connect_failed("Call to recv from 10.0.0.2<51234> failed : Connection reset by peer")


def test_a_connect_failure_counts_only_before_the_rank_finished_an_init_and_on_every_rank_starting():
    refused = "socketStartConnect: Connect to 10.0.0.2<4> failed : Connection refused"
    warns = [(0, refused, None, ("f", 3)), (1, refused, None, ("f", 9))]
    got = startup_failures(warns, initialised={1}, seen={0, 1})
    assert [(f.rank, f.kind) for f in got] == [(0, FailureKind.NETWORK)]
    assert startup_failures(warns[:1], initialised=(), seen={0, 1, 2}) == []  # one rank's, the others froze: no


def test_an_exit_after_the_rank_s_own_network_failure_is_that_failure():
    fs = explain_exits([Failure(0, FailureKind.NETWORK, "NCCL WARN connect failed", None, ("f", 5)),
                        Failure(0, FailureKind.EXIT, "exit code 1", None, ("", -1), 1),
                        Failure(1, FailureKind.EXCEPTION, "ValueError: bad batch", None, ("f", 7)),
                        Failure(1, FailureKind.EXIT, "exit code 1", None, ("f", 9), 1)])
    assert [f.kind for f in fs] == [FailureKind.NETWORK, FailureKind.NETWORK, FailureKind.EXCEPTION, FailureKind.EXIT]
    cause = root_cause(fs)
    assert cause is not None and cause.first is fs[1] and cause.culprits == ()  # torchrun's first, the network's


def _bt(rank: int, line: int, src: str, code: int = 6) -> LogEvent:
    return LogEvent("nccl_backtrace", rank, f"{src} -> {code}", Evidence("n.log", line, f"h:1:2 [0] NCCL INFO {src} -> {code}"),
                    None, {"code": code})


def test_a_chain_with_no_warn_that_reaches_the_api_is_the_call_s_failure():
    events = [_bt(0, 10, "misc/socket.cc:745"), _bt(0, 11, "bootstrap.cc:118"), _bt(0, 12, "init.cc:1689"),
              _bt(1, 40, "transport/p2p.cc:300"), _bt(1, 41, "proxy.cc:1500")]  # a helper thread's, never returned
    assert len(orphan_chains(events)) == 2
    got = orphan_failures(events, taken=())
    assert [(f.rank, f.kind, f.order) for f in got] == [(0, FailureKind.NETWORK, ("n.log", 10))]
