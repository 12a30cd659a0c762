"""Communicators joined across processes: each process's view (``CommLocal``) grouped by
communicator identity, with its rings, trees and connections.

Identity is NCCL's commId; a split (which prints none) is ``<parent id>/split<count>:<color>``;
a communicator with neither stays one process's own, ``host:pid:ptr``.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..model import Communicator, Connection, Evidence
from .shown import first_lines
from .values import ProcKey

CommKey = tuple[ProcKey, str]  # (process, communicator pointer)


@dataclass
class CommLocal:
    """One process's view of one communicator."""

    proc: ProcKey
    ptr: str
    rank: int
    nranks: int
    caller: str | None = None
    comm_id: str | None = None
    parent_ptr: str | None = None
    split_count: int | None = None
    color: int | None = None
    started: bool = False
    start_seen: bool = False  # an Init START (or 2.3 / 2.4 phaseless) line, not only COMPLETE
    complete: bool = False
    nnodes: int | None = None
    nchannels: int | None = None
    ring_order: dict[int, list[int]] = field(default_factory=dict)
    ring_trunc: set[int] = field(default_factory=set)
    ring_next: dict[int, tuple[int, int, int]] = field(default_factory=dict)  # channel -> (prev, rank, next)
    trees: dict[int, int] = field(default_factory=dict)  # channel -> up
    tree_downs: dict[int, tuple[int, ...]] = field(default_factory=dict)  # channel -> children (-1: none)
    connections: list[Connection] = field(default_factory=list)
    first_line: int = 0
    init_line: Evidence | None = None  # the last of its Init lines (START, comm info, COMPLETE)
    transport_lines: dict[str, Evidence] = field(default_factory=dict)  # model_build.shown.note_topology
    ring_line: Evidence | None = None
    tree_line: Evidence | None = None
    launch: int = 0  # among the process's top-level views without commId of this size and rank: the k-th made


def identities(comms: dict[CommKey, CommLocal], proc_rank: dict[ProcKey, int]) -> dict[CommKey, str]:
    """The communicator id of each process's view."""
    ident: dict[CommKey, str] = {}
    for ck, cl in sorted(comms.items(), key=lambda kv: kv[1].first_line):
        if cl.comm_id:
            ident[ck] = cl.comm_id
    _join_without_ids(comms, ident, proc_rank)
    for _ in range(4):  # splits of splits
        for (key, ptr), cl in comms.items():
            if (key, ptr) in ident or not cl.parent_ptr:
                continue
            parent = ident.get((key, cl.parent_ptr))
            if parent:
                ident[(key, ptr)] = f"{parent}/split{cl.split_count if cl.split_count is not None else ''}:{cl.color}"
    for (key, ptr) in comms:
        ident.setdefault((key, ptr), f"{key[0]}:{key[1]}:{ptr}")
    return ident


def _join_without_ids(comms: dict[CommKey, CommLocal], ident: dict[CommKey, str],
                      proc_rank: dict[ProcKey, int]) -> None:
    """Top-level views without a commId (NCCL before 2.18 prints none) joined by launch order: every
    member makes a communicator collectively, so the k-th one of N ranks that a process made (as a
    given rank: one process may drive several GPUs) is one communicator, ``nranks<N>#<k>``. Views are
    taken in global-rank order; a view whose rank its communicator already has (torch's subgroups:
    ranks 0-3 and 4-7 each make their first 4-rank communicator) starts the next one, ``#<k>.<j>``."""
    made: dict[tuple[ProcKey, int, int], int] = {}
    ordered = sorted(comms.items(), key=lambda kv: kv[1].first_line)
    for ck, cl in ordered:  # launch order within each process
        if ck not in ident and not cl.parent_ptr:
            k = made.get((cl.proc, cl.nranks, cl.rank), 0)
            made[(cl.proc, cl.nranks, cl.rank)] = k + 1
            cl.launch = k
    taken: dict[str, list[set[int]]] = defaultdict(list)
    for ck, cl in sorted(ordered, key=lambda kv: (proc_rank.get(kv[1].proc, 1 << 62), kv[1].first_line)):
        if ck in ident or cl.parent_ptr:
            continue
        base = f"nranks{cl.nranks}#{cl.launch}"
        clusters = taken[base]
        j = next((i for i, ranks in enumerate(clusters) if cl.rank not in ranks and len(ranks) < cl.nranks), None)
        if j is None:
            clusters.append(set())
            j = len(clusters) - 1
        clusters[j].add(cl.rank)
        ident[ck] = base if j == 0 else f"{base}.{j}"


