"""A hang from Flight Recorder dumps alone: which operation is the cause, who is to blame, how sure.

Over ``FrJob.pending`` (per process group, and per sender -> receiver pair, the first operation
some member waits in and none completed):

- Who an operation waits on (``blockers``): the members that never issued it (``absent``: their
  records end before it; for a send/recv, the peer that never posted its side); else, where some
  member's kernel started, the members on which it is still ``scheduled`` (their GPU stream never
  reached it; only when their dump records start times); else the members whose dump is missing,
  when they are no more than those seen (their silence: a rank stuck hard cannot dump); else none:
  every member joined and it never completed (NCCL- or network-side), or, where members' records
  are missing (more dumps missing than seen, a ring buffer that no longer reaches it), not known.
- The cause among the pending operations: the first group that lost a rank. A blocker that itself
  waits in another pending operation is not lost, it is held there (a data-parallel all_reduce
  waits on ranks that wait in a tensor-parallel one; a pipeline stage waits on a stage that waits
  on the one before), so the wait-for chain is followed to an operation whose blockers wait
  nowhere; ties go to the operation entered first (its earliest creation time), then the group.
  Without blockers, the earliest all-joined operation none of whose members waits in an earlier
  one elsewhere. Every other pending operation is its echo.
- How sure (``certainty``): ``confirmed`` when a stall is on record (the logs' watchdog timeout,
  the hook's stall) or the dumps prove it (an entry its watchdog retired unfinished; an operation
  still pending longer than its own timeout by the latest time the dumps record); ``likely`` for
  dumps PyTorch wrote itself (it dumps on a timeout or an error) or of a writer not known;
  ``possible`` for dumps taken on request of a running job or at exit, where the others may only
  have been ahead for a moment. A missing dump as the culprit is at most ``likely``. Every member
  joined and nothing completed is a hang only when confirmed or in a dump PyTorch wrote itself (and
  every member's records reach the operation): a running job looks like that at any moment. An
  operation whose members seen are all in it, the others' records missing, is no finding of the dumps.
"""
from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..fr_model import DumpOrigin, FrJob, FrOp, FrRank, FrState
from ..model import Certainty


class Block(enum.StrEnum):
    """Why a pending operation waits."""

    NEVER_JOINED = "never_joined"  # members (or a send/recv's peer) that never issued it
    NOT_STARTED = "not_started"  # scheduled on them while started elsewhere
    NO_DUMP = "no_dump"  # members whose dump is missing
    ALL_JOINED = "all_joined"  # every member is in it; it never completed
    UNSEEN = "unseen"  # no blocker among the members seen, and some members' records are missing: not known


@dataclass(frozen=True, slots=True)
class FrHang:
    op: FrOp
    why: Block
    culprits: tuple[int, ...]
    waiting: tuple[int, ...]  # members in it, not done, not culprits
    echoes: tuple[FrOp, ...]  # the other pending operations, held behind it


def blockers(op: FrOp) -> tuple[tuple[int, ...], Block]:
    absent = tuple(p.rank for p in op.parts if p.state is FrState.ABSENT)
    if absent:
        return absent, Block.NEVER_JOINED
    if any(p.state is FrState.STARTED for p in op.parts):
        sched = tuple(p.rank for p in op.parts if p.state is FrState.SCHEDULED)
        if sched:
            return sched, Block.NOT_STARTED
    unseen = tuple(p.rank for p in op.parts if p.state is FrState.NO_DUMP)
    if unseen and len(unseen) <= len(op.parts) - len(unseen):
        return unseen, Block.NO_DUMP
    if unseen or any(p.state is FrState.UNKNOWN for p in op.parts):
        return (), Block.UNSEEN
    return (), Block.ALL_JOINED


def _entered(op: FrOp) -> float:
    return min((p.t_created for p in op.parts if p.t_created is not None and p.state.pending), default=float("inf"))


def _order(op: FrOp) -> tuple[float, tuple[int, int | str], int]:
    return _entered(op), ((0, int(op.pg)) if op.pg.isdigit() else (1, op.pg)), op.seq


