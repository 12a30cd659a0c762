"""Round twenty-six's cases (tests/data/classes26/), written from the twentieth held-out set's misreadings: c10d's own
warnings, repeated or from several ranks, that the host name they must connect to has no address on their node (``The
IPv4 network addresses of (trn-head, 29511) cannot be retrieved (gai error: -3 ...)``), with nothing set up and no
progress after, are a config error of the hosts' names; a serving framework's custom all-reduce aborting because the
GPUs have no peer access (the check's source, ``custom_all_reduce.cuh``, before the CUDA message) is a config error:
a feature left on that the machine cannot run (knowledge base ``custom-allreduce-no-p2p``)."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes26")
MINE = SET.names()


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def test_the_check_source_goes_before_the_message_for_the_knowledge_base():
    from ncclscope.detectors.config import _error_text
    from ncclscope.model import EventKind, Evidence, LogEvent
    from ncclscope.nccl.failures import classify

    e = LogEvent(EventKind.DIST_ERROR, None, "x", Evidence("f", 1, "x"), None,
                 {"type": "CUDA failure", "message": "peer access is not supported between these two devices",
                  "frames": ["/w/vllm/csrc/custom_all_reduce.cuh:307"]})
    entry = classify(_error_text(e))
    assert entry is not None and entry.id == "custom-allreduce-no-p2p"
    plain = LogEvent(EventKind.DIST_ERROR, None, "x", Evidence("f", 1, "x"), None,
                     {"type": "RuntimeError", "message": "CUDA error: peer access is not supported between these two "
                      "devices", "frames": ['File "/srv/p2p_copy.py", line 21']})
    assert classify(_error_text(plain)).id == "cuda-peer-access"
