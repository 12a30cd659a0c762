"""Slow links: achieved bus bandwidth per collective against the fabric's own sweep.

busbw per collective comes from ``metrics.busbw`` (nccl-tests' factors, each collective timed by
its shortest rank: the numbers the dashboard plots). Compared with nccl-tests / ``ncclscope perf`` rows of the same size class when the run
holds them; large messages far below the sweep are flagged.
"""
from __future__ import annotations

import math

import pandas as pd

from ..metrics.busbw import busbw_table
from ..metrics.share import run_busbw
from ..model import Finding, FindingKind, Run, Severity, Verdict

__all__ = ["busbw_table", "detect"]

MIN_BYTES = 1 << 20
FAR_BELOW = 0.5


def detect(run: Run) -> list[Finding]:
    tab = run_busbw(run)
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
                kind=FindingKind.SLOW_LINK, severity=Severity.WARNING,
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
