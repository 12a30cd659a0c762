"""A connection that failed while NCCL started: the start itself failed, on the rank that reports it.

NCCL's socket WARNs stay off the time line while a job runs (the bootstrap's helper threads log theirs while training
goes on: ``facts.warn_failure``). Before a process has finished any communicator's init, a failed connect (``connect
to 10.0.0.2<43277> failed : Connection refused``, ``... returned Connection refused, exceeded error retry count``,
``... failed : Software caused connection abort``, ``socketStartConnect: exceeded retries``) is that init's failure:
a network failure of that rank (``FailureKind.NETWORK``), which names no rank's code as the culprit. When every rank
reports it alike, no rank is to blame; the knowledge base says whether a setting caused it (a config error). One rank's failed connect among
ranks that only wait is not read so: the start froze (a hang), the reporter is no culprit by it.

A return chain with no WARN before it that reaches NCCL's API (``chain.orphan_chains``) is the failure of that call
too: NCCL's error, or the network's where its first frame is NCCL's socket or bootstrap code."""
from __future__ import annotations

import re
from collections.abc import Iterable

from ..model import LogEvent
from .cause import Failure
from .chain import orphan_chains, returned_to_caller
from .exits import FailureKind

CONNECT_FAILED_RE = re.compile(
    r"(?i)\bconnect(?:ion)? to \S{1,160} (?:failed|returned)|socket(?:Start|Poll)Connect: exceeded|"
    r"Call to connect (?:timeout|failed)")


def connect_failed(text: str) -> bool:
    """The WARN says a connect to a peer failed (not a connection that broke later: closed / reset by the peer)."""
    return bool(CONNECT_FAILED_RE.search(text))


def startup_failures(warns: Iterable[tuple[int | None, str, float | None, tuple[str, int]]],
                     initialised: Iterable[int], seen: Iterable[int]) -> list[Failure]:
    """``warns``: (rank, message, time, (file, line)) of each NCCL WARN; ``initialised``: the ranks that completed
    some communicator's init; ``seen``: the ranks with NCCL lines in the input. When every rank seen that had not
    finished an init reports a failed connect, each such WARN is a network failure at start-up. One rank's connect
    failure among others that wait (closed connections, a freeze) is left to the rest of the time line: its chain,
    when it reached the caller, already put it there (``facts.returned_failures``)."""
    done = set(initialised)
    failed = [(rank, text, t, order) for rank, text, t, order in warns if connect_failed(text)
              and (rank is None or rank not in done)]
    starting = set(seen) - done
    if not failed or not starting or not starting <= {rank for rank, _, _, _ in failed}:
        return []
    return [Failure(rank, FailureKind.NETWORK, f"NCCL WARN {text.strip()} (while NCCL started)"[:500], t, order)
            for rank, text, t, order in failed]


SOCKET_SOURCES = ("misc/socket.cc", "socket.cc", "bootstrap.cc", "transport/net_socket.cc", "misc/ibvwrap.cc")


def orphan_failures(events: list[LogEvent], taken: Iterable[tuple[str, int]]) -> list[Failure]:
    """Return chains no WARN opened that reached the application's call: one failure each, at its first line
    (``taken``: lines already on the time line)."""
    skip = set(taken)
    out = []
    for chain in orphan_chains(events):
        first = chain[0][2]
        if (first.file, first.line) in skip or not returned_to_caller(chain):
            continue
        src, code = chain[0][0], chain[0][1]
        rank = next((e.rank for e in events if e.evidence is first), None)
        kind = FailureKind.NETWORK if src.rsplit(":", 1)[0].endswith(SOCKET_SOURCES) else FailureKind.NCCL
        out.append(Failure(rank, kind, f"NCCL returned error {code} from {src} up to {chain[-1][0]} (no WARN before "
                           "it): the call failed"[:500], None, (first.file, first.line)))
    return out
