"""Small value readers the builders share: untrusted numbers, dtype names, evidence of a record."""
from __future__ import annotations

import math
from typing import Any

from ..model import Evidence
from ..sources import records as R

ProcKey = tuple[str, int]  # (host, pid)

# PyTorch's C++ scalar-type names (Flight Recorder) -> the torch.dtype names the hook and NCCL rows use
DTYPE_NAMES = {
    "float": "float32", "half": "float16", "double": "float64", "long": "int64", "int": "int32",
    "char": "int8", "byte": "uint8", "short": "int16", "complexfloat": "complex64", "complexdouble": "complex128",
}
DTYPE_BYTES = {
    "float": 4, "float32": 4, "half": 2, "float16": 2, "bfloat16": 2, "double": 8, "float64": 8, "long": 8,
    "int64": 8, "int": 4, "int32": 4, "char": 1, "int8": 1, "byte": 1, "uint8": 1, "bool": 1, "short": 2,
    "int16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1,
}


def canonical_dtype(name: object) -> str | None:
    if name is None or name != name:
        return None
    n = str(name).lower().removeprefix("torch.")
    return DTYPE_NAMES.get(n, n)


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
