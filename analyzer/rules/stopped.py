"""A job stopped from outside before its ranks finished, nothing of its own failing first: a hang.

Users press Ctrl-C on a job that stopped making progress, and a scheduler's time limit ends a job that
sat still until its wall time; a job that fails prints its own error first, and one that finishes says so
(exit 0, every rank's end). So the user's interrupt (``KeyboardInterrupt``, torchrun's ``Received 2 death
signal`` / ``SignalException ... got signal: 2``), a scheduler's cancel (``slurmstepd ... CANCELLED AT ... DUE
TO TIME LIMIT``) or a kill from outside, with no failure of the job's own before it and no stall signal
(a stall is the other hang rules' evidence), is a likely hang; the ranks seen that never finished are the
ones that waited. A preemption or a node failure ends a job for a reason of its own: not a hang."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .cause import CauseVerdict, Failure, root_cause
from .exits import FailureKind

NOT_A_HANG = ("PREEMPTION", "NODE FAIL")  # Slurm's reasons that are not the job's wall time or a user's cancel


@dataclass(frozen=True, slots=True)
class StoppedUnfinished:
    how: str  # what stopped it, in words
    waiting: tuple[int, ...]  # ranks seen that never finished
    finished: tuple[int, ...]  # ranks seen that finished (exit 0, their own end)
    level: str
    why: str


def stopped_unfinished(failures: Iterable[Failure], stalled: bool, seen: Iterable[int], finished: Iterable[int],
                       cancel_reasons: Iterable[str | None] = ()) -> StoppedUnfinished | None:
    """``failures``: the run's time line (``rules.facts``); ``stalled``: a stall signal was seen; ``seen``: the
    ranks the input shows; ``finished``: those that ended well; ``cancel_reasons``: the scheduler's reasons for
    cancelling (None: a cancel that names none). None unless the time line's story is 'stopped from outside'."""
    fs = list(failures)
    reasons = list(cancel_reasons)
    if stalled or any(r is not None and r.upper().startswith(NOT_A_HANG) for r in reasons):
        return None
    cause = root_cause(fs, None, False)
    if cause is None or cause.verdict != CauseVerdict.STOPPED or cause.first is None:
        return None
    done = set(finished)
    waiting = tuple(sorted(set(seen) - done))
    how = _how(cause.first, reasons)
    why = (f"the job was stopped from outside ({how}) before "
           + (f"rank{'s' if len(waiting) > 1 else ''} {', '.join(map(str, waiting[:16]))}"
              f"{' ...' if len(waiting) > 16 else ''} finished" if waiting else "it ended")
           + ", and nothing of its own failed before: a job stopped while it made no progress; where it waited "
           "is not in the text")
    return StoppedUnfinished(how, waiting, tuple(sorted(done & set(seen))), "likely", why)


def _how(first: Failure, reasons: list[str | None]) -> str:
    if first.kind is FailureKind.INTERRUPT:
        return "the user's interrupt, Ctrl-C / SIGINT"
    if any(r is not None and "TIME" in r.upper() for r in reasons):
        return "the scheduler's time limit"
    if reasons:
        return "the scheduler cancelled it"
    return "a kill from outside: the launcher, the scheduler or the user"