def build_communicators(comms: dict[CommKey, CommLocal], ident: dict[CommKey, str],
                        proc_rank: dict[ProcKey, int]) -> list[Communicator]:
    groups: dict[str, list[CommLocal]] = defaultdict(list)
    for comm_key, cl in comms.items():
        groups[ident[comm_key]].append(cl)
    communicators = [_communicator(cid, members, ident, proc_rank) for cid, members in groups.items()]
    communicators.sort(key=lambda c: (c.parent is not None, c.id))
    return communicators


def _communicator(cid: str, members: list[CommLocal], ident: dict[CommKey, str],
                  proc_rank: dict[ProcKey, int]) -> Communicator:
    nranks = max(m.nranks for m in members)
    views = Counter(m.proc for m in members)  # a process driving several GPUs holds a view per rank
    rank_map = {m.rank: m.rank if views[m.proc] > 1 else proc_rank.get(m.proc, m.rank) for m in members}
    channels = max((m.nchannels or 0 for m in members), default=0) or None
    rings = build_rings(members, nranks)
    if channels is None and rings:
        channels = len(rings)
    trees = build_trees(members)
    first = min(members, key=lambda m: m.first_line)
    parent_id = ident.get((first.proc, first.parent_ptr)) if first.parent_ptr else None
    transport_lines, ring_line, tree_line = first_lines(members)
    return Communicator(
        id=cid, nranks=nranks, members=rank_map, parent=parent_id, color=first.color, caller=first.caller,
        n_channels=channels, rings=rings, trees=trees, connections=tuple(c for m in members for c in m.connections),
        init_complete=frozenset(m.rank for m in members if m.complete),
        init_started=frozenset(m.rank for m in members if m.started),
        nnodes=max((m.nnodes or 0 for m in members), default=0) or None,
        init_lines={m.rank: m.init_line for m in sorted(members, key=lambda m: m.first_line) if m.init_line is not None},
        transport_lines=transport_lines, ring_line=ring_line, tree_line=tree_line,
    )


def build_trees(members: list[CommLocal]) -> dict[int, dict[int, int]]:
    """channel -> {rank: parent}, from both ends of each edge: a rank's own line gives its parent, and
    a parent's line gives its children theirs (kept when a child's own line is absent or cut)."""
    trees: dict[int, dict[int, int]] = defaultdict(dict)
    for m in members:
        for ch, up in m.trees.items():
            trees[ch][m.rank] = up
    for m in members:
        for ch, downs in m.tree_downs.items():
            for d in downs:
                if d >= 0 and d != m.rank:
                    trees[ch].setdefault(d, m.rank)
    return dict(trees)


def build_rings(members: list[CommLocal], nranks: int) -> dict[int, tuple[int, ...]]:
    """Each channel's ring: followed from rank 0 through the members' ``Ring`` successor lines when
    every rank printed one, else a complete ``Channel NN/MM :`` order line."""
    rings: dict[int, tuple[int, ...]] = {}
    nxt: dict[int, dict[int, int]] = defaultdict(dict)
    for m in members:
        for ch, (_prev, rank, n) in m.ring_next.items():
            nxt[ch][rank] = n
    for ch, succ in nxt.items():
        if len(succ) == nranks:
            order = [0]
            seen = {0}
            while len(order) < nranks:
                nxt_rank = succ.get(order[-1])
                if nxt_rank is None or nxt_rank in seen:
                    break
                order.append(nxt_rank)
                seen.add(nxt_rank)
            if len(order) == nranks:
                rings[ch] = tuple(order)
    for m in members:
        for ch, order in m.ring_order.items():
            if ch not in rings and ch not in m.ring_trunc and len(order) == nranks:
                rings[ch] = tuple(order)
    return dict(sorted(rings.items()))
