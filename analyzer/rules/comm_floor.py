"""A collective of a job across nodes whose large messages move slower than the slowest network such a job runs on.

Whatever the fabric (InfiniBand, RoCE, a cloud's TCP), nodes that train together are joined by 10 Gb/s Ethernet at the
least; a collective's bus bandwidth at large messages (``LARGE_BYTES`` and up, where a call is bandwidth-bound) below
that is slower than any such link, whatever the GPUs: the link, its set-up or the calls' waits for a slow member cost
the time. The rows are a program's own measurements (DeepSpeed's comms logger), not a benchmark's: the floor is held
loosely (possible)."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

LARGE_BYTES = 32 << 20
FLOOR_GBPS = 10.0  # 10 Gb/s Ethernet, the slowest link between training nodes
COLLECTIVES = ("all_gather", "reduce_scatter", "all_reduce", "allreduce", "allgather", "reducescatter", "broadcast",
               "all_to_all", "alltoall")


@dataclass(frozen=True, slots=True)
class SlowOp:
    op: str
    best_gbps: float  # its best bus bandwidth at large messages
    sizes: tuple[int, ...]  # its large sizes, smallest first
    calls: int


def slow_ops(rows: Iterable[tuple[str, int, int, float]], nnodes: int | None) -> list[SlowOp]:
    """``rows``: (operation, message bytes, calls, bus bandwidth in Gb/s). The collectives whose best large-message bus
    bandwidth stays under ``FLOOR_GBPS`` in a job of two or more nodes, slowest first; none on one node (or unknown)."""
    if not nnodes or nnodes < 2:
        return []
    by: dict[str, list[tuple[int, int, float]]] = {}
    for op, size, calls, gbps in rows:
        if size >= LARGE_BYTES and calls > 0 and op.startswith(COLLECTIVES):
            by.setdefault(op, []).append((size, calls, gbps))
    out = [SlowOp(op, max(g for _, _, g in rs), tuple(sorted(s for s, _, _ in rs)), sum(c for _, c, _ in rs))
           for op, rs in by.items()]
    return sorted((s for s in out if s.best_gbps < FLOOR_GBPS), key=lambda s: s.best_gbps)
