"""Pure table builders (model in, list of row dicts out) for the hang report and the logs page."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ncclscope.analysis import Analysis

from .figures import strs

STATUS_SOURCE_ORDER = {"fr": 0, "watchdog": 1, "heartbeat": 2, "hook": 3}


def rank_status_rows(a: Analysis, max_ranks: int = 4096) -> list[dict[str, Any]]:
    """Per rank and process group: last enqueued / completed sequence number, where it came from,
    whether it reached the stuck collective, and its stack (hook snapshot or finding's ``where``).

    Process-group status records are preferred (Flight Recorder first); the collectives table
    fills in ranks that have none.
    """
    run = a.run
    stuck = a.decision.stuck
    where: dict[int, str] = {int(r): str(w) for r, w in run.stacks.items()}
    for f in a.findings:
        for r, w in (f.data.get("where") or {}).items():
            where.setdefault(int(r), str(w))
    best: dict[tuple[int, str], Any] = {}
    for st in run.pg_status:
        k = (st.rank, st.pg)
        cur = best.get(k)
        if cur is None or STATUS_SOURCE_ORDER.get(st.source, 9) < STATUS_SOURCE_ORDER.get(cur.source, 9):
            best[k] = st
    rows: dict[tuple[int, str], dict[str, Any]] = {}
    for (r, pg), st in best.items():
        rows[(r, pg)] = {"rank": r, "pg": pg, "last_enqueued": st.last_enqueued, "last_completed": st.last_completed,
                         "source": st.source}
    df = run.collectives
    if len(df):
        pgs = strs(df["pg"])
        torch_rows = np.array([not p.startswith("nccl:") for p in pgs], dtype=bool)
        use = df[torch_rows] if torch_rows.any() else df
        upg = pgs[torch_rows] if torch_rows.any() else pgs
        seq = use["seq"].to_numpy()
        done = strs(use["state"]) == "completed"
        g = pd.DataFrame({"rank": use["rank"].to_numpy(), "pg": upg, "seq": seq,
                          "cseq": np.where(done, seq, -1)}).groupby(["rank", "pg"]).agg(
            enq=("seq", "max"), comp=("cseq", "max"))
        for (r, pg), row in g.iterrows():
            if (r, pg) not in rows:
                rows[(int(r), str(pg))] = {"rank": int(r), "pg": str(pg), "last_enqueued": int(row.enq),
                                           "last_completed": int(row.comp) if row.comp >= 0 else None,
                                           "source": "collectives"}
    seen = {k[0] for k in rows}
    for r in run.ranks():
        if r not in seen:
            rows[(r, "?")] = {"rank": r, "pg": "?", "last_enqueued": None, "last_completed": None,
                              "source": "no record"}
    culprits = set(a.decision.culprit_ranks)
    out = []
    for (r, pg), row in sorted(rows.items(), key=lambda kv: (kv[0][1] != (stuck.pg if stuck else ""), kv[0])):
        if stuck is not None and pg == stuck.pg:
            enq = row["last_enqueued"]
            comp = row["last_completed"]
            if enq is None:
                row["at_stuck"] = "unknown"
            elif enq < stuck.seq:
                row["at_stuck"] = f"never joined #{stuck.seq}"
            elif comp is not None and comp >= stuck.seq:
                row["at_stuck"] = "completed it"
            else:
                row["at_stuck"] = f"waiting in #{stuck.seq}"
        else:
            row["at_stuck"] = ""
        row["culprit"] = "yes" if r in culprits else ""
        row["where"] = where.get(r, "")
        out.append(row)
        if len(out) >= max_ranks:
            break
    return out
