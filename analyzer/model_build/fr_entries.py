"""One rank's Flight Recorder dump as typed entries and calls.

An entry (``FrDump.entries``, plain dicts) becomes an ``Entry``: its process group
(``process_group[0]``, members from the rank's ``pg_config[name]["ranks"]``, a string such as
``"[0, 1]"``), ``collective_seq_id`` / ``p2p_seq_id``, the op of ``profiling_name``
(``nccl:all_reduce``, ``gloo:broadcast``, ``nccl:send 1->2`` with group ranks, ``nccl:recv 3<-0``;
any backend prefix), ``input_sizes`` / ``output_sizes`` / ``*_dtypes``, ``state``, ``retired``,
``time_created_ns``, ``time_discovered_started_ns`` (None, or 0 in JSON, until discovered),
``timeout_ms`` and the first user frame of ``frames``.

Entries become calls: the entries of one process group that share a ``collective_seq_id`` are one
collective (a coalesced group's members and its end entry, ``nccl:coalesced`` /
``ALLGATHER_coalesced`` ..., whose state is the group's: PyTorch records its members without
events, so they stay ``scheduled``); a send or recv is one call, a batch of them (same
``p2p_seq_id``, ended by ``coalesced``) gives each member the batch's state. gloo's entries never
say ``completed``: it retires an entry when its work is done, so a retired gloo entry is completed.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from ..fr_model import DumpOrigin, FrState
from ..sources.flight_recorder import MAX_INT
from .collectives import frames_where

GroupKey = tuple[str, tuple[int, ...]]  # (PyTorch's name of the group, its members' global ranks)

P2P_OPS = frozenset({"send", "recv"})
# the writers' names for a dump file, <prefix><global rank> (a .pkl / .json suffix allowed)
_ORIGIN_NAMES: tuple[tuple[re.Pattern[str], DumpOrigin], ...] = (
    # PyTorch's DebugInfoWriter: TORCH_NCCL_DEBUG_INFO_TEMP_FILE's old and new defaults, and the prefix
    # `ncclscope run` gives it; PyTorch writes there on a timeout or an error (or a write to its pipe)
    (re.compile(r"(?:^|/)(?:nccl_trace_rank_|comm_lib_trace_rank_|fr_timeout_rank)\d+(?:\.(?:pkl|json))?$"),
     DumpOrigin.WATCHDOG),
    (re.compile(r"(?:^|/)fr_live_rank\d+(?:\.(?:pkl|json))?$"), DumpOrigin.REQUEST),
    (re.compile(r"(?:^|/)fr_end_rank\d+(?:\.(?:pkl|json))?$"), DumpOrigin.EXIT),
)
_PEER_RE = re.compile(r"^(\d+)\s*(->|<-)\s*(\d+)$")
_INT_RE = re.compile(r"-?\d+")


def origin_of(file: str) -> DumpOrigin:
    for pat, origin in _ORIGIN_NAMES:
        if pat.search(file):
            return origin
    return DumpOrigin.UNKNOWN


class Entry(NamedTuple):
    """One entry (a tuple: a job's dumps hold millions of them, a frozen dataclass costs 3x to make)."""

    record_id: int
    pg: str
    desc: str
    pg_id: str | None
    seq: int  # collective_seq_id
    p2p_seq: int
    is_p2p: bool
    op: str  # profiling name without its backend and peers: "all_reduce", "send", "coalesced"
    backend: str | None
    peers: tuple[int, int] | None  # send/recv: (src, dst) group ranks
    input_sizes: tuple[tuple[int, ...], ...]
    input_dtypes: tuple[str, ...]
    output_sizes: tuple[tuple[int, ...], ...]
    output_dtypes: tuple[str, ...]
    state: str  # as written: completed | started | scheduled
    retired: bool
    t_created: float | None
    t_started: float | None
    t_completed: float | None
    timeout_s: float | None
    frames: Any = None  # the entry's own stack and thread, read when asked
    thread: Any = None

    @property
    def where(self) -> str | None:
        """The first user frame of its stack, or the autograd thread that issued it."""
        return frames_where(self.frames, self.thread)

    @property
    def is_marker(self) -> bool:
        """The end entry of a coalesced group (``coalesced``, ``ALLGATHER_coalesced``, ...)."""
        return self.op.endswith("coalesced") and self.op != "allreduce_coalesced"

    @property
    def done(self) -> bool:
        return self.state == FrState.COMPLETED or (self.backend == "gloo" and self.retired)


class Call(NamedTuple):
    """One rank's part at one point of a process group: a collective, or one send / recv."""

    rank: int
    group: GroupKey
    seq: int  # collective_seq_id; a send/recv: its p2p_seq_id
    op: str
    entry: Entry  # the op, or a coalesced group's end entry
    members: tuple[Entry, ...]  # a coalesced group's ops; () for one op
    state: FrState
    src: int | None = None  # send/recv: global ranks
    dst: int | None = None

    @property
    def ops(self) -> tuple[Entry, ...]:
        """The entries whose tensors the call moves: its members, or itself."""
        return self.members or (self.entry,)


def _ns(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v or not (0 < v < MAX_INT):
        return None  # JSON dumps write 0 for "not yet"
    return float(v) / 1e9


def _int(v: Any, default: int = -1) -> int:
    if isinstance(v, bool):
        return default
    try:
        i = int(v)
    except (TypeError, ValueError, OverflowError):
        return default
    return i if -MAX_INT < i < MAX_INT else default


def _sizes(v: Any) -> tuple[tuple[int, ...], ...]:
    """Lists of dims as tuples (a dim that is no int is kept as it is: ``fr_match.numel`` does not count it)."""
    if type(v) is list and all(type(t) is list for t in v):
        out = tuple(map(tuple, v))  # what PyTorch writes
        try:
            hash(out)  # plain values only: it is compared and grouped by
            return out
        except TypeError:
            pass
    if not isinstance(v, (list, tuple)):
        return ()
    return tuple(tuple(_int(d, 0) for d in t) for t in v if isinstance(t, (list, tuple)))


def _dtypes(v: Any) -> tuple[str, ...]:
    if type(v) is list and all(type(d) is str for d in v):
        return tuple(v)  # strings: hashable
    if isinstance(v, str):
        return (v,) if v else ()
    if not isinstance(v, (list, tuple)):
        return ()
    return tuple(str(d) for d in v if d is not None and str(d))


@functools.lru_cache(maxsize=4096)
def _name(profiling_name: str) -> tuple[str, str | None, tuple[int, int] | None]:
    """``nccl:send 1->2`` -> (op, backend, (src, dst) group ranks); a job repeats few names."""
    backend, _, rest = profiling_name.partition(":") if ":" in profiling_name else ("", "", profiling_name)
    op, _, meta = rest.strip().partition(" ")
    m = _PEER_RE.match(meta.strip()) if meta else None
    peers = None
    if m:
        a, arrow, b = int(m.group(1)), m.group(2), int(m.group(3))
        peers = (a, b) if arrow == "->" else (b, a)
    return op, backend or None, peers


def read_members(ranks: Any) -> tuple[int, ...] | None:
    """``pg_config[..]["ranks"]``: the string PyTorch writes ("[0, 1]") or a list; None if unreadable."""
    if isinstance(ranks, str):
        found = _INT_RE.findall(ranks[:1_000_000])
        return tuple(sorted({int(x) for x in found if 0 <= int(x) < MAX_INT})) if found or "[" in ranks else None
    if isinstance(ranks, (list, tuple)):
        return tuple(sorted({_int(x) for x in ranks if 0 <= _int(x)}))
    return None


def read_configs(pg_config: Mapping[str, Any]) -> dict[str, tuple[str, tuple[int, ...] | None]]:
    """pg name -> (desc, members) of one dump's ``pg_config``."""
    out: dict[str, tuple[str, tuple[int, ...] | None]] = {}
    for name, cfg in pg_config.items():
        if isinstance(cfg, dict):
            out[str(cfg.get("name", name))] = (str(cfg.get("desc") or ""), read_members(cfg.get("ranks")))
    return out


def parse_entry(e: Mapping[str, Any]) -> Entry | None:
    name = e.get("profiling_name")
    if not isinstance(name, str) or not name or len(name) > 1000:
        return None
    op, backend, peers = _name(name)
    pg = e.get("process_group")
    pg_name = str(pg[0]) if isinstance(pg, (list, tuple)) and pg else (pg if isinstance(pg, str) else None)
    desc = str(pg[1]) if isinstance(pg, (list, tuple)) and len(pg) > 1 else ""
    pg_id = e.get("pg_id")
    if pg_name is None:
        if pg_id is None:
            return None
        pg_name = str(pg_id)
    timeout = e.get("timeout_ms")
    is_p2p = bool(e.get("is_p2p")) or op in P2P_OPS
    return Entry(
        record_id=_int(e.get("record_id")), pg=pg_name, desc=desc, pg_id=None if pg_id is None else str(pg_id),
        seq=_int(e.get("collective_seq_id")), p2p_seq=_int(e.get("p2p_seq_id")), is_p2p=is_p2p, op=op,
        backend=backend, peers=peers, input_sizes=_sizes(e.get("input_sizes")),
        input_dtypes=_dtypes(e.get("input_dtypes")), output_sizes=_sizes(e.get("output_sizes")),
        output_dtypes=_dtypes(e.get("output_dtypes")), state=str(e.get("state") or ""),
        retired=bool(e.get("retired")), t_created=_ns(e.get("time_created_ns")),
        t_started=_ns(e.get("time_discovered_started_ns")), t_completed=_ns(e.get("time_discovered_completed_ns")),
        timeout_s=float(timeout) / 1000 if isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
        and 0 < timeout < MAX_INT else None,
        frames=e.get("frames"), thread=e.get("thread_name"))


def records_timing(entries: Iterable[Entry], raw: Iterable[Mapping[str, Any]]) -> bool:
    """The dump records start times (TORCH_NCCL_ENABLE_TIMING): an entry started, or one with a start time
    or a duration."""
    return any(e.state == FrState.STARTED or e.t_started is not None for e in entries) or any(
        isinstance(r.get("duration_ms"), (int, float)) for r in raw)


def state_of(entry: Entry, timing: bool, completed_upto: int | None) -> FrState:
    """A call's state from its own (or its end) entry and the group's ``last_completed`` of the dump."""
    if entry.done or (not entry.is_p2p and completed_upto is not None and 0 <= entry.seq <= completed_upto):
        return FrState.COMPLETED
    if entry.state == FrState.STARTED:
        return FrState.STARTED
    return FrState.SCHEDULED if timing else FrState.ENQUEUED


def group_calls(rank: int, entries: list[Entry], key_of: Mapping[str, GroupKey], timing: bool,
                completed: Mapping[GroupKey, int | None]) -> tuple[dict[GroupKey, dict[int, Call]],
                                                                  dict[GroupKey, list[Call]]]:
    """The rank's collectives by (group, seq) and its sends / recvs by group, in record order."""
    coll: dict[GroupKey, dict[int, list[Entry]]] = {}
    p2p: dict[GroupKey, dict[int, list[Entry]]] = {}
    order: dict[GroupKey, list[int]] = {}  # p2p seqs in record order
    for e in entries:
        key = key_of.get(e.pg)
        if key is None:
            continue
        if e.is_p2p:
            by = p2p.setdefault(key, {})
            if e.p2p_seq not in by:
                order.setdefault(key, []).append(e.p2p_seq)
            by.setdefault(e.p2p_seq, []).append(e)
        else:
            coll.setdefault(key, {}).setdefault(e.seq, []).append(e)
    colls: dict[GroupKey, dict[int, Call]] = {}
    for key, by_seq in coll.items():
        done = completed.get(key)
        out = colls.setdefault(key, {})
        for seq, es in by_seq.items():
            end = es[-1]
            # one op; a coalesced group's members and its end entry; or entries sharing a seq with no end entry
            members = () if len(es) == 1 else tuple(es[:-1]) if end.is_marker else tuple(es)
            op = "coalesced" if members and not end.is_marker else end.op
            out[seq] = Call(rank, key, seq, op, end, members, state_of(end, timing, done))
    sends: dict[GroupKey, list[Call]] = {}
    for key, by_p2p in p2p.items():
        members_of = key[1]
        out_l = sends.setdefault(key, [])
        for pseq in order[key]:
            es = by_p2p[pseq]
            marker = es[-1] if es[-1].is_marker else None  # a batch's end entry carries its state
            state = state_of(marker, timing, None) if marker is not None else None
            for x in es:
                if x.is_marker or x.peers is None:
                    continue
                src, dst = (_global(members_of, x.peers[0]), _global(members_of, x.peers[1]))
                out_l.append(Call(rank, key, pseq, x.op, x, (), state or state_of(x, timing, None), src, dst))
    return colls, sends


def _global(members: tuple[int, ...], group_rank: int) -> int:
    """A group rank as the global rank (PyTorch numbers a group's ranks in its members' sorted order)."""
    return members[group_rank] if members and 0 <= group_rank < len(members) else group_rank
