"""desync.first_mismatch on NCCL rows finds the collective whose ranks disagree on count, dtype or op (its
integer signature per row), and none where they agree, large counts included."""
from __future__ import annotations

import pandas as pd
import pytest

from ncclscope.detectors.desync import first_mismatch


def _table(rows: list[tuple[int, int, str, int, str]]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["rank", "seq", "op", "count", "dtype"])
    df["pg"] = pd.Categorical(["nccl:abc"] * len(df))
    df["source"] = pd.Categorical(["nccl"] * len(df))
    for c in ("op", "dtype"):
        df[c] = df[c].astype("category")
    df["where"] = None
    return df


BIG = 1 << 40


@pytest.mark.parametrize("odd,want", [(None, None), (("allreduce", 2, "float32"), 3), (("allreduce", 1, "int8"), 3),
                                      (("broadcast", 1, "float32"), 3), (("allreduce", BIG + 1, "float32"), 3)])
def test_first_mismatch_by_signature(odd, want):
    rows = []
    for r in range(4):
        for s in range(1, 6):
            count = BIG if s == 5 else 1
            rows.append((r, s, "allreduce", count, "float32"))
    if odd is not None:
        op, count, dtype = odd
        rows[2 * 5 + 2] = (2, 3, op, count, dtype)  # rank 2, seq 3
        if count == BIG + 1:
            rows[2 * 5 + 4] = (2, 5, op, count, dtype)  # rank 2, seq 5 too: the earliest (3) is still named
    hit = first_mismatch(_table(rows))
    if want is None:
        assert hit is None
    else:
        assert hit is not None and hit[1] == want and sorted(hit[2]["rank"].tolist()) == [0, 1, 2, 3]
