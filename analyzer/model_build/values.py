"""Small value readers the builders share: untrusted numbers, evidence of a record."""
from __future__ import annotations

import math
from typing import Any

from ..model import Evidence
from ..sources import records as R

ProcKey = tuple[str, int]  # (host, pid)

def ev(rec: R.Rec) -> Evidence:
    return Evidence(rec.file, rec.line, rec.text.strip())


def opt_int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def seq_of(v: Any) -> int | None:
    """A sequence number from untrusted JSON: an int within int64, else None."""
    try:
        i = int(v)
    except (TypeError, ValueError, OverflowError):
        return None
    return i if -(1 << 62) < i < (1 << 62) else None


def numel(sizes: Any) -> int | None:
    if not isinstance(sizes, (list, tuple)) or not sizes:
        return None
    total = 0
    try:
        for s in sizes:
            if isinstance(s, (list, tuple)):
                total += math.prod(int(x) for x in s) if s else 1
    except (TypeError, ValueError, OverflowError):  # a dump with non-numbers in its shapes
        return None
    return total if 0 <= total < (1 << 53) else None


def ns_to_s(v: Any) -> float | None:
    if isinstance(v, (int, float)) and v > 0:
        return v / 1e9
    return None


def count_ranks(ranks: Any) -> int | None:
    if isinstance(ranks, (list, tuple)):
        return len(ranks)
    if isinstance(ranks, str):
        inner = ranks.strip("[]() ")
        return len([x for x in inner.split(",") if x.strip()]) if inner else None
    return None
