"""Who is the odd one out of a mismatched collective."""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .hang import stuck_collective


@dataclass(frozen=True, slots=True)
class Side:
    """The ranks that made one call at the mismatched (pg, seq)."""

    ranks: tuple[int, ...]
    sig: Hashable  # (op, count, dtype) in the caller's own spelling
    where: str | None = None  # call site, when known


def call_of(side: Side, sides: list[Side]) -> Hashable:
    """What identifies a side's call: its call site when every side has one, else its signature."""
    return ("where", side.where) if all(s.where for s in sides) else ("sig", side.sig)


def odd_ranks(sides: list[Side], used_by: Mapping[Hashable, frozenset[int]]) -> tuple[tuple[int, ...], str | None]:
    """(culprits, how they were found: "majority" | "novel call" | None).

    ``used_by``: for each call (``call_of``), the ranks that made it at other sequence numbers of the
    run (or of the part of it still known)."""
    n = sum(len(s.ranks) for s in sides)
    big = sorted(sides, key=lambda s: -len(s.ranks))
    if n > 2 and len(big) > 1 and len(big[0].ranks) > n / 2:
        return tuple(sorted(r for s in big[1:] for r in s.ranks)), "majority"
    if len(sides) != 2:
        return (), None

    def made_by_others(s: Side) -> bool:
        return bool(used_by.get(call_of(s, sides), frozenset()) - frozenset(s.ranks))

    novel = [s for s in sides if not made_by_others(s)]
    if len(novel) == 1:
        return tuple(sorted(novel[0].ranks)), "novel call"
    return (), None


def mismatch_collective(enqueued: Mapping[str, Mapping[int, int | None]],
                        completed: Mapping[str, Mapping[int, int | None]],
                        rank: int | None = None) -> tuple[str, int] | None:
    """(pg, seq) of the collective a backend's mismatch report (gloo's abort, NCCL's check) was made in,
    from each member's last enqueued / completed per process group, the default group first. With the
    reporting ``rank`` known, in the first group it has records of: the one after the last any member
    completed (a collective completed anywhere was joined by every member, so the reporting rank got
    past it even where its own records, cut short by the abort, end earlier). Else the first collective not
    completed on every member (``hang.stuck_collective``); with nothing pending (the records of the
    mismatched call had not reached disk when the backend aborted the process), the one after the last
    every member completed. None when nothing is known."""
    pgs = sorted(enqueued, key=lambda p: (p != "0", len(p), p))
    if rank is not None:
        for pg in pgs:
            if enqueued[pg].get(rank) is not None:
                return pg, max((v or 0 for v in completed.get(pg, {}).values()), default=0) + 1
    for pg in pgs:
        st = stuck_collective(enqueued[pg], completed.get(pg, {}))
        if st is not None:
            return pg, st.seq
    for pg in pgs:
        done = [completed.get(pg, {}).get(r) or 0 for r, e in enqueued[pg].items() if e is not None]
        if done:
            return pg, min(done) + 1
    return None


def last_call_culprits(last: Mapping[int, tuple[Hashable, str | None]],
                       used_by: Mapping[Hashable, frozenset[int]]) -> tuple[tuple[int, ...], str | None]:
    """``odd_ranks`` over each rank's last recorded collective (``last``: rank -> (signature, call
    site)): who a backend's mismatch report points at when the records of the mismatched call itself
    are missing on some ranks (the process aborted before they reached disk). One call: nobody."""
    by: dict[tuple[Hashable, str | None], list[int]] = {}
    for r, call in sorted(last.items()):
        by.setdefault(call, []).append(r)
    if len(by) < 2:
        return (), None
    return odd_ranks([Side(tuple(rs), sig, where) for (sig, where), rs in by.items()], used_by)


# PyTorch's DETAIL check (TORCH_DISTRIBUTED_DEBUG=DETAIL): "Rank A is running collective:
# CollectiveFingerPrint(SequenceNumber=N, OpType=X, TensorShape=[..], TensorDtypes=T, ...), but Rank B is
# running collective: CollectiveFingerPrint(...)". The peer's print may be cut short ("SequenceNumber=0OpType=REDUCE").
FP_SEQ_RE = re.compile(r"SequenceNumber=(\d{1,19})")
FP_OP_RE = re.compile(r"OpType=([A-Za-z_]{1,40})")
FP_SHAPE_RE = re.compile(r"TensorShape=\[([^\]]{0,400})\]")
FP_DTYPE_RE = re.compile(r"TensorDtypes=([A-Za-z0-9_]{1,40})")


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """One rank's collective as PyTorch's DETAIL check printed it (fields it did not print are None)."""

    seq: int | None
    op: str | None
    shape: str | None
    dtype: str | None


def fingerprint(text: str) -> Fingerprint:
    seq, op = FP_SEQ_RE.search(text), FP_OP_RE.search(text)
    shape, dtype = FP_SHAPE_RE.search(text), FP_DTYPE_RE.search(text)
    return Fingerprint(int(seq.group(1)) if seq else None, op.group(1).upper() if op else None,
                       shape.group(1).replace(" ", "") if shape else None, dtype.group(1) if dtype else None)


@dataclass(frozen=True, slots=True)
class DetailVerdict:
    """What the DETAIL reports say together: the ranks out of step (a majority of ranks against them, else
    nobody: two ranks that disagree do not say which one is wrong, nor do two sides that each report the same call
    with another size), the sides, and the mismatched call's
    sequence number (the majority's, else the reporting ranks' own when they agree)."""

    culprits: tuple[int, ...]
    how: str | None
    sides: tuple[Side, ...]
    seq: int | None
    op: str | None  # the mismatched call's op, on the same terms as ``seq``


