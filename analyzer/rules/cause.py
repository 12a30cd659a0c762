"""Root cause by causality: failures and symptoms on one time line, the earliest cause first."""
from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..nccl.failures import EntryKind, classify
from .exits import CAUSES, FailureKind

RIGHT_AFTER_S = 10.0  # a failure this soon after a mismatch explains it (the rank paired its last call
# with the others' next one on its way down)
VANISHED_S = 1.6  # heartbeats come every second: a rank silent this long before the others fail is gone
# a symptom this long (seconds) before a cause on the time line still counts as its echo: record
# times of different processes and files are a little apart
SKEW_S = 1.0


@dataclass(frozen=True, slots=True)
class Failure:
    """One failure event or symptom of one rank (rank None: the launcher, unknown rank)."""

    rank: int | None
    kind: FailureKind
    text: str
    t: float | None = None  # the record's time, seconds since the epoch; None unknown
    order: tuple[str, int] = ("", 0)  # (file, line): the time line where no time is known
    code: int | None = None

    @property
    def is_cause(self) -> bool:
        return self.kind in CAUSES


class CauseVerdict(enum.StrEnum):
    """What the time line supports (``Cause.verdict``)."""

    CRASH = "crash"  # ``first`` is the cause
    HANG = "hang"  # a stall came first
    DESYNC = "desync"  # a backend's mismatch report came first
    STOPPED = "stopped"  # the job was stopped from outside


@dataclass(frozen=True, slots=True)
class Cause:
    """The verdict the time line supports: "crash" (``first`` is the cause), "hang" (a stall came
    first; every failure after it is an echo) or "desync" (a backend's mismatch report came first:
    ``first``; the culprits are the desync rule's, not the time line's), with the failures it explains."""

    verdict: CauseVerdict
    ranks: tuple[int, ...]
    first: Failure | None
    echoes: tuple[Failure, ...]
    why: str

    @property
    def culprits(self) -> tuple[int, ...]:
        """The ranks at fault: ``ranks``, but none when the first failure is the link's (an IB completion
        error, a fatal QP event) or a GPU's the kernel logged (a fatal Xid): the network or the hardware failed on the
        rank that reported it, not that rank's code. NCCL's
        own error (internal error, unhandled system or CUDA error inside NCCL, invalid usage) first names its
        rank only when it is ``lone_nccl_error``: one rank's, the others only echoing it; else (every rank
        reporting one, a rank alone on the time line, a setup fault) none."""
        if self.first is not None and host_killed(self.first):
            return ()
        if self.first is None or self.first.kind not in NO_CULPRIT:
            return self.ranks
        if self.first.kind is FailureKind.NCCL and lone_nccl_error(self.first, self.echoes):
            return self.ranks
        return ()


NO_CULPRIT = frozenset({FailureKind.NETWORK, FailureKind.NCCL, FailureKind.GPU})
SIGKILL_CODES = frozenset({-9, 137})


def host_killed(f: Failure) -> bool:
    """A process's end the launcher reported as SIGKILL with nothing of its own before it and no sender in the job
    (the launcher's own closing signal reads as ``killed``): the kernel's OOM killer or the scheduler's memory limit
    took it. The host's memory ran out for the processes it holds together; which one the killer chose names no
    rank's code."""
    return f.kind is FailureKind.FATAL and f.code in SIGKILL_CODES and f.text.startswith("exit code")


