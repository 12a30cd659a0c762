"""Round four's path, end-of-run and node-count cases (tests/data/classes4/c4a_*): slower paths than the hardware
offers read degraded (sockets between nodes after NCCL found no RDMA device or on nodes of eight GPUs, IB without
GPUDirect RDMA on nodes of one NIC a GPU, shared memory where each process sees only its own GPU); finished runs read
healthy (an nccl-tests sweep behind mpirun's output tags, an NCCL debug file that ends at init beside the program's
own file that trains on); a stall right after init read a hang (every rank printing that it waits on its stream, a
progress bar frozen at 0%); one node where torchrun's command or failure table states it."""
from __future__ import annotations

import re

import pytest
from class_cases import CaseSet
from ncclscope.model import Verdict
from ncclscope.rules.hang import SETUP_NCCL, frozen_at_start
from ncclscope.rules.stacks import all_wait
from ncclscope.rules.transport_fit import PathFacts, slow_path
from ncclscope.sources.nccl_tests import parse_nccl_tests_lines
from ncclscope.sources.records import NcclTestsRow
from ncclscope.sources.torch_log import _one_node
from wild_cases import DATA

ROOT = DATA / "classes4"
SET = CaseSet(ROOT)
OURS = sorted(n for n in SET.cases if n.startswith("c4a_"))
THREAD_RE = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+")


def test_cases_are_well_formed_and_cite_their_threads():
    assert len(OURS) >= 10
    for name in OURS:
        w = SET.cases[name]
        assert {"nccl_release", "launcher", "facts", "culprit_ranks", "fault_class", "known_gap"} <= set(w), name
        assert w["known_gap"] is None, name
        assert THREAD_RE.search((ROOT / name / "SOURCE.md").read_text()), name
        assert any(p.name != "SOURCE.md" for p in (ROOT / name).iterdir()), name


@pytest.mark.parametrize("name", ["c4a_socket_no_libibverbs_torchrun_two_nodes", "c4a_socket_eight_gpu_nodes_srun",
                                  "c4a_ib_nic_per_gpu_no_gdrdma_deepspeed", "c4a_gpus_per_task_shm_one_node"])
def test_a_slower_path_reads_degraded(name):
    assert SET.check(name).decision.verdict is Verdict.DEGRADED


@pytest.mark.parametrize("name", ["c4a_nccl_tests_mpi_tagged_two_node_sweep_healthy",
                                  "c4a_nccl_debug_file_apart_training_went_on"])
def test_a_finished_run_reads_healthy(name):
    assert SET.check(name).decision.verdict is Verdict.HEALTHY


@pytest.mark.parametrize("name", ["c4a_thread_per_gpu_prints_waiting_first_allreduce",
                                  "c4a_progress_bar_frozen_at_zero_after_init"])
def test_a_stall_right_after_init_reads_a_hang(name):
    a = SET.check(name)
    assert a.decision.verdict is Verdict.HANG and a.decision.culprit_ranks == ()


@pytest.mark.parametrize("name", ["c4a_torchrun_nproc_only_one_node_oom", "c4a_failure_table_names_one_host"])
def test_one_node_as_the_launcher_states_it(name):
    SET.check(name)


def _facts(**kw):
    base = {"nnodes": 2, "network": "Socket", "ib_signs": (), "intra": (), "nvlink_signs": (), "nvlink_sure": False,
            "settings": {}}
    base.update(kw)
    return PathFacts(**base)


def test_sockets_with_weak_signs_only_are_possible():
    assert slow_path(_facts()) is None  # no sign at all: the network's normal path
    assert slow_path(_facts(per_node=4)) is None  # a node of four GPUs says nothing of its NICs
    s = slow_path(_facts(rdma_absent=("libibverbs could not be opened",)))
    assert s is not None and (s.used, s.level, s.setting) == ("NET/Socket", "possible", None)
    s = slow_path(_facts(per_node=8))
    assert s is not None and "8 GPUs" in s.why and s.level == "possible"


