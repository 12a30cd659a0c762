"""The world a launcher's command line gives, where nothing else in the input states it.

A log that shows ``torchrun --nnodes=2 --nproc_per_node=8 train.py``, ``srun -N 4 --ntasks-per-node=8 ...``,
``mpirun -np 16 ...`` or ``deepspeed --num_gpus 8 --num_nodes 2 ...`` says how many processes the job has
(``sources.records.LaunchedTasks``), even when some of them printed nothing. The launcher that starts the ranks is
the innermost one the text shows (torchrun inside srun: torchrun); its count is the world only when that launcher
gave one count, and not for torchrun under srun (torchrun's count is then per srun task, and the task count is
srun's own line to give)."""
from __future__ import annotations

from collections.abc import Iterable

MAX_WORLD = 1 << 20
LAUNCHER_ORDER = ("accelerate", "torchrun", "deepspeed", "mpirun", "srun")  # innermost first


def launched_world(launched: Iterable[tuple[str, int]]) -> int | None:
    """``launched``: (launcher, processes its command starts) of each launcher command in the text. The count of the
    innermost launcher shown when it is the only count that launcher gave; None otherwise."""
    by: dict[str, set[int]] = {}
    for name, n in launched:
        if 0 < n <= MAX_WORLD:
            by.setdefault(name, set()).add(n)
    chosen = next((k for k in LAUNCHER_ORDER if k in by), None)
    if chosen is None or len(by[chosen]) != 1 or (chosen == "torchrun" and "srun" in by):
        return None
    return next(iter(by[chosen]))
