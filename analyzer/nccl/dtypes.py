"""Datatype names: NCCL's ``ncclDataType_t`` codes, PyTorch's C++ scalar-type names, element sizes.

The canonical name is the ``torch.dtype`` name without ``torch.`` (``float32``, ``bfloat16``).
"""
from __future__ import annotations

# ncclDataType_t (src/nccl.h.in) -> (canonical name, bytes an element)
NCCL_DTYPES: dict[int, tuple[str, int]] = {
    0: ("int8", 1), 1: ("uint8", 1), 2: ("int32", 4), 3: ("uint32", 4), 4: ("int64", 8),
    5: ("uint64", 8), 6: ("float16", 2), 7: ("float32", 4), 8: ("float64", 8), 9: ("bfloat16", 2),
    10: ("float8_e4m3", 1), 11: ("float8_e5m2", 1),
}

# PyTorch's C++ scalar-type names (Flight Recorder) -> the torch.dtype names the hook and NCCL rows use
DTYPE_NAMES: dict[str, str] = {
    "float": "float32", "half": "float16", "double": "float64", "long": "int64", "int": "int32",
    "char": "int8", "byte": "uint8", "short": "int16", "complexfloat": "complex64", "complexdouble": "complex128",
}

# bytes an element, under either spelling
DTYPE_BYTES: dict[str, int] = {
    "float": 4, "float32": 4, "half": 2, "float16": 2, "bfloat16": 2, "double": 8, "float64": 8, "long": 8,
    "int64": 8, "int": 4, "int32": 4, "char": 1, "int8": 1, "byte": 1, "uint8": 1, "bool": 1, "short": 2,
    "int16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1,
}


def canonical_dtype(name: object) -> str | None:
    """``torch.float32`` / ``Float`` / ``float`` -> ``float32``; None (or NaN) -> None."""
    if name is None or name != name:  # noqa: PLR0124 - NaN (a missing value in a table)
        return None
    n = str(name).lower().removeprefix("torch.")
    return DTYPE_NAMES.get(n, n)