def lone_nccl_error(first: Failure, echoes: Iterable[Failure]) -> bool:
    """NCCL's own error on one rank is that rank's (the GPU or process to inspect: an unhandled CUDA error
    inside NCCL, an internal error) when other ranks are on the time line and they only echo it (timeouts,
    peers gone, stopped, the link to it closed after it): none of them reports NCCL's own error, and the
    knowledge base does not call the message a setup fault (kind config). One rank alone on the time line
    names none: its peers may have failed the same way out of sight. A known bug of NCCL's own (an entry of area
    nccl-bug: its RAS thread crashing, a net id its own graph search lost) names none either: the rank only hosted
    it; so does glibc's abort on a corrupted heap (``explain_heap``)."""
    if first.rank is None or first.text.startswith(HEAP_PREFIX):
        return False  # (a corrupted heap: the rank only hosted the code that wrote past a block)
    others = [f for f in echoes if f.rank is not None and f.rank != first.rank]
    if not others or any(f.kind is FailureKind.NCCL for f in others):
        return False
    entry = classify(first.text)
    return entry is None or (entry.kind != EntryKind.CONFIG and not entry.is_bug)


DEVICE_RE = re.compile(r"\bGPU (\d{1,4})\b")  # CUDA's OOM message: "... Tried to allocate 2.00 GiB. GPU 3 has ..."


def device_rank(cause: Cause, one_node: bool, world: int | None) -> int | None:
    """The rank of an unranked first failure (an OOM or CUDA error printed with no ``[rankN]:`` head) from the
    device its message names, in a job of one node, where each process uses the device of its local rank
    (torchrun's ``cuda:LOCAL_RANK``), so GPU N is rank N. None when the rank is known, the job spans nodes or
    is not known to be one, the device is outside the world, or rank N is on the time line waiting (timed out,
    saw its peer go): that rank did not fail of its own."""
    first = cause.first
    if first is None or first.rank is not None or first.kind not in (FailureKind.OOM, FailureKind.CUDA) or not one_node:
        return None
    if _printed_alike(first, cause.echoes):
        return None  # several processes failed alike, each naming its own device: none is singled out
    m = DEVICE_RE.search(first.text)
    if m is None:
        return None
    n = int(m.group(1))
    if world is not None and n >= world:
        return None
    waiting = {f.rank for f in cause.echoes if f.kind in (FailureKind.TIMEOUT, FailureKind.PEER)}
    return None if n in waiting else n


def _printed_alike(first: Failure, others: Iterable[Failure]) -> bool:
    """Another process printed ``first``'s failure alike with no rank (the same kind and message but for its numbers)."""
    return any(f.rank is None and f.kind is first.kind and _same_text(f, first) for f in others)


def lone_unwaiting_rank(cause: Cause, world: int | None) -> int | None:
    """The rank of an unranked first failure (an OOM or CUDA error naming ``GPU N``) where the job's nodes are not
    known (no node count, no host seen; the caller's to check): every rank of the world but N is on the time line waiting (timed out, saw its peer go), so the failure is
    rank N's, the only one not waiting, and its device agrees. None otherwise."""
    first = cause.first
    if first is None or first.rank is not None or first.kind not in (FailureKind.OOM, FailureKind.CUDA) or not world:
        return None
    m = DEVICE_RE.search(first.text)
    if m is None or int(m.group(1)) >= world:
        return None
    n = int(m.group(1))
    waiting = {f.rank for f in cause.echoes if f.kind in (FailureKind.TIMEOUT, FailureKind.PEER)}
    return n if waiting == set(range(world)) - {n} else None


def _key(f: Failure) -> tuple[float, str, int]:
    return (f.t if f.t is not None else math.inf, f.order[0], f.order[1])


