"""A failure the text shows that no other rule turned into a verdict: the verdict is that failure, never "unknown".

``verdict`` asks these rules last, when no detector argued for a verdict and nothing is known to have gone on
(the program's progress after it):

- Echoes alone (``echoes_only``): the time line holds only what a rank sees of a failure elsewhere, no cause.
  - A timeout (a store wait that timed out, a rank that could not reach the rendezvous in time, a collective that
    timed out with no other rank's status): a hang. The ranks known to have left the job (a clean exit, their own
    end printed) while it waited are its culprits: they never came to what it waited in (one rank alone in a
    barrier the others skipped, a rank waiting in the store after its peers exited). Likely when they are known,
    else possible. Where the timeouts are in one console and most ranks of a stated world printed one, the few that
    printed nothing at all on the time line were elsewhere: they are named, possible. The watchdog's SIGABRT after a
    timeout and the launcher's closing signal are echoes too.
  - A peer gone (connection refused / reset / closed by the peer, a remote process exited): a crash elsewhere,
    whose own failure is not in the input; no culprit can be named, possible.
- Errors shown (``errors_shown``): an error the knowledge base explains (an NCCL WARN, a message it calls a bug of
  NCCL's), or an NCCL WARN followed by a failing return chain, that nothing outlived: a crash, no culprit named
  (the text says what failed, not whose code), possible. NCCL WARNs of a start that completed anyway (every
  communicator's init went on to Init COMPLETE after them) were survived: no failure.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..model import Verdict
from .cause import Failure
from .exits import FailureKind
from .hang import implied_world


@dataclass(frozen=True, slots=True)
class Shown:
    verdict: Verdict
    culprits: tuple[int, ...]
    level: str  # model.Certainty's value
    why: str


# what a rank sees of a failure elsewhere; the watchdog's SIGABRT after a timeout, and the launcher's closing signal
# after another rank ended, are the ends of ranks that waited
ECHOES = frozenset({FailureKind.TIMEOUT, FailureKind.PEER, FailureKind.EXIT, FailureKind.ABORT, FailureKind.KILLED})


def echoes_only(failures: Iterable[Failure], left: Iterable[int], world: int | None = None,
                rank0_busy: bool = False) -> Shown | None:
    """``failures``: the run's time line (``facts.failures_of_run``, explained); ``left``: the ranks known to have
    left the job of their own (a clean exit, their end printed); ``world``: the job's size when stated;
    ``rank0_busy``: the console shows the main process's own progress (its bar, its prints: rank 0's), so that where
    no world is stated and ranks 1 to k timed out, rank 0 is the one that was elsewhere (``hang.implied_world``). None when a
    cause is on it (the root-cause rule's story), the job was stopped from outside or a mismatch reported (theirs), or
    nothing is on it."""
    fs = list(failures)
    if not fs or any(f.is_cause or f.kind not in ECHOES for f in fs):
        return None
    timeouts = [f for f in fs if f.kind is FailureKind.TIMEOUT]
    if timeouts:
        waiting = {f.rank for f in timeouts if f.rank is not None}
        gone = tuple(sorted(set(left) - waiting))
        who = f"rank{'s' if len(waiting) > 1 else ''} {', '.join(map(str, sorted(waiting)))}" if waiting else "a rank"
        why = f"{who} timed out waiting ({timeouts[0].text[:200]})"
        if gone:
            return Shown(Verdict.HANG, gone, "likely", f"{why}, while rank{'s' if len(gone) > 1 else ''} "
                         f"{', '.join(map(str, gone))} had already left the job: {'they' if len(gone) > 1 else 'it'} "
                         "never came to what it waited in")
        seen = {f.rank for f in fs if f.rank is not None}
        implied = implied_world(seen) if world is None and rank0_busy else None
        absent = _absent_from_console(timeouts, waiting, seen, world or implied)
        if absent:
            of = f"the world of {world}" if world else f"a world of at least {implied} (ranks 1 to {max(seen)} shown)"
            return Shown(Verdict.HANG, absent, "possible", f"{why}, while rank{'s' if len(absent) > 1 else ''} "
                         f"{', '.join(map(str, absent))} of {of} printed no timeout into the same "
                         f"console: {'they were' if len(absent) > 1 else 'it was'} elsewhere, not in what the others "
                         "waited in")
        return Shown(Verdict.HANG, (), "possible", f"{why}; what it waited for is not in the input")
    peers = [f for f in fs if f.kind is FailureKind.PEER]
    if not peers:
        return None
    who = f"rank {peers[0].rank}" if peers[0].rank is not None else "a process"
    return Shown(Verdict.CRASH, (), "possible", f"{who} saw a peer fail or go away ({peers[0].text[:200]}); the peer's "
                 "own failure is not in the input")


def _absent_from_console(timeouts: list[Failure], waiting: set[int], seen: set[int], world: int | None) -> tuple[int, ...]:
    """The ranks of a stated world that printed no timeout where most of the others did, in one console (every rank's
    watchdog writes there, so a rank without a line was not waiting), and nothing else on the time line either (an
    abort of its own, its end): the minority that was elsewhere. ``waiting``: the ranks that timed out; ``seen``: the
    ranks with any failure on the time line."""
    if world is None or not 2 < world <= 4096 or len(waiting) < 2 or not waiting <= set(range(world)):
        return ()
    if len({f.order[0] for f in timeouts}) != 1:
        return ()
    absent = tuple(r for r in range(world) if r not in waiting and r not in seen)
    return absent if 0 < len(absent) < len(waiting) else ()


def errors_shown(errors: Iterable[tuple[str, bool]]) -> Shown | None:
    """``errors``: (message, survived) of each error finding that reports a failure (``FindingKind.ERROR``), in the
    order the findings came; ``survived``: a start that completed after it. The first not survived: a crash."""
    for message, survived in errors:
        if not survived:
            return Shown(Verdict.CRASH, (), "possible", message)
    return None


def pending_at_end(counts: dict[int, int], ends_there: bool) -> tuple[int, ...]:
    """A stall with no timeout line yet: the ranks' NCCL call counts on one communicator (COLL lines) where the logs
    stop with a collective pending and nothing after them (``ends_there``: no line of the application after the
    last NCCL line of any file, no exit, nothing failed). The collective the ranks ahead issued is pending on the
    ranks that never issued it: they are the culprits, when the ranks ahead agree on one count and the ranks
    behind are fewer than them (or one of two). A job that went on, ended or failed tells its own story."""
    if not ends_there or len(counts) < 2:
        return ()
    top = max(counts.values())
    behind = tuple(sorted(r for r, n in counts.items() if n < top))
    ahead = len(counts) - len(behind)
    if not behind or (len(behind) >= ahead and len(counts) > 2):
        return ()
    return behind
