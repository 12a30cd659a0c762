"""What happens after a hang alert, and what the user can do about it.

A hang does not end by itself: the ranks wait in the collective until PyTorch's process-group
timeout (``init_process_group(timeout=...)``; 30 min on gloo, 10 min on NCCL by default) ends the
job. The stuck collective's Flight Recorder entry (the dump the hang alert asks every rank for)
holds the job's real timeout and when the collective was enqueued, and its op name where the hook
saw no Python call (DDP's bucket all-reduces are issued from C++). ``stuck_facts`` reads them (the
I/O edge); the rest are pure functions of an alert.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

DEFAULT_TIMEOUT_S = {"nccl": 600.0, "gloo": 1800.0}  # torch's default_pg_nccl_timeout / default_pg_timeout
FR_READ_LIMIT = 64 << 20  # a dump of 20,000 entries is a few MB


@dataclass(frozen=True)
class StuckFacts:
    """What the Flight Recorder dumps say of one collective."""

    op: str | None = None
    timeout_s: float | None = None
    enqueued_t: float | None = None  # the earliest rank's enqueue time (its timeout fires first)


def facts_of_dumps(dumps: Iterable[Any], pg: str, seq: int) -> StuckFacts:
    """The entry (pg, seq) of each dump (``records.FrDump``): op, timeout, earliest enqueue time."""
    from .stall import canonical_op

    ops: set[str] = set()
    timeouts: list[float] = []
    created: list[float] = []
    for d in dumps:
        for e in d.entries:
            group = e.get("process_group")
            pg_id = e.get("pg_id")
            names = {str(pg_id)} | ({str(group[0])} if isinstance(group, (list, tuple)) and group else set())
            if e.get("collective_seq_id") != seq or pg not in names or e.get("is_p2p"):
                continue
            if isinstance(e.get("profiling_name"), str):
                op = canonical_op(e["profiling_name"])
                if op:
                    ops.add(op)
            if isinstance(e.get("timeout_ms"), (int, float)) and e["timeout_ms"] > 0:
                timeouts.append(float(e["timeout_ms"]) / 1000.0)
            if isinstance(e.get("time_created_ns"), (int, float)) and e["time_created_ns"] > 0:
                created.append(float(e["time_created_ns"]) / 1e9)
    return StuckFacts("/".join(sorted(ops)) or None, min(timeouts) if timeouts else None,
                      min(created) if created else None)


def stuck_facts(paths: Iterable[str], pg: str, seq: int) -> StuckFacts:
    """``facts_of_dumps`` of the Flight Recorder files at ``paths`` (pickle or JSON); unreadable ones skipped."""
    from .. import safe_io
    from ..sources.flight_recorder import parse_fr_json, parse_fr_pickle

    dumps = []
    for p in paths:
        try:
            data = safe_io.read_capped(p, FR_READ_LIMIT)
            dumps.append(parse_fr_json(data, p) if data[:1] in (b"{", b"[") else parse_fr_pickle(data, p))
        except (OSError, ValueError, safe_io.TooLarge):
            continue
        except Exception:  # noqa: BLE001, S112 - a damaged dump must not stop the monitor
            continue
    return facts_of_dumps(dumps, pg, seq)


def watchdog(backend: str | None, facts: StuckFacts, since_t: float | None, now: float) -> dict[str, Any]:
    """When PyTorch's timeout ends the job: {timeout_s, ends_in_s, source}; ends_in_s None when unknown."""
    timeout: float | None
    if facts.timeout_s is not None:
        timeout, source = facts.timeout_s, "the job's process-group timeout (Flight Recorder)"
    else:
        name = "nccl" if backend and "nccl" in backend else "gloo" if backend and "gloo" in backend else None
        timeout = DEFAULT_TIMEOUT_S[name] if name else None
        source = f"the {name} default" if name else "unknown"
    start = facts.enqueued_t if facts.enqueued_t is not None else since_t
    ends = None if timeout is None or start is None else max(0.0, start + timeout - now)
    return {"timeout_s": timeout, "ends_in_s": None if ends is None else round(ends, 1), "source": source}


def next_step(alert: dict[str, Any], can_kill: bool, kill_on_hang: bool) -> str | None:
    """The one line printed after a hang's alert (None when it needs none: a kill is announced instead)."""
    if kill_on_hang and can_kill:
        return None
    w = alert.get("watchdog") or {}
    ends = w.get("ends_in_s")
    if isinstance(ends, (int, float)) and ends <= 0:
        return None  # the timeout has passed: the job is ending or over, nothing to advise
    when = (f"PyTorch's watchdog ends it in {ends:.0f} s" if isinstance(ends, (int, float))
            else "PyTorch's watchdog ends it at the process-group timeout")
    if can_kill:
        return f"the job is still running; {when}; press Ctrl-C, or run with --kill-on-hang"
    return (f"the job is still running; {when}; stop it with its launcher (Ctrl-C, scancel, kubectl delete), "
            "or run it under `ncclscope run --kill-on-hang`")


def kill_notice(alert: dict[str, Any], targets: dict[int, int | None], grace_s: float | None = None) -> str:
    """What ``--kill-on-hang`` is about to do and why, said before it does it."""
    st = alert.get("stuck") or {}
    what = f"{st.get('op') or 'collective'} #{st.get('seq')} of process group {st.get('pg')}" if st else "a collective"
    culprits = alert.get("culprit_ranks") or []
    why = (f"rank{'s' if len(culprits) > 1 else ''} {', '.join(map(str, culprits))} never joined {what}"
           if culprits else f"{what} did not complete")
    ranks = ", ".join(f"rank {r}" + (f" (pid {p})" if p else "") for r, p in sorted(targets.items()))
    later = f", SIGKILL {grace_s:g} s later to what is left" if grace_s else ""
    return (f"--kill-on-hang: ending the job because {why} (stacks and Flight Recorder dumps saved): "
            "SIGTERM to the command's process group" + (f" ({ranks})" if ranks else "") + later)
