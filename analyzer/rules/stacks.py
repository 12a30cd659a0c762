"""Where the ranks' stacks are (py-spy, faulthandler dumps): who a hang waits for, or which ranks called another
collective.

Each rank's Python main thread is either inside a torch.distributed call (``all_reduce``, ``reduce_scatter``,
``barrier``...) or outside any. Taken together, at one moment of a stalled job:

- Ranks inside two or more different collectives: a desync. The odd ranks are those outside a strict majority
  (``desync.odd_ranks``); with two sides of one size none is named.
- Every rank that is inside a collective is inside the same one, and at least one rank is outside any: a hang whose
  culprits are the ranks outside (the others wait in the collective for them, where they will never come or not yet).
- Every rank inside the same collective: they all joined; the stall is NCCL's or the network's (nothing here to say).
- No rank inside any collective, three or more dumped, all but one standing at the same line of the program and one
  elsewhere (``APART``): ranks of one program in lockstep stop together at the point where they wait for each other
  (the launch or the sync after a collective); the one that stands elsewhere left their path (it skipped the
  collective and ran ahead, or never reached it): a hang whose culprit is that rank. Two ranks apart name none.
- Ranks inside one collective and the others blocked on their GPU stream (``torch.cuda`` synchronize under a send or
  another collective's wait) with none outside: every rank dumped is held by communication (a cycle between groups, a
  send nobody receives), a hang with no rank to blame.

Ranks whose dumps are not in the input are not judged. One dump alone says nothing of the others: where its main
thread waits inside a collective and the job did not end, the job stood in that collective when someone looked (a
hang, possible, no rank to blame: ``lone_dump``).

The program's own prints do the same where it says who waits (``waits``): ranks whose last print is that they wait
(``rank 2 waiting for barrier``), with nothing failed after, wait for the rank a print names (``waiting for rank 3``),
else for the ranks of the world that never said so: a hang whose culprits are those (one rank alone in a barrier the
others never reached or left, a rank that never came). Possible, not confirmed: a print is not a stack.

A user's interrupt (Ctrl-C) makes every process print where its main thread was (``KeyboardInterrupt`` tracebacks):
a stack of each, taken at one moment of a job that had stopped moving. Where those stacks stand in two different
collectives (one process in ``barrier``, the others in the backward pass, where DDP's gradient all-reduce waits), the
ranks had called different collectives: a desync (``interrupted``), possible, no rank named where the tracebacks name
none. Other readings of them are the stopped job's own story.

Every rank of the world whose last print is that it waits inside a collective or on the GPU's stream (``rank 1
waiting on cudaStreamSynchronize``, ``rank 0: launching ncclAllGather`` then ``waiting for stream``), none naming
another rank and nothing after (``all_wait``): they all joined and none came out, a hang of the collective itself
(the path between the GPUs, the network, the GPUs), no rank to blame. Likely: every rank says so.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..model import Verdict
from ..sources.stack_dump import GPU_WAIT
from .desync import Side, odd_ranks


@dataclass(frozen=True, slots=True)
class Position:
    """One rank's main thread in a dump: the collective it is in (NCCL's name, ``allreduce``), or None, and its
    innermost frame of the program."""

    rank: int
    collective: str | None
    where: str


@dataclass(frozen=True, slots=True)
class StackReading:
    verdict: Verdict
    culprits: tuple[int, ...]
    waiting: tuple[int, ...]  # ranks inside the collective the others never reached (a hang); all ranks (a desync)
    op: str | None  # the collective the waiting ranks are in (a hang)
    sides: tuple[tuple[str, tuple[int, ...]], ...]  # (collective, ranks) of each side (a desync)
    why: str


def read_stacks(positions: Iterable[Position]) -> StackReading | None:
    """The reading of the ranks' positions (the last dump of each rank), or None when they show no incident."""
    by_rank = {p.rank: p for p in positions}
    if len(by_rank) < 2:
        return None
    inside: dict[str, list[int]] = {}
    for p in by_rank.values():
        if p.collective is not None:
            inside.setdefault(p.collective, []).append(p.rank)
    outside = sorted(r for r, p in by_rank.items() if p.collective is None)
    gpu = sorted(inside.pop(GPU_WAIT, []))
    if len(inside) >= 2:
        sides = [Side(tuple(sorted(rs)), op) for op, rs in sorted(inside.items())]
        culprits, _ = odd_ranks(sides, {})
        told = "; ".join(f"rank{'s' if len(s.ranks) > 1 else ''} {', '.join(map(str, s.ranks))} in {s.sig}" for s in sides)
        return StackReading(Verdict.DESYNC, culprits, tuple(sorted(r for s in sides for r in s.ranks)), None,
                            tuple((str(s.sig), s.ranks) for s in sides),
                            f"the ranks stand in different collectives at once ({told})")
    if gpu and not outside and len(inside) == 1:
        op, rs = next(iter(inside.items()))
        return StackReading(Verdict.HANG, (), tuple(sorted([*rs, *gpu])), op, (),
                            f"rank{'s' if len(rs) > 1 else ''} {', '.join(map(str, sorted(rs)))} "
                            f"wait{'' if len(rs) > 1 else 's'} in {op}; rank{'s' if len(gpu) > 1 else ''} {', '.join(map(str, gpu))} "
                            f"{'are' if len(gpu) > 1 else 'is'} blocked on the GPU stream (the work it queued, a "
                            "collective or a send, never finishes): every rank dumped is held by communication")
    if not inside and not gpu:
        return _apart(by_rank)
    outside = sorted([*outside, *gpu])  # beside ranks in two collectives, or alone: a wait of no collective
    if len(inside) == 1 and outside:
        op, waiting = next(iter(inside.items()))
        where = "; ".join(f"rank {r} at {by_rank[r].where}" for r in outside[:4])
        who = f"rank{'s' if len(outside) > 1 else ''} {', '.join(map(str, outside))}"
        return StackReading(Verdict.HANG, tuple(outside), tuple(sorted(waiting)), op, (),
                            f"rank{'s' if len(waiting) > 1 else ''} {', '.join(map(str, sorted(waiting)))} wait in {op}; "
                            f"{who} {'are' if len(outside) > 1 else 'is'} outside any collective ({where})")
    return None


