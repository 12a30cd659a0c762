"""JSON-lines records: ncclscope's own hook (``ncclscope-rank<N>.jsonl``) and the corpus'
``completion_hook_rank<N>.jsonl`` (every field of PyTorch's ``WorkInfo``).

Hook record types (field ``type``): ``start`` (rank, world, host, pid, versions), ``coll``
(pg, seq, op, numel, dtype, bytes, where, t), ``done`` (pg, seq, t, dur_ms), ``hb`` (t, pgs:
{pg: {enq, start, done}}), ``stack`` (t, where, frames), ``fr`` (path of a Flight Recorder
snapshot), ``exit`` (code), ``error`` (the hook's own trouble, never raised into training).
A truncated last line (the process died mid-write) is skipped, never fatal.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from datetime import timedelta

from .flight_recorder import rank_from_name
from .records import CompletionRec, HookRec, Rec

TD_RE = re.compile(r"^(?:(?P<d>-?\d+) days?, )?(?P<h>\d+):(?P<m>\d\d):(?P<s>\d\d(?:\.\d+)?)$")


def _td_seconds(v: object) -> float | None:
    if isinstance(v, (int, float)):
        return float(v)
    if not isinstance(v, str):
        return None
    m = TD_RE.match(v.strip())
    if not m:
        return None
    return timedelta(days=int(m.group("d") or 0), hours=int(m.group("h")), minutes=int(m.group("m")),
                     seconds=float(m.group("s"))).total_seconds()


def canonical_op(name: str) -> str:
    """``nccl:all_reduce`` / ``OpType.ALLREDUCE`` / ``all_reduce`` / ``AllReduce`` -> ``allreduce``."""
    n = name.rsplit(":", 1)[-1] if ":" in name else name
    n = n.rsplit(".", 1)[-1]
    n = n.split(" ", 1)[0]
    n = n.replace("_", "").lower()
    aliases = {"reducescattertensor": "reducescatter", "allgatherintotensor": "allgather",
               "reducescatterbase": "reducescatter", "allgatherbase": "allgather",
               "alltoallbase": "alltoall", "alltoallsingle": "alltoall", "allreducecoalesced": "allreduce"}
    return aliases.get(n, n)


def parse_jsonl(lines: Iterable[tuple[int, str]], file: str) -> Iterator[Rec]:
    name_rank = rank_from_name(file.rsplit("/", 1)[-1].split(".", 1)[0])
    for lineno, text in lines:
        text = text.strip()
        if not text.startswith("{"):
            continue
        try:
            obj = json.loads(text)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        if "type" in obj and isinstance(obj["type"], str):
            rank = obj.get("rank", name_rank)
            yield HookRec(file, lineno, text[:2000], obj["type"], rank if isinstance(rank, int) else name_rank, obj)
        elif "op_type" in obj and "seq" in obj:
            dur = _td_seconds(obj.get("active_duration"))
            try:
                seq = int(obj["seq"])
            except (TypeError, ValueError):
                continue
            yield CompletionRec(file, lineno, text[:2000], name_rank, canonical_op(str(obj["op_type"])), seq,
                                _td_seconds(obj.get("time_started")), _td_seconds(obj.get("time_finished")),
                                dur * 1000.0 if dur is not None else None)
