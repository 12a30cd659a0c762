"""Round ten's set-up cases (tests/data/classes10/c10b_*): which failures a setting the user chose explains. NCCL's ring
check and a shared-memory segment missing at attach name no setting: a crash, unless the job set NCCL_HOSTID /
NCCL_GRAPH_FILE / NCCL_TOPO_FILE (then a config error naming it); a full /dev/shm is a container's set-up. A TCPStore
asked for libuv by a build without it, and a rendezvous port held by a stale process, are config errors."""
from __future__ import annotations

import json

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes10")
MINE = sorted(json.loads(line)["case"] for line in (DATA / "classes10" / "EXPECTED.jsonl").read_text().splitlines()
              if line.strip() and json.loads(line)["case"].startswith("c10b_"))


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


@pytest.mark.parametrize("text,entry,verdict", [
    ("Error while attaching to shared memory segment /dev/shm/nccl-Ab12Cd (size 4096), error: No such file or directory (2)",
     "shm-attach-missing", "crash"),
    ("Error while attaching to shared memory segment /dev/shm/nccl- (size 0), error: No such file or directory (2)",
     "shm-attach-empty-segment", "config_error"),
    ("Error while creating shared memory segment /dev/shm/nccl-Ab12Cd (size 4096), error: No space left on device (28)",
     "shm-segment", "config_error"),
    ("Error : ring 2 does not loop back to start (4 != 0).", "topo-ring-inconsistent", "crash"),
    ("RuntimeError: use_libuv was requested but PyTorch was build without libuv support", "c10d-store-no-libuv",
     "config_error"),
])
def test_which_entry_and_verdict(text, entry, verdict):
    from ncclscope.nccl.failures import classify

    k = classify(text)
    assert k is not None and k.id == entry and k.verdict is not None and k.verdict.value == verdict
