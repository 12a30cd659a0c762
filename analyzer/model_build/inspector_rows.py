"""NCCL's Inspector records -> rows of the collectives table, and what its dump markers say was lost.

Each completed operation the plugin wrote is a row of its rank: ``pg`` is ``nccl:<commHash>:<op>`` (NCCL's
``commId`` of a top-level communicator; ``:p2p`` after it for sends and receives), since the plugin's sequence
number counts each operation type of a communicator apart (an AllReduce and an AllGather can both be #5), and
``seq`` is that number, the same on every rank. ``duration_ms`` is the kernel time (GPU clock), which includes
the time a rank's kernel waited for its peers, as Flight Recorder's does; verbose records give when the operation
was posted (``t_created``) and when its kernel started and stopped as the host saw it (``t_started``,
``t_completed``). The size is the plugin's message size in bytes; count and datatype are not written.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from ..model import COLLECTIVE_COLUMNS
from ..sources import records as R
from .values import ProcKey

SOURCE = "inspector"


def pg_label(op: R.InspectorOp) -> str:
    """The process-group label of an Inspector row: ``nccl:<commHash>:<op>``, ``...:<op>:p2p`` for a send or receive."""
    return f"nccl:{op.comm}:{op.op}" + (":p2p" if op.p2p else "")


def _proc_ranks(ops: list[R.InspectorOp], proc_rank: dict[ProcKey, int]) -> dict[ProcKey, int]:
    """Each process's global rank: the model's, else its rank in the largest communicator it reported."""
    largest: dict[ProcKey, tuple[int, int]] = {}
    for op in ops:
        key = (op.host, op.pid)
        cur = largest.get(key)
        if cur is None or op.nranks > cur[0]:
            largest[key] = (op.nranks, op.rank)
    return {key: proc_rank.get(key, rank) for key, (_n, rank) in largest.items()}


def _us(v: int | None) -> float:
    return v / 1e6 if v is not None else np.nan


def inspector_table(ops: list[R.InspectorOp], proc_rank: dict[ProcKey, int]) -> pd.DataFrame | None:
    """The collectives-table rows of the Inspector's operations (a record written twice counts once), or None."""
    if not ops:
        return None
    ranks = _proc_ranks(ops, proc_rank)
    seen: set[tuple[str, int, str, bool, str, int | None, int]] = set()
    keep: list[R.InspectorOp] = []
    for op in ops:
        key = (op.host, op.pid, op.comm, op.p2p, op.op, op.peer, op.sn)
        if key not in seen:
            seen.add(key)
            keep.append(op)
    n = len(keep)
    start = np.array([_us(o.kernel_start_us) for o in keep], dtype=np.float64)
    stop = np.array([_us(o.kernel_stop_us) for o in keep], dtype=np.float64)
    dur = np.array([o.exec_us / 1e3 for o in keep], dtype=np.float64)
    df = pd.DataFrame({
        "rank": np.array([ranks[(o.host, o.pid)] for o in keep], dtype=np.int64),
        "pg": pd.Categorical([pg_label(o) for o in keep]),
        "seq": np.array([o.sn for o in keep], dtype=np.int64),
        "op": pd.Categorical([o.op for o in keep]),
        "count": np.full(n, np.nan),
        "dtype": pd.Categorical([None] * n, categories=[]),
        "bytes": np.array([o.nbytes for o in keep], dtype=np.float64),
        "state": pd.Categorical(["completed"] * n),
        "t_created": np.array([_us(o.start_us) for o in keep], dtype=np.float64),
        "t_started": start,
        "t_completed": np.where(np.isfinite(stop), stop, start + dur / 1e3),
        "duration_ms": dur,
        "source": pd.Categorical([SOURCE] * n),
        "file": pd.Categorical([o.file for o in keep]),
        "line": np.array([o.line for o in keep], dtype=np.int64),
        "where": pd.Categorical([None] * n, categories=[]),
    }, columns=COLLECTIVE_COLUMNS)
    return df


def inspector_problems(stats: Iterable[R.InspectorDumpStats], limit: int = 16) -> list[str]:
    """One line per process and communicator whose records the plugin overwrote before writing them (its rings
    were full between two dumps): the table lacks those operations. The last marker's totals count."""
    last: dict[tuple[str, int, str], R.InspectorDumpStats] = {}
    for s in stats:
        last[(s.host, s.pid, s.comm)] = s
    out = []
    for (host, pid, comm), s in sorted(last.items()):
        lost = {"collective": s.coll_dropped_total, "point-to-point": s.p2p_dropped_total,
                "proxy": s.proxy_dropped_total or 0}
        said = ", ".join(f"{v} {k}" for k, v in lost.items() if v)
        if said:
            out.append(f"{s.file}: NCCL's Inspector on {host}:{pid} dropped {said} records of communicator {comm} "
                       "(rank {}) before writing them: its rings filled between dumps; those operations are missing "
                       "(raise NCCL_INSPECTOR_DUMP_COLL_RING_SIZE or shorten "
                       "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS)".format(s.rank))
    return out[:limit]
