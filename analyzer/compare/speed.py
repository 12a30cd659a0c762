"""Measured speed compared: bus bandwidth by operation and size (``metrics.busbw``), each operation's share of
collective time and where most of it goes (``metrics.share``). Both runs' numbers are the ones ``analyze`` and
the dashboard show for each run alone."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..metrics.share import run_busbw, time_share
from ..model import Evidence, Run
from .common import diff, gbs, pct, row_evidence, size_text
from .model import Aspect, Difference, Direction, Side, Tier
from .score import BUSBW_CHANGE, MEASURED_FLOOR, MIN_CALLS, REST_WEIGHT, SHARE_MOVE

GROUP_COLUMNS = ["op", "bucket", "busbw", "median_ms", "calls", "time_ms", "share", "pg", "seq"]
SMALL_BUCKET = 16  # below 64 KiB a collective's time is its latency: compared as time a call, not as busbw


def busbw_groups(run: Run) -> pd.DataFrame:
    """Per (op, log2 size): the median busbw and time a call, the timed calls, their summed time and share of the
    run's collective time, and the collective (pg, seq) whose busbw is nearest the median (quoted as evidence)."""
    tab = run_busbw(run)
    if not len(tab):
        return pd.DataFrame(columns=GROUP_COLUMNS)
    total = float(tab["time_ms"].sum()) or 1.0
    rows = []
    for (op, bucket), g in tab.groupby(["op", "bucket"], observed=True, sort=True):
        med = float(g["busbw"].median())
        near = g.iloc[int(np.argmin(np.abs(g["busbw"].to_numpy(dtype=float) - med)))]
        rows.append((str(op), int(bucket), med, float(g["time_ms"].median()), len(g), float(g["time_ms"].sum()),
                     float(g["time_ms"].sum()) / total, str(near["pg"]), int(near["seq"])))
    return pd.DataFrame(rows, columns=GROUP_COLUMNS)


def _evidence(run: Run, r: pd.Series, side: str) -> Evidence | None:
    """The collective quoted for one side (``_a`` / ``_b`` columns of the merged groups) of an (op, size)."""
    pg, seq = str(r[f"pg{side}"]), int(r[f"seq{side}"])
    return row_evidence(run, pg, seq, f"{r['op']} #{seq} of {size_text(int(r['bucket']))} on pg {pg}: "
                                      f"{_speed(r, side)} (the median of {int(r[f'calls{side}'])} calls)")


def _speed(r: pd.Series, side: str) -> str:
    """busbw, or for a small message its time a call."""
    if int(r["bucket"]) < SMALL_BUCKET:
        return f"{1e3 * float(r[f'median_ms{side}']):.0f} us a call"
    return f"busbw {gbs(float(r[f'busbw{side}']))}"


def busbw(a: Run, b: Run) -> list[Difference]:
    """Each (op, size) both runs timed at least ``MIN_CALLS`` times whose median busbw changed by ``BUSBW_CHANGE``
    or more. Score: the share of the slower run's collective time the change accounts for: B's share of that
    group x (1 - B's busbw / A's) for a loss, A's share x (1 - A's / B's) for a gain; below ``MEASURED_FLOOR``
    the line goes to the rest."""
    ga, gb = busbw_groups(a), busbw_groups(b)
    if not len(ga) or not len(gb):
        return []
    both = ga.merge(gb, on=["op", "bucket"], suffixes=("_a", "_b"))
    out = []
    for _, r in both.iterrows():
        if min(r["calls_a"], r["calls_b"]) < MIN_CALLS or not (r["busbw_a"] > 0 and r["busbw_b"] > 0):
            continue
        small = int(r["bucket"]) < SMALL_BUCKET  # B's speed over A's: by busbw, or by time a call when small
        ratio = (float(r["median_ms_a"]) / float(r["median_ms_b"]) if small and r["median_ms_b"] > 0
                 else float(r["busbw_b"]) / float(r["busbw_a"]))
        if max(ratio, 1 / ratio) < BUSBW_CHANGE:
            continue
        slower = ratio < 1
        score = float(r["share_b"]) * (1 - ratio) if slower else float(r["share_a"]) * (1 - 1 / ratio)
        subject = f"{r['op']} of {size_text(int(r['bucket']))}"
        where = f"{pct(float(r['share_b' if slower else 'share_a']))} of {'B' if slower else 'A'}'s collective time"
        out.append(diff(Aspect.BUSBW, Tier.MEASURED if score >= MEASURED_FLOOR else Tier.REST,
                        score if score >= MEASURED_FLOOR else REST_WEIGHT["busbw"], subject,
                        Side(_speed(r, "_a"), _evidence(a, r, "_a")), Side(_speed(r, "_b"), _evidence(b, r, "_b")),
                        f"{subject}: {_speed(r, '_a')} -> {_speed(r, '_b')} ({_change(ratio, small)}); it takes "
                        f"{where}, about {pct(score)} of that time at stake",
                        Direction.SLOWER if slower else Direction.FASTER))
    return out


