"""Pure judgement of a live job from the hook's records: hang, desync, crash. No I/O, no clock.

Input records (``analyzer/sources/hook_jsonl.py``), per rank, in file order:
``start`` {world, host, pid, t}, ``coll`` {pg, seq, op, numel, dtype, where, t} (enqueued),
``done`` {pg, seq, t, dur_ms} (completed), ``hb`` {t, step, pgs: {pg: {enq, start, done}}},
``stack`` {reason, where, frames, t}, ``exit`` {code}.

The rule (documented for users in docs/live.md):

- Progress of a rank: its enqueued or completed sequence number of any process group moved
  (or its ``step`` did), at the record's time ``t``.
- The rhythm: gaps between consecutive completions of each rank, pooled, last 512.
- Threshold: ``stall_seconds`` when given; otherwise ``max(5 s, 3 x p99(gaps))``, capped at
  300 s. Start-up: until every rank has completed a collective it is 30 s; while fewer than 20
  gaps are known the largest gap stands in for the p99 (capped at 30 s).
- Hang: in some process group, the first collective N not completed on every rank
  (``N = min(done) + 1``) has been enqueued by at least one rank, and no live rank has made
  progress for longer than the threshold. Ranks whose last enqueued < N never joined: they
  are the culprits. When every rank joined, the culprit is unknown (NCCL or network side).
- A pause where every rank stops with nothing pending (checkpoint, evaluation, data loading on
  all ranks) is never a hang, however long: nobody waits for anybody.
- Desync: two ranks' ``coll`` records at the same (pg, seq) differ in op, numel or dtype.
  Culprits: the ranks outside the majority; on a tie, the ranks whose call (op, numel, dtype)
  the job never made before at any sequence number; else none.
- Crash: a rank's ``exit`` record with a non-zero code.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ..sources.hook_jsonl import canonical_op

FLOOR_S = 5.0
RHYTHM_K = 3.0
CAP_S = 300.0
STARTUP_S = 30.0
MIN_GAPS = 20
MAX_GAPS = 512
COLL_WINDOW = 256  # collectives kept per process group behind the slowest rank


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
    last_seen: float | None = None
    last_done_t: float | None = None
    step: int | None = None
    exit_code: int | None = None
    where: str | None = None  # where its last stack record says it is
    stack_t: float | None = None
    frames: list[str] = field(default_factory=list)
    host: str | None = None
    pid: int | None = None
    exception: str | None = None


@dataclass(slots=True)
class JobState:
    world: int | None = None
    ranks: dict[int, RankState] = field(default_factory=dict)
    colls: dict[str, dict[int, dict[int, CollSig]]] = field(default_factory=dict)  # pg -> seq -> rank -> sig
    gaps: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_GAPS))
    last_t: float | None = None  # newest record time seen

    def rank(self, r: int) -> RankState:
        st = self.ranks.get(r)
        if st is None:
            st = self.ranks[r] = RankState(r)
        return st

    def all_ranks(self) -> list[int]:
        known = set(self.ranks)
        if self.world:
            known |= set(range(self.world))
        return sorted(known)

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


def _set_done(state: JobState, st: RankState, pg: str, seq: int, t: float | None) -> None:
    if seq <= st.done.get(pg, 0):
        return
    st.done[pg] = seq
    if seq > st.enq.get(pg, 0):
        st.enq[pg] = seq
    if t is not None:
        if st.last_done_t is not None and t > st.last_done_t:
            state.gaps.append(t - st.last_done_t)
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


def p99(values: list[float] | deque[float]) -> float | None:
    v = sorted(values)
    if not v:
        return None
    return v[min(len(v) - 1, math.ceil(0.99 * len(v)) - 1)]


def threshold(gaps: list[float] | deque[float], stall_seconds: float | None = None, started: bool = True) -> float:
    """Seconds without progress, with collective work pending, that make a hang.

    ``started``: every rank has completed a collective (before that, ranks still load and connect).
    """
    if stall_seconds is not None:
        return float(stall_seconds)
    if not started:
        return STARTUP_S
    if len(gaps) < MIN_GAPS:  # a young job: its slowest gap so far stands in for the p99
        return min(STARTUP_S, max(FLOOR_S, RHYTHM_K * max(gaps, default=0.0)))
    return min(CAP_S, max(FLOOR_S, RHYTHM_K * (p99(gaps) or 0.0)))


def started(state: JobState) -> bool:
    """Every rank we know of has completed at least one collective."""
    ranks = state.all_ranks()
    return bool(ranks) and all(r in state.ranks and any(v > 0 for v in state.ranks[r].done.values())
                               for r in ranks)


def pending(state: JobState) -> list[tuple[str, int, tuple[int, ...], tuple[int, ...]]]:
    """Per process group with work not completed everywhere: (pg, N, never joined, waiting in it)."""
    out = []
    world = state.all_ranks()
    for pg in sorted(state.colls.keys() | {p for s in state.ranks.values() for p in s.enq},
                     key=lambda p: (p != "0", len(p), p)):
        members = world if pg == "0" else sorted(r for r, s in state.ranks.items() if pg in s.enq)
        if not members:
            continue
        max_enq = max(state.ranks[r].enq.get(pg, 0) if r in state.ranks else 0 for r in members)
        done = {r: (state.ranks[r].done.get(pg, 0) if r in state.ranks else 0) for r in members}
        n = min(done.values()) + 1
        if n > max_enq:
            continue
        never = tuple(r for r in members if (state.ranks[r].enq.get(pg, 0) if r in state.ranks else 0) < n)
        waiting = tuple(r for r in members if r not in never and done[r] < n)
        out.append((pg, n, never, waiting))
    return out


def judge_hang(state: JobState, now: float, stall_seconds: float | None = None) -> Hang | None:
    """A hang, when collective work is pending and no live rank has progressed for the threshold."""
    live = [s for s in state.ranks.values() if s.exit_code is None]
    if not live:
        return None
    last = max((s.last_progress for s in live if s.last_progress is not None), default=None)
    if last is None:
        return None
    thr = threshold(state.gaps, stall_seconds, started(state))
    age = now - last
    if age <= thr:
        return None
    cands = pending(state)
    if not cands:
        return None  # every rank paused with nothing pending: a healthy pause

    def first_t(c: tuple[str, int, tuple[int, ...], tuple[int, ...]]) -> float:
        sigs = state.colls.get(c[0], {}).get(c[1], {})
        return min((s.t for s in sigs.values() if s.t is not None), default=math.inf)

    cands.sort(key=lambda c: (not c[2], first_t(c)))  # a never-joined story first, then the oldest
    pg, n, never, waiting = cands[0]
    silent = tuple(r for r in never if r not in state.ranks or state.ranks[r].last_seen is None
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
    distinct = set(keys.values())
    if len(distinct) < 2:
        return None
    counts: dict[tuple[str, str, str], int] = {}
    for k in keys.values():
        counts[k] = counts.get(k, 0) + 1
    best = sorted(counts.values(), reverse=True)
    culprits: tuple[int, ...] = ()
    if len(best) < 2 or best[0] > best[1]:
        major = max(counts, key=lambda k: counts[k])
        culprits = tuple(sorted(r for r, k in keys.items() if k != major))
    else:  # a tie: the call this job never made before is the odd one out
        seen = {k: 0 for k in counts}
        for other, by_rank in state.colls.get(pg, {}).items():
            if other != seq:
                for sig in by_rank.values():
                    if sig.key() in seen:
                        seen[sig.key()] += 1
        novel = [k for k, n in seen.items() if n == 0]
        if len(novel) == 1 and len(seen) > 1 and all(n > 0 for k, n in seen.items() if k != novel[0]):
            culprits = tuple(sorted(r for r, k in keys.items() if k == novel[0]))
    return Desync(pg, seq, dict(sorted(keys.items())), culprits)


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