def root_cause(failures: Iterable[Failure], stall_t: float | None = None, stalled: bool = False) -> Cause | None:
    """``stalled``: a stall was confirmed (a hang alert, a watchdog timeout, the hook's stall record),
    at ``stall_t`` when known. None when nothing failed."""
    fs = sorted(failures, key=_key)
    if not fs:
        return None
    # a GPU fault the kernel logged comes first: its line has no time the job's lines can be put against, and what the
    # job printed (CUDA errors, NCCL errors, timeouts on that node) is what losing the GPU or its link did to it
    causes = sorted((f for f in fs if f.is_cause), key=lambda f: f.kind is not FailureKind.GPU)
    first = causes[0] if causes else None
    seen = next((f for f in fs if f.kind is FailureKind.MISMATCH), None)
    if seen is not None and (first is None or _key(seen) <= _key(first) or _close(seen, first)):
        why = (f"rank {seen.rank}'s backend saw a collective mismatch first" if seen.rank is not None else
               "a backend saw a collective mismatch first") + "; what failed after it is its echo"
        return Cause(CauseVerdict.DESYNC, (), seen, tuple(f for f in fs if f is not seen), why)
    if stalled and (first is None or (first.kind is not FailureKind.GPU and _after_stall(first, fs, stall_t))):
        why = "a stall came first; what failed after it was stopped or saw its peers go"
        return Cause(CauseVerdict.HANG, (), None, tuple(fs), why)
    if first is None:
        outside = [f for f in fs if f.kind in (FailureKind.INTERRUPT, FailureKind.KILLED)]
        if outside and not stalled:
            return Cause(CauseVerdict.STOPPED, (), outside[0], tuple(fs), "the job was stopped from outside")
        return None
    same = [f for f in causes if f is not first and f.rank is not None and f.rank != first.rank
            and _close(f, first) and f.kind == first.kind and _same_text(f, first)]
    ranks = tuple(sorted({r for r in [first.rank] + [f.rank for f in same] if r is not None}))
    echoes = tuple(f for f in fs if f is not first and f not in same)
    # (a failure placed nowhere, neither timed nor on a line of a file, such as the launcher's summary of an exit,
    # reports an end, not which came first: the first failure the lines place is the one to weigh)
    lead = first if not _unplaced(first) else next((f for f in causes if not _unplaced(f)), None)
    if lead is not None and lead is not first and _ended_alike_after(lead, causes):
        why = (f"the lines show {lead.kind.value} first, printed with no rank, and every process the launcher lists ended "
               "alike after it: the launcher's first observed failure is only the first end it saw")
        return Cause(CauseVerdict.CRASH, (), lead, tuple(f for f in fs if f is not lead), why)
    if lead is not None and lead.kind is FailureKind.OOM and _alike_untimed(lead, causes, OOM_KINDS):
        return _oom_alike(lead, fs, causes)
    if lead is not None and lead.kind in ALIKE_KINDS and _alike_untimed(lead, causes):
        why = (f"every rank that failed failed alike ({lead.kind.value}, the same message, no time to order them): "
               "the order the lines were printed in singles none out")
        return Cause(CauseVerdict.CRASH, (), lead, tuple(f for f in fs if f is not lead), why)
    return Cause(CauseVerdict.CRASH, ranks, first, echoes, f"rank {first.rank}'s {first.kind.value} came first")


def _ended_alike_after(lead: Failure, causes: list[Failure]) -> bool:
    """``lead``, the first failure the lines place, is NCCL's own error or the network's printed with no rank (each
    process's traceback of one fault: a transport's connect failing under every rank of a node), or a process's own OOM
    or CUDA error printed with no rank (``LOCAL_ALIKE``), and every other
    cause is another unranked copy of it or a process's exit with one same code (torchrun's summary: its 'first
    observed failure' names the first process the agent saw end, placed nowhere on the time line): no exit singles
    out a rank, the fault is NCCL's or the link's."""
    if lead.rank is not None or lead.kind not in NO_CULPRIT | LOCAL_ALIKE:
        return False
    copies = [f for f in causes if f is not lead and f.rank is None and f.kind is lead.kind and _same_text(f, lead)]
    exits = [f for f in causes if f is not lead and f not in copies]
    return len(exits) >= 2 and all(f.kind is FailureKind.EXIT for f in exits) and len({f.code for f in exits}) == 1


# a process's own failure printed with no rank (a GPU out of memory): with every process the launcher lists ending
# alike after it, the launcher's first observed end singles none out; the device the message names may
# (``device_rank``), unless several processes printed it alike
LOCAL_ALIKE = frozenset({FailureKind.OOM, FailureKind.CUDA})
# failures whose being printed first on several ranks says nothing of who caused them (an OOM is each rank's own)
ALIKE_KINDS = frozenset({FailureKind.CUDA, FailureKind.EXCEPTION, FailureKind.NCCL})


