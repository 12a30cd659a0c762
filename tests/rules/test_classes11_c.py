"""Round eleven's facts (tests/data/classes11/c11c_*): what a log states of the job that was not read. torch's own
version names the CUDA its wheel was built with (``2.4.1+cu124``: 12.4); SGLang's ServerArgs print naming no node
runs on one node (its default); ``horovodrun -np N`` starts N processes, on the local machine when it names no host."""
from __future__ import annotations

import json

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes11")
MINE = sorted(json.loads(line)["case"] for line in (DATA / "classes11" / "EXPECTED.jsonl").read_text().splitlines()
              if line.strip() and json.loads(line)["case"].startswith("c11c_"))


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


@pytest.mark.parametrize("torch,cuda", [
    ("2.11.0+cu130", "13.0"), ("2.5.1+cu124", "12.4"), ("1.13.1+cu117", "11.7"), ("1.4.0+cu92", "9.2"),
    ("2.4.1", None), ("2.4.1+cpu", None), ("2.5.0+rocm6.2", None), (None, None), ("2.6.0a0+gitabc1234", None),
])
def test_the_cuda_a_torch_wheel_was_built_with(torch, cuda):
    from ncclscope.model_build.ranks import torch_build_cuda

    assert torch_build_cuda(torch) == cuda


def test_a_cuda_an_nccl_line_states_is_not_replaced_by_torchs_build(tmp_path):
    from ncclscope.analysis import analyze_paths

    log = tmp_path / "train.log"
    log.write_text("[rank0] world_size=2 torch=2.4.1+cu124\n"
                   "node7:4101:4101 [0] NCCL INFO NCCL version 2.21.5+cuda12.2\n")
    assert analyze_paths([log], cache=False).run.job.cuda_version == "12.2"
    log.write_text("[rank0] world_size=2 torch=2.4.1+cu124\n")
    assert analyze_paths([log], cache=False).run.job.cuda_version == "12.4"


@pytest.mark.parametrize("line,nodes", [
    ("server_args=ServerArgs(model_path='/m', tp_size=4, dp_size=1, port=30000)", [1]),
    ("server_args=ServerArgs(model_path='/m', tp_size=4, dist_init_addr=None, port=30000)", [1]),
    ("server_args=ServerArgs(model_path='/m', tp_size=8, dist_init_addr='10.0.0.1:5000', node_rank=1)", []),
    ("server_args=ServerArgs(model_path='/m', tp_size=16, nnodes=2, node_rank=0)", [2]),
    ("server_args=ServerArgs(model_path='/m', dp_size=1, port=30000)", []),
])
def test_sglang_server_args_state_one_node_when_they_name_none(line, nodes):
    from ncclscope.sources.framework_lines import framework_line
    from ncclscope.sources.records import NodeCount

    got = [r.nnodes for r in framework_line("f", 1, line, line, None) if isinstance(r, NodeCount)]
    assert got == nodes


@pytest.mark.parametrize("line,tasks,nodes", [
    ("$ horovodrun -np 4 python train.py", [4], [1]),
    ("horovodrun --num-proc 2 python train.py --lr 0.1", [2], [1]),
    ("horovodrun -np 8 -H a:4,b:4 python train.py", [8], []),
    ("horovodrun -np 16 --hostfile hosts.txt python train.py", [16], []),
    ("horovodrun python train.py", [], []),
])
def test_horovodrun_states_its_processes_and_one_node_without_hosts(line, tasks, nodes):
    from ncclscope.sources.records import LaunchedTasks, NodeCount
    from ncclscope.sources.torch_log import parse_torch_lines

    recs = list(parse_torch_lines([(1, line)], "f"))
    assert [r.count for r in recs if isinstance(r, LaunchedTasks)] == tasks
    assert [r.nnodes for r in recs if isinstance(r, NodeCount)] == nodes


def test_a_horovodrun_naming_its_hosts_is_not_read_as_one_node():
    a = SET.analysis("c11c_horovodrun_hosts_two_nodes_np8")
    assert a.run.job.nnodes != 1
