"""Hotspots: where collective time goes (by op, size bucket and process group), small-message
storms, and the collectives that cost the most waiting. Informational: never sets the verdict."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..metrics.records import first_of_each, groups_where, in_values, table_groups
from ..metrics.share import run_busbw
from ..metrics.share import time_share as share_of
from ..metrics.waiting import run_late_arrivals
from ..model import Evidence, Finding, FindingKind, Run, Severity
from .common import record_evidence, rows_where

SMALL = 64 * 1024


def time_share(run: Run) -> pd.DataFrame:
    """Collective time by op, size bucket and pg (``metrics.share.time_share``, the Hotspots page's numbers)."""
    return share_of(run_busbw(run), "top")


def detect(run: Run) -> list[Finding]:
    findings: list[Finding] = []
    df = run.collectives
    if not len(df):
        return findings
    share = time_share(run)
    if len(share):
        top = share.head(3)
        findings.append(Finding(
            kind=FindingKind.HOTSPOT, severity=Severity.INFO,
            message="collective time goes to " + "; ".join(
                f"{r.op} of ~2^{int(r.bucket)} B on pg {r.pg}: {r.share:.0%} ({int(r.calls)} call{'' if int(r.calls) == 1 else 's'})"
                for r in top.itertuples()), evidence=_first_of_group(run, top.iloc[0]), data={"top": top.to_dict("records")}))
    keep = in_values(df["source"], ["fr", "hook", "nccl"]) & df["bytes"].notna().to_numpy()
    if keep.sum() >= 1000:
        # one row per collective (pg, seq): the first of each group code, by ufunc.at, no sort or copy
        rows = rows_where(df[["pg", "seq", "bytes"]], keep)
        first = first_of_each(rows, groups_where(table_groups(run), keep))
        nbytes = rows["bytes"].to_numpy(np.float64)[first]
        total, small = len(first), int((nbytes < SMALL).sum())
        if total >= 1000 and small / total > 0.8:
            one = rows.iloc[first[int(np.argmax(nbytes < SMALL))]]
            seen = record_evidence(run, str(one["pg"]), int(one["seq"]), f"pg {one['pg']} #{one['seq']}: {int(one['bytes'])} B")
            findings.append(Finding(
                kind=FindingKind.HOTSPOT, severity=Severity.WARNING,
                message=f"{small} of {total} collectives move under 64 KB: latency-bound small-message traffic",
                hint="Bucket small tensors together (DDP bucket_cap_mb, torch.distributed coalescing, fewer .item() "
                "all-reduces of scalars).", evidence=(seen,) if seen else (), data={"small": small, "total": total}))
    la = run_late_arrivals(run)
    if len(la):
        worst = la.sort_values("wait_ms", ascending=False).head(3)
        findings.append(Finding(
            kind=FindingKind.HOTSPOT, severity=Severity.INFO,
            message="most waiting: " + "; ".join(f"pg {r.pg} #{r.seq} {r.op}: {r.wait_ms:.0f} ms waiting for rank {r.late_rank}"
                                         for r in worst.itertuples()), evidence=_most_waited(run, worst.iloc[0]), data={}))
    return findings


def _first_of_group(run: Run, top: pd.Series) -> tuple[Evidence, ...]:
    """The first record of the (op, size, pg) group that takes the most time (its first collective by sequence)."""
    tab = run_busbw(run)
    mine = tab[(tab["op"] == top["op"]).to_numpy() & (tab["bucket"] == top["bucket"]).to_numpy()
               & (tab["pg"] == str(top["pg"])).to_numpy()]
    if not len(mine):
        return ()
    c = mine.sort_values("seq").iloc[0]
    seen = record_evidence(run, str(c["pg"]), int(c["seq"]),
                           f"pg {c['pg']} #{int(c['seq'])} {c['op']}: {int(c['bytes'])} B in {float(c['time_ms']):.3g} ms")
    return (seen,) if seen else ()


def _most_waited(run: Run, worst: pd.Series) -> tuple[Evidence, ...]:
    """The late rank's record of the collective that cost the most waiting."""
    seen = record_evidence(run, str(worst["pg"]), int(worst["seq"]),
                           f"pg {worst['pg']} #{int(worst['seq'])} {worst['op']}: {float(worst['wait_ms']):.0f} ms waiting for "
                           f"rank {int(worst['late_rank'])}", int(worst["late_rank"]))
    return (seen,) if seen else ()
