"""``records.in_values`` is pandas' ``isin`` for every shape of column: categorical with every, some or
none of its categories asked for, with missing values, empty, and a plain object column."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ncclscope.metrics.records import in_values


def _cases() -> list[pd.Series]:
    nccl = pd.Series(pd.Categorical.from_codes(np.zeros(5, np.int8), ["nccl"]))
    mixed = pd.Series(pd.Categorical(["fr", "hook", None, "nccl", "fr"], categories=["fr", "hook", "nccl", "x"]))
    missing = pd.Series(pd.Categorical.from_codes(np.array([0, -1, 0], np.int8), ["nccl"]))
    empty = pd.Series(pd.Categorical.from_codes(np.zeros(0, np.int8), ["nccl"]))
    return [nccl, mixed, missing, empty, pd.Series(["fr", "nccl", None], dtype=object)]


@pytest.mark.parametrize("values", [["fr", "hook", "nccl"], ["nccl"], ["fr", "hook"], ["send"], []])
def test_in_values_is_pandas_isin(values):
    for s in _cases():
        got = in_values(s, values)
        assert got.dtype == bool and got.tolist() == s.isin(values).tolist()


def test_entries_at_takes_the_flight_recorder_and_hook_rows_of_one_collective():
    from types import SimpleNamespace

    from ncclscope.detectors.common import entries_at

    df = pd.DataFrame({"rank": [0, 1, 1, 2, 3], "seq": [5, 5, 5, 5, 6], "pg": pd.Categorical(["0", "0", "1", "0", "0"]),
                       "source": pd.Categorical(["fr", "hook", "fr", "nccl", "fr"]), "op": ["a", "b", "c", "d", "e"]})
    got = entries_at(SimpleNamespace(collectives=df), "0", 5)  # type: ignore[arg-type]
    assert {r: e["op"] for r, e in got.items()} == {0: "a", 1: "b"}
    nccl_only = df.assign(source=pd.Categorical(["nccl"] * 5))
    assert entries_at(SimpleNamespace(collectives=nccl_only), "0", 5) == {}  # type: ignore[arg-type]
