"""Desync: ranks at the same sequence number of a process group called different collectives.

Inputs: the collectives table rows from Flight Recorder and the hook (op, element count, dtype per
rank and (pg, seq)), PyTorch's own ``Detected mismatch between collectives`` (DETAIL) and desync
reports. Every side is reported with its ranks, sizes and call site; with more than two ranks a
majority vote names the odd rank(s) out. Coalesced groups are compared by op only.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..model import Evidence, Finding, Run, Severity, Stuck, Verdict
from .common import dense_groups, group_key, not_p2p, rows_where

HINT = ("Ranks must call the same collectives in the same order with the same sizes and dtypes. Look for "
        "rank-dependent branches (if rank == 0: ...), data-dependent sizes (the last batch, variable-length "
        "tensors), or a collective skipped on an exception path. The call sites below show where each side is.")


def first_mismatch(df: pd.DataFrame) -> tuple[str, int, pd.DataFrame] | None:
    """The earliest (pg, seq) whose ranks disagree on op, count or dtype, with those ranks' rows.

    Flight Recorder and hook rows first (PyTorch's own sequence numbers); without them, NCCL COLL
    lines by their per-communicator call number (send/recv excluded: their counts differ by peer)."""
    torch_rows = df[df["source"].isin(["fr", "hook"])]
    found = _first_mismatch(torch_rows.drop_duplicates(["rank", "pg", "seq"], keep="first"))
    if found is None:
        # (rank, communicator, call number) is unique by construction for NCCL rows
        mask = ((df["source"] == "nccl") & ~df["op"].isin(["send", "recv"])).to_numpy()
        if mask.any():
            # the signature's columns only (no copy: pandas copies on write, and the usual mask keeps
            # every row); the whole rows of the mismatched collective are taken after
            found = _first_mismatch(rows_where(df[["rank", "pg", "seq", "op", "count", "dtype"]], mask))
            if found is not None:
                pg, seq, rows = found
                full = df.loc[rows.index]
                found = pg, seq, full.assign(_key=rows["_key"])
    return found


def _first_mismatch(d: pd.DataFrame) -> tuple[str, int, pd.DataFrame] | None:
    """Integer signatures, min != max per collective by ``ufunc.at`` over dense group codes: no sort,
    no per-row strings, linear memory, until a mismatch is found."""
    d = not_p2p(d)
    if not len(d):
        return None
    op = d["op"].astype("category")
    op_code = op.cat.codes.to_numpy()
    dt_code = d["dtype"].astype("category").cat.codes.to_numpy()
    count = d["count"]
    # sig = (count + 1) * 65536 + (dtype code + 1) * 256 + op code, built in place: one 8-byte array
    if pd.api.types.is_integer_dtype(count.dtype):
        sig = count.to_numpy(np.int64, copy=True)
    else:
        sig = count.fillna(-1).to_numpy(np.float64).astype(np.int64)
    sig += 1
    sig *= 65536
    sig += dt_code.astype(np.int32) * 256 + 256
    sig += op_code
    coalesced = (op == "coalesced").to_numpy()
    if coalesced.any():  # coalesced groups compare by op only
        sig[coalesced] = op_code[coalesced]
    g, ng = dense_groups(group_key(d))
    lo = np.full(ng, np.iinfo(np.int64).max)
    np.minimum.at(lo, g, sig)
    hi = np.full(ng, np.iinfo(np.int64).min)
    np.maximum.at(hi, g, sig)
    bad = lo != hi  # groups of no row have lo > hi: left out below
    bad &= lo <= hi
    if not bad.any():
        return None
    seq_of = np.zeros(ng, np.int64)
    seq_of[g] = d["seq"].to_numpy(np.int64)
    worst = np.flatnonzero(bad)[np.argmin(seq_of[bad])]  # the earliest; the first in key order on a tie
    rows = d.iloc[np.flatnonzero(g == worst)].copy()
    rows["_key"] = (rows["op"].astype(str) + "|" + rows["dtype"].astype(str) + "|" + rows["count"].astype(str)).where(
        ~rows["op"].astype(str).eq("coalesced"), rows["op"].astype(str))
    first = rows.iloc[0]
    return str(first["pg"]), int(first["seq"]), rows


def _odd_call_site(df: pd.DataFrame, sides: list[dict[str, Any]]) -> tuple[int, ...]:
    """No majority (two ranks, or a tie): the side whose call site no rank outside it ever used for a
    collective, when every other side calls from a line all ranks use, is the odd one out."""
    if len(sides) != 2 or not all(s["where"] for s in sides):
        return ()
    hook = df[(df["source"] == "hook") & df["where"].notna()]
    if not len(hook):
        return ()
    users = hook.groupby("where", observed=True)["rank"].agg(lambda r: frozenset(int(x) for x in r))
    everyone = frozenset(int(r) for r in hook["rank"].unique())
    private = [s for s in sides if users.get(s["where"], frozenset()) <= frozenset(s["ranks"])]
    shared = [s for s in sides if users.get(s["where"], frozenset()) == everyone]
    if len(private) == 1 and len(shared) == 1 and private[0] is not shared[0]:
        return tuple(private[0]["ranks"])
    return ()


def detect(run: Run) -> list[Finding]:
    findings: list[Finding] = []
    hit = first_mismatch(run.collectives)
    if hit is not None:
        pg, seq, rows = hit
        sides: list[dict[str, Any]] = []
        groups = rows.groupby("_key", observed=True)
        for key, g in sorted(groups, key=lambda kv: -len(kv[1])):
            r0 = g.iloc[0]
            count = "?" if pd.isna(r0["count"]) else str(int(r0["count"]))
            where = next((w for w in g["where"] if isinstance(w, str)), None)
            sides.append({"ranks": sorted(int(r) for r in g["rank"]), "op": str(r0["op"]), "count": count,
                          "dtype": None if pd.isna(r0["dtype"]) else str(r0["dtype"]), "where": where})
        n = sum(len(s["ranks"]) for s in sides)
        if n > 2 and len(sides[0]["ranks"]) > n / 2:
            odd = sorted(r for s in sides[1:] for r in s["ranks"])
        else:
            odd = sorted(r for s in sides for r in s["ranks"]) if n <= 2 else []
        kinds = []
        if len({s["op"] for s in sides}) > 1:
            kinds.append("op")
        if len({s["count"] for s in sides}) > 1:
            kinds.append("size")
        if len({s["dtype"] for s in sides}) > 1:
            kinds.append("dtype")
        desc = " vs ".join(
            f"rank{'s' if len(s['ranks']) > 1 else ''} {','.join(map(str, s['ranks']))}: {s['op']}"
            f"({s['count']} x {s['dtype']})" + (f" at {s['where']}" if s["where"] else "") for s in sides)
        culprits = tuple(odd) if n > 2 else ()
        reason = "majority" if culprits else None
        if not culprits:
            culprits = _odd_call_site(run.collectives, sides)
            reason = "call site" if culprits else None
        ev = [Evidence(str(r.file), int(r.line) if r.line == r.line else 0,
                       f"rank {r.rank} pg {pg} #{seq}: {r.op} count {r.count} dtype {r.dtype}") for r in rows.itertuples()]
        findings.append(Finding(
            kind="desync", severity=Severity.CRITICAL,
            message=f"collective #{seq} of process group {pg} differs between ranks ({'/'.join(kinds)}): {desc}",
            ranks=culprits, hint=HINT, evidence=tuple(ev[:6]), stuck=Stuck(pg, seq, sides[0]["op"]), verdict=Verdict.DESYNC,
            data={"sides": sides, "mismatch": kinds, "odd_ranks": list(culprits), "culprit_by": reason}))
    for e in run.events:
        if e.kind == "collective_mismatch":
            ranks = e.data.get("ranks") or []
            findings.append(Finding(
                kind="desync", severity=Severity.CRITICAL, message="PyTorch (TORCH_DISTRIBUTED_DEBUG=DETAIL) saw different collectives: "
                + "; ".join(e.data.get("fingerprints") or [])[:400], ranks=tuple(ranks[1:2]) if len(ranks) == 2 else (),
                hint=HINT, evidence=(e.evidence,), verdict=Verdict.DESYNC, data={}))
            break
    return findings
