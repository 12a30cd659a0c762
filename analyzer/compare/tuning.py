"""NCCL's algorithm and protocol choices compared, from its TUNING lines (``AllReduce: 33554432 Bytes -> Algo RING
proto SIMPLE ...``, ``NCCL_DEBUG_SUBSYS=TUNING``): per operation and size, the choice printed most on each side;
sizes of one operation whose choice changed alike are one line."""
from __future__ import annotations

from collections import defaultdict

from ..model import Run, TuningChoice
from .common import diff, op_size_shares, size_span
from .model import Aspect, Difference, Side, Tier

Key = tuple[str, int]  # (op, log2 size)


def choices(run: Run) -> dict[Key, TuningChoice]:
    """The choice printed most for each (op, log2 size) that names its op."""
    best: dict[Key, TuningChoice] = {}
    for c in run.tuning:
        if c.op is None:
            continue
        k = (c.op, c.bucket)
        if k not in best or c.lines > best[k].lines:
            best[k] = c
    return best


def _word(c: TuningChoice) -> str:
    return f"{c.algo}/{c.proto}"


def algorithms(a: Run, b: Run) -> list[Difference]:
    """One line per (op, A's choice, B's choice) over the sizes both runs printed a choice for; its score is the
    share of collective time (or volume) those sizes take in the run where they take more."""
    ca, cb = choices(a), choices(b)
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for k in sorted(set(ca) & set(cb)):
        if _word(ca[k]) != _word(cb[k]):
            groups[(k[0], _word(ca[k]), _word(cb[k]))].append(k[1])
    if not groups:
        return []
    sa, sb = op_size_shares(a), op_size_shares(b)
    out = []
    for (op, wa, wb), buckets in sorted(groups.items()):
        share = max(sum(sa.get((op, k), 0.0) for k in buckets), sum(sb.get((op, k), 0.0) for k in buckets))
        top = max(buckets)
        span = size_span(buckets)
        out.append(diff(Aspect.ALGORITHM, Tier.ALGORITHM, share, f"{op} of {span}",
                        Side(wa, ca[(op, top)].evidence), Side(wb, cb[(op, top)].evidence),
                        f"NCCL's algorithm/protocol for {op} of {span}: {wa} -> {wb}"
                        + (f" ({100 * share:.0f}% of collective time)" if share >= 0.01 else "")))
    return out
