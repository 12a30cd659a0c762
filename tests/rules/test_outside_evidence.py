"""Evidence outside NCCL's lines, and the environment the nodes run in (tests/data/classes3/): the kernel's log of a GPU
fault, the ranks' stack dumps, the program's own prints of who waits, one process driving two GPUs, and nodes that
load different NCCL releases or network plugins."""
from __future__ import annotations

import pytest
from classes3_cases import analysis, check
from ncclscope.model import Verdict
from ncclscope.rules.cause import Failure, root_cause
from ncclscope.rules.environment import differing, environment_mismatch, plugin_of
from ncclscope.rules.exits import FailureKind
from ncclscope.rules.stacks import Position, read_stacks, waits


@pytest.mark.parametrize("case", ["dmesg_xid79_gpu_fell_off_bus", "dmesg_xid74_nvlink_same_paste"])
def test_a_gpu_fault_in_the_kernel_log_is_a_crash_no_rank_caused(case):
    a = check(case)
    assert any(f.data.get("culprits") == [] and "no rank's code" in f.message for f in a.findings)


def test_a_gpu_fault_comes_first_whatever_its_place_in_the_paste():
    """The kernel's lines have no time of the job's clock: listed after the rank's CUDA error, the fault still caused it."""
    cuda = Failure(1, FailureKind.CUDA, "CUDA error: unspecified launch failure", None, ("train.log", 20))
    timeout = Failure(0, FailureKind.TIMEOUT, "Watchdog caught collective operation timeout", None, ("train.log", 21))
    gpu = Failure(None, FailureKind.GPU, "NVRM: Xid (PCI:0000:3b:00): 79", None, ("train.log", 30))
    c = root_cause([cuda, timeout, gpu], None, True)
    assert c is not None and c.verdict == "crash" and c.first is gpu and c.culprits == ()


@pytest.mark.parametrize("case,verdict,culprits", [
    ("pyspy_ranks_split_two_collectives", "desync", [2]),
    ("faulthandler_one_rank_outside_collective", "hang", [2]),
    ("progress_prints_one_rank_never_waits", "hang", [2]),
])
def test_where_the_ranks_stand_names_the_culprit(case, verdict, culprits):
    a = check(case)
    assert a.decision.verdict.value == verdict and list(a.decision.culprit_ranks) == culprits


def test_one_process_driving_two_gpus_is_two_ranks():
    a = check("one_process_two_gpus_two_threads")
    per_pid: dict[int, set[int]] = {}
    for p in a.run.job.processes:
        if p.rank is not None:
            per_pid.setdefault(p.pid, set()).add(p.rank)
    assert per_pid == {4410: {0, 1}, 3902: {2, 3}}
    assert not [f for f in a.findings if f.data.get("missing_ranks")]


@pytest.mark.parametrize("case", ["net_plugin_differs_between_nodes", "nccl_versions_differ_between_nodes"])
def test_nodes_that_differ_are_a_config_error_not_a_plain_hang(case):
    a = check(case)
    assert any(f.data.get("environment_mismatch") for f in a.findings)


def test_a_mismatch_in_a_job_that_went_well_is_only_noted():
    """The same plugin difference in a job with no incident: no verdict of its own (the finding carries none)."""
    a = analysis("net_plugin_differs_between_nodes")
    (f,) = [f for f in a.findings if f.data.get("environment_mismatch")]
    assert f.verdict is None and f.data["values"] == [["NCCL RDMA Plugin v8", ["hx-node04"]], ["internal", ["hx-node11"]]]


# -- the rules, on their own ---------------------------------------------------------------------------------------
def test_stacks_in_two_collectives_are_a_desync_the_minority_its_culprits():
    r = read_stacks([Position(0, "reduce_scatter", "a"), Position(1, "reduce_scatter", "a"),
                     Position(2, "all_reduce", "b"), Position(3, "reduce_scatter", "a")])
    assert r is not None and r.verdict is Verdict.DESYNC and r.culprits == (2,)
    tie = read_stacks([Position(0, "reduce_scatter", "a"), Position(1, "all_reduce", "b")])
    assert tie is not None and tie.verdict is Verdict.DESYNC and tie.culprits == ()


def test_a_rank_outside_the_collective_the_others_wait_in_is_the_hangs_culprit():
    r = read_stacks([Position(0, "all_reduce", "a"), Position(1, None, "__next__ (data.py:41)"),
                     Position(2, "all_reduce", "a")])
    assert r is not None and (r.verdict, r.culprits, r.waiting, r.op) == (Verdict.HANG, (1,), (0, 2), "all_reduce")


@pytest.mark.parametrize("positions", [
    [Position(0, "all_reduce", "a"), Position(1, "all_reduce", "a")],  # everyone joined: NCCL's or the network's
    [Position(0, None, "a"), Position(1, None, "b")],  # nobody in a collective
    [Position(0, "all_reduce", "a")],  # one dump says nothing of the others
])
def test_stacks_that_show_no_culprit(positions):
    assert read_stacks(positions) is None


def test_wait_prints():
    assert waits({0: None, 1: None, 3: None}, range(4)).culprits == (2,)  # the rank that never said it waits
    assert waits({2: 3}, range(4)).culprits == (3,)  # the rank a print names
    assert waits({0: None, 1: None}, range(2)) is None  # everyone waits, nobody named
    assert waits({}, range(4)) is None


def test_the_environment_rule():
    assert plugin_of("NET/Plugin: Loaded net plugin NCCL RDMA Plugin v8 (v8)") == "NCCL RDMA Plugin v8"
    assert plugin_of("NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.") == "internal"
    assert plugin_of("NET/Plugin : No plugin found (libnccl-net.so), using internal implementation") == "internal"
    assert plugin_of("NET/Plugin: Loaded collnet plugin SHARP (v8)") is None
    assert differing([("a", "IB"), ("a", "IB"), ("b", "IB")], "network") is None
    m = environment_mismatch([], [("a", "IBext_v8"), ("b", "IB")], {})
    assert m is not None and m.what == "network" and "IBext_v8 on a" in m.describe()
    assert environment_mismatch([], [], {"101": "2.18.5", "202": "2.21.5"}).what == "NCCL version"
