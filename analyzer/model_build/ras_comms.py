"""Communicators that only NCCL's RAS report shows (``sources.ras``): a report pasted alone, or one naming
communicators no NCCL line of the input does. Each is known by its hash (NCCL's commId, as its INFO lines write it) and
its size; its ranks' global ranks, rings and connections are not in the report."""
from __future__ import annotations

from ..model import Communicator
from ..sources.records import RasComm


def ras_communicators(ras: list[RasComm], known: list[Communicator]) -> list[Communicator]:
    """The communicators of ``ras`` that ``known`` (those NCCL's lines built) does not hold, once each. The size is the
    report's (its table, the JSON's ``size``), else the ranks its counts add up to; one with neither is left out."""
    ids = {c.id for c in known}
    out: dict[str, Communicator] = {}
    for r in ras:
        if not r.comm_hash or r.comm_hash in ids or r.comm_hash in out:
            continue
        first_op = r.groups[0][0] if r.groups else None
        size = r.nranks or sum(g[2] for g in r.groups if g[0] == first_op) or len(r.counts)
        if size > 0:
            out[r.comm_hash] = Communicator(r.comm_hash, size, {})
    return list(out.values())
