"""Round eight's cases (tests/data/classes8/c8c_*): the releases a program states in its own JSON record of its
environment (one JSON object a line, bare or behind a logger's prefix) are the job's torch, CUDA and NCCL releases;
NCCL's as a version string or as the list ``torch.cuda.nccl.version()`` returns; a key nested in an inner object is
none of them."""
from __future__ import annotations

import json

import pytest
from class_cases import CaseSet
from ncclscope.sources.json_record import json_releases
from wild_cases import DATA

SET = CaseSet(DATA / "classes8")
MINE = sorted(json.loads(line)["case"] for line in (DATA / "classes8" / "EXPECTED.jsonl").read_text().splitlines()
              if line.strip() and json.loads(line)["case"].startswith("c8c_"))


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


def test_a_json_environment_record_states_the_releases():
    line = '{"rank": 1, "event": "env", "torch": "2.8.0+cu128", "cuda": "12.8", "nccl": "2.27.3", "world_size": 2}'
    assert json_releases(line) == ("2.8.0+cu128", "12.8", "2.27.3")
    assert json_releases('INFO env {"NCCL_VERSION": [2, 21, 5], "PyTorch": "v2.4.0"}') == ("2.4.0", None, "2.21.5")


def test_other_json_lines_state_no_release():
    assert json_releases('{"deps": {"torch": "2.1.0", "nccl": "2.18.1"}, "rank": 0}') is None  # nested: no statement
    assert json_releases('{"rank": 0, "event": "decode", "step": 2, "eos": true}') is None
    assert json_releases('{"torch": "latest", "nccl": [2, "x"]}') is None  # no version in either
    assert json_releases('{"torch": "2.1.0", ') is None  # a cut line is no object
    assert json_releases('NCCL INFO cudaDriverVersion 12040 {"nccl": "2.21.5"') is None
