"""When the text shows a failure, the verdict is that failure, never 'unknown': an NCCL WARN whose return chain
reaches the application's call (``rules.chain``), the framework's 'ncclCommInitRank ... failed', echoes alone on the
time line and error findings nothing outlived (``rules.shown``). A normal start shown alone is healthy, certainty
possible, with what the input covers (``rules.healthy.start_only`` / ``sweep_done``)."""
from __future__ import annotations

import pytest
from class_cases import check
from ncclscope.model import Evidence, Verdict
from ncclscope.rules import healthy, shown
from ncclscope.rules.cause import Failure
from ncclscope.rules.chain import returned_to_caller
from ncclscope.rules.exits import FailureKind

EV = Evidence("x.log", 1, "")


def test_a_chain_reaching_ncclapi_returned_to_the_caller():
    assert returned_to_caller([("misc/socket.cc:567", 2, EV), ("bootstrap.cc:285", 2, EV), ("init.cc:1925", 2, EV)])
    assert returned_to_caller([("transport/net.cc:288", 3, EV), ("src/enqueue.cc:1203", 3, EV)])
    assert not returned_to_caller([("misc/socket.cc:567", 2, EV), ("bootstrap.cc:285", 2, EV)])  # a helper thread
    assert not returned_to_caller([("proxy.cc:1306", 2, EV), ("transport/net.cc:592", 2, EV)])
    assert not returned_to_caller([("init.cc:1925", 0, EV)])


def test_echoes_alone_are_a_crash_elsewhere_or_a_hang():
    peer = Failure(1, FailureKind.PEER, "Connection reset by peer")
    s = shown.echoes_only([peer], left=())
    assert s is not None and (s.verdict, s.culprits, s.level) == (Verdict.CRASH, (), "possible")
    wait = Failure(1, FailureKind.TIMEOUT, "DistStoreError: wait timeout after 300000ms")
    s = shown.echoes_only([wait], left=(0, 1))
    assert s is not None and (s.verdict, s.culprits, s.level) == (Verdict.HANG, (0,), "likely")
    s = shown.echoes_only([wait], left=())
    assert s is not None and (s.verdict, s.culprits, s.level) == (Verdict.HANG, (), "possible")
    assert shown.echoes_only([peer, Failure(0, FailureKind.OOM, "CUDA out of memory")], left=()) is None  # a cause
    assert shown.echoes_only([Failure(None, FailureKind.KILLED, "SIGTERM")], left=()) is None  # stopped from outside
    assert shown.echoes_only([], left=()) is None


def test_an_error_nothing_outlived_is_a_crash():
    s = shown.errors_shown([("NCCL WARN x (survived)", True), ("NCCL WARN y", False)])
    assert s is not None and s.verdict is Verdict.CRASH and s.why == "NCCL WARN y"
    assert shown.errors_shown([("NCCL WARN x", True)]) is None


def test_what_a_normal_start_covers():
    c = healthy.start_only([(8, 8)], 2.45, launched=False, application=False, collectives=False, failed=False,
                           exit_code=None)
    assert c is not None and c.why.startswith("8 of 8 ranks finished init in 2.45 s; nothing after it")
    args = {"launched": False, "application": False, "collectives": False, "failed": False, "exit_code": None}
    assert healthy.start_only([(8, 4)], None, **args) is None  # the other ranks are not shown complete
    assert healthy.start_only([(2, 2)], None, **{**args, "launched": True}) is None  # Launch mode: a collective ran
    assert healthy.start_only([(2, 2)], None, **{**args, "application": True}) is None  # the console fell silent
    assert healthy.start_only([(2, 2)], None, **{**args, "failed": True}) is None
    assert healthy.sweep_done(10, [8, 1 << 27], 0, False).why.startswith("the nccl-tests sweep completed: 2 sizes from 8 B")
    assert healthy.sweep_done(10, [8], None, False) is None


@pytest.mark.parametrize("name", ["warn_chain_to_init_no_exception", "init_warn_then_comminitrank_failed",
                                  "placeholder_host_socket_chain", "cut_heads_oom_in_init"])
def test_a_failure_shown_is_the_verdict(name):
    a = check(name)
    assert a.decision.verdict is not Verdict.UNKNOWN


@pytest.mark.parametrize("name", ["init_timings_only_two_nodes", "redacted_pids_init_p2p", "nccltests_sweep_completed"])
def test_a_normal_start_alone_is_healthy_possibly(name):
    a = check(name)
    assert a.decision.verdict is Verdict.HEALTHY and a.decision.certainty == "possible"
