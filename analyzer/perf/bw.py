"""Collectives measured by ``ncclscope perf``: sizes, and bandwidths as nccl-tests defines them.

nccl-tests (``src/*.cu``): ``size`` is the larger of the send and receive buffers in bytes,
``algbw = size / time``, ``busbw = algbw x factor`` with the factor per collective below, so busbw
is comparable to the link's peak whatever the rank count.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..nccl.busbw import busbw_factor
from ..nccl.ops import torch_name as canonical_op

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all")


@dataclass(frozen=True, slots=True)
class OpSpec:
    name: str
    redop: str  # "sum" or "none", as nccl-tests prints it
    root: int  # -1: no root
    split: bool  # buffer is split across ranks: size must be a multiple of nranks elements
    in_place: bool  # torch's call is in place (all_reduce, broadcast) or not


SPECS = {
    "all_reduce": OpSpec("all_reduce", "sum", -1, False, True),
    "all_gather": OpSpec("all_gather", "none", -1, True, False),
    "reduce_scatter": OpSpec("reduce_scatter", "sum", -1, True, False),
    "broadcast": OpSpec("broadcast", "none", 0, False, True),
    "all_to_all": OpSpec("all_to_all", "none", -1, True, False),
}


def bandwidths(size_bytes: int, time_us: float, op: str, nranks: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s (1e9 bytes) for ``size_bytes`` moved in ``time_us``."""
    if time_us <= 0:
        return 0.0, 0.0
    algbw = size_bytes / (time_us * 1e-6) / 1e9
    return algbw, algbw * busbw_factor(op, nranks)


def parse_ops(text: str) -> list[str]:
    if text.strip().lower() == "all":
        return list(OPS)
    ops = []
    for part in text.split(","):
        if not part.strip():
            continue
        o = canonical_op(part)
        if o not in SPECS:
            raise ValueError(f"unknown collective {part.strip()!r}; choose from {', '.join(OPS)} or all")
        if o not in ops:
            ops.append(o)
    if not ops:
        raise ValueError("no collective given")
    return ops


SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(i?[bB])?\s*$")


def parse_size(text: str | int) -> int:
    """``8``, ``64K``, ``256M``, ``1G`` (powers of 1024, as nccl-tests reads -b/-e) to bytes."""
    if isinstance(text, int):
        return text
    m = SIZE_RE.match(text)
    if not m:
        raise ValueError(f"not a size: {text!r} (use e.g. 8, 64K, 256M, 1G)")
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


def sizes(min_bytes: int, max_bytes: int, factor: float) -> list[int]:
    """min, min*factor, ... up to max (nccl-tests' -b/-e/-f); max itself is included when reached."""
    if min_bytes < 1 or max_bytes < min_bytes:
        raise ValueError(f"need 1 <= min-bytes <= max-bytes, got {min_bytes}, {max_bytes}")
    if factor <= 1:
        raise ValueError(f"factor must be > 1, got {factor}")
    out: list[int] = []
    s = float(min_bytes)
    while int(s) <= max_bytes:
        if not out or int(s) != out[-1]:
            out.append(int(s))
        s *= factor
    return out


def elements_for(op: str, size_bytes: int, nranks: int, elem_size: int = 4) -> int:
    """Element count of the full buffer for a requested size (rounded down to a multiple of nranks for
    split collectives, as nccl-tests does); 0 when the size is too small to give each rank one element."""
    count = size_bytes // elem_size
    if SPECS[op].split:
        count = count // nranks * nranks
    return count
