"""Round eleven's facts (tests/data/classes11/c11c_*): what a log states of the job that was not read. torch's own
version names the CUDA its wheel was built with (``2.4.1+cu124``: 12.4); SGLang's ServerArgs print naming no node
runs on one node (its default); ``horovodrun -np N`` starts N processes, on the local machine when it names no host."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes11")
MINE = SET.names("c11c_")


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


@pytest.mark.parametrize("line,tasks,nodes", [
    ("+ srun bash -c 'accelerate launch --num_machines 2 --num_processes 8 t.py'", [("srun", 0), ("accelerate", 8)], [2]),
    ("+ CMD='torchrun --standalone --nproc_per_node 4 t.py'", [("torchrun", 4)], [1]),
    ("raise SystemExit('torchrun --nproc_per_node 4 t.py')", [], []),
    ("+ mpiexec -n 8 --ppn 4 --depth=16 python3 t.py", [("mpirun", 8)], [2]),
    ("mpirun -np 16 -npernode 8 python t.py", [("mpirun", 16)], [2]),
    ("mpirun -np 16 --map-by ppr:8:node python t.py", [("mpirun", 16)], [2]),
    ("mpirun -np 16 --map-by ppr:4:socket python t.py", [("mpirun", 16)], []),
    ("mpiexec -n 6 --ppn 4 python t.py", [("mpirun", 6)], []),
    ("#SBATCH --nodes=2", [], [2]),
    ("#SBATCH -N 4", [], [4]),
])
def test_launcher_commands_quoted_sbatch_nodes_and_mpi_processes_per_node(line, tasks, nodes):
    from ncclscope.sources.records import LaunchedTasks, NodeCount
    from ncclscope.sources.torch_log import parse_torch_lines

    recs = list(parse_torch_lines([(1, line)], "f"))
    assert [(r.launcher, r.count) for r in recs if isinstance(r, LaunchedTasks)] == [t for t in tasks if t[1]]
    assert [r.nnodes for r in recs if isinstance(r, NodeCount)] == nodes


@pytest.mark.parametrize("line,job", [
    ("NNODES=4 GPUS_PER_NODE=4 WORLD_SIZE=16", (16, 4)), ("world=32 nodes=4", (32, 4)),
    ("WORLD_SIZE=8 NNODES=2 MASTER_ADDR=n1", (8, 2)), ("GPUS_PER_NODE=4 WORLD_SIZE=16", None),
])
def test_a_scripts_job_print_in_either_case(line, job):
    from ncclscope.sources.program_facts import printed_job

    assert printed_job(line) == job


BANNER = ("W0101 00:00:00.000000 {pid} torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable for "
          "each process to be 1 in default, to avoid your system being overloaded")


@pytest.mark.parametrize("lines,worlds,tagged,one", [
    (["[default0]:x", "[default3]:y"], {4}, set(), True),  # local rank 3 of a world of 4: all on this node
    (["[default0]:x", "[default3]:y"], {8}, set(), False),  # one node's four of eight
    ([BANNER.format(pid=11), "| distributed init (rank 0): env://", "| distributed init (rank 1): env://"], {2}, set(),
     True),
    ([BANNER.format(pid=11), "| distributed init (rank 0): env://"], {2}, set(), False),  # rank 1 not in the file
    ([BANNER.format(pid=11), BANNER.format(pid=12)], {2}, {0, 1}, False),  # two launchers: two nodes' output
    ([BANNER.format(pid=11), "I0101 00:00:01.000000 12 torch/distributed/elastic/agent/server/api.py:1] x"], {2},
     {0, 1}, False),  # a second agent's pid
    ([BANNER.format(pid=11)], {2, 4}, {0, 1, 2, 3}, False),  # the file states two worlds
    ([BANNER.format(pid=11)], {4}, {0, 1, 2, 3}, True),
])
def test_one_launcher_running_the_whole_world(lines, worlds, tagged, one):
    from ncclscope.sources.launcher_node import LauncherView

    v = LauncherView()
    for n, line in enumerate(lines, 1):
        v.read(n, line)
    assert v.one_node(worlds, tagged) is one
