"""Hotspots figures, pure: time share and volume bars (``metrics.share``), bus bandwidth against size
(``metrics.busbw``) and the waiting heat map (``metrics.waiting``). Bars and points take their op's colour."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .base import calls, empty_figure, fmt_ms, int_axis, op_color

BY_NAMES = {"op": "operation", "size": "message size", "pg": "process group", "top": "operation, size and process group"}
TRANSPORT_SYMBOLS = ["circle", "triangle-up", "square", "diamond", "triangle-down", "cross"]
NO_DURATIONS = ("no collective durations recorded: the hook (ncclscope run) times every Python-level collective, "
                "Flight Recorder does with TORCH_NCCL_ENABLE_TIMING=1")


def _bar_colors(share: pd.DataFrame, by: str) -> list[str] | str:
    if by in ("op", "top") and "op" in share:
        return [op_color(str(op)) for op in share["op"]]
    if by == "op":
        return [op_color(str(g)) for g in share["group"]]
    return "#4c72b0"


def time_share_figure(share: pd.DataFrame, by: str = "op") -> go.Figure:
    """Bars of ``metrics.share.time_share``: % of summed collective time, with seconds and calls."""
    if not len(share):
        return empty_figure(NO_DURATIONS)
    text = [f"{s * 100:.1f}% ({fmt_ms(ms)}, {calls(c)})" for s, ms, c in
            zip(share["share"], share["time_ms"], share["calls"], strict=False)]
    return _share_bars(share, by, text, f"share of collective time by {BY_NAMES.get(by, by)}",
                       "% of summed collective time (each collective timed by its shortest rank)")


def volume_figure(vol: pd.DataFrame, by: str = "op") -> go.Figure:
    """Bars of ``metrics.share.volume``: share of bytes moved, with calls (no durations needed)."""
    if not len(vol):
        return empty_figure("no collective sizes recorded: NCCL's COLL lines (NCCL_DEBUG=INFO with "
                            "NCCL_DEBUG_SUBSYS=COLL), the hook or Flight Recorder give them")
    text = [f"{s * 100:.1f}% ({b / 2**20:,.1f} MiB, {calls(c)})" for s, b, c in
            zip(vol["share"], vol["bytes"], vol["calls"], strict=False)]
    return _share_bars(vol, by, text, f"communication volume by {BY_NAMES.get(by, by)}",
                       "% of bytes moved by collectives (one call counted once, not per rank)")


def _share_bars(df: pd.DataFrame, by: str, text: list[str], title: str, xtitle: str) -> go.Figure:
    """Horizontal bars of ``df["share"]`` per ``df["group"]``, largest first, one colour per op."""
    fig = go.Figure(go.Bar(x=df["share"] * 100, y=df["group"], orientation="h", text=text,
                           textposition="auto", marker={"color": _bar_colors(df, by)}))
    fig.update_layout(template="plotly_white", title=title, xaxis={"title": xtitle},
                      yaxis={"autorange": "reversed", "type": "category"},
                      height=max(260, 60 + 34 * len(df)), margin={"l": 260, "r": 20, "t": 50, "b": 50})
    return fig


def busbw_figure(tab: pd.DataFrame, nccl_tests: Sequence[dict[str, Any]] = (), max_points: int = 30_000) -> go.Figure:
    """busbw against message size (``metrics.busbw.with_transport``): colour by op, symbol by transport;
    nccl-tests / ``ncclscope perf`` rows as reference lines."""
    if not len(tab) and not nccl_tests:
        return empty_figure("no sized, timed collectives to compute bandwidth from (" + NO_DURATIONS + ")")
    fig = go.Figure()
    sampled = len(tab) > max_points
    if sampled:
        tab = tab.sample(max_points, random_state=0)
    transports = sorted(set(tab["transport"])) if len(tab) else []
    for (t, op), grp in (tab.groupby(["transport", "op"], sort=True) if len(tab) else []):
        fig.add_trace(go.Scattergl(
            x=grp["bytes"].to_numpy(), y=grp["busbw"].to_numpy(), mode="markers", name=f"{op} over {t}",
            hovertemplate=f"{op} over {t}<br>%{{x:.3s}}B<br>busbw %{{y:.2f}} GB/s<extra></extra>",
            marker={"size": 6, "opacity": 0.7, "color": op_color(str(op)),
                    "symbol": TRANSPORT_SYMBOLS[transports.index(t) % len(TRANSPORT_SYMBOLS)]}))
    if nccl_tests:
        nt = pd.DataFrame(list(nccl_tests))
        nt = nt[(nt["size"] > 0) & nt["busbw"].notna()]
        for (test, inplace), grp in nt.groupby([nt["test"].fillna("nccl-tests"), nt["in_place"]], sort=True):
            grp = grp.sort_values("size")
            fig.add_trace(go.Scatter(x=grp["size"], y=grp["busbw"], mode="lines+markers",
                                     name=f"{test} {'in' if inplace else 'out-of'}-place (reference)",
                                     line={"dash": "dash" if inplace else "solid", "width": 2}))
    fig.update_layout(template="plotly_white", title="bus bandwidth against message size"
                      + (f" ({max_points:,} collectives sampled)" if sampled else ""),
                      xaxis={"title": "message size (bytes)", "type": "log"},
                      yaxis={"title": "busbw (GB/s)"}, height=460, margin={"l": 60, "r": 20, "t": 50, "b": 50})
    return fig


def wait_heatmap_figure(ranks: np.ndarray, steps: np.ndarray, wait: np.ndarray, pg: str | None = None) -> go.Figure:
    """Rank x step heat map of waiting time (``metrics.waiting.wait_matrix``): a straggler is the one
    dark row among bright ones."""
    if not wait.size:
        return empty_figure("no arrival times to compute waiting from: the hook or Flight Recorder record them "
                            "(NCCL logs only with NCCL_DEBUG_TIMESTAMP_LEVELS, which ncclscope run sets)")
    zmax = float(np.nanpercentile(wait, 99)) if np.isfinite(wait).any() else 1.0
    fig = go.Figure(go.Heatmap(
        z=wait.astype(np.float32), x=steps, y=ranks, colorscale="Viridis", zmin=0, zmax=max(zmax, 1e-3),
        colorbar={"title": "wait (ms)"},
        hovertemplate="rank %{y}<br>collective #%{x}<br>waited %{z:.1f} ms<extra></extra>"))
    with np.errstate(all="ignore"):
        per_rank = np.nanmean(np.where(np.isfinite(wait), wait, np.nan), axis=1) if np.isfinite(wait).any() else np.array([])
    sub = ""
    if len(per_rank) > 1 and np.isfinite(per_rank).any():
        lo = int(ranks[int(np.nanargmin(per_rank))])
        sub = f" - rank {lo} waits least (mean {np.nanmin(per_rank):.1f} ms; others mean {np.nanmean(per_rank):.1f} ms)"
    fig.update_layout(template="plotly_white", height=min(800, 200 + 14 * len(ranks)) if len(ranks) < 40 else 640,
                      title=f"waiting time per rank and collective, process group {pg}{sub}",
                      xaxis={"title": "collective sequence number", "tickformat": "d"},
                      yaxis={"title": "rank", "autorange": "reversed", **int_axis(len(ranks))},
                      margin={"l": 60, "r": 20, "t": 50, "b": 50})
    return fig