def lone_dump(collectives: Iterable[str | None]) -> StackReading | None:
    """``collectives``: what each dumped process's main thread is in, where the dumps are of one rank at most (the
    others not in the input): every one inside a collective (not only on its GPU stream) is a job that stood in a
    collective when someone looked, in a job that did not end (the caller's to check). A hang, possible, no culprit:
    one dump says nothing of the other ranks."""
    cs = list(collectives)
    if not cs or any(c is None or c == GPU_WAIT for c in cs) or len(set(cs)) != 1:
        return None
    op = cs[0]
    return StackReading(Verdict.HANG, (), (), op, (),
                        f"the process dumped waits inside {op}{' (every one of the ' + str(len(cs)) + ' dumps)' if len(cs) > 1 else ''}; "
                        "the other ranks' stacks are not in the input")


APART = "the collective at the line where the others stand"  # the op of a reading of ranks apart (``_apart``)


def _apart(by_rank: Mapping[int, Position]) -> StackReading | None:
    """Ranks none of which is in a collective: all but one at the same innermost line, that one elsewhere."""
    if len(by_rank) < 3:
        return None
    at: dict[str, list[int]] = {}
    for r, p in by_rank.items():
        at.setdefault(p.where, []).append(r)
    if len(at) != 2 or "?" in at:
        return None
    (common, together), (_, odd) = sorted(at.items(), key=lambda kv: -len(kv[1]))
    if len(odd) != 1:
        return None
    return StackReading(Verdict.HANG, tuple(odd), tuple(sorted(together)), APART, (),
                        f"ranks {', '.join(map(str, sorted(together)))} stand at the same line ({common}); rank {odd[0]} "
                        f"stands elsewhere ({by_rank[odd[0]].where}), off the path the others wait on")


