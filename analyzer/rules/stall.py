"""The stall time: seconds without progress, with collective work pending, that make a hang
(the rule is written out in ``rules/__init__``)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Iterable

FLOOR_S = 5.0
RHYTHM_K = 3.0
CAP_S = 300.0
STARTUP_S = 30.0
MIN_GAPS = 20
MAX_GAPS = 512


def p99(values: Iterable[float]) -> float | None:
    v = sorted(values)
    if not v:
        return None
    return v[min(len(v) - 1, math.ceil(0.99 * len(v)) - 1)]


def threshold(gaps: Sequence[float] | Iterable[float], stall_seconds: float | None = None,
              started: bool = True) -> float:
    """``gaps``: the last gaps between completions; ``started``: every rank has completed a
    collective (before that, ranks still load and connect)."""
    if stall_seconds is not None:
        return float(stall_seconds)
    if not started:
        return STARTUP_S
    g = list(gaps)
    if len(g) < MIN_GAPS:  # a young job: its slowest gap so far stands in for the p99
        return min(STARTUP_S, max(FLOOR_S, RHYTHM_K * max(g, default=0.0)))
    return min(CAP_S, max(FLOOR_S, RHYTHM_K * (p99(g) or 0.0)))
