"""Round four's node-count cases (tests/data/classes4/c4d_*): serving jobs whose only word on the machines is a
framework's line that a job of one node alone prints (``sources.framework_lines``): Ray's local instance, vLLM's
loopback init method and its multiprocessing workers, SGLang's launch command naming no other node; a count or the
hosts seen that is larger still wins."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

from ncclscope.sources.framework_lines import framework_line
from ncclscope.sources.records import NodeCount

SET = CaseSet(DATA / "classes4")
ONE_NODE_CASES = ["c4d_vllm_ray_local_instance_tp4_unhandled_cuda", "c4d_vllm_v1_loopback_init_tp2_shm_wait_hang",
                  "c4d_sglang_one_node_tp4_watchdog_hang"]


@pytest.mark.parametrize("name", ONE_NODE_CASES)
def test_one_node_case(name):
    SET.check(name)


def _nodes(line: str, body: str | None = None) -> list[int]:
    return [r.nnodes for r in framework_line("f", 1, line, line if body is None else body, None)
            if isinstance(r, NodeCount)]


@pytest.mark.parametrize("line", [
    "2024-05-14 16:02:14,902\tINFO worker.py:1749 -- Started a local Ray instance. View the dashboard at 127.0.0.1:8265",
    "(Worker pid=71) INFO 08-16 09:02:31 [parallel_state.py:1638] world_size=4 rank=0 local_rank=0 "
    "distributed_init_method=tcp://127.0.0.1:45731 backend=nccl",
    "INFO 06-02 10:00:01 parallel_state.py:950] world_size=2 rank=1 local_rank=1 "
    "distributed_init_method=tcp://localhost:29511 backend=nccl",
    "python -m sglang.launch_server --model-path /m --tp 8 --port 30000",
    "sglang serve --model-path /m --tp-size 2",
    "export MASTER_ADDR=localhost MASTER_PORT=29500",
    "python -m torch.distributed.run --nproc_per_node 8 --master_addr 127.0.0.1 train.py",
])
def test_lines_only_one_machine_prints(line):
    assert _nodes(line) == [1]


def test_mp_worker_ready_read_from_the_whole_line():
    """The parser hands the line's body without vLLM's logger head; the head names the module that printed it."""
    text = "(VllmWorkerProcess pid=214) INFO 11-07 09:42:02 multiproc_worker_utils.py:218] Worker ready; awaiting tasks"
    assert _nodes(text, "Worker ready; awaiting tasks") == [1]


@pytest.mark.parametrize("line", [
    "2024-05-14 16:02:14,902\tINFO worker.py:1585 -- Connecting to existing Ray cluster at address: 10.4.0.11:6379...",
    "(Worker pid=71) INFO 08-16 09:02:31 [parallel_state.py:1638] world_size=16 rank=8 local_rank=0 "
    "distributed_init_method=tcp://10.4.0.11:45731 backend=nccl",
    "python -m sglang.launch_server --model-path /m --tp 16 --dist-init-addr 10.4.0.11:5000 --node-rank 1",
    "python -m sglang.launch_server --model-path /m --tp 16 --nnodes 2 --node-rank 0",
    "vllm serve /m --tensor-parallel-size 16",  # Ray may span nodes a cluster already holds
    "export MASTER_ADDR=node-a17 MASTER_PORT=29500",
    "INFO 11-07 09:42:02 worker.py:12] Worker ready; awaiting tasks",
])
def test_lines_that_do_not_say_one_machine(line):
    assert 1 not in _nodes(line)


def test_sglang_nodes_named_wins():
    assert _nodes("python -m sglang.launch_server --model-path /m --tp 16 --nnodes 2 --node-rank 0") == [2]
