"""The live job's state, fed incrementally from the hook's records; judged by ``ncclscope.rules``.

Input records (``analyzer/sources/hook_jsonl.py``), per rank, in file order:
``start`` {world, host, pid, t}, ``coll`` {pg, seq, op, numel, dtype, where, t} (enqueued),
``done`` {pg, seq, t, dur_ms} (completed), ``hb`` {t, step, pgs: {pg: {enq, start, done}}},
``stack`` {reason, where, frames, t}, ``exit`` {code}.

The rules (stall time, hang, desync, crash and its root cause) are written out for users in
``rules/__init__`` and docs/live.md; this module only keeps what they need: per rank, its last
enqueued and completed sequence number per process group, when it last progressed, the gaps
between its completions, and the calls of the last ``COLL_WINDOW`` collectives per group. No I/O,
no clock.
"""
from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..nccl.ops import canonical_op
from ..rules import desync as desync_rule
from ..rules.hang import bounded_world, stuck_collective
from ..rules.stall import CAP_S, FLOOR_S, MAX_GAPS, MIN_GAPS, RHYTHM_K, STARTUP_S, p99, threshold

__all__ = ["CAP_S", "FLOOR_S", "MAX_GAPS", "MIN_GAPS", "RHYTHM_K", "STARTUP_S", "canonical_op", "p99", "threshold"]
COLL_WINDOW = 256  # collectives kept per process group behind the slowest rank
PROGRESS_KEPT = 4  # progress times kept per rank: the final pass judges the job as it was at the first exit


@dataclass(slots=True)
class CollSig:
    op: str
    numel: Any
    dtype: Any
    where: str | None
    t: float | None

    def key(self) -> tuple[str, str, str]:
        return (self.op, repr(self.numel), repr(self.dtype))


@dataclass(slots=True)
class RankState:
    rank: int
    enq: dict[str, int] = field(default_factory=dict)
    done: dict[str, int] = field(default_factory=dict)
    last_progress: float | None = None
    progress_ts: deque[float] = field(default_factory=lambda: deque(maxlen=PROGRESS_KEPT))  # the last few
    last_seen: float | None = None
    last_done_t: float | None = None
    step: int | None = None
    exit_code: int | None = None
    exit_t: float | None = None
    where: str | None = None  # where its last stack record says it is
    stack_t: float | None = None
    frames: list[str] = field(default_factory=list)
    host: str | None = None
    pid: int | None = None
    exception: str | None = None
    last_file: str | None = None  # where its last record is (set by the monitor)
    last_lineno: int = 0

    def last_line(self) -> str | None:
        """``ncclscope-rank3.jsonl:812``: the file and line of its last record."""
        return f"{self.last_file.rsplit('/', 1)[-1]}:{self.last_lineno}" if self.last_file else None


@dataclass(slots=True)
class JobState:
    world: int | None = None
    ranks: dict[int, RankState] = field(default_factory=dict)
    colls: dict[str, dict[int, dict[int, CollSig]]] = field(default_factory=dict)  # pg -> seq -> rank -> sig
    gaps: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_GAPS))
    gap_ts: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_GAPS))  # when each gap ended
    last_t: float | None = None  # newest record time seen
    gloo: bool = False  # a rank runs gloo: completed counts from its Flight Recorder can stay behind

    def rank(self, r: int) -> RankState:
        st = self.ranks.get(r)
        if st is None:
            st = self.ranks[r] = RankState(r)
        return st

    def all_ranks(self) -> list[int]:
        """The ranks seen, and those of the claimed world when what was seen bounds it."""
        return bounded_world(self.world, self.ranks)

    def exited(self) -> bool:
        """Every rank we know of (at least ``world`` of them) wrote its exit record."""
        ranks = self.all_ranks()
        return bool(ranks) and all(r in self.ranks and self.ranks[r].exit_code is not None for r in ranks)


@dataclass(frozen=True, slots=True)
class Hang:
    pg: str
    seq: int
    op: str | None
    culprits: tuple[int, ...]  # never joined; empty: every rank joined
    waiters: tuple[int, ...]
    age_s: float
    threshold_s: float
    silent: tuple[int, ...] = ()  # culprits without a heartbeat for longer than the threshold