def cause(pending: Sequence[FrOp]) -> FrHang | None:
    """The pending operation the others wait behind, its culprits and its echoes (None: nothing pending)."""
    ops = sorted((op for op in pending if any(p.state.pending for p in op.parts)), key=_order)
    if not ops:
        return None
    waits_in: dict[int, list[FrOp]] = {}
    for op in ops:
        for p in op.parts:
            if p.state.pending:
                waits_in.setdefault(p.rank, []).append(op)
    block = {id(op): blockers(op) for op in ops}

    def held(rank: int, op: FrOp) -> FrOp | None:
        """The other pending operation a blocker waits in (the earliest), if any."""
        return next((o for o in waits_in.get(rank, ()) if o is not op), None)

    chosen: FrOp | None = None
    roots = [op for op in ops if block[id(op)][0] and all(held(r, op) is None for r in block[id(op)][0])]
    if roots:
        chosen = roots[0]
    elif any(block[id(op)][0] for op in ops):
        chosen = _follow(next(op for op in ops if block[id(op)][0]), block, held)
    else:  # nobody to blame: the first operation every member is in, before one with members unseen
        free = [op for op in ops if not _behind_earlier(op, waits_in)] or ops
        chosen = next((op for op in free if block[id(op)][1] is Block.ALL_JOINED), free[0])
    culprits, why = block[id(chosen)]
    waiting = tuple(sorted(p.rank for p in chosen.parts if p.state.pending and p.rank not in culprits))
    return FrHang(chosen, why, tuple(sorted(culprits)), waiting, tuple(op for op in ops if op is not chosen))


def _follow(start: FrOp, block: dict[int, tuple[tuple[int, ...], Block]],
            held: Callable[[int, FrOp], FrOp | None]) -> FrOp:
    """From an operation whose blockers wait elsewhere, along the wait-for chain to the operation it ends
    in (its blockers wait nowhere, or every member joined it); the start again on a cycle."""
    seen = {id(start)}
    op = start
    while True:
        culprits = block[id(op)][0]
        if not culprits:
            return op
        nxt = next((o for r in culprits if (o := held(r, op)) is not None), None)
        if nxt is None or id(nxt) in seen:
            return op if nxt is None else start
        seen.add(id(nxt))
        op = nxt


def _behind_earlier(op: FrOp, waits_in: dict[int, list[FrOp]]) -> bool:
    """A member of ``op`` waits in another pending operation it entered before this one."""
    mine = _entered(op)
    return any(_entered(o) < mine for p in op.parts if p.state.pending for o in waits_in.get(p.rank, ()) if o is not op)


@dataclass(frozen=True, slots=True)
class Sureness:
    level: Certainty
    why: str
    stands: bool  # a hang at all: False for an all-joined operation in dumps that prove nothing


def certainty(job: FrJob, hang: FrHang, stalled: bool) -> Sureness:
    """How sure the hang is (see the module docstring); ``stalled``: a stall signal is on record."""
    ranks = [r for r in job.ranks if r.rank in {p.rank for p in hang.op.parts}] or list(job.ranks)
    proof = _proof(hang, job.ranks)
    if hang.why is Block.UNSEEN:  # the dumps cannot say who it waits on: other records must
        return Sureness(Certainty.POSSIBLE, "the members seen are all in it; the others' records are missing", False)
    if stalled or proof:
        why = proof or "a stall is on record (watchdog timeout, the hook's stall) and the dumps show where"
        if hang.why is Block.NO_DUMP:
            return Sureness(Certainty.LIKELY, f"{why}; the culprit left no dump: its silence names it", True)
        return Sureness(Certainty.CONFIRMED, why, True)
    origins = {r.origin for r in ranks}
    watchdog = DumpOrigin.WATCHDOG in origins
    if hang.why is Block.ALL_JOINED:
        return Sureness(Certainty.LIKELY, "PyTorch wrote these dumps itself (it dumps on a timeout or an error) and "
                        "every member is inside the operation", watchdog)
    if origins <= {DumpOrigin.REQUEST, DumpOrigin.EXIT}:
        return Sureness(Certainty.POSSIBLE, "the dumps were taken on request of a running job (or at its exit): the "
                        "others may have been ahead of it for a moment only", True)
    why = ("PyTorch wrote these dumps itself, which it does on a timeout or an error" if watchdog else
           "a folder of dumps (PyTorch writes them by itself on a timeout or an error); nothing in them says how "
           "long the others waited")
    return Sureness(Certainty.LIKELY, why, True)


def _proof(hang: FrHang, ranks: Iterable[FrRank]) -> str | None:
    """What in the dumps themselves shows the operation timed out, or None."""
    parts = [p for p in hang.op.parts if p.state.pending]
    if any(p.aborted for p in parts):
        return "its watchdog retired the operation unfinished (timed out or aborted)"
    now = max((r.last_t for r in ranks if r.last_t is not None), default=None)
    for p in parts:
        if now is not None and p.t_created is not None and p.timeout_s and now - p.t_created >= p.timeout_s:
            return (f"the dumps record {now - p.t_created:.0f} s after rank {p.rank} entered it, past its "
                    f"{p.timeout_s:.0f} s timeout")
    return None
