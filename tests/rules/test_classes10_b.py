"""Round ten's set-up cases (tests/data/classes10/c10b_*): which failures a setting the user chose explains. NCCL's ring
check and a shared-memory segment missing at attach name no setting: a crash, unless the job set NCCL_HOSTID /
NCCL_GRAPH_FILE / NCCL_TOPO_FILE (then a config error naming it); a full /dev/shm is a container's set-up. A TCPStore
asked for libuv by a build without it, and a rendezvous port held by a stale process, are config errors. NCCL's error
text quoted alone (no head) is read when it names NCCL and the knowledge base knows it: a forced NCCL_ALGO / NCCL_PROTO
it could not honour is a config error. The WARN a communicator's clean-up printed (right before commReclaim's 'failed
in destroy/abort') is clean-up noise, not the job's failure. A communicator abort that never returns names
ncclCommAbort and why it waits (every rank of a node must abort). An nccl-tests table alone between GB10 systems is held
to one of the two HCAs of their port, its hint naming NCCL_IB_HCA. NCCL's kernel not found ('named symbol not found')
on Blackwell GPUs is an NCCL built without their architecture: a config error. Ranks in Docker containers (container ids
as host names) whose world spans machines, failing with NCCL's system error, are on a bridge network: a config
error."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes10")
MINE = SET.names("c10b_")


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


@pytest.mark.parametrize("text,read", [
    ("Error : no algorithm/protocol available for function ReduceScatter with datatype ncclBfloat16. NCCL_ALGO was set "
     "to NVLS.", True),
    ("no algorithm/protocol available for this layer's quantised kernel", False),  # names no NCCL
    ("NCCL_ALGO=Ring made it faster for us", False),  # names NCCL, no message of NCCL's
    ("RuntimeError: CUDA error: an illegal memory access was encountered (NCCL build 2.21)", False),  # CUDA's, not NCCL's
])
def test_an_nccl_error_quoted_alone_is_read(tmp_path, text, read):
    from ncclscope.ingest.quoted import quoted_nccl_errors

    f = tmp_path / "quote.txt"
    f.write_text(f"what we saw:\n{text}\n")
    got = quoted_nccl_errors(f, "quote.txt")
    assert [r.line for r in got] == ([2] if read else [])


def test_text_naming_no_nccl_is_still_nothing_readable(tmp_path):
    from ncclscope.analysis import analyze_paths
    from ncclscope.input_names import InputError

    f = tmp_path / "notes.txt"
    f.write_text("no algorithm/protocol available for this layer's quantised kernel\n")
    with pytest.raises(InputError, match="nothing readable"):
        analyze_paths([f], cache=False)


@pytest.mark.parametrize("gpu,blackwell", [
    ("NVIDIA B200", True), ("NVIDIA GB200", True), ("NVIDIA B300 SXM6 AC", True), ("NVIDIA GeForce RTX 5090", True),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", True),
    ("NVIDIA GB10", True), ("NVIDIA H100 80GB HBM3", False), ("NVIDIA GeForce RTX 4090", False),
])
def test_which_gpus_need_an_nccl_built_for_blackwell(gpu, blackwell):
    from ncclscope.detectors.nccl_warn import BLACKWELL_GPU_RE

    assert bool(BLACKWELL_GPU_RE.search(gpu)) is blackwell


@pytest.mark.parametrize("placed,world,bridged", [
    ([(0, 0, "4c1f0e9a27b3"), (1, 1, "4c1f0e9a27b3")], 4, True),  # a machine's every local rank, fewer than the world
    ([(2, 0, "9e02b7d41c5a")], 4, True),  # rank 2 is its machine's first: ranks 0-1 run elsewhere
    ([(1, 1, "3b7a0c19e4d2")], 2, False),  # some of one machine's ranks: says nothing
    ([(0, 0, "4c1f0e9a27b3"), (1, 1, "4c1f0e9a27b3")], 2, False),  # the whole world on one machine
    ([(0, 0, "gpu-node-07"), (1, 1, "gpu-node-07")], 4, False),  # a host's own name: --network=host or bare metal
])
def test_containers_on_a_bridge_across_machines(placed, world, bridged):
    from ncclscope.rules.container_net import bridged_across_machines

    err = "DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled system error"
    assert bridged_across_machines(placed, world, [err]) is bridged
    assert bridged_across_machines(placed, world, ["ncclRemoteError: remote process exited or there was a network "
                                                   "error"]) is False
