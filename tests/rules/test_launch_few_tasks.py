"""init_process_group's store-based barrier waiting for a world the launcher command in the text never started (srun
-n / --ntasks / --nodes x --ntasks-per-node, an sbatch header, mpirun -np, torchrun --nnodes x --nproc_per_node) is
a launch configuration error, no rank at fault; with the world started (or a count the text does not pin down) the
barrier's stall stays a hang of the ranks that never came."""
from __future__ import annotations

from pathlib import Path

import pytest

from ncclscope.analysis import analyze_paths
from ncclscope.model import Verdict
from ncclscope.rules.launch import too_few_tasks


def _barrier(world: int, arrived: int, ranks: range, prefix: str = "") -> str:
    line = (f"{prefix}Waiting in store based barrier to initialize process group for rank: {{r}}, key: "
            f"store_based_barrier_key:1 (world_size={world}, worker_count={arrived}, timeout=0:30:00)\n")
    return "".join(line.format(r=r) for _ in range(2) for r in ranks)


def _verdict(tmp_path: Path, text: str) -> Verdict:
    p = tmp_path / "job.log"
    p.write_text(text)
    return analyze_paths([p], cache=False).decision.verdict


@pytest.mark.parametrize("command, world", [
    ("$ srun -N1 -n2 --gres gpu:2 python train.py\n", 4),
    ("+ mpirun --allow-run-as-root -np 2 -H a,b python train.py\n", 4),
    ("torchrun --nnodes=1 --nproc_per_node=2 train.py\n", 4),
    ("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gres=gpu:4\n", 8),
], ids=["srun", "mpirun", "torchrun", "sbatch"])
def test_fewer_processes_than_the_world_is_a_launch_error(tmp_path: Path, command: str, world: int) -> None:
    assert _verdict(tmp_path, command + _barrier(world, 2, range(2))) == Verdict.CONFIG_ERROR


@pytest.mark.parametrize("command", [
    "",  # no launcher command in the text
    "$ srun -N1 -n4 python train.py\n",  # the world was started: a hang of the ranks that never came
    "srun -N2 --ntasks-per-node=1 torchrun --nnodes=2 --nproc_per_node=2 train.py\n",  # torchrun per srun task
    "torchrun --nnodes=1:2 --nproc_per_node=2 train.py\n",  # an elastic range
], ids=["none", "world-started", "torchrun-in-srun", "elastic"])
def test_otherwise_the_barrier_stays_a_hang(tmp_path: Path, command: str) -> None:
    assert _verdict(tmp_path, command + _barrier(4, 2, range(2))) == Verdict.HANG


def test_rule() -> None:
    assert too_few_tasks([("srun", 2)], 4, 2) is not None
    assert too_few_tasks([("srun", 2)], 4, 3) is None  # more arrived than it started: not its count
    assert too_few_tasks([("srun", 4)], 4, 2) is None
    assert too_few_tasks([("srun", 2), ("srun", 4)], 4, 2) is None  # two counts
    assert too_few_tasks([("mpirun", 2), ("srun", 1)], 4, 2).launcher == "mpirun"  # the innermost launcher


@pytest.mark.parametrize("prefix", ["", "[rank0]: "])
def test_tcpstore_client_wait_is_the_same_barrier(tmp_path: Path, prefix: str) -> None:
    text = ("torchrun --nproc-per-node=2 train.py\n" + prefix +
            "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 2/8 clients joined.\n")
    assert _verdict(tmp_path, text) == Verdict.CONFIG_ERROR
    assert _verdict(tmp_path, text.replace("--nproc-per-node=2", "--nproc-per-node=8")) != Verdict.CONFIG_ERROR
