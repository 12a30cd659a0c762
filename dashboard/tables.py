"""Pure table builders (analysis in, list of row dicts out) for the pages; the numbers come from
``ncclscope.metrics`` and the decision, never recomputed here."""
from __future__ import annotations

from typing import Any

from ncclscope.result import Analysis
from ncclscope.metrics.progress import rank_status, states_at_stuck
from ncclscope.metrics.timeline import completed_through, per_rank_counts, pg_records


def rank_status_rows(a: Analysis, max_ranks: int = 4096) -> list[dict[str, Any]]:
    """Per rank and process group: last enqueued / completed, source, state at the stuck collective and
    the culprit flag, both from the decision (``metrics.progress.rank_status``)."""
    d = a.decision
    states = getattr(d, "states", None)  # (rank, state, detail) per rank, where the decision gives them
    by_rank = {int(r): (str(s), det) for r, s, det in states} if states else None
    return rank_status(a.run, a.findings, d.stuck, d.culprit_ranks, max_ranks=max_ranks, verdict_states=by_rank)


def timeline_counts(a: Analysis, pg: str | None) -> list[dict[str, Any]]:
    """Per rank of ``pg``: collectives recorded, completed, not completed, and its state at the stuck one."""
    d = a.decision
    view = pg_records(a.run.collectives, pg, completed_through(a.run, a.findings, pg, d.stuck))
    counts = per_rank_counts(view, a.run.ranks())
    states = states_at_stuck(a.run, a.findings, d.stuck) if d.stuck is not None and str(d.stuck.pg) == str(pg) else {}
    culprits = set(d.culprit_ranks)
    return [{"rank": int(r.rank), "records": int(r.records), "completed": int(r.completed),
             "not completed": int(r.not_completed), "completion not logged": int(r.issued),
             "at stuck": (f"{states[int(r.rank)]} #{d.stuck.seq}" if d.stuck and int(r.rank) in states else ""),
             "culprit": "yes" if int(r.rank) in culprits else ""} for r in counts.itertuples()]
