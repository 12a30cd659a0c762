"""Round eight's cases (tests/data/classes8/c8c_*): the releases a program states in its own JSON record of its
environment (one JSON object a line, bare or behind a logger's prefix) are the job's torch, CUDA and NCCL releases;
NCCL's as a version string or as the list ``torch.cuda.nccl.version()`` returns; a key nested in an inner object is
none of them."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from ncclscope.sources.json_record import json_releases
from wild_cases import DATA

SET = CaseSet(DATA / "classes8")
MINE = SET.names("c8c_")


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


def _node_counts(lines: list[str]) -> list[int]:
    from ncclscope.sources.records import NodeCount
    from ncclscope.sources.torch_log import parse_torch_lines

    return [r.nnodes for r in parse_torch_lines(enumerate(lines, 1), "x.log") if isinstance(r, NodeCount)]


def _agent(agent: int, workers: list[int]) -> list[str]:
    head = f"W0101 00:00:0{{}}.000000 {agent} torch/distributed/elastic/multiprocessing/api.py:900] "
    return [head.format(i) + f"Sending process {w} closing signal SIGTERM" for i, w in enumerate(workers)]


def test_one_torchrun_agent_with_the_whole_world_is_one_node():
    assert _node_counts(["world_size=3"] + _agent(70, [71, 72, 73])) == [1]
    assert _node_counts(["world_size=8"] + _agent(70, [71, 72, 73, 74])) == []  # one node's share of the world
    assert _node_counts(_agent(70, [71, 72])) == []  # no world stated
    assert _node_counts(["world_size=2"] + _agent(70, [71]) + _agent(80, [81])) == []  # two agents: two nodes
    plain = ["world_size=2", "Sending process 71 closing signal SIGTERM", "Sending process 72 closing signal SIGTERM"]
    assert _node_counts(plain) == []  # no agent's head: whose workers is unknown


def test_a_ray_driver_that_is_a_rank_is_a_node_beside_its_remote_workers():
    remote = "(RayWorkerWrapper pid=91, ip=10.0.0.9) INFO x"
    driver = "[rank0]:[W ProcessGroupNCCL.cpp:1] [PG 0 Rank 0] a warning"
    assert _node_counts([remote, driver]) == [2]
    assert _node_counts([driver, remote]) == [2]
    assert _node_counts([remote]) == []  # the driver holds no rank (Ray Train's): its node may run no process of the job
    assert _node_counts([driver]) == []  # no Ray worker seen
    assert _node_counts(["(RayWorkerWrapper pid=90) INFO x", remote, driver]) == [2]  # the driver's node seen already


def test_model_actors_name_the_nodes_a_trainer_actor_does_not():
    near, far = "(PolicyModelActor pid=5) INFO x", "(CriticModelActor pid=6, ip=10.0.0.9) INFO x"
    assert _node_counts([near, far]) == [2]
    assert _node_counts(["(LLMRayActor pid=7) INFO x", "(LLMRayActor pid=8, ip=10.0.0.9) INFO x"]) == [2]
    assert _node_counts(["(TrainController pid=7) INFO x", "(TrainController pid=8, ip=10.0.0.9) INFO x"]) == []
