"""Round seven's cases (tests/data/classes7/c7c_*): setup faults read as a hang or a crash (a libnccl other than the
one the caller was built for), the knowledge base's words for RoCE GIDs a container cannot read and for a serving
framework's custom all-reduce on GPUs without peer access."""
from __future__ import annotations

import json

import pytest
from class_cases import CaseSet
from wild_cases import DATA

from ncclscope.nccl.failures import EntryVerdict, classify

SET = CaseSet(DATA / "classes7")
MINE = sorted(json.loads(line)["case"] for line in (DATA / "classes7" / "EXPECTED.jsonl").read_text().splitlines()
              if line.strip() and json.loads(line)["case"].startswith("c7c_"))


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def test_gid_read_failures_name_the_gid_index():
    for text in ("NET/IB: read failed in ncclIbRoceGetVersionNum: Invalid argument",
                 "NET/IB: open failed in ncclIbRoceGetVersionNum: No such file or directory"):
        k = classify(text)
        assert k is not None and k.id == "ib-roce-gid-read" and "NCCL_IB_GID_INDEX" in k.hint


def test_peer_access_names_the_custom_all_reduce():
    k = classify("RuntimeError: CUDART error: peer access is not supported between these two devices")
    assert k is not None and "--disable-custom-all-reduce" in k.hint


def test_config_struct_rejected_is_a_setup_error():
    for text in ("Invalid config blocking attribute value -2147483648",
                 "ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER"):
        k = classify(text)
        assert k is not None and k.verdict == EntryVerdict.CONFIG_ERROR
