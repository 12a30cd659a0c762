"""One list of stall signals (``rules.facts.STALL_KINDS``): the hang detector and the decision's time line
(``rules.facts.stall_time``) read the same events, so that a run whose only stall signal is any one of them is a
stalled run to both, and a run with none is a snapshot of a running job to both."""
from __future__ import annotations

import pytest
from ncclscope.detectors import common, hang
from ncclscope.model import Evidence, Format, Job, LogEvent, PgStatus, Process, Run, empty_collectives
from ncclscope.rules.facts import STALL_KINDS, stall_events, stall_time
from ncclscope.verdict import decide

LOG = "ncclscope-rank0.jsonl"


def _run(*events: LogEvent) -> Run:
    """Two ranks of one process group, from the hook's heartbeats alone: rank 0 enqueued allreduce #5, rank 1 never
    did (its last is #4, completed on both)."""
    status = [PgStatus(0, "0", 5, None, 4, "hook", 100.0, Evidence(LOG, 3, '{"type":"hb","rank":0}')),
              PgStatus(1, "0", 4, None, 4, "hook", 100.0, Evidence("ncclscope-rank1.jsonl", 3, '{"type":"hb","rank":1}'))]
    job = Job(world_size=2, hosts=("h",), processes=(Process("h", 11, 0), Process("h", 12, 1)), nccl_version=None,
              torch_version=None, cuda_version=None)
    return Run(job=job, communicators=[], collectives=empty_collectives(), pg_status=status, events=list(events),
               exits=[], files=[(LOG, Format.JSONL), ("ncclscope-rank1.jsonl", Format.JSONL)])


def _signal(kind: str) -> LogEvent:
    return LogEvent(kind, 0, f"a {kind} of rank 0", Evidence(LOG, 7, f'{{"type":"{kind}","rank":0}}'), 160.0)


def _stuck(run: Run) -> list:
    return [f.stuck for f in hang.detect(run) if f.stuck is not None]


def test_the_detectors_read_the_rules_list():
    assert common.stall_events is stall_events


def test_without_a_stall_signal_neither_sees_a_stall():
    run = _run()
    assert stall_time(run) == (False, None)
    assert _stuck(run) == []


@pytest.mark.parametrize("kind", STALL_KINDS)
def test_each_stall_signal_is_a_stall_to_both(kind):
    run = _run(_signal(kind))
    assert stall_time(run) == (True, 160.0)
    stuck = _stuck(run)
    assert [(s.pg, s.seq) for s in stuck] == [("0", 5)]
    f = next(f for f in hang.detect(run) if f.stuck is not None)
    assert f.ranks == (1,) and any(e.line == 7 for e in f.evidence)  # the signal is among its evidence
    d = decide(run, hang.detect(run), ())
    assert (d.verdict.value, d.culprit_ranks) == ("hang", (1,))


def test_a_desync_report_and_a_monitored_barrier_timeout_are_stall_signals():
    """Both are printed only once a timeout expired with ranks waiting: the watchdog's after a collective timed
    out, ``monitored_barrier``'s when ranks failed to reach it in time."""
    assert {"desync_report", "barrier_failure"} <= set(STALL_KINDS)