RANK_NAMED_RE = re.compile(r"\bRank (\d{1,6})\b")


def _unplaced(f: Failure) -> bool:
    return f.t is None and not f.order[0]


OOM_KINDS = frozenset({FailureKind.OOM})


def _oom_alike(lead: Failure, fs: list[Failure], causes: list[Failure]) -> Cause:
    """Several ranks ran out of GPU memory alike, none of them timed. Where other ranks are seen only waiting on them
    (timed out, saw a peer go: a pipeline's other stage), the ranks that ran out are the culprits, all of them; where
    no rank is seen waiting, every rank seen failed alike and the lines single none out."""
    oom = {f.rank for f in causes if f.kind is FailureKind.OOM and f.rank is not None and _same_text(f, lead)}
    waiting = {f.rank for f in fs if f.kind in (FailureKind.TIMEOUT, FailureKind.PEER) and f.rank is not None} - oom
    rest = tuple(f for f in fs if f is not lead)
    if waiting:
        ranks = tuple(sorted(r for r in oom if r is not None))
        return Cause(CauseVerdict.CRASH, ranks, lead, rest,
                     f"ranks {', '.join(map(str, ranks))} ran out of GPU memory alike; the others only waited on them")
    return Cause(CauseVerdict.CRASH, (), lead, rest,
                 "every rank that failed ran out of GPU memory alike (the same message, no time to order them): "
                 "the order the lines were printed in singles none out")


def _alike_untimed(first: Failure, causes: list[Failure], kinds: frozenset[FailureKind] = ALIKE_KINDS) -> bool:
    """Other ranks failed of their own with the same kind and message as ``first``, none of them timed: the ranks
    failed alike (each rank's own CUDA error, the same assertion on every rank), and which one's lines came first
    in a file is the printing's order, not the failure's."""
    if first.rank is None or first.t is not None:
        return False
    others = [f for f in causes if f.rank is not None and f.rank != first.rank and f.kind is not FailureKind.EXIT]
    # (a line naming ``first``'s rank, PyTorch's ``[PG 0 Rank 12] ...`` under another prefix, is ``first``'s own)
    alike = [f for f in others if f.kind in kinds and str(first.rank) not in RANK_NAMED_RE.findall(f.text)]
    return bool(alike) and all(f.t is None and f.kind == first.kind and _same_text(f, first) for f in alike)


def _after_stall(first: Failure, fs: list[Failure], stall_t: float | None) -> bool:
    """The first cause came after the stall: by the clock when both times are known; else by the order of
    one file, where a stall symptom (a timeout) is printed before it (a rank's traceback after the others'
    watchdog timeouts, none of them timed). Lines of different files have no order between them."""
    if stall_t is not None and first.t is not None:
        return first.t > stall_t + SKEW_S
    return bool(first.order[0]) and any(
        f.kind is FailureKind.TIMEOUT and f.order[0] == first.order[0] and f.order[1] < first.order[1]
        and (f.t is None or first.t is None) for f in fs)


def _close(a: Failure, b: Failure) -> bool:
    return a.t is not None and b.t is not None and abs(a.t - b.t) <= 0.5


def _same_text(a: Failure, b: Failure) -> bool:
    """Several ranks failing the same way at once (each its own OOM): all culprits."""
    strip = lambda s: "".join(c for c in s if not c.isdigit())[:200]
    return strip(a.text) == strip(b.text)


