"""Round eight's cases (tests/data/classes8/c8b_*): setup faults read as crashes. A process that asks CUDA for a
device index its host does not have (more processes placed on a host than its GPUs) is a config error; NCCL's
refusal of a connection whose two ends chose different network transports (socket type 3 against InfiniBand's 4)
is a network crash whose advice names NCCL_IB_DISABLE."""
from __future__ import annotations

import json

import pytest
from class_cases import CaseSet
from ncclscope.nccl.failures import EntryVerdict, classify
from wild_cases import DATA

SET = CaseSet(DATA / "classes8")
MINE = sorted(json.loads(line)["case"] for line in (DATA / "classes8" / "EXPECTED.jsonl").read_text().splitlines()
              if line.strip() and json.loads(line)["case"].startswith("c8b_"))


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
