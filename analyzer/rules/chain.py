"""NCCL's return chain: the ``src/file.cc:N -> code`` lines NCCL prints, one a frame, as an error climbs its call
stack after a WARN (``misc/socket.cc:567 -> 2``, ``bootstrap.cc:285 -> 2``, ``init.cc:1925 -> 2``).

A chain that reaches NCCL's API with a non-zero code (``init.cc``: ncclCommInitRank, ncclCommSplit; ``group.cc``:
ncclGroupEnd; ``enqueue.cc`` / ``collectives.cc``: a collective or point-to-point call) means the error was
returned to the application's call: the WARN before it is the failure of that call, whatever comes after (the
framework's exception may be cut from a pasted log). A chain that stays inside a helper thread (the bootstrap
root, a proxy) did not reach the application by itself. A chain with no WARN before it (``orphan_chains``: NCCL
returned the error without printing one, or the WARN was cut from the paste) tells the same when it reaches NCCL's
API."""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..model import EventKind, Evidence, LogEvent

CHAIN_GAP = 64  # lines: a return chain follows its WARN closely, even with other threads' lines between
API_SOURCES = frozenset({"init.cc", "group.cc", "enqueue.cc", "collectives.cc"})  # where NCCL's API calls return

Chain = tuple[tuple[str, int, Evidence], ...]  # (source "file.cc:N", code, evidence) of each chain line, in order


def returned_to_caller(chain: Iterable[tuple[str, int, Evidence]]) -> bool:
    """The chain has a non-zero line in one of NCCL's API sources (``API_SOURCES``; the path before the file name
    and the line number are ignored): the error reached the application's call."""
    for src, code, _ in chain:
        name = src.rsplit(":", 1)[0].rsplit("/", 1)[-1]
        if code != 0 and name in API_SOURCES:
            return True
    return False


def warn_chains(events: Sequence[LogEvent]) -> dict[int, Chain]:
    """Index of each WARN event -> the return-chain lines after it: same file, same rank, before that rank's next
    WARN, within ``CHAIN_GAP`` lines of the previous one."""
    open_warn: dict[tuple[str, int | None], tuple[int, int]] = {}  # (file, rank) -> (warn index, last line)
    out: dict[int, list[tuple[str, int, Evidence]]] = {}
    order = sorted((i for i, e in enumerate(events) if e.kind in (EventKind.NCCL_WARN, EventKind.NCCL_BACKTRACE)),
                   key=lambda i: (events[i].evidence.file, events[i].evidence.line))
    for i in order:
        e = events[i]
        key = (e.evidence.file, e.rank)
        if e.kind == EventKind.NCCL_WARN:
            open_warn[key] = (i, e.evidence.line)
        elif e.kind == EventKind.NCCL_BACKTRACE and key in open_warn:
            wi, last = open_warn[key]
            if not 0 < e.evidence.line - last <= CHAIN_GAP:
                del open_warn[key]
                continue
            code = e.data.get("code")
            out.setdefault(wi, []).append((e.text.rsplit(" -> ", 1)[0], code if isinstance(code, int) else 0,
                                           e.evidence))
            open_warn[key] = (wi, e.evidence.line)
    return {k: tuple(v) for k, v in out.items()}


def orphan_chains(events: Sequence[LogEvent]) -> list[Chain]:
    """Return chains no WARN opens (``warn_chains`` takes those): runs of one rank's chain lines in one file, each
    within ``CHAIN_GAP`` lines of the one before, in file order."""
    taken = {id(x[2]) for chain in warn_chains(events).values() for x in chain}
    open_: dict[tuple[str, int | None], list[tuple[str, int, Evidence]]] = {}
    out: list[list[tuple[str, int, Evidence]]] = []
    for e in sorted((e for e in events if e.kind == EventKind.NCCL_BACKTRACE), key=lambda e: (e.evidence.file, e.evidence.line)):
        if id(e.evidence) in taken:
            continue
        key = (e.evidence.file, e.rank)
        code = e.data.get("code")
        link = (e.text.rsplit(" -> ", 1)[0], code if isinstance(code, int) else 0, e.evidence)
        cur = open_.get(key)
        if cur is not None and 0 < e.evidence.line - cur[-1][2].line <= CHAIN_GAP:
            cur.append(link)
        else:
            open_[key] = [link]
            out.append(open_[key])
    return [tuple(c) for c in out]
