"""Round five's cases (tests/data/classes5/c5a_*): network setup faults that read as a crash (the rendezvous store's
address has no route from the other nodes: a launcher's pick of a docker bridge, a link-local or a first interface),
config errors with no culprit rank and the setting named in the hint."""
from __future__ import annotations

import json

import pytest
from class_cases import CaseSet
from wild_cases import DATA

from ncclscope.nccl.failures import classify

SET = CaseSet(DATA / "classes5")
MINE = sorted(json.loads(line)["case"] for line in (DATA / "classes5" / "EXPECTED.jsonl").read_text().splitlines()
              if line.strip() and json.loads(line)["case"].startswith("c5a_"))


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
