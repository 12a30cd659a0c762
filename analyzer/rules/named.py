"""Culprits a backend already named: what PyTorch's own analysis states is trusted over what ncclscope would infer.

- PyTorch's desync report (``TORCH_NCCL_DESYNC_DEBUG=1``, printed under a watchdog timeout): ``Timeout at
  collective: ALLREDUCE, #5`` (the collective the reporting rank timed out in), then its lag analysis: ``ranks [1]
  are the lagging ranks that caused this timeout. They never joined any collectives``, or ``the lagging/dead/
  mismatched ranks that caused the desync are: [1] joined but didn't finish collective #5`` and ``[0, 2] finished
  collective #5, but didn't join collective #6``. The ranks it names, every line of it read together, are the
  culprits of the hang; the collective is the first it names. When it names every rank of the world (every rank
  joined and none finished), no rank is behind: no culprit (NCCL or the network).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Named:
    culprits: tuple[int, ...]
    seq: int | None  # the collective of the report (count from 1), None when it names none
    op: str | None
    why: str


def desync_named(reports: Iterable[tuple[list[int], int | None, str | None]], world: Iterable[int]) -> Named | None:
    """``reports``: (ranks named, seq, op) of each line of PyTorch's desync reports, in file order; ``world``: the
    ranks of the job as far as known. None when no line names a rank."""
    named: set[int] = set()
    seq: int | None = None
    op: str | None = None
    for ranks, s, o in reports:
        named.update(ranks)
        if op is None and o is not None:
            op, seq = o, s
        elif seq is None and s is not None:
            seq = s
    if not named:
        return None
    everyone = set(world) | named
    if named >= everyone and len(everyone) > 1:
        return Named((), seq, op, f"PyTorch's desync report names every rank ({len(named)}): each joined the "
                     "collective and none finished it; no rank is behind")
    shown = ", ".join(map(str, sorted(named)))
    return Named(tuple(sorted(named)), seq, op, f"PyTorch's desync report names rank{'s' if len(named) > 1 else ''} "
                 f"{shown} as the lagging rank{'s' if len(named) > 1 else ''} that caused the timeout")
