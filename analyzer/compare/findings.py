"""The judgements compared: stragglers (the rank the others waited for, and the time that cost) and the verdict."""
from __future__ import annotations

from ..metrics.share import run_busbw
from ..model import Evidence, Finding, FindingKind
from ..result import Analysis
from .common import diff, pct
from .model import Aspect, Difference, Direction, Side, Tier
from .score import BUSBW_CHANGE, MEASURED_FLOOR, REST_WEIGHT

MIN_WAIT_CHANGE_MS = 100.0  # a straggler's cost counts as changed past this and ``BUSBW_CHANGE`` as a ratio


def _stragglers(an: Analysis) -> dict[tuple[int, ...], Finding]:
    return {f.ranks: f for f in an.findings if f.kind is FindingKind.STRAGGLER and f.echo_of is None}


def _wait_ms(f: Finding | None) -> float | None:
    w = f.data.get("wait_ms_total") if f is not None else None
    return float(w) if isinstance(w, (int, float)) else None


def _cost_share(an: Analysis, wait_ms: float) -> float:
    """The share of the waiting ranks' collective time spent waiting: wait / (wait + the run's collective time)."""
    coll = float(run_busbw(an.run)["time_ms"].sum()) if len(run_busbw(an.run)) else 0.0
    return wait_ms / (wait_ms + coll) if wait_ms + coll > 0 else 0.0


def _side(f: Finding | None) -> Side:
    if f is None:
        return Side(None)
    w = _wait_ms(f)
    ranks = ", ".join(map(str, f.ranks))
    return Side(f"rank {ranks}" + (f": {w / 1e3:.2f} s of others' waiting" if w is not None else ""),
                f.evidence[0] if f.evidence else None)


def stragglers(a: Analysis, b: Analysis) -> list[Difference]:
    """A straggler on one side only, or one whose cost changed by ``BUSBW_CHANGE`` and ``MIN_WAIT_CHANGE_MS``:
    scored by the share of collective time its waiting took in the run that had more of it."""
    sa, sb = _stragglers(a), _stragglers(b)
    out = []
    for ranks in sorted(set(sa) | set(sb)):
        fa, fb = sa.get(ranks), sb.get(ranks)
        wa, wb = _wait_ms(fa) or 0.0, _wait_ms(fb) or 0.0
        if fa is not None and fb is not None and (abs(wb - wa) < MIN_WAIT_CHANGE_MS
                                                  or max(wa, wb) < BUSBW_CHANGE * min(wa, wb)):
            continue
        slower = wb > wa
        cost = _cost_share(b if slower else a, abs(wb - wa))
        who = "rank " + ", ".join(map(str, ranks))
        if fa is None:
            msg = f"{who} became a straggler in B: the others waited {wb / 1e3:.2f} s for it"
        elif fb is None:
            msg = f"{who} was a straggler in A only: the others waited {wa / 1e3:.2f} s for it there"
        else:
            msg = f"straggler {who}: the others waited {wa / 1e3:.2f} s -> {wb / 1e3:.2f} s for it"
        known = _wait_ms(fa if fb is None else fb) is not None
        measured = known and cost >= MEASURED_FLOOR
        out.append(diff(Aspect.STRAGGLER, Tier.MEASURED if measured else Tier.REST,
                        cost if measured else REST_WEIGHT["straggler"], f"straggler {who}", _side(fa), _side(fb),
                        msg + (f", {pct(cost)} of the time its peers spent in collectives" if measured else ""),
                        Direction.SLOWER if slower else Direction.FASTER))
    return out


def _verdict_line(an: Analysis) -> Evidence | None:
    """The first evidence of the first finding that argues for the run's verdict (None: no finding does, as
    for a healthy run)."""
    d = an.decision
    return next((f.evidence[0] for f in an.findings if f.verdict is d.verdict and f.evidence and f.echo_of is None),
                None)


def _verdict_text(an: Analysis) -> str:
    d = an.decision
    return d.verdict.value + (f" (culprit rank {', '.join(map(str, d.culprit_ranks))})" if d.culprit_ranks else "")


def verdict(a: Analysis, b: Analysis) -> list[Difference]:
    """The verdict or its culprits, where they differ; B's headline says what B's verdict is about."""
    ta, tb = _verdict_text(a), _verdict_text(b)
    if ta == tb:
        return []
    order = ["healthy", "degraded", "unknown", "config_error", "desync", "crash", "hang"]
    va, vb = a.decision.verdict.value, b.decision.verdict.value
    direction = Direction.CHANGED if va == vb else (
        Direction.SLOWER if order.index(vb) > order.index(va) else Direction.FASTER)
    return [diff(Aspect.VERDICT, Tier.REST, REST_WEIGHT["verdict"], "verdict", Side(ta, _verdict_line(a)),
                 Side(tb, _verdict_line(b)), f"verdict {ta} -> {tb}: {b.decision.headline}", direction)]
