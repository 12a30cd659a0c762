"""A job's Flight Recorder dumps -> ``FrJob``: per process group, the first operation that did not
complete where some member takes part in it, and the first mismatched collective.

One dump per rank: the dump PyTorch's watchdog wrote (on a timeout or an error), else one taken
on request while the job ran, else one from a writer not known, else the one written at exit (by
then the job's teardown may have retired what hung); the latest of those. A group's identity is
its name and its members (a name split into groups of other ranks is another group); its
members come from the dumps' ``pg_config``, or, where a rank's config lacks the group, from the
other ranks' configs that hold that rank, the world for the default group, else the ranks whose
entries name it.

A member's part at collective N of a group: its own entry's state; ``completed`` also when its
``pg_status`` says the group completed N; ``unknown`` when it holds a later entry of the group but
none for N (its ring buffer wrapped, or only active entries were dumped); ``absent`` when its
records end before N (it never issued N); ``no_dump`` when its dump is missing. Ring buffers are
aligned per group by sequence number, never by record id: record ids count every group of one
process, so ranks in different groups hold different ranges of them. A collective completed on
any member ran on all of them (the others discovered it later); one that some member takes part
in and none completed is the group's pending collective.

Sends and receives are paired by peer: the k-th send of A to B with the k-th receive of B from A
(counted from the start when neither ring buffer wrapped, else among those not completed), never
by sequence numbers, which each rank counts over all its peers.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..fr_model import DumpOrigin, FrGroup, FrJob, FrMismatch, FrOp, FrPart, FrRank, FrState
from ..sources import records as R
from .fr_entries import (
    Call,
    Entry,
    GroupKey,
    group_calls,
    origin_of,
    parse_entry,
    read_configs,
    records_timing,
)
from .fr_match import compare
from ..model import Format

# which dump of a rank to judge by, when it left several
ORIGIN_RANK = {DumpOrigin.WATCHDOG: 0, DumpOrigin.REQUEST: 1, DumpOrigin.UNKNOWN: 2, DumpOrigin.EXIT: 3}


class _View:
    """One rank's chosen dump, parsed."""

    def __init__(self, fr: R.FrDump, rank: int) -> None:
        self.fr = fr
        self.rank = rank
        self.entries: list[Entry] = sorted((e for e in map(parse_entry, fr.entries) if e is not None),
                                           key=lambda e: e.record_id)
        self.configs = read_configs(fr.pg_config)
        self.timing = records_timing(self.entries, fr.entries)
        self.colls: dict[GroupKey, dict[int, Call]] = {}
        self.p2p: dict[GroupKey, list[Call]] = {}
        self.status: dict[GroupKey, tuple[int | None, int | None]] = {}  # (last enqueued, last completed)

    @property
    def wrapped(self) -> bool:
        return bool(self.entries) and self.entries[0].record_id > 0

    def info(self) -> FrRank:
        times = [t for e in self.entries for t in (e.t_created, e.t_started, e.t_completed) if t is not None]
        backend = next((e.backend for e in self.entries if e.backend), None)
        return FrRank(self.rank, self.fr.file, origin_of(self.fr.file), self.timing, self.wrapped,
                      max(times, default=None), backend)


def build_fr_job(frs: Iterable[R.FrDump]) -> FrJob | None:
    views = {r: _View(fr, r) for r, fr in _choose(frs).items()}
    if not views:
        return None
    keys, descs = _group_keys(views)
    for r, v in views.items():
        _status(v, keys[r], descs)
        done = {k: st[1] for k, st in v.status.items()}
        v.colls, v.p2p = group_calls(r, v.entries, keys[r], v.timing, done)
    groups = sorted(set(descs), key=lambda k: (_pg_order(k[0]), k[1]))
    pending: list[FrOp] = []
    mismatches: list[FrMismatch] = []
    for key in groups:
        op = _pending_collective(key, descs[key], views)
        if op is not None:
            pending.append(op)
        pending += _pending_p2p(key, descs[key], views)
        mm = _first_mismatch(key, descs[key], views)
        if mm is not None:
            mismatches.append(mm)
    members = {m for k in groups for m in k[1]}
    return FrJob(ranks=tuple(views[r].info() for r in sorted(views)),
                 groups=tuple(FrGroup(k[0], descs[k], k[1]) for k in groups), pending=tuple(pending),
                 mismatches=tuple(mismatches), no_dump=tuple(sorted(members - set(views))))


