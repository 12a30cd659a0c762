"""Round eight's cases (tests/data/classes8/c8b_*): setup faults read as crashes. A process that asks CUDA for a
device index its host does not have (more processes placed on a host than its GPUs) is a config error; NCCL's
refusal of a connection whose two ends chose different network transports (socket type 3 against InfiniBand's 4)
is a network crash whose advice names NCCL_IB_DISABLE. Slow runs: c10d's warnings of client sockets whose hostname
could not be retrieved (failed reverse lookups, each a resolver timeout) are a slow start-up, degraded."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from class_cases import CaseSet
from ncclscope.detectors import slow_init
from ncclscope.model import EventKind, Evidence, LogEvent, Verdict
from ncclscope.nccl.failures import EntryVerdict, classify
from ncclscope.sources.records import C10dLine
from ncclscope.sources.torch_log import parse_torch_lines
from wild_cases import DATA

SET = CaseSet(DATA / "classes8")
MINE = SET.names("c8b_")


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def test_an_invalid_device_ordinal_is_a_setting():
    for text in ("RuntimeError: CUDA error: invalid device ordinal",
                 "gpunode3: Test CUDA failure common.cu:892 'invalid device ordinal'"):
        k = classify(text)
        assert k is not None and k.id == "cuda-invalid-ordinal" and k.verdict == EntryVerdict.CONFIG_ERROR


def test_a_transport_type_mismatch_is_told_apart_from_a_stranger_on_the_port():
    for text in ("socketFinalizeAccept: wrong type 3 != 4", "socketFinalizeAccept: wrong type 4 != 3"):
        k = classify(text)
        assert k is not None and k.id == "socket-wrong-type-net" and "NCCL_IB_DISABLE" in k.fix
    for text in ("socketFinalizeAccept: wrong type 2 != 1", "socketFinalizeAccept: wrong magic 4745 != 3c4a"):
        k = classify(text)
        assert k is not None and k.id == "socket-wrong-magic"


def test_a_glog_head_whose_month_lost_its_leading_zero_is_read():
    line = "[W311 09:14:16.716462276 socket.cpp:200] [c10d] The hostname of the client socket cannot be retrieved. err=-3"
    recs = [r for r in parse_torch_lines([(1, line)], "x.log") if isinstance(r, C10dLine)]
    assert len(recs) == 1 and recs[0].ts_text == "0311 09:14:16.716462276"


def _lookups(n: int) -> Any:
    text = "[W socket.cpp:601] [c10d] The hostname of the client socket cannot be retrieved. err=-3"
    return SimpleNamespace(events=[LogEvent(EventKind.C10D_LINE, None, text, Evidence("x.log", i + 1, text)) for i in range(n)])


def test_failed_reverse_lookups_are_a_slow_start_only_when_repeated():
    assert slow_init.detect(_lookups(1)) == []  # one lookup: one resolver timeout
    found = slow_init.detect(_lookups(3))
    assert len(found) == 1 and found[0].verdict is Verdict.DEGRADED and "hostname" in found[0].message
