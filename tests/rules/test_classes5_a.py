"""Round five's cases (tests/data/classes5/c5a_*): network setup faults that read as a crash (the rendezvous store's
address has no route from the other nodes; Gloo's full mesh never connected; a loopback socket closed in a job of one
process; InfiniBand protection errors on every node), config errors with no culprit rank and the setting named in the
hint; finished runs that read unknown or hang (nccl-tests runs saved one per file, a check script's pass lines, a
serving benchmark's result, an indented mpirun console), healthy."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

from ncclscope.nccl.failures import classify

SET = CaseSet(DATA / "classes5")
MINE = SET.names("c5a_")


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def test_store_unreachable_is_a_setting_but_refused_is_not():
    def entry(text: str) -> str | None:
        k = classify(text)
        return k.id if k is not None else None

    assert entry("The client socket has failed to connect to 10.1.2.3:29500 (errno: 113 - No route to host).") \
        == "c10d-client-unreachable"
    assert entry("The client socket has failed to connect to [h-1]:29500 (errno: 101 - Network is unreachable).") \
        == "c10d-client-unreachable"
    assert entry("The client socket has failed to connect to [h-1]:29500 (errno: 111 - Connection refused).") \
        == "c10d-client-refused"


def test_loopback_closed_reads_each_release_form_and_only_the_loopback():
    from ncclscope.detectors.config import LOOPBACK_CLOSED_RE

    assert LOOPBACK_CLOSED_RE.search("socketProgress: Connection closed by remote peer localhost<41833>")
    assert LOOPBACK_CLOSED_RE.search("Net : Connection closed by remote peer 127.0.0.1<46071>")
    assert LOOPBACK_CLOSED_RE.search("socketProgressOpt: Call to recv from 127.0.0.1<38811> failed : Connection reset by peer")
    assert LOOPBACK_CLOSED_RE.search("ncclOsSocketProgressOpt: Call to send to [::1]<5000> failed : Broken pipe")
    assert not LOOPBACK_CLOSED_RE.search("socketProgress: Connection closed by remote peer 10.0.0.2<41833>")
    assert not LOOPBACK_CLOSED_RE.search("socketProgress: Connection closed by remote peer node-b<41833>")