@dataclass(frozen=True, slots=True)
class Desync:
    pg: str
    seq: int
    sigs: dict[int, tuple[str, str, str]]
    culprits: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Crash:
    rank: int | None
    code: int | None
    message: str


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and math.isfinite(v):
        return int(v)
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            return None
    return None


def fmt_where(v: Any) -> str | None:
    """A code location as ``file:line in func (code)`` from the hook's string or dict form."""
    if v is None:
        return None
    if isinstance(v, str):
        return v[:500] or None
    if isinstance(v, dict):
        f = v.get("file") or v.get("filename") or "?"
        s = f"{str(f).rsplit('/', 1)[-1]}:{v.get('line', v.get('lineno', '?'))}"
        if v.get("func") or v.get("name"):
            s += f" in {v.get('func') or v.get('name')}"
        if v.get("code"):
            s += f" ({str(v['code']).strip()})"
        return s[:500]
    return str(v)[:500]


def _progress(st: RankState, t: float | None) -> None:
    if t is not None and (st.last_progress is None or t > st.last_progress):
        st.last_progress = t
        st.progress_ts.append(t)


def _set_done(state: JobState, st: RankState, pg: str, seq: int, t: float | None) -> None:
    if seq <= st.done.get(pg, 0):
        return
    st.done[pg] = seq
    if seq > st.enq.get(pg, 0):
        st.enq[pg] = seq
    if t is not None:
        if st.last_done_t is not None and t > st.last_done_t:
            state.gaps.append(t - st.last_done_t)
            state.gap_ts.append(t)
        st.last_done_t = t if st.last_done_t is None else max(st.last_done_t, t)
    _progress(st, t)


def apply(state: JobState, rank: int, rtype: str, d: dict[str, Any]) -> tuple[str, int] | None:
    """Fold one hook record into ``state``. Returns (pg, seq) of a ``coll`` record (to check for desync)."""
    st = state.rank(rank)
    t = _num(d.get("t"))
    if t is not None:
        st.last_seen = t if st.last_seen is None else max(st.last_seen, t)
        state.last_t = t if state.last_t is None else max(state.last_t, t)
    if rtype == "start":
        world = _int(d.get("world"))
        if world and 0 < world <= 1 << 20:
            state.world = max(state.world or 0, world)
        st.host = str(d["host"]) if d.get("host") is not None else st.host
        st.pid = _int(d.get("pid")) or st.pid
        state.gloo = state.gloo or "gloo" in str(d.get("backend") or "")
        _progress(st, t)
    elif rtype == "coll":
        seq = _int(d.get("seq"))
        if seq is None:
            return None
        pg = str(d.get("pg", "0"))
        if seq > st.enq.get(pg, 0):
            st.enq[pg] = seq
            _progress(st, t)
        by_seq = state.colls.setdefault(pg, {})
        by_seq.setdefault(seq, {})[rank] = CollSig(canonical_op(str(d.get("op", ""))), d.get("numel"),
                                                   d.get("dtype"), fmt_where(d.get("where")), t)
        _prune(state, pg)
        return pg, seq
    elif rtype == "done":
        seq = _int(d.get("seq"))
        if seq is not None:
            _set_done(state, st, str(d.get("pg", "0")), seq, t)
    elif rtype == "hb":
        step = _int(d.get("step"))
        if step is not None and step != st.step:
            st.step = step
            _progress(st, t)
        pgs = d.get("pgs")
        if isinstance(pgs, dict):
            for pg, c in pgs.items():
                if not isinstance(c, dict):
                    continue
                enq, done = _int(c.get("enq")), _int(c.get("done"))
                if enq is not None and enq > st.enq.get(str(pg), 0):
                    st.enq[str(pg)] = enq
                    _progress(st, t)
                if done is not None:
                    _set_done(state, st, str(pg), done, t)
    elif rtype == "stack":
        w = fmt_where(d.get("where"))
        if w:
            st.where = w
        fr = d.get("frames")
        if isinstance(fr, list):
            st.frames = [fmt_where(x) or "" for x in fr[:50]]  # innermost first
        st.stack_t = t if t is not None else st.stack_t
    elif rtype == "exit":
        code = _int(d.get("code"))
        st.exit_code = code if code is not None else 0  # exited, code unknown: not judged a crash
        st.exit_t = t
        if d.get("exception"):
            st.exception = str(d["exception"])[:500]
    return None


