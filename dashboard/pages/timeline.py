"""Timeline: per-rank swimlanes of one process group's collectives, by sequence number or by time."""
from __future__ import annotations

from typing import Any

import dash
import plotly.graph_objects as go
from dash import Input, Output, callback, dcc, html

from ncclscope.dashboard import figures, ids
from ncclscope.dashboard.components import not_ready
from ncclscope.dashboard.data import RunStore, current

dash.register_page(__name__, path="/timeline", name="Timeline", order=2, title="ncclscope - timeline")


def layout(**_: Any) -> html.Div:
    return html.Div([
        html.Div([
            html.Label(["process group", dcc.Dropdown(id=ids.TL_PG, clearable=False)], className="ctl wide"),
            html.Label(["x axis", dcc.RadioItems(id=ids.TL_AXIS, inline=True, value="seq", options=[
                {"label": "sequence number", "value": "seq"}, {"label": "time", "value": "time"}])], className="ctl"),
        ], className="controls"),
        html.Div(id=ids.TL_INFO, className="muted"),
        dcc.Graph(id=ids.TL_GRAPH, config={"displaylogo": False, "scrollZoom": True}),
    ])


def pg_options(rs: RunStore, key: str | None) -> tuple[list[dict[str, Any]], Any]:
    entry = rs.get(key)
    if entry is None:
        return [], None
    pgs = entry.cached("pgs", lambda: figures.pg_choices(entry.analysis.run.collectives))
    stuck = entry.analysis.decision.stuck
    default = stuck.pg if stuck and stuck.pg in pgs else (pgs[0] if pgs else None)
    return [{"label": p, "value": p} for p in pgs], default


def figure(rs: RunStore, key: str | None, pg: str | None, axis: str) -> tuple[go.Figure, Any]:
    entry = rs.get(key)
    if entry is None:
        return figures.empty_figure("no run loaded"), not_ready(rs, key)
    a = entry.analysis
    fig = entry.cached(("timeline", pg, axis), lambda: figures.timeline_figure(
        a.run.collectives, pg, a.decision.stuck, axis, ranks=a.run.ranks()))
    stuck = a.decision.stuck
    info = (f"stuck collective #{stuck.seq} of process group {stuck.pg} marked with a red x on every rank. "
            if stuck else "") + "Drag to zoom, double-click to reset."
    return fig, info


@callback(Output(ids.TL_PG, "options"), Output(ids.TL_PG, "value"), Input(ids.RUN_KEY, "data"))
def _pgs(key: str | None) -> tuple[Any, Any]:
    return pg_options(current(), key)


@callback(Output(ids.TL_GRAPH, "figure"), Output(ids.TL_INFO, "children"), Input(ids.RUN_KEY, "data"),
          Input(ids.TL_PG, "value"), Input(ids.TL_AXIS, "value"))
def _figure(key: str | None, pg: str | None, axis: str) -> tuple[Any, Any]:
    return figure(current(), key, pg, axis)
