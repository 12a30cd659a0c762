"""PyTorch Flight Recorder dumps: pickle (``_dump_nccl_trace``, dump on timeout) and JSON.

Top-level keys: ``version``, ``pg_config`` {name: {name, desc, ranks (a string)}}, ``pg_status``
{pg_id: {last_enqueued_collective, last_started_collective, last_completed_collective}} (ints in
the pickle, strings in JSON), ``comm_lib_version`` (``nccl_version`` before format 2.7),
``entries`` [{record_id, pg_id, process_group (name, desc), collective_seq_id, p2p_seq_id,
op_id, profiling_name ("nccl:all_reduce", "gloo:broadcast"), time_created_ns, duration_ms,
input_sizes, input_dtypes, output_sizes, output_dtypes, state, time_discovered_started_ns,
time_discovered_completed_ns, retired, timeout_ms, is_p2p, frames?}]. Entries are normalised to
plain dicts with the same keys; missing keys become None. The rank comes from the file name
(``..._rank3``, ``...rank_3``, ``...3``), as PyTorch writes ``<prefix><global rank>``.
"""
from __future__ import annotations

import json
import re
from typing import Any

from ..safe_pickle import loads_plain
from .records import FrDump

RANK_IN_NAME_RE = re.compile(r"(?:rank[_-]?)?(?<!\d)(\d+)(?:\.(?:pkl|pickle|json))?$", re.IGNORECASE)
ENTRY_KEYS = (
    "record_id", "pg_id", "process_group", "collective_seq_id", "p2p_seq_id", "op_id", "profiling_name",
    "time_created_ns", "duration_ms", "input_sizes", "input_dtypes", "output_sizes", "output_dtypes", "state",
    "time_discovered_started_ns", "time_discovered_completed_ns", "retired", "timeout_ms", "is_p2p", "frames",
    "thread_name", "thread_id",
)


MAX_RANK = 1 << 24  # larger numbers in a name are not ranks
MAX_INT = 1 << 62  # sequence numbers and counters beyond this are corrupt (the model stores int64)


def rank_from_name(name: str) -> int | None:
    m = RANK_IN_NAME_RE.search(name)
    if not m or len(m.group(1)) > 9:
        return None
    r = int(m.group(1))
    return r if r < MAX_RANK else None


def _int(v: Any) -> int | None:
    if v is None or v == "":
        return None
    try:
        i = int(v)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a JSON Infinity
        return None
    return i if -MAX_INT < i < MAX_INT else None


def fr_from_obj(obj: Any, file: str, fmt: str) -> FrDump:
    if not isinstance(obj, dict) or "entries" not in obj and "pg_status" not in obj and "version" not in obj:
        raise ValueError("not a Flight Recorder dump (no version / entries / pg_status)")
    status: dict[str, dict[str, int | None]] = {}
    raw_status = obj.get("pg_status")
    for pg, st in (raw_status.items() if isinstance(raw_status, dict) else ()):
        if isinstance(st, dict):
            status[str(pg)] = {
                "last_enqueued": _int(st.get("last_enqueued_collective")),
                "last_started": _int(st.get("last_started_collective")),
                "last_completed": _int(st.get("last_completed_collective")),
            }
    entries = []
    raw_entries = obj.get("entries")
    for e in raw_entries if isinstance(raw_entries, list) else ():
        if not isinstance(e, dict):
            continue
        entry = {k: e.get(k) for k in ENTRY_KEYS}
        for k in ("collective_seq_id", "p2p_seq_id"):  # the model counts on ints or None here
            entry[k] = _int(entry[k]) if not isinstance(entry[k], bool) else None
        for k in ("input_sizes", "input_dtypes", "output_sizes", "output_dtypes", "frames"):
            if not isinstance(entry[k], list):
                entry[k] = None
        entries.append(entry)
    raw_pg_config = obj.get("pg_config")
    pg_config = raw_pg_config if isinstance(raw_pg_config, dict) else {}
    version = obj.get("version")
    lib = obj.get("comm_lib_version") or obj.get("nccl_version")
    return FrDump(file, 0, "", rank_from_name(file.rsplit("/", 1)[-1]), str(version) if version else None,
                  str(lib) if lib else None, pg_config, status, entries, fmt)


def parse_fr_pickle(data: bytes, file: str) -> FrDump:
    return fr_from_obj(loads_plain(data), file, "pickle")


def parse_fr_json(data: bytes, file: str) -> FrDump:
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError) as e:
        raise ValueError(f"not valid JSON: {e}") from None
    return fr_from_obj(obj, file, "json")