def waits(waiting: dict[int, int | None], ranks: Iterable[int]) -> StackReading | None:
    """``waiting``: rank -> the rank its last wait print names (None: none named), for the ranks whose last print is a
    wait; ``ranks``: every rank of the world the input knows. The ranks the prints name, else the ranks that never said
    they wait, are the culprits; None when nobody waits, or every rank does and none names another."""
    if not waiting:
        return None
    named = sorted({on for on in waiting.values() if on is not None and on not in waiting})
    absent = sorted(set(ranks) - set(waiting))
    culprits = named or absent
    if not culprits:
        return None
    who = ", ".join(map(str, sorted(waiting)))
    return StackReading(Verdict.HANG, tuple(culprits), tuple(sorted(waiting)), None, (),
                        f"rank{'s' if len(waiting) > 1 else ''} {who} printed that {'they wait' if len(waiting) > 1 else 'it waits'} "
                        f"and nothing after; rank{'s' if len(culprits) > 1 else ''} {', '.join(map(str, culprits))} "
                        f"{'are' if len(culprits) > 1 else 'is'} what {'they wait' if len(waiting) > 1 else 'it waits'} for "
                        f"({'named by the prints' if named else 'never said to wait'})")


# what a print says a rank waits in: a collective by its NCCL, torch or framework name, the GPU's stream, a device sync
IN_COLLECTIVE_RE = re.compile(
    r"(?i)nccl[A-Z]\w{2,30}|\b(?:all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|broadcast|barrier|psum)\b"
    r"|\bstream\b|cudaStreamSynchronize|cudaDeviceSynchronize|\.synchronize\(|\bcollective\b"
    r"|\b(?:sending|receiving) (?:to|from)\b|\btearing down\b|\bdestroy(?:ing)?[ _]process[ _]group"
    r"|common/operations\.cc:\d{1,6}\] \[\d{1,7}\]: (?:Enqueued|Performing) ")  # Horovod's trace of an operation


def all_wait(waiting: Mapping[int, str], ranks: Iterable[int]) -> StackReading | None:
    """``waiting``: rank -> the text of its last print, for the ranks whose last print is a wait naming no other rank;
    ``ranks``: every rank of the world the input knows. Every one of them waits, each inside a collective or on its
    stream: a hang with no culprit; else None."""
    world = set(ranks)
    if len(world) < 2 or set(waiting) != world or not all(IN_COLLECTIVE_RE.search(t) for t in waiting.values()):
        return None
    who = ", ".join(map(str, sorted(world)))
    return StackReading(Verdict.HANG, (), tuple(sorted(world)), None, (),
                        f"every rank ({who}) printed that it waits in a collective or on its GPU stream and nothing "
                        "after: they all joined and none came out")


# the backward pass, as a place a stack stands: a distributed job's backward waits there on its gradients' collectives
# (DDP's bucketed all-reduce, FSDP's reduce-scatter), so it is a collective of its own for ``interrupted``
BACKWARD = "the backward pass (its gradients' all-reduce)"
BACKWARD_FRAMES = (("run_backward", "autograd"), ("backward", "torch/autograd/"), ("backward", "torch/_tensor.py"))


def site_of(frames: Iterable[tuple[str, str, int]], collective: str | None) -> str | None:
    """Where an interrupted main thread stood: its torch.distributed call (``collective``, from the same frames), else
    the backward pass when its innermost torch frames are autograd's, else None."""
    if collective is not None:
        return collective
    for func, file, _ in frames:
        if any(func == f and w in file for f, w in BACKWARD_FRAMES):
            return BACKWARD
        if "/torch/" not in file:
            return None  # the program's own frame before any of autograd's: not in the backward pass
    return None