def _choose(frs: Iterable[R.FrDump]) -> dict[int, R.FrDump]:
    best: dict[int, R.FrDump] = {}
    for fr in frs:
        if fr.rank is None:
            continue
        if fr.rank not in best or _preference(fr) < _preference(best[fr.rank]):
            best[fr.rank] = fr
    return best


def _preference(fr: R.FrDump) -> tuple[int, int, int, int]:
    last = max((int(e["record_id"]) for e in fr.entries if isinstance(e.get("record_id"), int)), default=-1)
    return ORIGIN_RANK[origin_of(fr.file)], -last, -len(fr.entries), 0 if fr.fmt == Format.PICKLE else 1


def _pg_order(name: str) -> tuple[int, int | str]:
    return (0, int(name)) if name.isdigit() else (1, name)


def _group_keys(views: Mapping[int, _View]) -> tuple[dict[int, dict[str, GroupKey]], dict[GroupKey, str]]:
    """For each rank, its groups' names -> (name, members); each group's desc."""
    world = set(views)
    for v in views.values():
        world |= {m for _, ms in v.configs.values() if ms for m in ms}
    by_name: dict[str, set[tuple[int, ...]]] = {}
    for v in views.values():
        for name, (_, ms) in v.configs.items():
            if ms:
                by_name.setdefault(name, set()).add(ms)
    unconfigured: dict[str, set[int]] = {}  # name -> ranks whose entries name it with no config to go by
    keys: dict[int, dict[str, GroupKey]] = {}
    descs: dict[GroupKey, str] = {}
    for r, v in views.items():
        mine = keys.setdefault(r, {})
        for e in v.entries:
            if e.pg in mine:
                continue
            own = v.configs.get(e.pg, ("", None))[1]
            holding = [ms for ms in by_name.get(e.pg, ()) if r in ms]
            if own and r in own:
                members = own
            elif len(holding) == 1:
                members = holding[0]
            elif e.desc == "default_pg":
                members = tuple(sorted(world))
            else:
                unconfigured.setdefault(e.pg, set()).add(r)
                continue
            mine[e.pg] = (e.pg, members)
            descs.setdefault((e.pg, members), e.desc or v.configs.get(e.pg, ("", None))[0])
    for name, ranks in unconfigured.items():
        key = (name, tuple(sorted(ranks)))
        for r in ranks:
            keys[r][name] = key
            descs.setdefault(key, next((e.desc for e in views[r].entries if e.pg == name), ""))
    return keys, descs


def _status(v: _View, keys: Mapping[str, GroupKey], groups: Iterable[GroupKey]) -> None:
    """The dump's pg_status (keyed by pg id) by group, through its entries' pg id -> group name. A pg id no
    entry names (the rank's entries of that group all left its buffer, or only active entries were dumped)
    goes to the group of that name holding the rank: PyTorch names groups "0", "1", ... in the order it
    creates them, and numbers them alike while every group is of one backend."""
    id_name = {e.pg_id: e.pg for e in v.entries if e.pg_id is not None}
    named = set(id_name.values())
    for pg_id, st in v.fr.pg_status.items():
        name = id_name.get(pg_id)
        key = keys.get(name) if name is not None else None
        if key is None and name is None and pg_id not in named:
            key = next((k for k in groups if k[0] == pg_id and v.rank in k[1]), None)
        if key is None:
            continue
        enq, done = st.get("last_enqueued"), st.get("last_completed")
        v.status[key] = (enq if enq is not None and enq >= 0 else None,
                         done if done is not None and done >= 0 else None)


def _part(v: _View | None, rank: int, key: GroupKey, seq: int) -> FrPart:
    if v is None:
        return FrPart(rank, FrState.NO_DUMP)
    calls = v.colls.get(key, {})
    c = calls.get(seq)
    if c is not None:
        return _part_of(c)
    enq, done = v.status.get(key, (None, None))
    if done is not None and seq <= done:
        return FrPart(rank, FrState.COMPLETED)
    later = [x for s, x in calls.items() if s > seq]
    if later or (enq is not None and enq >= seq):
        return FrPart(rank, FrState.COMPLETED if any(x.state is FrState.COMPLETED for x in later) else FrState.UNKNOWN)
    if not calls and v.wrapped:
        return FrPart(rank, FrState.UNKNOWN)  # its group's entries may have left its ring buffer
    return FrPart(rank, FrState.ABSENT)


