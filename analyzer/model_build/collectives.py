"""The per-rank collectives table (one row per collective per rank) and process-group status,
from Flight Recorder dumps, the completion hook, ncclscope's hook records, NCCL COLL lines and
NCCL's Inspector plugin (``inspector_rows``).

Rows of the few record sources are collected as lists of column values; NCCL COLL lines, nearly
all rows of a long job, are joined as columns (``nccl_table``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..model import COLLECTIVE_COLUMNS, Evidence, Format, PgStatus, RecordSource
from ..nccl.dtypes import DTYPE_BYTES, canonical_dtype
from ..nccl.ops import canonical_op
from ..sources import records as R
from ..sources.hook_jsonl import HookType
from .gather import Gathered
from .inspector_rows import inspector_table
from .nccl_table import concat_tables, nccl_coll_table
from .values import ProcKey, ev, ns_to_s, numel, opt_int, seq_of


@dataclass
class Collectives:
    table: pd.DataFrame
    pg_status: list[PgStatus] = field(default_factory=list)
    stacks: dict[int, str] = field(default_factory=dict)
    heartbeats: pd.DataFrame | None = None
    nccl_torch_version: str | None = None  # the NCCL version a Flight Recorder dump names


class _Rows:
    """Column lists of the collectives table, a row at a time."""

    def __init__(self) -> None:
        self.cols: dict[str, list[Any]] = {c: [] for c in COLLECTIVE_COLUMNS}

    def add(self, **kw: Any) -> None:
        for c in COLLECTIVE_COLUMNS:
            self.cols[c].append(kw.get(c))

    def frame(self) -> pd.DataFrame:
        df = pd.DataFrame(self.cols, columns=COLLECTIVE_COLUMNS)
        if len(df):
            df["rank"] = df["rank"].fillna(-1).astype("int64")
            df["seq"] = df["seq"].astype("int64")
            for col in ("t_created", "t_started", "t_completed", "duration_ms", "bytes", "count"):
                df[col] = pd.to_numeric(df[col], errors="coerce")
            for col in ("pg", "op", "state", "source", "dtype", "file"):
                df[col] = df[col].astype("category")
        return df


def build_collectives(g: Gathered, proc_rank: dict[ProcKey, int], ident: dict[tuple[ProcKey, str], str],
                      release: bool) -> Collectives:
    rows = _Rows()
    out = Collectives(table=pd.DataFrame())
    out.nccl_torch_version = _fr_rows(g.frs, rows, out.pg_status)
    for c in g.completions:
        rows.add(rank=c.rank if c.rank is not None else -1, pg="0", seq=c.seq, op=c.op, count=None, dtype=None,
                 bytes=None, state="completed", t_created=None, t_started=c.t_started, t_completed=c.t_finished,
                 duration_ms=c.active_ms, source="completion_hook", file=c.file, line=c.line, where=None)
    last_hb, hb_rows = _hook_rows(g.hook, rows, out.stacks)
    table = rows.frame()
    for (rank, pg), h in last_hb.items():
        hb_st = (h.data.get("pgs") or {}).get(pg) if pg else None
        if isinstance(hb_st, dict):
            out.pg_status.append(PgStatus(rank, pg, opt_int(hb_st.get("enq")), opt_int(hb_st.get("start")),
                                          opt_int(hb_st.get("done")), RecordSource.HOOK, h.data.get("t"), ev(h)))
    # NCCL COLL lines: per (process, communicator) counter as the sequence number
    nccl = nccl_coll_table(g.coll_lines, proc_rank, ident, consume=True, release=release)
    if nccl is not None:
        table = concat_tables(table, nccl) if len(table) else nccl
    inspector = inspector_table(g.inspector, proc_rank)  # NCCL's Inspector plugin: kernel times of each operation
    if inspector is not None:
        table = concat_tables(table, inspector) if len(table) else inspector
    out.table = table
    out.heartbeats = pd.DataFrame(hb_rows) if hb_rows else None
    return out


def _fr_rows(frs: list[R.FrDump], rows: _Rows, pg_status: list[PgStatus]) -> str | None:
    """Rows and process-group status of the fullest Flight Recorder dump of each rank; the NCCL version named."""
    best: dict[int, R.FrDump] = {}
    for fr in frs:
        if fr.rank is None:
            continue
        prev = best.get(fr.rank)
        if prev is None or _fr_weight(fr) > _fr_weight(prev):
            best[fr.rank] = fr
    version = None
    for rank, fr in best.items():
        version = version or fr.comm_lib_version
        pgid_name: dict[str, str] = {}
        gloo: set[str] = set()  # pg ids whose entries gloo ran
        for e in fr.entries:
            pgname = _pg_name(e.get("process_group"))
            if e.get("pg_id") is not None and pgname is not None:
                pgid_name[str(e["pg_id"])] = pgname
            if e.get("pg_id") is not None and str(e.get("profiling_name") or "").startswith("gloo:"):
                gloo.add(str(e["pg_id"]))
            _fr_entry(rank, fr, e, pgname, rows)
        for pgid, st in fr.pg_status.items():
            name = pgid_name.get(pgid, pgid)
            pg_status.append(PgStatus(rank, name, st["last_enqueued"], st["last_started"], st["last_completed"], RecordSource.FR,
                                      None, Evidence(fr.file, 0, f"pg_status[{pgid}] = {st}"),
                                      completion_may_lag=pgid in gloo))
    return version


def _fr_entry(rank: int, fr: R.FrDump, e: dict[str, Any], pgname: str | None, rows: _Rows) -> None:
    seq = e.get("p2p_seq_id" if e.get("is_p2p") else "collective_seq_id")
    if seq is None:
        return
    sizes = e.get("input_sizes") or []
    dtypes = e.get("input_dtypes") or []
    count = numel(sizes)
    dt = canonical_dtype(dtypes[0]) if dtypes else None
    dur = e.get("duration_ms")
    rows.add(rank=rank, pg=(pgname or str(e.get("pg_id"))) + (":p2p" if e.get("is_p2p") else ""), seq=int(seq),
             op=canonical_op(str(e.get("profiling_name") or "")), count=count, dtype=dt,
             bytes=count * DTYPE_BYTES.get(dt or "", 0) if count is not None else None,
             state=str(e.get("state") or "unknown"), t_created=ns_to_s(e.get("time_created_ns")),
             t_started=ns_to_s(e.get("time_discovered_started_ns")),
             t_completed=ns_to_s(e.get("time_discovered_completed_ns")),
             duration_ms=float(dur) if isinstance(dur, (int, float)) else None, source="fr", file=fr.file, line=0,
             where=frames_where(e.get("frames"), e.get("thread_name")))


def _hook_rows(hook: list[R.HookRec], rows: _Rows,
               stacks: dict[int, str]) -> tuple[dict[tuple[int, str], R.HookRec], list[dict[str, Any]]]:
    """Rows of the hook's collective records; its last heartbeat per (rank, pg) and every heartbeat row."""
    hb_rows: list[dict[str, Any]] = []
    done_of: dict[tuple[int, str, int], tuple[float | None, float | None]] = {}
    last_hb: dict[tuple[int, str], R.HookRec] = {}
    for h in hook:
        if h.type == HookType.DONE and isinstance(h.rank, int):
            seq = seq_of(h.data.get("seq", -1))
            if seq is not None:
                done_of[(h.rank, str(h.data.get("pg", "0")), seq)] = (h.data.get("t"), h.data.get("dur_ms"))
    for h in hook:
        d = h.data
        if not isinstance(h.rank, int):
            continue
        if h.type == HookType.COLL:
            seq = seq_of(d.get("seq", -1))
            if seq is None:
                continue
            pg = str(d.get("pg", "0"))
            done = done_of.get((h.rank, pg, seq))
            rows.add(rank=h.rank, pg=pg, seq=seq, op=canonical_op(str(d.get("op", ""))), count=d.get("numel"),
                     dtype=canonical_dtype(d.get("dtype")), bytes=d.get("bytes"),
                     state="completed" if done else "scheduled", t_created=d.get("t"), t_started=None,
                     t_completed=done[0] if done else None, duration_ms=done[1] if done else None, source="hook",
                     file=h.file, line=h.line, where=d.get("where"))
        elif h.type == HookType.HB:
            pgs = [(str(pg), st) for pg, st in (d.get("pgs") or {}).items() if isinstance(st, dict)]
            for pg, st in pgs:
                hb_rows.append({"rank": h.rank, "pg": pg, "t": d.get("t"), "enq": st.get("enq"),
                                "start": st.get("start"), "done": st.get("done")})
            last_hb[(h.rank, "")] = h  # any heartbeat: the rank was alive then
            for pg, _st in pgs:
                last_hb[(h.rank, pg)] = h
        elif h.type == HookType.STACK and d.get("where"):
            stacks[h.rank] = str(d["where"])
    return last_hb, hb_rows


