"""Desync: ranks at the same sequence number of a process group called different collectives.

Inputs: the collectives table rows from Flight Recorder and the hook (op, element count, dtype per
rank and (pg, seq)), PyTorch's own ``Detected mismatch between collectives`` (DETAIL) and desync
reports. Every side is reported with its ranks, sizes and call site; the odd rank(s) out are named
by ``rules.odd_ranks`` (a majority, else the one novel call). Coalesced groups are compared by op only.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from .. import rules
from ..metrics.progress import _from_table, pg_status_by_rank
from ..metrics.records import Groups, collective_rows, groups_where, table_groups
from ..model import Certainty, EventKind, Evidence, Finding, FindingKind, LogEvent, RecordSource, Run, Severity, Stuck, Verdict
from ..nccl.failures import classify
from ..rules.desync import (
    ALL_TO_ALL_OPS,
    TimedOut,
    call_of,
    detail_verdict,
    last_call_culprits,
    mismatch_collective,
    watchdog_mismatch,
)
from ..rules.exits import FailureKind
from ..rules.facts import failures_of_run
from .common import dense_groups, entries_at, group_key, not_p2p, rows_where
from .fr_findings import desync_finding as fr_desync_finding
from ..rules.cause import CauseVerdict

NCCL_CHECK_RE = re.compile(r"Mismatched collective detected.{0,120}?\baround rank (\d{1,7})")
HINT = ("Ranks must call the same collectives in the same order with the same sizes and dtypes. Look for "
        "rank-dependent branches (if rank == 0: ...), data-dependent sizes (the last batch, variable-length "
        "tensors), or a collective skipped on an exception path. The call sites below show where each side is.")


def first_mismatch(df: pd.DataFrame, groups: Groups | None = None,
                   judged: frozenset[str] = frozenset()) -> tuple[str, int, pd.DataFrame] | None:
    """The earliest (pg, seq) whose ranks disagree on op, count or dtype, with those ranks' rows.
    ``groups``: ``df``'s (pg, seq) groups, when known (``table_groups``). ``judged``: Flight Recorder files
    whose rows ``fr_findings`` compared field by field already (left out here).

    Flight Recorder and hook rows first (PyTorch's own sequence numbers); without them, NCCL COLL
    lines by their per-communicator call number (send/recv excluded: their counts differ by peer)."""
    torch_rows = df[df["source"].isin(["fr", "hook"])]
    if judged:
        torch_rows = torch_rows[~((torch_rows["source"] == "fr") & torch_rows["file"].isin(list(judged)))]
    found = _first_mismatch(torch_rows.drop_duplicates(["rank", "pg", "seq"], keep="first"))
    if found is None:
        # (rank, communicator, call number) is unique by construction for NCCL rows
        mask = ((df["source"] == "nccl") & ~df["op"].isin(["send", "recv"])).to_numpy()
        if mask.any():
            # the signature's columns only (no copy: pandas copies on write, and the usual mask keeps
            # every row); the whole rows of the mismatched collective are taken after
            found = _first_mismatch(rows_where(df[["rank", "pg", "seq", "op", "count", "dtype"]], mask),
                                    groups_where(groups, mask))
            if found is not None:
                pg, seq, rows = found
                full = df.loc[rows.index]
                found = pg, seq, full.assign(_key=rows["_key"])
    return found


def _first_mismatch(d: pd.DataFrame, groups: Groups | None = None) -> tuple[str, int, pd.DataFrame] | None:
    """Integer signatures, min != max per collective by ``ufunc.at`` over dense group codes: no sort,
    no per-row strings, linear memory, until a mismatch is found. ``groups``: ``d``'s, when known."""
    keep = collective_rows(d)
    groups = groups_where(groups, keep)
    d = rows_where(d, keep)
    if not len(d):
        return None
    op = _categorical(d["op"])
    op_code = op.cat.codes.to_numpy()
    dt_code = _categorical(d["dtype"]).cat.codes.to_numpy()
    count = d["count"]
    # sig = (count + 1) * 65536 + (dtype code + 1) * 256 + op code: one new 8-byte array, the small part
    # (dtype and op, 4 bytes a row) added to it once
    if pd.api.types.is_integer_dtype(count.dtype):
        sig = np.multiply(count.to_numpy(np.int64), 65536)
    else:
        sig = count.fillna(-1).to_numpy(np.float64).astype(np.int64)
        sig *= 65536
    small = np.multiply(dt_code, 256, dtype=np.int32)
    small += op_code
    small += 65536 + 256
    sig += small
    del small
    coalesced = (op == "coalesced").to_numpy()
    if coalesced.any():  # coalesced groups compare by op only
        sig[coalesced] = op_code[coalesced]
    g, ng = groups if groups is not None else dense_groups(group_key(d))
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


def _categorical(col: pd.Series) -> pd.Series:
    """The column as a categorical, without a conversion pass when it already is one (the table's op and
    dtype columns are)."""
    return col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype("category")


def _calls_used(df: pd.DataFrame, pg: str, seq: int, sides: list[rules.Side]) -> dict[Any, frozenset[int]]:
    """For each side's call (``rules.desync.call_of``), the ranks that made it at another sequence number:
    by call site from the hook's rows, else by (op, count, dtype) in the same process group."""
    out: dict[Any, frozenset[int]] = {}
    if all(s.where for s in sides):
        hook = df[(df["source"] == "hook") & df["where"].isin([s.where for s in sides])]
        hook = hook[(hook["seq"] != seq) | (hook["pg"].astype(str) != pg)]
        for s in sides:
            out[call_of(s, sides)] = frozenset(int(r) for r in hook.loc[hook["where"] == s.where, "rank"])
        return out
    rows = df[df["source"].isin(["fr", "hook"]) & (df["seq"] != seq)]
    rows = rows[rows["pg"].astype(str) == pg]
    for s in sides:
        sig: tuple[str, str, str | None] = s.sig  # type: ignore[assignment]
        op, count, dtype = sig
        m = rows["op"].astype(str) == op
        if count != "?":
            m &= rows["count"] == float(count)
        if dtype is not None:
            m &= rows["dtype"].astype(str) == dtype
        out[call_of(s, sides)] = frozenset(int(r) for r in rows.loc[m, "rank"])
    return out


def _first_t(rows: pd.DataFrame) -> float | None:
    """When the mismatched collective was first issued (seconds since the epoch), if known."""
    t = pd.to_numeric(rows["t_created"], errors="coerce").min()
    return float(t) if t == t else None  # noqa: PLR0124 - NaN


def detect(run: Run) -> list[Finding]:
    findings: list[Finding] = []
    fr = fr_desync_finding(run)  # every field of every member, when there are Flight Recorder dumps
    if fr is not None:
        findings.append(fr)
    judged = frozenset(r.file for r in run.flight_recorder.ranks) if run.flight_recorder is not None else frozenset()
    hit = None if fr is not None else first_mismatch(run.collectives, table_groups(run), judged)
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
        rsides = [rules.Side(tuple(s["ranks"]), (s["op"], s["count"], s["dtype"]), s["where"]) for s in sides]
        culprits, reason = rules.odd_ranks(rsides, _calls_used(run.collectives, pg, seq, rsides))
        ev = [Evidence(str(r.file), int(r.line) if r.line == r.line else 0,
                       f"rank {r.rank} pg {pg} #{seq}: {r.op} count {r.count} dtype {r.dtype}") for r in rows.itertuples()]
        findings.append(Finding(
            kind=FindingKind.DESYNC, severity=Severity.CRITICAL,
            message=f"collective #{seq} of process group {pg} differs between ranks ({'/'.join(kinds)}): {desc}",
            ranks=culprits, hint=HINT, evidence=tuple(ev[:6]), stuck=Stuck(pg, seq, sides[0]["op"]), verdict=Verdict.DESYNC,
            data={"sides": sides, "mismatch": kinds, "odd_ranks": list(culprits), "culprit_by": reason,
                  "t": _first_t(rows)}))
    if not findings:
        findings += _backend_report(run)
    if not findings:
        findings += _watchdog_calls(run)
    if not findings:
        findings += _nccl_check(run)
    if not findings:
        findings += _socket_size_mismatch(run)
    findings += _detail_reports(run)
    return findings


def _watchdog_calls(run: Run) -> list[Finding]:
    """PyTorch's watchdog timeouts of different ranks naming different calls at one sequence number
    (``WorkNCCL(SeqNum=5, OpType=BROADCAST ...`` on one rank, ``SeqNum=5, OpType=ALLREDUCE`` on another;
    ``rules.desync.watchdog_mismatch``): the ranks called different collectives there, a desync, not a hang;
    the culprits by the majority rule (two sides of one rank each: nobody)."""
    events = [e for e in run.events if e.kind == EventKind.WATCHDOG_TIMEOUT and e.rank is not None
              and isinstance(e.data.get("seq"), int) and e.data.get("op")]
    at = _status_groups(run)
    hit = watchdog_mismatch(TimedOut(int(e.rank), _timeout_pg(at, e), int(e.data["seq"]), str(e.data["op"]),
                                     e.data["numel"] if isinstance(e.data.get("numel"), int) else None)
                            for e in events if e.rank is not None)
    if hit is None:
        return []
    pg, seq, rsides = hit
    culprits, how = rules.odd_ranks(list(rsides), {})
    sides = [{"ranks": list(s.ranks), "op": s.sig[0], "count": s.sig[1], "dtype": None, "where": None}  # type: ignore[index]
             for s in rsides]
    kinds = ["op"] if len({s["op"] for s in sides}) > 1 else ["size"]
    # an all-to-all's totals may differ by design (uneven splits): two of them, one a majority's, is likely one
    # call made two ways, not proof of it
    a2a = kinds == ["size"] and sides[0]["op"] in ALL_TO_ALL_OPS
    sure = {"level": Certainty.LIKELY.value, "why": "an all-to-all's totals may differ by design; here every rank "
            "printed one of two, most ranks the same one"} if a2a else None
    desc = " vs ".join(f"rank{'s' if len(s['ranks']) > 1 else ''} {','.join(map(str, s['ranks']))}: {s['op']}"
                       + (f"({s['count']})" if kinds == ["size"] else "") for s in sides)
    mine = [e for e in events if e.data.get("seq") == seq and _timeout_pg(at, e) == pg]
    return [Finding(
        kind=FindingKind.DESYNC, severity=Severity.CRITICAL,
        message=f"the watchdog timeouts name different calls at collective #{seq} of process group {pg} "
        f"({kinds[0]}): {desc}: the ranks called different collectives there, each waiting for a call the "
        f"others never made", ranks=culprits, hint=HINT, evidence=tuple(e.evidence for e in mine[:6]),
        stuck=Stuck(pg, seq, sides[0]["op"]), verdict=Verdict.DESYNC,
        data={"sides": sides, "mismatch": kinds, "odd_ranks": list(culprits), "culprit_by": how,
              "t": min((e.ts for e in mine if e.ts is not None), default=None),
              **({"certainty": sure} if sure else {})})]


def _status_groups(run: Run) -> dict[tuple[int, int | None], set[str]]:
    """(rank, last enqueued work) -> the groups whose status line of that rank puts it there: one pass over the
    statuses, looked up per timeout."""
    out: dict[tuple[int, int | None], set[str]] = {}
    for st in run.pg_status:
        out.setdefault((st.rank, st.last_enqueued), set()).add(st.pg)
    return out


def _timeout_pg(status_groups: dict[tuple[int, int | None], set[str]], e: LogEvent) -> str:
    """The group of a watchdog timeout: its own line's, else the one group whose status line of that rank puts
    its last enqueued work at the timed-out number (``[PG ID 2 ...] ... last enqueued NCCL work: 57``), else the
    default group."""
    if e.data.get("pg"):
        return str(e.data["pg"])
    pgs = status_groups.get((int(e.rank) if e.rank is not None else -1, e.data.get("seq")), set())
    return next(iter(pgs)) if len(pgs) == 1 else "0"


def _nccl_check(run: Run) -> list[Finding]:
    """NCCL's own check (``Mismatched collective detected, please check your collective calls at and around
    rank N``, NCCL 2.4-2.5): a desync whose culprit is the rank NCCL names, the reporting ranks the other
    side; when the named rank failed of its own (an IB error on it, then its peers' check), the verdict's
    time line makes it that failure's echo (``rules.mismatch_is_echo``)."""
    warns = [(e, m) for e in run.events if e.kind == EventKind.NCCL_WARN and (m := NCCL_CHECK_RE.search(e.text))]
    if not warns:
        return []
    named = sorted({int(m.group(1)) for _, m in warns})
    reporters = sorted({e.rank for e, _ in warns if e.rank is not None} - set(named))
    e0 = warns[0][0]
    return [Finding(
        kind=FindingKind.DESYNC, severity=Severity.CRITICAL,
        message=f"NCCL saw a collective mismatch at and around rank{'s' if len(named) > 1 else ''} "
        f"{', '.join(map(str, named))}: {e0.text.strip()}"[:500], ranks=tuple(named), hint=HINT,
        evidence=tuple(e.evidence for e, _ in warns[:4]), verdict=Verdict.DESYNC,
        data={"sides": [{"ranks": [r]} for r in named] + ([{"ranks": reporters}] if reporters else []), "mismatch": ["nccl"],
              "odd_ranks": named, "culprit_by": "named by NCCL", "t": e0.ts})]


SOCKET_TRUNCATED = "net-socket-truncated"  # the knowledge base's entry for the socket transport's size check


def _socket_size_mismatch(run: Run) -> list[Finding]:
    """NCCL's socket transport receiving more bytes than the receive posted (``NET/Socket : peer ... message
    truncated : receiving N bytes instead of M``; NCCL's own words: 'there may be a mismatch in collective sizes'):
    over a socket nothing but the peer's send makes a message larger, so the two sides of a transfer were given
    different sizes: a desync, no culprit (the text does not say which side is wrong). Only as the first failure
    on the time line: a rank that failed before it explains it."""
    warn = next((e for e in run.events if e.kind == EventKind.NCCL_WARN and _entry_id(e) == SOCKET_TRUNCATED), None)
    if warn is None:
        return []
    seen = rules.Failure(warn.rank, FailureKind.MISMATCH, warn.text.strip()[:500], warn.ts,
                         (warn.evidence.file, warn.evidence.line))
    cause = rules.root_cause([*failures_of_run(run), seen])
    if cause is None or cause.verdict != CauseVerdict.DESYNC or cause.first is not seen:
        return []
    return [Finding(
        kind=FindingKind.DESYNC, severity=Severity.CRITICAL,
        message=f"NCCL's socket transport received a larger message than the receive posted: the two sides of a "
        f"transfer were given different sizes: {warn.text.strip()}"[:500], ranks=(), hint=HINT,
        evidence=(warn.evidence,), verdict=Verdict.DESYNC,
        data={"sides": [], "mismatch": ["size"], "odd_ranks": [], "culprit_by": None, "t": warn.ts,
              "reported_by": warn.rank})]


def _entry_id(e: LogEvent) -> str | None:
    src = e.data.get("source")
    k = classify(f"{src} {e.text}" if isinstance(src, str) and src else e.text)
    return k.id if k is not None else None


def _detail_reports(run: Run) -> list[Finding]:
    """PyTorch's DETAIL check (``Detected mismatch between collectives``), every report read together
    (``rules.desync.detail_verdict``): the ranks a majority disagrees with, else nobody; the mismatched
    collective at the reports' SequenceNumber. The check does not name the process group: the default
    group when the run knows no other."""
    events = [e for e in run.events if e.kind == EventKind.COLLECTIVE_MISMATCH]
    if not events:
        return []
    dv = detail_verdict((e.data.get("ranks") or [], e.data.get("fingerprints") or []) for e in events)
    culprits, how, sides, seq, op = (dv.culprits, dv.how, dv.sides, dv.seq, dv.op) if dv else ((), None, (), None, None)
    stuck = Stuck(_detail_pg(run), seq, op.lower() if op else None) if seq is not None else None
    return [Finding(
        kind=FindingKind.DESYNC, severity=Severity.CRITICAL, message="PyTorch (TORCH_DISTRIBUTED_DEBUG=DETAIL) saw "
        "different collectives: " + "; ".join(events[0].data.get("fingerprints") or [])[:400], ranks=culprits,
        hint=HINT, evidence=tuple(e.evidence for e in events[:4]), stuck=stuck, verdict=Verdict.DESYNC,
        data={"sides": [{"ranks": list(s.ranks), "op": s.sig[0], "shape": s.sig[1], "dtype": s.sig[2],  # type: ignore[index]
                         "seq": s.sig[3]} for s in sides],  # type: ignore[index]
              "mismatch": ["detail"], "odd_ranks": list(culprits), "culprit_by": how, "reports": len(events)})]


def _detail_pg(run: Run) -> str:
    pgs = {str(p) for p in run.collectives["pg"].unique()} if len(run.collectives) else set()
    pgs |= {s.pg for s in run.pg_status}
    pgs = {p for p in pgs if not p.endswith(":p2p") and not p.startswith("nccl:")}
    return "0" if pgs <= {"0"} else "?"


def _backend_report(run: Run) -> list[Finding]:
    """A backend's own mismatch report (gloo's abort, NCCL's check) with no mismatch in the records: a
    desync at the collective the ranks were in (``rules.desync.mismatch_collective``), its culprits
    those of the ranks' last recorded calls (``rules.desync.last_call_culprits``)."""
    seen = next((f for f in failures_of_run(run) if f.kind is FailureKind.MISMATCH), None)
    if seen is None:
        return []
    enq: dict[str, dict[int, int | None]] = {}
    done: dict[str, dict[int, int | None]] = {}
    for (r, pg), row in _from_table(run.collectives).items():
        enq.setdefault(pg, {})[r], done.setdefault(pg, {})[r] = row["last_enqueued"], row["last_completed"]
    for pg, by_rank in pg_status_by_rank(run).items():  # the hook's heartbeats, as the live monitor reads them
        for r, st in by_rank.items():
            if st.source != RecordSource.HOOK:
                continue
            e, c = enq.setdefault(pg, {}), done.setdefault(pg, {})
            e[r] = max(x for x in (e.get(r), st.enqueued, -1) if x is not None)
            c[r] = max(x for x in (c.get(r), st.completed, -1) if x is not None)
    enq = {pg: {r: (v if v is not None and v >= 0 else None) for r, v in by.items()} for pg, by in enq.items()
           if not pg.endswith(":p2p") and not pg.startswith("nccl:")}
    at = mismatch_collective(enq, done, seen.rank)
    if at is None:
        return _backend_alone(seen) if not any(enq.values()) else []
    pg, seq = at
    last, used = _last_calls(run.collectives, pg)
    culprits, reason = last_call_culprits(last, used)
    op = next((str(r["op"]) for r in entries_at(run, pg, seq).values()), None)
    who = f"rank {seen.rank}" if seen.rank is not None else "a rank"
    return [Finding(
        kind=FindingKind.DESYNC, severity=Severity.CRITICAL,
        message=f"the backend of {who} aborted on a collective mismatch in {op or 'collective'} #{seq} of process "
        f"group {pg}: {seen.text}"[:500], ranks=culprits, hint=HINT,
        evidence=(Evidence(seen.order[0], seen.order[1], seen.text[:300]),), stuck=Stuck(pg, seq, op),
        verdict=Verdict.DESYNC, data={"sides": [], "mismatch": ["backend"], "odd_ranks": list(culprits),
                                      "culprit_by": reason, "t": seen.t, "reported_by": seen.rank})]


def _backend_alone(seen: rules.Failure) -> list[Finding]:
    """A backend's or a library's mismatch report with no record of the ranks' collectives at all (Accelerate's check
    of a gather's input shapes, gloo's enforce in a log without NCCL's lines): the desync it states, at no collective
    the records can place and with no culprit (the report says the ranks disagree, not which one is wrong)."""
    who = f"rank {seen.rank}" if seen.rank is not None else "a rank"
    return [Finding(
        kind=FindingKind.DESYNC, severity=Severity.CRITICAL,
        message=f"{who} stopped on a check that the ranks called a collective differently: {seen.text}"[:500],
        ranks=(), hint=HINT, evidence=(Evidence(seen.order[0], seen.order[1], seen.text[:300]),), verdict=Verdict.DESYNC,
        data={"sides": [], "mismatch": ["backend"], "odd_ranks": [], "culprit_by": None, "t": seen.t,
              "reported_by": seen.rank,
              "certainty": {"level": "confirmed", "why": "the check compares every rank's call before any is issued, "
                            "and it failed"}})]


def _last_calls(df: pd.DataFrame, pg: str) -> tuple[dict[int, tuple[Any, str | None]], dict[Any, frozenset[int]]]:
    """Each rank's last recorded collective of ``pg`` (Flight Recorder / hook rows) as (signature, call
    site), and the ranks that made each call (``rules.desync.call_of``: by site when every one has one)."""
    if not len(df):
        return {}, {}
    rows = df[df["source"].isin(["fr", "hook"])]
    rows = not_p2p(rows[rows["pg"].astype(str) == pg])
    if not len(rows):
        return {}, {}
    last: dict[int, tuple[Any, str | None]] = {}
    for r in rows.sort_values("seq", kind="stable").drop_duplicates("rank", keep="last").itertuples():
        count = "?" if pd.isna(r.count) else str(int(r.count))
        last[int(r.rank)] = ((str(r.op), count, None if pd.isna(r.dtype) else str(r.dtype)),
                             r.where if isinstance(r.where, str) else None)
    by_site = all(w for _, w in last.values())
    used: dict[Any, set[int]] = {}
    for r in rows.itertuples():
        count = "?" if pd.isna(r.count) else str(int(r.count))
        call = ("where", r.where) if by_site else ("sig", (str(r.op), count, None if pd.isna(r.dtype) else str(r.dtype)))
        used.setdefault(call, set()).add(int(r.rank))
    return last, {k: frozenset(v) for k, v in used.items()}