def _part_of(c: Call) -> FrPart:
    e = c.entry
    aborted = e.retired and not e.done
    where = e.where or next((m.where for m in c.members if m.where), None)
    return FrPart(c.rank, c.state, c.op, e.t_created, e.timeout_s, aborted, where)


def _pending_collective(key: GroupKey, desc: str, views: Mapping[int, _View]) -> FrOp | None:
    members = key[1]
    open_seqs = sorted({s for r in members if r in views for s, c in views[r].colls.get(key, {}).items()
                        if c.state is not FrState.COMPLETED})
    for seq in open_seqs:
        parts = tuple(_part(views.get(r), r, key, seq) for r in members)
        if any(p.state is FrState.COMPLETED for p in parts) or not any(p.state.pending for p in parts):
            continue
        op = next(p.op for p in parts if p.op is not None)
        return FrOp(key[0], desc, seq, op, parts)
    return None


def _pending_p2p(key: GroupKey, desc: str, views: Mapping[int, _View]) -> list[FrOp]:
    """Per sender -> receiver pair of the group, the first send/recv some side waits in."""
    sends: dict[tuple[int, int], list[Call]] = {}
    recvs: dict[tuple[int, int], list[Call]] = {}
    for r, v in views.items():
        for c in v.p2p.get(key, ()):
            if c.src is None or c.dst is None:
                continue
            if c.op == "send" and c.src == r:
                sends.setdefault((c.src, c.dst), []).append(c)
            elif c.op == "recv" and c.dst == r:
                recvs.setdefault((c.src, c.dst), []).append(c)
    out = []
    for src, dst in sorted(set(sends) | set(recvs)):
        s_list, r_list = sends.get((src, dst), []), recvs.get((src, dst), [])
        whole = src in views and dst in views and not views[src].wrapped and not views[dst].wrapped
        pair = _first_open_pair(s_list, r_list, whole)
        if pair is None:
            continue
        s, rc = pair
        parts = (_p2p_part(s, src, views), _p2p_part(rc, dst, views))
        seq = rc.seq if rc is not None else s.seq if s is not None else -1
        out.append(FrOp(key[0], desc, seq, "recv" if rc is not None else "send", parts, src, dst))
    return out


def _first_open_pair(sends: list[Call], recvs: list[Call], whole: bool) -> tuple[Call | None, Call | None] | None:
    """The first send/recv pair some side waits in: the k-th with the k-th when both records are whole,
    else the first not completed of each side (records cut by a ring buffer cannot be counted)."""
    if whole:
        for i in range(max(len(sends), len(recvs))):
            s = sends[i] if i < len(sends) else None
            r = recvs[i] if i < len(recvs) else None
            if any(x is not None and x.state is FrState.COMPLETED for x in (s, r)):
                continue  # one side completed it: the transfer happened, the other learns of it later
            if any(x is not None and x.state.pending for x in (s, r)):
                return s, r
        return None
    s = next((x for x in sends if x.state is not FrState.COMPLETED), None)
    r = next((x for x in recvs if x.state is not FrState.COMPLETED), None)
    return None if s is None and r is None else (s, r)


def _p2p_part(c: Call | None, rank: int, views: Mapping[int, _View]) -> FrPart:
    if c is not None:
        return _part_of(c)
    return FrPart(rank, FrState.ABSENT if rank in views else FrState.NO_DUMP)


def _first_mismatch(key: GroupKey, desc: str, views: Mapping[int, _View]) -> FrMismatch | None:
    """The first collective of the group at which two or more members' calls are known and disagree, or
    their one call is wrong on its own."""
    by_rank = {r: views[r].colls.get(key, {}) for r in key[1] if r in views}
    seqs = sorted({s for calls in by_rank.values() for s in calls})
    for seq in seqs:
        calls = {r: c[seq] for r, c in by_rank.items() if seq in c}
        if len(calls) < 2 and len(key[1]) > 1:
            continue
        mm = compare(key, desc, seq, calls, by_rank)
        if mm is not None:
            return mm
    return None
