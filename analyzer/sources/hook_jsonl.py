"""JSON-lines records: ncclscope's own hook (``ncclscope-rank<N>.jsonl``) and the corpus'
``completion_hook_rank<N>.jsonl`` (every field of PyTorch's ``WorkInfo``).

Hook record types (field ``type``): ``start`` (rank, world, host, pid, versions), ``coll``
(pg, seq, op, numel, dtype, bytes, where, t), ``done`` (pg, seq, t, dur_ms), ``hb`` (t, pgs:
{pg: {enq, start, done}}), ``stack`` (t, where, frames), ``fr`` (path of a Flight Recorder
snapshot), ``exit`` (code), ``error`` (the hook's own trouble, never raised into training).
A truncated last line (the process died mid-write) is skipped, never fatal.
"""
from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable, Iterator
from datetime import timedelta
from typing import cast

from ..nccl.ops import canonical_op
from .flight_recorder import MAX_INT, MAX_RANK, rank_from_name
from .records import CompletionRec, HookRec, Rec


class HookType(enum.StrEnum):
    """A hook record's ``type`` (``HookRec.type`` keeps the word as read: a type not listed is ignored)."""

    START = "start"
    COLL = "coll"
    DONE = "done"
    HB = "hb"
    STACK = "stack"
    FR = "fr"
    EXIT = "exit"
    ERROR = "error"
    STALL = "stall"
    DESYNC = "desync"

TD_RE = re.compile(r"^(?:(?P<d>-?\d+) days?, )?(?P<h>\d+):(?P<m>\d\d):(?P<s>\d\d(?:\.\d+)?)$")


def _td_seconds(v: object) -> float | None:
    if isinstance(v, (int, float)):
        return float(v)
    if not isinstance(v, str):
        return None
    m = TD_RE.match(v.strip())
    if not m:
        return None
    try:
        return timedelta(days=int(m.group("d") or 0), hours=int(m.group("h")), minutes=int(m.group("m")),
                         seconds=float(m.group("s"))).total_seconds()
    except OverflowError:  # more days than timedelta holds
        return None


INT_FIELDS = ("seq", "pid", "world", "code", "numel", "bytes", "local_rank", "step", "dropped")
FLOAT_FIELDS = ("t", "dur_ms")
STR_FIELDS = ("pg", "op", "dtype", "where", "host", "message", "torch", "nccl", "cuda", "path", "reason", "how",
              "backend", "exception")


def _finite(v: object, kind: type) -> int | float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):  # noqa: PLR0124
        return None
    if abs(v) >= MAX_INT:
        return None
    return kind(v)


_KIND: dict[str, type] = {**{k: int for k in INT_FIELDS}, **{k: float for k in FLOAT_FIELDS},
                          **{k: str for k in STR_FIELDS}}


def clean_hook_fields(obj: dict) -> dict:
    """The hook's fields with the types its writer gives them (analyzer/hook/records.py); a field of
    another type (a list where a number belongs, NaN, 2**70) is dropped, so the model sees it missing.
    One pass over the record's own keys (the live monitor calls this for every line)."""
    out = dict(obj)
    for k, v in obj.items():
        kind = _KIND.get(k)
        if kind is None or v is None:
            continue
        if kind is str:
            if type(v) is str:
                if len(v) > 2000:
                    out[k] = v[:2000]
            elif isinstance(v, int) and not isinstance(v, bool):
                out[k] = str(v)[:2000]
            else:
                del out[k]
        elif type(v) is kind and -MAX_INT < cast(float, v) < MAX_INT:
            continue  # the common case: already the right type, finite and in range
        else:
            c = _finite(v, kind)
            if c is None:
                del out[k]
            else:
                out[k] = c
    if "pgs" in out:
        pgs = out["pgs"]
        out["pgs"] = {str(pg): {c: _finite(st.get(c), int) for c in ("enq", "start", "done")}
                      for pg, st in (pgs.items() if isinstance(pgs, dict) else ()) if isinstance(st, dict)}
    if "env" in out:
        env = out["env"]
        out["env"] = {str(k): v for k, v in (env.items() if isinstance(env, dict) else ()) if isinstance(v, str)}
    if "frames" in out and not isinstance(out["frames"], list):
        del out["frames"]
    return out


def parse_jsonl(lines: Iterable[tuple[int, str]], file: str) -> Iterator[Rec]:
    name_rank = rank_from_name(file.rsplit("/", 1)[-1].split(".", 1)[0])
    for lineno, text in lines:
        text = text.strip()
        if not text.startswith("{"):
            continue
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nesting deeper than the parser's stack
            continue
        if not isinstance(obj, dict):
            continue
        if "type" in obj and isinstance(obj["type"], str):
            rank = obj.get("rank", name_rank)
            ok = isinstance(rank, int) and not isinstance(rank, bool) and 0 <= rank < MAX_RANK
            yield HookRec(file, lineno, text[:2000], obj["type"], rank if ok else name_rank, clean_hook_fields(obj))
        elif "op_type" in obj and "seq" in obj:
            dur = _td_seconds(obj.get("active_duration"))
            try:
                seq = int(obj["seq"])
            except (TypeError, ValueError, OverflowError):
                continue
            if not -MAX_INT < seq < MAX_INT:
                continue
            yield CompletionRec(file, lineno, text[:2000], name_rank, canonical_op(str(obj["op_type"])), seq,
                                _td_seconds(obj.get("time_started")), _td_seconds(obj.get("time_finished")),
                                dur * 1000.0 if dur is not None else None)