def detail_verdict(reports: Iterable[tuple[Sequence[int], Sequence[str]]]) -> DetailVerdict | None:
    """``reports``: (ranks, fingerprints) of each ``Detected mismatch between collectives`` line, the
    reporting rank and its fingerprint first, the peer it compared with second. A rank's own print of its
    fingerprint stands over a peer's print of it. None when no report names two ranks."""
    own: dict[int, Fingerprint] = {}
    told: dict[int, Fingerprint] = {}
    first: Fingerprint | None = None
    for ranks, fps in reports:
        if len(ranks) < 2 or len(fps) < 2:
            continue
        mine = fingerprint(fps[0])
        own.setdefault(ranks[0], mine)
        told.setdefault(ranks[1], fingerprint(fps[1]))
        first = mine if first is None else first
    of = {**told, **own}
    if len(of) < 2 or first is None:
        return None
    by: dict[Fingerprint, list[int]] = {}
    for r in sorted(of):
        by.setdefault(of[r], []).append(r)
    sides = [Side(tuple(rs), (fp.op, fp.shape, fp.dtype, fp.seq)) for fp, rs in by.items()]
    culprits, how = odd_ranks(sides, {})
    if how == "majority" and _one_call_each_side_reported(by.values(), own):
        culprits, how = (), None
    big = max(by.items(), key=lambda kv: len(kv[1]))
    at = big[0] if how == "majority" else first
    return DetailVerdict(culprits, how, tuple(sorted(sides, key=lambda s: -len(s.ranks))), at.seq, at.op)


def _one_call_each_side_reported(sides: Iterable[list[int]], own: Mapping[int, Fingerprint]) -> bool:
    """Every side printed its own fingerprint (a rank of each side reported the mismatch) and those prints are one
    call: the same op at the same SequenceNumber, another shape or dtype. The ranks made the same call with sizes
    that differ by rank (data or rank-dependent lengths) and each side sees the other as the odd one: the reports
    show two sides, not which is wrong, however many ranks are on each. A side that never reported, or one at
    another op or number (a rank elsewhere in the program), stays to the majority rule."""
    calls = set()
    for ranks in sides:
        mine = [own[r] for r in ranks if r in own]
        if not mine:
            return False
        calls |= {(fp.op, fp.seq) for fp in mine}
    return len(calls) == 1 and None not in next(iter(calls))


# ops whose element count is the same on every rank of a well-formed call (all-to-all, gather and scatter
# may differ by rank); point-to-point ops pair a send with a recv at one number and coalesced groups are
# spelled differently by release, neither compared (names as ``nccl.ops.canonical_op`` spells them)
SAME_COUNT_OPS = frozenset({"allreduce", "broadcast", "reduce", "allgather", "reducescatter"})
# an all-to-all's per-rank totals may differ (uneven splits: a MoE's token routing gives nearly every rank its own
# count, a last shard is smaller); two totals only, a strict majority's and an empty one, is one call made two ways
ALL_TO_ALL_OPS = frozenset({"alltoall", "alltoall_base", "alltoallv"})
P2P_OPS = frozenset({"send", "recv", "sendrecv"})


@dataclass(frozen=True, slots=True)
class TimedOut:
    """One rank's watchdog timeout: ``WorkNCCL(SeqNum=seq, OpType=op, NumelIn=numel, ...)`` of group ``pg``."""

    rank: int
    pg: str
    seq: int
    op: str
    numel: int | None = None


def _two_sizes_one_major(sizes: list[int | None]) -> bool:
    """Three or more ranks' totals of one all-to-all taking two values, one held by more than half of them and the
    other empty (ranks with nothing to send or receive in an exchange the others wait in; an uneven last shard, a
    smaller total, is what an all-to-all allows)."""
    counts = Counter(sizes)
    if len(sizes) < 3 or len(counts) != 2:
        return False
    (major, n), (minor, _) = counts.most_common()
    return n > len(sizes) / 2 and minor == 0 and major not in (0, None)


def watchdog_mismatch(timeouts: Iterable[TimedOut]) -> tuple[str, int, tuple[Side, ...]] | None:
    """(pg, seq, sides) of the earliest collective at which the ranks' watchdog timeouts name different
    calls: another op, or, for an op whose count is the same on every rank, another NumelIn (for an all-to-all,
    an empty total beside a strict majority's: ``_two_sizes_one_major``). The ranks
    called different collectives at that number (a desync), each waiting for peers that never made its call.
    A rank's first timeout of a (pg, seq) stands; point-to-point ops are never compared. None when every
    timeout agrees."""
    calls: dict[tuple[str, int], dict[int, tuple[str, int | None]]] = {}
    for t in timeouts:
        calls.setdefault((t.pg, t.seq), {}).setdefault(t.rank, (t.op, t.numel))
    for (pg, seq), of in sorted(calls.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if len(of) < 2 or any(op in P2P_OPS or "coalesced" in op for op, _ in of.values()):
            continue
        ops = {op for op, _ in of.values()}
        sizes = [n for _, n in of.values()]
        sized = len(ops) == 1 and None not in sizes and (ops <= SAME_COUNT_OPS or (ops <= ALL_TO_ALL_OPS
                                                                                   and _two_sizes_one_major(sizes)))
        by: dict[tuple[str, int | None], list[int]] = {}
        for r in sorted(of):
            op, n = of[r]
            by.setdefault((op, n if sized else None), []).append(r)
        if len(by) > 1:
            sides = sorted((Side(tuple(rs), (op, "?" if n is None else str(n), None)) for (op, n), rs in by.items()),
                           key=lambda s: (-len(s.ranks), s.ranks))
            return pg, seq, tuple(sides)
    return None
