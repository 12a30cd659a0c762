"""NCCL's RAS report read as a verdict: what its communicators' launched-operation counts and its dead processes say.

RAS (2.24+) asks every process, through its own network, how many operations of each kind each rank of each
communicator has launched, and which processes stopped answering. Its report:

- ranks of one communicator that launched different numbers of one operation (``Communicator ranks have different
  AllGather operation counts``: ``30 ranks have launched up to operation 2217``, ``2 ranks ... 2218``): the ranks ahead
  launched an operation the others never did, and wait in it; the ranks behind are elsewhere. A hang. Its culprits are
  the ranks behind, when the report names each of them (it lists the ranks of the smaller groups, every group in a
  VERBOSE STATUS) and they are fewer than the ranks ahead; the ranks it lists ahead are no culprits. A report is a
  snapshot: counts a moment apart also differ in a running job, so one report is a possible hang, the same counts in
  two reports a likely one.
- processes RAS considers dead (``DEAD``: unreachable via the RAS network for a minute): they died or their node did.
  A crash; its culprits the ranks the report places in those processes.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

Group = tuple[str, int, int, tuple[int, ...]]  # (operation, launched up to, how many ranks, the ranks listed)


@dataclass(frozen=True, slots=True)
class RasView:
    """One communicator as one report shows it (``sources.ras``' ``RasComm``, as the model keeps it)."""

    comm: str
    groups: tuple[Group, ...]
    dead_ranks: tuple[int, ...] = ()
    dead_processes: int = 0


@dataclass(frozen=True, slots=True)
class RasReading:
    crash: bool  # processes died (else: a hang)
    comm: str
    op: str | None  # the operation whose counts differ
    ahead: tuple[int, int, tuple[int, ...]] | None  # (launched up to, how many ranks, those listed) of the ranks ahead
    behind: tuple[tuple[int, int], ...]  # (launched up to, how many ranks) of each group behind
    culprits: tuple[int, ...]
    level: str
    why: str


def read_ras(views: Iterable[RasView]) -> RasReading | None:
    """The report's verdict (module docstring): processes dead first, else the first communicator whose ranks' counts
    differ; None when neither."""
    vs = list(views)
    dead = next((v for v in vs if v.dead_processes > 0), None)
    if dead is not None:
        n = dead.dead_processes
        return RasReading(True, dead.comm, None, None, (), tuple(sorted(set(dead.dead_ranks))), "likely",
                          f"NCCL's RAS considers {n} job process{'es' if n > 1 else ''} dead (unreachable via its "
                          "network): a process or its node stopped")
    for v in vs:
        found = _mismatch(v)
        if found is None:
            continue
        op, top, below = found
        ahead_ranks = tuple(r for g in top for r in g[3])
        n_ahead = sum(g[2] for g in top)
        n_behind = sum(g[2] for g in below)
        named = tuple(sorted({r for g in below for r in g[3]}))
        culprits = named if len(named) == n_behind and n_behind < n_ahead else ()
        seen = sum(1 for w in vs if w.comm == v.comm and _mismatch(w) == found)
        level = "likely" if seen > 1 else "possible"
        why = ("NCCL's RAS report: the ranks of one communicator launched different numbers of one operation"
               + (", the same in two reports" if seen > 1 else ", in one report (a snapshot: a running job's counts "
                  "also differ a moment apart)"))
        return RasReading(False, v.comm, op, (top[0][1], n_ahead, ahead_ranks),
                          tuple((g[1], g[2]) for g in below), culprits, level, why)
    return None


def _mismatch(v: RasView) -> tuple[str, tuple[Group, ...], tuple[Group, ...]] | None:
    """(operation, the groups ahead, the groups behind) of the first operation whose counts differ, or None."""
    for op in dict.fromkeys(g[0] for g in v.groups):
        groups = [g for g in v.groups if g[0] == op]
        values = {g[1] for g in groups}
        if len(values) < 2:
            continue
        top = max(values)
        return op, tuple(g for g in groups if g[1] == top), tuple(g for g in groups if g[1] < top)
    return None
