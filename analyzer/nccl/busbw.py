"""nccl-tests' bus bandwidth: ``busbw = algbw x factor``, so that busbw compares with a link's peak
whatever the rank count (nccl-tests ``doc/PERFORMANCE.md``)."""
from __future__ import annotations

from .ops import canonical_op

_N_MINUS_1_OVER_N = frozenset({"allgather", "reducescatter", "alltoall"})
_ONE = frozenset({"broadcast", "reduce"})


def has_busbw_factor(op: str) -> bool:
    c = canonical_op(op)
    return c == "allreduce" or c in _N_MINUS_1_OVER_N or c in _ONE


def busbw_factor(op: str, nranks: int) -> float:
    """allreduce 2(n-1)/n; allgather, reducescatter, alltoall (n-1)/n; broadcast, reduce 1.
    Any spelling of the name (``all_reduce``, ``AllReduce``, ``allreduce``); ValueError for a
    collective with no factor (send, recv, ...) or fewer than one rank."""
    n = nranks
    if n < 1:
        raise ValueError(f"nranks must be >= 1, got {n}")
    c = canonical_op(op)
    if c == "allreduce":
        return 2 * (n - 1) / n
    if c in _N_MINUS_1_OVER_N:
        return (n - 1) / n
    if c in _ONE:
        return 1.0
    raise ValueError(f"unknown collective {op!r}")