def _fr_weight(fr: R.FrDump) -> tuple[int, int, int]:
    done = sum(1 for e in fr.entries if e.get("state") == "completed")
    return (len(fr.entries), done, 1 if fr.fmt == Format.PICKLE else 0)


def _pg_name(pg: Any) -> str | None:
    if isinstance(pg, (list, tuple)) and pg:
        return str(pg[0])
    if isinstance(pg, str):
        return pg
    return None


def frames_where(frames: Any, thread: Any = None) -> str | None:
    """The first user frame of a Flight Recorder entry's stack, or the autograd thread that issued it."""
    if not isinstance(frames, list):
        frames = []
    if not frames and isinstance(thread, str) and thread.startswith("pt_autograd"):
        return f"DDP gradient-bucket all-reduce from the autograd thread ({thread})"
    for f in frames:
        if isinstance(f, dict):
            fn = str(f.get("filename", ""))
            if "torch/" in fn or fn.startswith("<") or "ncclscope_hook" in fn or "analyzer/hook/" in fn:
                continue
            return f"{fn.rsplit('/', 1)[-1]}:{f.get('line')} in {f.get('name')}"
    if isinstance(thread, str) and thread.startswith("pt_autograd"):
        return f"DDP gradient-bucket all-reduce from the autograd thread ({thread})"
    return None
