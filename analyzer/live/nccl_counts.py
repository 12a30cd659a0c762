"""NCCL's own call counts, live: for a job without the hook whose NCCL logs print COLL lines
(``NCCL_DEBUG_SUBSYS=COLL``), how many collectives each rank issued on each communicator.

The rank of a COLL line comes from its process's ``Init COMPLETE`` line for the same communicator pointer
(NCCL's ``[dev]`` is not the rank); the communicator across processes is its ``commId`` where NCCL prints
one, else its size, kept only while no process has two communicators of that size (two of one size with no
commId cannot be told apart: no claim). Bounded: at most ``MAX_KEYS`` (host, pid, communicator) entries.

What is judged from the counts is ``rules.hang.behind_by_counts`` (the one rule ``analyze`` applies to the
counts at the end of the logs): ranks behind a unanimous majority are a likely hang; scattered counts name
nobody. No I/O, no clock (the time a line arrived is passed in).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..rules.hang import behind_by_counts
from ..rules.stall import MAX_GAPS
from ..sources import records as R

MAX_KEYS = 1 << 16

Key = tuple[str, int, str]  # host, pid, communicator pointer


@dataclass(frozen=True, slots=True)
class Behind:
    comm: str  # the communicator: its commId, or "nranks=N"
    ranks: tuple[int, ...]
    low: int  # their calls
    top: int  # the others'
    agree: int  # how many ranks agree on ``top``


@dataclass(slots=True)
class NcclCounts:
    ranks: dict[Key, tuple[int, str]] = field(default_factory=dict)  # -> (rank, communicator)
    calls: dict[Key, int] = field(default_factory=dict)  # -> calls issued (the last opCount + 1)
    last_t: float | None = None  # when the last new call arrived
    gaps: list[float] = field(default_factory=list)  # between arrivals of new calls, the last MAX_GAPS

    def init(self, rec: R.NcclInit) -> None:
        key = (rec.host, rec.pid, rec.comm)
        if rec.phase == "COMPLETE" and key not in self.ranks and len(self.ranks) < MAX_KEYS:
            self.ranks[key] = (rec.rank, rec.comm_id or f"nranks={rec.nranks}")

    def coll(self, rec: R.NcclColl, now: float) -> None:
        key = (rec.host, rec.pid, rec.comm)
        n = rec.opcount + 1
        if n <= self.calls.get(key, 0) or (key not in self.calls and len(self.calls) >= MAX_KEYS):
            return
        self.calls[key] = n
        if self.last_t is not None and now > self.last_t:
            self.gaps.append(now - self.last_t)
            del self.gaps[:-MAX_GAPS]
        self.last_t = now if self.last_t is None else max(self.last_t, now)

    def per_comm(self) -> dict[str, dict[int, int]]:
        """Communicator -> rank -> calls, for the communicators told apart across processes."""
        out: dict[str, dict[int, int]] = {}
        procs: dict[str, set[tuple[str, int]]] = {}
        ambiguous: set[str] = set()
        for (host, pid, ptr), (rank, comm) in self.ranks.items():
            seen = procs.setdefault(comm, set())
            if (host, pid) in seen:
                ambiguous.add(comm)  # two communicators of one process under one name
            seen.add((host, pid))
            n = self.calls.get((host, pid, ptr))
            if n is not None:
                out.setdefault(comm, {})[rank] = max(n, out.get(comm, {}).get(rank, 0))
        return {c: v for c, v in out.items() if c not in ambiguous}

    def started(self) -> bool:
        """Every rank whose init was seen has issued a call."""
        return bool(self.ranks) and all(k in self.calls for k in self.ranks)

    def behind(self) -> Behind | None:
        """The first communicator whose counts have ranks behind a unanimous majority."""
        for comm, counts in sorted(self.per_comm().items()):
            ranks = behind_by_counts(counts)
            if ranks:
                top = max(counts.values())
                return Behind(comm, ranks, min(counts[r] for r in ranks), top,
                              sum(1 for n in counts.values() if n == top))
        return None
