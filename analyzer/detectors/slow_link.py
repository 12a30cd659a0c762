"""Slow links: achieved bus bandwidth per collective against the fabric's own sweep.

busbw = bytes / time x factor (nccl-tests): allreduce 2(n-1)/n; allgather, reducescatter,
alltoall (n-1)/n; broadcast, reduce 1. The time of one collective is the shortest duration over
its ranks (the last rank to arrive waited least, so its duration is closest to the transfer
itself). Compared with nccl-tests / ``ncclscope perf`` rows of the same size class when the run
holds them; large messages far below the sweep are flagged.
"""
from __future__ import annotations

import math

import pandas as pd

from ..model import Finding, Run, Severity, Verdict
from ..perf.bw import busbw_factor

MIN_BYTES = 1 << 20
FAR_BELOW = 0.5


def _factor(op: str, nranks: int) -> float:
    """nccl-tests' busbw factor (``perf.bw.busbw_factor``); 1 for collectives it does not define."""
    try:
        return busbw_factor(op, nranks)
    except ValueError:
        return 1.0


def busbw_table(df: pd.DataFrame, world: int) -> pd.DataFrame:
    """Per (pg, seq): op, bytes, time (ms, min over ranks), algbw and busbw in GB/s, size bucket (log2)."""
    d = df[df["source"].isin(["fr", "hook", "completion_hook"]) & df["duration_ms"].notna() & df["bytes"].notna()]
    d = d[(d["bytes"] > 0) & (d["duration_ms"] > 0) & (d["seq"] > 1)]  # #1 pays for lazy connection set-up
    if not len(d):
        return pd.DataFrame(columns=["pg", "seq", "op", "bytes", "time_ms", "nranks", "algbw", "busbw", "bucket"])
    g = d.groupby(["pg", "seq"], observed=True).agg(op=("op", "first"), bytes=("bytes", "max"),
                                                    time_ms=("duration_ms", "min"), nranks=("rank", "nunique"))
    g = g.reset_index()
    n = g["nranks"].clip(lower=2).where(g["nranks"] > 1, world or 2)
    g["algbw"] = g["bytes"] / (g["time_ms"] / 1e3) / 1e9
    g["busbw"] = [a * _factor(str(op), int(k)) for a, op, k in zip(g["algbw"], g["op"], n)]
    g["bucket"] = [int(math.log2(b)) if b > 0 else 0 for b in g["bytes"]]
    return g


def detect(run: Run) -> list[Finding]:
    tab = busbw_table(run.collectives, run.job.world_size or 2)
    if not len(tab) or not run.nccl_tests:
        return []
    sweep = pd.DataFrame(run.nccl_tests)
    sweep = sweep[sweep["size"] > 0]
    if not len(sweep):
        return []
    sweep["bucket"] = [int(math.log2(s)) for s in sweep["size"]]
    ref = sweep.groupby("bucket")["busbw"].max()
    big = tab[tab["bytes"] >= MIN_BYTES]
    med = big.groupby("bucket")["busbw"].median()
    findings = []
    for bucket, bw in med.items():
        if bucket in ref.index and ref[bucket] > 0 and bw < FAR_BELOW * ref[bucket]:
            findings.append(Finding(
                kind="slow_link", severity=Severity.WARNING,
                message=f"collectives of ~{_human(2 ** bucket)} reach {bw:.1f} GB/s bus bandwidth, "
                f"{bw / ref[bucket]:.0%} of the {ref[bucket]:.1f} GB/s this fabric reached in its sweep",
                hint="Compare transports (NCCL_P2P_DISABLE / SHM / IB settings), look for other traffic on the links, "
                "and for stragglers inflating collective time.", evidence=(), verdict=Verdict.DEGRADED,
                data={"bucket_bytes": 2 ** bucket, "busbw": bw, "sweep_busbw": float(ref[bucket])}))
    return findings


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024:
            return f"{n:.0f} {unit}"
        n /= 1024
    return f"{n:.0f} TB"
