"""Bus bandwidth per collective, as nccl-tests defines it.

busbw = bytes / time x factor: allreduce 2(n-1)/n; allgather, reducescatter, alltoall (n-1)/n;
broadcast, reduce 1. The time of one collective is the shortest duration over its ranks (the last
rank to arrive waited least, so its duration is closest to the transfer itself); #1 of a group is
left out (it pays for NCCL's lazy connection set-up).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import pandas as pd

from ..model import Communicator
from ..nccl.busbw import busbw_factor, has_busbw_factor
from .records import timed_family

BUSBW_COLUMNS = ["pg", "seq", "op", "bytes", "time_ms", "nranks", "algbw", "busbw", "bucket"]


def factor(op: str, nranks: int) -> float:
    """nccl-tests' busbw factor (``nccl.busbw``) under any spelling of the name; 1 for collectives it
    does not define (send, recv) and for fewer than one rank."""
    return busbw_factor(op, nranks) if nranks >= 1 and has_busbw_factor(op) else 1.0


def busbw_table(df: pd.DataFrame, world: int) -> pd.DataFrame:
    """Per (pg, seq): op, bytes, time (ms, min over ranks), algbw and busbw in GB/s, size bucket (log2)."""
    d = df[timed_family(df) & df["duration_ms"].notna().to_numpy() & df["bytes"].notna().to_numpy()] if len(df) else df
    d = d[(d["bytes"] > 0) & (d["duration_ms"] > 0) & (d["seq"] > 1)]
    if not len(d):
        return pd.DataFrame(columns=BUSBW_COLUMNS)
    g = d.groupby(["pg", "seq"], observed=True).agg(op=("op", "first"), bytes=("bytes", "max"),
                                                    time_ms=("duration_ms", "min"), nranks=("rank", "nunique"))
    g = g.reset_index()
    g["pg"] = g["pg"].astype(str)
    g["op"] = g["op"].astype(str)
    n = g["nranks"].clip(lower=2).where(g["nranks"] > 1, world or 2)
    g["algbw"] = g["bytes"] / (g["time_ms"] / 1e3) / 1e9
    g["busbw"] = [a * factor(str(op), int(k)) for a, op, k in zip(g["algbw"], g["op"], n, strict=False)]
    g["bucket"] = [int(math.log2(b)) if b > 0 else 0 for b in g["bytes"]]
    return g


def transport_class(transport: str | None) -> str:
    """NCCL's transport string (``P2P/CUMEM``, ``SHM/direct``, ``NET/IB/0/GDRDMA``) -> a legend class."""
    t = (transport or "").upper()
    if t.startswith("P2P"):
        return "P2P/NVLink"
    if t.startswith("SHM"):
        return "SHM"
    if t.startswith(("NET/IB", "IB")) or "GDRDMA" in t:
        return "NET/IB"
    if t.startswith(("NET/SOCKET", "SOCKET")):
        return "NET/Socket"
    if t.startswith("NET"):
        return "NET"
    if t.startswith(("NVLS", "COLLNET")):
        return "NVLS/CollNet"
    return "unknown"


def pg_transports(communicators: Sequence[Communicator], pgs: Iterable[str], world_size: int | None) -> dict[str, str]:
    """Process group -> the transport class its collectives ran on (best guess from the communicators).

    ``nccl:<comm id>`` rows name their communicator; PyTorch's pg "0" is the root communicator of
    the whole world; other pgs take a split communicator's transports when there is one.
    """
    by_id = {c.id: c for c in communicators}

    def cls(c: Communicator) -> str:
        classes = sorted({transport_class(t) for t in c.transports})
        return "+".join(classes) if classes else "unknown"

    roots = [c for c in communicators if c.parent is None and (world_size is None or c.nranks == world_size)]
    splits = [c for c in communicators if c.parent is not None]
    out = {}
    for pg in pgs:
        if pg.startswith("nccl:") and pg[5:] in by_id:
            out[pg] = cls(by_id[pg[5:]])
        elif pg == "0" and roots:
            out[pg] = cls(roots[0])
        elif splits:
            out[pg] = cls(splits[0])
        elif roots:
            out[pg] = cls(roots[0])
    return out


def with_transport(tab: pd.DataFrame, communicators: Sequence[Communicator], world_size: int | None) -> pd.DataFrame:
    """``busbw_table`` rows with the transport class of their process group (for colouring by link)."""
    out = tab.copy()
    tr = pg_transports(communicators, sorted(set(out["pg"].astype(str))), world_size)
    # a dict lookup, not Series.map: an empty mapping would give float NaN that pandas refuses to fill with text
    out["transport"] = [tr.get(pg, "unknown") for pg in out["pg"].astype(str)]
    return out
