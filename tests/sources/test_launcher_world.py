"""The world and nodes only a launcher's command line gives (``torchrun --nnodes=2 --nproc_per_node=4``, ``srun -N 4
--ntasks-per-node=8``, ``mpirun -np 16``, ``deepspeed --num_gpus 4``): read, counted in the world, and a rank that
printed nothing while the others wait for it is named (``model_build.launched``)."""
from __future__ import annotations

import pytest
from class2_cases import check
from ncclscope.model_build.launched import launched_world
from ncclscope.sources.records import LaunchedTasks
from ncclscope.sources.torch_log import NodeCount, parse_torch_lines


def _read(line: str) -> tuple[list[tuple[str, int]], list[int]]:
    recs = list(parse_torch_lines([(1, line)], "cmd.log"))
    return ([(r.launcher, r.count) for r in recs if isinstance(r, LaunchedTasks)],
            [r.nnodes for r in recs if isinstance(r, NodeCount)])


@pytest.mark.parametrize("line, tasks, nodes", [
    ("+ torchrun --nnodes=2 --nproc_per_node=8 train.py", [("torchrun", 16)], [2]),
    ("srun -N 4 --ntasks-per-node=8 python train.py", [("srun", 32)], [4]),
    ("mpirun -np 16 -H a:8,b:8 ./all_reduce_perf -b 8 -e 1G", [("mpirun", 16)], []),
    ("deepspeed --num_gpus 8 --num_nodes 2 train.py", [("deepspeed", 16)], [2]),
    ("deepspeed --num_gpus=4 train.py --deepspeed ds.json", [("deepspeed", 4)], []),
    ("deepspeed --hostfile hosts --num_gpus 8 train.py", [], []),  # the hostfile's nodes are not in the text
    ("torchrun --nnodes=1:4 --nproc_per_node=8 train.py", [], []),  # elastic: the command does not fix the world
])
def test_launcher_commands(line, tasks, nodes):
    assert _read(line) == (tasks, nodes)


def test_the_innermost_launcher_gives_the_world():
    assert launched_world([("srun", 4), ("torchrun", 8)]) is None  # torchrun per srun task
    assert launched_world([("mpirun", 16)]) == 16
    assert launched_world([("torchrun", 8), ("torchrun", 16)]) is None  # two counts: not one world


@pytest.mark.parametrize("name, silent", [("torchrun_command_world_silent_rank", 7),
                                          ("deepspeed_num_gpus_world_silent_rank", 3)])
def test_the_rank_that_printed_nothing_is_counted_and_named(name, silent):
    a = check(name)
    assert a.decision.culprit_ranks == (silent,)
