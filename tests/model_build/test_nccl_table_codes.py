"""The collectives table's codes made run by run and by lookup tables (``nccl_table``) are those pandas'
factorize and groupby give: sequence numbers, (process, communicator) pairs, datatype names and sizes, and
pandas keeps the codes in the type they were made in."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ncclscope.model_build import nccl_table as NT
from ncclscope.nccl.dtypes import NCCL_DTYPES


def _keys(rng: np.random.Generator, shape: str) -> np.ndarray:
    n = int(rng.integers(0, 400))
    k = rng.integers(0, int(rng.integers(1, 9)), size=n).astype(np.int64)
    if shape == "runs":  # one file per process: each pair's rows contiguous
        k = np.sort(k)
    elif shape == "long":  # few long runs (the 64-rank shape)
        k = np.repeat(np.arange(3, dtype=np.int64), n)
    return k


@pytest.mark.parametrize("shape", ["mixed", "runs", "long"])
def test_runs_cumcount_is_pandas_cumcount(shape):
    rng = np.random.default_rng({"mixed": 1, "runs": 2, "long": 3}[shape])
    for _ in range(200):
        key = _keys(rng, shape)
        heads = NT._run_heads(key)
        lengths = np.diff(heads, append=len(key))
        run_codes, uniq = pd.factorize(key[heads], sort=False)
        codes, uniq0 = pd.factorize(key, sort=False)
        assert (np.repeat(run_codes, lengths) == codes).all() and (uniq == uniq0).all()
        want = pd.Series(codes).groupby(codes, sort=False).cumcount().to_numpy() + 1
        assert (NT._runs_cumcount(run_codes, len(uniq), heads, lengths) == want).all()


def test_dtype_columns_match_a_sorted_factorize_with_names_and_sizes():
    rng = np.random.default_rng(4)
    known = sorted(NCCL_DTYPES)
    cases = [rng.choice(known, size=50), np.array([7, 7, 7]), np.array([9, 2, 200, 2]),  # 200: no NCCL type
             np.array([-1, 7, 3]), np.array([1 << 17, 7])]  # outside the lookup table's range: factorized
    for dt in cases:
        dt = dt.astype(np.int32)
        codes, names, sizes = NT._dtype_columns(dt)
        f_codes, uniq = pd.factorize(dt, sort=True)
        info = [NCCL_DTYPES.get(int(d), (str(int(d)), 0)) for d in uniq]
        assert names == list(dict.fromkeys(name for name, _ in info))
        assert [names[c] for c in codes] == [info[c][0] for c in f_codes]
        assert sizes.dtype == np.int8 and sizes.tolist() == [info[c][1] for c in f_codes]
        assert codes.dtype == np.int8  # a handful of names: pandas' own code type, no copy into it


def test_codes_are_kept_in_the_type_they_were_made_in():
    for n, t in ((3, np.int8), (126, np.int8), (127, np.int16), (40_000, np.int32)):
        assert NT._code_dtype(n) is t
        cat = pd.Categorical.from_codes(np.zeros(4, dtype=t), [f"c{i}" for i in range(n)])
        assert cat.codes.dtype == t
