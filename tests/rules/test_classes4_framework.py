"""Round four's framework cases (tests/data/classes4/c4b_*): jobs of vLLM, SGLang and JAX that print no NCCL INFO
line, read from the frameworks' own words (``sources.framework_lines``, ``detectors.framework``): their stall reports
give a hang, SGLang's batch dumps that differ between tensor-parallel ranks a desync, a program's word that a process
does not enter the collective names it, XLA's quote of NCCL's async error reads as NCCL's; the world and the nodes from
the serving command or its config line."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

from ncclscope.sources.framework_lines import framework_line
from ncclscope.sources.records import FrameworkBatch, FrameworkStall, NodeCount, WorldSize

SET = CaseSet(DATA / "classes4")
FRAMEWORK_CASES = ["c4b_vllm_tp4_shm_broadcast_wait_hang", "c4b_sglang_2node_watchdog_hang",
                   "c4b_sglang_tp4_batches_differ_desync", "c4b_jax_process_never_enters_collective",
                   "c4b_xla_async_remote_error_crash"]
# an interface setting that leaves NCCL no socket interface ("Bootstrap : no socket interface found"): a config error
NO_INTERFACE_CASES = ["c4b_torchrun_ifname_exclusion_no_interface", "c4b_mpirun_nccl_tests_no_socket_interface"]


@pytest.mark.parametrize("name", FRAMEWORK_CASES + NO_INTERFACE_CASES)
def test_framework_case(name):
    SET.check(name)


def _read(line: str) -> list:
    return list(framework_line("f", 1, line, line, None))


def test_stall_reports_of_each_framework():
    (v,) = _read("INFO 11-02 07:45:00 shm_broadcast.py:386] No available shared memory broadcast block found in 60 second.")
    assert isinstance(v, FrameworkStall) and (v.framework, v.seconds) == ("vllm", 60.0)
    (s,) = _read("[2025-06-03 08:31:07 DP1 TP12 EP12] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)")
    assert isinstance(s, FrameworkStall) and s.rank == 12 and s.what == "scheduler_watchdog"
    (j,) = _read("[host-3] step 5: process_index=1 not entering collective (stall injected)")
    assert isinstance(j, FrameworkStall) and j.culprit == 1
    assert _read("[host-3] step 5: process_index=1 entered collective psum") == []
    assert _read("loss 0.12, no progress bar shown") == []


def test_batch_dump_and_stated_world():
    (b,) = _read("[2026-01-11 17:25:46 DP0 TP1] self.cur_batch.batch_size()=2, self.cur_batch.reqs=[Req(rid=a1, "
                 "input_ids=[...], output_ids=[...]), Req(rid=a3, input_ids=[...])], self.token_to_kv_pool_allocator.x=1")
    assert isinstance(b, FrameworkBatch) and (b.rank, b.dp, b.size, b.rids) == (1, 0, 2, ("a1", "a3"))
    w = _read("$ vllm serve /m --tensor-parallel-size 8 --pipeline-parallel-size 2 --nnodes 2 --node-rank 0")
    assert [type(r) for r in w] == [WorldSize, NodeCount] and (w[0].world_size, w[1].nnodes) == (16, 2)
    w = _read("[2025-06-03 08:12:41] server_args=ServerArgs(model_path='/m', tp_size=32, dp_size=4, nnodes=4, node_rank=0)")
    assert (w[0].world_size, w[1].nnodes) == (32, 4)
    assert _read("python train.py --tp 8 --nnodes 2") == []  # not a serving command: the launcher parsers' business
