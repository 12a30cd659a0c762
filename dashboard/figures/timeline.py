"""Timeline figures, pure: per-rank swimlanes of one process group (by sequence number or by time),
and at scale the ranks x sequence-window progress matrix (``metrics.timeline.progress_matrix``)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from ncclscope.metrics.progress import NEVER_JOINED, WAITING
from ncclscope.metrics.records import arrival, strs
from ncclscope.metrics.timeline import CELL_NAMES, ProgressMatrix, spans
from ncclscope.model import CollState, Stuck

from .base import STUCK_COLOR, empty_figure, int_axis, op_color

CELL_COLORS = ["#f2f2f2", "#9ecae1", "#fdae6b", STUCK_COLOR, "#000000", "#c7d3e0"]  # by metrics.timeline cell code


def timeline_figure(view: pd.DataFrame, ranks: Sequence[int], stuck: Stuck | None = None,
                    states: Mapping[int, str] | None = None, axis: str = "seq", pg: str | None = None,
                    t_end: float | None = None) -> go.Figure:
    """Swimlanes of ``view`` (one process group's records, ``metrics.timeline.pg_records``): completed
    collectives filled in their op's colour, the others open; at the stuck collective a red x on the
    ranks that wait in it and a black diamond on those that never joined it (``states``)."""
    lanes = sorted({int(r) for r in view["rank"].to_numpy()} | {int(r) for r in ranks}) if len(view) else []
    if not len(view):
        return empty_figure(f"no collectives recorded for process group {pg}: the hook (ncclscope run) or a "
                            "Flight Recorder dump (TORCH_FR_BUFFER_SIZE) records them")
    fig = go.Figure()
    if axis == "time":
        here = stuck if stuck is not None and str(stuck.pg) == str(pg) else None
        waits = [r for r, st in (states or {}).items() if st == WAITING] if here is not None else []
        if not _time_traces(fig, view, spans(view, here, waits, t_end)):
            return empty_figure("this process group has no timestamps; use the sequence-number view")
        xtitle = "seconds since the first collective"
    else:
        _seq_traces(fig, view)
        xtitle = "collective sequence number"
    if stuck is not None and str(stuck.pg) == str(pg):
        _mark_stuck(fig, view, stuck, lanes, dict(states or {}), axis)
    fig.update_layout(template="plotly_white", height=min(900, 220 + 18 * len(lanes)) if len(lanes) < 40 else 700,
                      xaxis={"title": xtitle}, yaxis={"title": "rank", "autorange": "reversed", **int_axis(len(lanes))},
                      title=f"process group {pg}: {len(view):,} collectives on {len(lanes)} ranks",
                      margin={"l": 60, "r": 20, "t": 50, "b": 50}, dragmode="zoom", legend={"title": "op"})
    return fig


def _seq_traces(fig: go.Figure, view: pd.DataFrame) -> None:
    ops = strs(view["op"])
    rank = view["rank"].to_numpy(np.int64)
    seq = view["seq"].to_numpy(np.int64)
    state = strs(view["state"])
    kind = np.where(state == CollState.COMPLETED, 0, np.where(state == CollState.ENQUEUED, 1, 2))
    styles = ((0, "", "square"), (1, " (issued; NCCL logs no completion)", "square"), (2, " (not completed)", "square-open"))
    for op in sorted(set(ops)):
        for k, suffix, symbol in styles:
            m = (ops == op) & (kind == k)
            if m.any():
                fig.add_trace(go.Scattergl(
                    x=seq[m], y=rank[m], mode="markers", name=op + suffix, legendgroup=op,
                    hovertemplate=f"{op} #%{{x}}{suffix}<br>rank %{{y}}<extra></extra>",
                    marker={"symbol": symbol, "size": 7 if k < 2 else 8, "color": op_color(op),
                            "opacity": 0.5 if k == 1 else 1.0}))


def _time_traces(fig: go.Figure, view: pd.DataFrame, span: tuple[np.ndarray, np.ndarray]) -> bool:
    """``span``: each record's (start, end), ``metrics.timeline.spans`` (a wait lasts to the end of the run)."""
    ops = strs(view["op"])
    rank = view["rank"].to_numpy(dtype=float)
    start, end = span
    end = np.where(np.isfinite(end), end, start)
    ok = np.isfinite(start)
    if not ok.any():
        return False
    t0 = np.nanmin(start[ok])
    for op in sorted(set(ops[ok])):
        m = ok & (ops == op)
        k = int(m.sum())
        xs = np.full(k * 3, np.nan)
        ys = np.full(k * 3, np.nan)
        xs[0::3] = start[m] - t0
        xs[1::3] = np.maximum(end[m], start[m] + 1e-4) - t0
        ys[0::3] = rank[m]
        ys[1::3] = rank[m]
        fig.add_trace(go.Scattergl(x=xs.astype(np.float32), y=ys.astype(np.float32), mode="lines+markers", name=op,
                                   hoverinfo="skip", line={"color": op_color(op), "width": 6},
                                   marker={"size": 3, "color": op_color(op)}))
    return True


def _mark_stuck(fig: go.Figure, view: pd.DataFrame, stuck: Stuck, lanes: list[int], states: dict[int, str],
                axis: str) -> None:
    """Waiting ranks: a red x on the stuck collective; ranks that never joined: a black diamond there
    (by sequence number) or at their last record (by time)."""
    label = f"stuck: {stuck.op or 'collective'} #{stuck.seq}"
    never = [r for r in lanes if states.get(r) == NEVER_JOINED]
    waiting = [r for r in lanes if states.get(r) == WAITING] if states else [r for r in lanes if r not in never]
    if axis == "time":
        start = arrival(view)
        t0 = np.nanmin(start)
        last = pd.Series(np.where(np.isfinite(view["t_completed"].to_numpy(dtype=float)),
                                  view["t_completed"].to_numpy(dtype=float), start)).groupby(
            view["rank"].to_numpy()).max()
        at = view[view["seq"].to_numpy() == stuck.seq]
        entered = pd.Series(arrival(at), index=at["rank"].to_numpy()) if len(at) else pd.Series(dtype=float)
        x_wait = [float(entered.get(r, last.get(r, np.nan))) - t0 for r in waiting]
        x_never = [float(last.get(r, np.nan)) - t0 for r in never]
    else:
        fig.add_vrect(x0=stuck.seq - 0.5, x1=stuck.seq + 0.5, fillcolor=STUCK_COLOR, opacity=0.12, line_width=0)
        x_wait, x_never = [float(stuck.seq)] * len(waiting), [float(stuck.seq)] * len(never)
    if waiting:
        fig.add_trace(go.Scattergl(x=x_wait, y=waiting, mode="markers", name=f"{label}: waiting in it ({len(waiting)})",
                                   hovertemplate=f"rank %{{y}} waits in #{stuck.seq}<extra></extra>",
                                   marker={"symbol": "x", "size": 13, "color": STUCK_COLOR}))
    if never:
        fig.add_trace(go.Scattergl(x=x_never, y=never, mode="markers", name=f"{label}: never joined ({len(never)})",
                                   hovertemplate=f"rank %{{y}} never joined #{stuck.seq}<extra></extra>",
                                   marker={"symbol": "diamond", "size": 14, "color": "#000",
                                           "line": {"width": 2, "color": STUCK_COLOR}}))


def progress_figure(pm: ProgressMatrix, stuck: Stuck | None, pg: str | None, nranks: int) -> go.Figure:
    """The progress matrix as a heat map of cell states: groups of ranks with the same row are one row,
    so the ranks that differ (the one that never joined, the late ones) are rows of their own."""
    if not pm.cells.size:
        return empty_figure(f"no collectives recorded for process group {pg}")
    z = pm.cells.astype(np.int8)
    k = len(CELL_COLORS)
    scale = [[v, CELL_COLORS[int(min(i, k - 1))]] for i in range(k) for v in (i / k, (i + 1) / k)]
    text = np.asarray(CELL_NAMES, dtype=object)[z]
    y = [f"{lab}" for lab in pm.labels]
    fig = go.Figure(go.Heatmap(z=z, x=pm.seqs, y=y, zmin=-0.5, zmax=k - 0.5, colorscale=scale, text=text,
                               hovertemplate="%{y}<br>#%{x}: %{text}<extra></extra>", xgap=1, ygap=1,
                               colorbar={"tickvals": list(range(k)), "ticktext": CELL_NAMES, "title": "state"}))
    if stuck is not None and str(stuck.pg) == str(pg):
        fig.add_vline(x=stuck.seq, line={"color": STUCK_COLOR, "width": 2, "dash": "dot"},
                      annotation_text=f"stuck: {stuck.op or 'collective'} #{stuck.seq}")
    grouped = len(pm.labels) < nranks
    fig.update_layout(template="plotly_white", height=min(900, 200 + 22 * len(y)),
                      title=f"process group {pg}: {nranks:,} ranks, collectives #{int(pm.seqs[0])}-#{int(pm.seqs[-1])}"
                      + (f" ({len(y)} groups of ranks with the same progress)" if grouped else ""),
                      xaxis={"title": "collective sequence number", "tickformat": "d"},
                      yaxis={"title": "ranks", "autorange": "reversed", "type": "category"},
                      margin={"l": 200, "r": 20, "t": 50, "b": 50})
    return fig