def test_ib_without_gpudirect_rdma():
    ib = {"network": "IB", "gdr": False}
    assert slow_path(_facts(**ib)) is None  # no sign the nodes are built for it (consumer GPUs, one NIC a node)
    assert slow_path(_facts(network="IB", gdr=True, gdr_signs=("one NIC a GPU",))) is None
    assert slow_path(_facts(network="IB", gdr=None, gdr_signs=("one NIC a GPU",))) is None  # channels not printed
    s = slow_path(_facts(gdr_signs=("one NIC a GPU",), **ib))
    assert s is not None and s.used.startswith("NET/IB") and s.level == "possible" and "NCCL_NET_GDR_LEVEL" in s.fix
    s = slow_path(_facts(settings={"NCCL_NET_GDR_LEVEL": "LOC"}, **ib))
    assert s is not None and (s.setting, s.level) == ("NCCL_NET_GDR_LEVEL=LOC", "likely")


def test_shared_memory_where_each_process_sees_its_own_gpu():
    one = {"nnodes": 1, "network": None}
    assert slow_path(_facts(intra=("SHM",), **one)) is None
    assert slow_path(_facts(intra=("P2P/IPC",), own_gpu_only=True, **one)) is None  # P2P anyway (cuMem): fine
    s = slow_path(_facts(intra=("SHM",), own_gpu_only=True, **one))
    assert s is not None and (s.used, s.level) == ("SHM", "possible") and "--gpus-per-task" in s.fix


def test_every_rank_waiting_in_a_collective_is_a_hang_without_culprit():
    waits = {0: "rank 0: waiting for stream", 1: "rank 1 waiting on cudaStreamSynchronize"}
    r = all_wait(waits, [0, 1])
    assert r is not None and r.verdict is Verdict.HANG and r.culprits == () and r.waiting == (0, 1)
    assert all_wait(waits, [0, 1, 2]) is None  # rank 2 never said it waits: waits() names it
    assert all_wait({0: "rank 0 waiting for the data loader", 1: "rank 1 waiting for the data loader"}, [0, 1]) is None
    assert all_wait({0: "rank 0 waiting for stream"}, [0]) is None  # one rank alone says nothing of a peer


def test_a_progress_bar_frozen_at_zero():
    bar = "Evaluating:   0%|          | 0/500 [00:00<?, ?it/s]"
    assert frozen_at_start([bar], SETUP_NCCL, False, False, False) is not None
    assert frozen_at_start([bar], None, False, False, False) is None  # init not complete: the init rules' story
    assert frozen_at_start([bar], SETUP_NCCL, True, False, False) is None  # collectives recorded
    assert frozen_at_start([bar], SETUP_NCCL, False, False, True) is None  # the run's end is known
    assert frozen_at_start(["Evaluating:   2%|2         | 10/500 [00:04<03:20, 2.4it/s]"], SETUP_NCCL, False, False,
                           False) is None


def test_nccl_tests_rows_behind_mpirun_output_tags():
    row = "     1048576        262144     float     sum      -1   101.50   10.33   19.37      0   102.06   10.27   19.26      0"
    lines = ["[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong",
             "[1,0]<stdout>:" + row, "[1,0]<stdout>:# Out of bounds values : 0 OK"]
    recs = list(parse_nccl_tests_lines(enumerate(lines, 1), "f"))
    rows = [r for r in recs if isinstance(r, NcclTestsRow)]
    assert [(r.size, r.in_place) for r in rows] == [(1048576, False), (1048576, True)]


def test_torchrun_one_node_from_its_arguments():
    assert _one_node(" --nproc_per_node=4 train.py")
    assert _one_node(" --nproc-per-node 8 -m pkg.main")
    assert _one_node(" --standalone --nproc_per_node 4 train.py")
    assert not _one_node(" --nnodes 2 --nproc_per_node 8 train.py")
    assert not _one_node(" --nproc_per_node 8 --rdzv_endpoint head:29400 train.py")
    assert not _one_node(" train.py")  # no per-node count: nothing said
