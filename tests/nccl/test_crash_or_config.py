"""Crash or config_error, decided by what the knowledge base says caused the failure (tests/data/classes3/).

The rule (failures.toml's header): config_error only where the cause is a setting or an installation the user chose
(a value set, a device named, an image or package picked, a container's set-up); a library, driver or device that
fails on the machine it runs on (a build mismatch, a resource NCCL exhausts, NCCL's own bug) is a crash, which a setting
the log names or a text naming the installation turns into config_error. A known bug of NCCL's own (area nccl-bug) is
a crash no rank is at fault for, whichever rank's process it hit. And the hints name the setting users need.
"""
from __future__ import annotations

import pytest
from classes3_cases import analysis, check
from ncclscope.nccl import failures as F
from ncclscope.rules.cause import Failure, lone_nccl_error
from ncclscope.rules.exits import FailureKind

CRASH_NOT_CONFIG = ["net_id_missing_after_nic_fusion", "nvls_multicast_oom_fabric_hint",
                    "usb_nic_topology_internal_error", "named_symbol_not_found_no_install_named"]
HINT_NAMES_SETTING = ["nccl219_alltoall_cumem_hang", "cumem_host_oom_pcie_shm", "cross_rail_connect_timeout",
                      "ras_thread_segfault_one_rank"]


@pytest.mark.parametrize("case", CRASH_NOT_CONFIG)
def test_nccl_bugs_and_build_mismatches_are_crashes(case):
    """Library bugs and resource exhaustion were read as config errors (a Fabric Manager hint, a topology WARN before
    the bug): they are crashes, no rank at fault."""
    check(case)


def test_a_device_setting_mismatch_is_a_config_error():
    """ibv_open_device / 'No such device' on a RoCE host whose fix is NCCL_IB_HCA: the set-up's, not a crash."""
    check("roce_ibv_open_device_wrong_hca")


@pytest.mark.parametrize("case", HINT_NAMES_SETTING)
def test_the_hint_names_the_setting(case):
    check(case)


def test_the_ras_thread_crash_does_not_blame_the_rank_that_hosted_it():
    a = check("ras_thread_segfault_one_rank")
    hosts = {p.rank for p in a.run.job.processes if p.pid == 288505}
    assert hosts == {2}  # the process is known to be rank 2 ...
    assert a.decision.culprit_ranks == ()  # ... and is not blamed


@pytest.mark.parametrize("text,eid,verdict", [
    ("graph/topo.h:234 Could not find NET with id 0", "bug-net-id-not-found", "crash"),
    ("graph/xml.h:85 Attribute busid of node nic not found", "bug-nic-without-pci-busid", "crash"),
    ("Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 2 'out of memory'.",
     "bug-nvls-multicast-exhausted", "crash"),
    ("Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 801 'operation not supported'.",
     "nvls-bind", "config_error"),  # a Fabric Manager / fabric state error stays the set-up's
    ("Segmentation fault inside NCCL at rasThreadMain (ras/ras.cc:588) (a native crash report)",
     "bug-ras-thread-crash", "crash"),
    ("enqueue.cc:100 NCCL WARN Cuda failure 'named symbol not found'", "nccl-cuda-named-symbol", "crash"),
    ("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.",
     "torch-arch-unsupported", "config_error"),  # the installation named: config
    ("misc/ibvwrap.cc:212 Call to ibv_open_device failed", "ib-open-device-failed", "config_error"),
    ("Call to ibv_modify_qp failed with error No such device", "ib-modify-qp-no-device", "config_error"),
    ("Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_3:1, curr state INIT, next state RTR",
     "ib-modify-qp-timeout", "crash"),
    ("Call to ibv_create_qp failed with error Cannot allocate memory", "ib-create-qp-cq", "crash"),
    ("Mismatched NCCL version detected : rank 0 version 21805 rank 3 version 22105", "init-version-mismatch",
     "config_error"),
])
def test_the_knowledge_base_decides(text, eid, verdict):
    e = F.classify(text)
    assert e is not None and e.id == eid and e.verdict == verdict, (e and e.id, e and e.verdict)


def test_a_search_that_falls_back_is_a_note_not_a_failure():
    e = F.classify("Could not find a path for pattern 1, falling back to simple order")
    assert e is not None and e.kind == "note" and e.verdict is None
    assert F.classify("No path computed to go from GPU/3 to NET/0").id == "topo-no-path"


@pytest.mark.parametrize("text,words", [
    ("Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_2:1", "NCCL_CROSS_NIC"),
    ("include/alloc.h:98 Cuda failure 2 'out of memory'", "NCCL_CUMEM_HOST_ENABLE"),
    ("Cuda failure 2 'out of memory' ", "NCCL_CUMEM_HOST_ENABLE"),  # torch's Last error, no source: both named
    ("NCCL version 2.19.3+cuda12.2", "NCCL_CUMEM_ENABLE"),
    ("Segmentation fault inside NCCL at rasThreadMain (ras/ras.cc:588)", "NCCL_RAS_ENABLE"),
    ("graph/topo.h:234 Could not find NET with id 0", "NCCL_NET_MERGE_LEVEL"),
    ("Call to ibv_open_device failed", "NCCL_IB_HCA"),
])
def test_hints_name_the_setting(text, words):
    assert words in F.classify(text).fix


def test_bug_entries_argue_crash_and_are_marked():
    bugs = [e for e in F.entries() if e.area == "nccl-bug"]
    assert len(bugs) >= 4 and all(e.is_bug and e.verdict == "crash" for e in bugs)
    assert not any(e.is_bug for e in F.entries() if e.area != "nccl-bug")


def test_a_lone_nccl_bug_names_no_rank():
    """One rank's NCCL error with the others only echoing it names that rank, unless the knowledge base calls the
    message NCCL's own bug."""
    echoes = [Failure(1, FailureKind.TIMEOUT, "Watchdog caught collective operation timeout")]
    own = Failure(0, FailureKind.NCCL, "ncclInternalError: Internal check failed. Last error: Could not find NET with id 0")
    other = Failure(0, FailureKind.NCCL, "ncclInternalError: Internal check failed.")
    assert lone_nccl_error(other, echoes)
    assert not lone_nccl_error(own, echoes)


def test_net_id_case_reads_the_fallback_warn_as_a_note():
    a = analysis("net_id_missing_after_nic_fusion")
    notes = [f for f in a.findings if f.data.get("entry") == "topo-no-path-fallback"]
    assert notes and all(f.verdict is None for f in notes)
