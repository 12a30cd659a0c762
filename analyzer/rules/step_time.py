"""The program's own step times: a sustained stretch of steps several times slower than the run's usual pace.

A training loop prints how long each step took (``0.41 sec/step``, Megatron's ``elapsed time per iteration (ms)``,
``time: 511.86ms``). Where, after the first steps (compilation, warm-up), a run of consecutive prints is at least
``SLOW_X`` times the run's usual step (its lower quartile: the pace most steps keep) for ``MIN_RUN`` prints or more
(and a twentieth of the prints at least), the job ran on, slowly: degraded, possible (the program's own timings; what
slowed it is not in them). One slow step (a checkpoint, an evaluation), even printed by every rank, is shorter than
that; a run whose steps are all alike, or too few to tell (``MIN_STEPS``), says nothing."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

SLOW_X = 3.0  # a step this many times the usual one is slow
WARMUP = 3  # the first prints are left out: compilation, autotuning, the first collectives' connection set-up
MIN_STEPS = 12  # prints needed, after the warm-up, to know a usual pace
MIN_RUN = 8  # consecutive slow prints at least: longer than one slow step printed by each rank of a node
MIN_SHARE = 20  # ... and at least one print in this many


@dataclass(frozen=True, slots=True)
class SlowStretch:
    first: tuple[int, str]  # (line, the timing as printed) of the stretch's first print
    last: tuple[int, str]
    steps: int  # prints in the stretch
    slow_s: float  # their median step time
    usual_s: float  # the run's usual step time
    usual_at: tuple[int, str]  # a print at the usual pace

    @property
    def ratio(self) -> float:
        return self.slow_s / self.usual_s


def slow_stretch(times: Iterable[tuple[int, float, str]]) -> SlowStretch | None:
    """The longest stretch of slow step prints in one file's (line, seconds, as printed), or None."""
    ts = list(times)[WARMUP:]
    if len(ts) < MIN_STEPS:
        return None
    usual = sorted(v for _, v, _ in ts)[len(ts) // 4]
    if usual <= 0:
        return None
    best: list[tuple[int, float, str]] = []
    run: list[tuple[int, float, str]] = []
    for t in ts:
        if t[1] >= SLOW_X * usual:
            run.append(t)
            continue
        best, run = (run if len(run) > len(best) else best), []
    best = run if len(run) > len(best) else best
    if len(best) < max(MIN_RUN, len(ts) // MIN_SHARE):
        return None
    at = next(t for t in ts if t[1] <= usual)
    return SlowStretch((best[0][0], best[0][2]), (best[-1][0], best[-1][2]), len(best),
                       sorted(v for _, v, _ in best)[len(best) // 2], usual, (at[0], at[2]))
