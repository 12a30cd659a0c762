"""Two runs of one job in one input, on more GPUs and fewer, and the larger no faster: the added GPUs are lost to
communication (degraded, possible).

Each run is what its console printed of its pace (``sources.pace``): its main loop's seconds a step and steps to do,
or fairseq's words per second, and its GPU count where the text gives it.

- **Both GPU counts known** (``a`` GPUs and ``b`` > ``a``): the larger run's scaling efficiency is what its GPUs give
  of what ``b / a`` times the GPUs should. Data parallel training keeps each GPU's batch and adds GPUs, so a step takes
  as long on more GPUs as on fewer when they scale perfectly: the efficiency is the smaller run's seconds a step over
  the larger's. A rate of the whole job (words per second) is held against ``b / a`` times the smaller run's. Under
  ``EFFICIENCY_FLOOR`` the added GPUs bought less than 60 % of their worth: degraded. (Two GPUs that give 1.2x one
  are at 60 %.)
- **One count known, the other run started by a launcher of several processes**: a run whose main loop has ``k`` times
  fewer steps than the known run's (``k`` a whole number, at least 2: the same data over ``k`` times the GPUs) has ``k``
  times its GPUs.
- **No count known**: two runs of one loop whose step counts differ by a whole factor ``k`` of at least 2 did the same
  work in steps ``k`` times larger; the run of larger steps projected to take ``SLOWER_X`` times as long or longer in
  all did the same work far slower, whatever changed between them.

Runs whose counts are equal, or whose step totals are no whole multiple of each other, are not compared."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

EFFICIENCY_FLOOR = 0.6
SLOWER_X = 1.5  # the same work this many times slower is no noise (as slow_compare's GAP)
WHOLE = 0.05  # a step-count ratio within 5 % of a whole number is that number
MIN_FACTOR = 2


@dataclass(frozen=True, slots=True)
class RunSpeed:
    """One run's pace: ``where`` (file, line, text) of the print it is read from."""

    where: tuple[str, int, str]
    gpus: int | None = None
    how: str | None = None
    multi: bool = False
    steps: int | None = None  # its main loop's total
    seconds: float | None = None  # a step of it
    wps: float | None = None  # fairseq's words per second, the median of its prints

    @property
    def projected_s(self) -> float | None:
        return self.steps * self.seconds if self.steps and self.seconds else None


@dataclass(frozen=True, slots=True)
class ScalingLoss:
    small: RunSpeed  # the run on fewer GPUs (or of smaller steps)
    large: RunSpeed
    how: str  # "efficiency" or "slower"
    figure: float  # the efficiency (0..1) or how many times longer the same work took
    inferred: bool = False  # the larger run's GPU count is read off its step total


def _whole(x: float) -> int | None:
    n = round(x)
    return n if n >= MIN_FACTOR and abs(x - n) <= WHOLE * n else None


def _fill(runs: Sequence[RunSpeed]) -> list[tuple[RunSpeed, bool]]:
    """The runs, each unknown GPU count of a launcher's run read off its step total against a known run's."""
    known = [r for r in runs if r.gpus and r.steps]
    out = []
    for r in runs:
        pair = next(((o, k) for o in known if r.gpus is None and r.multi and r.steps and o.steps and o.gpus
                     and (k := _whole(o.steps / r.steps)) is not None), None)
        if pair is None:
            out.append((r, False))
            continue
        base, k = pair
        assert base.gpus
        out.append((replace(r, gpus=base.gpus * k, how=f"{k} times fewer steps than the run on {base.gpus}"), True))
    return out


def _efficiency(a: RunSpeed, b: RunSpeed) -> float | None:
    """The efficiency of ``b`` (more GPUs) against ``a``, or None when they share no measure."""
    assert a.gpus and b.gpus
    if a.seconds and b.seconds:
        return a.seconds / b.seconds
    if a.wps and b.wps:
        return (b.wps / a.wps) / (b.gpus / a.gpus)
    return None


def scaling_loss(runs: Sequence[RunSpeed]) -> ScalingLoss | None:
    """The worst loss among the runs' pairs, or None."""
    filled = _fill(runs)
    worst: ScalingLoss | None = None
    for i, (a, _) in enumerate(filled):
        for b, inferred in filled[i + 1:] + filled[:i]:
            loss = _pair(a, b, inferred)
            if loss is not None and (worst is None or _rank(loss) > _rank(worst)):
                worst = loss
    return worst


def _rank(loss: ScalingLoss) -> float:
    return 1 / loss.figure if loss.how == "efficiency" else loss.figure


def _pair(a: RunSpeed, b: RunSpeed, inferred: bool) -> ScalingLoss | None:
    if a.gpus and b.gpus:
        if b.gpus <= a.gpus:
            return None
        eff = _efficiency(a, b)
        return ScalingLoss(a, b, "efficiency", eff, inferred) if eff is not None and eff < EFFICIENCY_FLOOR else None
    if a.gpus or b.gpus or not (a.steps and b.steps and a.seconds and b.seconds) or b.steps >= a.steps:
        return None
    ta, tb = a.projected_s, b.projected_s
    if _whole(a.steps / b.steps) is None or not ta or not tb or tb < SLOWER_X * ta:
        return None
    return ScalingLoss(a, b, "slower", tb / ta)