def _change(ratio: float, small: bool) -> str:
    """B against A: ``-77%`` of busbw, or ``x5.0 the time`` of a small message."""
    if small:
        return f"{1 / ratio:.2g}x the time"
    return f"{ratio - 1:+.0%}"


def _longest(run: Run, tab: pd.DataFrame, what: str) -> Evidence | None:
    """The longest collective of ``tab`` (rows of the run's busbw table) as evidence."""
    if not len(tab):
        return None
    row = tab.loc[tab["time_ms"].idxmax()]
    return row_evidence(run, str(row["pg"]), int(row["seq"]),
                        f"{what}: {row['op']} #{int(row['seq'])} on pg {row['pg']}, {float(row['time_ms']):.2f} ms")


def shares(a: Run, b: Run) -> list[Difference]:
    """Each operation whose share of collective time moved by ``SHARE_MOVE`` or more."""
    ta, tb = run_busbw(a), run_busbw(b)
    if not len(ta) or not len(tb):
        return []
    sa, sb = (dict(zip(s["op"], s["share"], strict=True)) for s in (time_share(ta, "op"), time_share(tb, "op")))
    out = []
    for op in sorted(set(sa) | set(sb)):
        xa, xb = float(sa.get(op, 0.0)), float(sb.get(op, 0.0))
        if abs(xb - xa) < SHARE_MOVE:
            continue
        out.append(diff(Aspect.TIME_SHARE, Tier.REST, REST_WEIGHT["time_share"] + abs(xb - xa) / 10, f"{op} time share",
                        Side(pct(xa), _longest(a, ta[ta["op"] == op], f"longest {op}")),
                        Side(pct(xb), _longest(b, tb[tb["op"] == op], f"longest {op}")),
                        f"{op} takes {pct(xa)} -> {pct(xb)} of collective time",
                        Direction.SLOWER if xb > xa else Direction.FASTER))
    return out


def hotspot(a: Run, b: Run) -> list[Difference]:
    """Where most collective time goes (op, size and process group together), when that moved."""
    ta, tb = run_busbw(a), run_busbw(b)
    if not len(ta) or not len(tb):
        return []
    ha, hb = time_share(ta, "top").iloc[0], time_share(tb, "top").iloc[0]
    key_a, key_b = (ha["op"], int(ha["bucket"]), str(ha["pg"])), (hb["op"], int(hb["bucket"]), str(hb["pg"]))
    if key_a == key_b:
        return []

    def text(h: pd.Series) -> str:
        return f"{h['op']} of {size_text(int(h['bucket']))} on pg {h['pg']} ({pct(float(h['share']))})"

    def rows(tab: pd.DataFrame, key: tuple[str, int, str]) -> pd.DataFrame:
        return tab[(tab["op"] == key[0]) & (tab["bucket"] == key[1]) & (tab["pg"].astype(str) == key[2])]

    return [diff(Aspect.HOTSPOT, Tier.REST, REST_WEIGHT["hotspot"], "where collective time goes",
                 Side(text(ha), _longest(a, rows(ta, key_a), "longest of the group")),
                 Side(text(hb), _longest(b, rows(tb, key_b), "longest of the group")),
                 f"most collective time went to {text(ha)} -> {text(hb)}")]