def vanished(last_seen: Mapping[int, float], ended: Iterable[int], failures: Iterable[Failure],
             end_t: float | None) -> list[Failure]:
    """Ranks that stopped writing without an exit record (SIGKILL, os._exit, a segfault, the OOM
    killer) before the first failure of the others, while the others went on writing until ``end_t``,
    or while every other rank seen says a peer went away (gloo and NCCL notice a killed peer at once,
    so the others may end well within ``VANISHED_S``: their word stands for the time)."""
    fs = list(failures)
    first = min((f.t for f in fs if f.t is not None), default=None)
    if first is None or end_t is None:
        return []
    gone = set(ended) | {f.rank for f in fs if f.rank is not None}
    silent = {r: t for r, t in last_seen.items() if r not in gone and t < first}
    lost = {f.rank for f in fs if f.kind is FailureKind.PEER}
    told = bool(silent) and all(r in lost for r in last_seen if r not in silent)
    return [Failure(r, FailureKind.VANISHED, f"rank {r} stopped without an exit record (killed, os._exit, "
                    "segfault or OOM)", t, ("", 0)) for r, t in sorted(silent.items())
            if told or end_t - t > VANISHED_S]


def mismatch_is_echo(sides: Iterable[Iterable[int]], mismatch_t: float | None, failures: Iterable[Failure]) -> bool:
    """A mismatch one of whose sides is made only of ranks that failed of their own right after it
    (or at a time not known) is that failure's echo, not a desync."""
    failed = {f.rank for f in failures if f.is_cause and f.rank is not None
              and (mismatch_t is None or f.t is None or -SKEW_S <= f.t - mismatch_t <= RIGHT_AFTER_S)}
    return any(bool(side) and set(side) <= failed for side in (set(s) for s in sides))


def explain_mismatch(failures: Iterable[Failure]) -> list[Failure]:
    """A backend's mismatch abort (gloo's ``EnforceNotMet ... Is there a distributed collective mismatch``,
    printed by the C++ runtime with no rank on it) and a SIGABRT: the aborting rank is the one that saw
    the mismatch, its end that symptom, not a crash of its own. A mismatch line with no rank goes to the
    one rank that aborted (several or none: it stays unranked)."""
    fs = list(failures)
    seen = [f for f in fs if f.kind is FailureKind.MISMATCH]
    if not seen:
        return fs
    aborted = sorted({f.rank for f in fs if f.kind is FailureKind.ABORT and f.rank is not None})
    owner = aborted[0] if len(aborted) == 1 else None
    text = {f.rank: f.text for f in seen if f.rank is not None}
    out: list[Failure] = []
    for f in fs:
        if f.kind is FailureKind.MISMATCH and f.rank is None and owner is not None:
            f = Failure(owner, f.kind, f.text, f.t, f.order, f.code)
            text.setdefault(owner, f.text)
        out.append(f)
    return [Failure(f.rank, FailureKind.MISMATCH, f"{text[f.rank]} ({f.text}: the backend aborted on it)"[:500], f.t,
                    f.order, f.code) if f.kind is FailureKind.ABORT and f.rank in text else f for f in out]


HEAP_PREFIX = "heap corruption: "  # facts.error_failure's text of glibc's heap check (sources.torch_log.HeapWatch)


def explain_heap(failures: Iterable[Failure]) -> list[Failure]:
    """glibc's heap check (``free(): invalid next size``, ``double free or corruption``) and the SIGABRT that follows
    it: that abort is the heap check's, a corrupted heap in the process (NCCL's or a library's own code writing past a
    block), not an exception of the rank's code nor the watchdog's teardown; NCCL's kind, naming no rank
    (``lone_nccl_error``). The check printed with no rank goes to the one rank that aborted (several or none: it
    stays unranked)."""
    fs = list(failures)
    heap = [f for f in fs if f.text.startswith(HEAP_PREFIX)]
    if not heap:
        return fs
    aborted = sorted({f.rank for f in fs if f.kind is FailureKind.ABORT and f.rank is not None})
    texts = {f.rank: f.text for f in heap if f.rank is not None}
    if any(f.rank is None for f in heap) and len(aborted) == 1:
        texts.setdefault(aborted[0], next(f.text for f in heap if f.rank is None))
        fs = [f for f in fs if not (f.rank is None and f.text.startswith(HEAP_PREFIX))]
    return [Failure(f.rank, FailureKind.NCCL, f"{texts[f.rank]} ({f.text})"[:500], f.t, f.order, f.code)
            if f.kind is FailureKind.ABORT and f.rank in texts else f for f in fs]