def interrupted(sites: Iterable[str | None], ranks: Iterable[int | None]) -> StackReading | None:
    """The places the interrupted processes stood (``site_of`` of each ``KeyboardInterrupt`` traceback, with the rank
    each names, or None): two or more, at least one inside a torch.distributed call, and two different collectives
    among them (the backward pass counted as one): a desync, possible. The odd ranks are named only where every
    traceback names its rank; None otherwise."""
    ss, rs = list(sites), list(ranks)
    inside = [s for s in ss if s is not None]
    if len(ss) < 2 or len(set(inside)) < 2 or all(s in (BACKWARD, GPU_WAIT) for s in inside):
        return None
    known = all(r is not None for r in rs) and len(set(rs)) == len(rs)
    ids = [r if known and r is not None else i for i, r in enumerate(rs)]
    reading = read_stacks(Position(i, s, "?") for i, s in zip(ids, ss))
    if reading is None or reading.verdict is not Verdict.DESYNC:
        return None
    if known:
        return reading
    counts = {op: len(r) for op, r in reading.sides}
    told = "; ".join(f"{n} process{'es' if n > 1 else ''} in {op}" for op, n in sorted(counts.items()))
    return StackReading(Verdict.DESYNC, (), (), None, tuple((op, ()) for op in sorted(counts)),
                        f"the processes stood in different collectives when interrupted ({told})")


def horovod_stalled(ops: Iterable[tuple[str, Iterable[int], bool]], world: Iterable[int]) -> StackReading | None:
    """Horovod's stall warning (``sources.horovod_trace``): ``ops`` (tensor, ranks, whether they are the ones that
    submitted it, else the ones that did not), ``world`` the ranks of the job the input knows. Two stalled tensors
    submitted by ranks apart (no rank ready for both: each side waits for a tensor the other never submits) are a desync:
    the ranks submitted different tensors, as the warning itself says may be. Else the ranks that submitted none of the
    stalled tensors (missing from every one) are what the others wait for: a hang whose culprits they are. None when
    the warning names no rank."""
    known = set(world)
    ready: dict[str, set[int]] = {}
    missing: dict[str, set[int]] = {}
    for name, ranks, is_ready in ops:
        (ready if is_ready else missing).setdefault(name, set()).update(ranks)
    for name, gone in missing.items():  # the ready side of a tensor whose missing ranks are told, where the world is known
        if name not in ready and known and gone < known:
            ready[name] = known - gone
    sides = [rs for rs in ready.values() if rs]
    apart = next(((a, b) for i, a in enumerate(sides) for b in sides[i + 1:] if not a & b), None)
    if apart is not None:
        a, b = sorted(apart, key=min)
        return StackReading(Verdict.DESYNC, (), tuple(sorted(a | b)), None, (),
                            f"Horovod's stall inspector: rank{'s' if len(a) > 1 else ''} {', '.join(map(str, sorted(a)))} "
                            f"and rank{'s' if len(b) > 1 else ''} {', '.join(map(str, sorted(b)))} each submitted a tensor "
                            "the other side never did: the ranks submit different tensors (names, order or count)")
    everyone = known | {r for rs in ready.values() for r in rs} | {r for rs in missing.values() for r in rs}
    submitted: set[int] = set().union(*ready.values())
    culprits = sorted((set.intersection(*missing.values()) if missing else everyone - submitted) - submitted)
    if not culprits:
        return None
    waiting = tuple(sorted(submitted)) if submitted else tuple(sorted(everyone - set(culprits)))
    return StackReading(Verdict.HANG, tuple(culprits), waiting, None, (),
                        f"Horovod's stall inspector: rank{'s' if len(culprits) > 1 else ''} {', '.join(map(str, culprits))} "
                        f"never submitted the tensors the other ranks wait on")
