"""Two analysed runs of one job compared: what changed between a good run (A) and a bad one (B).

``compare(a, b)`` takes two ``result.Analysis`` (``analysis.analyze_paths``) and returns a ``Comparison``: every
difference as a typed record (``compare.model``) carrying the line that shows it in A and in B, in the order below.
Pure: no file is read, nothing is printed (``render`` makes the text and the JSON; ``ncclscope diff`` prints them).

What is compared: versions (NCCL, torch, CUDA), settings (NCCL_*, TORCH_NCCL_*), the layout (ranks, nodes, GPUs a
node), each communicator against its counterpart (the world's first, then the others by size: a commId is new every
run) for its transports per channel, channel count, rings and trees, NCCL's algorithm and protocol per operation
and size (its TUNING lines), the longest communicator init (Init timings), bus bandwidth per operation and size,
each operation's share of collective time, where most of that time goes, stragglers, and the verdict.

The order, most likely to matter for speed first (``Tier``, then ``score`` within a tier):

1. measured: time both runs measured. A busbw change on an (op, size) scores the share of the slower run's
   collective time it accounts for: B's share of that group x (1 - B's busbw / A's busbw) when B is slower, A's
   share x (1 - A's / B's) when B is faster ("busbw change x share of time"). A straggler scores its waiting over
   the waiting plus the run's collective time. A change counts from 25% (``score.BUSBW_CHANGE``) on groups of two
   calls or more; below 1% of the time (``score.MEASURED_FLOOR``) it goes to the rest.
2. transport: a communicator runs over other link classes; scored by how many classes its slowest link moved in
   NVLS/CollNet > P2P/NVLink > NET/IB > SHM > NET > NET/Socket, a downgrade before an upgrade; the setting that
   switched a class off (NCCL_P2P_DISABLE, NCCL_SHM_DISABLE, NCCL_IB_DISABLE) is named on the line.
3. algorithm: NCCL chose another algorithm or protocol for an operation at some sizes; scored by the share of
   collective time (or, untimed, of bytes) those sizes take.
4. setting: a setting known to change speed changed: first those that switch a transport off, then those that
   force NCCL's choice (NCCL_ALGO, NCCL_PROTO), those the dashboard warns of, then tuning sizes, buffers and
   channels (``score.setting_weight``).
5. the rest, by kind: the verdict, the layout, versions, channels, init time, time shares, the hotspot, rings and
   trees, other settings (``score.REST_WEIGHT``).

Facts one input does not show (no TUNING lines, no timed collectives, no Init timings) are not differences: they
are listed in ``Comparison.not_compared``.
"""
from __future__ import annotations

from ..result import Analysis
from . import findings, job, speed, topology, tuning
from .common import pair_communicators
from .model import Aspect, Comparison, Difference, Direction, RunSide, Side, Tier
from .score import ordered

__all__ = ["Aspect", "Comparison", "Difference", "Direction", "RunSide", "Side", "Tier", "compare"]


def compare(a: Analysis, b: Analysis, label_a: str = "A", label_b: str = "B") -> Comparison:
    """Run A against run B: every difference, most likely to matter for speed first."""
    ra, rb = a.run, b.run
    diffs: list[Difference] = [
        *speed.busbw(ra, rb), *findings.stragglers(a, b), *topology.communicators(ra, rb), *tuning.algorithms(ra, rb),
        *job.settings(ra, rb), *job.versions(ra, rb), *job.layout(ra, rb), *topology.init_time(ra, rb),
        *speed.shares(ra, rb), *speed.hotspot(ra, rb), *findings.verdict(a, b),
    ]
    return Comparison(_side(a, label_a), _side(b, label_b), ordered(diffs), not_compared(a, b))


def _side(an: Analysis, label: str) -> RunSide:
    d = an.decision
    return RunSide(label, d.verdict, d.headline, tuple(d.culprit_ranks), an.run.job.world_size)


def not_compared(a: Analysis, b: Analysis) -> tuple[str, ...]:
    """What one input (or both) does not show, so that no line can say whether it changed."""
    from ..metrics.share import run_busbw

    ra, rb = a.run, b.run
    out = []

    def lacking(has_a: bool, has_b: bool) -> str | None:
        """Who lacks something: ``neither run has``, ``A has no``, ``B has no``; None when both have it."""
        return None if has_a and has_b else "neither run has" if not (has_a or has_b) else \
            "A has no" if not has_a else "B has no"

    who = lacking(bool(ra.tuning), bool(rb.tuning))
    if who:
        out.append(f"NCCL's algorithm choices: {who} TUNING lines (NCCL_DEBUG_SUBSYS with TUNING prints them)")
    who = lacking(bool(len(run_busbw(ra))), bool(len(run_busbw(rb))))
    if who:
        out.append(f"bus bandwidth: {who} timed collectives with a size (ncclscope run's hook, or the Flight "
                   "Recorder with TORCH_NCCL_ENABLE_TIMING=1, times them)")
    who = lacking(any(e.kind == topology.TIMINGS_EVENT for e in ra.events),
                  any(e.kind == topology.TIMINGS_EVENT for e in rb.events))
    if who:
        out.append(f"init time: {who} Init timings lines (NCCL 2.23 and later print them at INFO)")
    for role, ca, cb in pair_communicators(ra, rb):
        if ca is None or cb is None:
            out.append(f"{role} is in {'A' if cb is None else 'B'} only")
        elif bool(ca.transports) != bool(cb.transports):
            out.append(f"transports of {role}: {'A' if not ca.transports else 'B'} shows no connection lines")
    return tuple(out)