def explain_aborts(failures: Iterable[Failure]) -> list[Failure]:
    """SIGABRT is PyTorch's watchdog tearing a rank down after its collective timed out (an echo)
    only when that rank timed out (or, its rank unknown, some rank did); without a timeout it is a C++
    exception or an assertion of its own (``terminate called after throwing ...``): a cause."""
    fs = list(failures)
    timed_out = {f.rank for f in fs if f.kind is FailureKind.TIMEOUT}
    return [Failure(f.rank, FailureKind.FATAL, f"{f.text}: aborted with no timeout before it (a C++ exception or "
                    "an assertion)", f.t, f.order, f.code)
            if f.kind is FailureKind.ABORT and f.rank not in timed_out and not (f.rank is None and timed_out)
            else f for f in fs]


ECHO_KINDS = (FailureKind.PEER, FailureKind.TIMEOUT, FailureKind.INTERRUPT, FailureKind.KILLED, FailureKind.ABORT,
              FailureKind.MISMATCH)


def explain_exits(failures: Iterable[Failure]) -> list[Failure]:
    """A non-zero exit code with nothing else known is a cause; a rank's exit after its own echo
    (its collective failed because a peer went away, it timed out, it was interrupted) is that echo; a rank's
    exit after a network failure of its own (and no other cause) is that network failure's end, where the
    launcher saw it (torchrun's first observed failure keeps its place on the time line); unranked exits after
    timeouts alone are those timeouts' ends (``_unranked_timeout_ends``)."""
    fs = list(failures)
    why: dict[int, Failure] = {}
    own: dict[int, set[FailureKind]] = {}
    for f in fs:
        if f.rank is None or f.kind is FailureKind.EXIT:
            continue
        if f.is_cause:
            own.setdefault(f.rank, set()).add(f.kind)
        elif f.kind in ECHO_KINDS:
            why.setdefault(f.rank, f)
    timed_out = _unranked_timeout_ends(fs)
    out = []
    for f in fs:
        r = f.rank
        if timed_out and f.kind is FailureKind.EXIT:
            f = Failure(None, FailureKind.TIMEOUT, f"{f.text} after its timeout", f.t, f.order, f.code)
        elif f.kind is FailureKind.EXIT and r is not None:
            if r in why and r not in own:
                f = Failure(r, why[r].kind, f"{f.text} after {why[r].kind.value}", f.t, f.order, f.code)
            elif own.get(r) == {FailureKind.NETWORK}:
                f = Failure(f.rank, FailureKind.NETWORK, f"{f.text} after its network failure", f.t, f.order, f.code)
        out.append(f)
    return out


def _unranked_timeout_ends(fs: list[Failure]) -> bool:
    """Processes whose lines name no rank printed a timeout (gloo's ``Timed out waiting Nms for recv operation``, a
    store's wait) and nothing of their own, and every exit on the time line is unranked with code 1, Python's end on
    an uncaught exception: each exit is the end of the timeout it printed, an echo of a stall, not a failure."""
    exits = [f for f in fs if f.kind is FailureKind.EXIT]
    rest = [f for f in fs if f.kind is not FailureKind.EXIT]
    return (bool(exits) and all(f.rank is None and f.code == 1 for f in exits)
            and any(f.kind is FailureKind.TIMEOUT for f in rest) and all(f.kind in ECHO_KINDS for f in rest))


def explain(failures: Iterable[Failure]) -> list[Failure]:
    """What each end means, on the whole time line: ``explain_mismatch``, ``explain_heap``, ``explain_aborts``,
    ``explain_exits``."""
    return explain_exits(explain_aborts(explain_heap(explain_mismatch(failures))))
