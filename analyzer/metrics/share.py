"""Where collective time goes (time share, from durations) and where the volume goes (calls and
bytes, from any record that has a size: NCCL's COLL lines give every call's op, count and type)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..model import Run
from .busbw import busbw_table
from .records import first_of_each, strs, timed_family

BY = ("op", "size", "pg", "top")
SHARE_COLUMNS = ["group", "op", "bucket", "pg", "time_ms", "calls", "share"]
VOLUME_COLUMNS = ["group", "calls", "bytes", "share"]


def size_label(bucket: int) -> str:
    """A log2 size bucket as the report writes it, with a readable size: ``~2^25 B (32 MiB)``."""
    n = float(2 ** int(bucket))
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"~2^{int(bucket)} B ({n:.0f} {unit})"
        n /= 1024
    return f"~2^{int(bucket)} B ({n:.0f} TiB)"


def run_busbw(run: Run) -> pd.DataFrame:
    """``busbw_table`` of the run, computed once per analysis (slow_link, hotspots and the pages share it)."""
    if "busbw" not in run.memo:
        run.memo["busbw"] = busbw_table(run.collectives, run.job.world_size or 2)
    return run.memo["busbw"]


def time_share(tab: pd.DataFrame, by: str = "top") -> pd.DataFrame:
    """Summed collective time (ms, each collective timed by its shortest rank) and its share of the whole,
    grouped by ``op``, ``size`` (log2 bucket), ``pg`` or ``top`` (op, size and pg together: the report's
    hotspot line). ``tab`` is a ``busbw_table``; largest first (by size: smallest size first)."""
    if by not in BY:
        raise ValueError(f"time share by {by!r}: one of {', '.join(BY)}")
    if not len(tab):
        return pd.DataFrame(columns=SHARE_COLUMNS)
    keys = {"op": ["op"], "size": ["bucket"], "pg": ["pg"], "top": ["op", "bucket", "pg"]}[by]
    g = tab.groupby(keys, observed=True).agg(time_ms=("time_ms", "sum"), calls=("seq", "count")).reset_index()
    g["share"] = g["time_ms"] / g["time_ms"].sum()
    for col in ("op", "bucket", "pg"):
        if col not in g:
            g[col] = None
    g["group"] = [_label(by, r.op, r.bucket, r.pg) for r in g.itertuples()]
    g = g.sort_values("bucket" if by == "size" else "time_ms", ascending=by == "size", kind="stable")
    return g[SHARE_COLUMNS].reset_index(drop=True)


def _label(by: str, op: object, bucket: object, pg: object) -> str:
    if by == "op":
        return str(op)
    if by == "pg":
        return f"pg {pg}"
    if by == "size":
        return size_label(int(bucket))  # type: ignore[call-overload]
    return f"{op} of {size_label(int(bucket))} on pg {pg}"  # type: ignore[call-overload]


def one_row_per_collective(df: pd.DataFrame) -> pd.DataFrame:
    """op, bytes and pg of each collective (pg, seq), from one family of sources: PyTorch's records
    (Flight Recorder, hook) when there are any, else NCCL's Inspector plugin's, else NCCL's COLL lines
    (their pg names a communicator, so mixing them would count each call twice). The first row of each
    collective, by ``ufunc.at``."""
    if not len(df):
        return pd.DataFrame(columns=["pg", "seq", "op", "bytes"])
    family = timed_family(df)  # PyTorch's records, else NCCL's Inspector's, else NCCL's COLL lines
    keep = (family if family.any() else strs(df["source"]) == "nccl") & np.isfinite(df["bytes"].to_numpy(dtype=float))
    d = df[keep]
    if not len(d):
        return pd.DataFrame(columns=["pg", "seq", "op", "bytes"])
    d = d.iloc[first_of_each(d)]
    return pd.DataFrame({"pg": strs(d["pg"]), "seq": d["seq"].to_numpy(), "op": strs(d["op"]),
                         "bytes": d["bytes"].to_numpy(dtype=float)})


def volume(calls: pd.DataFrame, by: str = "op") -> pd.DataFrame:
    """Calls and bytes by ``op``, ``size`` (log2 bucket) or ``pg`` of ``one_row_per_collective``'s table;
    ``share`` is the share of bytes. What ``NCCL_DEBUG=INFO`` alone tells: where the volume goes."""
    if not len(calls):
        return pd.DataFrame(columns=VOLUME_COLUMNS)
    b = calls["bytes"].to_numpy(dtype=float)
    bucket = np.floor(np.log2(np.maximum(b, 1))).astype(np.int64)
    key = {"op": calls["op"].to_numpy(), "pg": np.asarray([f"pg {p}" for p in calls["pg"]], dtype=object),
           "size": bucket}.get(by)
    if key is None:
        raise ValueError(f"volume by {by!r}: one of op, size, pg")
    g = pd.DataFrame({"k": key, "b": b}).groupby("k", sort=True)["b"].agg(["size", "sum"]).reset_index()
    total = float(g["sum"].sum()) or 1.0
    out = pd.DataFrame({"group": [size_label(int(k)) for k in g["k"]] if by == "size" else g["k"].astype(str),
                        "calls": g["size"].to_numpy(), "bytes": g["sum"].to_numpy(), "share": g["sum"].to_numpy() / total})
    if by != "size":
        out = out.sort_values("bytes", ascending=False, kind="stable")
    return out.reset_index(drop=True)


def run_volume(run: Run) -> pd.DataFrame:
    """``one_row_per_collective`` of the run, once per analysis."""
    if "calls" not in run.memo:
        run.memo["calls"] = one_row_per_collective(run.collectives)
    return run.memo["calls"]