def _prune(state: JobState, pg: str) -> None:
    by_seq = state.colls.get(pg)
    if not by_seq or len(by_seq) <= 2 * COLL_WINDOW:
        return
    low = min((s.done.get(pg, 0) for s in state.ranks.values() if pg in s.enq), default=0) - COLL_WINDOW
    for seq in [s for s in by_seq if s < low]:
        del by_seq[seq]
    if len(by_seq) > 4 * COLL_WINDOW:  # a rank that never reports done: keep the newest only
        for seq in sorted(by_seq)[: len(by_seq) - 2 * COLL_WINDOW]:
            del by_seq[seq]


def started(state: JobState) -> bool:
    """Every rank we know of has completed at least one collective."""
    ranks = state.all_ranks()
    return bool(ranks) and all(r in state.ranks and any(v > 0 for v in state.ranks[r].done.values())
                               for r in ranks)


def stale(state: JobState, now: float, silent_s: float) -> frozenset[int]:
    """Ranks whose records stopped coming: not exited and silent for longer than ``silent_s``, while
    another rank that has not exited was heard within it. Their records are the job's past: a frozen or
    dead process (or its host) could not write what it did last (the hook writes every 0.2 s; the done
    lines of GPU collectives come with the heartbeat), so their counts are lower bounds, not where they
    are. None when no rank is heard any more (a finished folder read later: every record is the past)."""
    alive = [(r, s.last_seen) for r, s in state.ranks.items() if s.exit_code is None]
    fresh = {r for r, t in alive if t is not None and now - t <= silent_s}
    if not fresh:
        return frozenset()
    return frozenset(r for r, _ in alive if r not in fresh)


def judged_at(state: JobState, now: float, ended: bool) -> float:
    """The time a job is judged at: ``now`` while it may still run; once it has ended (its launcher's end
    seen, the ranks writing no exit record: a SIGTERM or SIGKILL from outside), the time of its newest record,
    never later. A finished folder is then judged as the job was when it was last heard, whenever it is read:
    measured to the reading, the ranks the stop reached last looked alive and the others frozen (``stale``) for
    the few seconds when some were within the threshold, and the culprit changed with how late it was read."""
    if ended and state.last_t is not None:
        return min(now, state.last_t)
    return now


def pending(state: JobState, stale_ranks: frozenset[int] = frozenset()
            ) -> list[tuple[str, int, tuple[int, ...], tuple[int, ...]]]:
    """Per process group with work not completed everywhere: (pg, N, never joined, waiting in it).
    ``stale_ranks`` count as members never seen (``hang.stuck_collective``): N is where the ranks still
    heard are, and the stale ones are the culprits when none of those is behind."""
    out = []
    world = state.all_ranks()
    for pg in sorted(state.colls.keys() | {p for s in state.ranks.values() for p in s.enq},
                     key=lambda p: (p != "0", len(p), p)):
        members = world if pg == "0" else sorted(r for r, s in state.ranks.items() if pg in s.enq)
        if not members:
            continue
        seen = [r for r in members if r in state.ranks and r not in stale_ranks]
        enq = {r: (state.ranks[r].enq.get(pg) if r in seen else None) for r in members}
        done = {r: (state.ranks[r].done.get(pg) if r in seen else None) for r in members}
        st = stuck_collective(enq, done, completion_may_lag=state.gloo)
        if st is not None:
            out.append((pg, st.seq, st.never, st.waiting))
    return out


def judge_hang(state: JobState, now: float, stall_seconds: float | None = None,
               include_exited: bool = False) -> Hang | None:
    """A hang, when collective work is pending and no live rank has progressed for the threshold.
    ``include_exited``: judge the job as it was at ``now`` (the first exit), every rank counted."""
    live = [s for s in state.ranks.values() if s.exit_code is None or include_exited]
    if not live:
        return None
    gaps: Iterable[float] = state.gaps
    if include_exited:  # what the ranks wrote on their way out (a last heartbeat) came after ``now``
        last = max((t for s in live for t in s.progress_ts if t <= now), default=None)
        gaps = [g for g, t in zip(state.gaps, state.gap_ts) if t <= now]
    else:
        last = max((s.last_progress for s in live if s.last_progress is not None), default=None)
    if last is None:
        return None
    thr = threshold(gaps, stall_seconds, started(state))
    age = now - last
    if age <= thr:
        return None
    gone = stale(state, now, thr)
    cands = pending(state, gone)
    if not cands:
        return None  # every rank paused with nothing pending: a healthy pause

    def first_t(c: tuple[str, int, tuple[int, ...], tuple[int, ...]]) -> float:
        sigs = state.colls.get(c[0], {}).get(c[1], {})
        return min((s.t for s in sigs.values() if s.t is not None), default=math.inf)

    cands.sort(key=lambda c: (not c[2], first_t(c)))  # a never-joined story first, then the oldest
    pg, n, never, waiting = cands[0]
    silent = tuple(r for r in never if r in gone or r not in state.ranks or state.ranks[r].last_seen is None
                   or now - (state.ranks[r].last_seen or 0.0) > thr)
    return Hang(pg, n, op_of(state, pg, n), never, waiting, age, thr, silent)


