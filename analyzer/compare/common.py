"""What the comparers share: sizes said briefly, communicators paired across two runs, a collective's row as
evidence, and the constructor of a difference."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..model import Communicator, Evidence, Run
from .model import Aspect, Difference, Direction, Side, Tier


def _bytes(n: float) -> tuple[float, str]:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return n, unit
        n /= 1024
    return n, "TiB"


def size_text(bucket: int, upto: int | None = None) -> str:
    """A log2 size bucket (sizes from 2^b up to 2^(b+1)) briefly: ``16-32 MiB``, ``4-8 B``, ``512 KiB-1 MiB``;
    with ``upto``, the buckets ``bucket`` to ``upto`` as one span."""
    lo, ulo = _bytes(float(2 ** int(bucket)))
    hi, uhi = _bytes(float(2 ** (int(upto if upto is not None else bucket) + 1)))
    return f"{lo:.0f}-{hi:.0f} {uhi}" if ulo == uhi else f"{lo:.0f} {ulo}-{hi:.0f} {uhi}"


def size_span(buckets: Sequence[int]) -> str:
    """The sizes of several buckets as one span: ``16-32 MiB``, ``1-64 MiB``."""
    return size_text(min(buckets), max(buckets))


def gbs(x: float) -> str:
    return f"{x:.1f} GB/s" if x >= 1 else f"{x:.3g} GB/s"


def pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def diff(aspect: Aspect, tier: Tier, score: float, subject: str, a: Side, b: Side, message: str,
         direction: Direction = Direction.CHANGED) -> Difference:
    return Difference(aspect=aspect, tier=tier, score=float(score), direction=direction, subject=subject, a=a, b=b,
                      message=message)


def comm_role(c: Communicator, index: int) -> str:
    """How a communicator is named across runs (its id differs every run): the world's, or a split's by order."""
    if c.parent is None and index == 0:
        return f"the world communicator ({c.nranks} ranks)"
    return f"communicator #{index + 1} ({c.nranks} ranks)"


def _roles(run: Run) -> list[Communicator]:
    """The communicators in the order ``pair_communicators`` pairs them: top-level ones first, the largest (the
    world's) first; then splits, the largest first; ties in their order in the model."""
    cs = list(run.communicators)
    return sorted(cs, key=lambda c: (c.parent is not None, -c.nranks, cs.index(c)))


def pair_communicators(a: Run, b: Run) -> list[tuple[str, Communicator | None, Communicator | None]]:
    """(role, A's, B's) communicators paired by role: a commId is new every run, so the first top-level one of
    each run is the world's, the next ones pair in order. A side with fewer has None."""
    ra, rb = _roles(a), _roles(b)
    out: list[tuple[str, Communicator | None, Communicator | None]] = []
    for i in range(max(len(ra), len(rb))):
        ca = ra[i] if i < len(ra) else None
        cb = rb[i] if i < len(rb) else None
        shown = ca if ca is not None else cb
        assert shown is not None
        out.append((comm_role(shown, i), ca, cb))
    return out


def row_evidence(run: Run, pg: str, seq: int, what: str) -> Evidence | None:
    """The record of collective (pg, seq) as evidence: the timed row with the shortest duration (the one the
    busbw table timed), else any row of it; its file and line, ``what`` as its text. None when the run's table
    holds none."""
    df = run.collectives
    if not len(df):
        return None
    hit = df[(df["pg"].astype(str) == str(pg)).to_numpy() & (df["seq"].to_numpy() == seq)]
    if not len(hit):
        return None
    lined = hit[hit["line"].fillna(0).to_numpy(dtype=float) >= 1]  # a line a user can open, where one exists
    hit = lined if len(lined) else hit
    dur = hit["duration_ms"].to_numpy(dtype=float)
    i = int(np.nanargmin(dur)) if np.isfinite(dur).any() else 0
    row = hit.iloc[i]
    line = int(row["line"]) if pd.notna(row["line"]) else 0
    return Evidence(str(row["file"]), line, what)


def op_size_shares(run: Run) -> dict[tuple[str, int], float]:
    """Each (op, log2 size)'s share of the run's collective time (``metrics.share``), or, where nothing is timed,
    its share of the bytes the collectives moved (NCCL's COLL lines alone give sizes, no times)."""
    from ..metrics.share import run_busbw, run_volume

    tab = run_busbw(run)
    if len(tab):
        g = tab.groupby(["op", "bucket"], observed=True)["time_ms"].sum()
        total = float(g.sum()) or 1.0
        return {(str(op), int(bucket)): float(t) / total for (op, bucket), t in g.items()}
    calls = run_volume(run)
    if not len(calls):
        return {}
    b = calls["bytes"].to_numpy(dtype=float)
    bucket = np.floor(np.log2(np.maximum(b, 1))).astype(np.int64)
    g = pd.DataFrame({"op": calls["op"].to_numpy(), "bucket": bucket, "b": b}).groupby(["op", "bucket"])["b"].sum()
    total = float(g.sum()) or 1.0
    return {(str(op), int(bk)): float(x) / total for (op, bk), x in g.items()}
