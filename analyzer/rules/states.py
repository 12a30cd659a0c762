"""A state for every rank (``model.RankState``), from the verdict and the rank's own time line."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..model import RankState, Verdict
from ..text_fit import rank_runs
from .cause import Failure
from .exits import FailureKind

STATE_OF_FAILURE = {
    FailureKind.CUDA: RankState.CUDA_ERROR, FailureKind.NCCL: RankState.LOCAL_NCCL_FAILURE,
    FailureKind.NETWORK: RankState.NETWORK_ERROR, FailureKind.PEER: RankState.REMOTE_FAILURE,
    FailureKind.TIMEOUT: RankState.STUCK_IN_COLLECTIVE,
}


@dataclass(frozen=True, slots=True)
class Facts:
    """What the state of each rank is decided from."""

    ranks: tuple[int, ...]
    verdict: str
    culprits: tuple[int, ...] = ()
    stuck: str | None = None  # "allreduce #19 of process group 0"
    waiting: tuple[int, ...] = ()
    where: Mapping[int, str] | None = None  # rank -> code location of its last stack
    finished: frozenset[int] = frozenset()  # ranks that exited with 0
    job_ended: bool = False  # the job's end is known (an exit code, every rank's exit)
    past_stuck: frozenset[int] = frozenset()  # ranks whose records say they completed the stuck collective


def rank_states(facts: Facts, failures: Iterable[Failure]) -> list[tuple[int, RankState, str | None]]:
    """(rank, state, detail) for each rank, rank order."""
    mine: dict[int, list[Failure]] = {}
    for f in sorted(failures, key=lambda f: (not f.is_cause, f.t is None, f.t or 0.0, f.order)):
        if f.rank is not None:
            mine.setdefault(f.rank, []).append(f)
    # membership as sets: every rank asks, and a hang's waiting ranks are nearly all of them
    culprits, waiting = frozenset(facts.culprits), frozenset(facts.waiting)
    return [(r, *_state(r, facts, mine.get(r, []), culprits, waiting)) for r in facts.ranks]


def _state(r: int, facts: Facts, fs: list[Failure], culprits: frozenset[int],
           waiting: frozenset[int]) -> tuple[RankState, str | None]:
    """``culprits``, ``waiting``: ``facts``' own, as sets."""
    where = (facts.where or {}).get(r)
    if facts.verdict == Verdict.DESYNC and facts.stuck and r in culprits:  # it joined, with another call
        return RankState.MISMATCHED, f"called another collective than the others at {facts.stuck}" + (
            f"; now at {where}" if where else "")
    if facts.verdict in (Verdict.HANG, Verdict.DESYNC) and facts.stuck:
        if r in culprits:
            if where:
                return RankState.STUCK_OUTSIDE_NCCL, f"at {where}; never joined {facts.stuck}"
            return RankState.NEVER_JOINED, f"never joined {facts.stuck}"
        if r in facts.past_stuck and not any(f.is_cause for f in fs):  # e.g. the side of a desync NCCL let through
            return RankState.STUCK_IN_COLLECTIVE, f"completed {facts.stuck}, then waits in a later collective" + (
                f", called at {where}" if where else "")
        if r in waiting or not any(f.is_cause for f in fs):  # what ended it after is an echo
            return RankState.STUCK_IN_COLLECTIVE, f"in {facts.stuck}" + (f", called at {where}" if where else "")
    if facts.verdict == Verdict.HANG and not facts.stuck and r in culprits and not any(f.is_cause for f in fs):
        # named by a hang whose collective is not known (NCCL call counts, a store wait for its unique id)
        if where:
            return RankState.STUCK_OUTSIDE_NCCL, f"at {where}; the others wait for it"
        return RankState.NEVER_JOINED, "behind the others: the collective they wait in is not known"
    if fs:
        f = fs[0]
        if f.kind in (FailureKind.KILLED, FailureKind.INTERRUPT) and not f.is_cause:
            return RankState.STOPPED, f"stopped from outside ({f.text})"[:300]
        state = STATE_OF_FAILURE.get(f.kind, RankState.DIED)
        detail = f.text if f.kind not in (FailureKind.KILLED, FailureKind.INTERRUPT) else \
            f"stopped from outside ({f.text})"
        return state, detail[:300]
    if r in facts.finished:
        return RankState.FINISHED, None
    if facts.verdict in (Verdict.HEALTHY, Verdict.DEGRADED):
        return (RankState.FINISHED, None) if facts.job_ended else (RankState.RUNNING, "no end seen in its records")
    return RankState.UNKNOWN, None


def fmt_ranks(ranks: Iterable[int], limit: int = 12) -> str:
    """``[0, 1, 2, 3, 5, 7, 8]`` -> ``0-3, 5, 7-8``; long lists are cut after ``limit`` runs."""
    rs = set(ranks)
    runs = rank_runs(rs)
    if len(runs) > limit:
        return ", ".join(runs[:limit]) + f", ... ({len(rs)} ranks)"
    return ", ".join(runs)


def states_text(states: Iterable[tuple[int, str, str | None]]) -> str:
    """``stuck_in_collective 0, 2-63; never_joined 37``: the ranks of each state, in first-seen order."""
    by: dict[str, list[int]] = {}
    for r, state, _ in states:
        by.setdefault(state, []).append(r)
    return "; ".join(f"{k} {fmt_ranks(v)}" for k, v in by.items())