def op_of(state: JobState, pg: str, seq: int) -> str | None:
    sigs = state.colls.get(pg, {}).get(seq, {})
    ops = sorted({s.op for s in sigs.values() if s.op})
    return ops[0] if len(ops) == 1 else ("/".join(ops) if ops else None)


def cleared(state: JobState, pg: str, seq: int) -> bool:
    """The stuck collective completed on every rank that is still alive (progress resumed)."""
    members = [r for r in (state.all_ranks() if pg == "0" else state.ranks) if r in state.ranks]
    live = [r for r in members if state.ranks[r].exit_code is None]
    return bool(live) and all(state.ranks[r].done.get(pg, 0) >= seq for r in live)


def check_desync(state: JobState, pg: str, seq: int) -> Desync | None:
    sigs = state.colls.get(pg, {}).get(seq, {})
    if len(sigs) < 2:
        return None
    keys = {r: s.key() for r, s in sigs.items()}
    if len(set(keys.values())) < 2:
        return None
    by_key: dict[tuple[str, str, str], list[int]] = {}
    for r, k in sorted(keys.items()):
        by_key.setdefault(k, []).append(r)
    sides = [desync_rule.Side(tuple(rs), k, _one_where([sigs[r].where for r in rs])) for k, rs in by_key.items()]
    culprits, _ = desync_rule.odd_ranks(sides, _calls_used(state, pg, seq, sides))
    return Desync(pg, seq, dict(sorted(keys.items())), culprits)


def desync_missing(state: JobState, pg: str, seq: int) -> tuple[int, ...]:
    """The members of ``pg`` whose call at ``seq`` has not been read yet and may still come: not exited,
    and not known (by a heartbeat's count) to have passed ``seq`` without its record. A mismatch is
    judged once these are in: a tie between the first two ranks read is often broken by the third."""
    sigs = state.colls.get(pg, {}).get(seq, {})
    members = state.all_ranks() if pg == "0" else [r for r, s in state.ranks.items() if pg in s.enq]
    out = []
    for r in members:
        rs = state.ranks.get(r)
        if r in sigs or (rs is not None and (rs.exit_code is not None or rs.enq.get(pg, 0) >= seq)):
            continue
        out.append(r)
    return tuple(out)


def _one_where(wheres: list[str | None]) -> str | None:
    return next((w for w in wheres if w), None)


def _calls_used(state: JobState, pg: str, seq: int, sides: list[desync_rule.Side]) -> dict[Any, frozenset[int]]:
    """For each call (``desync.call_of``) the ranks that made it at other sequence numbers still kept."""
    by_site = all(s.where for s in sides)
    used: dict[Any, set[int]] = {}
    for other, by_rank in state.colls.get(pg, {}).items():
        if other == seq:
            continue
        for r, sig in by_rank.items():
            call = ("where", sig.where) if by_site else ("sig", sig.key())
            used.setdefault(call, set()).add(r)
    return {k: frozenset(v) for k, v in used.items()}


def crash_of_exit(state: JobState, rank: int) -> Crash | None:
    st = state.ranks.get(rank)
    if st is None or st.exit_code in (None, 0):
        return None
    msg = f"rank {rank} exited with code {st.exit_code}"
    if st.exception:
        msg += f": {st.exception}"
    return Crash(rank, st.exit_code, msg)


def rhythm(state: JobState) -> dict[str, float | int | None]:
    """The numbers behind the threshold, for the console and the docs."""
    return {"gaps": len(state.gaps), "p99_gap_s": p99(state.gaps)}
