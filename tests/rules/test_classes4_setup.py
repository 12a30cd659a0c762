"""Round four's setup faults (tests/data/classes4/c4c_*) that read as a crash: a process killed by SIGBUS first in a
world of several processes with no NCCL line (a container's /dev/shm), every warning process unable to reach one
address before any communicator came up (the network between the nodes), a sanity check's sum over the world that came
back as 1 (a framework's NCCL wrapper off or pointed at another library): config errors, no culprit rank."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

from ncclscope.detectors.config import SUM_OF_ONE_RE

SET = CaseSet(DATA / "classes4")
SETUP_CASES = ["c4c_torchrun_shm_sigbus_no_nccl_lines", "c4c_elastic_new_format_shm_bus_error_4ranks",
               "c4c_torchrun_2node_no_route_to_root_218", "c4c_vllm_ray_no_route_pollconnect_226",
               "c4c_vllm_sanity_script_pynccl_off_two_nodes", "c4c_single_node_check_allreduce_sum_is_one"]


ALIKE_CASES = ["c4c_every_rank_illegal_access_torchrun", "c4c_every_rank_same_exception_deepspeed"]
SIDE_CASES = ["c4c_rank0_alone_busy_peers_watchdog_no_world", "c4c_one_rank_watchdog_of_two_other_side_unseen"]


@pytest.mark.parametrize("name", SETUP_CASES + ALIKE_CASES + SIDE_CASES)
def test_setup_case(name):
    SET.check(name)


def test_sum_of_one_reads_only_a_result_of_one():
    assert SUM_OF_ONE_RE.search("AssertionError: Expected 16, got 1.0").group(1) == "16"
    assert SUM_OF_ONE_RE.search("all_reduce mismatch: expected 4 but got 1").group(1) == "4"
    assert SUM_OF_ONE_RE.search("AssertionError: Expected 16, got 15.0") is None
    assert SUM_OF_ONE_RE.search("AssertionError: Expected 16, got 12") is None


def test_alike_untimed_failures_name_no_rank_but_timed_or_different_ones_do():
    from ncclscope.rules.cause import Failure, root_cause
    from ncclscope.rules.exits import FailureKind

    msg = "RuntimeError: CUDA error: an illegal memory access was encountered"
    alike = [Failure(2, FailureKind.CUDA, msg, None, ("run.log", 9)), Failure(0, FailureKind.CUDA, msg, None, ("run.log", 21)),
             Failure(2, FailureKind.EXIT, "exit code 1", None, ("", -1))]
    assert root_cause(alike).culprits == ()
    other = [alike[0], Failure(0, FailureKind.CUDA, "RuntimeError: CUDA error: out of bounds", None, ("run.log", 21))]
    assert root_cause(other).culprits == (2,)
    timed = [Failure(2, FailureKind.CUDA, msg, 100.0, ("run.log", 9)), Failure(0, FailureKind.CUDA, msg, 130.0, ("run.log", 21))]
    assert root_cause(timed).culprits == (2,)


def test_rank_pg_prefix_names_the_failing_process():
    from ncclscope.rules.facts import PG_RANK_RE

    assert PG_RANK_RE.search("[default0]:  what():  [PG 0 (default_pg) Rank 12] Process group watchdog").group(1) == "12"
    assert PG_RANK_RE.search("[PG ID 0 PG GUID 0(default_pg) Rank 3] Timeout at NCCL work: 9").group(1) == "3"
    assert PG_RANK_RE.search("[rank3]: RuntimeError: CUDA error") is None
