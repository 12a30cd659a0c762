"""The local rank whose process died, from what its neighbours' proxies saw: NCCL's ``[Service thread] Connection
closed by localRank N`` printed by the other processes of one host when process N goes away (a segfault, an abort, the
OOM killer) with nothing of its own in the log. At an orderly teardown every process closes and its neighbours report
several local ranks; one local rank reported by its neighbours, and no other, is the one that went first."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..sources.lines import nccl_head

MIN_REPORTERS = 2  # neighbours that saw it: one process's line alone may be its own teardown


@dataclass(frozen=True, slots=True)
class ClosedLocalRank:
    host: str
    local_rank: int
    reporters: int  # processes of that host that reported it


def reporter(line: str) -> tuple[str, int, int] | None:
    """(host, pid, device) of an NCCL line's head."""
    h = nccl_head(line)
    return (h[0], h[1], h[2]) if h is not None and h[2] is not None else None


def closed_local_rank(reports: Iterable[tuple[str, int, int, int]]) -> ClosedLocalRank | None:
    """``reports``: (host, reporter pid, reporter's device, local rank it saw close). The one local rank of one host
    that at least ``MIN_REPORTERS`` other processes there saw close, when no host's neighbours report more than one
    (a teardown's pattern) and no other host reports one. A process reporting its own device's local rank is its own
    teardown, not a witness."""
    by_host: dict[str, dict[int, set[int]]] = {}
    for host, pid, dev, lr in reports:
        if lr >= 0 and dev != lr:
            by_host.setdefault(host, {}).setdefault(lr, set()).add(pid)
    if len(by_host) != 1:
        return None
    host, seen = next(iter(by_host.items()))
    if len(seen) != 1:
        return None
    lr, pids = next(iter(seen.items()))
    return ClosedLocalRank(host, lr, len(pids)) if len(pids) >= MIN_REPORTERS else None


def global_rank(closed: ClosedLocalRank, devices: Mapping[int, int], one_node: bool, world: int | None) -> int | None:
    """The global rank of the closed local rank: the rank whose process on that host used the device of that number
    (``devices``: device -> rank, that host's processes; a process per GPU, local rank N on device N), else, on a job of
    one node, the local rank itself (inside the world). None when the text does not allow it."""
    if closed.local_rank in devices:
        return devices[closed.local_rank]
    if one_node and (world is None or closed.local_rank < world):
        return closed.local_rank
    return None
