"""A node that went away: every rank of one host fell silent while the ranks of another host went on.

One ``ncclscope run`` per node writes into one shared folder. When a node dies, loses power, loses its
network or its mount of the shared folder, or is frozen (``kill -STOP``), nothing more arrives from any of
its ranks, while the ranks of the other hosts keep writing (heartbeats, watchdog lines) and wait for them in
a collective. That is one node problem, not N hung ranks: a rank hung in Python keeps its heartbeats going
(the hook's own thread), a rank that crashed writes an exit record or a traceback.

The rule (pure; the time is passed in):

- the ranks are grouped by the host their records name; ranks of no known host are left out;
- a host is silent when each of its ranks was heard (its last record has a time), none has ended
  (no exit record, no error of its own), and none was heard for longer than ``silent_s`` before ``now``;
- it is reported only when at least two hosts are known and a rank of another host that has not ended
  was heard within ``silent_s`` of ``now`` (someone is still there to wait for it).

Live: ``now`` is the monitor's clock and ``silent_s`` the stall threshold. Offline: ``now`` is the time of
the last record of the run and ``silent_s`` a margin; the others' timeouts come long after the silent
host's last line.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Heard:
    """What is known of one rank: its host, the time and place of its last record, whether it ended."""

    rank: int
    host: str | None
    last_t: float | None
    last_line: str | None = None  # "ncclscope-rank3.jsonl:812"
    ended: bool = False


@dataclass(frozen=True, slots=True)
class SilentNode:
    host: str
    ranks: tuple[int, ...]
    last_t: float  # the newest record of any of its ranks
    last_line: str | None  # where that record is
    silent_s: float  # now - last_t


def silent_nodes(heard: Iterable[Heard], now: float, silent_s: float) -> tuple[SilentNode, ...]:
    """The hosts all of whose ranks fell silent while another host's ranks went on (host order)."""
    by_host: dict[str, list[Heard]] = {}
    for h in heard:
        if h.host:
            by_host.setdefault(h.host, []).append(h)
    if len(by_host) < 2:
        return ()

    def quiet(h: Heard) -> bool:
        return not h.ended and h.last_t is not None and now - h.last_t > silent_s

    def loud(h: Heard) -> bool:
        return not h.ended and h.last_t is not None and now - h.last_t <= silent_s

    silent = [host for host, hs in by_host.items() if all(quiet(h) for h in hs)]
    if not silent or not any(loud(h) for host, hs in by_host.items() if host not in silent for h in hs):
        return ()
    out = []
    for host in sorted(silent):
        hs = by_host[host]
        last = max(hs, key=lambda h: (h.last_t or 0.0, h.rank))
        t = float(last.last_t or 0.0)
        out.append(SilentNode(host, tuple(sorted(h.rank for h in hs)), t, last.last_line, now - t))
    return tuple(out)
